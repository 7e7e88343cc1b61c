"""`ray.util.annotations` under Ray's stand-in: Ray's API-stability decorators, which users'
RLlib code borrows for its own classes. Each gives back the decorated object itself, bare
(`@PublicAPI`) or called (`@PublicAPI(stability="beta")`); `Deprecated(warning=True)` warns
with `RayDeprecationWarning` on each use, as Ray's does."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: What Ray's `PublicAPI(stability=...)` takes.
STABILITIES = ("stable", "beta", "alpha")


class AnnotationType(Enum):
    PUBLIC_API = "PublicAPI"
    DEVELOPER_API = "DeveloperAPI"
    DEPRECATED = "Deprecated"
    UNKNOWN = "Unknown"


class RayDeprecationWarning(DeprecationWarning):
    """Ray's warning for deprecated APIs."""


def _bare_or_called(args: tuple, kwargs: dict) -> bool:
    return len(args) == 1 and not kwargs and callable(args[0])


def PublicAPI(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (Ray's name)
    """`@PublicAPI`, `@PublicAPI(stability="stable" | "beta" | "alpha", api_group=...)`."""
    if _bare_or_called(args, kwargs):
        return args[0]
    stability = kwargs.get("stability", "stable")
    if stability not in STABILITIES:
        raise ValueError(f"PublicAPI(stability={stability!r}): one of {STABILITIES}")

    def mark(obj: F) -> F:
        return obj

    return mark


def DeveloperAPI(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (Ray's name)
    """`@DeveloperAPI` or `@DeveloperAPI()`."""
    if _bare_or_called(args, kwargs):
        return args[0]

    def mark(obj: F) -> F:
        return obj

    return mark


def Deprecated(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (Ray's name)
    """`@Deprecated` or `@Deprecated(message=..., warning=False)`: with `warning`, each use
    (a call, or making an instance of a class) warns `RayDeprecationWarning`."""
    if _bare_or_called(args, kwargs):
        return Deprecated()(args[0])
    warning = kwargs.pop("warning", False)
    message = kwargs.pop("message", None)
    if kwargs:
        raise ValueError(f"Unknown kwargs: {kwargs.keys()}")
    text = "This API is deprecated and may be removed in future Ray releases." + (
        f"\n{message}" if message else ""
    )

    def mark(obj: F) -> F:
        if not warning:
            return obj
        if isinstance(obj, type):
            original_init: Callable[..., None] = obj.__init__  # type: ignore[misc]

            @functools.wraps(original_init)
            def patched_init(*a: Any, **kw: Any) -> None:
                warnings.warn(text, RayDeprecationWarning, stacklevel=2)
                original_init(*a, **kw)

            type.__setattr__(obj, "__init__", patched_init)
            return obj

        @functools.wraps(obj)
        def deprecated(*a: Any, **kw: Any) -> Any:
            warnings.warn(text, RayDeprecationWarning, stacklevel=2)
            return obj(*a, **kw)

        return deprecated  # type: ignore[return-value]

    return mark
