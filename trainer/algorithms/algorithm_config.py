"""`AlgorithmConfig`: RLlib's config builder.

Every builder method takes keyword arguments, changes only what it is given, checks each value on
the spot and returns `self`. Checks that involve several settings run in `validate()`, which
`build()` calls. Errors are `ConfigError` (a `ValueError`) naming the setting, the value given and
what is allowed.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import os
import sys
import warnings
from collections.abc import Callable, Collection, ItemsView, Iterable, KeysView, ValuesView
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

import gymnasium as gym
import numpy as np

from trainer.algorithms.multi_agent_setup import (
    DEFAULT_POLICY_MAPPING,
    MultiAgentSetup,
    as_policy_specs,
    check_multi_rl_module_spec,
    check_overrides_per_module,
    check_policies,
    check_policies_to_train,
    check_policy_mapping_fn,
)
from trainer.algorithms.settings import (
    BUILDER_METHODS,
    Setting,
    UnusualSettingWarning,
    UsualRange,
    document_builders,
    in_range,
    settings_of,
    unusual_value_message,
)
from trainer.callbacks import ENV_RUNNER_EVENTS, EVENTS, RLlibCallback
from trainer.callbacks.chain import callable_name
from trainer.callbacks.signatures import check_callback_class, check_event_callable
from trainer.capabilities import MULTI_AGENT, RECURRENT_MULTI_AGENT, TORCH
from trainer.compat.old_api import OLD_CONFIG_KEYS, translate_config_dict
from trainer.compat.old_names import OldConfigNames
from trainer.compat.rllib_settings import (
    DEFAULT_POLICY_ID,
    IgnoredSettingWarning,
    Unsupported,
    methods_of,
    rule,
    rules_of,
    warn_ignored,
)
from trainer.core.catalog import check_catalog_class
from trainer.core.exploration import check_exploration_config
from trainer.core.models import (
    MODEL_DEFAULTS,
    check_model_config,
    refuse_torch_only_keys,
    torch_only_request,
)
from trainer.core.policy_spec import PolicySpec
from trainer.env.envs import (
    check_env_spec,
    multi_agent_env_needs_policies,
    register_env_if_missing,
    registered_env_creator,
)
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.vectorize import check_vectorize_mode as _vectorize_mode_problem
from trainer.env.vectorize import vectorize_mode as normalized_vectorize_mode
from trainer.errors import ConfigError as ConfigError
from trainer.errors import UnknownSettingError as UnknownSettingError
from trainer.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP, check_stats_cls_lookup
from trainer.util.checks import (
    INT_MAX,
    auto_or_int_at_least,
    callable_taking,
    finite_number,
    int_at_least,
    is_bool,
    is_dict,
    is_number,
    number_above,
    number_at_least,
    number_at_least_or_inf,
    number_in,
    one_of,
    optional,
    seconds_above,
    seconds_at_least,
    signature_refusing,
)
from trainer.util.deprecation import warn_once
from trainer.util.pickling import travel_dumps

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm
    from trainer.core.multi_rl_module import MultiRLModuleSpec
    from trainer.core.rl_module import RLModuleSpec
    from trainer.env.env_runner import EnvRunner

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The key under which a pickled config carries its `register_env` creator (`__getstate__`).
_REGISTERED_ENV_CREATOR = "_registered_env_creator"


class _NotProvided:
    def __repr__(self) -> str:
        return "NotProvided"


#: Default of every builder argument: "leave this setting as it is".
NotProvided: Any = _NotProvided()


def is_grid_search(value: Any) -> bool:
    """Whether `value` is Tune's `grid_search([...])` marker, `{"grid_search": [...]}`."""
    return isinstance(value, dict) and set(value) == {"grid_search"}


def is_tune_domain(value: Any) -> bool:
    """Whether `value` is a Ray Tune search space (`tune.uniform(...)`, `tune.choice(...)`,
    `tune.sample_from(...)`): Tune draws each trial's value. Told by its class's module, so
    that Ray is not imported here."""
    return type(value).__module__ == "ray.tune.search.sample"


def is_search_space(value: Any) -> bool:
    """Whether `value` is one of Tune's search spaces: a grid or a Tune domain."""
    return is_grid_search(value) or is_tune_domain(value)


