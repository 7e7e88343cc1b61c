"""RLlib's older callback forms, kept working. Each logs one deprecation warning per process that
names its replacement (`warn_once`); EnvRunner worker processes collect theirs and the main
process logs them (see `trainer.runners.worker`), so a form used in 4 runners warns once.

Old forms handled here:
- old argument names of the EnvRunner events: `worker` (now `env_runner`), `base_env` (now `env`;
  its `get_sub_environments()` works), `policies` (now `rl_module`, as
  `{"default_policy": module}`). A method that declares one of them gets them passed.
- old events: `on_workers_recreated` (now `on_env_runners_recreated`) and
  `on_sub_environment_created` (fired after each sub-env is created; now
  `on_environment_created`). `on_create_policy`, `on_postprocess_trajectory` and
  `on_learn_on_batch` have no counterpart here (there is no Policy and no SampleBatch): a class
  that overrides them gets a warning that they are never called.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from trainer.util.deprecation import (  # noqa: F401 (their older import path)
    _warned,  # the once-per-process memory (tests clear it)
    collect_in_this_process,
    drain,
    warn_once,
)

logger = logging.getLogger("trainer")

#: Old argument name -> its current name, for the EnvRunner events.
OLD_ARGUMENTS = {"worker": "env_runner", "base_env": "env", "policies": "rl_module"}
#: Old events still fired here (under their new event) -> the keyword arguments they get.
OLD_EVENT_KEYWORDS = {
    "on_workers_recreated": ("algorithm", "worker_set", "worker_ids", "is_evaluation"),
}
#: Events RLlib still defines that nothing here fires (old-stack ones, and the offline-runner
#: one), and what to use instead.
NEVER_CALLED = {
    "on_create_policy": "nothing: there are no Policy objects (the RLModule is env_runner.module)",
    "on_postprocess_trajectory": "on_episode_end (edit the episode) or on_sample_end",
    "on_learn_on_batch": "on_sample_end (the samples) or on_train_result (the results)",
    "on_offline_eval_runners_recreated": (
        "nothing: offline evaluation runs in the driver, with no runners to recreate"
    ),
}


class BaseEnvView:
    """What old callbacks got as `base_env`: the vector env, plus `get_sub_environments()`."""

    def __init__(self, vector_env: Any):
        self._env = vector_env

    def get_sub_environments(self) -> list:
        return [sub_env.unwrapped for sub_env in self._env.envs]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


def _overridden(method: Any) -> bool:
    """Whether `method` is a handler of the user's, not `RLlibCallback`'s no-op (marked so)."""
    return callable(method) and not getattr(method, "__localrl_base_no_op__", False)


def _old_arguments_of(fn: Callable) -> list[str]:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    return [name for name in OLD_ARGUMENTS if name in parameters]


def adapt_old_arguments(name: str, fn: Callable) -> Callable:
    """`fn` itself, or (when it declares `worker`, `base_env` or `policies`) a wrapper that
    passes those too; warns once per callback."""
    old = _old_arguments_of(fn)
    if not old:
        return fn
    warn_once(
        f"{name}({', '.join(a + '=' for a in old)})", ", ".join(OLD_ARGUMENTS[a] + "=" for a in old)
    )

    def with_old_arguments(**kwargs: Any) -> Any:
        if "worker" in old:
            kwargs["worker"] = kwargs.get("env_runner")
        if "base_env" in old:
            env = kwargs.get("env")
            kwargs["base_env"] = None if env is None else BaseEnvView(env)
        if "policies" in old:
            kwargs["policies"] = {"default_policy": kwargs.get("rl_module")}
        return fn(**kwargs)

    return with_old_arguments


def old_event_handlers(
    instance: Any, event: str, *, on_algorithm_side: bool
) -> list[tuple[str, Callable]]:
    """Handlers for `event` that come from an old event name of `instance`'s class."""
    name = type(instance).__qualname__
    if event == "on_env_runners_recreated":
        method = getattr(instance, "on_workers_recreated", None)
        if method is None or not _overridden(method):
            return []
        if on_algorithm_side:  # the event fires there only
            warn_once(
                f"{name}.on_workers_recreated(worker_set=, worker_ids=)",
                "on_env_runners_recreated(env_runner_group=, env_runner_indices=)",
            )

        def recreated(
            *,
            algorithm: Any,
            env_runner_group: Any,
            env_runner_indices: list[int],
            is_evaluation: bool,
            **kwargs: Any,
        ) -> None:
            method(
                algorithm=algorithm,
                worker_set=env_runner_group,
                worker_ids=env_runner_indices,
                is_evaluation=is_evaluation,
                **kwargs,
            )

        return [(f"{name}.on_workers_recreated", recreated)]
    return []


def warn_never_called(instances: list[Any]) -> None:
    for instance in instances:
        for event, instead in NEVER_CALLED.items():
            if _overridden(getattr(instance, event, None)):
                warn_once(f"{type(instance).__qualname__}.{event} (never called here)", instead)
