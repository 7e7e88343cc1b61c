"""`gym_env_vectorize_mode`: how an EnvRunner's sub-envs are vectorized, as in RLlib 2.60.

- "sync" (the default): gymnasium's `SyncVectorEnv`; the sub-envs step one after the other in
  the EnvRunner's process (`FastSyncVectorEnv`). Everything that reaches into a sub-env works:
  `foreach_env`, tasks (curriculum), per-sub-env recovery (`restart_failed_sub_environments`
  re-creates only the sub-env that raised), and checkpoints that resume the episodes under way.
- "async": gymnasium's `AsyncVectorEnv`; each sub-env steps in its own child process of the
  EnvRunner. `foreach_env` and tasks reach the sub-envs through `SubEnvInChild` (the function
  travels by cloudpickle, its result comes back pickled). With
  `restart_failed_sub_environments=True` a sub-env that raises is re-created in its child
  process and only its episode dropped, as in "sync" mode (`SubEnvInChild`); should the vector
  env itself fail (a child process dies), the whole vector env is re-created and every episode
  under way dropped, as RLlib does. Checkpoints resume the episodes under way as in "sync"
  mode: each child captures its sub-env's state, and a restored runner's new children are told
  which sub-envs owe an autoreset.
- "vector_entry_point": the env is one vector env that steps all its copies in numpy (for
  example gymnasium's `CartPoleVectorEnv`): `gymnasium.make_vec(id,
  vectorization_mode="vector_entry_point")` for a gymnasium id, or the creator called with
  `num_envs` in its config (a `register_env` name or callable), as RLlib does. It has no sub-env
  objects, so `foreach_env`, tasks and `env_task_fn` raise an error naming the mode; recovery
  re-creates the whole vector env, as RLlib does; checkpoints hold everything but the episodes
  under way, which start afresh after a restore (the env's own state is not reachable).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, SupportsFloat

import cloudpickle
import gymnasium as gym

from trainer.env.curriculum import is_task_settable
from trainer.env.env_state import capture_env_state, restore_env_state
from trainer.env.vector_env import checked_observation, checked_reset_result, checked_step_result
from trainer.errors import StepFailedRecreateEnvError

SYNC = "sync"
ASYNC = "async"
VECTOR_ENTRY_POINT = "vector_entry_point"
#: The modes, in RLlib's (gymnasium's `VectorizeMode`) spelling.
VECTORIZE_MODES = (SYNC, ASYNC, VECTOR_ENTRY_POINT)


def vectorize_mode(value: Any) -> str:
    """`value` (a `gymnasium.VectorizeMode` or its string, any case) as one of
    `VECTORIZE_MODES`; raises ValueError naming the setting otherwise."""
    problem = check_vectorize_mode(value)
    if problem is not None:
        raise ValueError(f"env_runners(gym_env_vectorize_mode={value!r}): must be {problem}")
    return str(getattr(value, "value", value)).lower()


def check_vectorize_mode(value: Any) -> str | None:
    """None when `value` names a mode, else what is allowed (for the config's checks)."""
    raw = getattr(value, "value", value)
    if isinstance(raw, str) and raw.lower() in VECTORIZE_MODES:
        return None
    return (
        f"one of {list(VECTORIZE_MODES)} or a gymnasium.VectorizeMode (sub-envs stepped "
        "in the EnvRunner, in child processes, or by one numpy-vectorized env)"
    )


def needs_sub_envs(what: str, mode: str) -> ValueError:
    """The error for `what` (something that reaches into single sub-envs) in a mode without
    sub-env objects."""
    return ValueError(
        f"{what} needs the EnvRunner's sub-envs, but with "
        f"env_runners(gym_env_vectorize_mode={mode!r}) the env is one vector env without "
        f"sub-env objects; {what} is allowed with gym_env_vectorize_mode='sync' or 'async'"
    )


#: The info key under which a sub-env of an "async" vector env reports that it raised and was
#: re-created in its child process (`SubEnvInChild`); the EnvRunner takes it out of the info.
SUB_ENV_FAILURE_KEY = "__trainer_sub_env_failure__"


class SubEnvInChild(gym.Wrapper):
    """A sub-env of an "async" vector env, in its child process: what the EnvRunner reaches
    through gymnasium's `call` / `set_attr` / `get_attr` (functions, tasks).

    With `restart_failed_sub_environments=True` (`make_sub_env` given) an exception in the
    sub-env's `reset()` or `step()` stays in the child: the sub-env is closed and made again
    (`recreated_worker=True` in its context, its task kept), and the reset of the new one is
    returned as the transition (reward 0, neither terminated nor truncated), its info carrying
    `SUB_ENV_FAILURE_KEY` (what raised, with the traceback). The EnvRunner then logs it, drops
    that sub-env's episode and starts a new one there: as in "sync" mode, only the sub-env
    that raised is re-created. A new sub-env that raises at once raises out of the vector env.
    """

    def __init__(
        self, env: gym.Env, env_context: Any, make_sub_env: Callable[[Any], gym.Env] | None = None
    ):
        super().__init__(env)
        self.env_context = env_context
        self._make_sub_env = make_sub_env

    #: True: the next `step()` resets the sub-env instead: the autoreset a runner restored
    #: from a checkpoint owes it (its child process is new and knows of no episode end).
    trainer_pending_reset = False
    #: Set (per child, through `set_attr`) before `trainer_reset_if_flagged()`.
    trainer_reset_flag = False
    #: Why the last `trainer_env_state` restore did not fit, or None.
    trainer_restore_reason: str | None = None

    @property
    def trainer_env_state(self) -> tuple[list | None, str | None]:
        """The sub-env's state as plain data (`trainer.env.env_state`), for checkpoints."""
        return capture_env_state(self.env)

    @trainer_env_state.setter
    def trainer_env_state(self, captured: list | None) -> None:
        self.trainer_restore_reason = (
            None if captured is None else restore_env_state(self.env, captured)
        )

    def trainer_reset_if_flagged(self) -> tuple[Any, dict] | None:
        """Resets the sub-env if `trainer_reset_flag` is set (a restored episode that cannot
        continue); returns the reset's (observation, info), else None."""
        if not self.trainer_reset_flag:
            return None
        self.trainer_reset_flag = False
        self.trainer_pending_reset = False
        return self.reset()

    def _checked_reset(self, seed: int | None, options: dict | None) -> tuple[Any, dict]:
        index = self.env_context.vector_index
        observation, info = checked_reset_result(index, self.env.reset(seed=seed, options=options))
        checked_observation(index, observation, self.env.observation_space, "reset()")
        return observation, info

    def _checked_step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        # One sub-env's output checked here, in its child: what gymnasium's batching in the
        # parent would report as a bare unpacking or numpy error (or take silently).
        result = self.env.step(action)
        return checked_step_result(self.env_context.vector_index, result, self.observation_space)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if self._make_sub_env is None:
            return self._checked_reset(seed, options)
        try:
            return self._checked_reset(seed, options)
        except Exception as error:
            observation, info = self._recreate(error, "reset")
            return observation, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        if self.trainer_pending_reset:  # gymnasium's NEXT_STEP autoreset, owed after a restore
            self.trainer_pending_reset = False
            observation, info = self.reset()
            return observation, 0.0, False, False, info
        if self._make_sub_env is None:
            return self._checked_step(action)
        try:
            return self._checked_step(action)
        except Exception as error:
            observation, info = self._recreate(error, "step")
            return observation, 0.0, False, False, info

    def _recreate(self, error: Exception, method: str) -> tuple[Any, dict]:
        make_sub_env = self._make_sub_env
        if make_sub_env is None:  # reset() and step() only recreate with a factory
            raise error

        failure = {
            "method": method,
            "type": type(error).__name__,
            "message": str(error),
            "traceback": traceback.format_exc(),
            "quiet": isinstance(error, StepFailedRecreateEnvError),
        }
        old: Any = self.env.unwrapped  # tasks are duck-typed: get_task()/set_task()
        task = None
        if is_task_settable(old):
            try:
                task = (old.get_task(),)
            except Exception:
                task = None
        try:
            self.env.close()
        except Exception:
            pass  # a broken env may fail to close too; it is dropped either way
        self.env_context = self.env_context.copy_with_overrides(recreated_worker=True)
        self.env = make_sub_env(self.env_context)
        if task is not None:
            new: Any = self.env.unwrapped
            new.set_task(task[0])
        observation, info = self.env.reset()
        return observation, {**info, SUB_ENV_FAILURE_KEY: failure}

    def run_on_sub_env(self, payload: bytes) -> Any:
        """`func(raw_env, env_context)` for a cloudpickled `func` (lambdas and closures travel)."""
        func = cloudpickle.loads(payload)
        return func(self.env.unwrapped, self.env_context)

    @property
    def trainer_task(self) -> Any:
        env: Any = self.env.unwrapped  # a task-settable env (trainer.env.curriculum)
        return env.get_task()

    @trainer_task.setter
    def trainer_task(self, task: Any) -> None:
        # gymnasium's set_attr sends each sub-env its own value: one task per sub-env.
        env: Any = self.env.unwrapped  # a task-settable env (trainer.env.curriculum)
        env.set_task(task)


def make_sub_env_in_child(
    make_sub_env: Callable[[Any], gym.Env], env_context: Any, restart_failed: bool = False
) -> gym.Env:
    """Runs in an "async" sub-env's child process: the sub-env, wrapped in `SubEnvInChild`
    (which re-creates it when it raises, with `restart_failed`)."""
    return SubEnvInChild(
        make_sub_env(env_context), env_context, make_sub_env if restart_failed else None
    )


def run_in_children(env: gym.vector.AsyncVectorEnv, func: Callable[[gym.Env, Any], Any]) -> list:
    """`func(raw_env, env_context)` in each child process of an "async" vector env."""
    try:
        payload = cloudpickle.dumps(func)
    except Exception as error:
        raise TypeError(
            "with env_runners(gym_env_vectorize_mode='async') a function given to the sub-envs "
            "(foreach_env, env_task_fn) runs in each sub-env's child process and travels there "
            f"by cloudpickle, which failed: {type(error).__name__}: {error}. Let it capture "
            "plain values (for example `index = runner.worker_index` taken outside it), not "
            "the EnvRunner or other live objects"
        ) from error
    return list(env.call("run_on_sub_env", payload))


def check_vector_env(env: Any, description: str) -> gym.vector.VectorEnv:
    """`env` if it is a gymnasium vector env that autoresets in NEXT_STEP mode (the EnvRunner's
    episodes assume it, as RLlib's do); a clear error otherwise."""
    if not isinstance(env, gym.vector.VectorEnv):
        raise TypeError(
            f"env_runners(gym_env_vectorize_mode='vector_entry_point'): the env {description} "
            f"gave {type(env).__name__}, not a gymnasium.vector.VectorEnv; give a vector env "
            "(a creator called with config['num_envs'], or a gymnasium id registered with a "
            "vector_entry_point), or use gym_env_vectorize_mode='sync' or 'async'"
        )
    mode = env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
    if str(getattr(mode, "value", mode)) != gym.vector.AutoresetMode.NEXT_STEP.value:
        raise ValueError(
            f"env_runners(gym_env_vectorize_mode='vector_entry_point'): the vector env "
            f"{type(env).__name__} autoresets in {mode} mode; the EnvRunner needs "
            "AutoresetMode.NEXT_STEP (metadata['autoreset_mode']), as RLlib's does"
        )
    return env
