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


class Scheduler:
    """RLlib's `Scheduler` (`ray.rllib.utils.schedules.scheduler`): a value that follows a
    schedule as the learner's `update(timestep)` calls it, read with `get_current_value()`.

    `fixed_value_or_schedule` is a number (the value, always) or RLlib's schedule `[[timestep,
    value], ...]` from timestep 0, linear between its points and its last value after them; a
    schedule's value starts as its first. The value is a Python float here (RLlib holds a
    schedule's value in a framework tensor); `framework` and `device` are accepted."""

    def __init__(
        self,
        fixed_value_or_schedule: Any,
        *,
        framework: str | None = "torch",
        device: Any = None,
        setting: str = "schedule",
    ) -> None:
        self.framework = framework
        self.device = device
        self.use_schedule = isinstance(fixed_value_or_schedule, (list, tuple))
        self._schedule = Schedule(fixed_value_or_schedule, setting=setting)
        self._curr_value: float = self._schedule.value(0)

    @staticmethod
    def validate(*, fixed_value_or_schedule: Any, setting_name: str, description: str) -> None:
        """RLlib's check of a setting that takes a number or a schedule: a ValueError naming
        `setting_name` unless it is a number, None, or a list of two or more `(timestep,
        value)` pairs starting at timestep 0."""
        if fixed_value_or_schedule is None or is_number(fixed_value_or_schedule):
            return
        example = "`[(0, 0.001), (1e6, 0.0001), (2e6, 0.00005)]`"
        if (
            not isinstance(fixed_value_or_schedule, (list, tuple))
            or len(fixed_value_or_schedule) < 2
        ):
            raise ValueError(
                f"Invalid `{setting_name}` ({fixed_value_or_schedule}) specified! Must be a list "
                f"of 2 or more tuples, each of the form (`timestep`, `{description} to reach`), "
                f"for example {example}."
            )
        if any(
            not isinstance(pair, (list, tuple)) or len(pair) != 2
            for pair in fixed_value_or_schedule
        ):
            raise ValueError(
                f"When providing a `{setting_name}` schedule, each tuple in the schedule list "
                f"must have exactly 2 items of the form (`timestep`, `{description} to reach`), "
                f"for example {example}."
            )
        if fixed_value_or_schedule[0][0] != 0:
            raise ValueError(
                f"When providing a `{setting_name}` schedule, the first timestep must be 0 and "
                f"the corresponding lr value is the initial {description}! You provided "
                f"ts={fixed_value_or_schedule[0][0]} {description}="
                f"{fixed_value_or_schedule[0][1]}."
            )

    def get_current_value(self) -> float:
        """The current value (what the last `update` set; a schedule's first value before)."""
        return self._curr_value

    def update(self, timestep: int | float) -> float:
        """The value at `timestep`, which becomes the current value (a fixed value stays)."""
        if self.use_schedule:
            self._curr_value = self._schedule.value(timestep)
        return self._curr_value
