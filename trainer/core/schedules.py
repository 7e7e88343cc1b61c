"""Values that change with the env timestep: a constant, or RLlib's piecewise-linear schedule
`[(timestep, value), ...]` (linear between the points, the last value after the last point)."""

from __future__ import annotations

from typing import Any

from trainer.util.checks import int_at_least, is_number


class Schedule:
    """`value(t)` of a constant or of a piecewise-linear list of `(t, value)` points."""

    def __init__(
        self,
        spec: float | list | tuple,
        *,
        setting: str = "schedule",
        low: float | None = None,
        high: float | None = None,
    ):
        self.spec = spec
        self.points = _check(spec, setting, low, high)

    def value(self, t: int | float) -> float:
        points = self.points
        if t <= points[0][0]:
            return points[0][1]
        for (t0, v0), (t1, v1) in zip(points, points[1:], strict=False):
            if t < t1:
                return v0 + (t - t0) / (t1 - t0) * (v1 - v0)
        return points[-1][1]

    def __repr__(self) -> str:
        return f"Schedule({self.spec!r})"


def _check(
    spec: Any, setting: str, low: float | None, high: float | None
) -> list[tuple[float, float]]:
    bounds = ""
    if low is not None and high is not None:
        bounds = f" in [{low}, {high}]"
    allowed = (
        f"a number{bounds}, or a schedule [(timestep, value), ...] starting at timestep 0 "
        "with increasing timesteps"
    )

    def fits(v: Any) -> bool:
        return is_number(v) and (low is None or v >= low) and (high is None or v <= high)

    if is_number(spec):
        if not fits(spec):
            raise ValueError(f"{setting}={spec!r}: must be {allowed}")
        return [(0, float(spec))]
    if not isinstance(spec, (list, tuple)) or not spec:
        raise ValueError(f"{setting}={spec!r}: must be {allowed}")
    points: list[tuple[float, float]] = []
    for i, point in enumerate(spec):
        if not (isinstance(point, (list, tuple)) and len(point) == 2):
            raise ValueError(
                f"{setting}={spec!r}: entry {i} ({point!r}) is not a "
                f"(timestep, value) pair; must be {allowed}"
            )
        t, v = point
        if int_at_least(0)(t) is not None:
            raise ValueError(
                f"{setting}={spec!r}: entry {i} has timestep {t!r}, which is not an int >= 0"
            )
        if not fits(v):
            raise ValueError(
                f"{setting}={spec!r}: entry {i} has value {v!r}; values must be numbers{bounds}"
            )
        if points and t <= points[-1][0]:
            raise ValueError(
                f"{setting}={spec!r}: timesteps must increase, but entry {i} "
                f"({t}) comes after {points[-1][0]}"
            )
        points.append((t, float(v)))
    if points[0][0] != 0:
        raise ValueError(
            f"{setting}={spec!r}: a schedule must start at timestep 0, this one "
            f"starts at {points[0][0]}"
        )
    return points
