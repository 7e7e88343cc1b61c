"""RLlib's Atari wrappers (`ray.rllib.env.wrappers.atari_wrappers`) for gymnasium envs with
ALE's surface: `unwrapped.get_action_meanings()` (with "NOOP" first) and
`unwrapped.ale.lives()`.

`wrap_atari_for_new_api_stack` chains them as RLlib 2.60 does (time limit, grayscale and resize,
scaling to [-1, 1], frame skipping with a max over the last two frames, random no-ops on reset,
one episode per life, FIRE on reset where the game has it, frame stacking). Images are resized
and grayscaled as RLlib does (`trainer.util.images`: OpenCV's INTER_AREA and COLOR_RGB2GRAY),
by OpenCV where it is installed (the `atari` extra), else in numpy. ALE itself (`ale_py`) is not part of this project: the project's own
Atari-like game, `localrl/TinyCatch-v0`, has the surface these wrappers use.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from trainer.util.images import resize, rgb2gray

#: RLlib's time limit of an Atari episode (ALE's v5 default of 108k frames).
MAX_EPISODE_STEPS = 108_000

#: What a gymnasium `step` returns: (observation, reward, terminated, truncated, info).
StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


def _ale(env: gym.Env) -> Any:
    """The innermost env, with ALE's surface (`get_action_meanings()`, `ale.lives()`), which
    gymnasium's `Env` type does not declare."""
    return env.unwrapped


def is_atari(env: gym.Env | str) -> bool:
    """Whether `env` (an env object or an env id) is an ALE Atari env, as RLlib decides: an id
    starting with "ALE/" or "ale_py:", or an env with image observations whose text names
    ALE's `AtariEnv<ALE...>`."""
    if isinstance(env, str):
        return env.startswith("ALE/") or env.startswith("ale_py:")
    shape = getattr(env.observation_space, "shape", None)
    if shape is not None and len(shape) <= 2:
        return False
    return "AtariEnv<ALE" in str(env)


def get_wrapper_by_cls(env: gym.Env, cls: type) -> gym.Env | None:
    """The outermost wrapper of `env` (or `env` itself) that is a `cls`, None if there is
    none."""
    current = env
    while True:
        if isinstance(current, cls):
            return current
        if not isinstance(current, gym.Wrapper):
            return None
        current = current.env


def _lives(env: gym.Env) -> int:
    return int(_ale(env).ale.lives())


class ClipRewardEnv(gym.RewardWrapper):
    """Rewards binned to {-1, 0, +1} by their sign."""

    def reward(self, reward: SupportsFloat) -> float:
        return float(np.sign(float(reward)))


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life ends the episode (`terminated`); the game itself is reset only when it is
    over, so every state stays reachable. A reset after a lost life is one NOOP step."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.was_real_terminated = True

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_terminated = terminated
        lives = _lives(self.env)
        # Only a loss down to a positive count ends the episode here: at 0 lives the game
        # says `terminated` itself (some games sit at 0 for a few frames first).
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        if self.was_real_terminated:
            obs, info = self.env.reset(**kwargs)
        else:
            # Not a real game over: one no-op step on from the lost life.
            obs, _, _, _, info = self.env.step(0)
        self.lives = _lives(self.env)
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Presses FIRE (action 1), then action 2, after each reset: for games that stand still
    until fired."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        meanings = _ale(env).get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(
                f"FireResetEnv: the env's action meanings {meanings} need 'FIRE' as action 1 "
                "and at least 3 actions"
            )

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, _ = self.env.step(1)
        if terminated or truncated:
            self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(2)
        if terminated or truncated:
            self.env.reset(**kwargs)
        return obs, info

    def step(self, action: Any) -> StepResult:
        return self.env.step(action)


class FrameStack(gym.Wrapper):
    """The last `k` observations (H, W, C) concatenated along the channels, (H, W, C * k),
    oldest first; a reset fills all `k` with the first observation."""

    def __init__(self, env: gym.Env, k: int):
        super().__init__(env)
        self.k = int(k)
        if self.k < 1:
            raise ValueError(f"FrameStack: k={k!r}: must be a positive number of frames")
        self.frames: deque = deque([], maxlen=self.k)
        space: Any = env.observation_space
        height, width, channels = space.shape
        self.observation_space = spaces.Box(
            low=np.repeat(space.low, repeats=self.k, axis=-1),
            high=np.repeat(space.high, repeats=self.k, axis=-1),
            shape=(height, width, channels * self.k),
            dtype=space.dtype,
        )

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        for _ in range(self.k):
            self.frames.append(obs)
        return self._stacked(), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return self._stacked(), reward, terminated, truncated, info

    def _stacked(self) -> np.ndarray:
        return np.concatenate(self.frames, axis=2)


