"""RLlib's module-to-env pipeline for a user's own env loop (RLlib's policy inference examples):
from a module's forward output to the actions an env takes, one row per episode.

    forward output {"action_dist_inputs": (B, [1,] ...), "state_out": {...}}
      GetActions                        actions drawn from the module's action distribution
                                        (greedy unless `explore`), with their log-probs when
                                        exploring; a module's own "actions" are kept
      TensorToNumpy                     numpy arrays
      UnBatchToIndividualItems          each column as a list of rows, one per episode
      RemoveSingleTsTimeRankFromBatch   a recurrent module's time axis of one dropped (not
                                        from "state_out")
      NormalizeAndClipActions           "actions_for_env": Box actions mapped from [-1, 1] onto
                                        the bounds (`normalize_actions`) or clipped to them
      ListifyDataForVectorEnv           "actions" and "actions_for_env" as arrays of the rows
    -> {"actions": (B, ...), "actions_for_env": (B, ...), "action_dist_inputs": [row, ...], ...}

`to_env.pop("actions")[0]` is the first episode's action; the other columns, row by row, are
what the episode records with the step (its `extra_model_outputs`: the next step's state in
comes from there). The EnvRunners draw actions with the config's exploration instead
(`trainer.runners.env_runner`): the same distributions, without these per-step records.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.connectors.batching import ADDED_TIME_RANK, numpy_tree
from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2
from trainer.connectors.env_to_module import CONNECTOR_PIPELINES
from trainer.core.models import SpaceInfo, env_actions
from trainer.core.obs_tree import tree_len, tree_map, tree_rows


class ModuleToEnvPipeline(ConnectorPipelineV2):
    """RLlib's module-to-env pipeline: the pieces from a module's output to the env's actions
    (restored from a checkpoint by `from_checkpoint`)."""

    @classmethod
    def from_checkpoint(cls, path: Any, **kwargs: Any) -> ModuleToEnvPipeline:
        """The module-to-env pipeline saved in an algorithm checkpoint's
        `env_runner/module_to_env_connector` directory (see
        `trainer.algorithms.connector_pipelines`, named by its path: it sits above)."""
        pipeline = importlib.import_module(CONNECTOR_PIPELINES).load_pipeline(path, expected=cls)
        assert isinstance(pipeline, ModuleToEnvPipeline)
        return pipeline

    def __repr__(self) -> str:
        return f"ModuleToEnvPipeline({self.connectors!r})"


class GetActions(ConnectorV2):
    """`batch["actions"]` drawn from the module's action distribution over
    `batch["action_dist_inputs"]`: its exploration distribution, sampled, with
    `batch["action_logp"]`, when `explore`; its inference distribution made deterministic
    (the greedy action) otherwise. A batch that has actions (a module that acts itself) is
    kept."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        explore: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        if Columns.ACTIONS in batch:
            return batch
        if Columns.ACTION_DIST_INPUTS not in batch:
            raise ValueError(
                f"GetActions: the module's output has {sorted(batch)}, neither "
                f"{Columns.ACTIONS!r} nor {Columns.ACTION_DIST_INPUTS!r}"
            )
        dist_class = (
            rl_module.get_exploration_action_dist_cls()
            if explore
            else rl_module.get_inference_action_dist_cls()
        )
        dist = dist_class.from_logits(batch[Columns.ACTION_DIST_INPUTS])
        if not explore:
            dist = dist.to_deterministic()
        actions = dist.sample()
        batch[Columns.ACTIONS] = actions
        if explore:
            batch[Columns.ACTION_LOGP] = dist.logp(actions)
        return batch


class TensorToNumpy(ConnectorV2):
    """Every torch tensor of the batch as a numpy array."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        return {column: numpy_tree(value) for column, value in batch.items()}


class UnBatchToIndividualItems(ConnectorV2):
    """Each column (leaves `(B, ...)`) as a list of its `B` rows, one per episode."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        for column, value in list(batch.items()):
            if isinstance(value, list):
                continue
            count = tree_len(value)
            batch[column] = [tree_rows(value, index) for index in range(count)]
        return batch


class RemoveSingleTsTimeRankFromBatch(ConnectorV2):
    """When the env-to-module pipeline added a time axis of one (a recurrent module), each
    row's is dropped again, in every column but `state_out` (whose rows have none)."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        if not shared_data or not shared_data.get(ADDED_TIME_RANK):
            return batch
        for column, rows in list(batch.items()):
            if column == Columns.STATE_OUT or not isinstance(rows, list):
                continue
            batch[column] = [
                tree_map(lambda leaf: np.squeeze(np.asarray(leaf), axis=0), row) for row in rows
            ]
        return batch


class NormalizeAndClipActions(ConnectorV2):
    """`batch["actions_for_env"]`: each row's action as the env takes it. For Box actions with
    `normalize_actions`, the module acts in [-1, 1] and the action is mapped onto the space's
    bounds; with `clip_actions`, clipped to them. Discrete actions are passed on."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        normalize_actions: bool = True,
        clip_actions: bool = False,
        **kwargs: Any,
    ):
        self.normalize_actions = bool(normalize_actions)
        self.clip_actions = bool(clip_actions)
        #: The action space's record for `env_actions`, made once per space.
        self._space_info: tuple[gym.Space, SpaceInfo] | None = None
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def _info_of(self, space: gym.Space) -> SpaceInfo:
        if self._space_info is None or self._space_info[0] is not space:
            # (Only the action part of the record is read.)
            self._space_info = (
                space,
                SpaceInfo.from_spaces(gym.spaces.Box(-1.0, 1.0, (1,)), space),
            )
        return self._space_info[1]

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if Columns.ACTIONS not in batch:
            return batch
        space = self.input_action_space or getattr(rl_module, "action_space", None)
        rows = batch[Columns.ACTIONS]
        if not isinstance(space, gym.spaces.Box):
            batch[Columns.ACTIONS_FOR_ENV] = list(rows)
            return batch
        stacked = np.asarray([np.asarray(row, dtype=np.float32) for row in rows])
        batch[Columns.ACTIONS_FOR_ENV] = list(
            env_actions(
                self._info_of(space),
                stacked,
                normalize=self.normalize_actions,
                clip=self.clip_actions,
            )
        )
        return batch


class ListifyDataForVectorEnv(ConnectorV2):
    """The rows of `actions` and `actions_for_env` stacked into arrays (what a vector env's
    `step` takes); the other columns stay lists of rows."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        for column in (Columns.ACTIONS, Columns.ACTIONS_FOR_ENV):
            rows = batch.get(column)
            if isinstance(rows, list) and rows:
                batch[column] = np.stack([np.asarray(row) for row in rows])
        return batch


def default_module_to_env_pipeline(
    action_space: gym.Space | None,
    observation_space: gym.Space | None = None,
    *,
    normalize_actions: bool = True,
    clip_actions: bool = False,
) -> ModuleToEnvPipeline:
    """RLlib's default module-to-env pipeline (single-agent), input spaces set."""
    pipeline = ModuleToEnvPipeline(
        connectors=[
            GetActions(),
            TensorToNumpy(),
            UnBatchToIndividualItems(),
            RemoveSingleTsTimeRankFromBatch(),
            NormalizeAndClipActions(normalize_actions=normalize_actions, clip_actions=clip_actions),
            ListifyDataForVectorEnv(),
        ]
    )
    pipeline.set_input_spaces(observation_space, action_space)
    return pipeline
