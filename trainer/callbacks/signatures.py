"""Which keyword arguments each callback event passes, and the check that a configured callback
can take them.

Events call every callback with keyword arguments only (as RLlib's `make_callback` does). A
callback whose signature cannot take them (`on_train_result=lambda: ...`, a method without
`**kwargs` that misses one keyword) would fail only when its event first fires, maybe deep into
`train()` and inside a worker process; `config.callbacks(...)` runs this check instead, so the
mistake is a `ConfigError` at the line that configured it.

The keyword table has one source: the keyword-only parameters of `RLlibCallback`'s own methods,
which are what this project's firing sites pass (a test compares them with real events). Two kinds
of keywords are passed only to callables that want them, so a callable need not take them:
- RLlib's old argument names (`worker`, `base_env`, `policies`; see `callbacks.old_api`), passed
  to a callable that declares them by name;
- keywords this project passes that RLlib 2.60 does not (`metrics_logger` to
  `on_checkpoint_loaded`), passed to a callable that can take them, so a callable written against
  RLlib's call (`on_checkpoint_loaded=lambda algorithm: ...`) works here too.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.callbacks.callback import ENV_RUNNER_EVENTS, EVENTS, RLlibCallback
from trainer.compat.old_callbacks import OLD_ARGUMENTS, OLD_EVENT_KEYWORDS
from trainer.errors import ConfigError

#: Keywords this project passes to an event but RLlib 2.60 does not: a callable gets them only
#: when it can take them (by name or through `**kwargs`).
BEYOND_RLLIB: dict[str, tuple[str, ...]] = {"on_checkpoint_loaded": ("metrics_logger",)}
#: Events whose callables get RLlib's old argument names when they declare them: the EnvRunner
#: events (where RLlib's old stack passed them), but the old `on_sub_environment_created`, whose
#: own arguments are the old names.
_OLD_ARGUMENTS_ADAPTED = frozenset(ENV_RUNNER_EVENTS) - {"on_sub_environment_created"}

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class EventKeywords:
    """The keyword arguments one event passes: `always` to every callable, `on_request` only to
    those that can take them."""

    event: str
    always: tuple[str, ...]
    on_request: tuple[str, ...] = ()

    def describe(self) -> str:
        text = f"{self.event} passes, by keyword only: {', '.join(self.always)}"
        if self.on_request:
            text += f" (and {', '.join(self.on_request)} to a callable that declares them)"
        return text


def _keyword_only_parameters(function: Callable) -> tuple[str, ...]:
    parameters = inspect.signature(function).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


@functools.cache
def event_keywords(event: str) -> EventKeywords:
    """What `event` (one of `EVENTS`, or an old event name a class may still define) passes."""
    if event in OLD_EVENT_KEYWORDS:
        return EventKeywords(event, OLD_EVENT_KEYWORDS[event])
    extras = BEYOND_RLLIB.get(event, ())
    always = tuple(
        k for k in _keyword_only_parameters(getattr(RLlibCallback, event)) if k not in extras
    )
    old = tuple(OLD_ARGUMENTS) if event in _OLD_ARGUMENTS_ADAPTED else ()
    return EventKeywords(event, always, extras + old)


def signature_problem(parameters: list[inspect.Parameter], keywords: EventKeywords) -> str | None:
    """Why a callable with these parameters cannot be called with `keywords`, or None."""
    passed = set(keywords.always) | set(keywords.on_request)
    takes_any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    named = {p.name for p in parameters if p.kind in _KEYWORD_KINDS}
    problems = []
    positional_only = [
        p.name
        for p in parameters
        if p.kind is inspect.Parameter.POSITIONAL_ONLY and p.default is inspect.Parameter.empty
    ]
    if positional_only:
        problems.append(
            f"it requires positional-only parameter(s) {', '.join(positional_only)}, but "
            "callbacks get keyword arguments only"
        )
    required = [
        p.name
        for p in parameters
        if p.kind in _KEYWORD_KINDS
        and p.default is inspect.Parameter.empty
        and p.name not in passed
    ]
    if required:
        problems.append(f"it requires {', '.join(required)}, which the event does not pass")
    if not takes_any_keyword:
        untaken = [k for k in keywords.always if k not in named]
        if untaken:
            problems.append(f"it has no parameter for {', '.join(untaken)} and no **kwargs")
    return "; ".join(problems) or None


def _attribute(obj: Any, name: str) -> Any:
    """`obj.name`, or None: a hostile `__getattr__` cannot break the error message."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _location(fn: Any) -> str | None:
    """`file:line` where `fn`'s code starts, where its code object is at hand (cheap: no file is
    read)."""
    if isinstance(fn, functools.partial):
        return _location(fn.func)
    call = inspect.getattr_static(type(fn), "__call__", None)
    for candidate in (fn, _attribute(fn, "__func__"), call):
        code = _attribute(candidate, "__code__")
        if isinstance(code, types.CodeType):
            return f"{code.co_filename}:{code.co_firstlineno}"
    return None


