"""The vector envs an EnvRunner steps: `FastSyncVectorEnv` (gym_env_vectorize_mode="sync", the
default) and `InfoKeepingAsyncVectorEnv` ("async"). Both keep each sub-env's info dict of the
last reset or step as the sub-env returned it (`sub_env_infos`, `RawInfosMixin`), so the
EnvRunner's episodes store infos of any nesting untouched, whatever gymnasium's batched info
dict can or cannot hold.

`FastSyncVectorEnv`: gymnasium's `SyncVectorEnv` with a leaner `step` for the common case.

Both answer `.env` with themselves, so that `env_runner.env.env` (RLlib's path to the vector env
under its `DictInfoToList` wrapper) is the vector env here too.

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

    @property
    def env(self) -> Any:
        """The vector env itself: RLlib's EnvRunner holds its gymnasium vector env wrapped
        (`DictInfoToList`), so scripts reach it as `env_runner.env.env`; the EnvRunner here
        holds it unwrapped, and `.env` names the same object (`.unwrapped` too). A loop that
        unwraps while there is an `.env` would not end here: unwrap with `.unwrapped`."""
        return self

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
        try:
            super().__init__(env_fns, **kwargs)
        except (TypeError, AttributeError, AssertionError) as error:
            # gymnasium's error for a space that is not one names no sub-env and no space.
            clear = _bad_spaces(getattr(self, "envs", []))
            if clear is None:
                raise
            raise clear from error
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
        if not self._fast or (options is not None and "reset_mask" in options):
            try:
                return super().reset(seed=seed, options=options)
            except (ValueError, TypeError) as error:  # gymnasium's batching, in its words
                raise _not_batched(error, "reset()") from error
        # gymnasium's reset, with each sub-env's result checked as it comes in, so that a
        # broken one is named with what it returned (not a bare unpacking or numpy error).
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"reset(seed=...): {len(seeds)} seeds for {self.num_envs} sub-envs; give one "
                "int, None, or a list with one seed per sub-env"
            )
        self._terminations = np.zeros((self.num_envs,), dtype=np.bool_)
        self._truncations = np.zeros((self.num_envs,), dtype=np.bool_)
        self._autoreset_envs = np.zeros((self.num_envs,), dtype=np.bool_)
        infos: dict = {}
        observations = []
        for i, (env, env_seed) in enumerate(zip(self.envs, seeds, strict=True)):
            observation, env_info = checked_reset_result(
                i, env.reset(seed=env_seed, options=options)
            )
            observations.append(observation)
            infos = self._add_info(infos, env_info, i)
        self._env_obs = observations
        self._observations[...] = _observation_batch(
            observations, self.single_observation_space, self._observations, "reset()"
        )
        return (self._observations.copy() if self.copy else self._observations), infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        if not self._fast:
            self._clear_sub_env_infos()
            try:
                return super().step(actions)
            except (ValueError, TypeError) as error:  # gymnasium's batching, in its words
                raise _not_batched(error, "step()") from error
        infos: dict = {}
        raw_infos: list[dict] = []
        # A fresh list per step (before `_add_info` writes into it): the EnvRunner keeps each
        # step's list as that step's infos.
        self.sub_env_infos = raw_infos
        observations, rewards, terminations, truncations = [], [], [], []
        autoreset = self._autoreset_envs.tolist()
        # Iterating the batch yields what gymnasium's `iterate` yields for Box / Discrete
        # batches: its rows (numpy arrays or scalars).
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if autoreset[i]:
                observation, env_info = checked_reset_result(i, env.reset())
                reward: SupportsFloat = 0.0
                terminated, truncated = False, False
            else:
                result = env.step(action)
                # Free while it holds (no exception): a step result of another form is named
                # with what the sub-env returned.
                if type(result) is not tuple:
                    raise bad_step_result(i, result)
                try:
                    observation, reward, terminated, truncated, env_info = result
                except ValueError:
                    raise bad_step_result(i, result) from None
                if not isinstance(env_info, dict):
                    raise bad_info(i, env_info, "step()")
            observations.append(observation)
            rewards.append(reward)
            terminations.append(terminated)
            truncations.append(truncated)
            raw_infos.append(env_info)
            if env_info:
                infos = self._add_info(infos, env_info, i)
        self._env_obs = observations
        batch = _observation_batch(
            observations, self.single_observation_space, self._observations, "step()"
        )
        terminated_column = _flag_column(terminations, "terminated")
        truncated_column = _flag_column(truncations, "truncated")
        self._autoreset_envs = terminated_column | truncated_column
        return (batch, _reward_column(rewards), terminated_column, truncated_column, infos)


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


def _bad_spaces(envs: list) -> EnvDataError | None:
    """The error for the first sub-env whose observation_space or action_space is not a
    gymnasium Space (None when all are)."""
    for index, env in enumerate(envs):
        for name in ("observation_space", "action_space"):
            space = getattr(env, name, None)
            if not isinstance(space, gym.Space):
                return EnvDataError(
                    f"sub-env {index} ({type(env).__name__})'s {name} is {_shown(space)}, not a "
                    "gymnasium.spaces.Space; set it in the env's __init__ (for example "
                    "gymnasium.spaces.Box(-1.0, 1.0, (4,), numpy.float32))"
                )
    return None


def _not_batched(error: Exception, method: str) -> EnvDataError:
    """The error for sub-env output gymnasium's generic batching (spaces other than a Box
    observation with Box or Discrete actions) could not take: its message, with what
    gymnasium's API returns."""
    api = _STEP_API if method == "step()" else _RESET_API
    return EnvDataError(
        f"a sub-env's {method} output could not be batched ({type(error).__name__}: {error}); "
        f"{api}, the observation in the env's observation space, the reward one number, "
        "terminated and truncated bools, the info a dict"
    )


