"""`CartPoleWithDictObservationSpace`: CartPole whose observation is a nested Dict/Tuple (RLlib's
example env, for testing nested observation spaces)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv


class CartPoleWithDictObservationSpace(CartPoleEnv):
    """CartPole with the same information in a quirky nested observation:

        {"x-pos": Box((1,)),
         "angular-pos": {"value": Box(()), "some_random_stuff": Discrete(3)},
         "velocs": (Box((1,)), Box(()))}

    `some_random_stuff` is noise (a uniform draw from the env's generator each step).
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
        self.observation_space = gym.spaces.Dict(
            {
                "x-pos": gym.spaces.Box(low[0], high[0], (1,), dtype=np.float32),
                "angular-pos": gym.spaces.Dict(
                    {
                        "value": gym.spaces.Box(low[2], high[2], (), dtype=np.float32),
                        "some_random_stuff": gym.spaces.Discrete(3),
                    }
                ),
                "velocs": gym.spaces.Tuple(
                    [
                        gym.spaces.Box(low[1], high[1], (1,), dtype=np.float32),
                        gym.spaces.Box(low[3], high[3], (), dtype=np.float32),
                    ]
                ),
            }
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return self._nested(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return self._nested(observation), reward, terminated, truncated, info

    def _nested(self, flat: np.ndarray) -> dict:
        return {
            "x-pos": np.array([flat[0]], np.float32),
            "angular-pos": {
                "value": np.array(flat[2], np.float32),
                "some_random_stuff": int(self.np_random.integers(3)),
            },
            "velocs": (np.array([flat[1]], np.float32), np.array(flat[3], np.float32)),
        }
