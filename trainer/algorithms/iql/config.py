"""`IQLConfig`: IQL's settings (RLlib 2.60's: MARWIL's, plus the value network's expectile and
IQL's three rates, with IQL's defaults) and its classes (learners and default modules, numpy
and torch, by import path; the `IQL` algorithm of `iql.py` too).

IQL learns from recorded data only (`offline_data(input_=...)`), Box actions.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from trainer.algorithms.algorithm_config import ConfigError, NotProvided
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.config.training import check_lr
from trainer.algorithms.marwil.config import MARWILConfig
from trainer.algorithms.settings import setting
from trainer.compat.rllib_settings import NoEffect, Unsupported
from trainer.util.checks import int_at_least, is_bool, number_above
from trainer.util.import_paths import resolve_import_path

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: IQL's Algorithm (`iql.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.iql.iql:IQL"
#: IQL's learners and default modules (`AlgorithmClasses`; the numpy module is SAC's with a
#: value network), named by import path: the learners read their settings off an `IQLConfig`
#: (they import this module).
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.iql.iql_learner:IQLLearner",
    torch_learner="trainer.algorithms.iql.torch_learner:IQLTorchLearner",
    numpy_module="trainer.algorithms.iql.iql_learner:IQLModule",
    torch_module="trainer.algorithms.iql.torch_module:DefaultIQLTorchRLModule",
)


def _must_be_none(value: Any) -> str | None:
    return None if value is None else "None (IQL's rates are actor_lr, critic_lr and value_lr)"


def _expectile(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 < value < 1.0:
        return None
    return "a number in (0, 1) (RLlib's check: 'For meaningful results, `expectile` ...')"


_NOT_IQL = "IQL's loss has no such term (RLlib's IQLConfig keeps MARWIL's setting unused)"


class IQLConfig(MARWILConfig):
    """IQL's config: MARWIL's, with RLlib 2.60's IQL defaults: `beta=0.1` (the temperature of
    the advantage weights), `expectile=0.8`, `actor_lr=critic_lr=value_lr=3e-4`, `lr=None`,
    `twin_q=True`, `target_network_update_freq=0`, `tau=1.0`. Box actions only, as RLlib's."""

    # RLlib's: IQL has no single rate (training(lr=...) other than None is refused),
    # typed as the shared setting it redefines.
    lr: float | list[list[float]] = setting(
        None, _must_be_none, "not used: IQL's rates are actor_lr, critic_lr, value_lr"
    )
    expectile: float = setting(0.8, _expectile, "the value network's expectile of the Q-values")
    actor_lr: float | list = setting(3e-4, check_lr, "the policy's Adam rate (or a schedule)")
    critic_lr: float | list = setting(3e-4, check_lr, "the critics' Adam rate (or a schedule)")
    value_lr: float | list = setting(
        3e-4, check_lr, "the value network's Adam rate (or a schedule)"
    )
    twin_q: bool = setting(True, is_bool, "two critics (and target critics); the minimum is used")
    target_network_update_freq: int = setting(
        0, int_at_least(0), "env steps between target critic updates (0: after every update)"
    )
    tau: float = setting(1.0, number_above(0), "target update: tau * critic + (1 - tau) * target")

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            **MARWILConfig._ALGO_RLLIB_SETTINGS["training"],
            "bc_logstd_coeff": NoEffect(0.0, _NOT_IQL),
            "vf_coeff": NoEffect(1.0, _NOT_IQL),
        },
        "offline_data": MARWILConfig._ALGO_RLLIB_SETTINGS["offline_data"],
    }
    _DEFAULT_OVERRIDES = {**MARWILConfig._DEFAULT_OVERRIDES, "beta": 0.1, "lr": None}
    _CLASSES = CLASSES

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def training(self, **kwargs: Any) -> Self:
        """Learning settings: IQL's own, MARWIL's and those every algorithm has. `lr` must be
        None (or not given): IQL trains with `actor_lr`, `critic_lr` and `value_lr`."""
        lr = kwargs.pop("lr", NotProvided)
        if lr is not NotProvided and lr is not None:
            raise ConfigError(
                f"IQLConfig.training(lr={lr!r}): IQL trains with actor_lr, critic_lr and "
                "value_lr (the policy's, the critics' and the value network's rates); leave lr "
                "unset or None"
            )
        return super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        if self.beta <= 0.0:
            raise ConfigError(
                f"IQLConfig.training(beta={self.beta!r}): for meaningful results, `beta` "
                "(temperature) parameter must be >> 0.0 (RLlib's check)"
            )

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {"twin_q": self.twin_q}

    def _numpy_module_kwargs(self, inference_only: bool) -> dict[str, Any]:
        """The numpy IQLModule's twin critics, and whether it is the EnvRunners' copy."""
        return {"twin_q": self.twin_q, "inference_only": inference_only}


__all__ = ["CLASSES", "IQLConfig"]
