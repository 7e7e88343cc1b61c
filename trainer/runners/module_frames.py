"""Frames stacked in the learner: what the single-agent EnvRunner keeps when the last piece of
its env-to-module pipeline is a `FrameStackingEnvToModule` and the algorithm runs a
`FrameStackingLearner` of the same count (RLlib's Atari pipeline).

    env frames -> the pipeline's other pieces -> episodes (each frame once)
                                              -> `ModuleFrames.push` -> the module (stacked)
    sampled episodes -> FrameStackingLearner (the learner) -> stacked again, once

Per sub-env `ModuleFrames` holds the module's last input: its last `num_frames` frames along
the last axis, oldest first, zeros before the episode's first frame (what the piece gives).
The sampling loop pushes each new row of frames into it (a sub-env whose episode starts with
the row starts from zeros) and hands the result to the module. A chunk that continues an
episode from the last call gets the frames before its first one (the state at the call's
start, all but the newest frame) as its observations' lookback buffer, which the learner's
piece reads with `neg_index_as_lookback` as RLlib's does; an episode's first chunk needs none
(zeros). So the learner stacks exactly what the module saw, at chunk starts too.

A multi-agent run stacks each agent's frames inside its sub-envs (`ObservationPiecesEnv`): the
module gets the stacked observations as before, and when the learner stacks them (the last
per-agent piece a `FrameStackingEnvToModule(multi_agent=True)`, no episode pieces after it,
a `FrameStackingLearner(multi_agent=True)` of the same count) the episodes record each
agent's newest frame (`newest_frames`), under its frame space (`newest_frame_space`). A chunk
that continues an episode takes each agent's frames before its first observation from the
chunk before it (`with_agent_frame_lookback`), which holds them already (from its own start,
or its lookback): by induction every chunk looks back as far as the stacking needs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.connectors.env_to_module import FrameStackingEnvToModule
from trainer.connectors.learner import FrameStackingLearner, pieces_made_without_spaces
from trainer.env.lookback_buffer import InfiniteLookbackBuffer


def learner_stacked_frames(
    config: Any, pipeline: ConnectorPipelineV2 | None
) -> FrameStackingEnvToModule | None:
    """The pipeline's last piece when the learner stacks its frames: a single-agent
    `FrameStackingEnvToModule`, with an algorithm that runs the config's learner pieces and a
    `learner_connector` that makes a `FrameStackingLearner` of the same `num_frames`. None
    otherwise: the episodes then hold the stacked frames (the learner's piece finds them)."""
    if pipeline is None or not pipeline.connectors:
        return None
    return _stacked_by_learner(config, pipeline.connectors[-1], multi_agent=False)


def multi_agent_learner_stacked_frames(
    config: Any, observation_pieces: list, episode_pieces: list
) -> FrameStackingEnvToModule | None:
    """`learner_stacked_frames` for a multi-agent run's env-to-module pieces (see
    `trainer.runners.multi_agent_observations`): the last per-agent observation piece, a
    `FrameStackingEnvToModule(multi_agent=True)`, when no episode piece runs after it (those
    read the episodes' observations) and the learner's `FrameStackingLearner(multi_agent=True)`
    stacks as many frames."""
    if episode_pieces or not observation_pieces:
        return None
    return _stacked_by_learner(config, observation_pieces[-1], multi_agent=True)


def _stacked_by_learner(
    config: Any, last: Any, *, multi_agent: bool
) -> FrameStackingEnvToModule | None:
    if not isinstance(last, FrameStackingEnvToModule) or last.multi_agent != multi_agent:
        return None
    if not getattr(getattr(config, "algo_class", None), "RUNS_LEARNER_CONNECTOR", False):
        return None
    factory = getattr(config, "learner_connector", None)
    if factory is None:
        return None
    # (A factory that needs its spaces makes other pieces: the runner stacks the frames.)
    for piece in pieces_made_without_spaces(factory) or ():
        if (
            isinstance(piece, FrameStackingLearner)
            and piece.multi_agent == multi_agent
            and piece.num_frames == last.num_frames
        ):
            return last
    return None


def recording_pipeline(pipeline: ConnectorPipelineV2) -> ConnectorPipelineV2 | None:
    """The pieces before the last one (the frame stacking), whose output the episodes record;
    None when there are none (the episodes record the env's frames)."""
    pieces = pipeline.connectors[:-1]
    if not pieces:
        return None
    recording = ConnectorPipelineV2(connectors=list(pieces))
    recording.set_input_spaces(pipeline.input_observation_space, pipeline.input_action_space)
    return recording


class ModuleFrames:
    """Per sub-env, the module's stacked input (see the module docstring)."""

    def __init__(self, num_frames: int, num_envs: int):
        self.num_frames = num_frames
        #: (num_envs, ..., C * num_frames): the module's input at the runner's current
        #: observations; None before the first push.
        self.state: np.ndarray | None = None
        #: The sub-envs whose episode starts at the current observation and whose state does
        #: not hold it yet (a reset outside the sampling loop: `start`).
        self.starting = np.ones(num_envs, dtype=bool)

    def start(self, index: int) -> None:
        """Sub-env `index` started an episode at its current observation (outside the sampling
        loop's rows: the first reset, a restored or re-created sub-env)."""
        self.starting[index] = True

    def push(self, frames: np.ndarray, starting: np.ndarray) -> np.ndarray:
        """The module's input after a new row of `frames` (one per sub-env), the sub-envs in
        `starting` (a bool mask) starting an episode with it; a copy, which the caller keeps."""
        frames = np.asarray(frames)
        width = frames.shape[-1]
        state = self.state
        if state is None or state.shape[1:-1] != frames.shape[1:-1] or state.dtype != frames.dtype:
            shape = (*frames.shape[:-1], width * self.num_frames)
            state = self.state = np.zeros(shape, frames.dtype)
            starting = np.ones(len(frames), dtype=bool)
        state[..., :-width] = state[..., width:]  # (numpy buffers the overlap)
        state[..., -width:] = frames
        fresh = starting | self.starting
        if fresh.any():
            state[fresh, ..., :-width] = 0
        self.starting[:] = False
        return state.copy()

    def current(self, frames: np.ndarray) -> np.ndarray:
        """The module's input at the current row (already pushed), with the sub-envs that
        started since (`start`) starting from its `frames`."""
        assert self.state is not None, "pushed before"
        if self.starting.any():
            width = np.shape(frames)[-1]
            self.state[self.starting, ..., -width:] = np.asarray(frames)[self.starting]
            self.state[self.starting, ..., :-width] = 0
            self.starting[:] = False
        return self.state.copy()

    def history(self) -> np.ndarray | None:
        """Per sub-env, the frames before its current one, `(num_envs, num_frames - 1, ...,
        C)`, oldest first; None before the first push."""
        state = self.state
        if state is None:
            return None
        width = state.shape[-1] // self.num_frames
        earlier = state[..., :-width].reshape(*state.shape[:-1], self.num_frames - 1, width)
        return np.moveaxis(earlier, -2, 1).copy()

    def get_state(self) -> dict:
        return {
            "state": None if self.state is None else self.state.copy(),
            "starting": self.starting.copy(),
        }

    def set_state(self, state: dict) -> None:
        saved = state.get("state")
        self.state = None if saved is None else np.array(saved)
        self.starting = np.array(state["starting"], dtype=bool)


def with_frame_lookback(episode: Any, frames: np.ndarray) -> None:
    """Gives `episode` (a chunk continuing an episode) the `frames` before its first
    observation as its observations' lookback buffer."""
    if not len(frames):
        return
    observations = np.asarray(episode.observations.get())
    data = np.concatenate([np.asarray(frames, observations.dtype), observations])
    episode.observations = InfiniteLookbackBuffer(data, len(frames), episode.observations.space)


def newest_frames(observations: dict, num_frames: int) -> dict:
    """Each agent's newest frame of its stacked observation in `observations` (the last
    `1 / num_frames` of its last axis), a copy: what a multi-agent episode records when the
    learner stacks the frames."""
    newest = {}
    for agent_id, observation in observations.items():
        observation = np.asarray(observation)
        width = observation.shape[-1] // num_frames
        newest[agent_id] = observation[..., -width:].copy()
    return newest


def newest_frame_space(space: gym.Space, num_frames: int) -> gym.Space:
    """The space of one frame of a `FrameStackingEnvToModule`-stacked Box `space` (its newest
    frame's bounds)."""
    assert isinstance(space, gym.spaces.Box), "the frame-stacking piece stacks Box spaces"
    width = space.shape[-1] // num_frames
    return gym.spaces.Box(space.low[..., -width:], space.high[..., -width:], dtype=space.dtype)


def with_agent_frame_lookback(successor: Any, chunk: Any, num_frames: int) -> None:
    """Gives each agent of `successor` (`chunk.cut()`, episodes of newest frames) the frames
    before its first observation as lookback, `num_frames - 1` of them where the chunk reaches
    back so far (it holds the agent's frames from the episode's start or from its own
    lookback). A MultiAgentEpisode reads every column of an agent at the same lookback, so
    each column (the model outputs too) looks back as many more steps, taken from the chunk,
    whose columns share their lookback as well."""
    for agent_id, episode in successor.agent_episodes.items():
        before = chunk.agent_episodes.get(agent_id)
        lookback = episode.observations.lookback
        if before is None or lookback >= num_frames - 1:
            continue
        # The chunk's row (in every column) of the successor's first lookback step.
        front = episode.t_started - before.t_started - lookback + before.observations.lookback
        extra = min(num_frames - 1 - lookback, front)
        names = ("observations", "infos", "actions", "rewards")
        columns = [getattr(before, name) for name in names]
        outputs = before.extra_model_outputs
        if extra <= 0 or any(len(column.data) < front for column in (*columns, *outputs.values())):
            continue  # (a chunk whose columns do not reach the successor's start)
        for name, column in zip(names, columns, strict=True):
            setattr(episode, name, _looking_back(column, getattr(episode, name), front, extra))
        for key, earlier in outputs.items():
            after = episode.extra_model_outputs.get(key)
            if after is None:
                after = InfiniteLookbackBuffer([], lookback, earlier.space)
            episode.extra_model_outputs[key] = _looking_back(earlier, after, front, extra)


def _looking_back(
    earlier: InfiniteLookbackBuffer, after: InfiniteLookbackBuffer, front: int, extra: int
) -> InfiniteLookbackBuffer:
    """`after` with the `extra` rows of `earlier` before row `front` as more lookback."""
    rows = earlier.data[front - extra : front]
    rows = rows if isinstance(rows, list) else list(rows)
    data = after.data if isinstance(after.data, list) else list(after.data)
    return InfiniteLookbackBuffer(rows + data, after.lookback + extra, after.space)
