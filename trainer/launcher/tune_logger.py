"""Tune's `ray.tune.logger.pretty_print` under Ray's stand-in: RLlib scripts print results with
it (`print(pretty_print(algo.train()))`), which needs nothing of Tune's runner. Its other names
(loggers and logger callbacks) are Tune's runner: they import and fail when used
(`trainer.launcher.table`).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["pretty_print"]

#: Tune's `_SEQUENCE_LEN_FLOW_STYLE`: longer lists print on one line (`[1, 2, 3, 4]`).
SEQUENCE_LEN_FLOW_STYLE = 3


class _SafeFallbackEncoder(json.JSONEncoder):
    """Tune's encoder for results: numpy values as Python ones, NaN as null, anything else as
    its `str`."""

    def default(self, value: Any) -> Any:
        try:
            if isinstance(value, np.ndarray):
                return value.tolist()
            if isinstance(value, np.bool_):
                return bool(value)
            if np.isnan(value):
                return "null"
            if isinstance(value, numbers.Integral):
                return int(value)
            if isinstance(value, numbers.Number):
                number: Any = value  # a numbers.Number: float() takes it
                return float(number)
            return super().default(value)
        except Exception:  # noqa: BLE001 - as Tune: a value it cannot encode prints as text
            return str(value)


def pretty_print(result: Mapping[str, Any], exclude: set[str] | None = None) -> str:
    """A result dict as YAML text (Tune's function): `config` and `hist_stats` left out, as are
    None values and the keys in `exclude`. Without PyYAML, indented JSON."""
    shown = {**result, "config": None, "hist_stats": None}
    kept = {
        key: value
        for key, value in shown.items()
        if value is not None and (exclude is None or key not in exclude)
    }
    cleaned = json.loads(json.dumps(kept, cls=_SafeFallbackEncoder))
    try:
        import yaml  # type: ignore[import-untyped]  # optional: Ray Tune's, not this project's
    except ImportError:
        return json.dumps(cleaned, indent=2)

    class FlowLongSequences(yaml.SafeDumper):  # Tune's _RayDumper
        def represent_sequence(self, tag: Any, sequence: Any, flow_style: Any = None) -> Any:
            if len(sequence) > SEQUENCE_LEN_FLOW_STYLE:
                flow_style = True
            return super().represent_sequence(tag, sequence, flow_style=flow_style)

    return str(yaml.dump(cleaned, Dumper=FlowLongSequences, default_flow_style=False))
