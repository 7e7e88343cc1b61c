"""DeepMind Control Suite tasks as gymnasium envs: RLlib's `DMCEnv` (after dmc2gym) and
`ActionClip`. Needs the `mujoco` extra (`dm-control`).

`DMCEnv(domain_name, task_name, from_pixels=False, ...)`: observations are the task's
observation dict flattened into one float32 vector, or with `from_pixels` the camera's image
(`height` x `width`, channels first unless `channels_first=False`; with `preprocess`, floats in
[-0.5, 0.5], else uint8). Actions are in [-1, 1] and scaled to the task's bounds; each step
repeats the action `frame_skip` times and sums the rewards. Episodes end truncated (the suite's
time limit), never terminated, as in RLlib.

Rendering without a display: where `MUJOCO_GL` is not set and there is no X display, EGL is
used (MuJoCo's default, GLFW, needs a display).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np


def _suite() -> Any:
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
    try:
        from dm_control import suite
    except ImportError as error:
        raise ModuleNotFoundError(
            f"DMCEnv needs DeepMind Control ({error}); install it with "
            "pip install -e '.[mujoco]' (or pip install dm-control)",
            name="dm_control",
        ) from None
    return suite


def _spec_to_box(specs: Any) -> gym.spaces.Box:
    """One float32 Box over the flattened specs (unbounded for unbounded specs)."""
    lows, highs = [], []
    for spec in specs:
        size = int(np.prod(spec.shape))
        low = getattr(spec, "minimum", -np.inf)
        high = getattr(spec, "maximum", np.inf)
        lows.append(np.broadcast_to(np.asarray(low, np.float64), spec.shape).reshape(size))
        highs.append(np.broadcast_to(np.asarray(high, np.float64), spec.shape).reshape(size))
    low, high = np.concatenate(lows), np.concatenate(highs)
    return gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def _flatten_obs(observation: dict) -> np.ndarray:
    return np.concatenate([np.asarray(v, np.float64).ravel() for v in observation.values()])


class DMCEnv(gym.Env):
    """A DeepMind Control Suite task (see the module doc)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        domain_name: str,
        task_name: str,
        task_kwargs: dict | None = None,
        visualize_reward: bool = False,
        from_pixels: bool = False,
        height: int = 64,
        width: int = 64,
        camera_id: int = 0,
        frame_skip: int = 2,
        environment_kwargs: dict | None = None,
        channels_first: bool = True,
        preprocess: bool = True,
    ):
        if int(frame_skip) < 1:
            raise ValueError(f"DMCEnv(frame_skip={frame_skip!r}): at least 1")
        self._from_pixels = from_pixels
        self._height, self._width, self._camera_id = height, width, camera_id
        self._frame_skip = int(frame_skip)
        self._channels_first = channels_first
        self.preprocess = preprocess
        self._env = _suite().load(
            domain_name=domain_name,
            task_name=task_name,
            task_kwargs=task_kwargs,
            visualize_reward=visualize_reward,
            environment_kwargs=environment_kwargs,
        )
        self._true_action_space = _spec_to_box([self._env.action_spec()])
        self._norm_action_space = gym.spaces.Box(
            -1.0, 1.0, self._true_action_space.shape, dtype=np.float32
        )
        self.action_space = self._norm_action_space
        if from_pixels:
            shape = (3, height, width) if channels_first else (height, width, 3)
            self.observation_space = (
                gym.spaces.Box(-0.5, 0.5, shape, dtype=np.float32)
                if preprocess
                else gym.spaces.Box(0, 255, shape, dtype=np.uint8)
            )
        else:
            self.observation_space = _spec_to_box(self._env.observation_spec().values())
        self.state_space = _spec_to_box(self._env.observation_spec().values())
        self.current_state: np.ndarray | None = None

    def _get_obs(self, time_step: Any) -> np.ndarray:
        if not self._from_pixels:
            return _flatten_obs(time_step.observation).astype(np.float32)
        image = self.render(height=self._height, width=self._width, camera_id=self._camera_id)
        if self._channels_first:
            image = image.transpose(2, 0, 1)
        if self.preprocess:
            return (image / 255.0 - 0.5).astype(np.float32)
        return np.ascontiguousarray(image, dtype=np.uint8)

    def _convert_action(self, action: np.ndarray) -> np.ndarray:
        true, norm = self._true_action_space, self._norm_action_space
        scaled = (np.asarray(action, np.float64) - norm.low) / (norm.high - norm.low)
        return (scaled * (true.high - true.low) + true.low).astype(np.float32)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = np.asarray(action, np.float32)
        if not self.action_space.contains(action):
            raise ValueError(
                f"DMCEnv.step: action {action!r} is outside the action space {self.action_space}"
            )
        physical = self._convert_action(action)
        info: dict[str, Any] = {"internal_state": self._env.physics.get_state().copy()}
        reward, truncated = 0.0, False
        for _ in range(self._frame_skip):
            time_step = self._env.step(physical)
            reward += time_step.reward or 0.0
            truncated = time_step.last()
            if truncated:
                break
        self.current_state = _flatten_obs(time_step.observation)
        info["discount"] = time_step.discount
        return self._get_obs(time_step), float(reward), False, bool(truncated), info

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        if seed is not None:
            self._env.task.random.seed(seed)
        time_step = self._env.reset()
        self.current_state = _flatten_obs(time_step.observation)
        return self._get_obs(time_step), {}

    def render(
        self,
        mode: str = "rgb_array",
        height: int | None = None,
        width: int | None = None,
        camera_id: int = 0,
    ) -> np.ndarray:
        if mode != "rgb_array":
            raise ValueError(f"DMCEnv.render(mode={mode!r}): only 'rgb_array'")
        return self._env.physics.render(
            height=height or self._height,
            width=width or self._width,
            camera_id=camera_id or self._camera_id,
        )

    def close(self) -> None:
        self._env.close()


class ActionClip(gym.ActionWrapper):
    """Clips actions into [-1, 1] (and declares that as the action space)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._low, self._high = -1.0, 1.0
        self.action_space = gym.spaces.Box(
            self._low,
            self._high,
            env.action_space.shape,
            env.action_space.dtype,  # type: ignore[arg-type]
        )

    def action(self, action: Any) -> np.ndarray:
        return np.clip(action, self._low, self._high)
