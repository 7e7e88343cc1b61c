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

from trainer.env.episode import SingleAgentEpisode
from trainer.env.lookback_buffer import InfiniteLookbackBuffer


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


def _packable(ep: SingleAgentEpisode) -> bool:
    """Whether an episode fits the packed layout: numpy'ized, no lookback buffer, array (not
    struct) columns, no spaces or agent data to carry."""
    if not (isinstance(ep, SingleAgentEpisode) and ep.is_numpy and ep.observations.lookback == 0
            and isinstance(ep.observations.data, np.ndarray)):
        return False
    if ep.agent_id is not None or ep.module_id is not None or ep.multi_agent_episode_id is not None \
            or ep.observation_space is not None or ep.action_space is not None:
        return False
    if not len(ep):
        return True
    columns = [ep.actions, ep.rewards, *ep.extra_model_outputs.values()]
    return all(c.lookback == 0 and isinstance(c.data, np.ndarray) for c in columns)


def _pack(episodes: list[SingleAgentEpisode]):
    if not episodes or not all(_packable(ep) for ep in episodes):
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
    observations = _concat([ep.observations.data for ep in episodes])
    if observations is None:
        return None
    stepped = [ep for ep in episodes if len(ep)]
    columns = {"actions": [ep.actions.data for ep in stepped],
               "rewards": [ep.rewards.data for ep in stepped]}
    for key in extra_keys:
        columns["extra:" + key] = [ep.extra_model_outputs[key].data for ep in stepped]
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
         None if not any(ep.infos.data) else ep.infos.data,
         # An episode without steps keeps its own (empty) step columns, dtypes included.
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
        ep.observations.data = observations[obs_start:obs_start + num_obs]
        ep.observations.finalized = True
        step_end = step_start + length
        if own_steps is None:
            for buffer, name in ((ep.actions, "actions"), (ep.rewards, "rewards")):
                buffer.data = columns[name][step_start:step_end]
                buffer.finalized = True
            ep.extra_model_outputs = {
                key: InfiniteLookbackBuffer(columns["extra:" + key][step_start:step_end])
                for key in extra_keys}
            step_start = step_end
        else:
            ep.actions, ep.rewards, ep.extra_model_outputs = own_steps
        ep.infos.data = [{} for _ in range(num_obs)] if infos is None else infos
        ep.t = t_started + length
        ep.is_terminated, ep.is_truncated = terminated, truncated
        ep.custom_data = custom_data
        ep._temporary_timestep_data = temporary
        ep._start_time, ep._last_step_time = start_time, last_step_time
        episodes.append(ep)
        obs_start += num_obs
    return episodes
