"""The rollout loop both EnvRunners run, and the recorder interface it drives.

One `sample()` call of either runner is one `collect_rollout` over a recorder made for that
call: the single-agent `ColumnRecorder` (`runners/rollout.py`: a numpy row per vector step,
autoreset at the next step, episodes as views of the rows) or the `MultiAgentRecorder`
(`runners/multi_agent_recorder.py`: per-agent columns, sub-envs stepped one after the other, a
sub-env reset as soon as its episode ends). The loop owns what the sampling modes share: when
to stop (`num_timesteps` steps, `num_episodes` ended episodes, or the steps and then the
running episodes played out), the runner's step counters, and when recovery runs; the
recorder owns the steps, the episodes and the call's result and metrics.

Per step, in this order (the draws of the runner's generators follow it, so seeded runs stay
the same bit for bit): the actions (`act`: a forward pass, or random actions), the env step
(`step`), the step recorded (`record`), then failed sub-envs re-created (`recover`). As
Stable-Baselines3's `collect_rollouts`:

    while not enough:
        actions = policy(obs); results = env.step(actions); buffer.add(results, actions)
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, Protocol


class Recorder(Protocol):
    """What `collect_rollout` drives: one `sample()` call's steps into episodes.

    Made by the runner for one call, after the runner reset its sub-envs where the mode asks
    for fresh episodes; the loop then calls, per step, `act`, `step`, `record` (unless `step`
    re-created the env) and, while `failed`, `recover`; `drain` once the steps are sampled in
    a complete-episodes call; `finish` once, at the end."""

    @property
    def episodes(self) -> Sized:
        """The episodes that ended in this call so far (what `num_episodes` counts)."""

    #: The steps this call took so far, as `num_timesteps` counts them: env steps (the
    #: multi-agent runner's agent steps with `count_steps_by="agent_steps"`).
    timesteps: int

    @property
    def failed(self) -> object:
        """Truthy when sub-envs may have raised in the last step: `recover` runs then."""

    def act(self, explore: bool, random_actions: bool) -> Any:
        """The next step's actions for the sub-envs that step (a forward pass of the module
        over their last observations, or actions drawn from the action space), with the
        model outputs the episodes record."""

    def step(self, actions: Any) -> Any:
        """The env stepped with `actions`: its results, or None where the vector env raised
        and was re-created (every sub-env then started a fresh episode; the steps of the
        episodes under way are lost). The multi-agent recorder returns them lazily: each
        sub-env steps as `record` takes its result (it re-creates its sub-envs one by one,
        in `recover`)."""

    def record(self, results: Any, actions: Any) -> int:
        """Records the step's `results` (for `actions`) into the episodes: an episode that
        ended goes into `episodes` and its sub-env starts the next one (or idles once
        `drain` was called). Returns the env steps taken, which the runner's step counters
        get."""

    def recover(self) -> None:
        """Re-creates the sub-envs whose last step raised (restart_failed_sub_environments):
        their episodes are dropped and each new sub-env starts a fresh one (or idles once
        `drain` was called); a failed step counts as no step of the call."""

    def drain(self) -> None:
        """The call has its steps and lets the running episodes play out: from now on an
        episode that ends starts no next one; its sub-env idles. Called before every step
        from then on."""

    def all_idle(self) -> bool:
        """Whether every sub-env idles (after `drain`: every running episode ended)."""

    def finish(self, *, num_episodes: int | None, cut: bool) -> list:
        """The call's episodes, its metrics logged: the ended ones (the first `num_episodes`
        of them where given), then, where `cut`, each running episode's chunk so far, which
        continues in the next call; without `cut` the running episodes are dropped (the next
        call starts fresh ones)."""


def collect_rollout(
    runner: Any,
    recorder: Recorder,
    num_timesteps: int,
    explore: bool,
    *,
    random_actions: bool = False,
    num_episodes: int | None = None,
    complete: bool = False,
) -> list:
    """Steps `runner`'s envs through `recorder` and returns the episodes it recorded.

    It stops once `num_episodes` episodes ended (the running ones are dropped), else after
    `num_timesteps` steps (the unfinished episodes go out as chunks), or, `complete`, once
    `num_timesteps` steps are sampled and the running episodes played out (`drain`)."""
    while True:
        if num_episodes is not None:
            if len(recorder.episodes) >= num_episodes:
                break
        elif recorder.timesteps >= num_timesteps:
            if not complete or recorder.all_idle():
                break
            recorder.drain()
        actions = recorder.act(explore, random_actions)
        results = recorder.step(actions)
        if results is None:  # the vector env was re-created: every sub-env started afresh
            continue
        stepped = recorder.record(results, actions)
        runner.global_timestep += stepped
        runner.num_env_steps_stepped += stepped
        if recorder.failed:  # re-created after the step, as RLlib's runners do
            recorder.recover()
    return recorder.finish(num_episodes=num_episodes, cut=not complete)
