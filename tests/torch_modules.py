"""A user's own TorchRLModule, as RLlib's docs write one: built in `setup()`, `_forward`
returning the action-distribution inputs, the value function through `ValueFunctionAPI`, and
the value head left out of inference-only copies (`InferenceOnlyAPI`). Importable by EnvRunner
processes: the tests directory travels on their import path."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from trainer.algorithms.dqn.torch_learner import DQNTorchLearner
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI, ValueFunctionAPI
from trainer.torch_rl.rl_module import TorchRLModule


class TwoHeadedTorchModule(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI):
    """A shared tanh layer of `model_config["hidden"]` units (default 32), a policy head and a
    value head."""

    def setup(self) -> None:
        hidden = int((self.model_config or {}).get("hidden", 32))
        n_inputs = int(self.observation_space.shape[0])
        self.body = nn.Sequential(nn.Linear(n_inputs, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, int(self.action_space.n))
        self.vf = nn.Linear(hidden, 1)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings = self.body(batch[Columns.OBS].float())
        return {Columns.ACTION_DIST_INPUTS: self.pi(embeddings), Columns.EMBEDDINGS: embeddings}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self.body(batch[Columns.OBS].float())
        return self.vf(embeddings).squeeze(-1)

    def get_non_inference_attributes(self) -> list[str]:
        return ["vf"]


class FrozenPPOTorchLearner(PPOTorchLearner):
    """A user's learner subclass (RLlib's `learner_class`): `compute_loss_for_module`
    overridden to scale PPO's loss to zero, so no update moves a weight."""

    calls = 0

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        FrozenPPOTorchLearner.calls += 1
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        return 0.0 * loss


class SmallQTorchModule(TorchRLModule, QNetAPI, TargetNetworkAPI, InferenceOnlyAPI):
    """A user's Q-network written as RLlib's DQN modules are: `compute_q_values`, target
    networks the learner makes (`make_target_networks`), RLlib's `_forward_train` outputs, and
    forward passes that return greedy actions only (no action-distribution inputs)."""

    def setup(self) -> None:
        hidden = int((self.model_config or {}).get("hidden", 16))
        n_inputs = int(self.observation_space.shape[0])
        self.q = nn.Sequential(
            nn.Linear(n_inputs, hidden), nn.ReLU(), nn.Linear(hidden, int(self.action_space.n))
        )

    def make_target_networks(self) -> None:
        self._target_q = copy.deepcopy(self.q).requires_grad_(False)

    def get_target_network_pairs(self) -> list:
        return [(self.q, self._target_q)]

    def get_non_inference_attributes(self) -> list[str]:
        return ["_target_q"]

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {"qf_preds": self.q(batch[Columns.OBS].float())}

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {"qf_preds": self._target_q(batch[Columns.OBS].float())}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTIONS: self.compute_q_values(batch)["qf_preds"].argmax(-1)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {
            "qf_preds": self.compute_q_values(batch)["qf_preds"],
            "qf_next_preds": self.compute_q_values({Columns.OBS: batch[Columns.NEXT_OBS]})[
                "qf_preds"
            ],
            "qf_target_next_preds": self.forward_target({Columns.OBS: batch[Columns.NEXT_OBS]})[
                "qf_preds"
            ],
        }


class CountingDQNTorchLearner(DQNTorchLearner):
    """A user's DQN learner subclass (RLlib's `learner_class`): counts its loss calls and logs
    one more statistic."""

    calls = 0

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        CountingDQNTorchLearner.calls += 1
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        # RLlib's n-step column reaches a subclass's loss.
        self.log_loss_stats(
            {
                "loss_calls": CountingDQNTorchLearner.calls,
                "mean_n_step": batch["n_step"].float().mean(),
            }
        )
        return loss
