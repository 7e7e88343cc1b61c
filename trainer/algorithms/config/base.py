"""The mechanics every section of `AlgorithmConfig` shares: how a value is checked and stored
(`_set`, and `__setattr__` for `config.lr = ...`), how a builder call's other keyword arguments
are taken (RLlib's older names and its settings without an effect here, `rllib_names`) or
refused, and the helpers around Tune's search spaces.

Each section (`trainer.algorithms.config.<section>`) is a `ConfigBase` subclass holding one
builder method, the table of its settings (`settings.settings_of`) and its part of `validate()`;
`AlgorithmConfig` is all of them together.
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

import numpy as np

from trainer.algorithms.config.rllib_names import (
    RAY_RESOURCE_SETTINGS,
    kind_problem,
    sort_arguments,
)
from trainer.algorithms.settings import (
    BUILDER_METHODS,
    Setting,
    UnusualSettingWarning,
    unusual_value_message,
)
from trainer.compat.rllib_settings import (
    IgnoredSettingWarning,
    NoEffect,
    Unsupported,
    methods_of,
    rule,
    rules_of,
    warn_ignored,
)
from trainer.errors import (
    ConfigError,
    FrozenConfigError,
    UnknownOverrideError,
    UnknownSettingError,
    refuse_placeholder,
)

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class _NotProvided:
    def __repr__(self) -> str:
        return "NotProvided"


#: Default of every builder argument: "leave this setting as it is".
NotProvided: Any = _NotProvided()


#: The algorithms' registry: its entries name each algorithm's classes, which import the config,
#: so the config reaches it by this import path where it asks it something (the default
#: algorithm's config, the algorithms' names, which of their configs set a flag).
ALGORITHM_REGISTRY = "trainer.algorithms.registry"


def algorithm_registry() -> Any:
    """The registry module (`ALGORITHM_REGISTRY`), imported by its path."""
    return importlib.import_module(ALGORITHM_REGISTRY)


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


def search_options(value: Any) -> list[Any]:
    """The values of a setting to check when it is set: a grid's, a `tune.choice`'s
    categories, none of another Tune domain (its trials' values are checked at build)."""
    if is_grid_search(value):
        return list(value["grid_search"])
    if is_tune_domain(value):
        return list(getattr(value, "categories", None) or [])
    return [value]


class Flag:
    """A truth value that reads the same as an attribute or called: RLlib has had
    `config.is_multi_agent` both as a method and as a property."""

    def __init__(self, value: bool):
        self._value = bool(value)

    def __bool__(self) -> bool:
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        return bool(other) == self._value if isinstance(other, (bool, Flag)) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


def mergeable(value: Any) -> TypeGuard[dict]:
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
        if mergeable(value) and mergeable(current):
            merged[key] = deep_updated(current, value)
        else:
            merged[key] = value
    return merged


def is_str(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


#: The calls that change a config: a refused one (any exception) leaves it as it was.
ALL_OR_NOTHING_METHODS = (
    *BUILDER_METHODS,
    "learners",
    "resources",
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


class ConfigBase:
    """What the sections of `AlgorithmConfig` share: the settings table of the composed class,
    RLlib's rules, and the checked setting of values.

    Each section declares its settings' types as class annotations (`AlgorithmConfig.__init__`
    sets the values from the table; tests/test_types.py keeps the two equal). A value may also
    be Tune's `{"grid_search": [...]}` until `build()` refuses it."""

    #: name -> Setting: the settings every algorithm has (`AlgorithmConfig` puts its sections'
    #: tables together here); subclasses add theirs in `_ALGO_SETTINGS`.
    _BASE_SETTINGS: dict[str, Setting] = {}
    #: Subclass hook: extra settings (an algorithm's config declares each in its class body,
    #: `settings.setting`, and its creation collects them here, after its parent's) and
    #: changed defaults.
    _ALGO_SETTINGS: dict[str, Setting] = {}
    _DEFAULT_OVERRIDES: dict[str, Any] = {}
    _frozen: bool

    if TYPE_CHECKING:  # set by `AlgorithmConfig.__init__`, read by every section
        _given: set[str]
        _rllib_given: dict[str, Any]

        # What the RLlib-names part reads of other sections.
        backend: str
        framework_str: str

        @property
        def uses_torch(self) -> bool: ...

        def data_parallel_refusal(self) -> str | None: ...  # the learners section's

        def __getitem__(self, key: str) -> Any: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _make_all_or_nothing(cls)  # a refused call leaves the config as it was

    @classmethod
    def _settings(cls) -> dict[str, Setting]:
        return {**cls._BASE_SETTINGS, **cls._ALGO_SETTINGS}

    #: Settings read through a property that answers more than the value given (RLlib's
    #: `learner_class`: the given class, else the algorithm's default; `is_atari`: the given
    #: flag, else what the env's id says): setting -> the attribute that keeps the value
    #: given, which `to_dict()` and the checks read.
    _GIVEN_VALUE_ATTRIBUTES: ClassVar[dict[str, str]] = {
        "learner_class": "_learner_class",
        "is_atari": "_is_atari",
    }

    def _given_value(self, name: str) -> Any:
        """The value of setting `name` as given (its default when none was): what the
        setting holds, not what a property reads past it (see `_GIVEN_VALUE_ATTRIBUTES`)."""
        attribute = self._GIVEN_VALUE_ATTRIBUTES.get(name)
        if attribute is not None:
            return self.__dict__.get(attribute)
        return getattr(self, name)

    #: This algorithm's own RLlib settings that have no effect here, or are refused:
    #: builder method -> {setting: rule}, merged over `trainer.compat.rllib_settings`'s table.
    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def _rllib_rules(cls) -> dict[str, dict[str, Any]]:
        """Builder method -> {RLlib setting: NoEffect | Unsupported} for this class."""
        return rules_of(cls._ALGO_RLLIB_SETTINGS)

    @classmethod
    def _rllib_method_of(cls) -> dict[str, str]:
        return methods_of(cls._rllib_rules())

    # -- the mechanics of setting ------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise FrozenConfigError(
                f"Cannot set attribute ({name}={value!r}) of an already frozen AlgorithmConfig "
                f"({type(self).__name__}): it belongs to a built Algorithm; change a copy "
                "instead: config.copy()"
            )
        # An algorithm's own table first: it may redefine a shared setting (SAC's lr).
        setting = type(self)._ALGO_SETTINGS.get(name) or self._BASE_SETTINGS.get(name)
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

    def _set(
        self, method: str, values: dict[str, Any], spelled: dict[str, str] | None = None
    ) -> Self:
        """Checks and stores every provided value of a builder call; `spelled` names the
        builder's argument where it is not the setting's name (in the error message)."""
        settings = self._settings()
        for name, value in values.items():
            if value is NotProvided:
                continue
            argument = (spelled or {}).get(name, name)
            refuse_placeholder(value, f"{type(self).__name__}.{method}({argument}=...)")
            # Tune's grid_search marker: every value is checked now; the example driver runs
            # one trial per value (grid_settings()), and build() refuses the marker itself.
            # Another Tune search space: its values are checked when a trial's config is built
            # (a tune.choice's categories now).
            for option in search_options(value):
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
            name: self._given_value(name)
            for name in self._settings()
            if is_search_space(self._given_value(name))
        }

    def grid_settings(self) -> dict[str, list]:
        """The settings given as Tune's `grid_search([...])`, each with its values."""
        return {
            name: list(self._given_value(name)["grid_search"])
            for name in self._settings()
            if is_grid_search(self._given_value(name))
        }

    def _validate_values(self, name: str) -> None:
        """`validate()`'s first part: no search space is left, and each setting's value passes
        its check again (it may have come in without its builder's check: an unpickled config,
        a `config.__dict__` write)."""
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
        for setting, spec in self._settings().items():
            value = self._given_value(setting)
            problem = spec.check(value)
            if problem is not None:
                raise ConfigError(
                    f"{name}: {setting}={value!r}: {setting} must be {problem} "
                    f"(the setting of {spec.method}())"
                )

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
            kind = kind_problem(value, setting_rule.default)
            # None, where RLlib takes it for a setting with no effect here, whatever the
            # default's kind.
            if kind is not None and not (
                value is None and isinstance(setting_rule, NoEffect) and setting_rule.takes_none
            ):
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

    def _reject_unknown(
        self,
        method: str,
        arguments: dict[str, Any],
        allowed: Collection[str],
        values: dict[str, Any] | None = None,
    ) -> None:
        """The edge of a builder call (or of a dict): its keyword `arguments` beyond its own,
        sorted in one pass (`rllib_names.sort_arguments`). RLlib's older names of the settings
        in `values` (the builder's own) are moved into `values`; RLlib's settings without an
        effect here are taken (`_take_rllib_settings`); any other name raises
        UnknownSettingError, with the closest of `allowed` and RLlib's names as a hint."""
        rllib_names = self._rllib_rules().get(method, {})
        renamed, rllib, unknown = sort_arguments(method, arguments, values or (), rllib_names)
        if values is not None:
            values.update(renamed)
        self._take_rllib_settings(method, rllib)
        if not unknown:
            return
        allowed = list(allowed) + list(rllib_names)
        name = next(iter(unknown))
        close = difflib.get_close_matches(name, list(allowed), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        call = method if "(" in method else f"{method}()"
        config_class = type(self).__name__
        message = f"{config_class}.{call} got an unknown setting {name}={unknown[name]!r}.{hint}"
        allowed_text = f" Allowed: {', '.join(sorted(allowed))}"
        if method == "overrides":  # RLlib's KeyError, in its words
            raise UnknownOverrideError(
                f"{message} Invalid property name {name} for config class {config_class}!"
                f"{allowed_text}"
            )
        if method.isidentifier() and method != "from_dict":  # a builder's keyword argument
            # Python's words for it, as RLlib's builders raise them.
            message += f" ({call} got an unexpected keyword argument {name!r})"
        raise UnknownSettingError(message + allowed_text)

    def ignored_settings_warnings(self) -> list[str]:
        """Emits one `IgnoredSettingWarning` per RLlib setting this config was given that has
        no effect here (and for a framework other than numpy); returns the messages."""
        given = dict(self._rllib_given)
        if self.backend == "ray":  # Ray actors take these resources
            for name in RAY_RESOURCE_SETTINGS:
                given.pop(name, None)
        if self.uses_torch:  # a torch learner runs on the GPU it asks for
            given.pop("num_gpus_per_learner", None)
        num_given = given.get("num_learners", getattr(self, "num_learners", 0))
        if self.backend == "ray" and isinstance(num_given, int) and num_given >= 2:
            if self.data_parallel_refusal() is None:  # learner actors take these resources
                given.pop("custom_resources_per_learner", None)
        messages = []
        if "num_learners" in given and getattr(self, "algo_class", None) is not None:
            num_learners = given.pop("num_learners")
            refusal = self.data_parallel_refusal() if num_learners not in (0, 1) else None
            if refusal is not None:
                message = (
                    f"{type(self).__name__}.learners(num_learners={num_learners!r}) has no "
                    f"effect: {refusal}"
                )
                warnings.warn(message, IgnoredSettingWarning, stacklevel=2)
                messages.append(message)
        messages += warn_ignored(type(self).__name__, given, self._rllib_rules())
        if self.framework_str not in ("numpy", "torch"):
            message = (
                f"{type(self).__name__}.framework({self.framework_str!r}) has no effect: "
                "the networks and learners are numpy here (or torch, with "
                "framework('torch')); TensorFlow is not available"
            )
            warnings.warn(message, IgnoredSettingWarning, stacklevel=2)
            messages.append(message)
        return messages
