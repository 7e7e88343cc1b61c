"""The `callbacks()` section: callback classes and per-event callables, checked where they are
given and again (signatures, and that they survive cloudpickle) in `validate()`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.callbacks import ENV_RUNNER_EVENTS, EVENTS, RLlibCallback
from trainer.callbacks.chain import callable_name
from trainer.callbacks.signatures import check_callback_class, check_event_callable
from trainer.errors import ConfigError
from trainer.util.pickling import travel_dumps

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class CallbacksSection(ConfigBase):
    """Callback classes and callables (`callbacks()`)."""

    if TYPE_CHECKING:  # set by `AlgorithmConfig.__init__`
        callbacks_class: Any
        callbacks_on: dict[str, list[Callable]]

    def callbacks(self, callbacks_class: Any = NotProvided, **on_events: Any) -> Self:
        """Callback classes (one, or a list: called in list order) and, per event, a callable or
        a list of callables (called after the classes, in list order). `callbacks_class=None`
        sets the default, `RLlibCallback`, as RLlib's does. As in RLlib, an entry may also be
        any callable that returns an `RLlibCallback` (a function, a `functools.partial` of a
        class): each process calls it once to make its instance, and what it returns is
        checked there."""
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
                if not isinstance(cls, type) and callable(cls):
                    continue  # a factory: what it returns is checked where it is called
                if not isinstance(cls, type):
                    hint = (
                        "pass the class, not an instance"
                        if isinstance(cls, RLlibCallback)
                        else "pass an RLlibCallback subclass, or a callable returning an "
                        "RLlibCallback"
                    )
                    raise ConfigError(
                        f"{type(self).__name__}.callbacks(callbacks_class={cls!r}): {hint} "
                        f"(got a {type(cls).__name__} object); every process makes its own "
                        "instance"
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

    def callback_labels(self) -> list[tuple[str, Any]]:
        """(label, callback) for every configured callback class and callable, the label as
        the config call spells it (`callbacks_class=MyCallbacks`, `callbacks(on_x=fn)`)."""
        items: list[tuple[str, Any]] = [
            (f"callbacks_class={callable_name(cls)}", cls) for cls in self.callback_classes()
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

    def callback_classes(self) -> list[Callable[[], Any]]:
        """The configured callback classes (and callables returning an instance), in order."""
        classes = self.callbacks_class
        classes = classes if isinstance(classes, (list, tuple)) else [classes]
        return [c for c in classes if c is not None]

    def env_runner_callables(self) -> dict[str, list[Callable]]:
        return {e: fns for e, fns in self.callbacks_on.items() if e in ENV_RUNNER_EVENTS}

    def _validate_callbacks(self, name: str) -> None:
        self._check_callback_signatures()
        self._check_callbacks_travel()


def _callbacks_on(event: str) -> property:
    def read(self: CallbacksSection) -> Any:
        fns = self.callbacks_on.get(event)
        return None if not fns else (fns[0] if len(fns) == 1 else list(fns))

    read.__doc__ = f"RLlib's `callbacks_on_{event[3:]}`: what callbacks({event}=...) set."
    return property(read)


# RLlib keeps each event's callables in `config.callbacks_on_<event>`.
for _event in EVENTS:
    setattr(CallbacksSection, f"callbacks_{_event}", _callbacks_on(_event))
