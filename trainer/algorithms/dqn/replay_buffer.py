"""DQN's replay buffers: RLlib's `EpisodeReplayBuffer` and `PrioritizedEpisodeReplayBuffer` (from
`trainer.replay_buffers`), built from `replay_buffer_config`, and the train batch DQN's learner
takes from their n-step transitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer

__all__ = [
    "BUFFER_TYPES",
    "EpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "make_replay_buffer",
    "sample_train_batch",
]

BUFFER_TYPES = {cls.__name__: cls for cls in (EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer)}

#: `replay_buffer_config` keys that are not constructor arguments (read at sampling time).
SAMPLING_KEYS = ("beta",)


def make_replay_buffer(replay_buffer_config: dict, seed: int | None = None) -> EpisodeReplayBuffer:
    """The buffer `replay_buffer_config` describes: its `type`, and the other keys (except
    `beta`, a sampling setting) as constructor arguments."""
    config = {k: v for k, v in replay_buffer_config.items() if k not in SAMPLING_KEYS}
    cls = BUFFER_TYPES[config.pop("type")]
    return cls(seed=seed, **config)


def sample_train_batch(
    buffer: EpisodeReplayBuffer, batch_size: int, *, n_step: Any, gamma: float, beta: float | None
) -> dict[str, np.ndarray]:
    """`batch_size` n-step transitions for `DQNLearner.update`: `obs`, `actions`, `rewards`
    (discounted n-step sums), `next_obs`, `terminateds`, `discounts` (gamma ** the steps the
    transition spans: it multiplies the bootstrap value) and `weights` (importance weights)."""
    transitions = buffer.sample_transitions(
        batch_size, n_step=n_step, gamma=gamma, beta=beta or 0.0
    )
    return {
        "obs": transitions["obs"],
        "actions": transitions["actions"],
        "rewards": transitions["rewards"],
        "next_obs": transitions["new_obs"],
        "terminateds": transitions["terminateds"],
        "discounts": (gamma ** transitions["n_steps_taken"]).astype(np.float32),
        "weights": transitions["weights"],
    }
