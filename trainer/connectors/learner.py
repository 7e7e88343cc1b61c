"""RLlib's learner connector pieces that have a counterpart here (`ray.rllib.connectors.learner`).

The learners here make their train batch from the sampled episodes themselves (RLlib's default
learner pieces), and a user's learner piece rewrites those episodes (see
`AlgorithmConfig.build_learner_connector`). Frame stacking needs no learner step: the
env-to-module `FrameStackingEnvToModule` writes the stacked frames into the episodes, which the
learner trains on, so `FrameStackingLearner` checks that they are there and leaves them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorV2
from trainer.errors import ConfigError


class FrameStackingLearner(ConnectorV2):
    """RLlib's learner-side frame stacking (`FrameStackingLearner(num_frames=...)`), paired with
    `FrameStackingEnvToModule(num_frames=...)` in the EnvRunners. Here the EnvRunners' episodes
    already hold the stacked frames (oldest first along the last axis) the module acted on, so
    the learner's batch is made of them as they are; each call checks that the episodes'
    observations have the module's (stacked) shape, and raises `ConfigError` when they do not
    (no `FrameStackingEnvToModule` in `env_to_module_connector`, or another `num_frames`)."""

    #: The episodes hold this piece's output already: it may run with any algorithm, and
    #: multi-agent configs, whose learners make batches from the episodes.
    EPISODES_HOLD_OUTPUT = True

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 1,
        multi_agent: bool = False,
        as_learner_connector: bool = True,
        **kwargs: Any,
    ):
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise ValueError(f"FrameStackingLearner(num_frames={num_frames!r}): must be >= 1")
        self.num_frames = num_frames
        self.multi_agent = bool(multi_agent)
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        for episode in self.single_agent_episode_iterator(episodes):
            module = _module_of(rl_module, episode)
            space = getattr(module, "observation_space", None)
            if not isinstance(space, gym.spaces.Box) or len(episode.observations) == 0:
                continue
            shape = np.shape(episode.get_observations(0))
            if shape != space.shape or shape[-1] % self.num_frames:
                raise ConfigError(
                    f"FrameStackingLearner(num_frames={self.num_frames}): the episodes hold "
                    f"observations of shape {shape}, the module takes {space.shape}; here the "
                    "EnvRunners stack the frames into the episodes: add "
                    f"FrameStackingEnvToModule(num_frames={self.num_frames}) to "
                    "env_runners(env_to_module_connector=...)"
                )
            break  # one episode tells: they all come from the same pipeline
        return batch


def _module_of(rl_module: Any, episode: Any) -> Any:
    """The module that learns from `episode` (a MultiRLModule's: the episode's module id)."""
    module_id = getattr(episode, "module_id", None)
    if module_id is not None and hasattr(rl_module, "__getitem__"):
        try:
            return rl_module[module_id]
        except (KeyError, TypeError):
            return None
    return rl_module


def holds_output_in_episodes(piece: Any) -> bool:
    """Whether `piece` leaves the episodes as the learner trains on them (its output is in
    them already), so that any algorithm may run it."""
    return bool(getattr(piece, "EPISODES_HOLD_OUTPUT", False))