#: gymnasium's step() result, named in the errors below.
_STEP_API = "gymnasium's API returns 5 values: (obs, reward, terminated, truncated, info)"
_RESET_API = "gymnasium's API returns 2 values: (obs, info)"


def _shown(value: Any) -> str:
    """`value`'s repr (cut at 80 characters) and its type: "'1.0' (a str)"."""
    text = repr(value)
    kind = type(value).__name__
    article = "an" if kind[0] in "aeiou" else "a"
    return (text if len(text) <= 80 else text[:77] + "...") + f" ({article} {kind})"


def checked_reset_result(index: int, result: Any) -> tuple[Any, dict]:
    """A sub-env's reset() result as (obs, info), or an `EnvDataError` naming the sub-env and
    what it returned."""
    if type(result) is not tuple or len(result) != 2:
        if isinstance(result, tuple):
            got = f"{len(result)} values"
        else:
            got = _shown(result)
        raise EnvDataError(
            f"sub-env {index}'s reset() returned {got}; {_RESET_API} (gym before 0.26 "
            "returned the observation alone)"
        )
    observation, info = result
    if not isinstance(info, dict):
        raise bad_info(index, info, "reset()")
    return observation, info


def bad_step_result(index: int, result: Any) -> EnvDataError:
    """The error for a sub-env's step() result that is not a 5-tuple."""
    if isinstance(result, tuple):
        got = f"{len(result)} values"
        if len(result) == 4:
            got += " (obs, reward, done, info: the old gym API before 0.26)"
    else:
        got = _shown(result)
    return EnvDataError(f"sub-env {index}'s step() returned {got}; {_STEP_API}")


def bad_info(index: int, info: Any, method: str) -> EnvDataError:
    return EnvDataError(
        f"sub-env {index}'s {method} returned the info {_shown(info)}; "
        "gymnasium's API returns a dict (empty when there is nothing to report)"
    )


