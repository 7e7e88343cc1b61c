"""BC, behaviour cloning: `BCConfig` and `BC`, RLlib 2.60's MARWIL with `beta=0` (the negative
log-likelihood of the recorded actions; no advantage weights, no value loss)."""

from __future__ import annotations

from typing import ClassVar

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.marwil.marwil import MARWIL, MARWILConfig
from trainer.compat.rllib_settings import RAY_DATA_OPTION, NoEffect, Unsupported


class BCConfig(MARWILConfig):
    """BC's config: MARWIL's with `beta=0.0` (RLlib's; any other beta is refused)."""

    _DEFAULT_OVERRIDES = {**MARWILConfig._DEFAULT_OVERRIDES, "beta": 0.0}
    # RLlib's BC keeps the base defaults of these (MARWIL changes them).
    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        **MARWILConfig._ALGO_RLLIB_SETTINGS,
        "offline_data": {
            "materialize_data": NoEffect(False, RAY_DATA_OPTION),
            "materialize_mapped_data": NoEffect(True, RAY_DATA_OPTION),
            "postprocess_inputs": NoEffect(False, "BC computes no value targets"),
        },
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or BC)

    def validate(self) -> None:
        if self.beta != 0.0:
            raise ConfigError(
                f"BCConfig.training(beta={self.beta!r}): for behavioral cloning, `beta` "
                "parameter must be 0.0 (RLlib's check; MARWILConfig weighs by advantages)"
            )
        super().validate()


class BC(MARWIL):
    config: BCConfig

    @classmethod
    def get_default_config(cls) -> BCConfig:
        return BCConfig()
