"""`CartPoleCrashing`: CartPole that crashes or stalls now and then (RLlib's example env, for
testing how sub-env and EnvRunner failures are handled)."""

from __future__ import annotations

import time

import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

from trainer.errors import EnvError
from trainer.examples.envs.classes.multi_agent import make_multi_agent, module_level_env_class


def _draw(value, rng: np.random.RandomState, *, integer: bool):
    """`value`, or a uniform draw between the two ends of a `(low, high)` tuple."""
    if not isinstance(value, tuple):
        return value
    return rng.randint(value[0], value[1]) if integer else rng.uniform(value[0], value[1])


class CartPoleCrashing(CartPoleEnv):
    """CartPole whose `step()` / `reset()` raise `EnvError` or sleep, as `env_config` says:

    - `p_crash` (default 0.005) per step, `p_crash_reset` (default 0) per reset;
      `crash_after_n_steps`: an int or a `(low, high)` range drawn per episode;
      `crash_on_worker_indices`: crash only on these EnvRunners;
    - `p_stall`, `p_stall_reset`, `stall_after_n_steps`, `stall_time_sec` (a number or a range),
      `stall_on_worker_indices`: the same for sleeping instead of raising;
    - `init_time_s`: sleep this long (or a drawn time) in the constructor.
    """

    def __init__(self, config=None):
        super().__init__()
        self.config = config if config is not None else {}
        config = self.config
        worker_index = getattr(config, "worker_index", 0)
        self.p_crash = config.get("p_crash", 0.005)
        self.p_crash_reset = config.get("p_crash_reset", 0.0)
        self.crash_after_n_steps = config.get("crash_after_n_steps")
        if not (
            self.crash_after_n_steps is None
            or isinstance(self.crash_after_n_steps, int)
            or (isinstance(self.crash_after_n_steps, tuple) and len(self.crash_after_n_steps) == 2)
        ):
            raise ValueError(
                f"crash_after_n_steps={self.crash_after_n_steps!r}: an int or a (low, high) tuple"
            )
        crash_indices = config.get("crash_on_worker_indices")
        if crash_indices and worker_index not in crash_indices:
            self.p_crash = self.p_crash_reset = 0.0
            self.crash_after_n_steps = None
        self.p_stall = config.get("p_stall", 0.0)
        self.p_stall_reset = config.get("p_stall_reset", 0.0)
        self.stall_after_n_steps = config.get("stall_after_n_steps")
        self.stall_time_sec = config.get("stall_time_sec")
        stall_indices = config.get("stall_on_worker_indices")
        if stall_indices and worker_index not in stall_indices:
            self.p_stall = self.p_stall_reset = 0.0
            self.stall_after_n_steps = None
        self.timesteps = 0
        self._crash_at: int | None = None
        self._stall_at: int | None = None
        # Unseeded: sub-envs must not crash in lockstep.
        self._rng = np.random.RandomState()
        init_time = _draw(config.get("init_time_s", 0.0), self._rng, integer=False)
        if init_time:
            time.sleep(init_time)

    def reset(self, *, seed=None, options=None):
        self.timesteps = 0
        self._crash_at = None
        self._stall_at = None
        if self._should_crash(self.p_crash_reset):
            raise EnvError(self._crash_message("reset"))
        self._stall_if_due(self.p_stall_reset)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.timesteps += 1
        if self._should_crash(self.p_crash):
            raise EnvError(self._crash_message("step"))
        self._stall_if_due(self.p_stall)
        return super().step(action)

    def _crash_message(self, method: str) -> str:
        return (
            f"Simulated env crash on worker={getattr(self.config, 'worker_index', 0)} "
            f"env-idx={getattr(self.config, 'vector_index', 0)} during `{method}()`!"
        )

    def _should_crash(self, p: float) -> bool:
        if self._rng.rand() < p:
            return True
        if self.crash_after_n_steps is None:
            return False
        if self._crash_at is None:
            self._crash_at = _draw(self.crash_after_n_steps, self._rng, integer=True)
        return self._crash_at == self.timesteps

    def _stall_if_due(self, p: float) -> None:
        stall = self._rng.rand() < p
        if not stall and self.stall_after_n_steps is not None:
            if self._stall_at is None:
                self._stall_at = _draw(self.stall_after_n_steps, self._rng, integer=True)
            stall = self._stall_at == self.timesteps
        if stall:
            time.sleep(_draw(self.stall_time_sec, self._rng, integer=False))


MultiAgentCartPoleCrashing = module_level_env_class(
    make_multi_agent(lambda config: CartPoleCrashing(config)),
    "MultiAgentCartPoleCrashing",
    __name__,
)
