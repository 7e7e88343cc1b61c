"""`TQCConfig`: TQC's settings (RLlib 2.60's: SAC's, plus the quantile critics') and its classes
(SAC's, with TQC's learners and modules, by import path; the `TQC` algorithm of `tqc.py` too).

TQC (Kuznetsov et al. 2020, "Controlling Overestimation Bias with Truncated Mixture of
Continuous Distributional Quantile Critics") is SAC whose `n_critics` critics each predict
`n_quantiles` quantiles of the return; the critics' target drops the
`top_quantiles_to_drop_per_net * n_critics` largest of all the target critics' quantiles.
Box actions only, as RLlib's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.sac.config import CLASSES as SAC_CLASSES
from trainer.algorithms.sac.config import SACConfig
from trainer.algorithms.settings import setting
from trainer.util.checks import int_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: TQC's Algorithm (`tqc.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.tqc.tqc:TQC"
#: TQC's learners and default modules (`AlgorithmClasses`), named by import path. A torch
#: `learner_class` must be a TQCTorchLearner.
CLASSES = dataclasses.replace(
    SAC_CLASSES,
    numpy_learner="trainer.algorithms.tqc.tqc_learner:TQCLearner",
    torch_learner="trainer.algorithms.tqc.torch_learner:TQCTorchLearner",
    numpy_module="trainer.algorithms.tqc.tqc_module:TQCModule",
    torch_module="trainer.algorithms.tqc.torch_module:DefaultTQCTorchRLModule",
    required_learner_base="ray.rllib.algorithms.tqc.torch.tqc_torch_learner.TQCTorchLearner",
)

#: The settings the module reads (RLlib's `_model_config_auto_includes`), with RLlib's defaults.
TQC_MODEL_KEYS: dict[str, Any] = {
    "n_quantiles": 25,
    "n_critics": 2,
    "top_quantiles_to_drop_per_net": 2,
}


#: The head settings RLlib's TQCCatalog does not pass to its critics' heads (it builds them
#: with `MLPHeadConfig`'s default initializers): the critics' heads start as a head without
#: them does here.
HEAD_INITIALIZER_KEYS = (
    "head_fcnet_kernel_initializer",
    "head_fcnet_kernel_initializer_kwargs",
    "head_fcnet_bias_initializer",
    "head_fcnet_bias_initializer_kwargs",
)


def quantiles_kept(n_quantiles: int, n_critics: int, top_quantiles_to_drop_per_net: int) -> int:
    """How many of the target critics' n_critics * n_quantiles quantiles the target keeps (the
    smallest ones)."""
    return (n_quantiles - top_quantiles_to_drop_per_net) * n_critics


class TQCConfig(SACConfig):
    """TQC's config: SAC's (RLlib's defaults) plus `n_quantiles=25`, `n_critics=2`,
    `top_quantiles_to_drop_per_net=2`. `twin_q` has no effect: the critics are `n_critics`."""

    _CLASSES = CLASSES
    n_quantiles: int = setting(25, int_at_least(1), "quantiles each critic predicts")
    n_critics: int = setting(2, int_at_least(1), "quantile critics (and target critics)")
    top_quantiles_to_drop_per_net: int = setting(
        2,
        int_at_least(0),
        "the largest target quantiles dropped per critic (n_critics times this many in all)",
    )

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        """TQC's check of its three settings together (before the checks that need an env),
        then SAC's."""
        total = self.n_quantiles * self.n_critics
        dropped = self.top_quantiles_to_drop_per_net * self.n_critics
        if dropped >= total:
            raise ConfigError(
                f"TQCConfig: top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net} "
                f"drops {dropped} of the {total} quantiles of n_critics={self.n_critics} critics "
                f"with n_quantiles={self.n_quantiles}; it must be below n_quantiles (at most "
                f"{self.n_quantiles - 1})"
            )
        super().validate()

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {
            "n_quantiles": self.n_quantiles,
            "n_critics": self.n_critics,
            "top_quantiles_to_drop_per_net": self.top_quantiles_to_drop_per_net,
        }

    def _numpy_module_kwargs(self, inference_only: bool) -> dict[str, Any]:
        """The numpy TQCModule's critics, and whether it is the EnvRunners' copy (the policy
        only)."""
        return {
            "n_quantiles": self.n_quantiles,
            "n_critics": self.n_critics,
            "inference_only": inference_only,
        }


__all__ = ["CLASSES", "HEAD_INITIALIZER_KEYS", "TQC_MODEL_KEYS", "TQCConfig", "quantiles_kept"]
