"""Replay buffers of whole episodes (RLlib's `ray.rllib.utils.replay_buffers`):
`EpisodeReplayBuffer` (uniform) and `PrioritizedEpisodeReplayBuffer` (proportional priorities),
their multi-agent counterparts `MultiAgentEpisodeReplayBuffer` and
`MultiAgentPrioritizedEpisodeReplayBuffer` (a buffer of each module's steps),
with the segment trees the latter samples through (RLlib's `ray.rllib.execution.segment_tree`)."""

from trainer.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer
from trainer.replay_buffers.multi_agent_episode_buffer import MultiAgentEpisodeReplayBuffer
from trainer.replay_buffers.multi_agent_prioritized_episode_buffer import (
    MultiAgentPrioritizedEpisodeReplayBuffer,
)
from trainer.replay_buffers.prioritized_episode_buffer import PrioritizedEpisodeReplayBuffer
from trainer.replay_buffers.segment_tree import MinSegmentTree, SegmentTree, SumSegmentTree

__all__ = [
    "EpisodeReplayBuffer",
    "MinSegmentTree",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "SegmentTree",
    "SumSegmentTree",
]
