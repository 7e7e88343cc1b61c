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

from trainer.core.models import DEFAULT_MODULE_ID, RL_MODULE_STATE
from trainer.env.episode import EpisodeView, SingleAgentEpisode, add_weights_seq_no
from trainer.metrics import WEIGHTS_SEQ_NO
from trainer.util.state_checks import StateError, require_generator_state, require_int, require_map


def weights_are_new(runner: Any, state: dict) -> bool:
    """RLlib's rule for a runner state's weights: load them unless `state` carries a sequence
    number the runner has already reached; the runner keeps the newest number."""
    seq_no = int(state.get(WEIGHTS_SEQ_NO, 0))
    new = seq_no == 0 or getattr(runner, "_weights_seq_no", 0) < seq_no
    if seq_no > 0:
        runner._weights_seq_no = seq_no
    return new


def single_module_weights(weights: Any) -> Any:
    """A single-agent runner's weights from RLlib's `{"default_policy": weights}` too."""
    if isinstance(weights, dict) and DEFAULT_MODULE_ID in weights:
        return weights[DEFAULT_MODULE_ID]
    return weights


def record_weights_seq_no(episodes: list, seq_no: int) -> None:
    """Gives each finished episode of a `sample()` call RLlib's per-step extra model output
    `weights_seq_no`: the sequence number of the weights it was sampled with (constant over a
    call: weights change between calls only). An `EpisodeView` gets it when its buffers are
    made. Unfinished chunks get none: the runner may go on recording into them."""
    for episode in episodes:
        if not episode.is_done:
            continue
        if isinstance(episode, EpisodeView):  # (when its buffers are made)
            episode.record_weights_seq_no(seq_no)
        elif isinstance(episode, SingleAgentEpisode):
            add_weights_seq_no(episode, seq_no)


#: RLlib's component names of an EnvRunner's two connector pipelines (`get_state(components=
#: ...)` gives each pipeline's own state under its name; `set_state` takes it back).
CONNECTOR_COMPONENTS = ("env_to_module_connector", "module_to_env_connector")


def _pipelines(runner: Any) -> dict[str, Any]:
    return {
        "env_to_module_connector": getattr(runner, "_env_to_module", None),
        "module_to_env_connector": getattr(runner, "_module_to_env", None),
    }


def connector_components(runner: Any, components: Any, not_components: Any) -> dict:
    """The pipelines' states a `get_state(components=...)` names (`{}` for a runner without
    that pipeline, as RLlib's empty default pipeline gives)."""
    asked = [components] if isinstance(components, str) else list(components or ())
    left_out = [not_components] if isinstance(not_components, str) else list(not_components or ())
    return {
        name: pipeline.get_state() if pipeline is not None else {}
        for name, pipeline in _pipelines(runner).items()
        if name in asked and name not in left_out
    }


def set_connector_components(runner: Any, state: dict) -> None:
    """Sets the pipelines' states `state` has under RLlib's component names."""
    for name, pipeline in _pipelines(runner).items():
        if state.get(name) and pipeline is not None:
            pipeline.set_state(state[name])


#: The keys `EnvRunner.get_state()` writes (and RLlib's weights sequence number and connector
#: components).
RUNNER_STATE_KEYS = {
    WEIGHTS_SEQ_NO,
    *CONNECTOR_COMPONENTS,
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
