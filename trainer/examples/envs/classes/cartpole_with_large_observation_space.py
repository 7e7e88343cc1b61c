"""`CartPoleWithLargeObservationSpace`: CartPole whose observation is a Dict of 101 entries, 100 of
them noise (RLlib's example env, for testing large nested observation spaces)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

NUM_NOISE_ENTRIES = 100


class CartPoleWithLargeObservationSpace(CartPoleEnv):
    """CartPole with observations

        {"0": (Discrete(100), Box(0, 256, (30,))), ..., "99": (...),
         "actually-useful-stuff": Box(-4.8, 4.8, (4,))}

    The 100 numbered entries are fresh samples of their spaces each step; the last one is
    CartPole's observation (its bounds, as RLlib's, are those of the cart position).
    """

    # Dict observations where CartPoleEnv's are arrays: a subclass that changes its base's
    # observation type, which typing cannot express, hence the ignore.
    observation_space: gym.spaces.Dict  # type: ignore[assignment]

    def __init__(self, config: dict | None = None):
        super().__init__()
        cartpole_space = CartPoleEnv().observation_space  # the bounds, before replacing it
        if not isinstance(cartpole_space, gym.spaces.Box):
            raise TypeError(f"CartPole's observation space is {cartpole_space}, not a Box")
        low, high = cartpole_space.low, cartpole_space.high
        spaces: dict[str, gym.Space] = {
            str(i): gym.spaces.Tuple(
                (gym.spaces.Discrete(100), gym.spaces.Box(0, 256, shape=(30,), dtype=np.float32))
            )
            for i in range(NUM_NOISE_ENTRIES)
        }
        spaces["actually-useful-stuff"] = gym.spaces.Box(low[0], high[0], (4,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        if seed is not None:
            # The noise entries are space samples: seed them too, so a seeded reset repeats.
            self.observation_space.seed(seed)
        return self._large(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return self._large(observation), reward, terminated, truncated, info

    def _large(self, cartpole_observation: np.ndarray) -> dict:
        noise = {
            str(i): self.observation_space.spaces[str(i)].sample() for i in range(NUM_NOISE_ENTRIES)
        }
        return noise | {"actually-useful-stuff": cartpole_observation}
