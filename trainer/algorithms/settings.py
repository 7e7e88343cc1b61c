"""The settings table: every setting of a config class with its default, its check, the builder
method that sets it and a one-line doc. It is the single source of all four:

- `AlgorithmConfig.__init__` sets each default (a class's `_DEFAULT_OVERRIDES` win);
- every builder method checks each value with the setting's check (`AlgorithmConfig._set`);
- each builder method's docstring lists its settings with this class's defaults
  (`document_builders`, run for every config class);
- the docs' settings page is `readme_tables(...)` of the config classes with an introduction
  (`python -m trainer settings` prints the tables; `python -m trainer.cli.settings_page`
  writes docs/settings.md, and a test keeps that page equal to the render).

An algorithm's config declares each of its own settings once, in its class body, with its type:
`lambda_: float = setting(1.0, finite_number, "GAE's lambda")` (`setting`); the class's creation
moves the declarations into its table (`_ALGO_SETTINGS`, `declared_settings`), and the shared
`training()` takes them as keywords (`TrainingSection.training`). The sections of
`AlgorithmConfig` give theirs as tables (`settings_of`).

A check returns None when the value is fine, else what is allowed (`trainer.util.checks`).
A setting may also name its usual range (`UsualRange`): a value the check allows outside it
(`gamma=1.5`: RLlib takes it, and so does this trainer) is taken with one
`UnusualSettingWarning` per config, naming the setting, the value and the range.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol


class UnusualSettingWarning(UserWarning):
    """A setting was given a value its check allows (RLlib takes it) but that is surely a
    mistake, such as `gamma=1.5`: emitted once per config, naming the usual range."""


class UsualRange(NamedTuple):
    """The values a setting usually takes; others that its check allows are taken with a
    warning."""

    #: value -> whether it is in the usual range.
    holds: Callable[[Any], bool]
    #: The range, in words that follow "<name> is usually" ("between 0 and 1").
    text: str
    #: What a value outside it does.
    why: str


class Setting(NamedTuple):
    default: Any
    #: value -> None when fine, else a description of what is allowed.
    check: Callable[[Any], str | None]
    #: The builder method that sets it (`training`, `env_runners`, ...).
    method: str
    #: One line: what it does.
    doc: str
    #: Where its values usually are (None: anywhere its check allows).
    usual: UsualRange | None = None


class ConfigClass(Protocol):
    """What the functions here read of a config class (`AlgorithmConfig` or an algorithm's
    config, given as `type[ConfigClass]`): its settings table and its changed defaults. The
    config classes import this module, so it names none of them."""

    _ALGO_SETTINGS: dict[str, Setting]
    _DEFAULT_OVERRIDES: dict[str, Any]

    @classmethod
    def _settings(cls) -> dict[str, Setting]: ...


def settings_of(method: str, settings: dict[str, tuple[Any, ...]]) -> dict[str, Setting]:
    """`{name: Setting}` for the settings of one builder method, given as
    `name: (default, check, doc)` or `name: (default, check, doc, UsualRange)`."""
    return {
        name: Setting(spec[0], spec[1], method, spec[2], spec[3] if len(spec) > 3 else None)
        for name, spec in settings.items()
    }


def setting(
    default: Any,
    check: Callable[[Any], str | None],
    doc: str,
    *,
    usual: UsualRange | None = None,
) -> Any:
    """One of an algorithm config's own settings of `training()`, declared in its class body with
    its type: `lambda_: float = setting(1.0, finite_number, "GAE's lambda", usual=...)`.

    Typed Any, so that the annotation is at once the attribute's type (for mypy and
    `typing.get_type_hints`) and the declaration; the class's creation takes the declaration
    off the class into its settings table (`declared_settings`)."""
    return Setting(default, check, "training", doc, usual)


def declared_settings(config_cls: type) -> dict[str, Setting]:
    """The settings `config_cls`'s own body declares with `setting(...)`, in their order, taken
    off the class: each config sets them on itself from the table (`AlgorithmConfig.__init__`).
    A new setting needs its type declared (an annotation here or on a parent class)."""
    declared = {
        name: value for name, value in vars(config_cls).items() if isinstance(value, Setting)
    }
    for name in declared:
        delattr(config_cls, name)
        if not any(name in inspect.get_annotations(cls) for cls in config_cls.__mro__):
            raise TypeError(
                f"{config_cls.__name__}.{name} = setting(...) declares no type: write "
                f"`{name}: <type> = setting(...)`"
            )
    return declared


def unusual_value_message(config_name: str, name: str, value: Any, setting: Setting) -> str | None:
    """The warning for `value` of setting `name` outside its usual range; None inside it."""
    usual = setting.usual
    if usual is None or usual.holds(value):
        return None
    return (
        f"{config_name}.{setting.method}({name}={value!r}): {name} is usually {usual.text} "
        f"({usual.why}); the value is taken, as RLlib takes it, but it is most likely a mistake"
    )


def in_range(low: float, high: float, *, low_open: bool = False) -> Callable[[Any], bool]:
    """`holds` of a `UsualRange`: `low <= value <= high` (`low < value` with `low_open`)."""
    return lambda value: (low < value if low_open else low <= value) and value <= high


def documented(setting: Setting) -> str:
    """The setting's doc, with its usual range when it has one."""
    return setting.doc if setting.usual is None else f"{setting.doc}; usually {setting.usual.text}"


