"""`BCConfig`: BC's settings, RLlib 2.60's MARWIL's with `beta=0` (the negative log-likelihood
of the recorded actions; no advantage weights, no value loss); the algorithm, `BC`, is in
`bc.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.marwil.config import MARWILConfig
from trainer.compat.rllib_settings import RAY_DATA_OPTION, NoEffect, Unsupported
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: BC's Algorithm (`bc.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.bc.bc:BC"


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
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        if self.beta != 0.0:
            raise ConfigError(
                f"BCConfig.training(beta={self.beta!r}): for behavioral cloning, `beta` "
                "parameter must be 0.0 (RLlib's check; MARWILConfig weighs by advantages)"
            )
        super().validate()


__all__ = ["BCConfig"]
