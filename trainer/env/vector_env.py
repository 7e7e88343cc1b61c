"""The vector envs an EnvRunner steps: `FastSyncVectorEnv` (gym_env_vectorize_mode="sync", the
default) and `InfoKeepingAsyncVectorEnv` ("async"). Both keep each sub-env's info dict of the
last reset or step as the sub-env returned it (`sub_env_infos`, `RawInfosMixin`), so the
EnvRunner's episodes store infos of any nesting untouched, whatever gymnasium's batched info
dict can or cannot hold.

`FastSyncVectorEnv`: gymnasium's `SyncVectorEnv` with a leaner `step` for the common case.

An EnvRunner steps its sub-envs through this class. It is a `SyncVectorEnv` (callbacks, connectors
and `foreach_env` see the same object, `env.envs[i]` the same sub-envs), and its `step` returns
what gymnasium's would. For Box observations and Box/Discrete actions in NEXT_STEP autoreset mode
(the EnvRunner's), it skips gymnasium's generic helpers, which cost more than the sub-envs'
own steps for a few small envs: the space-dispatched `iterate` and `concatenate`, an `_add_info`
call per sub-env even when its info is empty, element-wise writes into its reward and done
buffers, and the copies of them all. Each step's results are gathered in lists and become fresh
arrays in one call each, so nothing needs copying: a Box batch is one array. Any other space or
mode takes gymnasium's `step`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np

from trainer.errors import EnvDataError

if TYPE_CHECKING:  # the mixin goes on gymnasium's vector envs, whose _add_info it extends
    _VectorEnvBase = gym.vector.VectorEnv
else:
    _VectorEnvBase = object


class RawInfosMixin(_VectorEnvBase):
    """Records, in `sub_env_infos`, the info dict each sub-env returned in the last reset or
    step (gymnasium's vector envs pass each one to `_add_info`, in this process, to batch it).
    Batching stays best effort: an info gymnasium cannot batch (arrays whose shapes differ
    between sub-envs, a key that is a dict in one sub-env and a number in another) is left
    out of the batched dict, not raised; `sub_env_infos` has it."""

    num_envs: int

    _batching_info = False

    def _clear_sub_env_infos(self) -> None:
        self.sub_env_infos: list[dict] = [{} for _ in range(self.num_envs)]

    def _add_info(self, vector_infos: dict, env_info: dict, env_num: int) -> dict:
        if self._batching_info:  # gymnasium's call for a nested dict of the info
            return super()._add_info(vector_infos, env_info, env_num)
        self.sub_env_infos[env_num] = env_info
        self._batching_info = True
        try:
            return super()._add_info(vector_infos, env_info, env_num)
        except (ValueError, TypeError, IndexError, KeyError, AttributeError):
            return vector_infos
        finally:
            self._batching_info = False


class FastSyncVectorEnv(RawInfosMixin, gym.vector.SyncVectorEnv):
    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], **kwargs: Any):
        super().__init__(env_fns, **kwargs)
        self._clear_sub_env_infos()
        self._fast = (
            self.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP
            and isinstance(self.single_observation_space, gym.spaces.Box)
            and isinstance(self.single_action_space, (gym.spaces.Box, gym.spaces.Discrete))
            and isinstance(self._observations, np.ndarray)
        )

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        self._clear_sub_env_infos()
        return super().reset(seed=seed, options=options)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        if not self._fast:
            self._clear_sub_env_infos()
            return super().step(actions)
        infos: dict = {}
        raw_infos: list[dict] = []
        observations, rewards, terminations, truncations = [], [], [], []
        autoreset = self._autoreset_envs.tolist()
        # Iterating the batch yields what gymnasium's `iterate` yields for Box / Discrete
        # batches: its rows (numpy arrays or scalars).
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if autoreset[i]:
                observation, env_info = env.reset()
                reward: SupportsFloat = 0.0
                terminated, truncated = False, False
            else:
                observation, reward, terminated, truncated, env_info = env.step(action)
            observations.append(observation)
            rewards.append(reward)
            terminations.append(terminated)
            truncations.append(truncated)
            raw_infos.append(env_info)
            if env_info:
                infos = self._add_info(infos, env_info, i)
        self.sub_env_infos = raw_infos
        self._env_obs = observations
        batch = np.array(observations, dtype=self._observations.dtype)
        if batch.shape != self._observations.shape:
            raise _wrong_shape(observations, self.single_observation_space, "step()")
        terminated_column = _column(terminations, np.bool_)
        truncated_column = _column(truncations, np.bool_)
        self._autoreset_envs = terminated_column | truncated_column
        return (batch, _column(rewards, np.float64), terminated_column, truncated_column, infos)


class InfoKeepingAsyncVectorEnv(RawInfosMixin, gym.vector.AsyncVectorEnv):
    """gymnasium's `AsyncVectorEnv` (each sub-env in its own process), keeping the sub-envs'
    info dicts as they arrived (`RawInfosMixin`)."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], **kwargs: Any):
        super().__init__(env_fns, **kwargs)
        self._clear_sub_env_infos()

    def reset_wait(self, *args: Any, **kwargs: Any) -> Any:
        self._clear_sub_env_infos()
        return super().reset_wait(*args, **kwargs)

    def step_wait(self, *args: Any, **kwargs: Any) -> Any:
        self._clear_sub_env_infos()
        return super().step_wait(*args, **kwargs)


def _wrong_shape(observations: list, space: gym.spaces.Box, method: str) -> EnvDataError:
    """The error for a batch whose observations do not all have the space's shape: names the
    first sub-env that broke it (an `EnvDataError`, a ValueError as gymnasium's own)."""
    for index, observation in enumerate(observations):
        shape = np.shape(observation)
        if shape != space.shape:
            return EnvDataError(
                f"sub-env {index}'s {method} returned an observation of shape {shape} where "
                f"its observation space {space} has shape {space.shape}"
            )
    return EnvDataError(f"the sub-envs' {method} observations do not fit {space}")


def _column(values: list, dtype: type) -> np.ndarray:
    """`values` (numbers or numpy scalars) as a fresh 1-D array of `dtype`: what gymnasium's
    element-wise writes into such an array give, and the error they raise for anything else."""
    column: np.ndarray = np.array(values, dtype=dtype)
    if column.ndim != 1:  # every value an array of one shape: not a number per sub-env
        raise ValueError(
            "setting an array element with a sequence: a sub-env's step returned "
            f"{values[0]!r} where a {np.dtype(dtype).name} number belongs"
        )
    return column
