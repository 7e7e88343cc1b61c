"""RLlib's mock envs for tests: `MockEnv`, `MockEnv2`, `MockEnv3` (gymnasium envs with fixed
episode lengths), and `VectorizedMockEnv` / `MockVectorEnv` (RLlib's older `VectorEnv` interface:
`vector_reset`, `reset_at`, `vector_step`, `get_sub_environments`)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.util.rllib_members import refuse


class MockEnv(gym.Env):
    """Observation 0, reward 1.0, `episode_length` steps (the last one terminated and truncated,
    as in RLlib). Actions are ignored."""

    def __init__(self, episode_length: int, config: dict | None = None):
        self.episode_length = episode_length
        self.config = config
        self.i = 0
        self.observation_space = gym.spaces.Discrete(1)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.i = 0
        return 0, {}

    def step(self, action):
        self.i += 1
        done = self.i >= self.episode_length
        return 0, 1.0, done, done, {}


class MockEnv2(gym.Env):
    """Observation the timestep (Discrete(episode_length + 1)), reward 100.0, `episode_length`
    steps; `render()` returns a random (300, 400, 3) uint8 image. Actions are ignored."""

    metadata = {"render.modes": ["rgb_array"], "render_modes": ["rgb_array"]}
    render_mode: str | None = "rgb_array"

    def __init__(self, episode_length: int):
        self.episode_length = episode_length
        self.i = 0
        self.observation_space = gym.spaces.Discrete(self.episode_length + 1)
        self.action_space = gym.spaces.Discrete(2)
        self.rng_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.i = 0
        if seed is not None:
            self.rng_seed = seed
        return self.i, {}

    def step(self, action):
        self.i += 1
        done = self.i >= self.episode_length
        return self.i, 100.0, done, done, {}

    def render(self) -> np.ndarray:
        return self.np_random.integers(0, 256, size=(300, 400, 3), dtype=np.uint8)


class MockEnv3(gym.Env):
    """Observation and reward the timestep (Discrete(100) observations), info
    `{"timestep": t}`, `episode_length` steps. Actions are ignored."""

    def __init__(self, episode_length: int):
        self.episode_length = episode_length
        self.i = 0
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.i = 0
        return self.i, {"timestep": 0}

    def step(self, action):
        self.i += 1
        done = self.i >= self.episode_length
        return self.i, self.i, done, done, {"timestep": self.i}


@refuse(
    "ray.rllib.env.vector_env.VectorEnv",
    OLD_API_STACK,
    "RLlib's old-stack VectorEnv API; the new stack's EnvRunners vectorize gymnasium envs "
    "themselves",
    "restart_at",
    "to_base_env",
    "try_render_at",
    "vectorize_gym_envs",
)
class _OldVectorEnv:
    """The attributes of RLlib's older `VectorEnv` interface these mocks share."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, num_envs: int):
        self.observation_space = observation_space
        self.action_space = action_space
        self.num_envs = num_envs


class VectorizedMockEnv(_OldVectorEnv):
    """`num_envs` `MockEnv(episode_length)` sub-envs behind RLlib's older vector interface."""

    def __init__(self, episode_length: int, num_envs: int):
        super().__init__(gym.spaces.Discrete(1), gym.spaces.Discrete(2), num_envs)
        self.envs = [MockEnv(episode_length) for _ in range(num_envs)]

    def vector_reset(self, *, seeds: list | None = None, options: list | None = None):
        seeds = seeds or [None] * self.num_envs
        options = options or [None] * self.num_envs
        results = [env.reset(seed=seeds[i], options=options[i]) for i, env in enumerate(self.envs)]
        return [r[0] for r in results], [r[1] for r in results]

    def reset_at(self, index: int, *, seed: int | None = None, options: dict | None = None):
        return self.envs[index].reset(seed=seed, options=options)

    def vector_step(self, actions: list):
        results = [env.step(actions[i]) for i, env in enumerate(self.envs)]
        return tuple([r[k] for r in results] for k in range(5))

    def get_sub_environments(self) -> list:
        return self.envs


class MockVectorEnv(_OldVectorEnv):
    """One CartPole-v1 that pretends to be `mocked_num_envs` sub-envs: each `vector_step` steps it
    once per pretended sub-env with that sub-env's action, until an episode ends, and repeats
    the last result for the rest. Episodes are truncated after `episode_length` vector steps."""

    def __init__(self, episode_length: int, mocked_num_envs: int):
        self.env = gym.make("CartPole-v1")
        super().__init__(self.env.observation_space, self.env.action_space, mocked_num_envs)
        self.episode_len = episode_length
        self.ts = 0

    def vector_reset(self, *, seeds: list | None = None, options: list | None = None):
        seeds = seeds or [None]
        options = options or [None]
        observation, info = self.env.reset(seed=seeds[0], options=options[0])
        return [observation] * self.num_envs, [info] * self.num_envs

    def reset_at(self, index: int, *, seed: int | None = None, options: dict | None = None):
        self.ts = 0
        return self.env.reset(seed=seed, options=options)

    def vector_step(self, actions: list):
        self.ts += 1
        batches: tuple[list, ...] = ([], [], [], [], [])
        for i in range(self.num_envs):
            observation, reward, terminated, truncated, info = self.env.step(actions[i])
            truncated = truncated or self.ts >= self.episode_len
            result = (observation, reward, terminated, truncated, info)
            copies = self.num_envs - i if (terminated or truncated) else 1
            for batch, value in zip(batches, result, strict=True):
                batch.extend([value] * copies)
            if terminated or truncated:
                break
        return batches

    def get_sub_environments(self) -> list:
        return [self.env] * self.num_envs
