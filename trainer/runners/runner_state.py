"""The format of an EnvRunner's state (what `EnvRunner.get_state()` writes): its keys, the check
of a state's "sampling" part before anything changes, and how a saved episode comes back.

The state is plain data and numpy arrays: the runner's RNG, the global timestep, the
exploration's, metrics' and connectors' state, the weights, the sub-envs' tasks, and where
sampling stands (each sub-env's captured state, `trainer.env.env_state`; the current
observations; the unfinished episodes and their earlier chunks). The runner's own
`get_state` / `check_state` / `set_state` (in `trainer.runners.env_runner`) build and take it;
the functions here need none of the runner's state.
"""

from __future__ import annotations

import time
from typing import Any

from trainer.core.models import RL_MODULE_STATE
from trainer.env.episode import SingleAgentEpisode
from trainer.util.state_checks import StateError, require_generator_state, require_int, require_map

#: The keys `EnvRunner.get_state()` writes.
RUNNER_STATE_KEYS = {
    "rng",
    "global_timestep",
    "exploration",
    "metrics",
    RL_MODULE_STATE,
    "connector_state",
    "tasks",
    "sampling",
}
#: The keys of its "sampling" part.
SAMPLING_STATE_KEYS = (
    "needs_reset",
    "env_seed",
    "observations",
    "awaiting_reset",
    "autoreset_envs",
    "action_space_rng",
    "sub_envs",
    "uncaptured",
    "episodes",
    "prev_chunks",
)


def check_sampling_state(state: Any, where: str) -> None:
    """Raises `StateError` unless `state` is the "sampling" part of a runner state whose
    episodes rebuild."""
    require_map(state, where, SAMPLING_STATE_KEYS)
    if not isinstance(state["needs_reset"], bool):
        raise StateError(f"{where}['needs_reset']", "expected true or false")
    if state["env_seed"] is not None:
        require_int(state["env_seed"], f"{where}['env_seed']", minimum=None)
    if state["action_space_rng"] is not None:
        require_generator_state(state["action_space_rng"], f"{where}['action_space_rng']")
    for key in ("sub_envs", "awaiting_reset", "episodes"):
        if not isinstance(state[key], list):
            raise StateError(
                f"{where}[{key!r}]", f"expected a list, got {type(state[key]).__name__}"
            )
    require_map(state["uncaptured"], f"{where}['uncaptured']")
    require_map(state["prev_chunks"], f"{where}['prev_chunks']")
    episodes = [
        (f"{where}['episodes'][{i}]", episode)
        for i, episode in enumerate(state["episodes"])
        if episode is not None
    ]
    for id_, chunks in state["prev_chunks"].items():
        if not isinstance(chunks, list):
            raise StateError(f"{where}['prev_chunks'][{id_!r}]", "expected a list of episodes")
        episodes += [
            (f"{where}['prev_chunks'][{id_!r}][{i}]", chunk) for i, chunk in enumerate(chunks)
        ]
    for place, episode_state in episodes:
        try:
            SingleAgentEpisode.from_state(episode_state)
        except Exception as error:  # from_state raises KeyError, TypeError, ValueError...
            raise StateError(
                place, f"not an episode state ({type(error).__name__}: {error})"
            ) from None


def resumed_episode(state: dict) -> SingleAgentEpisode:
    """An episode from a runner state, recording again where it stopped. Its clock starts now:
    the saved `perf_counter` readings belong to another process (or machine)."""
    episode = SingleAgentEpisode.from_state(state)
    if episode.is_reset:
        episode._start_time = episode._last_step_time = time.perf_counter()
    return episode
