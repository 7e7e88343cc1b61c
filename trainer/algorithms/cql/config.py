"""`CQLConfig`: CQL's settings (RLlib 2.60's: SAC's, plus the conservative term's and behaviour
cloning's, with CQL's defaults) and its classes (SAC's, with CQL's learners and torch module, by
import path; the `CQL` algorithm of `cql.py` too).

CQL learns from recorded data only (`offline_data(input_=...)`), single-agent, Box actions.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

from trainer.algorithms.sac.config import CLASSES as SAC_CLASSES
from trainer.algorithms.sac.config import SACConfig
from trainer.algorithms.settings import setting
from trainer.compat.rllib_settings import NoEffect, Unsupported
from trainer.util.checks import int_at_least, is_bool, number_above, number_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: CQL's Algorithm (`cql.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.cql.cql:CQL"
#: CQL's learners and torch module (`AlgorithmClasses`), named by import path (the learners
#: read their settings off a `CQLConfig`: they import this module); the numpy module is SAC's.
#: A torch `learner_class` must be a CQLTorchLearner.
CLASSES = dataclasses.replace(
    SAC_CLASSES,
    numpy_learner="trainer.algorithms.cql.cql_learner:CQLLearner",
    torch_learner="trainer.algorithms.cql.torch_learner:CQLTorchLearner",
    torch_module="trainer.algorithms.cql.torch_module:DefaultCQLTorchRLModule",
    required_learner_base="ray.rllib.algorithms.cql.torch.cql_torch_learner.CQLTorchLearner",
)

_UNUSED_BY_RLLIB = (
    "RLlib 2.60's CQL stores it and its learner does not read it (the Lagrangian variant of "
    "the conservative weight is not implemented there either)"
)


class CQLConfig(SACConfig):
    """CQL's config: SAC's, plus `bc_iters=20000`, `temperature=1.0`, `num_actions=10`,
    `min_q_weight=5.0`, `deterministic_backup=True`, with RLlib's rates `actor_lr=1e-4`,
    `critic_lr=1e-3`, `alpha_lr=1e-3` and `min_sample_timesteps_per_iteration=0`,
    `min_train_timesteps_per_iteration=100`. `lr` stays None (RLlib's default 3e-4 is refused
    by its own validate(), so every RLlib CQL script sets `lr=None`)."""

    _CLASSES = CLASSES
    _LEARNS_OFFLINE = True
    _MULTI_AGENT_TRAINING = False
    bc_iters: int = setting(
        20000,
        int_at_least(0),
        "training iterations that clone the recorded actions before the policy follows the critics",
    )
    temperature: float = setting(1.0, number_above(0), "the conservative term's temperature")
    num_actions: int = setting(
        10,
        int_at_least(1),
        "random and policy actions drawn per state for the conservative term",
    )
    min_q_weight: float = setting(
        5.0, number_at_least(0), "the conservative term's weight in the critics' loss"
    )
    deterministic_backup: bool = setting(
        True,
        is_bool,
        "Bellman targets without the entropy bonus (min Q_target(s', a') only)",
    )

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            **SACConfig._ALGO_RLLIB_SETTINGS["training"],
            "lagrangian": NoEffect(False, _UNUSED_BY_RLLIB),
            "lagrangian_thresh": NoEffect(5.0, _UNUSED_BY_RLLIB),
        },
    }
    _DEFAULT_OVERRIDES = {
        **SACConfig._DEFAULT_OVERRIDES,
        "actor_lr": 1e-4,
        "critic_lr": 1e-3,
        "alpha_lr": 1e-3,
        "num_env_runners": 0,
        "min_sample_timesteps_per_iteration": 0,
        "min_train_timesteps_per_iteration": 100,
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        super().validate()
        self._require_recorded_data("CQLConfig")

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {**super()._model_config_auto_includes, "num_actions": self.num_actions}


__all__ = ["CLASSES", "CQLConfig"]
