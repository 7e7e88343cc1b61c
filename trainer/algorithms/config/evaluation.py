"""The `evaluation()` section: when evaluation rounds run, how long, on which runners and with
which settings (`evaluation_config`, applied by `get_evaluation_config_object`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from trainer.algorithms.config.base import ConfigBase, NotProvided, deep_updated
from trainer.algorithms.settings import Setting, UsualRange, settings_of
from trainer.errors import ConfigError
from trainer.util.checks import (
    auto_or_int_at_least,
    callable_taking,
    int_at_least,
    is_bool,
    is_dict,
    one_of,
    optional,
    seconds_above,
)

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The settings of `evaluation()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
EVALUATION_SETTINGS: dict[str, Setting] = settings_of(
    "evaluation",
    {
        "evaluation_interval": (
            None,
            optional(int_at_least(0)),
            "evaluate every this many train() calls (None: only when evaluate() is called)",
            UsualRange(
                lambda value: value is None or value >= 1,
                "1 or more, or None",
                "0 never evaluates in train(), as None does: write None if that is meant",
            ),
        ),
        "evaluation_duration": (
            10,
            auto_or_int_at_least(1),
            'episodes or timesteps per round; "auto": as long as the parallel training step runs',
        ),
        "evaluation_duration_unit": (
            "episodes",
            one_of("episodes", "timesteps"),
            "what evaluation_duration counts",
        ),
        "evaluation_num_env_runners": (
            0,
            int_at_least(0),
            "evaluation EnvRunner processes of their own (0: one in the main process)",
        ),
        "evaluation_parallel_to_training": (
            False,
            is_bool,
            "evaluate while the training step runs (with the weights from before it)",
        ),
        "evaluation_config": (
            None,
            optional(is_dict),
            "settings overridden for the evaluation runners (a dict or "
            "AlgorithmConfig.overrides(...))",
        ),
        "custom_evaluation_function": (
            None,
            callable_taking(2, "(algorithm, eval_env_runner_group)", none=True),
            "(algorithm, eval_env_runner_group) -> metrics, instead of sampling the duration",
        ),
        "evaluation_force_reset_envs_before_iteration": (
            True,
            is_bool,
            "a round in timesteps starts with fresh episodes",
        ),
        "evaluation_sample_timeout_s": (
            120.0,
            seconds_above(0),
            "an evaluation runner that does not answer within this is killed",
        ),
        "evaluation_auto_duration_min_env_steps_per_sample": (
            100,
            int_at_least(1),
            '"auto" rounds in timesteps: env steps per request (at least one per sub-env)',
        ),
        "evaluation_auto_duration_max_env_steps_per_sample": (
            2000,
            int_at_least(1),
            '"auto" rounds in timesteps: the largest request',
        ),
        "offline_evaluation_interval": (
            None,
            optional(int_at_least(1)),
            "offline algorithms: the loss on recorded data every this many train() calls "
            "(None: never)",
        ),
        "offline_evaluation_type": (
            "eval_loss",
            one_of("eval_loss"),
            'what offline evaluation computes: "eval_loss", the training loss without a step '
            '(RLlib\'s importance-sampling "is" and "pdis" are not implemented here)',
        ),
        "num_offline_eval_runners": (
            0,
            int_at_least(0),
            "shards of each offline evaluation (each its offline_eval_batch_size_per_runner "
            "rows; 0: one)",
        ),
        "offline_eval_batch_size_per_runner": (
            256,
            int_at_least(1),
            "recorded rows per offline evaluation batch",
        ),
        "dataset_num_iters_per_offline_eval_runner": (
            1,
            int_at_least(1),
            "batches each shard evaluates per offline evaluation",
        ),
    },
)


class EvaluationSection(ConfigBase):
    """Evaluation rounds (`evaluation()`)."""

    if TYPE_CHECKING:  # what this section reads of the others

        def copy(self, *args: Any, **kwargs: Any) -> Self: ...

        def update_from_dict(self, *args: Any, **kwargs: Any) -> Self: ...

        def freeze(self) -> Self: ...

    evaluation_interval: int | None
    evaluation_duration: int | Literal["auto"]
    evaluation_duration_unit: str
    evaluation_num_env_runners: int
    evaluation_parallel_to_training: bool
    evaluation_config: dict[str, Any] | None
    custom_evaluation_function: Callable[..., Any] | None
    evaluation_force_reset_envs_before_iteration: bool
    evaluation_sample_timeout_s: float
    evaluation_auto_duration_min_env_steps_per_sample: int
    evaluation_auto_duration_max_env_steps_per_sample: int
    offline_evaluation_interval: int | None
    offline_evaluation_type: str
    num_offline_eval_runners: int
    offline_eval_batch_size_per_runner: int
    dataset_num_iters_per_offline_eval_runner: int

    def evaluation(
        self,
        *,
        evaluation_interval: int | None = NotProvided,
        evaluation_duration: int | str = NotProvided,
        evaluation_duration_unit: str = NotProvided,
        evaluation_num_env_runners: int = NotProvided,
        evaluation_parallel_to_training: bool = NotProvided,
        evaluation_config: dict | None = NotProvided,
        custom_evaluation_function: Callable | None = NotProvided,
        evaluation_force_reset_envs_before_iteration: bool = NotProvided,
        evaluation_sample_timeout_s: float = NotProvided,
        evaluation_auto_duration_min_env_steps_per_sample: int = NotProvided,
        evaluation_auto_duration_max_env_steps_per_sample: int = NotProvided,
        offline_evaluation_interval: int | None = NotProvided,
        offline_evaluation_type: str = NotProvided,
        num_offline_eval_runners: int = NotProvided,
        offline_eval_batch_size_per_runner: int = NotProvided,
        dataset_num_iters_per_offline_eval_runner: int = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Evaluation rounds: when, how long, on which runners, with which settings.
        `evaluation_num_workers` and `custom_eval_function` are RLlib's older names."""
        values = {
            "evaluation_interval": evaluation_interval,
            "evaluation_duration": evaluation_duration,
            "evaluation_duration_unit": evaluation_duration_unit,
            "evaluation_num_env_runners": evaluation_num_env_runners,
            "evaluation_parallel_to_training": evaluation_parallel_to_training,
            "evaluation_config": evaluation_config,
            "custom_evaluation_function": custom_evaluation_function,
            "evaluation_force_reset_envs_before_iteration": evaluation_force_reset_envs_before_iteration,
            "evaluation_sample_timeout_s": evaluation_sample_timeout_s,
            "evaluation_auto_duration_min_env_steps_per_sample": evaluation_auto_duration_min_env_steps_per_sample,
            "evaluation_auto_duration_max_env_steps_per_sample": evaluation_auto_duration_max_env_steps_per_sample,
            "offline_evaluation_interval": offline_evaluation_interval,
            "offline_evaluation_type": offline_evaluation_type,
            "num_offline_eval_runners": num_offline_eval_runners,
            "offline_eval_batch_size_per_runner": offline_eval_batch_size_per_runner,
            "dataset_num_iters_per_offline_eval_runner": dataset_num_iters_per_offline_eval_runner,
        }
        self._reject_unknown("evaluation", unknown, values, values)
        if isinstance(evaluation_config, dict):
            self._check_evaluation_config("evaluation", evaluation_config)
            # As RLlib: the overrides update (not replace) those given before; None clears.
            values["evaluation_config"] = deep_updated(
                self.evaluation_config or {}, evaluation_config
            )
        return self._set("evaluation", values)

    def _check_evaluation_config(self, method: str, overrides: dict) -> None:
        """Every key of `evaluation_config` must be a setting, with a valid value."""
        settings = self._settings()
        # RLlib's settings of any builder method (resources and the like) are taken as
        # `update_from_dict` takes them when the overrides are applied.
        rllib_names = self._rllib_method_of()
        unknown = {k: v for k, v in overrides.items() if k not in settings and k not in rllib_names}
        self._reject_unknown(f"{method}(evaluation_config=...)", unknown, settings)
        for name, value in overrides.items():
            if name not in settings:
                continue
            problem = settings[name].check(value)
            if problem is not None:
                raise ConfigError(
                    f"{type(self).__name__}.{method}(evaluation_config={{{name!r}: {value!r}}}): "
                    f"{name} must be {problem}"
                )

    def get_evaluation_config_object(self) -> Self:
        """The config the evaluation EnvRunners see: this one with `evaluation_config` applied
        (an `env_config` there updates the training one), `in_evaluation=True`, and
        `num_env_runners` / `sample_timeout_s` from the evaluation settings."""
        eval_config = self.copy()
        overrides = dict(self.evaluation_config or {})
        eval_config.update_from_dict(overrides)
        eval_config.in_evaluation = True
        eval_config.num_env_runners = self.evaluation_num_env_runners
        eval_config.sample_timeout_s = self.evaluation_sample_timeout_s
        eval_config.evaluation_interval = None
        return eval_config.freeze()

    def _validate_evaluation(self, name: str) -> None:
        """The evaluation overrides, and the settings that only work together."""
        if self.evaluation_config:
            self._check_evaluation_config("validate", self.evaluation_config)
        if self.evaluation_duration == "auto" and not self.evaluation_parallel_to_training:
            raise ConfigError(
                f'{name}: evaluation_duration="auto" needs evaluation_parallel_to_training=True '
                "(it means: evaluate for as long as the parallel training step runs)"
            )
        if self.evaluation_parallel_to_training and self.evaluation_num_env_runners == 0:
            raise ConfigError(
                f"{name}: evaluation_parallel_to_training=True needs evaluation_num_env_runners "
                ">= 1 (evaluation runs on its own EnvRunner processes while training runs)"
            )
        if (
            self.evaluation_auto_duration_min_env_steps_per_sample
            > self.evaluation_auto_duration_max_env_steps_per_sample
        ):
            raise ConfigError(
                f"{name}: evaluation_auto_duration_min_env_steps_per_sample="
                f"{self.evaluation_auto_duration_min_env_steps_per_sample} must be <= "
                "evaluation_auto_duration_max_env_steps_per_sample="
                f"{self.evaluation_auto_duration_max_env_steps_per_sample}"
            )
