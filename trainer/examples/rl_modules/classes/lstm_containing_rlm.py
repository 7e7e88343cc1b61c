"""RLlib's LSTM-containing custom torch module
(`ray.rllib.examples.rl_modules.classes.lstm_containing_rlm`): an LSTM layer over the
observation sequence, dense ReLU layers, and two linear heads (action logits, value). Needs the
`torch` extra.

`model_config`: `lstm_cell_size` (256), `dense_layers` ([128, 128]) and, read by the learner,
`max_seq_len` (20). The state is `{"h": (cell,), "c": (cell,)}` per batch row: the EnvRunners
carry it from step to step, the learner trains on `max_seq_len` sequences starting from the state
each sequence began with.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.core.apis import (
    TARGET_NETWORK_ACTION_DIST_INPUTS,
    InferenceOnlyAPI,
    TargetNetworkAPI,
    ValueFunctionAPI,
)
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.torch_rl.target_networks import make_target_network


class LSTMContainingRLModule(TorchRLModule, ValueFunctionAPI):
    """LSTM -> dense ReLU layers -> a logits head and a value head, for a 1-D observation
    (`(B, T, obs_dim)` batches) and a Discrete action."""

    def setup(self) -> None:
        in_size = self.observation_space.shape[0]
        self._lstm_cell_size = self.model_config.get("lstm_cell_size", 256)
        self._lstm = nn.LSTM(in_size, self._lstm_cell_size, batch_first=True)
        in_size = self._lstm_cell_size

        layers: list[nn.Module] = []
        for out_size in self.model_config.get("dense_layers", [128, 128]):
            layers.append(nn.Linear(in_size, out_size))
            layers.append(nn.ReLU())
            in_size = out_size
        self._fc_net = nn.Sequential(*layers)

        self._pi_head = nn.Linear(in_size, self.action_space.n)
        self._values = nn.Linear(in_size, 1)

    def get_initial_state(self) -> Any:
        return {
            "h": np.zeros(shape=(self._lstm_cell_size,), dtype=np.float32),
            "c": np.zeros(shape=(self._lstm_cell_size,), dtype=np.float32),
        }

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings, state_outs = self._compute_embeddings_and_state_outs(batch)
        return {
            Columns.ACTION_DIST_INPUTS: self._pi_head(embeddings),
            Columns.STATE_OUT: state_outs,
        }

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings, state_outs = self._compute_embeddings_and_state_outs(batch)
        return {
            Columns.ACTION_DIST_INPUTS: self._pi_head(embeddings),
            Columns.STATE_OUT: state_outs,
            # The learner hands these to compute_values: no second pass through the LSTM.
            Columns.EMBEDDINGS: embeddings,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            embeddings, _ = self._compute_embeddings_and_state_outs(batch)
        return self._values(embeddings).squeeze(-1)

    def _compute_embeddings_and_state_outs(self, batch: dict[str, Any]) -> tuple[Any, Any]:
        obs = batch[Columns.OBS]
        state_in = batch[Columns.STATE_IN]
        # The state comes batch first; torch's LSTM takes it with a leading layer axis.
        h, c = state_in["h"], state_in["c"]
        embeddings, (h, c) = self._lstm(obs, (h.unsqueeze(0), c.unsqueeze(0)))
        embeddings = self._fc_net(embeddings)
        return embeddings, {"h": h.squeeze(0), "c": c.squeeze(0)}


class LSTMContainingRLModuleWithTargetNetwork(
    LSTMContainingRLModule, TargetNetworkAPI, InferenceOnlyAPI, abc.ABC
):
    """`LSTMContainingRLModule` with target copies of its LSTM, dense layers and policy head
    (RLlib's variant for APPO, an algorithm this project does not have; the module itself
    builds and runs its target pass)."""

    def make_target_networks(self) -> None:
        self._old_lstm = make_target_network(self._lstm)
        self._old_fc_net = make_target_network(self._fc_net)
        self._old_pi_head = make_target_network(self._pi_head)

    def get_target_network_pairs(self) -> list[tuple[Any, Any]]:
        return [
            (self._lstm, self._old_lstm),
            (self._fc_net, self._old_fc_net),
            (self._pi_head, self._old_pi_head),
        ]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        h, c = batch[Columns.STATE_IN]["h"], batch[Columns.STATE_IN]["c"]
        embeddings, _ = self._old_lstm(obs, (h.unsqueeze(0), c.unsqueeze(0)))
        embeddings = self._old_fc_net(embeddings)
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: self._old_pi_head(embeddings)}

    def get_non_inference_attributes(self) -> list[str]:
        return ["_old_lstm", "_old_fc_net", "_old_pi_head", "_values"]
