"""The callback chain of one process, and the error a failing callback raises.

Resolution order for one event (as RLlib documents it): every `callbacks_class` instance in list
order, then every callable given for that event in list order.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from trainer.callbacks.callback import EVENTS, RLlibCallback
from trainer.callbacks.signatures import check_callback_class, keywords_to_drop
from trainer.compat.old_callbacks import (
    adapt_old_arguments,
    old_event_handlers,
    warn_never_called,
    warn_once,
)
from trainer.errors import CallbackError as CallbackError
from trainer.errors import ConfigError


def callable_name(fn: Callable) -> str:
    """A readable name for a callable: `module.qualname`, plus file:line for lambdas."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    if name.endswith("<lambda>") and code is not None:
        return f"{name} ({code.co_filename}:{code.co_firstlineno})"
    return name


def _make_instance(factory: Callable[[], Any]) -> Any:
    """One callback instance from `callbacks_class`: a class, or (as RLlib allows) any callable
    returning an `RLlibCallback`, whose result is checked here, where it is first known."""
    instance = factory()
    if isinstance(factory, type):
        return instance
    where = f"callbacks(callbacks_class={callable_name(factory)})"
    if not isinstance(instance, RLlibCallback):
        raise ConfigError(
            f"{where}: the callable returned {instance!r} (a {type(instance).__name__}); it must "
            "return an RLlibCallback instance (a subclass of callbacks.RLlibCallback)"
        )
    check_callback_class(type(instance), where)
    return instance


class CallbackChain:
    """The resolved callbacks of one process: instances made here from the configured classes,
    then the per-event callables. `fire(event, **kwargs)` runs them in chain order and turns any
    exception into a `CallbackError`."""

    def __init__(
        self,
        callback_classes: list[Callable[[], Any]] | tuple[Callable[[], Any], ...] = (),
        event_callables: dict[str, list[Callable]] | None = None,
        *,
        env_runner_index: int | None = None,
    ) -> None:
        self.env_runner_index = env_runner_index
        self.instances: list[Any] = [_make_instance(cls) for cls in callback_classes]
        event_callables = event_callables or {}
        # Resolve once: per event, the (name, function) pairs that do something. Methods a class
        # did not override are the base's no-ops and are skipped, which keeps per-step events free.
        self._handlers: dict[str, list[tuple[str, Callable]]] = {}
        # RLlib's older forms (old argument names, old events) are adapted here, with one
        # warning each (see `callbacks.old_api`).
        on_algorithm_side = env_runner_index is None  # else in an EnvRunner
        if on_algorithm_side:
            warn_never_called(self.instances)
        for event in EVENTS:
            handlers = []
            for instance in self.instances:
                method = getattr(type(instance), event, None)
                if method is None or method is getattr(RLlibCallback, event):
                    continue
                name = f"{type(instance).__qualname__}.{event}"
                handlers.append((name, self._adapt(event, name, getattr(instance, event))))
            for instance in self.instances:
                handlers.extend(
                    old_event_handlers(instance, event, on_algorithm_side=on_algorithm_side)
                )
            for fn in event_callables.get(event, ()):
                name = callable_name(fn)
                handlers.append((name, self._adapt(event, name, fn)))
            self._handlers[event] = handlers

    # RLlib 2.60 keeps an EnvRunner's callbacks as a list (`env_runner._callbacks[0]`).
    def __getitem__(self, index: int) -> Any:
        return self.instances[index]

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.instances)

    @staticmethod
    def _adapt(event: str, name: str, fn: Callable) -> Callable:
        if event == "on_sub_environment_created":  # an old event: `worker=` is its own argument
            warn_once(name, "on_environment_created (the sub-envs are env.envs[i])")
            return fn
        adapted = adapt_old_arguments(name, fn)
        # Keywords this project passes beyond RLlib's call are left out for a callable written
        # against RLlib's call, which cannot take them.
        drop = keywords_to_drop(event, fn)
        if not drop:
            return adapted

        def without_extra_keywords(**kwargs: Any) -> Any:
            for keyword in drop:
                kwargs.pop(keyword, None)
            return adapted(**kwargs)

        return without_extra_keywords

    def has(self, event: str) -> bool:
        """Whether anything is registered for `event` (lets hot loops skip building kwargs)."""
        return bool(self._handlers[event])

    def fire(self, event: str, **kwargs: Any) -> None:
        self.fire_with(event, kwargs)

    def fire_with(self, event: str, kwargs: dict) -> None:
        """`fire` with the keyword arguments as a dict (reused across calls in hot loops; each
        callback still receives its own copy through `**`)."""
        for name, fn in self._handlers[event]:
            try:
                fn(**kwargs)
            except CallbackError:
                raise
            except Exception as error:
                raise self._error(event, name, error) from error

    def fire_each(self, event: str, kwargs_each: Iterable[dict]) -> None:
        """`fire_with` once for each dict of `kwargs_each`, in order (one event of several
        sub-envs: a sampling step's `on_episode_step`); one callback's calls run in one loop,
        without a call into the chain each."""
        handlers = self._handlers[event]
        if len(handlers) != 1:
            for kwargs in kwargs_each:
                self.fire_with(event, kwargs)
            return
        ((name, fn),) = handlers
        try:
            for kwargs in kwargs_each:
                fn(**kwargs)
        except CallbackError:
            raise
        except Exception as error:
            raise self._error(event, name, error) from error

    def _error(self, event: str, name: str, error: Exception) -> CallbackError:
        """The `CallbackError` for `error`, raised by callback `name` of `event` (call it
        while `error` is handled: it keeps the traceback)."""
        return CallbackError(
            event=event,
            callback_name=name,
            error_type=type(error).__name__,
            error_message=str(error),
            remote_traceback=traceback.format_exc(),
            env_runner_index=self.env_runner_index,
        )
