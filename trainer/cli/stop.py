"""When training stops, and how long that is likely to take.

Five criteria, as Tune's stop dict names the result keys; the first one reached stops training:
`training_iteration`, `num_env_steps_sampled_lifetime`, `env_runners/episode_return_mean`,
`evaluation/env_runners/episode_return_mean` (the evaluation's return, which RLlib's tuned
examples stop on) and `time_total_s` (training seconds, counted across resumes like the other
two counters).
"""

from __future__ import annotations

import dataclasses
import math

from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TRAINING_ITERATION,
)


@dataclasses.dataclass
class StopCriteria:
    iterations: int | None = None
    env_steps: int | None = None
    mean_return: float | None = None
    seconds: float | None = None
    evaluation_return: float | None = None

    @property
    def target_return(self) -> float | None:
        """The return the run aims at (the training's, else the evaluation's), for plots."""
        return self.mean_return if self.mean_return is not None else self.evaluation_return

    def describe(self) -> str:
        parts = []
        if self.mean_return is not None:
            parts.append(f"mean return >= {self.mean_return:g}")
        if self.evaluation_return is not None:
            parts.append(f"evaluation mean return >= {self.evaluation_return:g}")
        if self.env_steps is not None:
            parts.append(f"{self.env_steps} env steps")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s of training")
        if self.iterations is not None:
            parts.append(f"{self.iterations} iterations")
        return " or ".join(parts) if parts else "never (stop with Ctrl-C)"

    def reason(self, result: dict) -> str | None:
        """Why training stops after `result` (a result dict, or a row of result.json), or None
        to go on."""
        reached = self.reached(result)
        return reached[0][1] if reached else None

    def reached(self, result: dict) -> list[tuple[str, str]]:
        """(field, why) of each criterion `result` meets, in the order `reason` reports them."""
        reached = []
        mean_return = _number(result[ENV_RUNNER_RESULTS].get(EPISODE_RETURN_MEAN))
        if self.mean_return is not None and mean_return >= self.mean_return:  # NaN: False
            reached.append(
                ("mean_return", f"reached mean return {mean_return:.2f} >= {self.mean_return:g}")
            )
        evaluation_return = evaluation_mean_return(result)
        if (
            self.evaluation_return is not None
            and evaluation_return is not None
            and evaluation_return >= self.evaluation_return
        ):
            reached.append(
                (
                    "evaluation_return",
                    f"reached evaluation mean return {evaluation_return:.2f} >= "
                    f"{self.evaluation_return:g}",
                )
            )
        steps = result[NUM_ENV_STEPS_SAMPLED_LIFETIME]
        if self.env_steps is not None and steps >= self.env_steps:
            reached.append(("env_steps", f"reached {steps} env steps >= {self.env_steps}"))
        seconds = result["time_total_s"]
        if self.seconds is not None and seconds >= self.seconds:
            reached.append(
                ("seconds", f"reached {seconds:.1f} s of training >= {self.seconds:g} s")
            )
        if self.iterations is not None and result[TRAINING_ITERATION] >= self.iterations:
            reached.append(("iterations", f"reached {self.iterations} iterations"))
        return reached


def evaluation_mean_return(result: dict) -> float | None:
    """The evaluation's mean episode return in `result`; None before the first evaluation (or
    when it finished no episode)."""
    value = (result.get(EVALUATION_RESULTS) or {}).get(ENV_RUNNER_RESULTS) or {}
    number = _number(value.get(EPISODE_RETURN_MEAN))
    return None if math.isnan(number) else number


#: How far the time-left estimate may move from one row to the next (in iterations left, after
#: the iteration that passed): down to a third, up to twice. A noisy return trend then moves the
#: estimate gradually instead of jumping between seconds and minutes.
MOST_SHRINK = 3.0
MOST_GROWTH = 2.0
#: Iterations the return trend is fitted over.
TREND_WINDOW = 10


@dataclasses.dataclass(frozen=True)
class Point:
    """What the time-left estimate uses of one result."""

    seconds: float  # time_total_s
    iteration: int
    env_steps: int
    mean_return: float  # the criterion's return (NaN before there is one)


