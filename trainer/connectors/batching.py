"""RLlib's default env-to-module pieces, for a user's own env loop (RLlib's policy inference
examples): they turn a list of single-agent episodes into the batch a module's
`forward_inference` / `forward_exploration` takes.

    episodes (their observations already rewritten by the user's pieces, e.g. MeanStdFilter)
      AddObservationsFromEpisodesToBatch   batch[OBS]: each episode's last observation
      AddTimeDimToBatchAndZeroPad          a recurrent module: a time axis of one per row
      AddStatesFromEpisodesToBatch         a recurrent module: batch[STATE_IN] per episode, its
                                           last recorded `STATE_OUT` (the initial state at the
                                           episode's start)
      BatchIndividualItems                 the rows of each column stacked: `(B, ...)`
      NumpyToTensor                        torch tensors, for a torch module
    -> {"obs": (B, [1,] ...), "state_in": {...}}

The EnvRunners do not run these: they batch their sub-envs' observations and carry the
recurrent states themselves (`trainer.runners.env_runner`), reading the same episode records,
so an inference loop built on these pieces acts as the EnvRunner's module did. The pipelines
restored from a checkpoint (`EnvToModulePipeline.from_checkpoint`) end with them.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from trainer.capabilities import MULTI_AGENT
from trainer.compat.rllib_utils import Columns
from trainer.connectors.connector_v2 import ConnectorV2
from trainer.core.obs_tree import float32_leaves, tree_map
from trainer.core.recurrent import next_state_in, tree_stack
from trainer.errors import UnsupportedValue

#: The key under which the time-axis piece tells `RemoveSingleTsTimeRankFromBatch` (module-to-env)
#: that it added one (RLlib's `shared_data` key).
ADDED_TIME_RANK = "_added_single_ts_time_rank"


def is_stateful(rl_module: Any) -> bool:
    """Whether `rl_module` is recurrent (`is_stateful()`)."""
    check = getattr(rl_module, "is_stateful", None)
    return bool(check()) if callable(check) else False


def is_torch_module(rl_module: Any) -> bool:
    """Whether `rl_module` is a torch module (torch is only looked at when already imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(rl_module, torch.nn.Module)


def numpy_tree(tree: Any) -> Any:
    """Torch tensors in `tree` (dicts, tuples, lists) as numpy arrays; anything else kept."""
    if isinstance(tree, dict):
        return {key: numpy_tree(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(numpy_tree(value) for value in tree)
    if hasattr(tree, "detach") and hasattr(tree, "cpu"):
        return tree.detach().cpu().numpy()
    return tree


def _single_agent(episodes: list, piece: str) -> list:
    for episode in episodes:
        if hasattr(episode, "agent_episodes"):
            raise UnsupportedValue(
                f"{piece}: a MultiAgentEpisode; the default pieces of a user's own env loop "
                "take single-agent episodes here (a multi-agent loop calls each agent's "
                "module with that agent's SingleAgentEpisode)",
                MULTI_AGENT,
            )
    return episodes


class AddObservationsFromEpisodesToBatch(ConnectorV2):
    """`batch["obs"]`: the last observation of each episode, one row per episode (kept when
    the batch already has observations)."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if Columns.OBS in batch:
            return batch
        episodes = _single_agent(episodes, type(self).__name__)
        batch[Columns.OBS] = [episode.get_observations(-1) for episode in episodes]
        return batch


class AddTimeDimToBatchAndZeroPad(ConnectorV2):
    """For a recurrent module: each observation row gets a time axis of one (`(1, ...)`), as
    the module steps through time; nothing otherwise."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        if not is_stateful(rl_module) or Columns.OBS not in batch:
            return batch
        batch[Columns.OBS] = [
            tree_map(lambda leaf: np.asarray(leaf)[None], row) for row in batch[Columns.OBS]
        ]
        if shared_data is not None:
            shared_data[ADDED_TIME_RANK] = True
        return batch


class AddStatesFromEpisodesToBatch(ConnectorV2):
    """For a recurrent module: `batch["state_in"]`, per episode the state its next step starts
    from (the last `Columns.STATE_OUT` recorded in the episode; the module's initial state at
    its start); nothing otherwise."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if not is_stateful(rl_module) or Columns.STATE_IN in batch:
            return batch
        episodes = _single_agent(episodes, type(self).__name__)
        initial = numpy_tree(rl_module.get_initial_state())
        batch[Columns.STATE_IN] = [next_state_in(episode, initial) for episode in episodes]
        return batch


class BatchIndividualItems(ConnectorV2):
    """Each column's rows (one per episode) stacked into one batch, leaf by leaf."""

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        for column, rows in list(batch.items()):
            if isinstance(rows, list) and rows:
                batch[column] = tree_stack([tree_map(np.asarray, row) for row in rows])
        return batch


class NumpyToTensor(ConnectorV2):
    """For a torch module: every array of the batch as a torch tensor (float64 as float32, as
    RLlib's `convert_to_torch_tensor`); a numpy module keeps arrays."""

    def __init__(self, *args: Any, device: Any = None, **kwargs: Any) -> None:
        self.device = device
        super().__init__(*args, **kwargs)

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if not is_torch_module(rl_module):
            return batch
        import torch

        def tensor(array: np.ndarray) -> Any:
            result = torch.from_numpy(np.ascontiguousarray(array))
            return result if self.device is None else result.to(self.device)

        return {column: tree_map(tensor, float32_leaves(value)) for column, value in batch.items()}


def default_env_to_module_pieces() -> list[ConnectorV2]:
    """The default pieces that follow a user's, in RLlib's order."""
    return [
        AddObservationsFromEpisodesToBatch(),
        AddTimeDimToBatchAndZeroPad(),
        AddStatesFromEpisodesToBatch(),
        BatchIndividualItems(),
        NumpyToTensor(),
    ]
