"""`MARWILConfig`: MARWIL's settings (RLlib 2.60's, with its defaults) and its classes (its numpy
and torch learners, and PPO's modules, by import path); the algorithm, `MARWIL`, is in
`marwil.py`. BC's config (`trainer.algorithms.bc.config`) is this one with `beta=0`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.settings import setting
from trainer.capabilities import OFFLINE
from trainer.compat.rllib_settings import RAY_DATA_OPTION, NoEffect, Unsupported
from trainer.util.checks import finite_number, number_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: MARWIL's Algorithm (`marwil.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.marwil.marwil:MARWIL"
#: MARWIL's learners (`AlgorithmClasses`) and PPO's modules (RLlib's MARWIL trains PPO's:
#: a policy and a value network), named by import path: the learners read their settings off
#: a `MARWILConfig` (they import this module).
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.marwil.marwil_learner:MARWILLearner",
    torch_learner="trainer.algorithms.marwil.torch_learner:MARWILTorchLearner",
    numpy_module="trainer.algorithms.ppo.module:PolicyModule",
    torch_module="trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule",
)


class MARWILConfig(AlgorithmConfig):
    """MARWIL's config. Defaults are RLlib's: `beta=1.0`, `bc_logstd_coeff=0.0`,
    `moving_average_sqd_adv_norm_update_rate=1e-8`, `moving_average_sqd_adv_norm_start=100.0`,
    `vf_coeff=1.0`, `lr=1e-4`, `train_batch_size=2000`, `num_env_runners=0`; the module is PPO's
    (a policy and a value network)."""

    _CLASSES = CLASSES
    _LEARNS_OFFLINE = True
    beta: float = setting(
        1.0,
        finite_number,
        "how much the advantages weigh the recorded actions (0: behaviour cloning)",
    )
    bc_logstd_coeff: float = setting(
        0.0,
        number_at_least(0),
        "weight of the mean log-std term in the policy loss (Box actions)",
    )
    moving_average_sqd_adv_norm_update_rate: float = setting(
        1e-8,
        number_at_least(0),
        "the update rate of the squared advantages' moving average",
    )
    moving_average_sqd_adv_norm_start: float = setting(
        100.0, number_at_least(0), "the squared advantages' moving average to start from"
    )
    vf_coeff: float = setting(1.0, number_at_least(0), "weight of the value loss")

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            "lambda_": NoEffect(
                1.0,
                "RLlib's GAE lambda over MARWIL's one-step episodes, where it changes nothing: "
                "the value targets are r + gamma * V(s')",
            ),
            "burnin_len": Unsupported(
                0,
                "the offline algorithms train modules without memory here (no LSTM)",
                capability=OFFLINE,
            ),
        },
        "offline_data": {
            "materialize_data": NoEffect(True, RAY_DATA_OPTION),
            "materialize_mapped_data": NoEffect(False, RAY_DATA_OPTION),
            "postprocess_inputs": NoEffect(
                True, "the value targets are always computed (MARWIL's postprocessing)"
            ),
        },
    }
    _DEFAULT_OVERRIDES = {
        "lr": 1e-4,
        "train_batch_size": 2000,
        "num_env_runners": 0,
        "exploration_config": {"type": "StochasticSampling"},
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        if not 0.0 <= self.beta <= 1.0:
            raise ConfigError(
                f"{name}.training(beta={self.beta!r}): `beta` must be within 0.0 and 1.0 "
                "(RLlib's check)"
            )
        self._require_recorded_data(name)


__all__ = ["MARWILConfig"]
