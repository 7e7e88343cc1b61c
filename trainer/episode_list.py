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

import numpy as np

from trainer.episode import SingleAgentEpisode


class EpisodeList(list):
    """A `list` of `SingleAgentEpisode`s; only its pickled form differs from a plain list."""

    def __reduce__(self):
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


def _pack(episodes: list[SingleAgentEpisode]):
    if not episodes or not all(isinstance(ep, SingleAgentEpisode) and ep.is_numpy
                               for ep in episodes):
        return None
    extra_keys = None
    for ep in episodes:
        if len(ep):
            keys = sorted(ep.extra_model_outputs)
            if extra_keys is None:
                extra_keys = keys
            elif keys != extra_keys:
                return None
    extra_keys = extra_keys or []
    observations = _concat([ep.observations for ep in episodes])
    if observations is None:
        return None
    columns = {"actions": [ep.actions for ep in episodes],
               "rewards": [ep.rewards for ep in episodes]}
    for key in extra_keys:
        columns["extra:" + key] = [ep.extra_model_outputs.get(key, ()) for ep in episodes]
    packed_columns = {}
    for name, arrays in columns.items():
        if any(len(a) for a in arrays):
            packed = _concat(arrays)
            if packed is None:
                return None
            packed_columns[name] = packed
    records = [
        (ep.id_, len(ep), len(ep.observations), ep.t_started, ep.env_index, ep.is_terminated,
         ep.is_truncated, ep.custom_data, ep._temporary_timestep_data, ep._start_time,
         ep._last_step_time,
         # Most envs return empty info dicts: send their count instead of the dicts.
         None if not any(ep.infos) else ep.infos,
         # An episode without steps keeps its own (empty) step arrays, dtypes included.
         None if len(ep) else (ep.actions, ep.rewards, ep.extra_model_outputs))
        for ep in episodes
    ]
    return observations, packed_columns, extra_keys, records


def _unpack(observations: np.ndarray, columns: dict[str, np.ndarray], extra_keys: list[str],
            records: list) -> EpisodeList:
    episodes = EpisodeList()
    obs_start = step_start = 0
    for (id_, length, num_obs, t_started, env_index, terminated, truncated, custom_data, temporary,
         start_time, last_step_time, infos, own_steps) in records:
        ep = SingleAgentEpisode(id_, t_started=t_started, env_index=env_index)
        ep.observations = observations[obs_start:obs_start + num_obs]
        step_end = step_start + length
        if own_steps is None:
            ep.actions = columns["actions"][step_start:step_end]
            ep.rewards = columns["rewards"][step_start:step_end]
            ep.extra_model_outputs = {key: columns["extra:" + key][step_start:step_end]
                                      for key in extra_keys}
        else:
            ep.actions, ep.rewards, ep.extra_model_outputs = own_steps
        ep.infos = [{} for _ in range(num_obs)] if infos is None else infos
        ep.is_terminated, ep.is_truncated = terminated, truncated
        ep.custom_data = custom_data
        ep._temporary_timestep_data = temporary
        ep._start_time, ep._last_step_time = start_time, last_step_time
        ep._is_numpy = True
        episodes.append(ep)
        obs_start += num_obs
        step_start = step_end
    return episodes
