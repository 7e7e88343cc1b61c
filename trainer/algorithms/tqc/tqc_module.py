"""TQC's default numpy module (`TQCModule`): RLlib 2.60's `DefaultTQCRLModule` layout in numpy,
SAC's module (`trainer.algorithms.sac.sac_module`) with quantile critics.

    [obs] -> pi_encoder -> pi -> action_dist_inputs     (SAC's squashed Gaussian)
    [obs, action] -> qf_encoders.i -> qf_heads.i -> n_quantiles quantiles Z_i(s, a)
                                                        for each critic i < n_critics

Each critic's encoder is SAC's Box-action Q encoder (the observation and action streams, the
fusion layers); its head outputs `n_quantiles` values. The parameters live in one flat vector:
the policy's, then the critics' in order (one optimizer steps them all, RLlib's "qf"); the
target critics are the learner's copy of this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.algorithms.sac.sac_module import SACModule
from trainer.algorithms.tqc.config import HEAD_INITIALIZER_KEYS
from trainer.capabilities import ACTION_SPACES
from trainer.core.models import SpaceInfo
from trainer.errors import UnsupportedValue


class TQCModule(SACModule):
    """See the module docstring. `n_quantiles`, `n_critics`: RLlib's model config keys (from
    TQC's settings)."""

    def __init__(
        self,
        spaces: SpaceInfo,
        model_config: dict,
        *,
        n_quantiles: int = 25,
        n_critics: int = 2,
        seed: int | None = None,
        inference_only: bool = False,
    ):
        if spaces.action_discrete_n is not None:
            raise UnsupportedValue(
                f"{type(self).__name__}: action space {spaces.action_space()} is not supported: "
                "TQC's critics take Box actions (as RLlib's TQC); SAC takes Discrete ones",
                ACTION_SPACES,
            )
        self.n_quantiles = int(n_quantiles)
        self.n_critics = int(n_critics)
        self.critic_outputs = self.n_quantiles
        super().__init__(
            spaces, model_config, twin_q=False, seed=seed, inference_only=inference_only
        )

    def _critic_head_config(self) -> dict:
        """The critics' heads take no head initializers (RLlib's TQCCatalog's)."""
        return {**self.model_config, **dict.fromkeys(HEAD_INITIALIZER_KEYS)}

    def _critic_layout(self) -> list[tuple[str, str]]:
        """RLlib's names: `qf_encoders.{i}` and `qf_heads.{i}` for each critic."""
        return [(f"qf_encoders.{i}", f"qf_heads.{i}") for i in range(self.n_critics)]

    @classmethod
    def _settings_from(cls, model_config: dict) -> dict[str, Any]:
        """TQC's keys of a spec's model config (taken out of it): `n_quantiles`, `n_critics`
        (SAC's `twin_q` and the target's `top_quantiles_to_drop_per_net` have no effect on
        the networks)."""
        model_config.pop("twin_q", None)
        model_config.pop("top_quantiles_to_drop_per_net", None)
        return {
            "n_quantiles": int(model_config.pop("n_quantiles", 25)),
            "n_critics": int(model_config.pop("n_critics", 2)),
        }

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        args, kwargs = super().get_ctor_args_and_kwargs()
        model_config = dict(kwargs["model_config"])
        model_config.pop("twin_q", None)
        kwargs["model_config"] = {
            **model_config,
            "n_quantiles": self.n_quantiles,
            "n_critics": self.n_critics,
        }
        return args, kwargs

    # -- the critics ---------------------------------------------------------------------------
    def quantiles(self, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Every critic's quantiles Z_i(s, a), shape (B, n_critics, n_quantiles)."""
        return np.stack([critic.forward(obs, actions) for critic in self.critics], axis=1)

    def q_values(self, obs: np.ndarray, actions: np.ndarray | None = None) -> np.ndarray:
        """Q(s, a): the mean over the critics' quantiles (RLlib's `compute_q_values`)."""
        assert actions is not None, "TQC's Q(s, a) needs the actions"
        quantiles = self.quantiles(obs, actions)
        return quantiles.reshape(len(quantiles), -1).mean(axis=1)


__all__ = ["TQCModule"]
