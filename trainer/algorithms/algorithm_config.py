"""`AlgorithmConfig`: RLlib's config builder, put together from its sections.

Every builder method takes keyword arguments, changes only what it is given, checks each value on
the spot and returns `self`. Checks that involve several settings run in `validate()`, which
`build()` calls. Errors are `ConfigError` (a `ValueError`) naming the setting, the value given and
what is allowed.

Each builder method lives in its section (`trainer.algorithms.config.<section>`) with the table
of its settings and its part of `validate()`; the shared mechanics of checking and storing a
value are `trainer.algorithms.config.base`, and RLlib's other names for settings are sorted at
the edge, in one pass (`trainer.algorithms.config.rllib_names`). An algorithm's config
(`PPOConfig`, `DQNConfig`) subclasses `AlgorithmConfig`: its own settings, changed defaults and
checks are in its own folder.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from trainer.algorithms.config.api_stack import API_STACK_SETTINGS, APIStackSection
from trainer.algorithms.config.base import (
    ALL_OR_NOTHING_METHODS as ALL_OR_NOTHING_METHODS,
)
from trainer.algorithms.config.base import NotProvided as NotProvided
from trainer.algorithms.config.base import algorithm_registry
from trainer.algorithms.config.base import deep_updated as deep_updated
from trainer.algorithms.config.base import is_grid_search as is_grid_search
from trainer.algorithms.config.base import is_search_space as is_search_space
from trainer.algorithms.config.base import is_tune_domain as is_tune_domain
from trainer.algorithms.config.callbacks import CallbacksSection
from trainer.algorithms.config.checkpointing import CHECKPOINTING_SETTINGS, CheckpointingSection
from trainer.algorithms.config.debugging import DEBUGGING_SETTINGS, DebuggingSection
from trainer.algorithms.config.env_runners import ENV_RUNNERS_SETTINGS, EnvRunnersSection
from trainer.algorithms.config.env_runners import (
    WORKER_PROCESS_MIN_BYTES as WORKER_PROCESS_MIN_BYTES,
)
from trainer.algorithms.config.environment import ENVIRONMENT_SETTINGS, EnvironmentSection
from trainer.algorithms.config.evaluation import EVALUATION_SETTINGS, EvaluationSection
from trainer.algorithms.config.experimental import EXPERIMENTAL_SETTINGS, ExperimentalSection
from trainer.algorithms.config.exploration import EXPLORATION_SETTINGS, ExplorationSection
from trainer.algorithms.config.fault_tolerance import (
    FAULT_TOLERANCE_SETTINGS,
    FaultToleranceSection,
)
from trainer.algorithms.config.framework import (
    FRAMEWORK_SETTINGS,
    FrameworkSection,
    launcher_default_framework,
)
from trainer.algorithms.config.learners import LearnersSection
from trainer.algorithms.config.multi_agent import MULTI_AGENT_SETTINGS, MultiAgentSection
from trainer.algorithms.config.offline_data import OFFLINE_DATA_SETTINGS, OfflineDataSection
from trainer.algorithms.config.python_environment import (
    PYTHON_ENVIRONMENT_SETTINGS,
    PythonEnvironmentSection,
)
from trainer.algorithms.config.reporting import REPORTING_SETTINGS, ReportingSection
from trainer.algorithms.config.resources import ResourcesSection
from trainer.algorithms.config.rl_module import RL_MODULE_SETTINGS, RLModuleSection
from trainer.algorithms.config.rllib_names import (
    RAY_RESOURCE_SETTINGS as RAY_RESOURCE_SETTINGS,
)
from trainer.algorithms.config.state import StateSection
from trainer.algorithms.config.training import OPTIMIZER_KEYS as OPTIMIZER_KEYS
from trainer.algorithms.config.training import TRAINING_SETTINGS, TrainingSection
from trainer.algorithms.settings import Setting, declared_settings, document_builders
from trainer.callbacks import RLlibCallback
from trainer.capabilities import MODULE_TO_ENV_CONNECTORS, TORCH_COMPILE
from trainer.compat.old_names import OldConfigNames
from trainer.env.wrappers.atari_wrappers import is_atari as is_atari_env
from trainer.errors import ConfigError as ConfigError
from trainer.errors import UnknownSettingError as UnknownSettingError
from trainer.util.rllib_members import refuse

if TYPE_CHECKING:
    from trainer.core.multi_rl_module import MultiRLModuleSpec
    from trainer.core.rl_module import RLModuleSpec


class BuiltAlgorithm(Protocol):
    """What a config builds (`build()`, of its `algo_class`), as far as the config names it:
    the `Algorithm` and every algorithm's class fit it. The algorithm module imports this one
    (an Algorithm is made from its config), so the class itself is not named here."""

    def __init__(
        self, config: AlgorithmConfig | dict | None = None, env: Any = None, **kwargs: Any
    ) -> None: ...

    @property
    def config(self) -> AlgorithmConfig: ...

    @property
    def iteration(self) -> int: ...

    def train(self) -> dict: ...

    def evaluate(self, parallel_train_future: Any = None) -> dict: ...

    def get_module(self, module_id: str = ...) -> Any: ...

    def save_to_path(self, path: str | os.PathLike | None = None) -> str: ...

    def restore_from_path(self, path: str | os.PathLike) -> None: ...

    def stop(self) -> None: ...

    def __enter__(self) -> BuiltAlgorithm: ...

    def __exit__(self, *exc_info: object) -> None: ...


@refuse(
    "ray.rllib.algorithms.algorithm_config.AlgorithmConfig",
    MODULE_TO_ENV_CONNECTORS,
    "env_runners(module_to_env_connector=...)'s pieces run in each EnvRunner on the modules' "
    "outputs, in front of its own action drawing (RLlib's default pieces in one numpy pass); "
    "the pipeline object a user's env loop needs comes from ModuleToEnvPipeline.from_checkpoint",
    "build_module_to_env_connector",
)
@refuse(
    "ray.rllib.algorithms.algorithm_config.AlgorithmConfig",
    TORCH_COMPILE,
    "the torch modules run eagerly (small MLPs and CNNs, where compiling costs more start-up "
    "than it saves)",
    "get_torch_compile_worker_config",
)
class AlgorithmConfig(
    EnvironmentSection,
    EnvRunnersSection,
    ExplorationSection,
    EvaluationSection,
    TrainingSection,
    LearnersSection,
    RLModuleSection,
    MultiAgentSection,
    CallbacksSection,
    DebuggingSection,
    ReportingSection,
    FaultToleranceSection,
    CheckpointingSection,
    PythonEnvironmentSection,
    FrameworkSection,
    ExperimentalSection,
    APIStackSection,
    ResourcesSection,
    OfflineDataSection,
    StateSection,
    OldConfigNames,
):
    """Settings of an algorithm; subclasses (`PPOConfig`, ...) add their own and change defaults.

    Read settings as attributes (`config.lr`) or like a dict (`config["lr"]`).
    """

    @property
    def is_atari(self) -> bool:
        """Whether the env is an ALE Atari env: `environment(is_atari=...)` where given (it
        changes nothing here), else decided from the env's id as RLlib decides it ("ALE/..."
        or "ale_py:..."; an env given another way is not taken for one)."""
        given = self.__dict__.get("_is_atari")
        if given is not None:
            return bool(given)
        return isinstance(self.env, str) and is_atari_env(self.env)

    @is_atari.setter
    def is_atari(self, value: bool | None) -> None:
        self.__dict__["_is_atari"] = value

    #: name -> Setting(default, check, builder method, doc): the settings table
    #: (`trainer.algorithms.settings`), each section's part in its module. Subclasses declare
    #: theirs in their class body (`setting(...)`), collected into `_ALGO_SETTINGS`.
    _BASE_SETTINGS: dict[str, Setting] = {
        **ENVIRONMENT_SETTINGS,
        **ENV_RUNNERS_SETTINGS,
        **EXPLORATION_SETTINGS,
        **EVALUATION_SETTINGS,
        **TRAINING_SETTINGS,
        **DEBUGGING_SETTINGS,
        **REPORTING_SETTINGS,
        **FAULT_TOLERANCE_SETTINGS,
        **CHECKPOINTING_SETTINGS,
        **PYTHON_ENVIRONMENT_SETTINGS,
        # multi_agent() and rl_module(): the policies (modules), which agent acts with which,
        # which are trained, and per-module setting overrides.
        **MULTI_AGENT_SETTINGS,
        **RL_MODULE_SETTINGS,
        # framework() / api_stack(): numpy or torch, and one API stack (RLlib's new one) run
        # here; RLlib's names are accepted (a warning at build says so for "tf2", ...).
        **FRAMEWORK_SETTINGS,
        **EXPERIMENTAL_SETTINGS,
        **API_STACK_SETTINGS,
        **OFFLINE_DATA_SETTINGS,
    }

    def __init__(self, algo_class: type[BuiltAlgorithm] | None = None):
        object.__setattr__(self, "_frozen", False)
        #: (setting, repr of the value) of each UnusualSettingWarning emitted: once per config
        #: (and its copies), not per call.
        object.__setattr__(self, "_unusual_warned", set())
        #: The Algorithm class `build()` makes (an algorithm's config names its own).
        self.algo_class = algo_class
        for name, setting in self._settings().items():
            setattr(self, name, copy.deepcopy(self._DEFAULT_OVERRIDES.get(name, setting.default)))
        if "framework_str" not in self._DEFAULT_OVERRIDES:  # under the launcher: RLlib's torch
            self.framework_str = launcher_default_framework()
        self.callbacks_class: Any = RLlibCallback
        self.callbacks_on: dict[str, list[Callable]] = {}
        #: True on the config that evaluation EnvRunners see.
        self.in_evaluation = False
        # RLlib's settings without an effect here (`trainer.compat.rllib_settings`): readable as
        # attributes; the ones a script gave are remembered for the warning at build.
        for table in self._rllib_rules().values():
            for name, setting_rule in table.items():
                setattr(self, name, copy.deepcopy(setting_rule.default))
        self._rllib_given = {}
        #: The spec `rl_module(rl_module_spec=...)` gave (RLlib's attribute; `rl_module_spec`
        #: is the default spec updated with it).
        self._rl_module_spec: RLModuleSpec | MultiRLModuleSpec | None = None
        #: The model_config keys an `rl_module(rl_module_spec=...)` gave (merged over the rest).
        self._spec_model: dict[str, Any] = {}
        #: `get_config_for_module`'s configs of the modules with overrides, by id (RLlib's name).
        self._per_module_overrides: dict[str, AlgorithmConfig] = {}
        #: Names of the settings a builder call (or from_dict) set, whatever the value: a
        #: default the user chose explicitly can mean more than the same default left alone
        #: (`is_given`).
        self._given = set()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The settings its body declares (`lambda_: float = setting(...)`) join its table, after
        # its parent's; training() takes them (and lists them in its signature).
        declared = declared_settings(cls)
        if declared:
            cls._ALGO_SETTINGS = {**cls._ALGO_SETTINGS, **declared}
        cls._give_training_its_settings(bool(declared))
        document_builders(cls)  # each builder's docstring lists this class's settings

    def validate(self) -> None:
        """Checks the settings together, section by section; raises ConfigError on the first
        problem. An algorithm's config adds its own checks after these."""
        name = type(self).__name__
        self._validate_values(name)
        self._validate_environment(name)
        self._validate_framework(name)
        self._validate_rl_module(name)
        self._validate_env_runners(name)
        self._validate_training(name)
        self._validate_evaluation(name)
        self._validate_exploration(name)
        self._validate_callbacks(name)
        self._validate_multi_agent(name)
        self._validate_offline_data(name)

    def build(self, env: Any = None) -> BuiltAlgorithm:
        """Validates the config and builds its Algorithm (EnvRunner processes included)."""
        return self.build_algo(env)

    def build_algo(
        self, env: Any = None, logger_creator: Any = None, use_copy: bool = True
    ) -> BuiltAlgorithm:
        """Validates the config and builds its Algorithm (EnvRunner processes included).
        `logger_creator` is Tune's (stored, without effect here); the Algorithm always works
        on a frozen copy of this config, whatever `use_copy` says."""
        if env is not None:
            self.environment(env)
        if logger_creator is not None:
            self.debugging(logger_creator=logger_creator)
        if self.algo_class is None:
            names = algorithm_registry().ALGORITHM_NAMES
            raise ConfigError(
                f"{type(self).__name__} has no algorithm class to build; use an "
                f"algorithm's config ({', '.join(f'{name}Config' for name in names)})"
            )
        return self.algo_class(config=self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.env!r}, num_env_runners={self.num_env_runners})"


document_builders(AlgorithmConfig)
