"""`EpisodeList`: the list of episodes `EnvRunner.sample()` returns, with a compact pickle.

A worker process ships its episodes back to the main process by pickling them. Pickling one
`SingleAgentEpisode` object at a time costs a few arrays and a dict per episode, which for short
episodes (CartPole's ~20 steps) took a tenth of the sampling time. An `EpisodeList` pickles as a
handful of arrays instead: each field (observations, actions, rewards, every extra model output)
concatenated over all episodes, plus one small record per episode (id, where its rows start, flags,
`custom_data`, infos). Unpickling rebuilds the episodes with their arrays as slices of the
concatenated ones, so the receiver sees exactly the episodes that were sent.

Episodes that do not fit that layout (lists not yet converted with `to_numpy()`, fields whose dtype
or row shape differ between episodes, different extra-output keys) pickle one by one, as a list.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.env.episode import SingleAgentEpisode


class EpisodeList(list):
    """A `list` of `SingleAgentEpisode`s; only its pickled form differs from a plain list."""

    def __reduce__(self) -> Any:
        packed = _pack(self)
        if packed is None:
            return EpisodeList, (list(self),)
        return _unpack, packed


def _concat(arrays: list[np.ndarray]) -> np.ndarray | None:
    """One array of the rows of `arrays`, or None when their dtypes or row shapes differ.
    Arrays without rows do not count (an empty `np.asarray([])` has no meaningful dtype)."""
    rows = [a for a in arrays if len(a)]
    if not rows:
        return None
    dtype, row_shape = rows[0].dtype, rows[0].shape[1:]
    for a in rows:
        if a.dtype != dtype or a.shape[1:] != row_shape:
            return None
    return np.concatenate(rows)


def _packable(ep: SingleAgentEpisode) -> bool:
    """Whether an episode fits the packed layout: numpy'ized, no lookback buffer, array (not
    struct) columns, no spaces or agent data to carry."""
    if not isinstance(ep, SingleAgentEpisode):
        return False
    observations = ep.observations
    if not (
        observations.finalized
        and not observations.lookback
        and isinstance(observations.data, np.ndarray)
    ):
        return False
    if (
        ep.agent_id is not None
        or ep.module_id is not None
        or ep.multi_agent_episode_id is not None
        or ep._observation_space is not None
        or ep._action_space is not None
    ):
        return False
    if ep.t == ep.t_started:
        return True
    for column in (ep.actions, ep.rewards, *ep.extra_model_outputs.values()):
        if column.lookback or not isinstance(column.data, np.ndarray):
            return False
    return True


def _pack(episodes: list[SingleAgentEpisode]) -> Any:
    if not episodes or not all(_packable(ep) for ep in episodes):
        return None
    stepped = [ep for ep in episodes if ep.t != ep.t_started]
    extra_keys = sorted(stepped[0].extra_model_outputs) if stepped else []
    for ep in stepped:
        if ep.extra_model_outputs.keys() != set(extra_keys):
            return None
    observations = _concat([ep.observations.data for ep in episodes])
    if observations is None:
        return None
    columns = {
        "actions": [ep.actions.data for ep in stepped],
        "rewards": [ep.rewards.data for ep in stepped],
    }
    for key in extra_keys:
        columns["extra:" + key] = [ep.extra_model_outputs[key].data for ep in stepped]
    packed_columns = {}
    for name, arrays in columns.items():
        if arrays:
            packed = _concat(arrays)
            if packed is None:
                return None
            packed_columns[name] = packed
    records = [
        (
            ep.id_,
            ep.t - ep.t_started,
            len(ep.observations.data),
            ep.t_started,
            ep.env_index,
            ep.is_terminated,
            ep.is_truncated,
            ep.custom_data,
            ep._temporary_timestep_data,
            ep._start_time,
            ep._last_step_time,
            # Most envs return empty info dicts: send their count instead of the dicts.
            None if not any(ep.infos.data) else ep.infos.data,
            # An episode without steps keeps its own (empty) step columns, dtypes included.
            None if ep.t != ep.t_started else (ep.actions, ep.rewards, ep.extra_model_outputs),
        )
        for ep in episodes
    ]
    return observations, packed_columns, extra_keys, records


def _unpack(
    observations: np.ndarray, columns: dict[str, np.ndarray], extra_keys: list[str], records: list
) -> EpisodeList:
    episodes = EpisodeList()
    obs_start = step_start = 0
    # Absent when no episode has steps of its own (every slice of them is then empty).
    actions, rewards = columns.get("actions", _NO_ROWS), columns.get("rewards", _NO_ROWS)
    extras = {key: columns.get("extra:" + key, _NO_ROWS) for key in extra_keys}
    for (
        id_,
        length,
        num_obs,
        t_started,
        env_index,
        terminated,
        truncated,
        custom_data,
        temporary,
        start_time,
        last_step_time,
        infos,
        own_steps,
    ) in records:
        obs_stop, step_stop = obs_start + num_obs, step_start + length
        steps = slice(step_start, step_stop)
        ep = SingleAgentEpisode._assembled(
            id_,
            observations[obs_start:obs_stop],
            [{} for _ in range(num_obs)] if infos is None else infos,
            *(
                (actions[steps], rewards[steps], {k: v[steps] for k, v in extras.items()})
                if own_steps is None
                else (_NO_ROWS, _NO_ROWS, {})
            ),
            t_started=t_started,
            t=t_started + length,
            env_index=env_index,
            terminated=terminated,
            truncated=truncated,
            custom_data=custom_data,
            temporary_timestep_data=temporary,
            start_time=start_time,
            last_step_time=last_step_time,
        )
        if own_steps is not None:
            ep.actions, ep.rewards, ep.extra_model_outputs = own_steps
        else:
            step_start = step_stop
        episodes.append(ep)
        obs_start = obs_stop
    return episodes


#: A placeholder column for episodes without steps (which keep their own empty columns).
_NO_ROWS = np.zeros(0)
