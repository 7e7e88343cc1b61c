"""RLlib's `AutoregressiveActionsRLM` example: a torch module for `Tuple(Discrete(3), Box)`
actions whose second component depends on the first. Its forward pass draws `a1` from a
categorical over the observation (the prior), then `a2` from a diagonal Gaussian over the
observation and one-hot `a1` (the posterior), and returns the actions it drew with their joint
log-likelihood (`Columns.ACTIONS`, `Columns.ACTION_LOGP`) and both heads' outputs as the
distribution inputs: the EnvRunners take a module's own actions as they are. Needs the `torch`
extra."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.torch_rl.distributions import (
    TorchCategorical,
    TorchDiagGaussian,
    TorchMultiDistribution,
)
from trainer.torch_rl.rl_module import TorchRLModule

#: Units of each network's hidden layer.
HIDDEN = 256


class AutoregressiveActionsRLM(TorchRLModule, ValueFunctionAPI):
    """See the module docstring."""

    def setup(self) -> None:
        space = self.action_space
        if not (
            isinstance(space, gym.spaces.Tuple)
            and len(space.spaces) == 2
            and isinstance(space[0], gym.spaces.Discrete)
            and int(space[0].n) == 3
            and isinstance(space[1], gym.spaces.Box)
        ):
            raise ValueError(
                f"AutoregressiveActionsRLM acts in Tuple(Discrete(3), Box), not {space}"
            )
        obs_dim = int(self.observation_space.shape[0])
        self._n_prior = int(space[0].n)
        self._posterior_dim = int(space[1].shape[0])
        self._prior_net = nn.Sequential(
            nn.Linear(obs_dim, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, self._n_prior)
        )
        self._posterior_net = nn.Sequential(
            nn.Linear(obs_dim + self._n_prior, HIDDEN),
            nn.Tanh(),
            nn.Linear(HIDDEN, 2 * self._posterior_dim),
        )
        self._value_net = nn.Sequential(nn.Linear(obs_dim, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._pi(batch[Columns.OBS], greedy=True)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._pi(batch[Columns.OBS], greedy=False)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._pi(batch[Columns.OBS], greedy=False)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        return self._value_net(batch[Columns.OBS]).squeeze(-1)

    def _pi(self, obs: Any, *, greedy: bool) -> dict[str, Any]:
        prior_logits = self._prior_net(obs)
        prior = TorchCategorical.from_logits(prior_logits)
        a1 = (prior.to_deterministic() if greedy else prior).sample()
        one_hot = nn.functional.one_hot(a1.long(), self._n_prior).to(obs.dtype)
        posterior_inputs = self._posterior_net(torch.cat([obs, one_hot], dim=-1))
        posterior = TorchDiagGaussian.from_logits(posterior_inputs)
        a2 = (posterior.to_deterministic() if greedy else posterior).sample()
        actions = (a1, a2)
        return {
            Columns.ACTIONS: actions,
            Columns.ACTION_LOGP: TorchMultiDistribution((prior, posterior)).logp(actions),
            Columns.ACTION_DIST_INPUTS: torch.cat([prior_logits, posterior_inputs], dim=-1),
        }

    def get_inference_action_dist_cls(self) -> Any:
        return TorchMultiDistribution.get_partial_dist_cls(
            child_distribution_cls_struct=(TorchCategorical, TorchDiagGaussian),
            input_lens=(self._n_prior, 2 * self._posterior_dim),
        )