class FrameStackTrajectoryView(gym.ObservationWrapper):
    """No stacking: a single-channel (H, W, 1) image as (H, W) (the old stack's view
    requirements stacked frames instead)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        shape: Any = env.observation_space.shape
        if len(shape) != 3 or shape[2] != 1:
            raise ValueError(
                f"FrameStackTrajectoryView: observation shape {shape}: expected (H, W, 1)"
            )
        self.observation_space = spaces.Box(
            low=0, high=255, shape=shape[:2], dtype=np.dtype(env.observation_space.dtype)
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.squeeze(observation, axis=-1)


class MaxAndSkipEnv(gym.Wrapper):
    """Each action repeated `skip` times: the rewards summed, the observation the pixel-wise
    maximum of the last two frames (Atari sprites flicker between frames). Stops early at the
    end of the episode."""

    def __init__(self, env: gym.Env, skip: int = 4):
        super().__init__(env)
        self._skip = int(skip)
        if self._skip < 1:
            raise ValueError(f"MaxAndSkipEnv: skip={skip!r}: must be a positive number of frames")
        # The last two raw frames, for the maximum.
        space: Any = env.observation_space
        self._obs_buffer = np.zeros((2, *space.shape), dtype=space.dtype)
        #: What steps the frames before the last two, whose observations nobody reads: the env
        #: beneath this module's own per-frame image wrappers (RLlib's order puts
        #: `GrayScaleAndResize` and `NormalizedImageEnv` under the frame skip), which change
        #: nothing but the observation, so their work on those frames is skipped (half of
        #: them at skip 4).
        source = env
        while type(source) in _PER_FRAME_OBSERVATION_WRAPPERS:
            source = source.env  # type: ignore[attr-defined]
        self._unread_frames = source

    def step(self, action: Any) -> StepResult:
        total_reward = 0.0
        terminated = truncated = False
        info: dict = {}
        for i in range(self._skip):
            frames = self.env if i >= self._skip - 2 else self._unread_frames
            obs, reward, terminated, truncated, info = frames.step(action)
            if i == self._skip - 2:
                self._obs_buffer[0] = obs
            if i == self._skip - 1:
                self._obs_buffer[1] = obs
            total_reward += float(reward)
            if terminated or truncated:
                break
        # As RLlib: the frame of an episode's end is not written (it does not matter).
        return self._obs_buffer.max(axis=0), total_reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        return self.env.reset(**kwargs)


class MonitorEnv(gym.Wrapper):
    """Records the return and length of each game (before `EpisodicLifeEnv` splits it)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._current_reward: float | None = None
        self._num_steps = 0
        self._total_steps: int | None = None
        self._episode_rewards: list[float] = []
        self._episode_lengths: list[int] = []
        self._num_episodes = 0
        self._num_returned = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        if self._total_steps is None:
            self._total_steps = sum(self._episode_lengths)
        if self._current_reward is not None:
            self._episode_rewards.append(self._current_reward)
            self._episode_lengths.append(self._num_steps)
            self._num_episodes += 1
        self._current_reward = 0
        self._num_steps = 0
        return obs, info

    def step(self, action: Any) -> StepResult:
        if self._current_reward is None:
            raise RuntimeError("MonitorEnv.step() before reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._current_reward += float(reward)
        self._num_steps += 1
        self._total_steps = (self._total_steps or 0) + 1
        return obs, reward, terminated, truncated, info

    def get_episode_rewards(self) -> list[float]:
        return self._episode_rewards

    def get_episode_lengths(self) -> list[int]:
        return self._episode_lengths

    def get_total_steps(self) -> int | None:
        return self._total_steps

    def next_episode_results(self) -> Iterator[tuple[float, int]]:
        """(return, length) of each finished game not yielded before."""
        for i in range(self._num_returned, len(self._episode_rewards)):
            yield self._episode_rewards[i], self._episode_lengths[i]
        self._num_returned = len(self._episode_rewards)


class NoopResetEnv(gym.Wrapper):
    """After each reset, a random number (1 to `noop_max`, from the env's own `np_random`) of
    NOOP steps (action 0), so that episodes start in different states. Set
    `override_num_noops` to fix the number."""

    def __init__(self, env: gym.Env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = int(noop_max)
        if self.noop_max < 1:
            raise ValueError(f"NoopResetEnv: noop_max={noop_max!r}: must be >= 1")
        self.override_num_noops: int | None = None
        self.noop_action = 0
        meanings = _ale(env).get_action_meanings()
        if not meanings or meanings[0] != "NOOP":
            raise ValueError(
                f"NoopResetEnv: the env's action meanings {meanings} need 'NOOP' as action 0"
            )

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.env.reset(**kwargs)
        if self.override_num_noops is not None:
            noops = int(self.override_num_noops)
        else:
            noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        if noops < 1:
            raise ValueError(f"NoopResetEnv: override_num_noops={noops}: must be >= 1")
        obs: Any = None
        info: dict[str, Any] = {}
        for _ in range(noops):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info

    def step(self, action: Any) -> StepResult:
        return self.env.step(action)


class NormalizedImageEnv(gym.ObservationWrapper):
    """8-bit images as float32 in [-1, 1): `obs / 128 - 1`."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = spaces.Box(
            -1.0, 1.0, shape=env.observation_space.shape, dtype=np.float32
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (observation.astype(np.float32) / 128.0) - 1.0


class GrayScaleAndResize(gym.ObservationWrapper):
    """RGB frames resized to `dim` x `dim` (area averaging), grayscaled to (dim, dim, 1) unless
    `grayscale=False` (then (dim, dim, 3)); uint8 in [0, 255]."""

    def __init__(self, env: gym.Env, dim: int, grayscale: bool = True):
        super().__init__(env)
        self.width = self.height = int(dim)
        if self.width < 1:
            raise ValueError(f"GrayScaleAndResize: dim={dim!r}: must be a positive size")
        self.grayscale = grayscale
        self.observation_space = spaces.Box(
            low=0,
            high=255,
            shape=(self.height, self.width, 1 if grayscale else 3),
            dtype=np.uint8,
        )

    def observation(self, frame: np.ndarray) -> np.ndarray:
        if self.grayscale:
            return resize(rgb2gray(frame), height=self.height, width=self.width)[:, :, None]
        return resize(frame, height=self.height, width=self.width)


#: RLlib's older name of `GrayScaleAndResize`.
WarpFrame = GrayScaleAndResize

#: The observation wrappers `MaxAndSkipEnv` steps beneath for frames whose observation it does
#: not read: they keep no state and pass rewards, ends and infos through (exact classes only:
#: a subclass may do more).
_PER_FRAME_OBSERVATION_WRAPPERS = (GrayScaleAndResize, NormalizedImageEnv)


def wrap_atari_for_new_api_stack(
    env: gym.Env,
    dim: int = 64,
    frameskip: int = 4,
    framestack: int | None = None,
    grayscale: bool = True,
    *,
    normalize: bool = True,
) -> gym.Env:
    """`env` wrapped for RLlib's new-stack Atari experiments, in RLlib 2.60's order: a time
    limit of 108k steps, `GrayScaleAndResize(dim)`, `NormalizedImageEnv`, `MaxAndSkipEnv`
    (when `frameskip` > 1; the env must come from `gym.make`), `NoopResetEnv(30)`,
    `EpisodicLifeEnv`, `FireResetEnv` (when the game has a FIRE action) and
    `FrameStack(framestack)` (when given). Rewards are not clipped.

    `normalize=False` (localrl's) leaves out `NormalizedImageEnv`: frames stay uint8, a
    quarter of the bytes from the EnvRunners to the learner, and this project's default torch
    modules scale them as `NormalizedImageEnv` does, so they compute the same (a user's own
    module gets the bytes)."""
    if not isinstance(env, gym.Env):
        raise TypeError(
            f"wrap_atari_for_new_api_stack: env={env!r}: expected a gymnasium.Env with ALE's "
            "surface (unwrapped.get_action_meanings(), unwrapped.ale.lives()), e.g. "
            "gym.make('localrl/TinyCatch-v0')"
        )
    env = gym.wrappers.TimeLimit(env, max_episode_steps=MAX_EPISODE_STEPS)
    env = WarpFrame(env, dim=dim, grayscale=grayscale)
    if normalize:
        env = NormalizedImageEnv(env)
    if frameskip > 1:
        if env.spec is None:
            raise ValueError(
                f"wrap_atari_for_new_api_stack: frameskip={frameskip} needs an env made by "
                "gym.make (env.spec is None)"
            )
        env = MaxAndSkipEnv(env, skip=frameskip)
    # Random no-ops vary the start states; these steps are not part of the sampled data.
    env = NoopResetEnv(env, noop_max=30)
    env = EpisodicLifeEnv(env)
    if "FIRE" in _ale(env).get_action_meanings():
        env = FireResetEnv(env)
    if framestack:
        env = FrameStack(env, k=framestack)
    return env


def wrap_deepmind(
    env: gym.Env, dim: int = 84, framestack: bool = True, noframeskip: bool = False
) -> gym.Env:
    """DeepMind's Atari wrapping, in RLlib's order: `MonitorEnv`, `NoopResetEnv(30)`,
    `MaxAndSkipEnv(4)` (only with `noframeskip=True`, as RLlib), `EpisodicLifeEnv`,
    `FireResetEnv` (when the game has FIRE), `WarpFrame(dim)` and 4 stacked frames (with
    `framestack`). Rewards are not clipped."""
    env = MonitorEnv(env)
    env = NoopResetEnv(env, noop_max=30)
    if env.spec is not None and noframeskip is True:
        env = MaxAndSkipEnv(env, skip=4)
    env = EpisodicLifeEnv(env)
    if "FIRE" in _ale(env).get_action_meanings():
        env = FireResetEnv(env)
    env = WarpFrame(env, dim)
    if framestack is True:
        env = FrameStack(env, 4)
    return env


__all__ = [
    "ClipRewardEnv",
    "EpisodicLifeEnv",
    "FireResetEnv",
    "FrameStack",
    "FrameStackTrajectoryView",
    "GrayScaleAndResize",
    "MaxAndSkipEnv",
    "MonitorEnv",
    "NoopResetEnv",
    "NormalizedImageEnv",
    "WarpFrame",
    "get_wrapper_by_cls",
    "is_atari",
    "wrap_atari_for_new_api_stack",
    "wrap_deepmind",
]
