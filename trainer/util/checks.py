"""Value checks shared by the config, the schedules, the explorations and the replay buffers.

Each check returns None when the value is fine, else a description of what is allowed (for
messages such as "lr=-1: lr must be a number > 0"). bool is not taken for a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], "str | None"]


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def int_at_least(low: int) -> Check:
    return lambda v: None if is_int(v) and v >= low else f"an int >= {low}"


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
    return lambda v: (
        None if v == "auto" or (is_int(v) and v >= low) else f'"auto" or an int >= {low}'
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


def is_callable_or_none(v: Any) -> str | None:
    return None if v is None or callable(v) else "a callable or None"
