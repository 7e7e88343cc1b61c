"""Curriculum learning: envs whose task (difficulty) can be changed during training.

An env opts in by implementing `get_task()` and `set_task(task)` (subclassing `TaskSettableEnv`
says so). Tasks are changed in one of three ways, as in RLlib:
- `config.environment(env_task_fn=fn)`: after every `train()`, each sub-env of each training
  EnvRunner gets `set_task(fn(train_results, sub_env, env_context))`;
- a loop around `train()` or an `on_train_result` callback calling
  `algorithm.env_runner_group.foreach_env_runner(lambda r: r.foreach_env(lambda e: e.set_task(t)))`
  (or the older `algorithm.workers.foreach_worker(...)`).
The current task is EnvRunner state: `EnvRunner.get_state()` holds each sub-env's task, so a
checkpoint restores it, and the EnvRunnerGroup hands it to a restarted runner (which would
otherwise come back on the env's initial task).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym


class TaskSettableEnv(gym.Env):
    """An env with tasks (for example difficulty levels). Subclasses implement `get_task` and
    `set_task`; `sample_tasks` is optional (for meta-learning setups that draw tasks)."""

    def sample_tasks(self, n_tasks: int) -> list:
        """`n_tasks` tasks drawn from this env's task distribution."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample_tasks()")

    def set_task(self, task: Any) -> None:
        """Switches the env to `task`; it applies from the next `reset()` on (or at once, if
        the env says so)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement set_task()")

    def get_task(self) -> Any:
        """The current task. It must be plain data (numbers, strings, lists, dicts, numpy
        arrays): checkpoints store it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_task()")


def is_task_settable(env: Any) -> bool:
    """Whether `env` (a raw sub-env) has tasks: `get_task` and `set_task`, implemented."""
    for name in ("get_task", "set_task"):
        method = getattr(type(env), name, None)
        if method is None or method is getattr(TaskSettableEnv, name):
            return False
    return True


def check_task_settable(env: Any, setting: str) -> None:
    """Raises a `TypeError` naming `setting` when `env` has no tasks."""
    if not is_task_settable(env):
        raise TypeError(
            f"{setting} is set, but the env {type(env).__qualname__} has no tasks: it must "
            "implement get_task() and set_task(task) (subclass trainer.TaskSettableEnv)"
        )


def apply_env_task_fn(env_runner: Any, env_task_fn: Callable, train_results: dict) -> list:
    """Runs inside an EnvRunner (the Algorithm sends it to each training runner after every
    `train()`): sets each sub-env's task to `env_task_fn(train_results, sub_env, env_context)`;
    returns the new tasks (see `EnvRunner.apply_env_task_fn`)."""
    return env_runner.apply_env_task_fn(env_task_fn, train_results)


#: `task_if_settable`'s answer for a sub-env without tasks (a string: it travels back from
#: the child processes of "async" mode by value).
NO_TASK = "<trainer: sub-env without tasks>"


def task_if_settable(env: Any, env_context: Any) -> Any:
    """Runs in a sub-env's process: its task, or `NO_TASK` (`env`: any gymnasium env)."""
    return env.get_task() if is_task_settable(env) else NO_TASK


def check_task_settable_for_env_task_fn(env: gym.Env, env_context: Any) -> None:
    """Runs in a sub-env's process: `check_task_settable` for `env_task_fn`."""
    check_task_settable(env, "env_task_fn")
