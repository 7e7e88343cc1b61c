"""Checks of a component's state before it is applied: a restore validates every component
first and applies all or nothing (`Algorithm.restore_from_path`).

Each check raises `StateError` naming the place in the state (`where`, for example
`learner['optimizer']['m']`) and what is wrong; none of them changes anything. Components use
these helpers in their own `check_state` methods (Adam, the learners, MetricsLogger, EnvRunner).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from trainer.errors import StateError as StateError
from trainer.util.rng import new_generator


def select_components(state: dict, components: Any = None, not_components: Any = None) -> dict:
    """`state` with only the top-level keys `components` names and without those
    `not_components` names (RLlib's Checkpointable arguments: a name or a list; None: all)."""
    if components is not None:
        keep = {components} if isinstance(components, str) else set(components)
        state = {key: value for key, value in state.items() if key in keep}
    if not_components is not None:
        drop = {not_components} if isinstance(not_components, str) else set(not_components)
        state = {key: value for key, value in state.items() if key not in drop}
    return state


def require_map(value: Any, where: str, keys: Iterable[str] = ()) -> dict:
    """`value` as a dict that has every key in `keys`."""
    if not isinstance(value, dict):
        raise StateError(where, f"expected a map, got {_describe(value)}")
    missing = [key for key in keys if key not in value]
    if missing:
        raise StateError(where, f"has no {', '.join(map(repr, missing))}")
    return value


def require_int(value: Any, where: str, *, minimum: int | None = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise StateError(where, f"expected an integer, got {_describe(value)}")
    if minimum is not None and value < minimum:
        raise StateError(where, f"must be at least {minimum}, got {value}")
    return int(value)


def require_number(
    value: Any, where: str, *, minimum: float | None = None, finite: bool = True
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise StateError(where, f"expected a number, got {_describe(value)}")
    if finite and not math.isfinite(value):
        raise StateError(where, f"must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise StateError(where, f"must be at least {minimum}, got {value}")
    return float(value)


def require_float_array(value: Any, where: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A floating-point array of `shape` whose every element is finite."""
    if not isinstance(value, np.ndarray):
        raise StateError(where, f"expected an array, got {_describe(value)}")
    if value.dtype.kind != "f":
        raise StateError(where, f"expected a float array, got dtype {value.dtype}")
    if shape is not None and value.shape != tuple(shape):
        raise StateError(where, f"shape {list(value.shape)} does not match {list(shape)}")
    if not np.isfinite(value).all():
        bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
        raise StateError(where, f"holds {bad} NaN or infinite value{'s' if bad > 1 else ''}")
    return value


def require_generator_state(value: Any, where: str) -> None:
    """A numpy bit generator's state that numpy accepts."""
    require_map(value, where, ("bit_generator", "state"))
    if not isinstance(value["bit_generator"], str) or not hasattr(
        np.random, value["bit_generator"]
    ):
        raise StateError(where, f"unknown bit generator {value['bit_generator']!r}")
    try:
        new_generator(value)
    except Exception as error:  # numpy raises ValueError, TypeError or KeyError here
        raise StateError(
            where, f"not a valid {value['bit_generator']} state ({type(error).__name__}: {error})"
        ) from None


def require_numeric_data(value: Any, where: str, depth: int = 0) -> None:
    """Numbers, numeric arrays, None, and lists and maps of those (metric values)."""
    if value is None or isinstance(value, (bool, int, float, np.number, np.bool_)):
        return
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise StateError(where, f"a metric array must be numeric, got dtype {value.dtype}")
        return
    if depth < 8 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            require_numeric_data(item, f"{where}[{i}]", depth + 1)
        return
    if depth < 8 and isinstance(value, dict):
        for key, item in value.items():
            require_numeric_data(item, f"{where}[{key!r}]", depth + 1)
        return
    raise StateError(where, f"a metric value must be a number, got {_describe(value)}")


def check_loads(component: Any, state: Any, where: str) -> None:
    """Raises `StateError` unless a scratch copy of `component` takes `state` with its own
    `set_state` (exploration, connector pipelines, replay buffers)."""
    try:
        copy.deepcopy(component).set_state(state)
    except StateError:
        raise
    except Exception as error:  # a component's own set_state may raise anything
        raise StateError(where, f"{type(error).__name__}: {error}") from None


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"
