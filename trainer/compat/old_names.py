"""RLlib's older method and attribute names, as mixins on the classes they attach to. Each logs
one deprecation warning per process naming its replacement (`trainer.util.deprecation`), then
does exactly what the new name does.

    mixin (or function)         on                   older names
    OldAlgorithmNames           Algorithm            workers, save_checkpoint, load_checkpoint
    OldConfigNames              AlgorithmConfig      rollouts(...)
    OldEnvRunnerGroupNames      EnvRunnerGroup       local_worker(), foreach_worker(...)
    old_worker_callbacks()      EnvRunner.callbacks  (the old stack's worker.callbacks)

Older config keys, result keys and episode attributes are in `trainer.compat.old_api`, older
callback forms in `trainer.compat.old_callbacks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.util.deprecation import warn_once

# The mixins sit below the classes they attach to (each imports this module): what they use of
# them is declared on each mixin for the type checker, the objects the mixins only hand on as
# `Any`.


class OldAlgorithmNames:
    if TYPE_CHECKING:  # what the mixin uses of `Algorithm`
        env_runner_group: Any  # its EnvRunnerGroup

        def save_to_path(self, path: str | os.PathLike | None = None) -> str: ...

        def restore_from_path(self, path: str | os.PathLike) -> None: ...

    @property
    def workers(self) -> Any:
        """RLlib's older name for `env_runner_group`."""
        warn_once("algorithm.workers", "algorithm.env_runner_group")
        return self.env_runner_group

    def save_checkpoint(self, checkpoint_dir: str | os.PathLike) -> None:
        """RLlib's older name: `save_to_path(checkpoint_dir)`."""
        warn_once("algorithm.save_checkpoint(dir)", "algorithm.save_to_path(dir)")
        self.save_to_path(checkpoint_dir)

    def load_checkpoint(self, checkpoint_dir: str | os.PathLike) -> None:
        """RLlib's older name: `restore_from_path(checkpoint_dir)`."""
        warn_once("algorithm.load_checkpoint(dir)", "algorithm.restore_from_path(dir)")
        self.restore_from_path(checkpoint_dir)


class OldConfigNames:
    if TYPE_CHECKING:  # what the mixin uses of `AlgorithmConfig`

        def env_runners(self, **kwargs: Any) -> Any: ...

    def rollouts(self, **kwargs: Any) -> Any:
        """RLlib's older name of `env_runners()` (with `num_rollout_workers`,
        `num_envs_per_worker`)."""
        warn_once("config.rollouts(...)", "config.env_runners(...)")
        return self.env_runners(**kwargs)


class OldEnvRunnerGroupNames:
    if TYPE_CHECKING:  # what the mixin uses of `EnvRunnerGroup`
        local_env_runner: Any  # its local EnvRunner, or None

        def foreach_env_runner(
            self,
            func: Callable | str,
            *,
            local_env_runner: bool = True,
            remote_worker_ids: list[int] | None = None,
            timeout_seconds: float | None = None,
            kwargs: dict | None = None,
            healthy_only: bool = True,
            return_obj_refs: bool = False,
            mark_healthy: bool = False,
        ) -> list: ...

    def local_worker(self) -> Any:
        """RLlib's older name of `local_env_runner` (a method there)."""
        warn_once("env_runner_group.local_worker()", "env_runner_group.local_env_runner")
        return self.local_env_runner

    def foreach_worker(
        self, func: Callable | str, *, local_worker: bool = True, **kwargs: Any
    ) -> list:
        """RLlib's older name of `foreach_env_runner` (`local_worker` is `local_env_runner`)."""
        warn_once("env_runner_group.foreach_worker(...)", "foreach_env_runner(...)")
        return self.foreach_env_runner(func, local_env_runner=local_worker, **kwargs)


def old_worker_callbacks(instances: list) -> Any:
    """What the old stack's `worker.callbacks` gave (`EnvRunner.callbacks`), from the callback
    objects of this process: the one object, or a list when several classes are configured."""
    warn_once(
        "env_runner.callbacks", "a callback's own state, reached through the events' arguments"
    )
    return instances[0] if len(instances) == 1 else list(instances)
