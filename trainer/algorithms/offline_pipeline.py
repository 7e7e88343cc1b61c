"""RLlib's offline data pipeline, for `offline_data(offline_data_class=..., prelearner_class=...)`
(`ray.rllib.offline.offline_data.OfflineData`, `ray.rllib.offline.offline_prelearner`).

Data flow of one `OfflineData.sample(num_samples)` (BC, MARWIL, CQL and IQL call it once per
update when either setting is given; without them, recorded rows go to the learners through
the faster reader of `trainer.offline.reading`):

    OfflineData.data            a Dataset of the files' raw rows (`ray.data.read_parquet` or
        |                       `read_json` of `input_`, or what a subclass reads)
        | .map_batches(prelearner_class, fn_constructor_kwargs={config, spaces,
        |              module_spec, module_state}, batch_size=input_read_batch_size or
        |              num_samples)          (materialized once with materialize_mapped_data)
        v
    OfflinePreLearner(batch)    raw columns -> `_map_to_episodes` (one-step episodes), or the
        |                       recorded episodes (`input_read_episodes`) -> the config's
        |                       `learner_connector` pieces over them -> the episodes' steps as
        |                       columns by module id, flattened ("default_policy/obs", ...)
        | .iter_batches(batch_size=num_samples, _collate_fn)
        v
    MultiAgentBatch             {module id: SampleBatch} -> the learner's update

As in RLlib 2.60, a subclass overrides `OfflineData.__init__` to read other data (images, say)
and `OfflinePreLearner._map_to_episodes` to make episodes of its rows; the learners take the
columns `obs`, `actions`, `rewards`, `new_obs`, `terminateds`, `truncateds` and each extra
model output by name (`transitions_of`), which here stand in for RLlib's default learner
pieces. Everything runs in the learner's process, one batch at a time (`trainer.compat.ray_data`
stands in for Ray Data, local files only).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np

from trainer.capabilities import MULTI_AGENT
from trainer.compat import ray_data
from trainer.compat.rllib_utils import flatten_dict, unflatten_dict
from trainer.compat.sample_batch import MultiAgentBatch, SampleBatch
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.env.episode import SingleAgentEpisode
from trainer.errors import UnsupportedCall
from trainer.offline import columns as C
from trainer.offline.codec import episode_columns, unpack_episode
from trainer.offline.reading import PACKED_VALUES, DatasetSchemaError

__all__ = ["SCHEMA", "OfflineData", "OfflinePreLearner", "learner_batch", "transitions_of"]

#: RLlib's default schema: its column keys -> the dataset's column names
#: (`input_read_schema` overrides some of them).
SCHEMA: dict[str, str] = dict(C.SCHEMA)
#: RLlib's key of the env's own spaces in `OfflineData.spaces`.
INPUT_ENV_SPACES = "__env__"
#: Columns of a recorded row that are neither in the schema nor extra model outputs.
_NOT_EXTRA = ("dones", "agent_index", "type")


def transitions_of(episodes: list[Any]) -> dict[str, np.ndarray]:
    """The steps of single-agent episodes as one train batch: `obs`, `new_obs`, `actions`,
    `rewards`, `terminateds`, `truncateds` (True at an episode's last step only) and each
    extra model output the episodes hold, one row per step, episode after episode."""
    parts: dict[str, list[np.ndarray]] = {}
    for episode in episodes:
        steps = len(episode)
        if steps == 0:
            continue
        last = np.arange(steps) == steps - 1
        columns = {
            C.OBS: episode.get_observations(slice(0, steps)),
            C.NEXT_OBS: episode.get_observations(slice(1, steps + 1)),
            C.ACTIONS: episode.get_actions(slice(0, steps)),
            C.REWARDS: episode.get_rewards(slice(0, steps)),
            C.TERMINATEDS: last & bool(episode.is_terminated),
            C.TRUNCATEDS: last & bool(episode.is_truncated),
        }
        for key in episode.extra_model_outputs:
            columns[key] = episode.get_extra_model_outputs(key, slice(0, steps))
        for key, values in columns.items():
            parts.setdefault(key, []).append(np.asarray(values))
    # (an extra output some episodes lack is left out, as it cannot fill every row)
    rows = len(parts.get(C.OBS, ()))
    return {key: np.concatenate(held) for key, held in parts.items() if len(held) == rows}


class OfflinePreLearner:
    """RLlib's `OfflinePreLearner` (see the module docstring): built once per pass over the
    data with the config, the env's spaces and the module's spec and state; called with a
    batch of the dataset's raw columns, it returns the flattened train batch by module id."""

    def __init__(
        self,
        *,
        config: Any,
        spaces: tuple[Any, Any] | None = None,
        module_state: dict[str, Any] | None = None,
        **kwargs: Any,
    ):
        rl_module_spec = kwargs.get("module_spec") or config.rl_module_spec
        self.config = config
        self._module = rl_module_spec.build()
        if module_state:
            self._module.set_state(module_state)
        self.observation_space: Any
        self.action_space: Any
        self.observation_space, self.action_space = spaces or (None, None)
        self._learner_connector = config.build_learner_connector(
            input_observation_space=self.observation_space,
            input_action_space=self.action_space,
        )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The raw columns as episodes, through the learner pieces, as a flattened batch."""
        if self.config.input_read_episodes:
            episodes = self._recorded_episodes(batch)
        else:
            episodes = self._map_to_episodes(batch, to_numpy=False)["episodes"]
        if self._learner_connector is not None:  # the user's pieces rewrite the episodes
            self._learner_connector(
                rl_module=self._module, batch={}, episodes=episodes, shared_data={}, metrics=None
            )
        module_batches = {DEFAULT_MODULE_ID: transitions_of(episodes)}
        for module_id in list(module_batches):
            if not self._should_module_be_updated(module_id, module_batches):
                del module_batches[module_id]
        return flatten_dict(module_batches)

    def _recorded_episodes(self, batch: dict[str, np.ndarray]) -> list[SingleAgentEpisode]:
        """RLlib's serialized episodes (column `item`), each whole (RLlib samples their steps
        from a buffer; here each step of each episode is a row once)."""
        episodes = []
        for item in batch[C.EPISODE_ITEM]:
            steps = episode_columns(unpack_episode(item))
            episodes.append(
                SingleAgentEpisode(
                    steps["id"],
                    observations=list(steps["obs"]),
                    actions=list(steps["actions"]),
                    rewards=list(steps["rewards"]),
                    extra_model_outputs={key: list(v) for key, v in steps["extra"].items()},
                    terminated=steps["terminated"],
                    truncated=steps["truncated"],
                    len_lookback_buffer=0,
                )
            )
        undone = [episode.id_ for episode in episodes if not episode.is_done]
        if undone:
            raise ValueError(
                "When sampling from episodes (`input_read_episodes=True`) all recorded episodes "
                f"must be done (i.e. either `terminated=True`) or `truncated=True`); not: {undone[:3]}"
            )
        return episodes

    def _should_module_be_updated(self, module_id: Any, multi_agent_batch: Any = None) -> bool:
        """Whether the module's rows go on (`policies_to_train`; all without one)."""
        policies_to_train = self.config.policies_to_train
        if not policies_to_train:
            return True
        if not callable(policies_to_train):
            return module_id in set(policies_to_train)
        return bool(policies_to_train(module_id, multi_agent_batch))

    def _map_to_episodes(
        self, batch: dict[str, Any], to_numpy: bool = False, **kwargs: Any
    ) -> dict[str, list[SingleAgentEpisode]]:
        """One single-agent episode of each row (RLlib's): `obs`, `new_obs` (zeros with
        `ignore_final_observation`), `actions`, `rewards`, `terminateds` (or the old
        `dones`), `truncateds`, `infos`, the other columns as extra model outputs."""
        schema = {**SCHEMA, **(kwargs.get("schema") or self.config.input_read_schema or {})}
        if kwargs.get("is_multi_agent", self.config.is_multi_agent):
            raise UnsupportedCall(
                f"{type(self).__name__}._map_to_episodes() of a multi-agent config: loading "
                "multi-agent episodes is not supported (nor in RLlib 2.60)",
                MULTI_AGENT,
            )
        compressed = kwargs.get("input_compress_columns", self.config.input_compress_columns) or ()
        episodes = []
        for i, obs in enumerate(batch[schema[C.OBS]]):
            _refuse_packed(obs, C.OBS, compressed)
            if self.config.ignore_final_observation:
                next_obs = np.zeros_like(copy.deepcopy(obs))
            else:
                next_obs = batch[schema[C.NEXT_OBS]][i]
            action = batch[schema[C.ACTIONS]][i]
            _refuse_packed(action, C.ACTIONS, compressed)
            ended = schema[C.TERMINATEDS] if schema[C.TERMINATEDS] in batch else C.DONES
            episode = SingleAgentEpisode(
                id_=str(batch[schema[C.EPS_ID]][i])
                if schema[C.EPS_ID] in batch
                else uuid.uuid4().hex,
                agent_id=None,
                observations=[obs, next_obs],
                infos=[{}, batch[schema[C.INFOS]][i] if schema[C.INFOS] in batch else {}],
                actions=[action],
                rewards=[batch[schema[C.REWARDS]][i]],
                terminated=bool(batch[ended][i]),
                truncated=bool(batch[schema[C.TRUNCATEDS]][i])
                if schema[C.TRUNCATEDS] in batch
                else False,
                extra_model_outputs={
                    key: [values[i]]
                    for key, values in batch.items()
                    if key not in schema and key not in schema.values() and key not in _NOT_EXTRA
                },
                len_lookback_buffer=0,
            )
            if to_numpy:
                episode.to_numpy()
            episodes.append(episode)
        return {"episodes": episodes}


