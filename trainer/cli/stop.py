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
        """Why training stops after `result`, or None to go on."""
        mean_return = result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN]
        if (
            self.mean_return is not None
            and not math.isnan(mean_return)
            and mean_return >= self.mean_return
        ):
            return f"reached mean return {mean_return:.2f} >= {self.mean_return:g}"
        evaluation_return = evaluation_mean_return(result)
        if (
            self.evaluation_return is not None
            and evaluation_return is not None
            and evaluation_return >= self.evaluation_return
        ):
            return (
                f"reached evaluation mean return {evaluation_return:.2f} >= "
                f"{self.evaluation_return:g}"
            )
        steps = result[NUM_ENV_STEPS_SAMPLED_LIFETIME]
        if self.env_steps is not None and steps >= self.env_steps:
            return f"reached {steps} env steps >= {self.env_steps}"
        if self.seconds is not None and result["time_total_s"] >= self.seconds:
            return f"reached {result['time_total_s']:.1f} s of training >= {self.seconds:g} s"
        if self.iterations is not None and result[TRAINING_ITERATION] >= self.iterations:
            return f"reached {self.iterations} iterations"
        return None


def evaluation_mean_return(result: dict) -> float | None:
    """The evaluation's mean episode return in `result`; None before the first evaluation (or
    when it finished no episode)."""
    value = result.get(EVALUATION_RESULTS, {}).get(ENV_RUNNER_RESULTS, {}).get(EPISODE_RETURN_MEAN)
    return None if value is None or math.isnan(value) else float(value)


class Progress:
    """Follows the results of one session to estimate the time left to the nearest stop
    criterion and the fraction done, for the display."""

    #: Iterations the rates are averaged over.
    WINDOW = 5

    def __init__(self, stop: StopCriteria):
        self.stop = stop
        self.points: list[tuple[float, int, int, float]] = []  # time, iteration, steps, return
        self._first_return: float | None = None

    def add(self, result: dict) -> None:
        mean_return = result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN]
        if self.stop.mean_return is None and self.stop.evaluation_return is not None:
            evaluation_return = evaluation_mean_return(result)
            mean_return = math.nan if evaluation_return is None else evaluation_return
        self.points.append(
            (
                result["time_total_s"],
                result[TRAINING_ITERATION],
                result[NUM_ENV_STEPS_SAMPLED_LIFETIME],
                mean_return,
            )
        )
        if self._first_return is None and not math.isnan(mean_return):
            self._first_return = mean_return

    def time_left(self) -> tuple[float, str] | None:
        """(seconds, what they lead to) for the criterion expected first; None when no
        criterion can be estimated yet. A return criterion is extrapolated from the recent
        trend, marked with "~"."""
        if len(self.points) < 2:
            return None
        recent = self.points[-self.WINDOW - 1 :]
        (t0, i0, s0, _), (t1, i1, s1, r1) = recent[0], recent[-1]
        elapsed = t1 - t0
        if elapsed <= 0:
            return None
        estimates = []
        if self.stop.iterations is not None and i1 > i0:
            estimates.append(
                (
                    max(0, self.stop.iterations - i1) * elapsed / (i1 - i0),
                    f"{self.stop.iterations} iterations",
                )
            )
        if self.stop.env_steps is not None and s1 > s0:
            estimates.append(
                (
                    max(0, self.stop.env_steps - s1) * elapsed / (s1 - s0),
                    f"{self.stop.env_steps} env steps",
                )
            )
        if self.stop.seconds is not None:
            estimates.append((max(0.0, self.stop.seconds - t1), f"{self.stop.seconds:g} s"))
        slope = _slope([(t, r) for t, _, _, r in recent if not math.isnan(r)])
        target = self.stop.target_return
        if target is not None and slope is not None and slope > 0 and not math.isnan(r1):
            estimates.append((max(0.0, (target - r1) / slope), f"~return {target:g}"))
        return min(estimates) if estimates else None

    def fraction_done(self) -> float:
        """How far along the criterion closest to done is, in [0, 1]."""
        if not self.points:
            return 0.0
        t, iteration, steps, mean_return = self.points[-1]
        fractions = []
        if self.stop.iterations:
            fractions.append(iteration / self.stop.iterations)
        if self.stop.env_steps:
            fractions.append(steps / self.stop.env_steps)
        if self.stop.seconds:
            fractions.append(t / self.stop.seconds)
        target = self.stop.target_return
        if target is not None and self._first_return is not None and not math.isnan(mean_return):
            # From 0, or from the first return seen when it was below 0 (Acrobot's -500).
            baseline = min(self._first_return, 0.0)
            span = target - baseline
            fractions.append((mean_return - baseline) / span if span > 0 else 1.0)
        return min(1.0, max([0.0, *fractions]))


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