#: Builder methods in the order the docs list them.
BUILDER_METHODS = (
    "environment",
    "env_runners",
    "training",
    "evaluation",
    "exploration",
    "fault_tolerance",
    "reporting",
    "checkpointing",
    "multi_agent",
    "rl_module",
    "debugging",
    "python_environment",
    "framework",
    "api_stack",
    "experimental",
    "offline_data",
)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def defaults_of(config_cls: type[ConfigClass]) -> dict[str, Any]:
    """Each setting's default in `config_cls` (its `_DEFAULT_OVERRIDES` applied)."""
    overrides = config_cls._DEFAULT_OVERRIDES
    return {
        name: overrides.get(name, setting.default)
        for name, setting in config_cls._settings().items()
    }


def builder_doc(
    config_cls: type[ConfigClass], method: str, intro: str, defaults: dict[str, Any]
) -> str:
    """The docstring of `config_cls.<method>`: `intro`, then its settings with this class's
    `defaults` (`defaults_of(config_cls)`)."""
    lines = [
        f"    {name} ({_shown(defaults[name])}): {documented(setting)}"
        for name, setting in config_cls._settings().items()
        if setting.method == method
    ]
    intro = inspect.cleandoc(intro)
    if not lines:
        return intro
    return f"{intro}\n\nSettings ({config_cls.__name__} defaults):\n" + "\n".join(lines)


def document_builders(config_cls: type[ConfigClass]) -> None:
    """Gives `config_cls` builder methods whose docstrings list its own settings and defaults
    (a thin wrapper where the method is inherited, so the parent's docstring stays its own)."""
    defaults = defaults_of(config_cls)
    for method in BUILDER_METHODS:
        func = getattr(config_cls, method, None)
        if func is None:
            continue
        # A function (the class's own) or the wrapper below; both take attributes.
        own: Any = config_cls.__dict__.get(method)
        intro = getattr(func, "__intro__", None) or func.__doc__ or ""
        if own is None:
            own = inherited(func)
            setattr(config_cls, method, own)
        own.__intro__ = intro
        own.__doc__ = builder_doc(config_cls, method, intro, defaults)


def inherited(func: Callable) -> Any:
    """A thin wrapper of the inherited builder method `func`, to take this class's docstring
    (and signature) without changing the parent's."""

    @functools.wraps(func)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    return method


def markdown(
    config_cls: type[ConfigClass],
    *,
    methods: tuple[str, ...] = BUILDER_METHODS,
    only: Callable[[str], bool] = lambda name: True,
) -> str:
    """A markdown table per builder method: setting, default in `config_cls`, what it does."""
    defaults = defaults_of(config_cls)
    blocks = []
    for method in methods:
        rows = [
            (name, setting)
            for name, setting in config_cls._settings().items()
            if setting.method == method and only(name)
        ]
        if not rows:
            continue
        table = [
            f"`{config_cls.__name__}.{method}()`",
            "",
            "| setting | default | what it does |",
            "|---|---|---|",
        ]
        table += [
            f"| `{name}` | `{_shown(defaults[name])}` | {documented(setting)} |"
            for name, setting in rows
        ]
        blocks.append("\n".join(table))
    return "\n\n".join(blocks)


def _changed_default(name: str, value: Any, settings: dict) -> str:
    """One changed default as the settings page shows it; of a dict default (the model config)
    the keys that differ from the shared default's."""
    base = settings[name].default if name in settings else None
    if isinstance(value, dict) and isinstance(base, dict):
        value = {k: v for k, v in value.items() if base.get(k, object()) != v}
        return f"`{name}` with `{_shown(value)}`"
    return f"`{name}={_shown(value)}`"


def readme_tables(base: type[ConfigClass], algorithms: Sequence[type[ConfigClass]]) -> str:
    """The tables of the docs' settings page: the shared settings (with `base`'s defaults),
    then each of `algorithms`' own settings and changed defaults. The caller names the
    classes, so that this table format imports no config."""
    # RLlib's private-looking names are left out, but for experimental() (all of them are).
    settings = base._settings()
    parts = [
        markdown(
            base,
            only=lambda name: not name.startswith("_") or settings[name].method == "experimental",
        )
    ]
    for cls in algorithms:
        own = markdown(cls, methods=("training",), only=cls._ALGO_SETTINGS.__contains__)
        changed = ", ".join(
            _changed_default(name, value, settings)
            for name, value in cls._DEFAULT_OVERRIDES.items()
        )
        parts.append(f"{own}\n\n{cls.__name__} changes these defaults: {changed}.")
    return "\n\n".join(parts)
