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
"""

from __future__ import annotations

from typing import Any

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
    last = pipeline.connectors[-1]
    if not isinstance(last, FrameStackingEnvToModule) or last.multi_agent:
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
            and not piece.multi_agent
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
