"""`EnvRenderCallback`: records each episode's rendered frames and logs the best and the worst
episode of every sampling round as videos (RLlib's callback from its example script
`rllib/examples/envs/env_rendering_and_recording.py`, which other examples import).

The script itself runs unchanged through the launcher (`python -m trainer run ...`); this module
holds what other code imports from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.callbacks import RLlibCallback
from trainer.util.images import resize

#: The size each frame is scaled to, as in RLlib (height, width).
VIDEO_HEIGHT, VIDEO_WIDTH = 64, 96


class EnvRenderCallback(RLlibCallback):
    """Renders the env after every step (the env must have `render_mode="rgb_array"`), keeps the
    frames in `episode.custom_data["render_images"]` (each scaled to 64x96 and moved to
    channels-first), and at the end of each `sample()` logs the best and the worst episode this
    EnvRunner finished since the last logging as videos of shape (1, T, 3, 64, 96):
    `episode_videos_best` and `episode_videos_worst`, with `reduce="item_series"` (kept as a
    list, not averaged; e.g. for WandB).

    `env_runner_indices`: the EnvRunners that record (None: all).
    A vectorized env's frames come from the sub-env of the episode (`env_index`); RLlib renders
    sub-env 0 for every episode.
    """

    def __init__(self, env_runner_indices: Sequence[int] | None = None):
        super().__init__()
        self._env_runner_indices = env_runner_indices
        # The best and worst (video, return) of the episodes since the last `on_sample_end`.
        self.best_episode_and_return: tuple[Any, float] = (None, float("-inf"))
        self.worst_episode_and_return: tuple[Any, float] = (None, float("inf"))

    def _records(self, env_runner: Any) -> bool:
        return (
            self._env_runner_indices is None
            or getattr(env_runner, "worker_index", 0) in self._env_runner_indices
        )

    def on_episode_step(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int = 0,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """Adds the current frame to the episode's `custom_data`."""
        if not self._records(env_runner):
            return
        unwrapped = env.unwrapped
        # A vector env of sub-envs (gymnasium's, or a MultiAgentEnvRunner's MultiAgentEnvs,
        # as RLlib's VectorMultiAgentEnv): the episode's own sub-env renders.
        if isinstance(unwrapped, gym.vector.SyncVectorEnv) or isinstance(
            getattr(unwrapped, "envs", None), list
        ):
            image = unwrapped.envs[env_index].render()
        else:
            image = unwrapped.render()
        if not isinstance(image, np.ndarray):
            raise ValueError(
                f"EnvRenderCallback: env.render() returned {type(image).__name__}, "
                "not an image; create the env with render_mode='rgb_array'"
            )
        image = np.transpose(resize(image, VIDEO_HEIGHT, VIDEO_WIDTH), axes=[2, 0, 1])
        episode.custom_data.setdefault("render_images", []).append(image)

    def on_episode_end(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int = 0,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """Keeps the episode's video if it is the best or the worst so far."""
        if not self._records(env_runner):
            return
        episode_return = episode.get_return()
        if not (
            episode_return > self.best_episode_and_return[1]
            or episode_return < self.worst_episode_and_return[1]
        ):
            return
        video = np.expand_dims(np.stack(episode.custom_data["render_images"], axis=0), axis=0)
        if episode_return > self.best_episode_and_return[1]:
            self.best_episode_and_return = (video, episode_return)
        else:
            self.worst_episode_and_return = (video, episode_return)

    def on_sample_end(
        self,
        *,
        env_runner: Any = None,
        metrics_logger: Any = None,
        samples: list | None = None,
        **kwargs: Any,
    ) -> None:
        """Logs the best and the worst video, then starts over."""
        if self.best_episode_and_return[0] is not None:
            metrics_logger.log_value(
                "episode_videos_best", self.best_episode_and_return[0], reduce="item_series"
            )
            self.best_episode_and_return = (None, float("-inf"))
        if self.worst_episode_and_return[0] is not None:
            metrics_logger.log_value(
                "episode_videos_worst", self.worst_episode_and_return[0], reduce="item_series"
            )
            self.worst_episode_and_return = (None, float("inf"))