def _refuse_packed(value: Any, key: str, compressed: Any) -> None:
    if key in compressed and isinstance(value, (bytes, str)):
        raise DatasetSchemaError(f"column {key!r} holds {PACKED_VALUES}")


def _collate(batch: dict[str, np.ndarray]) -> MultiAgentBatch:
    """RLlib's last-mile step: a flattened batch as a `MultiAgentBatch` by module id."""
    by_module = unflatten_dict(batch)
    return MultiAgentBatch(
        {module_id: SampleBatch(columns) for module_id, columns in by_module.items()},
        env_steps=sum(len(next(iter(columns.values()))) for columns in by_module.values()),
    )


class OfflineData:
    """RLlib's `OfflineData` (see the module docstring): `data` is the dataset of `input_`;
    `sample(num_samples)` maps it with the prelearner once and hands out its batches, pass
    after pass. The algorithm sets `spaces`, `module_spec` and `learner_handles` (its
    learner) before the first sample, as RLlib's does."""

    def __init__(self, config: Any):
        self.config = config
        self.is_multi_agent = config.is_multi_agent
        self.path = config.input_
        self.data_read_method = config.input_read_method
        #: Ray Data's reading options: kept, not passed on (the files are read here).
        self.data_read_method_kwargs = dict(config.input_read_method_kwargs)
        self.data_read_batch_size = config.input_read_batch_size
        self.materialize_data = config.materialize_data
        self.materialize_mapped_data = config.materialize_mapped_data
        self.data_is_mapped = False
        self.filesystem = config.input_filesystem
        self.data = getattr(ray_data, self.data_read_method)(self.path)
        if self.materialize_data:
            self.data = self.data.materialize()
        self.batch_iterators: Iterator[Any] | None = None
        #: Ray Data's scheduling options: RLlib's defaults under the config's (taken, and not
        #: needed here: the data is read and mapped in this process).
        self.map_batches_kwargs = self.default_map_batches_kwargs | dict(config.map_batches_kwargs)
        self.iter_batches_kwargs = self.default_iter_batches_kwargs | dict(
            config.iter_batches_kwargs
        )
        self.prelearner_class = config.prelearner_class or OfflinePreLearner
        self.spaces: dict[str, Any] = {}
        self.locality_hints = None
        self.learner_handles: list[Any] | None = None
        self.module_spec: Any = None
        self._pass_gave_rows = False

    @property
    def default_map_batches_kwargs(self) -> dict[str, Any]:
        """RLlib's defaults for `map_batches` (the config's `map_batches_kwargs` go over them)."""
        return {"concurrency": max(2, int(self.config.num_learners or 0)), "zero_copy_batch": True}

    @property
    def default_iter_batches_kwargs(self) -> dict[str, Any]:
        """RLlib's defaults for `iter_batches` (the config's `iter_batches_kwargs` go over them)."""
        return {"prefetch_batches": 2}

    def sample(
        self,
        num_samples: int,
        return_iterator: bool = False,
        num_shards: int = 1,
        module_state: dict[str, Any] | None = None,
    ) -> Any:
        """The next `MultiAgentBatch` of `num_samples` rows (the last of a pass may hold
        fewer); with `return_iterator`, a list of one iterator over them."""
        if not getattr(self, "data_is_mapped", False):
            self.data = self.data.map_batches(
                self.prelearner_class,
                fn_constructor_kwargs={
                    "config": self.config,
                    "spaces": (getattr(self, "spaces", None) or {}).get(INPUT_ENV_SPACES),
                    "module_spec": getattr(self, "module_spec", None),
                    "module_state": module_state
                    or _module_state(getattr(self, "learner_handles", None)),
                },
                batch_size=getattr(self, "data_read_batch_size", None) or num_samples,
                **getattr(self, "map_batches_kwargs", {}),
            )
            self.data_is_mapped = True
            if getattr(self, "materialize_mapped_data", True):
                self.data = self.data.materialize()
        # (a subclass's __init__ may not have set what RLlib's sets: read with defaults)
        if getattr(self, "batch_iterators", None) is None:
            self.batch_iterators = iter(
                self.data.iter_batches(
                    batch_size=num_samples,
                    _collate_fn=_collate,
                    **getattr(self, "iter_batches_kwargs", {}),
                )
            )
            self._pass_gave_rows = False
        assert self.batch_iterators is not None
        if return_iterator:
            return [self.batch_iterators]
        for batch in self.batch_iterators:
            self._pass_gave_rows = True
            return batch
        # (a pass ended: the next one begins; a pass without rows means there are none)
        self.batch_iterators = None
        if not self._pass_gave_rows:
            raise DatasetSchemaError(
                f"offline_data(input_={getattr(self, 'path', None)!r}): the prelearner "
                f"({getattr(self.prelearner_class, '__name__', self.prelearner_class)}) made "
                "no rows of the data"
            )
        return self.sample(num_samples, return_iterator, num_shards)


