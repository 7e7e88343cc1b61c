"""RLlib's `IntrinsicCuriosityModel`
(`ray.rllib.examples.rl_modules.classes.intrinsic_curiosity_model_rlm`): the intrinsic
curiosity model (ICM) of Pathak et al. 2017, "Curiosity-driven Exploration by Self-supervised
Prediction", as a learner-only TorchRLModule. Needs the `torch` extra.

    phi      = feature_net(s_t),  next_phi = feature_net(s_{t+1})
    a_hat    = inverse_net([phi, next_phi])      (logits of the action taken between them)
    phi_hat  = forward_net([phi, one_hot(a_t)])  (the predicted next features)
    r_int    = 0.5 * ||phi_hat - next_phi||^2    (the intrinsic reward: the surprise)
    loss     = w * mean(r_int) + (1 - w) * mean(-log p(a_t | a_hat)),  w = forward_loss_weight

The model config's keys are RLlib's: `feature_dim` (288), `feature_net_hiddens` ((256, 256)),
`inverse_net_hiddens` and `forward_net_hiddens` ((256,)), and each net's `*_activation` (None:
none). The loss reads `forward_loss_weight` from the config's `learner_config_dict`. Put it in
a `MultiRLModuleSpec` beside "default_policy" with `learner_only=True`; PPO then trains it on
each of its minibatches (`trainer.torch_rl.self_supervised`), and the curiosity learner
(`trainer.examples.learners.classes.intrinsic_curiosity_learners`) adds its intrinsic rewards.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from torch import nn

from trainer.compat.rllib_utils import Columns, override
from trainer.core.apis import SelfSupervisedLossAPI
from trainer.core.spaces import map_structure
from trainer.torch_rl.networks import TORCH_ACTIVATIONS
from trainer.torch_rl.rl_module import TorchRLModule

#: The forward pass's outputs besides the intrinsic rewards: the features of s_t and s_{t+1}.
PHI = "phi"
NEXT_PHI = "next_phi"


def _mlp(in_size: int, hiddens: Any, activation: str | None, out_size: int) -> nn.Sequential:
    """Linear layers of `hiddens` units, each followed by `activation`, then a linear output
    layer of `out_size` units (torch's default initialization, as RLlib's module)."""
    layers: list[nn.Module] = []
    for size in hiddens:
        layers.append(nn.Linear(in_size, int(size)))
        activation_class = TORCH_ACTIVATIONS[activation or "linear"]
        if activation_class is not None:
            layers.append(activation_class())
        in_size = int(size)
    layers.append(nn.Linear(in_size, out_size))
    return nn.Sequential(*layers)


class IntrinsicCuriosityModel(TorchRLModule, SelfSupervisedLossAPI):
    """The ICM (see the module docstring): trains only (`forward_train`); Box observations
    of one dimension and Discrete actions."""

    @override(TorchRLModule)
    def setup(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Discrete) or not isinstance(
            self.observation_space, gym.spaces.Box
        ):
            raise ValueError(
                "IntrinsicCuriosityModel: takes Box observations (flatten others with the "
                "env-to-module connector FlattenObservations) and Discrete actions, got "
                f"{self.observation_space} and {self.action_space}"
            )
        config = self.model_config or {}
        feature_dim = int(config.get("feature_dim", 288))
        self.num_actions = int(self.action_space.n)
        self._feature_net = _mlp(
            int(self.observation_space.shape[0]),
            config.get("feature_net_hiddens", (256, 256)),
            config.get("feature_net_activation"),
            feature_dim,
        )
        self._inverse_net = _mlp(
            2 * feature_dim,
            config.get("inverse_net_hiddens", (256,)),
            config.get("inverse_net_activation"),
            self.num_actions,
        )
        self._forward_net = _mlp(
            feature_dim + self.num_actions,
            config.get("forward_net_hiddens", (256,)),
            config.get("forward_net_activation"),
            feature_dim,
        )

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # One pass of the feature net over both observations (leaf by leaf for Dict / Tuple
        # ones, as RLlib's: a subclass whose feature net takes such trees keeps this pass).
        both = map_structure(
            lambda obs, next_obs: torch.cat([obs, next_obs], dim=0),
            batch[Columns.OBS],
            batch[Columns.NEXT_OBS],
        )
        if isinstance(both, torch.Tensor):
            both = both.float()
        phi, next_phi = torch.chunk(self._feature_net(both), 2)
        actions = nn.functional.one_hot(batch[Columns.ACTIONS].long(), self.num_actions)
        predicted_next_phi = self._forward_net(torch.cat([phi, actions.float()], dim=-1))
        surprise = 0.5 * torch.sum(torch.pow(predicted_next_phi - next_phi, 2.0), dim=-1)
        return {Columns.INTRINSIC_REWARDS: surprise, PHI: phi, NEXT_PHI: next_phi}

    @override(SelfSupervisedLossAPI)
    def compute_self_supervised_loss(
        self,
        *,
        learner: Any,
        module_id: str,
        config: Any,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        forward_loss = torch.mean(fwd_out[Columns.INTRINSIC_REWARDS])
        action_logits = self._inverse_net(torch.cat([fwd_out[PHI], fwd_out[NEXT_PHI]], dim=-1))
        inverse_loss = nn.functional.cross_entropy(action_logits, batch[Columns.ACTIONS].long())
        weight = config.learner_config_dict["forward_loss_weight"]
        learner.metrics.log_dict(
            {
                "mean_intrinsic_rewards": forward_loss,
                "forward_loss": forward_loss,
                "inverse_loss": inverse_loss,
            },
            key=module_id,
            window=1,
        )
        return weight * forward_loss + (1.0 - weight) * inverse_loss

    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(
            "IntrinsicCuriosityModel trains only (forward_train): it is a learner-only module, "
            "which the EnvRunners do not build"
        )
