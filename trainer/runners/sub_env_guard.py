"""`SubEnvGuard`: with `restart_failed_sub_environments=True`, each sub-env is wrapped in one.

An exception in the wrapped env's `reset()` or `step()` does not escape into the vector env (which
would abort the whole runner's step): the guard records it in `failure` (the exception keeps its
traceback) and returns a placeholder transition (the last observation, reward 0, neither
terminated nor truncated). After each vector step the EnvRunner logs the failures, re-creates
every sub-env whose guard holds one and drops its episode (`sub_env_recovery.recover_sub_envs` in
`trainer.runners.env_runner`).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from trainer.env.vector_env import bad_step_result, checked_reset_result


class SubEnvGuard(gym.Wrapper):
    """Catches the wrapped sub-env's exceptions: `failure` holds the last one until the runner
    replaces this sub-env."""

    def __init__(self, env: gym.Env, index: int = 0):
        super().__init__(env)
        self.failure: BaseException | None = None
        self._last_observation: Any = None
        #: The sub-env's index in its vector env (named in a malformed result's error).
        self.index = index

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        try:
            # A malformed result is this sub-env's failure too, named as the vector env
            # names it.
            observation, info = checked_reset_result(
                self.index, self.env.reset(seed=seed, options=options)
            )
        except Exception as error:
            return self._failed(error), {}
        self._last_observation = observation
        return observation, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        try:
            result = self.env.step(action)
            if type(result) is not tuple or len(result) != 5:
                raise bad_step_result(self.index, result)
            observation, reward, terminated, truncated, info = result
        except Exception as error:
            return self._failed(error), 0.0, False, False, {}
        self._last_observation = observation
        return observation, reward, terminated, truncated, info

    def _failed(self, error: BaseException) -> Any:
        """Records `error`; the observation to return in place of the failed call's."""
        self.failure = error
        if self._last_observation is not None:
            return self._last_observation
        return self.observation_space.sample()
