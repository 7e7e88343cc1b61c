"""RLlib's learner connector pieces that have a counterpart here (`ray.rllib.connectors.learner`).

The learners here make their train batch from the sampled episodes themselves (RLlib's default
learner pieces), and a user's learner piece rewrites those episodes (see
`AlgorithmConfig.build_learner_connector`). `FrameStackingLearner` rewrites each episode's
frames into the stacked observations the module saw (`FrameStackingEnvToModule`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorV2, made_pieces
from trainer.errors import ConfigError


class FrameStackingLearner(ConnectorV2):
    """RLlib's learner-side frame stacking (`FrameStackingLearner(num_frames=...)`), paired with
    `FrameStackingEnvToModule(num_frames=...)` as the last env-to-module piece.

    With PPO, APPO and IMPALA (which run the learner pieces) the episodes hold each frame once
    (each agent's, in multi-agent runs with `multi_agent=True` on both pieces), a chunk that
    continues an episode with the frames before it as its observations' lookback buffer; each
    (agent's) episode's observations become the stacked ones here, oldest frame first along
    the last axis, zeros before the episode's first frame: what the module saw. Where the
    EnvRunners stacked the frames into the episodes already (the other algorithms, whose
    learners take no learner pieces), the episodes are left as they are.
    Episodes whose observations fit neither raise `ConfigError` (no `FrameStackingEnvToModule`
    in `env_to_module_connector`, or another `num_frames`)."""

    #: Any algorithm may take this piece: where the algorithm runs no learner pieces, the
    #: EnvRunners stack the frames into the episodes.
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
        # (Every agent's episode: a learner piece sees whole chunks, as RLlib's.)
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            module = _module_of(rl_module, episode)
            space = getattr(module, "observation_space", None)
            if not isinstance(space, gym.spaces.Box) or len(episode.observations) == 0:
                continue
            shape = np.shape(episode.get_observations(0))
            if shape == space.shape and shape[-1] % self.num_frames == 0:
                continue  # stacked by the EnvRunner
            if shape[:-1] != space.shape[:-1] or shape[-1] * self.num_frames != space.shape[-1]:
                raise ConfigError(
                    f"FrameStackingLearner(num_frames={self.num_frames}): the episodes hold "
                    f"observations of shape {shape}, the module takes {space.shape}; stack the "
                    f"frames with FrameStackingEnvToModule(num_frames={self.num_frames}) as "
                    "the last piece of env_runners(env_to_module_connector=...)"
                )
            # (A buffer of the episode's own class: the episodes sit above the pieces.)
            frames = episode.observations
            episode.observations = type(frames).of_array(stacked_frames(frames, self.num_frames))
        return batch


def stacked_frames(frames: Any, num_frames: int) -> np.ndarray:
    """Each observation of `frames` (an episode's buffer: after its lookback) stacked with the
    `num_frames - 1` before it along the last axis, oldest first: from the lookback buffer
    where it has them, zeros before that (the episode's start)."""
    data = np.asarray(frames.data)
    earlier = num_frames - 1
    available = min(frames.lookback, earlier)
    data = data[frames.lookback - available :]
    if available < earlier:
        zeros = np.zeros((earlier - available, *data.shape[1:]), data.dtype)
        data = np.concatenate([zeros, data])
    length = len(data) - earlier
    return np.concatenate([data[k : k + length] for k in range(num_frames)], axis=-1)


def _module_of(rl_module: Any, episode: Any) -> Any:
    """The module that learns from `episode` (a MultiRLModule's: the episode's module id)."""
    module_id = getattr(episode, "module_id", None)
    if module_id is not None and hasattr(rl_module, "__getitem__"):
        try:
            return rl_module[module_id]
        except (KeyError, TypeError):
            return None
    return rl_module


def pieces_made_without_spaces(factory: Any) -> list | None:
    """The pieces a `learner_connector` factory makes when called without spaces (pieces
    whose output the episodes hold, `FrameStackingLearner`, need none); None for a factory
    that cannot be called so (it makes other pieces)."""
    try:
        made = factory(None, None)
    except Exception:  # noqa: BLE001 - a factory that needs its spaces makes other pieces
        return None
    return made_pieces(made)


def holds_output_in_episodes(piece: Any) -> bool:
    """Whether `piece` leaves the episodes as the learner trains on them (its output is in
    them already), so that any algorithm may run it."""
    return bool(getattr(piece, "EPISODES_HOLD_OUTPUT", False))
