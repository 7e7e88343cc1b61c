"""`DotToTarget`: a small image env, "move the dot onto the target", for convolutional policies.

RLlib's CNN examples train on Atari (which needs ale_py and hours); this env asks the same of the
network (find two objects in an image and act on where they are) and is learnt in a minute:
PPO with RLlib's default 10x10 CNN preset (`framework("torch")`) gets close to the optimal
return within a few dozen thousand steps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

#: Row and column moves of the actions: up, down, left, right.
_MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])


class DotToTarget(gym.Env):
    """A `size` x `size` RGB image (a `(size, size, 3)` float32 Box in [0, 1], channels last,
    black): the dot is a red pixel, the target a green one, each placed at random on reset
    (never on the same pixel). Actions (Discrete(4)) move the dot one pixel up, down,
    left or right (a move off the image leaves it where it is).

    Rewards: `shaping` times the decrease of the dot's Manhattan distance to the target on each
    step (so moving towards it pays, away from it costs) and 1.0 on the step that reaches it,
    which terminates the episode; it is truncated after `max_episode_steps` steps. An optimal
    policy walks straight there: its return is `1 + shaping * starting distance` (about 1.6 on
    the default 10x10 image); a random policy's is about 0.15.

    `config` (RLlib's env_config): `size` (default 10, RLlib's smallest CNN preset),
    `max_episode_steps` (default `2 * size`), `shaping` (default 0.1).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, config: dict | None = None, render_mode: str | None = None):
        config = dict(config or {})
        unknown = sorted(set(config) - {"size", "max_episode_steps", "shaping"})
        if unknown:
            raise ValueError(
                f"DotToTarget: unknown env_config key(s) {unknown}; allowed are 'size', "
                "'max_episode_steps' and 'shaping'"
            )
        self.size = int(config.get("size", 10))
        if self.size < 2:
            raise ValueError(f"DotToTarget: env_config['size']={self.size}: must be >= 2")
        self.max_episode_steps = int(config.get("max_episode_steps", 2 * self.size))
        if self.max_episode_steps < 1:
            raise ValueError(
                f"DotToTarget: env_config['max_episode_steps']={self.max_episode_steps}: must "
                "be >= 1"
            )
        self.shaping = float(config.get("shaping", 0.1))
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.size, self.size, 3), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self._dot = np.zeros(2, dtype=np.int64)
        self._target = np.zeros(2, dtype=np.int64)
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        # Two different pixels: the dot's and the target's.
        cells = self.np_random.choice(self.size * self.size, size=2, replace=False)
        self._dot = np.array(divmod(int(cells[0]), self.size))
        self._target = np.array(divmod(int(cells[1]), self.size))
        self._steps = 0
        return self._observation(), {"distance": self._distance()}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"DotToTarget: action={action!r} is not in {self.action_space}")
        before = self._distance()
        self._dot = np.clip(self._dot + _MOVES[int(action)], 0, self.size - 1)
        self._steps += 1
        after = self._distance()
        reached = after == 0
        reward = self.shaping * (before - after) + (1.0 if reached else 0.0)
        truncated = not reached and self._steps >= self.max_episode_steps
        return self._observation(), float(reward), reached, truncated, {"distance": after}

    def render(self) -> np.ndarray:
        """The image as RGB bytes."""
        return (self._observation() * 255).astype(np.uint8)

    def _distance(self) -> int:
        return int(np.abs(self._dot - self._target).sum())

    def _observation(self) -> np.ndarray:
        image = np.zeros((self.size, self.size, 3), dtype=np.float32)
        image[self._dot[0], self._dot[1], 0] = 1.0  # red
        image[self._target[0], self._target[1], 1] = 1.0  # green
        return image
