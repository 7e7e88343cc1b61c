"""What a recurrent module needs from an episode, framework-free (numpy): the state its next step
starts from, and the previous action and reward.

RLlib reads these from the episode itself (its env-to-module `AddStatesFromEpisodesToBatch` and
`PrevActionsPrevRewards` connectors): the state before an episode's first step is the module's
initial state, and before any later step the `Columns.STATE_OUT` the module returned at the step
before, recorded in the episode's extra model outputs. A chunk cut from an episode under way
keeps its predecessor's last step as a one-step lookback (`SingleAgentEpisode.cut(1)`), so the
chunk's first state is known too; the EnvRunner and the learner both read it from there, which
is also what makes a checkpointed runner resume with the exact carried states.

States are nested dicts of arrays ("h", "c", or per encoder `{"actor": {...}, ...}`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.compat.rllib_utils import Columns

if TYPE_CHECKING:  # episodes (a layer above) are only annotated here
    from trainer.env.episode import SingleAgentEpisode


def tree_stack(rows: list[Any]) -> Any:
    """Nested dicts of arrays, one per row, as one nested dict of arrays stacked on axis 0."""
    first = rows[0]
    if isinstance(first, dict):
        return {key: tree_stack([row[key] for row in rows]) for key in first}
    return np.stack(rows)


def _has_previous_step(episode: SingleAgentEpisode) -> bool:
    """Whether a step came before the episode's next one (this chunk's, or its lookback's)."""
    return len(episode) > 0 or episode.t_started > 0


def next_state_in(episode: SingleAgentEpisode | None, initial_state: Any) -> Any:
    """The state the module starts the episode's next step from: the last recorded
    `Columns.STATE_OUT` (in this chunk, else in its lookback), the initial state at the
    episode's start."""
    if episode is None or not _has_previous_step(episode):
        return initial_state
    return episode.get_extra_model_outputs(
        Columns.STATE_OUT, -1, neg_index_as_lookback=len(episode) == 0
    )


def chunk_state_in(episode: SingleAgentEpisode, initial_state: Any) -> Any:
    """The state before the chunk's first step: the initial state at the episode's start, else
    the `Columns.STATE_OUT` of the step before (the chunk's lookback)."""
    if episode.t_started == 0:
        return initial_state
    return episode.get_extra_model_outputs(Columns.STATE_OUT, -1, neg_index_as_lookback=True)


def next_prev_action(episode: SingleAgentEpisode | None, zero_action: Any) -> Any:
    """The action before the episode's next step (`zero_action` at its start)."""
    if episode is None or not _has_previous_step(episode):
        return zero_action
    return episode.get_actions(-1, neg_index_as_lookback=len(episode) == 0)


def next_prev_reward(episode: SingleAgentEpisode | None) -> float:
    """The reward before the episode's next step (0.0 at its start)."""
    if episode is None or not _has_previous_step(episode):
        return 0.0
    return float(episode.get_rewards(-1, neg_index_as_lookback=len(episode) == 0))


def chunk_prev_actions(episode: SingleAgentEpisode, zero_action: Any) -> np.ndarray:
    """The action before each of the chunk's steps (`zero_action` before the episode's first)."""
    actions = np.asarray(episode.get_actions())
    first = (
        zero_action
        if episode.t_started == 0
        else episode.get_actions(-1, neg_index_as_lookback=True)
    )
    first_row = np.asarray(first, dtype=actions.dtype)[None]
    return np.concatenate([first_row, actions[:-1]])


def chunk_prev_rewards(episode: SingleAgentEpisode) -> np.ndarray:
    """The reward before each of the chunk's steps (0.0 before the episode's first)."""
    rewards = np.asarray(episode.get_rewards(), dtype=np.float32)
    first = 0.0 if episode.t_started == 0 else episode.get_rewards(-1, neg_index_as_lookback=True)
    return np.concatenate([np.asarray([first], dtype=np.float32), rewards[:-1]])


def carried_states(module: Any, episodes: list[SingleAgentEpisode | None]) -> Any:
    """The state each episode's next step starts from (`next_state_in`), batched (RLlib's
    env-to-module `AddStatesFromEpisodesToBatch`); `module` is a runner's view of a recurrent
    module (`initial_state()`)."""
    initial = module.initial_state()
    return tree_stack([next_state_in(episode, initial) for episode in episodes])


def step_inputs(
    module: Any, episodes: list[SingleAgentEpisode | None]
) -> tuple[Any, np.ndarray | None, np.ndarray | None]:
    """What a recurrent module's next step needs besides the observations, one row per episode
    (RLlib's env-to-module `AddStatesFromEpisodesToBatch` and the prev-action/reward inputs of
    `lstm_use_prev_action` / `lstm_use_prev_reward`): (the carried states batched, the previous
    actions or None, the previous rewards or None). `module` is a runner's view of it
    (`initial_state()`, `needs_prev_actions`, `needs_prev_rewards`, `action_space`)."""
    states = carried_states(module, episodes)
    prev_actions = prev_rewards = None
    if module.needs_prev_actions:
        space = module.action_space
        zero_action = np.zeros(space.shape, dtype=space.dtype)
        prev_actions = np.stack(
            [np.asarray(next_prev_action(episode, zero_action)) for episode in episodes]
        ).astype(space.dtype)
    if module.needs_prev_rewards:
        prev_rewards = np.asarray(
            [next_prev_reward(episode) for episode in episodes], dtype=np.float32
        )
    return states, prev_actions, prev_rewards
