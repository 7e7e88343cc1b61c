"""`MultiAgentPrioritizedEpisodeReplayBuffer`: RLlib 2.60's prioritized replay of
`MultiAgentEpisode`s (`ray.rllib.utils.replay_buffers.multi_agent_prioritized_episode_buffer`).

As `MultiAgentEpisodeReplayBuffer`, with each module's steps in a
`PrioritizedEpisodeReplayBuffer` of its own: a module's draws follow its own priorities
(** `alpha`), `sample(beta=...)` sets the importance weights, and
`update_priorities(priorities, module_id)` sets the priorities of that module's last drawn
steps. RLlib's per-module structures are readable under its names (`_module_to_sum_segment`,
`_module_to_max_priority`, `_module_to_max_idx`, `_module_to_tree_idx_to_sample_idx`,
`_module_to_last_sampled_indices`).
"""

from __future__ import annotations

from typing import Any

from trainer.replay_buffers.multi_agent_episode_buffer import MultiAgentEpisodeReplayBuffer
from trainer.replay_buffers.prioritized_episode_buffer import PrioritizedEpisodeReplayBuffer


class MultiAgentPrioritizedEpisodeReplayBuffer(MultiAgentEpisodeReplayBuffer):
    """Multi-agent episodes, each module's steps drawn by its own priorities."""

    _MODULE_BUFFER_CLASS = PrioritizedEpisodeReplayBuffer
    module_buffers: dict[Any, PrioritizedEpisodeReplayBuffer]  # type: ignore[assignment]

    def __init__(
        self,
        capacity: int = 10000,
        *,
        batch_size_B: int = 16,
        batch_length_T: int = 1,
        alpha: float = 1.0,
        metrics_num_episodes_for_smoothing: int = 100,
        seed: int | None = None,
        **kwargs: Any,
    ):
        # Checked here, before any module buffer exists to check it.
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
            raise ValueError(
                f"MultiAgentPrioritizedEpisodeReplayBuffer(alpha={alpha!r}): must be a "
                "number >= 0 (0: uniform, 1: fully prioritized)"
            )
        self._alpha = float(alpha)
        super().__init__(
            capacity,
            batch_size_B=batch_size_B,
            batch_length_T=batch_length_T,
            metrics_num_episodes_for_smoothing=metrics_num_episodes_for_smoothing,
            seed=seed,
        )

    def _module_buffer_kwargs(self) -> dict[str, Any]:
        return {**super()._module_buffer_kwargs(), "alpha": self._alpha}

    def _module_sample_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"beta": kwargs.get("beta", 0.0) or 0.0}

    def update_priorities(self, priorities: Any, module_id: Any) -> None:
        """Sets the priorities (usually |TD error|) of the steps of `module_id` the last
        sample drew, in its order."""
        buffer = self.module_buffers.get(module_id)
        if buffer is None:
            raise ValueError(
                f"update_priorities(module_id={module_id!r}): no steps of that module are "
                f"stored (modules: {self.get_module_ids()})"
            )
        buffer.update_priorities(priorities)

    # RLlib's per-module structures, read from the module buffers.
    @property
    def _module_to_sum_segment(self) -> dict[Any, Any]:
        return {m: buffer._sum_segment for m, buffer in self.module_buffers.items()}

    @property
    def _module_to_min_segment(self) -> dict[Any, Any]:
        return {m: buffer._min_segment for m, buffer in self.module_buffers.items()}

    @property
    def _module_to_max_priority(self) -> dict[Any, float]:
        return {m: buffer._max_priority for m, buffer in self.module_buffers.items()}

    @property
    def _module_to_max_idx(self) -> dict[Any, int]:
        return {m: buffer._max_idx for m, buffer in self.module_buffers.items()}

    @property
    def _module_to_tree_idx_to_sample_idx(self) -> dict[Any, Any]:
        return {m: buffer._tree_idx_to_sample_idx for m, buffer in self.module_buffers.items()}

    @property
    def _module_to_last_sampled_indices(self) -> dict[Any, list[int]]:
        return {m: buffer._last_sampled_indices for m, buffer in self.module_buffers.items()}