def _module_state(learner_handles: list[Any] | None) -> dict[str, Any] | None:
    """The first learner's module state (what RLlib asks its learner for), None without one."""
    if not learner_handles:
        return None
    module = getattr(learner_handles[0], "module", None)
    get_state = getattr(module, "get_state", None)
    return get_state() if callable(get_state) else None


def learner_batch(sampled: Any, source: str) -> dict[str, np.ndarray]:
    """The single-agent train batch in what `OfflineData.sample` returned (a
    `MultiAgentBatch`, or a flattened dict by module id): the default module's columns (or
    the one module's), as arrays; `source` names what made it, for the error."""
    if isinstance(sampled, MultiAgentBatch):
        by_module = dict(sampled.policy_batches)
    elif isinstance(sampled, dict):
        by_module = (
            unflatten_dict(sampled)
            if all("/" in str(k) for k in sampled)
            else {DEFAULT_MODULE_ID: sampled}
        )
    else:
        raise TypeError(
            f"{source}.sample() returned {type(sampled).__name__}: give a MultiAgentBatch"
        )
    columns = by_module.get(DEFAULT_MODULE_ID)
    if columns is None and len(by_module) == 1:
        columns = next(iter(by_module.values()))
    if columns is None:
        raise DatasetSchemaError(
            f"{source}.sample() gave no rows of module {DEFAULT_MODULE_ID!r} (modules: {sorted(map(str, by_module))})"
        )
    batch = {str(key): np.asarray(value) for key, value in dict(columns).items()}
    missing = [key for key in (C.OBS, C.ACTIONS, C.REWARDS) if key not in batch]
    if missing:
        raise DatasetSchemaError(
            f"{source}.sample() gave a batch without {missing} (columns: {sorted(batch)}); the "
            "learner trains on obs, actions, rewards, new_obs, terminateds, truncateds"
        )
    return batch