def _stacklevel_outside_trainer() -> int:
    """The `stacklevel` that makes a warning emitted by this function's caller point at the
    user's line (the first frame outside this package): a builder call goes through the
    builder, `_set` and `__setattr__`, a subclass's builder through its parent's too."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("trainer."):
        frame = frame.f_back
        level += 1
    return level


def _search_options(value: Any) -> list[Any]:
    """The values of a setting to check when it is set: a grid's, a `tune.choice`'s
    categories, none of another Tune domain (its trials' values are checked at build)."""
    if is_grid_search(value):
        return list(value["grid_search"])
    if is_tune_domain(value):
        return list(getattr(value, "categories", None) or [])
    return [value]


class _Flag:
    """A truth value that reads the same as an attribute or called: RLlib has had
    `config.is_multi_agent` both as a method and as a property."""

    def __init__(self, value: bool):
        self._value = bool(value)

    def __bool__(self) -> bool:
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        return bool(other) == self._value if isinstance(other, (bool, _Flag)) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


def _mergeable(value: Any) -> TypeGuard[dict]:
    """Whether `value` is a plain dict to merge into (not a Tune search space)."""
    return isinstance(value, dict) and not is_search_space(value)


def deep_updated(original: dict, updates: dict) -> dict:
    """`original` updated by `updates` as RLlib's `deep_update(original, updates, True)`:
    a dict value updates the dict it meets, any other value (a Tune search space too)
    replaces; `original` is not changed (the nested dicts it shares with the result are copies
    where they change)."""
    merged = dict(original)
    for key, value in updates.items():
        current = merged.get(key)
        if _mergeable(value) and _mergeable(current):
            merged[key] = deep_updated(current, value)
        else:
            merged[key] = value
    return merged


def _check_exploration_config(v: Any) -> str | None:
    if isinstance(v, dict) and "type" not in v:
        return None  # updates the algorithm's default; checked merged in exploration()
    try:
        check_exploration_config(v, setting="exploration_config")
    except ValueError as error:
        return f"a valid exploration config ({error})"
    return None


def _check_backend(v: Any) -> str | None:
    if v == "processes":
        return None
    if v == "ray":
        from trainer.runners.ray_runner import (
            RAY_INSTALL_HINT,
            RAY_STAND_IN_HINT,
            ray_installed,
            ray_is_stand_in,
        )

        if ray_is_stand_in():
            return f'"processes", or "ray" with the installed Ray: {RAY_STAND_IN_HINT}'
        return (
            None
            if ray_installed()
            else f'"processes", or "ray" once Ray is installed: {RAY_INSTALL_HINT}'
        )
    return '"processes" or "ray"'


def _check_lr(v: Any) -> str | None:
    from trainer.core.schedules import Schedule

    if isinstance(v, (list, tuple)):
        try:
            Schedule(v, setting="lr", low=0.0)
        except ValueError as error:
            return f"a number >= 0 or a schedule [[timestep, lr], ...] ({error})"
        return None
    return (
        None
        if number_at_least(0)(v) is None
        else "a number >= 0 or a schedule [[timestep, lr], ...]"
    )


def _check_seed(v: Any) -> str | None:
    # RLlib takes any int; numpy's generators, which every seed here feeds, take no negative,
    # and torch's (torch.manual_seed) none of 64 bits or more.
    return (
        None
        if int_at_least(0)(v) is None
        else "an int >= 0 and <= 2**63 - 1 (numpy's random generators take no negative seed, "
        "torch's none of 64 bits)"
    )


def is_str(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


def _check_log_level(v: Any) -> str | None:
    levels = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")
    return None if isinstance(v, str) and v.upper() in levels else f"one of {list(levels)}"


def _is_space_or_none(v: Any) -> str | None:

    return None if v is None or isinstance(v, gym.Space) else "None or a gymnasium.spaces.Space"


def _is_torch_module_class(module_class: Any) -> bool:
    """Whether `module_class` is a `TorchRLModule` subclass (checked without importing torch:
    a class that subclasses it was made with torch imported)."""
    if not isinstance(module_class, type) or "trainer.torch_rl.rl_module" not in sys.modules:
        return False
    from trainer.torch_rl.rl_module import TorchRLModule

    return issubclass(module_class, TorchRLModule)


def _spec_names_torch_module(spec: Any) -> bool:
    """Whether `spec` (an RLModuleSpec or a MultiRLModuleSpec, or None) names a
    `TorchRLModule` subclass (a MultiRLModuleSpec: in any of its module specs)."""
    specs = getattr(spec, "rl_module_specs", None)
    if isinstance(specs, dict):
        return any(_is_torch_module_class(sub.module_class) for sub in specs.values())
    if specs is not None:  # one RLModuleSpec for every module
        return _is_torch_module_class(specs.module_class)
    return _is_torch_module_class(getattr(spec, "module_class", None))


def _is_torch_learner_class(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, type) and "trainer.torch_rl.learner" in sys.modules:
        from trainer.torch_rl.learner import TorchLearner

        if issubclass(v, TorchLearner):
            return None
    return (
        "None or a subclass of a torch learner (trainer.torch_rl.learner.TorchLearner, "
        "e.g. RLlib's PPOTorchLearner or DQNTorchLearner); the numpy "
        "learners take no subclass"
    )


def _check_lr_scheduler_classes(v: Any) -> str | None:
    """None, or callables (optimizer) -> torch lr scheduler: a list, or a dict of lists by
    module id (RLlib's `_torch_lr_scheduler_classes`)."""
    allowed = (
        "None, a list of torch lr scheduler classes (or functools.partial of them: "
        "called with the optimizer), or a dict {module_id: such a list}"
    )
    if v is None:
        return None
    lists = list(v.values()) if isinstance(v, dict) else [v]
    if isinstance(v, dict) and not all(isinstance(key, str) for key in v):
        return allowed
    for entry in lists:
        if not isinstance(entry, (list, tuple)) or not all(callable(f) for f in entry):
            return allowed
    return None


def _is_env_runner_class(v: Any) -> str | None:
    from trainer.runners.env_runner import EnvRunner

    if v is None or (isinstance(v, type) and issubclass(v, EnvRunner)):
        return None
    return "None or a subclass of trainer.EnvRunner"


def _is_connector_factory(v: Any) -> str | None:
    allowed = "None or a callable (env) or (env, spaces, device) -> connector piece or pieces"
    if v is None:
        return None
    if not callable(v):
        return allowed
    # `call_factory` passes (env, spaces, device) when it takes three, else (env).
    refused = signature_refusing(v, 1) and signature_refusing(v, 3)
    return None if refused is None else f"{allowed}; this one's signature is {refused}"


#: RLlib's per-EnvRunner resource settings: the Ray backend's actor options (without effect,
#: and warned about, with worker processes).
RAY_RESOURCE_SETTINGS = (
    "num_cpus_per_env_runner",
    "num_gpus_per_env_runner",
    "custom_resources_per_env_runner",
)


#: `training(optimizer={...})` keys: Adam's settings, in RLlib's and torch's spellings.
OPTIMIZER_KEYS = ("type", "eps", "adam_epsilon", "epsilon", "betas", "beta1", "beta2")


def _check_optimizer(v: Any) -> str | None:
    allowed = f"a dict with keys from {list(OPTIMIZER_KEYS)} (the learner's optimizer is Adam)"
    if not isinstance(v, dict):
        return allowed
    for key, value in v.items():
        if key not in OPTIMIZER_KEYS:
            return f"{allowed}; got {key!r} (set the learning rate with training(lr=...))"
        if key == "type" and str(value).lower() != "adam":
            return f"{allowed}; got type={value!r}"
        if key == "betas" and not (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(number_in(0.0, 1.0)(b) is None for b in value)
        ):
            return f"{allowed}; betas must be two numbers in [0, 1]"
        if key in ("beta1", "beta2") and number_in(0.0, 1.0)(value) is not None:
            return f"{allowed}; {key} must be a number in [0, 1]"
        if key in ("eps", "adam_epsilon", "epsilon") and number_above(0)(value) is not None:
            return f"{allowed}; {key} must be a number > 0"
    return None


def _is_str_dict(v: Any) -> str | None:
    allowed = "a dict of environment variable names to values"
    if not isinstance(v, dict):
        return allowed
    for name, value in v.items():
        # What os.environ takes: the value is set as str(value), as RLlib sets it.
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            return f"{allowed}; {name!r} is no variable name (a non-empty str without '=')"
        if "\0" in str(value):
            return f"{allowed}; the value of {name!r} holds a NUL character"
    return None


def _check_stats_cls_lookup(v: Any) -> str | None:
    if v is None:  # the loggers' default lookup
        return None
    try:
        check_stats_cls_lookup(v, "custom_stats_cls_lookup")
    except ValueError as error:
        return f"a dict of reduce kind -> StatsBase subclass ({error})"
    return None


def _is_result_key(v: Any) -> str | None:
    if isinstance(v, str) and v and all(v.split("/")):
        return None
    return 'a result key, nested with "/" (for example "env_runners/episode_return_mean")'


#: Less than the memory of its own an EnvRunner worker process takes (Python with numpy and
#: gymnasium imported, before any env): `validate()` refuses counts no machine holds.
WORKER_PROCESS_MIN_BYTES = 10 * 2**20


#: The calls that change a config: a refused one (any exception) leaves it as it was.
ALL_OR_NOTHING_METHODS = (
    *BUILDER_METHODS,
    "learners",
    "resources",
    "offline_data",
    "callbacks",
    "update_from_dict",
)


def _all_or_nothing(method: Callable) -> Callable:
    """`method`, restoring the config's attributes when it raises: a builder call checks and
    sets its values one by one, so without this a refused call could leave the values before
    the refused one set."""
    if getattr(method, "__all_or_nothing__", False):
        return method

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        # One level of copies: builder calls replace values or add to the top-level dicts and
        # sets (`_given`, `_rllib_given`); they do not change nested values in place.
        saved = {
            name: value.copy() if type(value) in (dict, list, set) else value
            for name, value in self.__dict__.items()
        }
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    call.__all_or_nothing__ = True  # type: ignore[attr-defined]
    return call


def _make_all_or_nothing(cls: type) -> None:
    """Wraps the methods of `ALL_OR_NOTHING_METHODS` that `cls` defines itself."""
    for name in ALL_OR_NOTHING_METHODS:
        own = cls.__dict__.get(name)
        if own is not None and callable(own):
            setattr(cls, name, _all_or_nothing(own))


def _kind_problem(value: Any, default: Any) -> str | None:
    """What an RLlib setting without an effect here takes, by its RLlib default's kind (None
    when `value` is of that kind): such settings are stored and warned about, never used, so
    this is their only check; a value of another kind is a mistake whatever the setting."""
    if default is None:
        return None  # RLlib's None defaults stand for classes, callables, paths, ...
    if isinstance(default, bool):
        return is_bool(value)
    if isinstance(default, (int, float)):
        # An int or a float either way: RLlib takes fractional CPUs and GPUs, and "auto"
        # for its CPU counts.
        if value == "auto" and isinstance(value, str):
            return None
        if default >= 0:
            fine = is_number(value) and 0 <= value <= INT_MAX
            return None if fine else "a number >= 0 and <= 2**63 - 1"
        return None if is_number(value) and abs(value) <= INT_MAX else "a finite number"
    if default == "auto":  # RLlib's CPU counts
        if value == "auto" or (is_number(value) and 0 <= value <= INT_MAX):
            return None
        return '"auto" or a number >= 0'
    if isinstance(default, str):
        return None if isinstance(value, str) else "a string"
    if isinstance(default, dict):
        return None if value is None or isinstance(value, dict) else "a dict or None"
    if isinstance(default, (list, tuple)):
        return None if value is None or isinstance(value, (list, tuple)) else "a list or None"
    return None


class AlgorithmConfig(OldConfigNames):
    """Settings of an algorithm; subclasses (`PPOConfig`, ...) add their own and change defaults.

    Read settings as attributes (`config.lr`) or like a dict (`config["lr"]`).
    """

    #: name -> Setting(default, check, builder method, doc): the settings table
    #: (`trainer.algorithms.settings`). Subclasses add theirs in `_ALGO_SETTINGS`.
    _BASE_SETTINGS: dict[str, Setting] = {
        **settings_of(
            "environment",
            {
                "env": (
                    None,
                    lambda v: None,
                    "a gymnasium id, a register_env name, a gymnasium.Env subclass (built as "
                    "cls(env_config)) or a callable (env_config) -> env",
                ),
                "env_config": (
                    {},
                    is_dict,
                    "passed to the env's creator as an EnvContext (the "
                    "dict, plus worker_index, vector_index, ...)",
                ),
                "env_task_fn": (
                    None,
                    callable_taking(3, "(train_results, env, env_context)", none=True),
                    "curriculum: (train_results, env, env_context) -> the next task, set "
                    "on every training sub-env after each train()",
                ),
                "normalize_actions": (
                    True,
                    is_bool,
                    "the policy acts in [-1, 1], scaled to a Box action space's bounds",
                ),
                "clip_actions": (
                    False,
                    is_bool,
                    "actions are clipped to a Box action space's bounds",
                ),
                "observation_space": (
                    None,
                    _is_space_or_none,
                    "the observation space the networks are built for, instead of the env's",
                ),
                "action_space": (
                    None,
                    _is_space_or_none,
                    "the action space the networks are built for, instead of the env's",
                ),
            },
        ),
        **settings_of(
            "env_runners",
            {
                "num_env_runners": (
                    0,
                    int_at_least(0),
                    "EnvRunner worker processes (0: sample in the main process)",
                ),
                "num_envs_per_env_runner": (
                    1,
                    int_at_least(1),
                    "sub-envs in each EnvRunner's vector env",
                ),
                "gym_env_vectorize_mode": (
                    "sync",
                    _vectorize_mode_problem,
                    '"sync": sub-envs step in the EnvRunner; "async": each in a child process; '
                    '"vector_entry_point": one numpy-vectorized env (trainer.env.vectorize)',
                ),
                "rollout_fragment_length": (
                    200,
                    auto_or_int_at_least(1),
                    'env steps per sub-env per sample() call; "auto" '
                    "splits train_batch_size evenly",
                ),
                "batch_mode": (
                    "truncate_episodes",
                    one_of("truncate_episodes", "complete_episodes"),
                    '"truncate_episodes": episodes may be cut between sample() '
                    'calls; "complete_episodes": each call returns whole episodes',
                ),
                "sample_timeout_s": (
                    60.0,
                    seconds_above(0),
                    "a runner that does not answer a sample() within this is "
                    "killed (a timeout failure)",
                ),
                "explore": (
                    True,
                    is_bool,
                    "EnvRunners explore (True) or act greedily (False); "
                    "compute_single_action(explore=) overrides it per call",
                ),
                "env_runner_cls": (
                    None,
                    _is_env_runner_class,
                    "an EnvRunner subclass to run instead, in every worker and as the local runner",
                ),
                "create_env_on_local_worker": (
                    False,
                    is_bool,
                    "with num_env_runners > 0, the local runner (algo.env_runner) gets envs too",
                ),
                "validate_env_runners_after_construction": (
                    True,
                    is_bool,
                    "build() fails when an EnvRunner does not start (False: "
                    "fault_tolerance() handles it)",
                ),
                "env_to_module_connector": (
                    None,
                    _is_connector_factory,
                    "(env) -> an env-to-module connector piece, a list of "
                    "pieces or a pipeline, called in every EnvRunner",
                ),
                "observation_filter": (
                    "NoFilter",
                    one_of("NoFilter", "MeanStdFilter"),
                    '"MeanStdFilter": RLlib\'s older spelling of a MeanStdFilter connector piece',
                ),
                "backend": (
                    "processes",
                    _check_backend,
                    '"processes": EnvRunners are worker processes of this machine; '
                    '"ray": Ray actors on the cluster (not an RLlib setting)',
                ),
                "ray_address": (
                    None,
                    optional(is_str),
                    'with backend="ray": the cluster to join when ray.init() was not '
                    "called (else RAY_ADDRESS, else a local Ray instance)",
                ),
            },
        ),
        **settings_of(
            "exploration",
            {
                # {} means the algorithm's default (see `get_exploration_config`)
                "exploration_config": (
                    {},
                    _check_exploration_config,
                    '{"type": ..., **args}: a type of '
                    "trainer.core.exploration or an Exploration subclass; "
                    'without "type", updates the algorithm\'s default',
                ),
            },
        ),
        **settings_of(
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
                    'episodes or timesteps per round; "auto": as long as the '
                    "parallel training step runs",
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
                    "(algorithm, eval_env_runner_group) -> metrics, "
                    "instead of sampling the duration",
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
            },
        ),
        **settings_of(
            "training",
            {
                # RLlib checks no range for gamma; NaN and inf cannot train.
                "gamma": (
                    0.99,
                    finite_number,
                    "discount factor",
                    UsualRange(
                        in_range(0, 1),
                        "between 0 and 1",
                        "a discount above 1 weighs later rewards more than earlier ones, so "
                        "returns grow with the episode's length; below 0 it flips the sign of "
                        "every other step's reward",
                    ),
                ),
                # 0 trains nothing (a non-learning baseline: Adam's steps are 0); a negative rate
                # would climb the loss, and checkpoints hold only non-negative rates.
                "lr": (
                    0.001,
                    _check_lr,
                    "Adam's learning rate (0: the weights stay), or RLlib's "
                    "schedule [[timestep, lr], ...], linear in env steps "
                    "sampled",
                ),
                "train_batch_size": (
                    32,
                    int_at_least(1),
                    "env steps per training step (train_batch_size_per_learner "
                    "is the same setting: there is one learner)",
                ),
                "num_epochs": (1, int_at_least(1), "passes over each train batch"),
                "minibatch_size": (
                    None,
                    optional(int_at_least(1)),
                    "rows per gradient step (None: the whole batch)",
                ),
                "shuffle_batch_per_epoch": (False, is_bool, "shuffle the batch before each epoch"),
                "grad_clip": (
                    None,
                    optional(number_at_least_or_inf(0)),
                    "clip gradients at this (None: no clipping)",
                    UsualRange(
                        lambda value: value is None or value > 0,
                        "above 0, or None",
                        "0 scales every gradient to 0: the weights never change",
                    ),
                ),
                "grad_clip_by": (
                    "global_norm",
                    one_of("value", "norm", "global_norm"),
                    '"value": each element, "norm": each parameter tensor\'s L2 '
                    'norm, "global_norm": all of them together',
                ),
                "learner_class": (
                    None,
                    _is_torch_learner_class,
                    "a subclass of the algorithm's torch learner (PPOTorchLearner) to train "
                    "with, e.g. overriding compute_loss_for_module; it makes the run torch's",
                ),
                "learner_config_dict": (
                    {},
                    is_dict,
                    "your own settings for a custom learner (learner_class), read in it as "
                    "self.config.learner_config_dict[...]",
                ),
                "optimizer": (
                    {},
                    _check_optimizer,
                    "Adam's eps (or adam_epsilon) and betas (or beta1, beta2)",
                ),
                "model": (
                    dict(MODEL_DEFAULTS),
                    is_dict,
                    "the networks (RLlib's older place of rl_module(model_config=...))",
                ),
            },
        ),
        **settings_of(
            "debugging",
            {
                "seed": (
                    None,
                    optional(_check_seed),
                    "repeatable runs: env seeds, action sampling and network init derive from "
                    "it and each runner's index",
                ),
                "log_level": (
                    "WARN",
                    _check_log_level,
                    "level of the trainer's log records, in every process",
                ),
                "check_nan": (
                    True,
                    is_bool,
                    "EnvRunners refuse NaN or infinite observations and rewards, naming "
                    "runner, sub-env, step and field (not an RLlib setting)",
                ),
                "_evaluation_parallel_to_training_wo_thread": (
                    False,
                    is_bool,
                    "a parallel evaluation round without a thread: its requests "
                    "go out before the training step, its replies are read after",
                ),
            },
        ),
        **settings_of(
            "reporting",
            {
                "metrics_num_episodes_for_smoothing": (
                    100,
                    int_at_least(1),
                    "episodes the episode metrics average over",
                ),
                "min_time_s_per_iteration": (
                    None,
                    optional(seconds_at_least(0)),
                    "train() repeats its training step until this many seconds passed",
                ),
                "min_sample_timesteps_per_iteration": (
                    0,
                    int_at_least(0),
                    "... and this many env steps were sampled",
                ),
                "min_train_timesteps_per_iteration": (
                    0,
                    int_at_least(0),
                    "... and this many env steps were trained on",
                ),
                # RLlib's attribute name; its builder keyword is custom_stats_cls_lookup.
                "stats_cls_lookup": (
                    DEFAULT_STATS_CLS_LOOKUP,
                    _check_stats_cls_lookup,
                    "the MetricsLogger's stats class of each reduce= kind "
                    "(reporting(custom_stats_cls_lookup=...)); every logger of "
                    "the Algorithm and its EnvRunners uses it",
                ),
            },
        ),
        **settings_of(
            "fault_tolerance",
            {
                "restart_failed_env_runners": (
                    True,
                    is_bool,
                    "a failed EnvRunner is replaced by a new process "
                    "with its index, the current weights and state",
                ),
                "ignore_env_runner_failures": (
                    False,
                    is_bool,
                    "a runner that is not restarted is left out and "
                    "training goes on (False: train() raises)",
                ),
                "max_num_env_runner_restarts": (1000, int_at_least(0), "restarts per runner"),
                "max_consecutive_failed_iterations": (
                    3,
                    optional(int_at_least(1)),
                    "train() raises the runners' failure after this many iterations in a row "
                    "in which EnvRunners failed and nothing was sampled: a failure that comes "
                    "back on every restart (None: restart for ever, as RLlib does)",
                ),
                "delay_between_env_runner_restarts_s": (
                    0.1,
                    seconds_at_least(0),
                    "wait between a failure and its restart",
                ),
                "env_runner_health_probe_timeout_s": (
                    30.0,
                    seconds_above(0),
                    "a restarted runner must start within this",
                ),
                "restart_failed_sub_environments": (
                    False,
                    is_bool,
                    "an exception in one sub-env re-creates only "
                    "that sub-env and drops its episode (with "
                    '"vector_entry_point" vectorizing: the whole '
                    "vector env and all its episodes)",
                ),
                "env_runner_restore_timeout_s": (
                    1800.0,
                    seconds_above(0),
                    "a restarted runner must take its state and "
                    "answer a ping within this after it started",
                ),
            },
        ),
        **settings_of(
            "checkpointing",
            {
                # used by `checkpoints.CheckpointManager` (and the main job)
                "checkpoint_frequency": (
                    0,
                    int_at_least(0),
                    "a CheckpointManager saves every this many iterations (0: never)",
                ),
                "num_to_keep": (
                    None,
                    optional(int_at_least(1)),
                    "keep the best this many, plus the latest (None: all)",
                ),
                "checkpoint_score_attribute": (
                    None,
                    optional(_is_result_key),
                    'the result key that ranks checkpoints, nested with "/"',
                ),
                "checkpoint_score_order": (
                    "max",
                    one_of("max", "min"),
                    "which end of the score is best",
                ),
                "checkpoint_at_end": (False, is_bool, "also save after the last iteration"),
            },
        ),
        **settings_of(
            "python_environment",
            {
                "extra_python_environs_for_driver": (
                    {},
                    _is_str_dict,
                    "environment variables set in the main process when the Algorithm is built",
                ),
                "extra_python_environs_for_worker": (
                    {},
                    _is_str_dict,
                    "environment variables set in each EnvRunner worker process "
                    "before its envs are made",
                ),
            },
        ),
        # multi_agent() and rl_module(): the policies (modules), which agent acts with which,
        # which are trained, and per-module setting overrides.
        **settings_of(
            "multi_agent",
            {
                "policies": (
                    {DEFAULT_POLICY_ID: PolicySpec()},
                    check_policies,
                    "the policies (modules) by id: a set/list of ids or {id: PolicySpec}; "
                    'more than one, or another id than "default_policy", is multi-agent',
                ),
                "policy_mapping_fn": (
                    DEFAULT_POLICY_MAPPING,
                    check_policy_mapping_fn,
                    "(agent_id, episode, **kwargs) -> the policy (module) id the agent acts with",
                ),
                "policies_to_train": (
                    None,
                    check_policies_to_train,
                    "the policies the learners update: None (all), a set of ids, or a callable "
                    "(policy_id, batch) -> bool",
                ),
                "count_steps_by": (
                    "env_steps",
                    one_of("env_steps", "agent_steps"),
                    'what batch sizes and rollout lengths count in a multi-agent env: "env_steps" '
                    '(one per env step) or "agent_steps" (one per acting agent)',
                ),
            },
        ),
        **settings_of(
            "rl_module",
            {
                "algorithm_config_overrides_per_module": (
                    {},
                    check_overrides_per_module,
                    "{module_id: {setting: value}}: settings that differ for one module "
                    "(get_config_for_module(module_id) applies them)",
                ),
            },
        ),
        # framework() / api_stack(): one framework (numpy) and one API stack (RLlib's new one)
        # run here; RLlib's names are accepted (a warning at build says so for "torch", ...).
        **settings_of(
            "framework",
            {
                "framework_str": (
                    "numpy",
                    one_of("numpy", "torch", "tf2", "tf"),
                    "numpy (the default numpy modules and learners) or torch (torch "
                    "RLModules and learners, the torch extra); tf2 and tf are accepted "
                    "with a warning at build and run on numpy",
                ),
            },
        ),
        **settings_of(
            "experimental",
            {
                "_torch_lr_scheduler_classes": (
                    None,
                    _check_lr_scheduler_classes,
                    "torch lr schedulers chained over each optimizer (classes or "
                    "functools.partial of them, a list or {module_id: list}), stepped after "
                    "each update; it makes the run torch's",
                ),
            },
        ),
        **settings_of(
            "api_stack",
            {
                "enable_rl_module_and_learner": (
                    True,
                    is_bool,
                    "RLlib's new API stack, the only one here",
                ),
                "enable_env_runner_and_connector_v2": (
                    True,
                    is_bool,
                    "RLlib's new API stack, the only one here",
                ),
            },
        ),
    }
    #: Subclass hook: extra settings and changed defaults.
    _ALGO_SETTINGS: dict[str, Setting] = {}
    _DEFAULT_OVERRIDES: dict[str, Any] = {}

    # The settings' types (`__init__` sets them from the table above; a test keeps the two
    # equal). A value may also be Tune's `{"grid_search": [...]}` until build() refuses it.
    # environment()
    env: str | type[gym.Env] | Callable[..., gym.Env] | None
    env_config: dict[str, Any]
    env_task_fn: Callable[..., Any] | None
    normalize_actions: bool
    clip_actions: bool
    observation_space: gym.Space | None
    action_space: gym.Space | None
    # env_runners()
    num_env_runners: int
    num_envs_per_env_runner: int
    gym_env_vectorize_mode: str
    rollout_fragment_length: int | Literal["auto"]
    batch_mode: str
    sample_timeout_s: float
    explore: bool
    env_runner_cls: type[EnvRunner] | None
    create_env_on_local_worker: bool
    validate_env_runners_after_construction: bool
    env_to_module_connector: Callable[..., Any] | None
    observation_filter: str
    backend: str
    ray_address: str | None
    # exploration()
    exploration_config: dict[str, Any]
    # evaluation()
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
    # training()
    gamma: float
    lr: float | list[list[float]]
    train_batch_size: int
    num_epochs: int
    minibatch_size: int | None
    shuffle_batch_per_epoch: bool
    grad_clip: float | None
    grad_clip_by: str
    learner_class: type | None
    learner_config_dict: dict[str, Any]
    _torch_lr_scheduler_classes: list | dict | None
    optimizer: dict[str, Any]
    model: dict[str, Any]
    # debugging()
    seed: int | None
    log_level: str
    check_nan: bool
    _evaluation_parallel_to_training_wo_thread: bool
    # reporting()
    metrics_num_episodes_for_smoothing: int
    min_time_s_per_iteration: float | None
    min_sample_timesteps_per_iteration: int
    min_train_timesteps_per_iteration: int
    stats_cls_lookup: dict[str, type]
    # fault_tolerance()
    restart_failed_env_runners: bool
    ignore_env_runner_failures: bool
    max_num_env_runner_restarts: int
    max_consecutive_failed_iterations: int | None
    delay_between_env_runner_restarts_s: float
    env_runner_health_probe_timeout_s: float
    restart_failed_sub_environments: bool
    env_runner_restore_timeout_s: float
    # checkpointing()
    checkpoint_frequency: int
    num_to_keep: int | None
    checkpoint_score_attribute: str | None
    checkpoint_score_order: str
    checkpoint_at_end: bool
    # python_environment()
    extra_python_environs_for_driver: dict[str, str]
    extra_python_environs_for_worker: dict[str, str]
    # multi_agent() / rl_module()
    policies: dict[str, PolicySpec]
    policy_mapping_fn: Callable[..., Any]
    policies_to_train: Collection[str] | Callable[..., bool] | None
    count_steps_by: str
    algorithm_config_overrides_per_module: dict[str, dict[str, Any]]
    # framework() / api_stack()
    framework_str: str
    enable_rl_module_and_learner: bool
    enable_env_runner_and_connector_v2: bool
    _frozen: bool

    def __init__(self, algo_class: type[Algorithm] | None = None):
        object.__setattr__(self, "_frozen", False)
        #: (setting, repr of the value) of each UnusualSettingWarning emitted: once per config
        #: (and its copies), not per call.
        object.__setattr__(self, "_unusual_warned", set())
        self.algo_class = algo_class
        for name, setting in self._settings().items():
            setattr(self, name, copy.deepcopy(self._DEFAULT_OVERRIDES.get(name, setting.default)))
        self.callbacks_class: Any = RLlibCallback
        self.callbacks_on: dict[str, list[Callable]] = {}
        #: True on the config that evaluation EnvRunners see.
        self.in_evaluation = False
        # RLlib's settings without an effect here (`trainer.compat.rllib_settings`): readable as
        # attributes; the ones a script gave are remembered for the warning at build.
        for table in self._rllib_rules().values():
            for name, setting_rule in table.items():
                setattr(self, name, copy.deepcopy(setting_rule.default))
        self._rllib_given: dict[str, Any] = {}
        #: The model_config keys an `rl_module(rl_module_spec=...)` gave (merged over the rest).
        self._spec_model: dict[str, Any] = {}
        #: Names of the settings a builder call (or from_dict) set, whatever the value: a
        #: default the user chose explicitly can mean more than the same default left alone
        #: (`is_given`).
        self._given: set[str] = set()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _make_all_or_nothing(cls)  # a refused call leaves the config as it was
        document_builders(cls)  # each builder's docstring lists this class's settings

    @property
    def is_multi_agent(self) -> _Flag:
        """Whether the policies are a multi-agent setup (RLlib's rule: more than one policy, or
        one whose id is not "default_policy"); reads as a bool and as `is_multi_agent()`."""
        policies = self.policies
        return _Flag(len(policies) > 1 or DEFAULT_POLICY_ID not in policies)

    def _has_multi_rl_module_spec(self) -> bool:
        from trainer.core.multi_rl_module import MultiRLModuleSpec

        return isinstance(self.__dict__.get("rl_module_spec"), MultiRLModuleSpec)

    @classmethod
    def _settings(cls) -> dict[str, Setting]:
        return {**AlgorithmConfig._BASE_SETTINGS, **cls._ALGO_SETTINGS}

    #: The algorithm whose own RLlib settings without an effect here this class takes
    #: (`trainer.compat.rllib_settings.ALGO_RLLIB_SETTINGS`).
    _RLLIB_ALGO: str | None = None

    @classmethod
    def _rllib_rules(cls) -> dict[str, dict[str, Any]]:
        """Builder method -> {RLlib setting: NoEffect | Unsupported} for this class."""
        return rules_of(cls._RLLIB_ALGO)

    @classmethod
    def _rllib_method_of(cls) -> dict[str, str]:
        return methods_of(cls._rllib_rules())

    # -- the mechanics of setting ------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise ConfigError(
                f"cannot set {name}={value!r}: this config is frozen (it belongs to a built "
                "Algorithm); change a copy instead: config.copy()"
            )
        setting = AlgorithmConfig._BASE_SETTINGS.get(name) or type(self)._ALGO_SETTINGS.get(name)
        if setting is not None and isinstance(value, np.generic):
            # A numpy scalar (np.int64 from np.arange, ...) is stored as the Python number, so
            # that configs compare, print and write to JSON as with Python's own.
            value = value.item()
        if setting is not None and not is_search_space(value):
            # RLlib scripts also set attributes directly (`config.lr = 1e-4`): the same check
            # as the builder method's, at once.
            problem = setting.check(value)
            if problem is not None:
                raise ConfigError(
                    f"{type(self).__name__}.{name} = {value!r}: {name} must be {problem} "
                    f"(the setting of {setting.method}())"
                )
            self._warn_if_unusual(name, value, setting)
        object.__setattr__(self, name, value)

    def _warn_if_unusual(self, name: str, value: Any, setting: Setting) -> None:
        """One `UnusualSettingWarning` per config (copies included) for a value outside the
        setting's usual range (`gamma=1.5`): taken, as RLlib takes it, and named."""
        message = unusual_value_message(type(self).__name__, name, value, setting)
        warned: set[tuple[str, str]] = self.__dict__.setdefault("_unusual_warned", set())
        if message is None or (name, repr(value)) in warned:
            return
        warned.add((name, repr(value)))
        warnings.warn(message, UnusualSettingWarning, stacklevel=_stacklevel_outside_trainer())

    # -- pickling ----------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The settings; an env named with `register_env` travels with its creator, so a config
        sent to another process (a Ray actor made with `ray.remote(SingleAgentEnvRunner)`, a
        pickled checkpoint) makes the same env there, as RLlib's registry does through Ray."""
        state = dict(self.__dict__)
        creator = registered_env_creator(self.env)
        if creator is not None:
            state[_REGISTERED_ENV_CREATOR] = creator
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        creator = state.pop(_REGISTERED_ENV_CREATOR, None)
        self.__dict__.update(state)
        if creator is not None and isinstance(self.env, str):  # only a name has a creator
            register_env_if_missing(self.env, creator)

    def _set(
        self, method: str, values: dict[str, Any], spelled: dict[str, str] | None = None
    ) -> Self:
        """Checks and stores every provided value of a builder call; `spelled` names the
        builder's argument where it is not the setting's name (in the error message)."""
        settings = self._settings()
        for name, value in values.items():
            if value is NotProvided:
                continue
            # Tune's grid_search marker: every value is checked now; the example driver runs
            # one trial per value (grid_settings()), and build() refuses the marker itself.
            # Another Tune search space: its values are checked when a trial's config is built
            # (a tune.choice's categories now).
            for option in _search_options(value):
                problem = settings[name].check(option)
                if problem is not None:
                    argument = (spelled or {}).get(name, name)
                    raise ConfigError(
                        f"{type(self).__name__}.{method}({argument}={value!r}): "
                        f"{argument} must be {problem}"
                    )
            setattr(self, name, copy.copy(value) if isinstance(value, (dict, list)) else value)
            self._given.add(name)
        return self

    def search_settings(self) -> dict[str, Any]:
        """The settings given as Tune search spaces (grid_search, uniform, choice, ...)."""
        return {
            name: getattr(self, name)
            for name in self._settings()
            if is_search_space(getattr(self, name, None))
        }

    def grid_settings(self) -> dict[str, list]:
        """The settings given as Tune's `grid_search([...])`, each with its values."""
        return {
            name: list(getattr(self, name)["grid_search"])
            for name in self._settings()
            if is_grid_search(getattr(self, name, None))
        }

    def is_given(self, name: str) -> bool:
        """Whether a builder call set `name` (even to its default value)."""
        return name in self.__dict__.get("_given", ())

    def _take_rllib_settings(self, method: str, values: dict[str, Any]) -> None:
        """Stores RLlib's settings that have no effect here (see `trainer.compat.rllib_settings`);
        raises ConfigError for a value this trainer cannot honour."""
        for name, value in values.items():
            setting_rule = rule(name, self._rllib_rules())
            if value is NotProvided or setting_rule is None:
                continue
            if (
                isinstance(value, bool)
                and isinstance(setting_rule.default, int)
                and not isinstance(setting_rule.default, bool)
            ):
                raise ConfigError(
                    f"{type(self).__name__}.{method}({name}={value!r}): {name} "
                    f"is a count; give an int (RLlib's default is "
                    f"{setting_rule.default}), not a bool"
                )
            kind = _kind_problem(value, setting_rule.default)
            if kind is not None:
                raise ConfigError(
                    f"{type(self).__name__}.{method}({name}={value!r}): {name} must be {kind} "
                    f"(RLlib's default is {setting_rule.default!r})"
                )
            if isinstance(setting_rule, Unsupported) and not setting_rule.is_fine(value):
                raise ConfigError(
                    f"{type(self).__name__}.{method}({name}={value!r}) is not "
                    f"supported here: {setting_rule.instead}",
                    setting_rule.capability,
                )
            setattr(self, name, value)
            self._rllib_given[name] = value

    def _reject_unknown(self, method: str, unknown: dict[str, Any], allowed: Iterable[str]) -> None:
        rllib_names = self._rllib_rules().get(method, {})
        taken = {name: unknown.pop(name) for name in list(unknown) if name in rllib_names}
        self._take_rllib_settings(method, taken)
        if not unknown:
            return
        allowed = list(allowed) + list(rllib_names)
        name = next(iter(unknown))
        close = difflib.get_close_matches(name, list(allowed), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        call = method if "(" in method else f"{method}()"
        raise UnknownSettingError(
            f"{type(self).__name__}.{call} got an unknown setting {name}={unknown[name]!r}."
            f"{hint} Allowed: {', '.join(sorted(allowed))}"
        )

    def _take_old_names(self, method: str, unknown: dict[str, Any], values: dict[str, Any]) -> None:
        """Moves RLlib's older argument names (`trainer.compat.old_api.OLD_CONFIG_KEYS`) of this
        builder method from `unknown` into `values`, with one warning each."""
        for old_name in [name for name in unknown if OLD_CONFIG_KEYS.get(name) in values]:
            new_name = OLD_CONFIG_KEYS[old_name]
            warn_once(f"{method}({old_name}=...)", f"{method}({new_name}=...)")
            values[new_name] = unknown.pop(old_name)

    # -- builder methods ---------------------------------------------------------------------
    def environment(
        self,
        env: str | type[gym.Env] | Callable[..., gym.Env] | None = NotProvided,
        *,
        env_config: dict = NotProvided,
        env_task_fn: Callable | None = NotProvided,
        normalize_actions: bool = NotProvided,
        clip_actions: bool = NotProvided,
        observation_space: gym.Space | None = NotProvided,
        action_space: gym.Space | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """The env and its spaces."""
        self._reject_unknown(
            "environment",
            unknown,
            [
                "env",
                "env_config",
                "env_task_fn",
                "normalize_actions",
                "clip_actions",
                "observation_space",
                "action_space",
            ],
        )
        if env is not NotProvided and env is not None:  # None: no env (as RLlib's default)
            try:
                check_env_spec(env)
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        if _mergeable(env_config) and _mergeable(self.env_config):
            # RLlib updates the env_config it has (deep), it does not replace it: code that
            # changes one key (a curriculum's map, in an EnvRunner's config) keeps the others.
            env_config = deep_updated(self.env_config, env_config)
        return self._set(
            "environment",
            {
                "env": env,
                "env_config": env_config,
                "env_task_fn": env_task_fn,
                "normalize_actions": normalize_actions,
                "clip_actions": clip_actions,
                "observation_space": observation_space,
                "action_space": action_space,
            },
        )

    def env_runners(
        self,
        *,
        num_env_runners: int = NotProvided,
        num_envs_per_env_runner: int = NotProvided,
        gym_env_vectorize_mode: Any = NotProvided,
        rollout_fragment_length: int | str = NotProvided,
        batch_mode: str = NotProvided,
        sample_timeout_s: float = NotProvided,
        explore: bool = NotProvided,
        exploration_config: dict = NotProvided,
        env_runner_cls: type | None = NotProvided,
        create_env_on_local_worker: bool = NotProvided,
        validate_env_runners_after_construction: bool = NotProvided,
        env_to_module_connector: Callable | None = NotProvided,
        observation_filter: str = NotProvided,
        backend: str = NotProvided,
        ray_address: str | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """How samples are collected: the EnvRunners, their sub-envs, and what one `sample()`
        call returns. RLlib's older names (`num_rollout_workers`, `num_envs_per_worker`, ...)
        are accepted."""
        values = {
            "num_env_runners": num_env_runners,
            "num_envs_per_env_runner": num_envs_per_env_runner,
            "gym_env_vectorize_mode": gym_env_vectorize_mode,
            "rollout_fragment_length": rollout_fragment_length,
            "batch_mode": batch_mode,
            "sample_timeout_s": sample_timeout_s,
            "explore": explore,
            "env_runner_cls": env_runner_cls,
            "create_env_on_local_worker": create_env_on_local_worker,
            "validate_env_runners_after_construction": validate_env_runners_after_construction,
            "env_to_module_connector": env_to_module_connector,
            "observation_filter": observation_filter,
            "backend": backend,
            "ray_address": ray_address,
        }
        if exploration_config is not NotProvided:
            self.exploration(exploration_config=exploration_config)
        self._take_old_names("env_runners", unknown, values)
        self._reject_unknown("env_runners", unknown, values)
        return self._set("env_runners", values)

    def training(
        self,
        *,
        gamma: float = NotProvided,
        lr: float = NotProvided,
        train_batch_size: int = NotProvided,
        train_batch_size_per_learner: int = NotProvided,
        num_epochs: int = NotProvided,
        minibatch_size: int | None = NotProvided,
        shuffle_batch_per_epoch: bool = NotProvided,
        grad_clip: float | None = NotProvided,
        grad_clip_by: str = NotProvided,
        model: dict = NotProvided,
        optimizer: dict = NotProvided,
        learner_class: type | None = NotProvided,
        learner_config_dict: dict | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Learning settings every algorithm has. `train_batch_size_per_learner` sets
        `train_batch_size` (there is one learner)."""
        values = {
            "gamma": gamma,
            "lr": lr,
            "train_batch_size": train_batch_size,
            "num_epochs": num_epochs,
            "minibatch_size": minibatch_size,
            "shuffle_batch_per_epoch": shuffle_batch_per_epoch,
            "grad_clip": grad_clip,
            "grad_clip_by": grad_clip_by,
            "optimizer": optimizer,
            "learner_class": learner_class,
            "learner_config_dict": learner_config_dict,
        }
        self._take_old_names("training", unknown, values)
        self._reject_unknown(
            "training",
            unknown,
            list(values) + list(self._ALGO_SETTINGS) + ["model", "train_batch_size_per_learner"],
        )
        if train_batch_size_per_learner is not NotProvided:
            self._set("training", {"train_batch_size": train_batch_size_per_learner})
        if model is not NotProvided:
            self._set_model("training", "model", model)
        return self._set("training", values)

    def rl_module(
        self,
        *,
        model_config: dict | Any = NotProvided,
        rl_module_spec: Any = NotProvided,
        algorithm_config_overrides_per_module: dict = NotProvided,
        **unknown: Any,
    ) -> Self:
        """The networks: `model_config` is a dict or a `DefaultModelConfig` (RLlib's keys:
        `fcnet_*`, `head_fcnet_*` with their initializers, `vf_share_layers`, `free_log_std`). It
        replaces the model config given before, as in RLlib. `rl_module_spec` is an
        `RLModuleSpec` for the default module: its `model_config` is merged over the config's
        (as RLlib merges them) and its spaces are the ones the networks are built for (custom
        module classes are not supported in single-agent training); or a `MultiRLModuleSpec`
        of a multi-agent setup (`{module_id: RLModuleSpec}`, user RLModule classes included).
        `algorithm_config_overrides_per_module` updates the per-module setting overrides
        (`{module_id: {setting: value}}`, read with `get_config_for_module`)."""
        if "model_config_dict" in unknown:  # RLlib's older name, accepted with its warning
            warn_once("rl_module(model_config_dict=...)", "rl_module(model_config=...)")
            given = unknown.pop("model_config_dict")
            model_config = given if model_config is NotProvided else model_config
        self._reject_unknown(
            "rl_module",
            unknown,
            ["model_config", "rl_module_spec", "algorithm_config_overrides_per_module"],
        )
        if rl_module_spec is not NotProvided:
            self._set_rl_module_spec(rl_module_spec)
        if model_config is not NotProvided:
            self._set_model("rl_module", "model_config", model_config, replace=True)
        if algorithm_config_overrides_per_module is not NotProvided:
            self._set_overrides_per_module("rl_module", algorithm_config_overrides_per_module)
        return self

    def _set_overrides_per_module(self, method: str, overrides: Any) -> None:
        """Checks `{module_id: {setting: value}}` (every setting must exist, with a valid
        value) and merges it into `algorithm_config_overrides_per_module`, as RLlib updates
        that dict."""
        problem = check_overrides_per_module(overrides)
        if problem is not None:
            raise ConfigError(
                f"{type(self).__name__}.{method}(algorithm_config_overrides_per_module="
                f"{overrides!r}): algorithm_config_overrides_per_module must be {problem}"
            )
        self._check_module_overrides(method, overrides)
        merged = {**self.algorithm_config_overrides_per_module, **overrides}
        self._set(method, {"algorithm_config_overrides_per_module": merged})
        self.__dict__["_per_module_configs"] = {}  # built anew from the new overrides

    def _check_policy_configs(self, method: str, policies: Any) -> None:
        """Each policy's own settings (`PolicySpec(config={...})`, or a 4-tuple's last item)
        must be settings with valid values, as the per-module overrides must."""
        if not isinstance(policies, dict):
            return
        settings = self._settings()
        for policy_id, spec in policies.items():
            overrides = spec.config if isinstance(spec, PolicySpec) else None
            if isinstance(spec, (list, tuple)) and len(spec) == 4:
                overrides = spec[3]
            if not isinstance(overrides, dict):
                continue
            # The values of settings; other keys (RLlib's older names, its settings without an
            # effect here, unknown ones) are judged by update_from_dict when the policy's
            # config is made.
            for name, value in overrides.items():
                problem = settings[name].check(value) if name in settings else None
                if problem is not None:
                    raise ConfigError(
                        f"{type(self).__name__}.{method}(policies={{{policy_id!r}: "
                        f"PolicySpec(config={{{name!r}: {value!r}}})}}): {name} must be {problem}"
                    )

    def _check_module_overrides(
        self,
        method: str,
        overrides: dict,
        argument: str = "algorithm_config_overrides_per_module",
    ) -> None:
        """Every setting of each module's overrides must exist, with a valid value."""
        settings = self._settings()
        for module_id, module_overrides in overrides.items():
            label = f"{method}({argument}={{{module_id!r}: ...}})"
            unknown = {k: v for k, v in module_overrides.items() if k not in settings}
            self._reject_unknown(label, unknown, settings)
            for name, value in module_overrides.items():
                problem = settings[name].check(value)
                if problem is not None:
                    raise ConfigError(
                        f"{type(self).__name__}.{label}: {name}={value!r}: {name} must be {problem}"
                    )

    def _set_rl_module_spec(self, spec: Any) -> None:
        """Checks an `RLModuleSpec` for the default module, or a `MultiRLModuleSpec`, and
        applies it (see `rl_module`)."""
        from trainer.core.multi_rl_module import MultiRLModuleSpec
        from trainer.core.rl_module import RLModuleSpec

        name = f"{type(self).__name__}.rl_module(rl_module_spec={type(spec).__name__}(...))"
        if spec is None:
            self.rl_module_spec, self._spec_model = None, {}
            self._set_model("rl_module", "model_config", self.model)
            return
        if isinstance(spec, MultiRLModuleSpec):
            check_multi_rl_module_spec(name, spec, self.default_module_class())
            self.rl_module_spec, self._spec_model = copy.deepcopy(spec), {}
            self._set_model("rl_module", "model_config", self.model)
            return
        if not isinstance(spec, RLModuleSpec):
            raise ConfigError(
                f"{name}: must be an RLModuleSpec or a MultiRLModuleSpec "
                "(ray.rllib.core.rl_module, here trainer.RLModuleSpec and "
                "trainer.MultiRLModuleSpec)"
            )
        if spec.module_class is not None and spec.module_class is self.default_module_class():
            spec = copy.copy(spec)
            spec.module_class = None  # the default module, named (get_rl_module_spec's output)
        refusals = {
            "module_class": "custom RLModules are not supported yet in single-agent "
            "training (only the algorithm's default numpy module runs there): leave "
            "module_class=None and configure the default module with model_config",
            "inference_only": "the default module here has no inference-only form (it is "
            "the same on the EnvRunners and the learner)",
            "learner_only": "the default module here always runs on the EnvRunners too",
        }
        if _is_torch_module_class(spec.module_class):
            refusals.pop("module_class")  # a TorchRLModule runs on the EnvRunners and learns
            refusals.pop("inference_only")
        check_catalog_class(
            name,
            spec.catalog_class,
            spec.module_class or self.default_module_class(),
        )
        for field_name, why in refusals.items():
            value = getattr(spec, field_name)
            if value not in (None, False):
                shown = value.__qualname__ if isinstance(value, type) else repr(value)
                raise ConfigError(f"{name}: {field_name}={shown} is not supported: {why}", TORCH)
        spec_model = spec.model_config or {}
        if not _is_torch_module_class(spec.module_class):  # a user's module reads its own keys
            try:
                check_model_config(spec_model, setting=f"{name}.model_config")
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        spaces = {"observation_space": spec.observation_space, "action_space": spec.action_space}
        self._set("rl_module", {k: v for k, v in spaces.items() if v is not None})
        self.rl_module_spec = copy.deepcopy(spec)
        # A dict or a DefaultModelConfig: check_model_config took nothing else.
        self._spec_model = (
            dict(spec_model) if isinstance(spec_model, dict) else dataclasses.asdict(spec_model)
        )
        self._set_model("rl_module", "model_config", self.model)

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The spec of this algorithm's default module: an `RLModuleSpec` with no module class
        (the built-in numpy policy or Q network; RLlib names its torch class here)."""
        from trainer.core.rl_module import RLModuleSpec

        return RLModuleSpec()

    def get_rl_module_spec(
        self,
        env: gym.Env | None = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        inference_only: bool | None = None,
    ) -> RLModuleSpec:
        """The `RLModuleSpec` the default module is built from, as RLlib fills it in: the
        spaces from the spec given to `rl_module()`, else `spaces[DEFAULT_POLICY_ID]` (what
        `EnvRunner.get_spaces()` returns), else `env`, else the config's
        `observation_space`/`action_space`; `model_config` is this config's."""
        from trainer.core.multi_rl_module import MultiRLModuleSpec

        current: RLModuleSpec | MultiRLModuleSpec | None = self.rl_module_spec
        if isinstance(current, MultiRLModuleSpec):
            raise ValueError(
                f"{type(self).__name__}.get_rl_module_spec(): rl_module(rl_module_spec=...) "
                "is a MultiRLModuleSpec; use get_multi_rl_module_spec()"
            )
        spec = copy.deepcopy(current) if current is not None else self.get_default_rl_module_spec()
        for index, name in enumerate(("observation_space", "action_space")):
            if getattr(spec, name) is not None:
                continue
            if spaces is not None:
                value = spaces[DEFAULT_POLICY_ID][index]
            elif env is not None:
                value = getattr(
                    getattr(env, "unwrapped", env), "single_" + name, getattr(env, name)
                )
            else:
                value = getattr(self, name)
            if value is None:
                raise ValueError(
                    f"{type(self).__name__}.get_rl_module_spec(): no {name} to "
                    "build the module for: pass env= or spaces=, or set "
                    f"environment({name}=...)"
                )
            setattr(spec, name, value)
        spec.model_config = {**self.model_config, **self._model_config_auto_includes}
        spec.module_class = spec.module_class or self.default_module_class()
        if inference_only is not None:
            spec.inference_only = inference_only
        return spec

    def default_module_class(self) -> type:
        """The class of this algorithm's default numpy module (what an `RLModuleSpec`
        without a module class builds): PPO's policy-and-value module here."""
        from trainer.algorithms.ppo.module import PolicyModule

        return PolicyModule

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        """Settings of the algorithm that its default module reads from its model config (as
        RLlib adds them there): none here; DQN adds `dueling`."""
        return {}

    def get_multi_agent_setup(
        self,
        *,
        policies: dict[str, PolicySpec] | None = None,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        default_policy_class: type | None = None,
    ) -> tuple[dict[str, PolicySpec], Callable[..., bool]]:
        """RLlib's complete multi-agent setup: `({policy_id: PolicySpec with its spaces and
        its whole config (this one with the PolicySpec's config applied)},
        is_policy_to_train(policy_id, batch=None) -> bool)`. A policy's spaces come from its
        PolicySpec, else `spaces[policy_id]`, else a MultiAgentEnv's agents that map to it
        (`policy_mapping_fn`; all agents' spaces when they are alike), else the env's spaces,
        else the config's `observation_space` / `action_space`."""
        setup = MultiAgentSetup(self)
        return setup.policies(policies, env, spaces, default_policy_class), (
            setup.is_policy_to_train
        )

    def get_multi_rl_module_spec(
        self,
        *,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        inference_only: bool = False,
        policy_dict: dict[str, PolicySpec] | None = None,
        single_agent_rl_module_spec: RLModuleSpec | None = None,
    ) -> MultiRLModuleSpec:
        """The `MultiRLModuleSpec` of this config's policies, as RLlib builds it: one module
        spec per policy (from `rl_module(rl_module_spec=MultiRLModuleSpec(...))` where it
        names the policy, else the single-module spec), each with its module class (None: the
        algorithm's default numpy module), its spaces (`get_multi_agent_setup`) and
        `model_config` merged over the config's. With `inference_only`, `learner_only`
        modules are left out."""
        return MultiAgentSetup(self).module_spec(
            env, spaces, inference_only, policy_dict, single_agent_rl_module_spec
        )

    def get_config_for_module(self, module_id: str) -> Self:
        """The config of one module: this one with
        `algorithm_config_overrides_per_module[module_id]` applied (built once, then kept);
        this config itself for a module without overrides."""
        overrides = self.algorithm_config_overrides_per_module.get(module_id)
        if overrides is None:
            return self
        cache = self.__dict__.setdefault("_per_module_configs", {})
        if module_id not in cache:
            module_config = self.copy()
            module_config.__dict__["_per_module_configs"] = {}
            cache[module_id] = module_config.update_from_dict(dict(overrides))
        return cache[module_id]

    @property
    def model_config(self) -> dict:
        """The model config the networks are built from (RLlib's property)."""
        return dict(self.model)

    def _set_model(self, method: str, name: str, model: dict, *, replace: bool = False) -> None:
        try:
            merged = check_model_config(
                model, setting=f"{type(self).__name__}.{method}({name}=...)"
            )
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
        given = {
            key: merged[key]
            for key in (dataclasses.asdict(model) if dataclasses.is_dataclass(model) else model)
            if key in MODEL_DEFAULTS
        }
        # An RLModuleSpec's model_config wins over the config's, whichever came first (RLlib
        # merges the two when it builds the module).
        given_by_spec = self.__dict__.get("_spec_model") or {}
        if _is_torch_module_class(
            getattr(self.__dict__.get("rl_module_spec"), "module_class", None)
        ):
            # A user's module reads its own keys too (they reach it in _build_torch_module).
            given_by_spec = {k: v for k, v in given_by_spec.items() if k in MODEL_DEFAULTS}
        spec_model = check_model_config(given_by_spec) if given_by_spec else {}
        from_spec = {key: spec_model[key] for key in given_by_spec if key in MODEL_DEFAULTS}
        self.model = {**(MODEL_DEFAULTS if replace else self.model), **given, **from_spec}

    def callbacks(self, callbacks_class: Any = NotProvided, **on_events: Any) -> Self:
        """Callback classes (one, or a list: called in list order) and, per event, a callable or
        a list of callables (called after the classes, in list order). `callbacks_class=None`
        sets the default, `RLlibCallback`, as RLlib's does."""
        if callbacks_class is None:
            # As RLlib: the default class, not None (Tune's Tuner.restore(param_space=...)
            # resolves a search's callbacks class by the value it finds in the same place).
            callbacks_class = RLlibCallback
        if callbacks_class is not NotProvided:
            classes = (
                callbacks_class if isinstance(callbacks_class, (list, tuple)) else [callbacks_class]
            )
            for cls in classes:
                if cls is None:
                    continue
                if not isinstance(cls, type):
                    raise ConfigError(
                        f"{type(self).__name__}.callbacks(callbacks_class={cls!r}): pass the "
                        f"class, not an instance (got a {type(cls).__name__} object); every "
                        "process makes its own instance"
                    )
                if not issubclass(cls, RLlibCallback):
                    raise ConfigError(
                        f"{type(self).__name__}.callbacks(callbacks_class={cls.__qualname__}): "
                        "callback classes must subclass callbacks.RLlibCallback"
                    )
                check_callback_class(
                    cls, f"{type(self).__name__}.callbacks(callbacks_class={cls.__qualname__})"
                )
        event_names = [e for e in EVENTS]
        unknown = {k: v for k, v in on_events.items() if k not in event_names}
        self._reject_unknown("callbacks", unknown, ["callbacks_class"] + event_names)
        on_events = {k: v for k, v in on_events.items() if k in event_names}
        new_on = dict(self.callbacks_on)
        for event, fns in on_events.items():
            if fns is NotProvided or fns is None:  # None: leave the event as it is (RLlib's)
                continue
            fn_list = list(fns) if isinstance(fns, (list, tuple)) else [fns]
            for fn in fn_list:
                if not callable(fn):
                    raise ConfigError(
                        f"{type(self).__name__}.callbacks({event}={fn!r}): must be "
                        "a callable or a list of callables"
                    )
            for fn in fn_list:
                check_event_callable(event, fn, f"{type(self).__name__}.callbacks({event}=...)")
            new_on[event] = fn_list
        # Set only once everything was checked: a refused call leaves the config as it was.
        if callbacks_class is not NotProvided:
            self.callbacks_class = callbacks_class
        self.callbacks_on = new_on
        return self

    def debugging(
        self,
        *,
        seed: int | None = NotProvided,
        log_level: str = NotProvided,
        check_nan: bool = NotProvided,
        _evaluation_parallel_to_training_wo_thread: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Seeding, logging and checks of env data."""
        values = {
            "seed": seed,
            "log_level": log_level,
            "check_nan": check_nan,
            "_evaluation_parallel_to_training_wo_thread": _evaluation_parallel_to_training_wo_thread,
        }
        self._reject_unknown("debugging", unknown, values)
        return self._set("debugging", values)

    def reporting(
        self,
        *,
        metrics_num_episodes_for_smoothing: int = NotProvided,
        min_time_s_per_iteration: float | None = NotProvided,
        min_sample_timesteps_per_iteration: int = NotProvided,
        min_train_timesteps_per_iteration: int = NotProvided,
        custom_stats_cls_lookup: dict | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """How episode metrics are smoothed, and the least one `train()` call does: it repeats
        its training step until all three minimums are reached. `custom_stats_cls_lookup`
        replaces the metrics loggers' stats classes (`config.stats_cls_lookup`; start from
        `DEFAULT_STATS_CLS_LOOKUP` to override or add `reduce=` kinds)."""
        values = {
            "metrics_num_episodes_for_smoothing": metrics_num_episodes_for_smoothing,
            "min_time_s_per_iteration": min_time_s_per_iteration,
            "min_sample_timesteps_per_iteration": min_sample_timesteps_per_iteration,
            "min_train_timesteps_per_iteration": min_train_timesteps_per_iteration,
            "stats_cls_lookup": custom_stats_cls_lookup,
        }
        self._take_old_names("reporting", unknown, values)
        self._reject_unknown("reporting", unknown, values)
        return self._set(
            "reporting", values, spelled={"stats_cls_lookup": "custom_stats_cls_lookup"}
        )

    def fault_tolerance(
        self,
        *,
        restart_failed_env_runners: bool = NotProvided,
        ignore_env_runner_failures: bool = NotProvided,
        max_num_env_runner_restarts: int = NotProvided,
        max_consecutive_failed_iterations: int | None = NotProvided,
        delay_between_env_runner_restarts_s: float = NotProvided,
        env_runner_health_probe_timeout_s: float = NotProvided,
        restart_failed_sub_environments: bool = NotProvided,
        env_runner_restore_timeout_s: float = NotProvided,
        **unknown: Any,
    ) -> Self:
        """What happens when an EnvRunner fails (an exception in env or callback code, its
        process exits or is killed, or it does not answer within `sample_timeout_s`): restarted
        (the new one must start within `env_runner_health_probe_timeout_s` and take its state
        within `env_runner_restore_timeout_s`), left out, or its error raised by `train()`; a
        failure that comes back on every restart, with nothing sampled for
        `max_consecutive_failed_iterations` iterations in a row, is raised by `train()`. The
        rules, step by step: `trainer.runners.restart_policy`. RLlib's older names
        (`recreate_failed_env_runners`, `ignore_worker_failures`, ...) are accepted."""
        values = {
            "restart_failed_env_runners": restart_failed_env_runners,
            "ignore_env_runner_failures": ignore_env_runner_failures,
            "max_num_env_runner_restarts": max_num_env_runner_restarts,
            "max_consecutive_failed_iterations": max_consecutive_failed_iterations,
            "delay_between_env_runner_restarts_s": delay_between_env_runner_restarts_s,
            "env_runner_health_probe_timeout_s": env_runner_health_probe_timeout_s,
            "restart_failed_sub_environments": restart_failed_sub_environments,
            "env_runner_restore_timeout_s": env_runner_restore_timeout_s,
        }
        self._take_old_names("fault_tolerance", unknown, values)
        self._reject_unknown("fault_tolerance", unknown, values)
        return self._set("fault_tolerance", values)

    def checkpointing(
        self,
        *,
        checkpoint_frequency: int = NotProvided,
        num_to_keep: int | None = NotProvided,
        checkpoint_score_attribute: str | None = NotProvided,
        checkpoint_score_order: str = NotProvided,
        checkpoint_at_end: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """When a `checkpoints.CheckpointManager` (the main job uses one) saves, and which
        checkpoints it keeps."""
        values = {
            "checkpoint_frequency": checkpoint_frequency,
            "num_to_keep": num_to_keep,
            "checkpoint_score_attribute": checkpoint_score_attribute,
            "checkpoint_score_order": checkpoint_score_order,
            "checkpoint_at_end": checkpoint_at_end,
        }
        self._reject_unknown("checkpointing", unknown, values)
        return self._set("checkpointing", values)

    def exploration(
        self, *, explore: bool = NotProvided, exploration_config: dict = NotProvided, **unknown: Any
    ) -> Self:
        """Whether and how the EnvRunners explore."""
        self._reject_unknown("exploration", unknown, ["explore", "exploration_config"])
        if (
            exploration_config is not NotProvided
            and isinstance(exploration_config, dict)
            and exploration_config
            and "type" not in exploration_config
        ):
            try:
                check_exploration_config(
                    {**self._default_exploration_config(), **exploration_config},
                    setting=f"{type(self).__name__}.exploration(exploration_config=...)",
                )
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        return self._set(
            "exploration", {"explore": explore, "exploration_config": exploration_config}
        )

    def _default_exploration_config(self) -> dict:
        """The algorithm's exploration when `exploration_config` is not set."""
        return {"type": "StochasticSampling", "random_timesteps": 0}

    def env_to_module_factory(self) -> Callable | None:
        """The callable that builds each EnvRunner's env-to-module connector, if any."""
        if self.env_to_module_connector is not None:
            return self.env_to_module_connector
        if self.observation_filter == "MeanStdFilter":
            from trainer.connectors import MeanStdFilter

            return lambda env: MeanStdFilter()
        return None

    def build_env_to_module_connector(
        self, env: Any = None, spaces: Any = None, device: Any = None
    ) -> Any:
        """The env-to-module pipeline an EnvRunner builds for `env` (a vector env or an env):
        the configured connector pieces (`env_to_module_connector`, or `observation_filter`)
        with their input spaces set to the env's; an empty pipeline when none is configured.
        `device` is torch's and has no meaning here."""
        from trainer.connectors.connector_v2 import (
            ConnectorPipelineV2,
            build_pipeline,
            call_factory,
        )

        if env is None:
            raise ConfigError(
                f"{type(self).__name__}.build_env_to_module_connector(env=None): "
                "give the env (the pipeline's input spaces are its spaces)"
            )
        obs_space = self.observation_space or getattr(
            env, "single_observation_space", env.observation_space
        )
        act_space = self.action_space or getattr(env, "single_action_space", env.action_space)
        factory = self.env_to_module_factory()
        pieces = (
            ConnectorPipelineV2(connectors=[])
            if factory is None
            else call_factory(factory, env, (obs_space, act_space))
        )
        return build_pipeline(pieces, obs_space, act_space)

    def get_exploration_config(self) -> dict:
        """The exploration the EnvRunners use: the user's `exploration_config` if it names a
        type, else the algorithm's default updated with it."""
        if "type" in self.exploration_config:
            return dict(self.exploration_config)
        return {**self._default_exploration_config(), **self.exploration_config}

    def build_module(
        self, spaces: Any, seed: int | None = None, *, inference_only: bool = False
    ) -> Any:
        """The RL module (networks) this algorithm's EnvRunners and learner use: the numpy
        default module, or with torch (`uses_torch`) a view of the spec's or the default
        torch module (`inference_only`: the EnvRunners' copy)."""
        if self.uses_torch:
            return self._build_torch_module(spaces, seed, inference_only)
        from trainer.algorithms.ppo.module import PolicyModule

        return PolicyModule(spaces, self.model, seed=seed)

    # -- torch ---------------------------------------------------------------------------------
    @property
    def uses_torch(self) -> bool:
        """Whether the networks and learners are torch's (`torch_reason` says why)."""
        return self.torch_reason is not None

    @property
    def torch_reason(self) -> str | None:
        """What makes this config run on torch, in the user's words, or None (numpy):
        `framework("torch")`, a `TorchRLModule` subclass in `rl_module(rl_module_spec=...)` (a
        MultiRLModuleSpec: in any of its specs), a torch `learner_class`, torch lr schedulers
        (`experimental(_torch_lr_scheduler_classes=...)`), or, when no framework was chosen,
        a model only torch builds (`use_lstm=True`, `conv_*` keys): RLlib's default framework
        is torch, and an RLlib script asking for an LSTM gets one."""
        name = type(self).__name__
        if self.framework_str == "torch":
            return f"{name}.framework('torch')"
        if _spec_names_torch_module(self.__dict__.get("rl_module_spec")):
            return f"{name}.rl_module(rl_module_spec=...) naming a TorchRLModule subclass"
        learner_class = self.__dict__.get("learner_class")
        if learner_class is not None:
            learner_name = getattr(learner_class, "__name__", learner_class)
            return f"{name}.training(learner_class={learner_name})"
        if self.__dict__.get("_torch_lr_scheduler_classes"):
            return f"{name}.experimental(_torch_lr_scheduler_classes=...)"
        if not self.is_given("framework_str"):
            request = torch_only_request(self.__dict__.get("model", {}))
            if request is not None:
                return f"{name} model config {request} (a model only the torch modules build)"
        return None

    def default_torch_module_class(self) -> type:
        """The class of this algorithm's default torch module (RLlib's
        DefaultPPOTorchRLModule for PPO)."""
        from trainer.torch_rl import require_torch

        require_torch(f"{type(self).__name__}.framework('torch')")
        from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule

        return DefaultPPOTorchRLModule

    def _check_torch_config(self, name: str) -> None:
        """Raises ConfigError for a torch config that cannot run: torch not installed, or
        torch modules in a multi-agent config."""
        try:
            from trainer.torch_rl import require_torch

            require_torch(self.torch_reason or f"{name}.framework('torch')")
        except ImportError as error:
            raise ConfigError(str(error), TORCH) from None
        gpus = self["num_gpus_per_learner"]
        if gpus:
            import torch

            if gpus != 1:
                raise ConfigError(
                    f"{name}.learners(num_gpus_per_learner={gpus!r}): one learner runs here, "
                    "on one GPU (1) or the CPU (0)"
                )
            if not torch.cuda.is_available():
                raise ConfigError(
                    f"{name}.learners(num_gpus_per_learner=1): this machine has no CUDA "
                    "device torch can use (torch.cuda.is_available() is False); use "
                    "num_gpus_per_learner=0 to learn on the CPU"
                )
        if self.is_multi_agent:
            self._check_multi_agent_torch(name)

    def _check_multi_agent_torch(self, name: str) -> None:
        """Raises ConfigError for recurrent torch modules in a multi-agent config (the
        MultiAgentEnvRunners carry no recurrent state)."""
        from trainer.core.multi_rl_module import MultiRLModuleSpec

        recurrent = []
        if self.model.get("use_lstm"):
            recurrent.append("every module (the config's model_config)")
        spec = self.__dict__.get("rl_module_spec")
        specs = spec.rl_module_specs if isinstance(spec, MultiRLModuleSpec) else None
        if isinstance(specs, dict):
            recurrent += [
                repr(module_id)
                for module_id, module_spec in specs.items()
                if module_spec._get_model_config().get("use_lstm")
            ]
        if recurrent:
            raise ConfigError(
                f"{name}: use_lstm=True in a multi-agent config (modules: "
                f"{', '.join(recurrent)}): recurrent torch modules train in single-agent runs "
                "here; the multi-agent EnvRunners carry no recurrent state (stack frames with "
                "the FrameStacking connector, or leave use_lstm=False)",
                RECURRENT_MULTI_AGENT,
            )

    def _build_torch_module(self, spaces: Any, seed: int | None, inference_only: bool) -> Any:
        from trainer.torch_rl import require_torch

        require_torch(f"{type(self).__name__}: a torch RLModule")
        from trainer.torch_rl.runner_view import build_torch_module

        spec = self.__dict__.get("rl_module_spec")
        module_class = getattr(spec, "module_class", None) or self.default_torch_module_class()
        # The config's model config and the algorithm's settings its module reads (RLlib's
        # auto-includes: DQN's dueling, double_q), under the spec's own (a user's module reads
        # its own keys).
        given: Any = getattr(spec, "model_config", None) or {}
        spec_model: dict = (
            dict(given) if isinstance(given, dict) else dataclasses.asdict(given)  # a dataclass
        )
        return build_torch_module(
            module_class,
            spaces,
            {**self.model, **self._model_config_auto_includes, **spec_model},
            observation_space=getattr(spec, "observation_space", None),
            action_space=getattr(spec, "action_space", None),
            inference_only=inference_only,
            seed=seed,
            catalog_class=getattr(spec, "catalog_class", None),
        )

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
        }
        self._take_old_names("evaluation", unknown, values)
        self._reject_unknown("evaluation", unknown, values)
        if isinstance(evaluation_config, dict):
            self._check_evaluation_config("evaluation", evaluation_config)
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

    def framework(self, framework: str = NotProvided, **unknown: Any) -> Self:
        """The networks' framework: "numpy" (the default numpy modules and learners) or
        "torch" (RLlib's default torch modules and torch learners; the torch extra). "tf2"
        and "tf" are accepted so RLlib scripts run unchanged, and run on numpy (`build()`
        warns once). TF and torch options are accepted with a warning at build when set."""
        self._reject_unknown("framework", unknown, ["framework"])
        return self._set(
            "framework", {"framework_str": framework}, spelled={"framework_str": "framework"}
        )

    def api_stack(
        self,
        *,
        enable_rl_module_and_learner: bool = NotProvided,
        enable_env_runner_and_connector_v2: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """RLlib's new API stack (RLModule, Learner, EnvRunner, connectors) is the one that runs
        here. Older scripts that switch to RLlib's old stack (`False`) are accepted with one
        warning and run on the new stack, where the old stack's callback signatures, config
        keys and result keys work (`trainer.compat`); both settings then still read True,
        since that is what runs."""
        values = {
            "enable_rl_module_and_learner": enable_rl_module_and_learner,
            "enable_env_runner_and_connector_v2": enable_env_runner_and_connector_v2,
        }
        self._reject_unknown("api_stack", unknown, values)
        if any(value is False for value in values.values()):
            # One warning per process, whichever of the two settings a script turns off.
            warn_once(
                "api_stack(...=False) (RLlib's old API stack)",
                "RLlib's new API stack, which runs here either way (the old stack's "
                "callback signatures, config keys and result keys work on it), and "
                "remove the call",
            )
        return self._set(
            "api_stack", {name: True if value is False else value for name, value in values.items()}
        )

    def learners(
        self,
        *,
        learner_class: type | None = NotProvided,
        learner_config_dict: dict | None = NotProvided,
        **settings: Any,
    ) -> Self:
        """RLlib's learner settings (`num_learners`, `num_gpus_per_learner`, ...): there is one
        learner in the main process; other values warn at build. `learner_class` is
        `training(learner_class=...)`'s (RLlib takes it in both)."""
        self._reject_unknown("learners", settings, [])
        if learner_class is not NotProvided:
            self.training(learner_class=learner_class)
        if learner_config_dict is not NotProvided:
            self.training(learner_config_dict=learner_config_dict)
        return self

    def resources(self, **settings: Any) -> Self:
        """RLlib's resource settings (`num_gpus`, `placement_strategy`, ...): no effect on one
        machine; values other than RLlib's defaults warn at build."""
        self._reject_unknown("resources", settings, [])
        return self

    def multi_agent(
        self,
        *,
        policies: Any = NotProvided,
        policy_map_capacity: int = NotProvided,
        policy_mapping_fn: Callable[..., Any] = NotProvided,
        policies_to_train: Any = NotProvided,
        policy_states_are_swappable: bool = NotProvided,
        observation_fn: Callable[..., Any] | None = NotProvided,
        count_steps_by: str = NotProvided,
        **unknown: Any,
    ) -> Self:
        """RLlib's multi-agent settings. `policies` is a set, list or tuple of policy (module)
        ids, or a dict `{policy_id: PolicySpec(...)}` (or RLlib's 4-tuples); a collection
        becomes `{policy_id: PolicySpec()}` and None the single "default_policy".
        `policy_mapping_fn(agent_id, episode, **kwargs)` names each agent's policy;
        `policies_to_train` is None (all), a collection of ids or a callable `(policy_id,
        batch) -> bool`; `count_steps_by` is "env_steps" or "agent_steps".
        `policy_map_capacity`, `policy_states_are_swappable` and `observation_fn` are RLlib's
        old-stack settings (accepted; a value other than RLlib's default warns at build).
        `algorithm_config_overrides_per_module` (RLlib's older place) is passed on to
        `rl_module()`, with a warning."""
        if "algorithm_config_overrides_per_module" in unknown:
            warn_once(
                "multi_agent(algorithm_config_overrides_per_module=...)",
                "rl_module(algorithm_config_overrides_per_module=...)",
            )
            self.rl_module(
                algorithm_config_overrides_per_module=unknown.pop(
                    "algorithm_config_overrides_per_module"
                )
            )
        old_stack = {
            "policy_map_capacity": policy_map_capacity,
            "policy_states_are_swappable": policy_states_are_swappable,
            "observation_fn": observation_fn,
        }
        unknown.update({k: v for k, v in old_stack.items() if v is not NotProvided})
        values = {
            "policies": policies,
            "policy_mapping_fn": policy_mapping_fn,
            "policies_to_train": policies_to_train,
            "count_steps_by": count_steps_by,
        }
        self._reject_unknown("multi_agent", unknown, values)
        if policies is None:  # RLlib's default: the one "default_policy"
            values["policies"] = {DEFAULT_POLICY_ID: PolicySpec()}
        self._check_policy_configs("multi_agent", policies)
        self._set("multi_agent", values)
        if policies is not NotProvided and policies is not None:
            # Stored as RLlib's unified form: {policy_id: PolicySpec}.
            self.policies = as_policy_specs(policies)
        if isinstance(policies_to_train, (set, frozenset, list, tuple)) and not policies_to_train:
            warnings.warn(
                f"{type(self).__name__}.multi_agent(policies_to_train={policies_to_train!r}) is "
                "empty: no policy will be trained",
                UserWarning,
                stacklevel=2,
            )
        return self

    def experimental(
        self,
        *,
        _torch_lr_scheduler_classes: list | dict | None = NotProvided,
        **settings: Any,
    ) -> Self:
        """RLlib's experimental switches: `_torch_lr_scheduler_classes` is a setting; the others
        are accepted without effect (warned at build where set to another value than RLlib's
        default)."""
        self._reject_unknown("experimental", settings, ["_torch_lr_scheduler_classes"])
        return self._set(
            "experimental", {"_torch_lr_scheduler_classes": _torch_lr_scheduler_classes}
        )

    def offline_data(self, **settings: Any) -> Self:
        """RLlib's offline-data settings (`input_`, `output`, the Ray Data read and write
        options, ...): offline RL is not supported here. RLlib's defaults (sample from the env,
        write nothing) are accepted; reading or writing recorded data is refused at the call,
        and the other options warn at build when set."""
        self._reject_unknown("offline_data", settings, [])
        return self

    def python_environment(
        self,
        *,
        extra_python_environs_for_driver: dict = NotProvided,
        extra_python_environs_for_worker: dict = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Environment variables for the main process (set when the Algorithm is built) and
        for each EnvRunner worker process (set before its envs are made)."""
        values = {
            "extra_python_environs_for_driver": extra_python_environs_for_driver,
            "extra_python_environs_for_worker": extra_python_environs_for_worker,
        }
        self._reject_unknown("python_environment", unknown, values)
        return self._set("python_environment", values)

    # -- RLlib's dict-like and state accessors --------------------------------------------------
    def keys(self) -> KeysView[str]:
        """The setting names (`to_dict().keys()`, as RLlib's)."""
        return self.to_dict().keys()

    def values(self) -> ValuesView[Any]:
        return self.to_dict().values()

    def items(self) -> ItemsView[str, Any]:
        return self.to_dict().items()

    def pop(self, key: str, default: Any = None) -> Any:
        """RLlib's `pop`: reads the setting (the config is not changed), or `default`."""
        return self.get(key, default)

    def get_state(self) -> dict[str, Any]:
        """The config as a dict with its class under "class" (`from_state` rebuilds it)."""
        return {**self.to_dict(), "class": type(self)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> AlgorithmConfig:
        """The config `get_state()` described (of the class it names)."""
        if not isinstance(state, dict):
            raise ConfigError(
                f"{cls.__name__}.from_state({state!r}): give the dict get_state() returned"
            )
        state = dict(state)
        config_cls = state.pop("class", cls)
        return config_cls.from_dict(state)

    def serialize(self) -> dict[str, Any]:
        """The settings as plain JSON data (code as "module:name" strings), as `params.json`
        holds them."""
        from trainer.checkpoints.config_data import encode

        unstored: list[str] = []  # values no JSON can hold are left out
        return encode(self.to_dict(), "config", unstored)

    @property
    def train_batch_size_per_learner(self) -> int:
        """`train_batch_size` (there is one learner)."""
        return self.train_batch_size

    @train_batch_size_per_learner.setter
    def train_batch_size_per_learner(self, value: int) -> None:
        self.training(train_batch_size=value)

    @property
    def total_train_batch_size(self) -> int:
        """Env steps per training step over all learners: `train_batch_size` (one learner)."""
        return self.train_batch_size

    @property
    def is_online(self) -> bool:
        """Samples come from envs (always here: offline data is not supported)."""
        return True

    @property
    def is_offline(self) -> bool:
        return False

    def validate_train_batch_size_vs_rollout_fragment_length(self) -> None:
        """RLlib's check: with a fixed `rollout_fragment_length`, whole rounds of sampling
        (runners x sub-envs x fragment) must come within 10% of `train_batch_size`."""
        if self.rollout_fragment_length == "auto" or self.in_evaluation:
            return
        per_round = (
            max(self.num_env_runners, 1)
            * self.num_envs_per_env_runner
            * self.rollout_fragment_length
        )
        rounds = max(1, -(-self.train_batch_size // per_round))
        if per_round * rounds - self.train_batch_size > 0.1 * self.train_batch_size:
            suggested = self.train_batch_size // (
                self.num_envs_per_env_runner * max(self.num_env_runners, 1)
            )
            raise ConfigError(
                f"{type(self).__name__}: train_batch_size={self.train_batch_size} (or a value "
                f"10% off of it) cannot be reached in whole sampling rounds of "
                f"{per_round} env steps (num_env_runners={self.num_env_runners} x "
                f"num_envs_per_env_runner={self.num_envs_per_env_runner} x "
                f"rollout_fragment_length={self.rollout_fragment_length}); set "
                f'rollout_fragment_length to "auto" or to {suggested}'
            )

    @staticmethod
    def DEFAULT_AGENT_TO_MODULE_MAPPING_FN(agent_id: Any, episode: Any) -> str:  # noqa: N802
        """RLlib's default agent-to-module mapping: every agent to "default_policy"."""
        return DEFAULT_POLICY_ID

    @staticmethod
    def DEFAULT_POLICY_MAPPING_FN(
        aid: Any,
        episode: Any,
        worker: Any,  # noqa: N802
        **kwargs: Any,
    ) -> str:
        """RLlib's default policy mapping: every agent to "default_policy" (the default
        `policy_mapping_fn` does the same)."""
        return DEFAULT_POLICY_ID

    def ignored_settings_warnings(self) -> list[str]:
        """Emits one `IgnoredSettingWarning` per RLlib setting this config was given that has
        no effect here (and for a framework other than numpy); returns the messages."""
        given = dict(self._rllib_given)
        if self.backend == "ray":  # Ray actors take these resources
            for name in RAY_RESOURCE_SETTINGS:
                given.pop(name, None)
        if self.uses_torch:  # a torch learner runs on the GPU it asks for
            given.pop("num_gpus_per_learner", None)
        messages = warn_ignored(type(self).__name__, given, self._rllib_rules())
        if self.framework_str not in ("numpy", "torch"):
            message = (
                f"{type(self).__name__}.framework({self.framework_str!r}) has no effect: "
                "the networks and learners are numpy here (or torch, with "
                "framework('torch')); TensorFlow is not available"
            )
            warnings.warn(message, IgnoredSettingWarning, stacklevel=2)
            messages.append(message)
        return messages

    # -- whole-config operations ----------------------------------------------------------------
    def validate(self) -> None:
        """Checks the settings together; raises ConfigError on the first problem."""
        name = type(self).__name__
        for setting, values in self.grid_settings().items():
            raise ConfigError(
                f"{name}: {setting}=grid_search({values!r}): one Algorithm runs one value; "
                "search with trainer.tune.Tuner (or run_rllib_example_script_experiment, one "
                "trial per value)"
            )
        for setting, domain in self.search_settings().items():
            raise ConfigError(
                f"{name}: {setting}={domain!r} is a Ray Tune search space: one Algorithm runs "
                "one value; search with trainer.tune.Tuner(param_space=config)"
            )
        # Each setting again: a value may have come in without its builder's check (an
        # unpickled config, a `config.__dict__` write).
        for setting, spec in self._settings().items():
            value = getattr(self, setting)
            problem = spec.check(value)
            if problem is not None:
                raise ConfigError(
                    f"{name}: {setting}={value!r}: {setting} must be {problem} "
                    f"(the setting of {spec.method}())"
                )
        try:
            check_env_spec(self.env)
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
        if (
            isinstance(self.env, type)
            and issubclass(self.env, MultiAgentEnv)
            and not self.is_multi_agent
            and self.env_runner_cls is None
        ):
            # Before any EnvRunner starts (an env from a creator: when the runner makes it).
            raise ConfigError(f"{name}: {multi_agent_env_needs_policies(self.env.__qualname__)}")
        if self.uses_torch:
            self._check_torch_config(name)
        user_module = getattr(self.__dict__.get("rl_module_spec"), "module_class", None)
        if not _is_torch_module_class(user_module):  # a user's module reads its own keys
            try:
                check_model_config(
                    self.model, setting=f"{name} model config", numpy=not self.uses_torch
                )
                if not self.uses_torch:  # the numpy networks cannot convolve
                    refuse_torch_only_keys(self.model, setting=f"{name} model config")
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        self._check_worker_processes_fit(name)
        if self.minibatch_size is not None and self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"{name}: minibatch_size={self.minibatch_size} must be <= train_batch_size="
                f"{self.train_batch_size} (each epoch splits the train batch into minibatches)"
            )
        if self.evaluation_config:
            self._check_evaluation_config("validate", self.evaluation_config)
        if self.algorithm_config_overrides_per_module:
            self._check_module_overrides("validate", self.algorithm_config_overrides_per_module)
        self._check_policy_configs("validate", self.policies)
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
        try:
            check_exploration_config(
                self.get_exploration_config(), setting=f"{name} exploration_config"
            )
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
        if self.env_to_module_connector is not None and self.observation_filter != "NoFilter":
            raise ConfigError(
                f"{name}: env_to_module_connector and observation_filter="
                f"{self.observation_filter!r} are both given; add the MeanStdFilter piece to the "
                "connector's list instead"
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
        self._check_callback_signatures()
        self._check_callbacks_travel()
        if isinstance(self.policies_to_train, (set, frozenset, list, tuple)):
            for policy_id in self.policies_to_train:
                if policy_id not in self.policies:
                    raise ConfigError(
                        f"{name}: multi_agent(policies_to_train=...) names policy "
                        f"{policy_id!r}, which is not in multi_agent(policies=...) "
                        f"({sorted(map(str, self.policies))})"
                    )
        self._refuse_multi_agent_training(name)

    def _check_worker_processes_fit(self, name: str) -> None:
        """Refuses more EnvRunner worker processes than this machine's memory could hold even
        at their smallest, before any starts (a typo such as num_env_runners=100000 would
        otherwise start processes until the machine runs out of memory)."""
        if self.backend != "processes":
            return  # Ray places its actors on the cluster
        workers = self.num_env_runners + self.evaluation_num_env_runners
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
            return
        if workers * WORKER_PROCESS_MIN_BYTES > memory:
            raise ConfigError(
                f"{name}: num_env_runners={self.num_env_runners} and "
                f"evaluation_num_env_runners={self.evaluation_num_env_runners} ask for "
                f"{workers} worker processes on this machine, which need at least "
                f"{workers * WORKER_PROCESS_MIN_BYTES / 2**30:.0f} GiB of memory "
                f"({WORKER_PROCESS_MIN_BYTES // 2**20} MiB each); it has "
                f"{memory / 2**30:.0f} GiB. Use at most "
                f'{memory // WORKER_PROCESS_MIN_BYTES} (or backend="ray" for a cluster)'
            )

    #: Whether this algorithm trains multi-agent configs (PPO and DQN do).
    _MULTI_AGENT_TRAINING = False

    def _refuse_multi_agent_training(self, name: str) -> None:
        """A multi-agent config of an algorithm that does not train one yet, or with a
        setting the multi-agent EnvRunner does not run yet: one clear error, before any
        worker starts."""
        if self._MULTI_AGENT_TRAINING:
            if self.is_multi_agent:
                self._refuse_multi_agent_settings(name)
            elif self._has_multi_rl_module_spec():
                raise ConfigError(
                    f"{name}: rl_module(rl_module_spec=MultiRLModuleSpec(...)) needs a "
                    "multi-agent config: add multi_agent(policies=..., policy_mapping_fn=...) "
                    "naming the spec's modules",
                    MULTI_AGENT,
                )
            return
        if self.is_multi_agent:
            asked = f"multi_agent(policies={sorted(map(str, self.policies))})"
        elif self._has_multi_rl_module_spec():
            asked = "rl_module(rl_module_spec=MultiRLModuleSpec(...))"
        else:
            return
        raise ConfigError(
            f"{name}: {self.algo_class.__name__ if self.algo_class else 'this algorithm'} "
            f"does not train a multi-agent config yet: the config asks for {asked}; PPO and DQN "
            "train multi-agent configs",
            MULTI_AGENT,
        )

    def _refuse_multi_agent_settings(self, name: str) -> None:
        unsupported = {
            # Env-to-module connectors: FlattenObservations(multi_agent=True) pieces run (the
            # EnvRunner checks what the factory makes); a filter would be a stateful piece.
            f"env_runners(observation_filter={self.observation_filter!r})": (
                self.observation_filter not in (None, "NoFilter")
            ),
            "environment(env_task_fn=...)": self.env_task_fn is not None,
            f"env_runners(gym_env_vectorize_mode={self.gym_env_vectorize_mode!r})": (
                normalized_vectorize_mode(self.gym_env_vectorize_mode) != "sync"
            ),
        }
        for setting, given in unsupported.items():
            if given:
                raise ConfigError(
                    f"{name}: {setting} is not available for multi-agent runs yet (the "
                    "MultiAgentEnvRunner steps its MultiAgentEnvs in order, without stateful "
                    "connector pieces or env tasks); leave it out",
                    MULTI_AGENT,
                )

    def callback_labels(self) -> list[tuple[str, Any]]:
        """(label, callback) for every configured callback class and callable, the label as
        the config call spells it (`callbacks_class=MyCallbacks`, `callbacks(on_x=fn)`)."""
        items: list[tuple[str, Any]] = [
            (f"callbacks_class={cls.__qualname__}", cls) for cls in self.callback_classes()
        ]
        for event, fns in self.callbacks_on.items():
            items += [(f"callbacks({event}={callable_name(fn)})", fn) for fn in fns]
        return items

    def _check_callback_signatures(self) -> None:
        """`callbacks()` checks what it is given; this catches classes and callables set
        another way (`config.callbacks_class = MyCallbacks`)."""
        for cls in self.callback_classes():
            if isinstance(cls, type):
                label = f"{type(self).__name__}.callbacks_class={cls.__qualname__}"
                check_callback_class(cls, label)
        for event, fns in self.callbacks_on.items():
            for fn in fns:
                check_event_callable(event, fn, f"{type(self).__name__}.callbacks({event}=...)")

    def _check_callbacks_travel(self) -> None:
        """Every callback must survive cloudpickle: it is sent to each EnvRunner process."""
        for label, obj in self.callback_labels():
            try:
                travel_dumps(obj)
            except Exception as error:
                raise ConfigError(
                    f"{type(self).__name__}.{label} cannot be sent to the EnvRunner processes: "
                    f"cloudpickle failed with {type(error).__name__}: {error}. Callbacks must not "
                    "hold locks, open files, sockets or other process-bound objects; create them "
                    "inside the callback instead"
                ) from error

    def callback_classes(self) -> list[type]:
        classes = self.callbacks_class
        classes = classes if isinstance(classes, (list, tuple)) else [classes]
        return [c for c in classes if c is not None]

    def env_runner_callables(self) -> dict[str, list[Callable]]:
        return {e: fns for e, fns in self.callbacks_on.items() if e in ENV_RUNNER_EVENTS}

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        """Steps per sub-env per `sample()` call. "auto" splits `train_batch_size` over runners
        and sub-envs, giving the remainder to the lowest-indexed runners (as RLlib does)."""
        if self.rollout_fragment_length != "auto":
            return self.rollout_fragment_length
        runners = self.num_env_runners or 1
        per_runner_env = self.train_batch_size / (self.num_envs_per_env_runner * runners)
        length = int(per_runner_env)
        if length != per_runner_env:
            remainder = self.train_batch_size - length * self.num_envs_per_env_runner * runners
            if (max(worker_index, 1) - 1) * self.num_envs_per_env_runner < remainder:
                length += 1
        return max(length, 1)

    def build(self, env: Any = None) -> Algorithm:
        """Validates the config and builds its Algorithm (EnvRunner processes included)."""
        return self.build_algo(env)

    def build_algo(
        self, env: Any = None, logger_creator: Any = None, use_copy: bool = True
    ) -> Algorithm:
        """Validates the config and builds its Algorithm (EnvRunner processes included).
        `logger_creator` is Tune's (stored, without effect here); the Algorithm always works
        on a frozen copy of this config, whatever `use_copy` says."""
        if env is not None:
            self.environment(env)
        if logger_creator is not None:
            self.debugging(logger_creator=logger_creator)
        if self.algo_class is None:
            raise ConfigError(
                f"{type(self).__name__} has no algorithm class to build; use "
                "PPOConfig or another algorithm's config"
            )
        return self.algo_class(config=self)

    def copy(self, copy_frozen: bool | None = None) -> Self:
        """A deep copy (callbacks and env creators shared). Unfrozen unless `copy_frozen`."""
        clone = object.__new__(type(self))
        object.__setattr__(clone, "_frozen", False)
        for name, value in self.__dict__.items():
            if name == "_frozen":
                continue
            if name in ("callbacks_class", "env", "env_task_fn", "algo_class"):
                object.__setattr__(clone, name, value)
            elif name == "callbacks_on":
                object.__setattr__(clone, name, {k: list(v) for k, v in value.items()})
            else:
                object.__setattr__(clone, name, copy.deepcopy(value))
        if copy_frozen:
            clone.freeze()
        return clone

    def freeze(self) -> Self:
        """Makes the config read-only (a built Algorithm's config is frozen)."""
        object.__setattr__(self, "_frozen", True)
        return self

    @property
    def is_frozen(self) -> bool:
        return self._frozen

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name (callbacks included: `callbacks_class` and `callbacks_on`)."""
        result = {name: copy.copy(getattr(self, name)) for name in self._settings()}
        result["callbacks_class"] = self.callbacks_class
        result["callbacks_on"] = {k: list(v) for k, v in self.callbacks_on.items()}
        result["in_evaluation"] = self.in_evaluation
        # An RLModuleSpec is folded into "model" and the spaces (rl_module), which carry it; a
        # MultiRLModuleSpec is kept as it is.
        result.update(
            {
                name: copy.copy(getattr(self, name))
                for name in self._rllib_method_of()
                if name != "rl_module_spec"
            }
        )
        # A torch module's class is not in "model": its spec is kept too (a checkpoint's
        # config must rebuild that module, not the default one).
        spec = self.__dict__.get("rl_module_spec")
        if self._has_multi_rl_module_spec() or _is_torch_module_class(
            getattr(spec, "module_class", None)
        ):
            result["rl_module_spec"] = copy.deepcopy(spec)
        return result

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any]) -> Self:
        """A config of this class from a dict of setting names (as `to_dict` writes them)."""
        config = cls()
        config.update_from_dict(config_dict)
        return config

    def update_from_dict(self, config_dict: dict[str, Any]) -> Self:
        """Sets each setting named in `config_dict`. RLlib's older key names (`num_workers`,
        `num_sgd_iter`, `sgd_minibatch_size`, ...) are accepted with one warning each; the keys
        RLlib's `to_dict()` writes (`lambda`, `framework`, `callbacks`) without."""
        if not isinstance(config_dict, dict):
            raise ConfigError(
                f"{type(self).__name__}.from_dict({config_dict!r}): give a dict of setting "
                f"names to values, not a {type(config_dict).__name__}"
            )
        config_dict = translate_config_dict(config_dict)
        if "rl_module_spec" in config_dict:
            config_dict = dict(config_dict)
            self.rl_module(rl_module_spec=config_dict.pop("rl_module_spec"))
        multi_agent_names = ("policies", "policy_mapping_fn", "policies_to_train", "count_steps_by")
        if "multiagent" in config_dict or any(k in config_dict for k in multi_agent_names):
            config_dict = dict(config_dict)
            # RLlib's older nested "multiagent" dict, then the top-level keys (which win).
            nested = config_dict.pop("multiagent", None) or {}
            if not isinstance(nested, dict):
                raise ConfigError(
                    f"{type(self).__name__}.from_dict(multiagent={nested!r}): RLlib's older "
                    "multiagent key holds a dict of multi_agent() settings"
                )
            multi_agent = dict(nested)
            multi_agent.update(
                {k: config_dict.pop(k) for k in multi_agent_names if k in config_dict}
            )
            self.multi_agent(**multi_agent)
        if "algorithm_config_overrides_per_module" in config_dict:
            config_dict = dict(config_dict)
            overrides = config_dict.pop("algorithm_config_overrides_per_module")
            self._set("from_dict", {"algorithm_config_overrides_per_module": {}})
            self.rl_module(algorithm_config_overrides_per_module=overrides)
        settings = self._settings()
        rllib_names = self._rllib_method_of()
        extra = {"callbacks_class", "callbacks_on", "in_evaluation", "callbacks"}
        self._take_rllib_settings(
            "from_dict", {k: v for k, v in config_dict.items() if k in rllib_names}
        )
        unknown = {
            k: v
            for k, v in config_dict.items()
            if k not in settings and k not in extra and k not in rllib_names
        }
        self._reject_unknown("from_dict", unknown, list(settings) + sorted(extra))
        values = {k: v for k, v in config_dict.items() if k in settings}
        if "model" in values:
            self._set_model("from_dict", "model", values.pop("model"))
        if "env" in values and values["env"] is not None:
            self.environment(values.pop("env"))
        if "env_config" in values:  # merged into the current one, as environment() does
            self.environment(env_config=values.pop("env_config"))
        stack = {
            k: values.pop(k)
            for k in ("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2")
            if k in values
        }
        if stack:
            self.api_stack(**stack)  # the old stack's False: one warning, the new stack runs
        self._set("from_dict", values)
        if "callbacks_class" in config_dict or "callbacks" in config_dict:
            self.callbacks(config_dict.get("callbacks_class", config_dict.get("callbacks")))
        if "callbacks_on" in config_dict:
            self.callbacks(**config_dict["callbacks_on"])
        if "in_evaluation" in config_dict:
            self.in_evaluation = bool(config_dict["in_evaluation"])
        return self

    @classmethod
    def overrides(cls, **kwargs: Any) -> dict[str, Any]:
        """A dict of settings to override elsewhere (for example `evaluation_config`); the names
        and values are checked here."""
        settings = cls._settings()
        rllib_names = cls._rllib_method_of()
        probe = cls()
        kwargs = dict(kwargs)
        # RLlib takes any attribute name, a builder method's too (`overrides(exploration=
        # False)`): applying it shadows the method and changes nothing. So here: a warning,
        # and the name is dropped.
        for name in [k for k in kwargs if k not in settings and k not in rllib_names]:
            if not name.startswith("_") and callable(getattr(probe, name, None)):
                kwargs.pop(name)
                warnings.warn(
                    f"{cls.__name__}.overrides({name}=...): {name} is a builder method, not "
                    "a setting; it has no effect (as in RLlib). For greedy actions, use "
                    "explore=False",
                    IgnoredSettingWarning,
                    stacklevel=2,
                )
        probe._take_rllib_settings(
            "overrides", {k: v for k, v in kwargs.items() if k in rllib_names}
        )
        unknown = {k: v for k, v in kwargs.items() if k not in settings and k not in rllib_names}
        probe._reject_unknown("overrides", unknown, settings)
        probe._set("overrides", {k: v for k, v in kwargs.items() if k in settings})
        return dict(kwargs)

    def __getitem__(self, key: str) -> Any:
        if (
            key in self._settings()
            or key in self._rllib_method_of()
            or key in ("callbacks_class", "callbacks_on", "in_evaluation")
        ):
            return getattr(self, key)
        raise KeyError(f"{type(self).__name__} has no setting {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        return key in self._settings() or key in self._rllib_method_of()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.env!r}, num_env_runners={self.num_env_runners})"


def _callbacks_on(event: str) -> property:
    def read(self: AlgorithmConfig) -> Any:
        fns = self.callbacks_on.get(event)
        return None if not fns else (fns[0] if len(fns) == 1 else list(fns))

    read.__doc__ = f"RLlib's `callbacks_on_{event[3:]}`: what callbacks({event}=...) set."
    return property(read)


# RLlib keeps each event's callables in `config.callbacks_on_<event>`.
for _event in EVENTS:
    setattr(AlgorithmConfig, f"callbacks_{_event}", _callbacks_on(_event))

_make_all_or_nothing(AlgorithmConfig)
document_builders(AlgorithmConfig)
