"""`SubEnvGuard`: with `restart_failed_sub_environments=True`, each sub-env is wrapped in one.

An exception in the wrapped env's `reset()` or `step()` does not escape into the vector env (which
would abort the whole runner's step): the guard records it in `failure` (the exception keeps its
traceback) and returns a placeholder transition (the last observation, reward 0, neither
terminated nor truncated). After each vector step the EnvRunner logs the failures, re-creates
every sub-env whose guard holds one and drops its episode (`SubEnvRecoveryMixin`, below: the
runner's half).
"""

from __future__ import annotations

import logging
from typing import Any

import gymnasium as gym

from trainer.env.curriculum import check_task_settable
from trainer.env.envs import EnvContext

logger = logging.getLogger("trainer")


class SubEnvGuard(gym.Wrapper):
    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.failure: BaseException | None = None
        self._last_observation: Any = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        try:
            observation, info = self.env.reset(seed=seed, options=options)
        except Exception as error:
            return self._failed(error), {}
        self._last_observation = observation
        return observation, info

    def step(self, action):
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except Exception as error:
            return self._failed(error), 0.0, False, False, {}
        self._last_observation = observation
        return observation, reward, terminated, truncated, info

    def _failed(self, error: BaseException):
        self.failure = error
        if self._last_observation is not None:
            return self._last_observation
        return self.observation_space.sample()


class SubEnvRecoveryMixin:
    """The EnvRunner's side of sub-env failures: sub-envs are made (wrapped in a `SubEnvGuard`
    with `restart_failed_sub_environments=True`), and `_recover_sub_envs` re-creates those that
    failed in the last reset or step and drops their episodes. (`EnvRunner._try_env_reset` /
    `_try_env_step`, RLlib's names, log the failures, in `trainer.env.env_runner` as RLlib's
    do, so RLlib's tests that patch that module's logger see them.)"""

    def _make_sub_env(self, context: EnvContext) -> gym.Env:
        env = self._env_creator(context)
        return SubEnvGuard(env) if self.config.restart_failed_sub_environments else env

    def _sub_env_created(self, index: int, sub_env: gym.Env, context: EnvContext) -> None:
        """Checks a new sub-env against `env_task_fn`; fires `on_sub_environment_created`."""
        if self.config.env_task_fn is not None:
            check_task_settable(sub_env.unwrapped, "env_task_fn")
        if self._callbacks.has("on_sub_environment_created"):
            self._callbacks.fire("on_sub_environment_created", worker=self,
                                 sub_environment=sub_env.unwrapped, env_context=context,
                                 env_index=index)

    def _recover_sub_envs(self) -> None:
        """Re-creates each sub-env whose last reset/step raised (see `SubEnvGuard`), drops its
        episode, and starts a new one in the new sub-env."""
        for i, sub_env in enumerate(self.env.envs):
            error = getattr(sub_env, "failure", None)
            if error is None:
                continue
            episode = self._episodes[i]
            self._prev_chunks.pop(episode.id_, None)
            self.metrics.log_value("num_env_steps_lost_lifetime", len(episode),
                                   reduce="lifetime_sum")
            self.metrics.log_value("num_sub_environment_restarts_lifetime", 1,
                                   reduce="lifetime_sum")
            task = self._task_of(sub_env)
            try:
                sub_env.close()
            except Exception:
                pass  # a broken env may fail to close too; it is dropped either way
            context = self.env_context.copy_with_overrides(vector_index=i, recreated_worker=True)
            new_env = self._make_sub_env(context)
            self.env.envs[i] = new_env
            self._sub_env_created(i, new_env, context)
            if task is not None:
                new_env.unwrapped.set_task(task[0])  # the new sub-env keeps the current task
            observation, infos = new_env.reset()
            if new_env.failure is not None:  # an env that cannot even start: the runner fails
                raise RuntimeError(f"sub-env {i} raised again right after it was re-created: "
                                   f"{type(new_env.failure).__name__}: {new_env.failure}"
                                   ) from new_env.failure
            self._obs[i] = observation
            self._awaiting_reset[i] = False
            self.env._autoreset_envs[i] = False
            self._create_episode(i)
            self._begin_episode(i, observation, infos)
