"""`PrioritizedEpisodeReplayBuffer`: RLlib 2.60's prioritized replay of whole episodes
(`ray.rllib.utils.replay_buffers.prioritized_episode_buffer`), proportional prioritization as
in Schaul et al. (2016).

Episodes are stored and evicted as in `EpisodeReplayBuffer`, with RLlib's eviction order for
this class: all incoming steps are counted first, then the oldest episodes go until the steps
fit `capacity` or one episode would be left (incoming chunks of an evicted episode are dropped
with it). Every stored step owns a node of two segment trees (`_sum_segment`,
`_min_segment`) holding its priority ** alpha; new steps get `weight` (by default the largest
priority seen so far).

`sample()` returns `batch_size_B` one-step episodes (o_t, a_t, sum_k gamma^k r_(t+k), o_(t+n)),
drawing o_t with probability p_t^alpha / sum p^alpha; a draw whose n steps would run past its
episode's stored steps is drawn again. Each episode's `extra_model_outputs` holds `weights`
(the importance weight (N P(t))^-beta, divided by the largest possible one) and `n_step`.
`update_priorities(priorities)` then sets the priorities of the steps last sampled (RLlib's
`_last_sampled_indices`, the tree nodes of the last sample).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.env.episode import SingleAgentEpisode
from trainer.replay_buffers.episode_replay_buffer import (
    Draws,
    EpisodeReplayBuffer,
    _as_episode_list,
    _check_n_step,
)
from trainer.replay_buffers.segment_tree import MinSegmentTree, SumSegmentTree


class FreeNodes:
    """The segment-tree nodes no step holds, handed out lowest first and taken back
    last-in-first-out (RLlib's deque: `popleft()` to take, `appendleft()` to return)."""

    def __init__(self, size: int):
        self._nodes = np.arange(size, dtype=np.int64)
        self._top = 0  # nodes[top:] are free, the next one to hand out first

    def __len__(self) -> int:
        return len(self._nodes) - self._top

    def take(self, count: int) -> np.ndarray:
        if count > len(self):
            raise ValueError(f"no free segment-tree nodes left for {count} steps")
        taken = self._nodes[self._top : self._top + count].copy()
        self._top += count
        return taken

    def give_back(self, nodes: np.ndarray) -> None:
        """Returns nodes in order: the last one returned is the first handed out again."""
        count = len(nodes)
        self._nodes[self._top - count : self._top] = np.asarray(nodes)[::-1]
        self._top -= count

    def get_state(self) -> np.ndarray:
        return self._nodes[self._top :].copy()

    def set_state(self, free: Any) -> None:
        free = np.asarray(free, np.int64).reshape(-1)
        if len(free) > len(self._nodes):
            raise ValueError(f"{len(free)} free nodes for trees of {len(self._nodes)} nodes")
        self._top = len(self._nodes) - len(free)
        self._nodes[self._top :] = free


class PrioritizedEpisodeReplayBuffer(EpisodeReplayBuffer):
    """Stores whole episodes and samples their steps in proportion to priority ** alpha; see
    the module docstring."""

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
        super().__init__(
            capacity,
            batch_size_B=batch_size_B,
            batch_length_T=batch_length_T,
            metrics_num_episodes_for_smoothing=metrics_num_episodes_for_smoothing,
            seed=seed,
        )
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 0:
            raise ValueError(
                f"PrioritizedEpisodeReplayBuffer(alpha={alpha!r}): must be a "
                "number >= 0 (0: uniform, 1: fully prioritized)"
            )
        self._alpha = float(alpha)
        # Trees twice the capacity's power of two: while an oversized episode overflows the
        # capacity, its steps still need nodes.
        tree_capacity = int(2 ** np.ceil(np.log2(self.capacity)))
        self._max_priority = 1.0
        self._sum_segment = SumSegmentTree(2 * tree_capacity)
        self._min_segment = MinSegmentTree(2 * tree_capacity)
        self._free_nodes = FreeNodes(2 * tree_capacity)
        self._max_idx = 0
        # Tree node -> row of its step in the step table (-1: a free node).
        self._node_rows = np.full(2 * tree_capacity, -1, np.int64)
        self._last_sampled_indices: list[int] = []
        # Whether draws need n steps after them (RLlib's sample()) or may stop at the end.
        self._full_n_only = True

    # -- adding ------------------------------------------------------------------------------
    def add(
        self, episodes: SingleAgentEpisode | list[SingleAgentEpisode], weight: float | None = None
    ) -> None:
        """Stores copies of `episodes` with priority `weight` (default: the largest priority
        so far), after evicting the oldest episodes their steps would overflow `capacity`
        (never down to fewer than one episode, counting the incoming ones)."""
        if weight is None:
            weight = self._max_priority
        episodes = _as_episode_list(episodes)
        incoming_ids = [episode.id_ for episode in episodes]
        for episode in episodes:
            self._num_timesteps += len(episode)
            self._num_timesteps_added += len(episode)
        evicted_ids: set[str] = set()
        steps_evicted = 0
        # Episodes left once the incoming ones are in (RLlib stops evicting at one).
        remaining = len(self.episode_id_to_index) + len(
            {id_ for id_ in incoming_ids if id_ not in self.episode_id_to_index}
        )
        while self._num_timesteps > self.capacity and remaining != 1 and self.episodes:
            evicted = self._evict_oldest()
            evicted_ids.add(evicted.id_)
            remaining -= 1
            steps_evicted += len(evicted)
            if evicted.id_ in incoming_ids:
                # Its incoming chunk goes with it (and never counted as added).
                dropped = len(episodes[incoming_ids.index(evicted.id_)])
                self._num_timesteps -= dropped
                self._num_timesteps_added -= dropped
        if evicted_ids:
            self._drop_evicted_rows(self._num_episodes_evicted - len(evicted_ids))
        episodes_added = steps_added = 0
        for episode in episodes:
            if episode.id_ in evicted_ids:
                continue
            start = len(self._indices)
            nodes = self._assign_nodes(start, len(episode), weight)
            if self._store(episode, nodes):
                episodes_added += 1
            steps_added += len(episode)
        self._metrics.log_add(
            self,
            episodes_added=episodes_added,
            steps_added=steps_added,
            episodes_evicted=len(evicted_ids),
            steps_evicted=steps_evicted,
        )

    @property
    def _tree_idx_to_sample_idx(self) -> np.ndarray:
        """RLlib's map: tree node -> position of its step among the stored steps (in the
        order they were added), -1 for a free node."""
        rank = np.cumsum(self._live_rows()) - 1
        mapping = np.full(len(self._node_rows), -1, np.int64)
        held = self._node_rows >= 0
        mapping[held] = rank[self._node_rows[held]]
        return mapping

    def _on_rows_evicted(self, rows: np.ndarray) -> None:
        """Frees the evicted steps' nodes."""
        freed = self._indices.nodes[rows]
        if len(freed):
            self._free_nodes.give_back(freed)
            # RLlib's running maximum: lowered by one when the freed node is the maximum.
            max_idx = self._max_idx
            for node in freed.tolist():
                if node == max_idx:
                    max_idx -= 1
            self._max_idx = max_idx
            self._sum_segment[freed] = 0.0
            self._min_segment[freed] = float("inf")
            self._node_rows[freed] = -1

    def _on_compacted(self) -> None:
        self._node_rows[self._indices.nodes] = np.arange(len(self._indices))

    def _assign_nodes(self, start: int, count: int, weight: float) -> np.ndarray:
        """Nodes for `count` new steps at index positions `start`..., with priority
        `weight`."""
        nodes = self._free_nodes.take(count)
        if count:
            self._max_idx = max(self._max_idx, int(nodes.max()))
            value = weight**self._alpha
            self._sum_segment[nodes] = value
            self._min_segment[nodes] = value
            self._node_rows[nodes] = start + np.arange(count)
        return nodes

    # -- sampling ----------------------------------------------------------------------------
    def sample(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        batch_length_T: int | None = None,
        n_step: int | tuple | None = None,
        beta: float = 0.0,
        gamma: float = 0.99,
        include_infos: bool = False,
        include_extra_model_outputs: bool = False,
        to_numpy: bool = False,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode]:
        """`batch_size_B` one-step episodes of prioritized n-step transitions (always
        episodes, whatever `sample_episodes` says; `batch_length_T` is not used, as in
        RLlib)."""
        draws = self._prioritized_draws(num_items, batch_size_B, n_step, gamma, beta)
        episodes = [
            self._transition_episode(
                draws,
                row,
                include_infos=include_infos,
                include_extra_model_outputs=include_extra_model_outputs,
                keep_id=False,
                to_numpy=to_numpy,
            )
            for row in range(len(draws))
        ]
        return self._finish_sample(draws, episodes)

    def sample_transitions(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        n_step: int | tuple = 1,
        gamma: float = 0.99,
        beta: float = 0.0,
    ) -> dict[str, np.ndarray]:
        """As `EpisodeReplayBuffer.sample_transitions`, drawn by priority. Unlike `sample()`,
        a step with fewer than n steps stored after it is not drawn again: its transition
        stops at the episode's last stored step (`n_steps_taken` < n), as in the uniform
        buffer. (`sample()` redraws it, as RLlib does; then an episode's last n - 1 steps are
        never a transition's start, and DQN learned CartPole markedly slower that way.)"""
        batch_size = self._batch_size(num_items, batch_size_B)
        _check_beta(beta)
        self._full_n_only = False
        try:
            return super().sample_transitions(batch_size, n_step=n_step, gamma=gamma, beta=beta)
        finally:
            self._full_n_only = True

    def _prioritized_draws(
        self,
        num_items: int | None,
        batch_size_B: int | None,
        n_step: int | tuple | None,
        gamma: float,
        beta: float,
    ) -> Draws:
        _check_beta(beta)
        batch_size = self._batch_size(num_items, batch_size_B)
        self._check_not_empty()
        return self._draw(batch_size, _check_n_step(n_step), gamma, float(beta))

    def _draw(self, batch_size: int, n_step: int | tuple, gamma: float, beta: float) -> Draws:
        """Proportional draws of steps (in batches: the rows still missing are drawn again
        together) until `batch_size` of them have their n steps stored after them."""
        total = self._sum_segment.sum()
        num_steps = self.get_num_timesteps()
        p_min = self._min_segment.min() / total
        max_weight = (p_min * num_steps) ** (-beta)
        parts: list[Draws] = []
        found = resamples = rounds = 0
        while found < batch_size:
            rounds += 1
            if rounds > 1000:
                raise ValueError(
                    f"PrioritizedEpisodeReplayBuffer.sample(n_step={n_step!r}): hardly any "
                    f"stored step has that many steps after it in its episode (stored "
                    f"episodes: {self.get_num_episodes()}, steps: {num_steps})"
                )
            missing = batch_size - found
            # With n > 1 some draws lack n steps after them: a few more are drawn at once
            # (the first `missing` that qualify are kept), which saves a second round.
            extra = 0 if n_step == 1 or not self._full_n_only else missing // 4 + 2
            nodes = self._sum_segment.find_prefixsum_idx(self.rng.random(missing + extra) * total)
            positions = self._node_rows[nodes]
            # A free node (rounding at a block's edge) holds no step: drawn again.
            positions = positions[positions >= 0]
            draws = self._transitions(positions, self._draw_n_steps(n_step, len(positions)), gamma)
            full = (
                draws["steps"] == draws["n_step"]
                if self._full_n_only
                else np.ones(len(draws), bool)
            )
            # Keep the first `missing` rows that qualify; count the ones passed over on the way.
            kept = full & (np.cumsum(full) <= missing)
            considered = len(full) if kept.sum() < missing else int(np.flatnonzero(kept)[-1]) + 1
            resamples += int((~full[:considered]).sum())
            if not kept.all():
                draws = draws.select(kept)
            priorities = self._sum_segment[draws["nodes"]]
            draws.columns["weights"] = (
                (np.asarray(priorities) / total * num_steps) ** (-beta)
            ) / max_weight
            parts.append(draws)
            found += len(draws)
        draws = parts[0] if len(parts) == 1 else Draws.concatenate(parts)
        draws.resamples = resamples
        return draws

    def update_priorities(self, priorities: Any, module_id: str | None = None) -> None:
        """Sets the priorities (usually |TD error|, floored at 1e-12) of the steps the last
        `sample()` returned, in its order; the next update needs a new sample."""
        priorities = np.asarray(priorities, dtype=np.float64).reshape(-1)
        nodes = np.asarray(self._last_sampled_indices, dtype=np.int64)
        if len(priorities) != len(nodes):
            raise ValueError(
                f"update_priorities(): {len(priorities)} priorities for the "
                f"{len(nodes)} steps of the last sample (one per sampled row, in its order)"
            )
        if not np.all(np.isfinite(priorities)):
            raise ValueError("update_priorities(): priorities must be finite numbers")
        if len(nodes):
            if nodes.min() < 0 or nodes.max() >= self._sum_segment.capacity:
                raise ValueError(
                    "update_priorities(): a last-sampled index is not a node of the segment trees"
                )
            priorities = np.maximum(priorities, 1e-12)
            values = priorities**self._alpha
            self._sum_segment[nodes] = values
            self._min_segment[nodes] = values
            self._max_priority = max(self._max_priority, float(priorities.max()))
        self._last_sampled_indices = []

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The buffer as plain data. The segment trees and the node map are kept as each
        stored step's priority ** alpha (its node is in the step rows) and the free nodes in
        order; `set_state` rebuilds them."""
        state = super().get_state()
        state.update(
            {
                "_priorities": self._sum_segment[self._indices.nodes[self._live_rows()]],
                "_free_nodes": self._free_nodes.get_state(),
                "_max_priority": self._max_priority,
                "_max_idx": self._max_idx,
                "_last_sampled_indices": list(self._last_sampled_indices),
                "_alpha": self._alpha,
            }
        )
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        tree_size = self._sum_segment.capacity
        # Checked before anything changes: a bad state leaves the buffer as it was.
        self._check_state_kind(state)
        nodes = np.asarray(state["_indices"]["nodes"], np.int64).reshape(-1)
        priorities = np.asarray(state["_priorities"], np.float64).reshape(-1)
        free = np.asarray(state["_free_nodes"], np.int64).reshape(-1)
        if len(priorities) != len(nodes) or len(nodes) + len(free) != tree_size:
            raise ValueError(
                "PrioritizedEpisodeReplayBuffer.set_state(): the priorities or "
                "free nodes do not match the stored steps"
            )
        held_and_free = np.concatenate([nodes, free])
        if len(held_and_free) and (
            held_and_free.min() < 0
            or held_and_free.max() >= tree_size
            or not _each_once(held_and_free, tree_size)
        ):
            raise ValueError(
                "PrioritizedEpisodeReplayBuffer.set_state(): the steps' nodes and "
                "the free nodes do not make up the trees' nodes once each"
            )
        if np.any(~np.isfinite(priorities)) or np.any(priorities < 0):
            raise ValueError(
                "PrioritizedEpisodeReplayBuffer.set_state(): priorities must be finite numbers >= 0"
            )
        super().set_state(state)
        leaves = np.zeros(tree_size)
        leaves[nodes] = priorities
        self._sum_segment.set_state(leaves)
        leaves[free] = float("inf")
        self._min_segment.set_state(leaves)
        self._free_nodes.set_state(free)
        self._node_rows = np.full(tree_size, -1, np.int64)
        self._node_rows[nodes] = np.arange(len(nodes))
        self._max_priority = float(state["_max_priority"])
        self._max_idx = int(state["_max_idx"])
        self._last_sampled_indices = [int(i) for i in state["_last_sampled_indices"]]
        self._alpha = float(state.get("_alpha", self._alpha))


def _check_beta(beta: float) -> None:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
        raise ValueError(
            f"PrioritizedEpisodeReplayBuffer.sample(beta={beta!r}): must be a "
            "number >= 0 (0: no importance correction, 1: full)"
        )


def _each_once(nodes: np.ndarray, size: int) -> bool:
    """Whether `nodes` (`size` of them, each in [0, size)) name every node once: a mask, not
    np.unique's sort (seconds for a buffer of a million steps)."""
    seen = np.zeros(size, dtype=bool)
    seen[nodes] = True
    return bool(seen.all())