class Progress:
    """Follows the results of one session to estimate the time left to the nearest stop
    criterion and the fraction done, for the display.

    The time left is counted in iterations, times the session's mean iteration time. The
    counters (iterations, env steps, seconds) give exact counts; a return criterion is
    extrapolated from the trend of the last TREND_WINDOW returns (marked "~"). The estimate
    shown is the smallest, kept within MOST_SHRINK and MOST_GROWTH of the previous row's so that
    a noisy return does not make it jump."""

    def __init__(self, stop: StopCriteria):
        self.stop = stop
        self.points: list[Point] = []
        self._first_return: float | None = None
        self._left: tuple[float, str] | None = None  # (iterations left, criterion)

    def add(self, result: dict) -> None:
        mean_return = _number(result[ENV_RUNNER_RESULTS].get(EPISODE_RETURN_MEAN))
        if self.stop.mean_return is None and self.stop.evaluation_return is not None:
            evaluation_return = evaluation_mean_return(result)
            mean_return = math.nan if evaluation_return is None else evaluation_return
        self.points.append(
            Point(
                result["time_total_s"],
                result[TRAINING_ITERATION],
                result[NUM_ENV_STEPS_SAMPLED_LIFETIME],
                mean_return,
            )
        )
        if self._first_return is None and not math.isnan(mean_return):
            self._first_return = mean_return
        self._left = iterations_left(self.points, self.stop, self._left)

    def seconds_per_iteration(self) -> float | None:
        """The session's mean iteration time; None before its second result."""
        if len(self.points) < 2 or self.points[-1].iteration <= self.points[0].iteration:
            return None
        first, last = self.points[0], self.points[-1]
        return max(0.0, last.seconds - first.seconds) / (last.iteration - first.iteration)

    def time_left(self) -> tuple[float, str] | None:
        """(seconds, what they lead to) for the criterion expected first; None when no
        criterion can be estimated yet."""
        per_iteration = self.seconds_per_iteration()
        if self._left is None or per_iteration is None:
            return None
        iterations, criterion = self._left
        return iterations * per_iteration, criterion

    def fraction_done(self) -> float:
        """How far along the criterion closest to done is, in [0, 1]."""
        if not self.points:
            return 0.0
        last = self.points[-1]
        fractions = []
        if self.stop.iterations:
            fractions.append(last.iteration / self.stop.iterations)
        if self.stop.env_steps:
            fractions.append(last.env_steps / self.stop.env_steps)
        if self.stop.seconds:
            fractions.append(last.seconds / self.stop.seconds)
        target = self.stop.target_return
        if (
            target is not None
            and self._first_return is not None
            and not math.isnan(last.mean_return)
        ):
            # From 0, or from the first return seen when it was below 0 (Acrobot's -500).
            baseline = min(self._first_return, 0.0)
            span = target - baseline
            fractions.append((last.mean_return - baseline) / span if span > 0 else 1.0)
        return min(1.0, max([0.0, *fractions]))


def iterations_left(
    points: list[Point], stop: StopCriteria, previous: tuple[float, str] | None = None
) -> tuple[float, str] | None:
    """(iterations left, criterion) after the last of `points` (one session's, oldest first),
    for the criterion expected first; `previous` is this function's answer one point earlier,
    which bounds how far the answer moves. None while nothing can be estimated."""
    if len(points) < 2:
        return None
    first, last = points[0], points[-1]
    done = last.iteration - first.iteration
    elapsed = last.seconds - first.seconds
    if done <= 0:
        return previous
    estimates: list[tuple[float, str]] = []
    if stop.iterations is not None:
        estimates.append(
            (max(0, stop.iterations - last.iteration), f"{stop.iterations} iterations")
        )
    steps_per_iteration = (last.env_steps - first.env_steps) / done
    if stop.env_steps is not None and steps_per_iteration > 0:
        estimates.append(
            (
                math.ceil(max(0, stop.env_steps - last.env_steps) / steps_per_iteration),
                f"{stop.env_steps} env steps",
            )
        )
    if stop.seconds is not None and elapsed > 0:
        estimates.append(
            (max(0.0, stop.seconds - last.seconds) * done / elapsed, f"{stop.seconds:g} s")
        )
    counted = min(estimates) if estimates else None
    target = stop.target_return
    if target is None:
        return counted
    trend = None
    recent = [(p.iteration, p.mean_return) for p in points[-TREND_WINDOW:]]
    slope = _slope([(x, y) for x, y in recent if not math.isnan(y)])
    if slope is not None and slope > 0 and not math.isnan(last.mean_return):
        trend = max(0.0, (target - last.mean_return) / slope)
    if previous is not None:
        # One iteration passed since the previous estimate: move from there, within bounds
        # (no trend, as when the return fell: the estimate grows, within bounds).
        before = previous[0] - 1
        low, high = max(before, 0.0) / MOST_SHRINK, max(previous[0], 1.0) * MOST_GROWTH
        trend = min(max(trend if trend is not None else math.inf, low), high)
    elif trend is None:
        return counted
    returned = (trend, f"~return {target:g}")
    return returned if counted is None or trend < counted[0] else counted


def _number(value: float | None) -> float:
    """A result's number as a float; NaN for None (result.json writes NaN as null)."""
    return math.nan if value is None else float(value)


def _slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None with fewer than 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    if variance == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / variance
