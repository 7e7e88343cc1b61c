"""Replay buffers for DQN: `EpisodeReplayBuffer` (uniform) and `PrioritizedEpisodeReplayBuffer`.

Both take the episodes (or episode chunks) the EnvRunners return and store their env steps in
circular numpy arrays, one row per step: observation, action, reward, next observation, whether
the episode ended there, and a link to the row of the episode's next step. Chunks of the same
episode that arrive in different `add()` calls are linked by the episode id, so n-step returns
run across chunk boundaries. `sample()` returns a ready train batch of n-step transitions.

`get_state()` is plain data (dicts, lists, strings, numbers and numpy arrays) that
`ormsgpack.packb(state, option=ormsgpack.OPT_SERIALIZE_NUMPY)` accepts; `set_state()` takes that
state back, also after an `ormsgpack.unpackb` round trip has turned the arrays into lists.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.env.episode import SingleAgentEpisode
from trainer.util.checks import int_at_least, number_at_least
from trainer.util.rng import generator_state, set_generator_state

_NO_LINK = -1


class EpisodeReplayBuffer:
    """Stores up to `capacity` env steps (the oldest go first) and samples them uniformly."""

    type_name = "EpisodeReplayBuffer"

    def __init__(self, capacity: int = 50_000, *, seed: int | None = None):
        problem = int_at_least(1)(capacity)
        if problem is not None:
            raise ValueError(f"{self.type_name}(capacity={capacity!r}): must be {problem}")
        self.capacity = capacity
        self._rng = np.random.default_rng(seed)
        self._num_added = 0  # steps ever added; a step's "gid" is its position in that count
        self._num_sampled = 0
        self._arrays: dict[str, np.ndarray] | None = None  # allocated at the first add()
        # Episodes whose latest chunk did not end them: id -> gid of their last stored step.
        self._open_episodes: dict[str, int] = {}

    # -- size --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return min(self._num_added, self.capacity)

    def get_num_timesteps(self) -> int:
        return len(self)

    # -- adding ------------------------------------------------------------------------------
    def _allocate(self, observation: np.ndarray, action: np.ndarray) -> None:
        cap = self.capacity
        self._arrays = {
            "observations": np.zeros((cap, *observation.shape[1:]), observation.dtype),
            "next_observations": np.zeros((cap, *observation.shape[1:]), observation.dtype),
            "actions": np.zeros((cap, *action.shape[1:]), action.dtype),
            "rewards": np.zeros(cap, np.float32),
            "terminateds": np.zeros(cap, bool),
            "truncateds": np.zeros(cap, bool),
            "next_gids": np.full(cap, _NO_LINK, np.int64),
            "gids": np.full(cap, _NO_LINK, np.int64),
        }

    def add(self, episodes: SingleAgentEpisode | list[SingleAgentEpisode]) -> None:
        """Stores every step of the given episodes or chunks."""
        if isinstance(episodes, SingleAgentEpisode):
            episodes = [episodes]
        for episode in episodes:
            length = len(episode)
            if length == 0:
                continue
            observations = np.asarray(episode.get_observations())
            actions = np.asarray(episode.get_actions())
            if self._arrays is None:
                self._allocate(observations, actions)
            self._add_steps(episode, observations, actions,
                            np.asarray(episode.get_rewards(), dtype=np.float32))
        if len(self._open_episodes) > 4 * self.capacity:
            oldest = self._num_added - self.capacity
            self._open_episodes = {k: g for k, g in self._open_episodes.items() if g >= oldest}

    def _add_steps(self, episode, observations, actions, rewards) -> None:
        a = self._arrays
        length = len(rewards)
        gids = self._num_added + np.arange(length)
        slots = gids % self.capacity
        a["observations"][slots] = observations[:-1]
        a["next_observations"][slots] = observations[1:]
        a["actions"][slots] = actions
        a["rewards"][slots] = rewards
        a["terminateds"][slots] = False
        a["truncateds"][slots] = False
        a["terminateds"][slots[-1]] = episode.is_terminated
        a["truncateds"][slots[-1]] = episode.is_truncated
        a["next_gids"][slots] = gids + 1
        a["next_gids"][slots[-1]] = _NO_LINK
        a["gids"][slots] = gids
        # Link the episode's previous chunk (if its last step is still stored) to this one.
        previous = self._open_episodes.pop(episode.id_, None)
        if previous is not None and a["gids"][previous % self.capacity] == previous:
            a["next_gids"][previous % self.capacity] = gids[0]
        if not episode.is_done:
            self._open_episodes[episode.id_] = int(gids[-1])
        self._num_added += length
        self._on_added(slots)

    def _on_added(self, slots: np.ndarray) -> None:
        """Hook for the prioritized buffer."""

    # -- sampling ----------------------------------------------------------------------------
    def _sample_slots(self, num_items: int, beta: float | None) -> tuple[np.ndarray, np.ndarray]:
        slots = self._rng.integers(len(self), size=num_items)
        return slots, np.ones(num_items, np.float32)

    def sample(self, num_items: int = 32, *, n_step: int | tuple[int, int] = 1,
               gamma: float = 0.99, beta: float | None = None) -> dict[str, np.ndarray]:
        """A train batch of `num_items` n-step transitions:

        `obs`, `actions`, `rewards` (the discounted sum of up to n rewards), `next_obs` (the
        observation n steps later, or where the episode ended or the stored data stops),
        `terminateds` (whether the episode terminated within those steps: no bootstrap),
        `discounts` (gamma ** steps taken: multiplies the bootstrap value), `weights`
        (importance weights; ones for uniform sampling) and `indices` (for
        `update_priorities`). `n_step` may be an int or a `(low, high)` range drawn per item.
        """
        if len(self) == 0:
            raise ValueError(f"{self.type_name}.sample(): the buffer is empty")
        slots, weights = self._sample_slots(num_items, beta)
        a = self._arrays
        if isinstance(n_step, (tuple, list)):
            n_items = self._rng.integers(n_step[0], n_step[1] + 1, size=num_items)
            n_max = int(n_step[1])
        else:
            n_items, n_max = None, int(n_step)
        returns = a["rewards"][slots].astype(np.float64)
        last = slots.copy()
        steps = np.ones(num_items, np.int64)
        ended = a["terminateds"][slots] | a["truncateds"][slots]
        # Follow each transition's episode forward, one step per round, up to n steps.
        for k in range(1, n_max):
            following = a["next_gids"][last]
            following_slot = following % self.capacity
            go_on = (~ended & (following != _NO_LINK)
                     & (a["gids"][following_slot] == following))
            if n_items is not None:
                go_on &= k < n_items
            if not go_on.any():
                break
            returns += np.where(go_on, gamma ** k * a["rewards"][following_slot], 0.0)
            last = np.where(go_on, following_slot, last)
            steps += go_on
            ended |= go_on & (a["terminateds"][last] | a["truncateds"][last])
        self._num_sampled += num_items
        return {
            "obs": a["observations"][slots],
            "actions": a["actions"][slots],
            "rewards": returns.astype(np.float32),
            "next_obs": a["next_observations"][last],
            "terminateds": a["terminateds"][last],
            "discounts": (gamma ** steps).astype(np.float32),
            "n_steps": steps,
            "weights": weights,
            "indices": slots,
        }

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Uniform replay has no priorities; kept so a learner can call it on either buffer."""

    def get_metrics(self) -> dict[str, int]:
        return {"num_entries": len(self), "capacity": self.capacity,
                "num_env_steps_added_lifetime": self._num_added,
                "num_env_steps_sampled_lifetime": self._num_sampled}

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """A snapshot: the stored steps are copied, as later adds overwrite them in place."""
        size = len(self)
        state: dict[str, Any] = {
            "type": self.type_name, "capacity": self.capacity, "num_added": self._num_added,
            "num_sampled": self._num_sampled, "open_episodes": dict(self._open_episodes),
            "rng": generator_state(self._rng), "arrays": None,
        }
        if self._arrays is not None:
            state["arrays"] = {
                name: {"data": array[:size].copy(), "dtype": array.dtype.str,
                       "row_shape": list(array.shape[1:])}
                for name, array in self._arrays.items()
            }
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("type") != self.type_name or state.get("capacity") != self.capacity:
            raise ValueError(
                f"{self.type_name}(capacity={self.capacity}).set_state(): the state is of a "
                f"{state.get('type')}(capacity={state.get('capacity')})")
        self._num_added = int(state["num_added"])
        self._num_sampled = int(state["num_sampled"])
        self._open_episodes = {str(k): int(v) for k, v in state["open_episodes"].items()}
        set_generator_state(self._rng, state["rng"])
        self._arrays = None
        if state["arrays"] is not None:
            size = len(self)
            self._arrays = {}
            for name, entry in state["arrays"].items():
                row_shape = tuple(entry["row_shape"])
                array = np.zeros((self.capacity, *row_shape), np.dtype(entry["dtype"]))
                array[:size] = np.asarray(entry["data"], dtype=array.dtype).reshape(
                    (size, *row_shape))
                if name in ("next_gids", "gids"):
                    array[size:] = _NO_LINK
                self._arrays[name] = array


