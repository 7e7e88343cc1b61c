"""Sub-env recovery for the single-agent EnvRunner ("restart_failed_sub_environments"), outside
the rollout loop: in "sync" mode each sub-env is wrapped in a `SubEnvGuard`, and one whose reset
or step raised is closed, made again (its task kept) and reset, its episode dropped (its steps
counted as lost) and a new one started; in "async" mode the child process re-creates it and
reports the failure in the sub-env's infos, which is taken out here.

What it reads and calls of the runner is `RecoveryRunner` (the EnvRunner imports this module,
so it is not named here).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, cast

import gymnasium as gym

from trainer.core.obs_tree import set_row
from trainer.env.envs import EnvContext
from trainer.env.episode import SingleAgentEpisode
from trainer.env.vectorize import SUB_ENV_FAILURE_KEY
from trainer.metrics import MetricsLogger
from trainer.runners.sub_env_guard import SubEnvGuard
from trainer.runners.sub_env_record import SubEnvRecord

logger = logging.getLogger("trainer")

GUARDED_IS_SYNC = "sub-envs are guarded in 'sync' mode only, in a SyncVectorEnv"
SUB_ENV_IS_GUARDED = "restart_failed_sub_environments wraps each sub-env in a SubEnvGuard"
HAS_EPISODE = "a sub-env records an episode from the first reset on"


class RecoveryRunner(Protocol):
    """What sub-env recovery reads and calls of a single-agent EnvRunner: its vector env, its
    sub-env records and current observations, how it makes a sub-env and starts an episode in
    one, and where it logs and counts."""

    @property
    def worker_index(self) -> int: ...

    @property
    def metrics(self) -> MetricsLogger: ...

    @property
    def env(self) -> gym.vector.VectorEnv | None: ...

    @property
    def env_context(self) -> EnvContext: ...

    @property
    def _sub_env_records(self) -> list[SubEnvRecord]: ...

    @property
    def _obs(self) -> Any: ...

    def _task_of(self, sub_env: gym.Env) -> tuple | None: ...

    def _make_sub_env(self, context: EnvContext) -> gym.Env: ...

    def _sub_env_created(self, index: int, sub_env: gym.Env, context: EnvContext) -> None: ...

    def _create_episode(
        self, env_index: int, restored: SingleAgentEpisode | None = None
    ) -> None: ...

    def _begin_episode(self, env_index: int, observation: Any, infos: dict) -> None: ...


def take_child_failures(runner: RecoveryRunner, per_env_infos: list[dict]) -> set[int]:
    """ "async" mode with restart_failed_sub_environments: the sub-envs that raised in the
    last reset/step and were re-created in their child processes (`SubEnvInChild`). Each
    failure is taken out of the sub-env's info, logged (except
    `StepFailedRecreateEnvError`) and counted; returns their indices."""
    recreated: set[int] = set()
    for i, info in enumerate(per_env_infos):
        failure = info.pop(SUB_ENV_FAILURE_KEY, None) if info else None
        if failure is None:
            continue
        recreated.add(i)
        runner.metrics.log_value("num_sub_environment_restarts_lifetime", 1, reduce="sum")
        if failure["quiet"]:
            logger.debug(
                "EnvRunner %d: sub-env %d asked to be re-created (%s)",
                runner.worker_index,
                i,
                failure["message"],
            )
            continue
        logger.error(
            "EnvRunner %d: sub-env %d raised %s in %s(): %s; it is re-created "
            "and its episode dropped (restart_failed_sub_environments=True)\n%s",
            runner.worker_index,
            i,
            failure["type"],
            failure["method"],
            failure["message"],
            failure["traceback"],
        )
    return recreated


def drop_episode(runner: RecoveryRunner, record: SubEnvRecord) -> int:
    """Drops the episode under way in a sub-env that was re-created; returns its steps (lost:
    they count as sampled nowhere, as RLlib's runners start their count over)."""
    assert record.episode is not None, HAS_EPISODE
    record.prev_chunks = []
    lost = len(record.episode)
    runner.metrics.log_value("num_env_steps_lost_lifetime", lost, reduce="sum")
    return lost


def failed_sub_envs(runner: RecoveryRunner) -> list[int]:
    """The guarded sub-envs whose last reset/step raised (see `SubEnvGuard`)."""
    env = runner.env
    assert isinstance(env, gym.vector.SyncVectorEnv), GUARDED_IS_SYNC
    return [
        i for i, sub_env in enumerate(env.envs) if getattr(sub_env, "failure", None) is not None
    ]


def recover_sub_envs(runner: RecoveryRunner) -> int:
    """Re-creates each sub-env whose last reset/step raised (see `SubEnvGuard`), drops its
    episode, and starts a new one in the new sub-env; returns the dropped episodes' steps
    (lost: not counted as sampled)."""
    env = runner.env
    assert isinstance(env, gym.vector.SyncVectorEnv), GUARDED_IS_SYNC
    lost = 0
    for i, sub_env in enumerate(env.envs):
        error = getattr(sub_env, "failure", None)
        if error is None:
            continue
        record = runner._sub_env_records[i]
        assert record.episode is not None, HAS_EPISODE
        record.prev_chunks = []
        lost += len(record.episode)
        runner.metrics.log_value(
            "num_env_steps_lost_lifetime", len(record.episode), reduce="lifetime_sum"
        )
        runner.metrics.log_value("num_sub_environment_restarts_lifetime", 1, reduce="lifetime_sum")
        task = runner._task_of(sub_env)
        try:
            sub_env.close()
        except Exception:
            pass  # a broken env may fail to close too; it is dropped either way
        context = runner.env_context.copy_with_overrides(vector_index=i, recreated_worker=True)
        new_env = runner._make_sub_env(context)
        assert isinstance(new_env, SubEnvGuard), SUB_ENV_IS_GUARDED
        env.envs[i] = new_env
        runner._sub_env_created(i, new_env, context)
        if task is not None:  # the new sub-env keeps the current task
            cast(Any, new_env.unwrapped).set_task(task[0])  # (task-settable: it had one)
        observation, infos = new_env.reset()
        if new_env.failure is not None:  # an env that cannot even start: the runner fails
            raise RuntimeError(
                f"sub-env {i} raised again right after it was re-created: "
                f"{type(new_env.failure).__name__}: {new_env.failure}"
            ) from new_env.failure
        set_row(runner._obs, i, observation)
        record.awaiting_reset = False
        env._autoreset_envs[i] = False
        runner._create_episode(i)
        runner._begin_episode(i, observation, infos)
    return lost