def _is_one_number(value: Any) -> bool:
    if isinstance(value, (int, float, np.number, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fiub"


def _is_flag(value: Any) -> bool:
    if isinstance(value, (bool, int, np.bool_, np.integer)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biu"


def _bad_reward(index: int, reward: Any) -> EnvDataError:
    # gymnasium's own words for a sequence: "setting an array element with a sequence"
    what = ", a sequence" if isinstance(reward, (np.ndarray, list, tuple)) else ""
    return EnvDataError(
        f"sub-env {index}'s step() returned the reward {_shown(reward)}{what}; "
        "gymnasium's API returns one number (a float) per step"
    )


def _bad_flag(index: int, field: str, flag: Any) -> EnvDataError:
    return EnvDataError(
        f"sub-env {index}'s step() returned {field}={_shown(flag)}; gymnasium's API returns a bool"
    )


def checked_step_result(index: int, result: Any, space: gym.Space) -> tuple:
    """One sub-env's step() result, checked as the "sync" vector env checks the batch (for
    sub-envs stepped one by one: an "async" sub-env in its child process)."""
    if type(result) is not tuple or len(result) != 5:
        raise bad_step_result(index, result)
    observation, reward, terminated, truncated, info = result
    if not isinstance(info, dict):
        raise bad_info(index, info, "step()")
    if not _is_one_number(reward):
        raise _bad_reward(index, reward)
    for field, flag in (("terminated", terminated), ("truncated", truncated)):
        if not _is_flag(flag):
            raise _bad_flag(index, field, flag)
    checked_observation(index, observation, space, "step()")
    return result


def checked_observation(index: int, observation: Any, space: gym.Space, method: str) -> None:
    """Raises `EnvDataError` when a Box space's observation is not an array of its shape (other
    spaces: gymnasium's batching judges them)."""
    if not isinstance(space, gym.spaces.Box):
        return
    if type(observation) is np.ndarray and observation.shape == space.shape:
        if observation.dtype.kind in "fiub":
            return
    raise _bad_observation([observation], space, method, first_index=index)


def _observation_batch(
    observations: list, space: gym.Space, buffer: np.ndarray, method: str
) -> np.ndarray:
    """The sub-envs' Box observations as one fresh array shaped as `buffer`, or an
    `EnvDataError` naming the first sub-env whose observation does not fit the space."""
    try:
        batch = np.array(observations, dtype=buffer.dtype)
    except (ValueError, TypeError):  # a string, a dict, a ragged list, ...
        raise _bad_observation(observations, space, method) from None
    if batch.shape != buffer.shape:
        raise _bad_observation(observations, space, method)
    return batch


def _bad_observation(
    observations: list, space: gym.Space, method: str, first_index: int = 0
) -> EnvDataError:
    """The error for observations that do not batch as `space` (a Box) says: names the first
    sub-env that broke it (the sub-envs counted from `first_index`), with what it returned (an
    `EnvDataError`, a ValueError as gymnasium's own)."""
    shape = getattr(space, "shape", None)
    for index, observation in enumerate(observations, start=first_index):
        if not isinstance(observation, (np.ndarray, np.generic, int, float, list, tuple)):
            return EnvDataError(
                f"sub-env {index}'s {method} returned the observation {_shown(observation)} "
                f"where its observation space is {space}"
            )
        if np.shape(observation) != shape:
            return EnvDataError(
                f"sub-env {index}'s {method} returned an observation of shape "
                f"{np.shape(observation)} where its observation space {space} has shape {shape}"
            )
        try:
            np.asarray(observation, dtype=space.dtype)
        except (ValueError, TypeError) as error:
            return EnvDataError(
                f"sub-env {index}'s {method} returned the observation {_shown(observation)}, "
                f"which is not numbers of {space} ({error})"
            )
    return EnvDataError(f"the sub-envs' {method} observations do not fit {space}")


#: The dtypes numpy gives lists of Python floats and bools (builtin dtypes are singletons).
_FLOAT64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)


def _reward_column(rewards: list) -> np.ndarray:
    """The sub-envs' rewards as a fresh float64 array; a reward that is not one number (a
    string, None, an array) is an `EnvDataError` naming the sub-env."""
    column = np.array(rewards)
    if column.dtype is _FLOAT64 and column.ndim == 1:  # Python floats: the common case
        return column
    if column.ndim != 1 or column.dtype.kind not in "fiub":
        for index, reward in enumerate(rewards):
            if not _is_one_number(reward):
                raise _bad_reward(index, reward)
        raise EnvDataError(f"the sub-envs' step() rewards are not numbers: {rewards!r:.200}")
    return column.astype(np.float64)


def _flag_column(flags: list, field: str) -> np.ndarray:
    """The sub-envs' `terminated` or `truncated` flags as a fresh bool array; a flag that is
    not a bool (or a 0/1 int) is an `EnvDataError` naming the sub-env."""
    column = np.array(flags)
    if column.dtype is _BOOL and column.ndim == 1:  # Python bools: the common case
        return column
    if column.ndim != 1 or column.dtype.kind not in "biu":
        for index, flag in enumerate(flags):
            if not _is_flag(flag):
                raise _bad_flag(index, field, flag)
        raise EnvDataError(f"the sub-envs' step() {field} flags are not bools: {flags!r:.200}")
    return column.astype(np.bool_)
