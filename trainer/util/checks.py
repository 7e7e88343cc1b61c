"""Value checks shared by the config, the schedules, the explorations and the replay buffers.

Each check returns None when the value is fine, else a description of what is allowed (for
messages such as "lr=-1: lr must be a number > 0"). bool is not taken for a number.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

Check = Callable[[Any], "str | None"]

#: The largest count a setting takes: counts go into numpy's int64 counters and arrays.
INT_MAX = 2**63 - 1
#: The longest wait a setting in seconds takes: Python's waits (`time.sleep`,
#: `queue.Queue.get`, locks) refuse longer ones with an OverflowError.
SECONDS_MAX = threading.TIMEOUT_MAX


def is_int(v: Any) -> bool:
    """An int, or a numpy integer (np.arange's, as RLlib takes them); not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_number(v: Any) -> bool:
    """A finite int or float, numpy's included; not a bool."""
    return (
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and math.isfinite(v)
    )


def _too_large_int(v: Any) -> bool:
    return is_int(v) and v > INT_MAX


def int_at_least(low: int) -> Check:
    def checked(v: Any) -> str | None:
        if _too_large_int(v):
            return f"an int >= {low} and <= 2**63 - 1 (counts are 64-bit)"
        return None if is_int(v) and v >= low else f"an int >= {low}"

    return checked


def number_above(low: float) -> Check:
    return lambda v: None if is_number(v) and v > low else f"a number > {low}"


def number_at_least(low: float) -> Check:
    return lambda v: None if is_number(v) and v >= low else f"a number >= {low}"


def finite_number(v: Any) -> str | None:
    """Any finite number (RLlib checks no range for settings such as `gamma`)."""
    return None if is_number(v) else "a finite number"


def number_at_least_or_inf(low: float) -> Check:
    """A number >= `low`, or infinity (RLlib scripts turn a clip off with `float("inf")`)."""
    return lambda v: (
        None
        if (is_number(v) and v >= low) or v == math.inf
        else f'a number >= {low} or float("inf")'
    )


def number_in(low: float, high: float) -> Check:
    return lambda v: None if is_number(v) and low <= v <= high else f"a number in [{low}, {high}]"


def auto_or_int_at_least(low: int) -> Check:
    def checked(v: Any) -> str | None:
        if v == "auto" and isinstance(v, str):
            return None
        if _too_large_int(v):
            return f'"auto" or an int >= {low} and <= 2**63 - 1 (counts are 64-bit)'
        return None if is_int(v) and v >= low else f'"auto" or an int >= {low}'

    return checked


def seconds_above(low: float) -> Check:
    """A number of seconds > `low` that Python can wait for (at most `SECONDS_MAX`)."""
    return lambda v: (
        None
        if is_number(v) and low < v <= SECONDS_MAX
        else f"a number of seconds > {low} and <= {SECONDS_MAX:.0f} (threading.TIMEOUT_MAX)"
    )


def seconds_at_least(low: float) -> Check:
    """A number of seconds >= `low` that Python can wait for (at most `SECONDS_MAX`)."""
    return lambda v: (
        None
        if is_number(v) and low <= v <= SECONDS_MAX
        else f"a number of seconds >= {low} and <= {SECONDS_MAX:.0f} (threading.TIMEOUT_MAX)"
    )


def one_of(*options: Any) -> Check:
    return lambda v: None if v in options else f"one of {list(options)}"


def optional(check: Check) -> Check:
    def checked(v: Any) -> str | None:
        if v is None:
            return None
        problem = check(v)
        return None if problem is None else f"None or {problem}"

    return checked


def is_bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "True or False"


def is_dict(v: Any) -> str | None:
    return None if isinstance(v, dict) else "a dict"


def signature_refusing(fn: Any, count: int) -> str | None:
    """None when `fn` can be called with `count` positional arguments (or its signature cannot
    be read: builtins, some C callables), else its signature, for the message."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(count))
    except TypeError:
        return str(signature)
    return None


def callable_taking(count: int, shape: str, *, none: bool = False) -> Check:
    """A callable that takes `count` positional arguments (`shape`: how the message shows
    them, "(agent_id, episode, **kwargs)"); None too with `none`."""
    allowed = f"{'None or ' if none else ''}a callable {shape}"

    def checked(v: Any) -> str | None:
        if v is None and none:
            return None
        if not callable(v):
            return allowed
        refused = signature_refusing(v, count)
        if refused is not None:
            return f"{allowed}, called with {count} argument(s); this one's signature is {refused}"
        return None

    return checked
