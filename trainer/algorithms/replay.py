"""The off-policy algorithms' replay buffers (DQN's and SAC's): RLlib's `EpisodeReplayBuffer` and
`PrioritizedEpisodeReplayBuffer`, and for multi-agent runs `MultiAgentEpisodeReplayBuffer` and
`MultiAgentPrioritizedEpisodeReplayBuffer` (from `trainer.replay_buffers`); their
`replay_buffer_config` setting (defaults, checks, updates) and the `n_step` setting; the buffers
built from it, and the train batch the learners take from their n-step transitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.errors import ConfigError
from trainer.replay_buffers import (
    EpisodeReplayBuffer,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
)
from trainer.util.checks import int_at_least, number_at_least

__all__ = [
    "BUFFER_DEFAULTS",
    "BUFFER_TYPES",
    "MULTI_AGENT_BUFFER_TYPES",
    "EpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "make_replay_buffer",
    "as_train_batch",
    "buffer_fits_agents",
    "check_n_step",
    "check_replay_buffer_config",
    "updated_buffer_config",
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

#: Each buffer type's defaults (RLlib's): an algorithm's default config names one of them.
BUFFER_DEFAULTS: dict[str, dict[str, Any]] = {
    **{
        name: {"type": name, "capacity": 50_000}
        for name in ("EpisodeReplayBuffer", "MultiAgentEpisodeReplayBuffer")
    },
    **{
        name: {"type": name, "capacity": 50_000, "alpha": 0.6, "beta": 0.4}
        for name in ("PrioritizedEpisodeReplayBuffer", "MultiAgentPrioritizedEpisodeReplayBuffer")
    },
}
# Further keys each buffer's constructor takes (RLlib's), besides its defaults above.
_BUFFER_OPTIONAL_KEYS = ("batch_size_B", "batch_length_T", "metrics_num_episodes_for_smoothing")

_BUFFER_VALUE_CHECKS = {
    "capacity": int_at_least(1),
    "alpha": number_at_least(0),
    "beta": number_at_least(0),
    "batch_size_B": int_at_least(1),
    "batch_length_T": int_at_least(0),
    "metrics_num_episodes_for_smoothing": int_at_least(1),
}


def check_replay_buffer_config(value: Any) -> str | None:
    """The `replay_buffer_config` setting's check: None, or what a valid value is."""
    allowed_types = sorted(BUFFER_TYPES)
    if not isinstance(value, dict):
        return (
            f"a dict with 'type' (one of {allowed_types}), 'capacity' and, for prioritized "
            "replay, 'alpha' and 'beta'"
        )
    type_ = value.get("type")
    if type_ not in BUFFER_TYPES:
        return f"a dict whose 'type' is one of {allowed_types} (got {type_!r})"
    allowed_keys = sorted((*BUFFER_DEFAULTS[type_], *_BUFFER_OPTIONAL_KEYS))
    for key, item in value.items():
        if key not in allowed_keys:
            return f"a dict with keys from {allowed_keys} for {type_} (got {key!r})"
        problem = _BUFFER_VALUE_CHECKS[key](item) if key in _BUFFER_VALUE_CHECKS else None
        if problem is not None:
            return f"a dict whose {key!r} is {problem} (got {item!r})"
    return None


def updated_buffer_config(current: dict[str, Any], given: Any) -> Any:
    """`training(replay_buffer_config=given)` over `current` (RLlib's rule): the given keys
    update the current config, unless `given` names another type, which then starts from that
    type's defaults. Anything but a dict is returned as it is (for the setting's check)."""
    if not isinstance(given, dict):
        return given
    type_ = given.get("type", current["type"])
    base = current if type_ == current["type"] else BUFFER_DEFAULTS.get(type_, {})
    return {**base, **given}


def buffer_fits_agents(config_name: str, buffer_config: dict, multi_agent: bool) -> None:
    """Raises ConfigError unless the buffer type fits the agents: a multi-agent run stores
    MultiAgentEpisodes and needs a multi-agent buffer, a single-agent run a single-agent one
    (RLlib fails later, inside the buffer)."""
    type_ = buffer_config["type"]
    if multi_agent == (type_ in MULTI_AGENT_BUFFER_TYPES):
        return
    if multi_agent:
        wanted = "MultiAgent" + type_
        why = "a multi-agent config (multi_agent(policies=...)) samples MultiAgentEpisodes"
    else:
        wanted = type_.removeprefix("MultiAgent")
        why = "a single-agent config samples SingleAgentEpisodes"
    raise ConfigError(
        f"{config_name}: replay_buffer_config type={type_!r} does not fit: {why}; use "
        f"training(replay_buffer_config={{'type': {wanted!r}, ...}})"
    )


def check_n_step(value: Any) -> str | None:
    """The `n_step` setting's check: an int >= 1 or a (low, high) pair."""
    positive_int = int_at_least(1)
    if positive_int(value) is None:
        return None
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(positive_int(v) is None for v in value)
        and value[0] < value[1]
    ):
        return None
    return (
        "an int >= 1 or a (low, high) pair of ints with 1 <= low < high (each transition's "
        "n is drawn from [low, high), as RLlib's replay buffers draw it)"
    )


def max_n_step(n_step: int | tuple[int, int] | list[int]) -> int:
    """The longest n of the `n_step` setting: the shortest rollout fragment it fits."""
    return n_step[1] if isinstance(n_step, (list, tuple)) else n_step


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
    """`batch_size` n-step transitions for a learner's `update` (see `as_train_batch`)."""
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
    its own buffer, for its learner's `update`."""
    stored = [module_id for module_id in modules if buffer.get_num_timesteps(module_id)]
    if not stored:
        return {}
    sampled = buffer.sample_transitions(
        batch_size, n_step=n_step, gamma=gamma, beta=beta or 0.0, modules_to_sample=stored
    )
    return {module_id: as_train_batch(t, gamma) for module_id, t in sampled.items()}


def as_train_batch(transitions: dict[str, np.ndarray], gamma: float) -> dict[str, np.ndarray]:
    """A buffer's transitions as the off-policy learners' `update` takes them: `obs`, `actions`, `rewards`
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
