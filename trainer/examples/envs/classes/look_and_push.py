"""`LookAndPush`: a memory-requiring env (RLlib's example env), and `OneHot`, a wrapper that
one-hot encodes its Discrete observations."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class LookAndPush(gym.Env):
    """States 0..4; each episode hides a case (0 or 1). Start in state 2.

    - action 0 in state 2 reveals the case: the next state is the case (0 or 1);
    - action 1 moves on: from 0 back to 2, otherwise one state up;
    - in state 4, action 1 pays +10 if the case is 1 and -10 otherwise, and ends the episode
      (as in RLlib, action 0 there always pays -10);
    - every other step pays -1.

    So the best policy looks (0) in state 2, pushes (1) up to 4, and acts there on what it saw.
    RLlib's version returns a 4-tuple on its final step; this one returns gymnasium's 5-tuple.
    """

    def __init__(self):
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(5)
        self._state: int | None = None
        self._case: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._state = 2
        self._case = int(self.np_random.choice(2))
        return self._state, {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"LookAndPush: action {action!r} is not in {self.action_space}")
        if self._state == 4:
            return self._state, 10.0 if action and self._case else -10.0, True, False, {}
        if self._state is None:
            raise RuntimeError("LookAndPush: call reset() before step()")
        if action:
            self._state = 2 if self._state == 0 else self._state + 1
        elif self._state == 2:
            self._state = self._case
        return self._state, -1, False, False, {}


class OneHot(gym.Wrapper):
    """Turns a Discrete(n) observation into a one-hot float32 Box(0, 1, (n,)) (RLlib's wrapper
    fills with ones, a bug this one does not copy)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        if not isinstance(env.observation_space, gym.spaces.Discrete):
            raise ValueError(
                f"OneHot encodes Discrete observations; this env's are {env.observation_space}"
            )
        self._n = int(env.observation_space.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self._n,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        return self._encode_obs(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._encode_obs(observation), reward, terminated, truncated, info

    def _encode_obs(self, observation: int) -> np.ndarray:
        encoded = np.zeros(self._n, dtype=np.float32)
        encoded[observation] = 1.0
        return encoded
