"""DQN's replay buffers: RLlib's `EpisodeReplayBuffer` and `PrioritizedEpisodeReplayBuffer`, and
for multi-agent runs `MultiAgentEpisodeReplayBuffer` and `MultiAgentPrioritizedEpisodeReplayBuffer`
(from `trainer.replay_buffers`), built from `replay_buffer_config`, and the train batch DQN's
learner takes from their n-step transitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.replay_buffers import (
    EpisodeReplayBuffer,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
)

__all__ = [
    "BUFFER_TYPES",
    "MULTI_AGENT_BUFFER_TYPES",
    "EpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "make_replay_buffer",
    "as_train_batch",
    "sample_train_batch",
    "sample_train_batches",
]

#: The buffers of multi-agent runs (they store MultiAgentEpisodes, a buffer per module).
MULTI_AGENT_BUFFER_TYPES = {
    cls.__name__: cls
    for cls in (MultiAgentEpisodeReplayBuffer, MultiAgentPrioritizedEpisodeReplayBuffer)
}
BUFFER_TYPES = {
    **{cls.__name__: cls for cls in (EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer)},
    **MULTI_AGENT_BUFFER_TYPES,
}

#: `replay_buffer_config` keys that are not constructor arguments (read at sampling time).
SAMPLING_KEYS = ("beta",)


def make_replay_buffer(
    replay_buffer_config: dict, seed: int | None = None
) -> EpisodeReplayBuffer | MultiAgentEpisodeReplayBuffer:
    """The buffer `replay_buffer_config` describes: its `type`, and the other keys (except
    `beta`, a sampling setting) as constructor arguments."""
    config = {k: v for k, v in replay_buffer_config.items() if k not in SAMPLING_KEYS}
    cls = BUFFER_TYPES[config.pop("type")]
    return cls(seed=seed, **config)


def sample_train_batch(
    buffer: EpisodeReplayBuffer, batch_size: int, *, n_step: Any, gamma: float, beta: float | None
) -> dict[str, np.ndarray]:
    """`batch_size` n-step transitions for `DQNLearner.update` (see `as_train_batch`)."""
    transitions = buffer.sample_transitions(
        batch_size, n_step=n_step, gamma=gamma, beta=beta or 0.0
    )
    return as_train_batch(transitions, gamma)


def sample_train_batches(
    buffer: MultiAgentEpisodeReplayBuffer,
    batch_size: int,
    *,
    n_step: Any,
    gamma: float,
    beta: float | None,
    modules: list[Any],
) -> dict[Any, dict[str, np.ndarray]]:
    """`batch_size` n-step transitions of each of `modules` (those with steps stored), from
    its own buffer, for its `DQNLearner.update`."""
    stored = [module_id for module_id in modules if buffer.get_num_timesteps(module_id)]
    if not stored:
        return {}
    sampled = buffer.sample_transitions(
        batch_size, n_step=n_step, gamma=gamma, beta=beta or 0.0, modules_to_sample=stored
    )
    return {module_id: as_train_batch(t, gamma) for module_id, t in sampled.items()}


def as_train_batch(transitions: dict[str, np.ndarray], gamma: float) -> dict[str, np.ndarray]:
    """A buffer's transitions as `DQNLearner.update` takes them: `obs`, `actions`, `rewards`
    (discounted n-step sums), `next_obs`, `terminateds`, `discounts` (gamma ** the steps the
    transition spans: it multiplies the bootstrap value), `n_step` (those steps: RLlib's column)
    and `weights` (importance weights)."""
    return {
        "obs": transitions["obs"],
        "actions": transitions["actions"],
        "rewards": transitions["rewards"],
        "next_obs": transitions["new_obs"],
        "terminateds": transitions["terminateds"],
        "discounts": (gamma ** transitions["n_steps_taken"]).astype(np.float32),
        "n_step": transitions["n_steps_taken"],
        "weights": transitions["weights"],
    }