def describe_callable(fn: Any) -> str:
    """`module.qualname (file:line)` of a callable, as far as it can be had."""
    if isinstance(fn, functools.partial):
        return f"functools.partial({describe_callable(fn.func)})"
    name = _attribute(fn, "__qualname__")
    target = fn
    if not isinstance(name, str):  # an instance of a callable class
        target = type(fn)
        name = f"{target.__qualname__} instance"
    module = _attribute(target, "__module__")
    if isinstance(module, str) and module != "builtins":
        name = f"{module}.{name}"
    location = _location(fn)
    return f"{name} ({location})" if location else name


def _callable_parameters(fn: Any) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fn).parameters.values())
    except Exception:
        # Builtins and C functions (or partials of them) may have no readable signature
        # (ValueError), and an object's own `__signature__` may be broken: such callables are
        # accepted, and any mismatch shows when the event fires, as a CallbackError.
        return None


def _method_parameters(cls: type, name: str) -> list[inspect.Parameter] | None:
    """The parameters of `cls().name` as the chain calls it: without `self`."""
    static = inspect.getattr_static(cls, name)
    if isinstance(static, staticmethod):
        return _callable_parameters(static.__func__)
    if isinstance(static, types.FunctionType):
        parameters = _callable_parameters(static)
        if parameters and parameters[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            return parameters[1:]  # the instance binds the first positional parameter
        return parameters
    # classmethods, callable objects and other descriptors: what the attribute lookup gives.
    return _callable_parameters(getattr(cls, name))


def _refusal(where: str, who: str, keywords: EventKeywords, problem: str) -> ConfigError:
    return ConfigError(
        f"{where}: {who} cannot take the keyword arguments of {keywords.event}: {problem}. "
        f"{keywords.describe()}. Declare the ones it uses by name and add **kwargs for the rest "
        f"(RLlib's signature: RLlibCallback.{keywords.event})"
    )


def check_event_callable(event: str, fn: Any, where: str) -> None:
    """Raises `ConfigError` (naming `where`, the event and the callable) if `fn` cannot be called
    with `event`'s keyword arguments."""
    parameters = _callable_parameters(fn)
    if parameters is None:
        return
    keywords = event_keywords(event)
    problem = signature_problem(parameters, keywords)
    if problem is not None:
        raise _refusal(where, describe_callable(fn), keywords, problem)


def overridden_events(cls: type) -> list[str]:
    """The events (old event names included) `cls` defines a handler for that differs from
    `RLlibCallback`'s no-op, as the callback chain resolves them."""
    names = []
    for event in (*EVENTS, *OLD_EVENT_KEYWORDS):
        method = getattr(cls, event, None)
        if method is not None and method is not getattr(RLlibCallback, event, None):
            names.append(event)
    return names


def check_callback_class(cls: type, where: str) -> None:
    """Raises `ConfigError` for the first handler of `cls` (an `RLlibCallback` subclass, or a
    class combined by `make_multi_callbacks`, whose parts are checked) that cannot take its
    event's keyword arguments. Old events that never fire here (`callbacks.old_api.NEVER_CALLED`)
    are not checked: they are only warned about."""
    for part in getattr(cls, "combined_classes", ()):
        check_callback_class(part, where)
    for event in overridden_events(cls):
        handler = inspect.getattr_static(cls, event)
        # Plain values (not functions, not descriptors such as properties) cannot be called.
        if not callable(handler) and not hasattr(type(handler), "__get__"):
            raise ConfigError(
                f"{where}: {cls.__module__}.{cls.__qualname__}.{event} is "
                f"{handler!r}, not a method; define it as a method taking the "
                f"event's keyword arguments ({event_keywords(event).describe()})"
            )
        parameters = _method_parameters(cls, event)
        if parameters is None:
            continue
        keywords = event_keywords(event)
        problem = signature_problem(parameters, keywords)
        if problem is not None:
            method = getattr(cls, event)
            location = _location(method)
            who = f"{cls.__module__}.{cls.__qualname__}.{event}"
            who += f" ({location})" if location else ""
            raise _refusal(where, who, keywords, problem)


def keywords_to_drop(event: str, fn: Callable) -> tuple[str, ...]:
    """The keywords beyond RLlib's (`BEYOND_RLLIB`) that `fn` cannot take: the chain leaves them
    out of its calls of `fn`."""
    extras = BEYOND_RLLIB.get(event, ())
    if not extras:
        return ()
    parameters = _callable_parameters(fn)
    if parameters is None or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return ()
    named = {p.name for p in parameters if p.kind in _KEYWORD_KINDS}
    return tuple(k for k in extras if k not in named)
