import gymnasium as gym
import numpy as np

from callbacks import RLlibCallback
from trainer import PPOConfig, TaskSettableEnv
from trainer.named_objects import get_named_object


def small_ppo(num_env_runners: int = 0, env: str = "CartPole-v1", **training) -> PPOConfig:
    """A PPO config that trains in a fraction of a second: small batch, small net, one epoch."""
    settings = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1}
    settings.update(training)
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )


class LevelEnv(TaskSettableEnv):
    """A task-settable env whose difficulty shows in the returns: 10 steps per episode, each
    rewarded 1 / (1 + level), with the level read at reset (so an episode keeps its level).
    With env_config["count_steps_in"], every step increments that named object (without waiting
    with env_config["count_with_remote"])."""

    def __init__(self, config=None):
        config = config or {}
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.level = config.get("level", 0)
        self._episode_level = self.level
        self._t = 0
        self._counter_name = config.get("count_steps_in")
        self._count_with_remote = config.get("count_with_remote", False)
        # env_config["crash_at_step"]: step N raises, unless this sub-env is a re-created one.
        recreated = getattr(config, "recreated_worker", False)
        self._crash_at = None if recreated else config.get("crash_at_step")
        self._steps = 0

    def get_task(self):
        return self.level

    def set_task(self, task):
        self.level = task

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._episode_level = self.level
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._t += 1
        self._steps += 1
        if self._steps == self._crash_at:
            raise RuntimeError(f"LevelEnv crashed at step {self._steps}")
        if self._counter_name:
            counter = get_named_object(self._counter_name)
            if self._count_with_remote:
                counter.inc.remote(1)  # Ray's spelling: does not wait
            else:
                counter.inc(1)
        reward = 1.0 / (1 + self._episode_level)
        return np.full(2, self._t / 10, np.float32), reward, False, self._t >= 10, {}


def level_return(level: int) -> float:
    return 10.0 / (1 + level)


class EpisodeReturn(RLlibCallback):
    """A callback class importable by path (`helpers:EpisodeReturn`): counts finished episodes
    in the EnvRunners' metrics."""

    def on_episode_end(self, *, metrics_logger, **kwargs):
        metrics_logger.log_value("episodes_counted", 1, reduce="sum")


class UnpicklingMarker:
    """Unpickling this creates the file `marker`: proof that something was unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


class RaisingStepEnv(gym.Env):
    """An env whose every step raises `ValueError(RaisingStepEnv.MESSAGE)`."""

    MESSAGE = "the env's own error"
    observation_space = gym.spaces.Box(-1, 1, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        raise ValueError(self.MESSAGE)


class StallOnceEnv(gym.Env):
    """CartPole whose EnvRunner 1 stalls (sleeps 600 s) at its 20th step, unless that runner
    was re-created."""

    def __init__(self, config=None):
        self.inner = gym.make("CartPole-v1")
        self.observation_space, self.action_space = (
            self.inner.observation_space,
            self.inner.action_space,
        )
        self.stalls = config.worker_index == 1 and not config.recreated_worker
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.stalls and self.steps == 20:
            import time

            time.sleep(600)
        return self.inner.step(action)


class RecordRecreated(RLlibCallback):
    """Records every `on_env_runners_recreated` as (indices, is_evaluation) in the class's
    `calls` (shared by the per-runner instances; reset it before a test)."""

    calls: list = []

    def on_env_runners_recreated(self, *, env_runner_indices, is_evaluation, **kwargs):
        RecordRecreated.calls.append((list(env_runner_indices), is_evaluation))


def blas_threads() -> list[int]:
    """The sizes of numpy's BLAS thread pools in this process."""
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def blas_threads_seen(monkeypatch, owner: type, name: str, run) -> list[list[int]]:
    """Calls `run()` with numpy's BLAS pools at 2 threads; returns the pool sizes each call of
    `owner.name` saw. The pools are back at 2 afterwards."""
    from threadpoolctl import threadpool_limits

    seen = []
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        seen.append(blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    with threadpool_limits(limits=2, user_api="blas"):
        run()
        assert blas_threads() and set(blas_threads()) == {2}
    return seen
