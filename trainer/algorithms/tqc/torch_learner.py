"""`TQCTorchLearner` (RLlib's `ray.rllib.algorithms.tqc.torch.tqc_torch_learner.TQCTorchLearner`):
SAC's torch learner (`trainer.algorithms.sac.torch_learner`: the replay batch, each optimizer
stepped on its own loss, the target critics' soft update, log-alpha, the learner's own
generator, the state) with TQC's loss (`torch_loss.py`) on `DefaultTQCTorchRLModule` and
RLlib's optimizers: "qf" over every critic's encoder and head (critic_lr), "policy" over
`pi_encoder` and `pi` (actor_lr), "alpha" over `curr_log_alpha` (alpha_lr); Adam, eps 1e-7."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym

from trainer.algorithms.sac.loss import ALPHA, POLICY, QF
from trainer.algorithms.sac.torch_learner import SACTorchLearner
from trainer.algorithms.tqc.config import quantiles_kept
from trainer.algorithms.tqc.torch_loss import tqc_loss
from trainer.capabilities import ACTION_SPACES
from trainer.errors import UnsupportedValue

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.tqc.config import TQCConfig


class TQCTorchLearner(SACTorchLearner):
    """See the module docstring."""

    config: TQCConfig
    algorithm_name = "TQC"

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """RLlib's three optimizers (see the module docstring), each built on its first use."""
        config = config or self.config
        module: Any = self.rl_module
        critics = [*module.qf_encoders, *module.qf_heads]
        groups = [
            (QF, critics, config.critic_lr),
            (POLICY, [module.pi_encoder, module.pi], config.actor_lr),
        ]
        for name, networks, rate in groups:
            params = [p for network in networks for p in self.get_parameters(network)]
            self._register_adam(module_id, name, params, rate)
        self._register_adam(module_id, ALPHA, [self.curr_log_alpha[module_id]], config.alpha_lr)

    def _n_target_quantiles(self, module_id: str) -> int:
        """The target quantiles kept (RLlib's `_get_n_target_quantiles`)."""
        config = self.config.get_config_for_module(module_id)
        return quantiles_kept(
            config.n_quantiles, config.n_critics, config.top_quantiles_to_drop_per_net
        )

    def compute_loss_for_module(  # type: ignore[override]  # a TQCConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: TQCConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The sum of the critics', the policy's and alpha's losses (each also handed to its
        optimizer through `self._temp_losses`)."""
        if not isinstance(cast(Any, self.rl_module).action_space, gym.spaces.Box):
            raise UnsupportedValue(
                f"{type(self).__name__}: TQC trains Box actions only (as RLlib's TQC)",
                ACTION_SPACES,
            )
        loss = tqc_loss(
            batch,
            fwd_out,
            log_alpha=self.curr_log_alpha[module_id],
            target_entropy=self.target_entropy[module_id],
            gamma=config.gamma,
            kept=self._n_target_quantiles(module_id),
        )
        return self._finish_loss(module_id, loss)


__all__ = ["TQCTorchLearner"]