class PrioritizedEpisodeReplayBuffer(EpisodeReplayBuffer):
    """Proportional prioritized replay (Schaul et al. 2016): a step is drawn with probability
    p_i^alpha / sum_j p_j^alpha, where p_i is its latest |TD error| (new steps get the highest
    priority seen so far), and weighted by (N * P(i))^-beta, normalized by the largest weight.

    The priorities sit in blocks of `_BLOCK` slots with a running sum and minimum per block:
    sampling finds the block by a search over the block sums, then the slot by a search inside
    the block, both vectorised over the batch (a handful of numpy calls rather than one per level
    of a sum tree)."""

    type_name = "PrioritizedEpisodeReplayBuffer"
    _BLOCK = 128

    def __init__(self, capacity: int = 50_000, *, alpha: float = 0.6, beta: float = 0.4,
                 seed: int | None = None):
        super().__init__(capacity, seed=seed)
        for name, value in (("alpha", alpha), ("beta", beta)):
            problem = number_at_least(0)(value)
            if problem is not None:
                raise ValueError(f"{self.type_name}({name}={value!r}): must be {problem}")
        self.alpha = float(alpha)
        self.beta = float(beta)
        num_blocks = -(-capacity // self._BLOCK)
        # p^alpha per slot (0 for empty slots), and the same with +inf for empty slots (minimum).
        self._priorities = np.zeros((num_blocks, self._BLOCK))
        self._priorities_for_min = np.full((num_blocks, self._BLOCK), np.inf)
        self._block_sums = np.zeros(num_blocks)
        self._block_mins = np.full(num_blocks, np.inf)
        self._max_priority = 1.0

    def _set_priorities(self, slots: np.ndarray, values: np.ndarray) -> None:
        blocks, offsets = np.divmod(slots, self._BLOCK)
        self._priorities[blocks, offsets] = values
        self._priorities_for_min[blocks, offsets] = values
        self._block_sums[blocks] = self._priorities[blocks].sum(axis=1)
        self._block_mins[blocks] = self._priorities_for_min[blocks].min(axis=1)

    def _on_added(self, slots: np.ndarray) -> None:
        self._set_priorities(slots, np.full(len(slots), self._max_priority ** self.alpha))

    def _sample_slots(self, num_items: int, beta: float | None) -> tuple[np.ndarray, np.ndarray]:
        beta = self.beta if beta is None else beta
        block_ends = np.cumsum(self._block_sums)
        total = block_ends[-1]
        mass = self._rng.random(num_items) * total
        # The block holding each target mass, then the slot inside that block.
        blocks = np.minimum(np.searchsorted(block_ends, mass, side="right"),
                            len(block_ends) - 1)
        residual = mass - (block_ends[blocks] - self._block_sums[blocks])
        within = np.cumsum(self._priorities[blocks], axis=1)
        offsets = np.minimum((within <= residual[:, None]).sum(axis=1), self._BLOCK - 1)
        slots = np.minimum(blocks * self._BLOCK + offsets, len(self) - 1)
        probabilities = self._priorities.ravel()[slots] / total
        min_probability = self._block_mins.min() / total
        weights = (probabilities / min_probability) ** -beta
        return slots, weights.astype(np.float32)

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """New priorities |td_error| + 1e-6 for the sampled steps at `indices`."""
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64)) + 1e-6
        self._max_priority = max(self._max_priority, float(priorities.max()))
        self._set_priorities(np.asarray(indices), priorities ** self.alpha)

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        state.update(alpha=self.alpha, beta=self.beta, max_priority=self._max_priority,
                     priorities=self._priorities.ravel()[:len(self)].copy())
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.alpha, self.beta = float(state["alpha"]), float(state["beta"])
        self._max_priority = float(state["max_priority"])
        self._priorities[:] = 0.0
        self._priorities_for_min[:] = np.inf
        self._block_sums[:] = 0.0
        self._block_mins[:] = np.inf
        size = len(self)
        if size:
            self._set_priorities(np.arange(size),
                                 np.asarray(state["priorities"], dtype=np.float64))


BUFFER_TYPES = {cls.type_name: cls for cls in (EpisodeReplayBuffer,
                                                PrioritizedEpisodeReplayBuffer)}


def make_replay_buffer(replay_buffer_config: dict, seed: int | None = None) -> EpisodeReplayBuffer:
    config = dict(replay_buffer_config)
    cls = BUFFER_TYPES[config.pop("type")]
    return cls(seed=seed, **config)
