"""`SingleAgentEpisode`: one sub-env's trajectory (or a chunk of it) as the EnvRunner records it.

Layout as in RLlib: `observations` and `infos` hold `len(episode) + 1` entries (the reset
observation first); `actions`, `rewards` and each `extra_model_outputs[key]` hold `len(episode)`.
An episode that spans several `sample()` calls is returned in chunks that share `id_`; each chunk
starts (`t_started`) where the previous one stopped.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from checkpoints.codec import is_plain_data
from trainer.old_api import OldEpisodeAPI


class SingleAgentEpisode(OldEpisodeAPI):
    __slots__ = (
        "id_", "observations", "actions", "rewards", "infos", "extra_model_outputs",
        "is_terminated", "is_truncated", "t_started", "custom_data", "_temporary_timestep_data",
        "_start_time", "_last_step_time", "_is_numpy", "env_index", "_old", "_return_before",
        "_env_runner", "connector_data",
    )
    #: Slots that stay in their process (not pickled, not in `get_state`).
    _LOCAL_SLOTS = ("_env_runner",)

    def __init__(self, id_: str | None = None, *, t_started: int = 0, env_index: int = 0):
        # 128 random bits as 32 hex digits, like `uuid.uuid4().hex` at a third of the cost.
        self.id_ = id_ or os.urandom(16).hex()
        self.observations: list | np.ndarray = []
        self.actions: list | np.ndarray = []
        self.rewards: list | np.ndarray = []
        self.infos: list = []
        self.extra_model_outputs: dict[str, list | np.ndarray] = {}
        self.is_terminated = False
        self.is_truncated = False
        self.t_started = t_started
        #: Free-form per-episode data for callbacks (kept across chunks of the same episode).
        self.custom_data: dict = {}
        self._temporary_timestep_data: dict[str, list] = {}
        self._start_time: float | None = None
        self._last_step_time: float | None = None
        self._is_numpy = False
        self.env_index = env_index
        # The old API's user_data / custom_metrics / hist_data (made when first used) and the
        # return of the earlier chunks (for `total_reward`); see `trainer.old_api`.
        self._old: dict[str, dict] | None = None
        self._return_before = 0.0
        # The EnvRunner sampling this episode (the old API's `episode.worker`).
        self._env_runner = None
        #: Per-episode data of env-to-module connector pieces (kept across chunks).
        self.connector_data: dict = {}

    # -- recording ---------------------------------------------------------------------------
    def add_env_reset(self, observation: Any, infos: dict | None = None) -> None:
        """Logs the reset observation; the episode starts here."""
        assert not self.observations, "add_env_reset() on an episode that already started"
        self.observations.append(observation)
        self.infos.append(infos or {})
        self._start_time = self._last_step_time = time.perf_counter()

    def add_env_step(self, observation: Any, action: Any, reward: float, infos: dict | None = None,
                     *, terminated: bool = False, truncated: bool = False,
                     extra_model_outputs: dict | None = None) -> None:
        """Logs one env step: the action taken and what the env returned for it."""
        self.observations.append(observation)
        self.actions.append(action)
        self.rewards.append(reward)
        self.infos.append(infos or {})
        if extra_model_outputs:
            outputs = self.extra_model_outputs
            for key, value in extra_model_outputs.items():
                if key in outputs:
                    outputs[key].append(value)
                else:
                    outputs[key] = [value]
        if terminated or truncated:
            self.is_terminated = terminated
            self.is_truncated = truncated
            # The clock is read once at the end (and at cut()), not on every step.
            self._last_step_time = time.perf_counter()

    def cut(self) -> SingleAgentEpisode:
        """The successor chunk of this ongoing episode: same `id_`, starting at this chunk's last
        observation, carrying `custom_data` and the temporary timestep data over (so callbacks
        see the whole episode's values in `on_episode_end`)."""
        assert not self.is_done, "cut() on a finished episode"
        successor = SingleAgentEpisode(self.id_, t_started=self.t, env_index=self.env_index)
        successor.observations.append(self.observations[-1])
        successor.infos.append(self.infos[-1])
        successor.custom_data = self.custom_data
        successor._temporary_timestep_data = self._temporary_timestep_data
        successor._old = self._old
        successor._return_before = self._return_before + self.get_return()
        successor._env_runner = self._env_runner
        successor.connector_data = self.connector_data
        self._last_step_time = time.perf_counter()
        successor._start_time = self._start_time
        successor._last_step_time = self._last_step_time
        return successor

    # -- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.rewards)

    def len(self) -> int:
        return len(self.rewards)

    @property
    def t(self) -> int:
        """The env timestep this chunk has reached (`t_started + len`)."""
        return self.t_started + len(self.rewards)

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def is_numpy(self) -> bool:
        return self._is_numpy

    def get_return(self) -> float:
        """Sum of this chunk's rewards."""
        if isinstance(self.rewards, list):
            return float(sum(self.rewards))
        return float(np.sum(self.rewards)) if len(self.rewards) else 0.0

    def _old_dicts(self) -> dict[str, dict]:
        if self._old is None:
            self._old = {"user_data": {}, "custom_metrics": {}, "hist_data": {}}
        return self._old

    def get_duration_s(self) -> float:
        """Wall seconds from the reset to the final step (to now while the episode runs)."""
        if self._start_time is None:
            return 0.0
        if self.is_done or self._is_numpy:
            return self._last_step_time - self._start_time
        return time.perf_counter() - self._start_time

    @staticmethod
    def _select(data, indices):
        if indices is None:
            return data
        if isinstance(indices, (list, tuple)):
            if isinstance(data, np.ndarray):
                return data[list(indices)]
            return [data[i] for i in indices]
        return data[indices]

    def get_observations(self, indices=None):
        return self._select(self.observations, indices)

    def set_observations(self, *, new_data, at_indices=None) -> None:
        """Overwrites observations: the one at `at_indices` (an int, -1 for the latest), or all
        of them (`at_indices=None`, `new_data` one per observation). Env-to-module connectors
        write what the module sees this way."""
        if at_indices is None:
            if len(new_data) != len(self.observations):
                raise ValueError(f"set_observations: {len(new_data)} values for "
                                 f"{len(self.observations)} observations")
            self.observations = (np.asarray(new_data) if self._is_numpy else list(new_data))
            return
        self.observations[at_indices] = new_data

    def get_actions(self, indices=None):
        return self._select(self.actions, indices)

    def get_rewards(self, indices=None):
        return self._select(self.rewards, indices)

    def get_infos(self, indices=None):
        return self._select(self.infos, indices)

    def get_extra_model_outputs(self, key: str, indices=None):
        return self._select(self.extra_model_outputs[key], indices)

    # -- temporary per-timestep data (dropped before the episode leaves the EnvRunner) --------
    def add_temporary_timestep_data(self, key: str, data: Any) -> None:
        """Stores a value for the current timestep under `key`, for callbacks to read back later
        in the same episode (`get_temporary_timestep_data`). Not sent to the learner."""
        self._temporary_timestep_data.setdefault(key, []).append(data)

    def get_temporary_timestep_data(self, key: str) -> list:
        """Every value stored under `key` in this episode, in step order."""
        try:
            return self._temporary_timestep_data[key]
        except KeyError:
            raise KeyError(
                f"episode {self.id_}: no temporary timestep data under {key!r}; keys: "
                f"{sorted(self._temporary_timestep_data)}"
            ) from None

    def drop_temporary_timestep_data(self) -> None:
        self._temporary_timestep_data = {}

    # -- conversion --------------------------------------------------------------------------
    def to_numpy(self) -> SingleAgentEpisode:
        """Turns the recorded lists into numpy arrays (in place) and returns the episode."""
        if not self._is_numpy:
            self.observations = np.asarray(self.observations)
            self.actions = np.asarray(self.actions)
            self.rewards = np.asarray(self.rewards, dtype=np.float32)
            self.extra_model_outputs = {
                k: np.asarray(v) for k, v in self.extra_model_outputs.items()
            }
            self._is_numpy = True
        return self

    # -- state (checkpoints) -----------------------------------------------------------------
    def get_state(self) -> dict:
        """The episode as plain data for msgpack: columns as arrays where they stack. Infos,
        `custom_data` and temporary timestep data that are not plain data are left out."""
        return {
            "id_": self.id_, "t_started": self.t_started, "env_index": self.env_index,
            "observations": _column(self.observations), "actions": _column(self.actions),
            "rewards": _column(self.rewards),
            "infos": [dict(info) if is_plain_data(info) else {} for info in self.infos],
            "extra_model_outputs": {k: _column(v) for k, v in self.extra_model_outputs.items()},
            "is_terminated": self.is_terminated, "is_truncated": self.is_truncated,
            "custom_data": self.custom_data if is_plain_data(self.custom_data) else {},
            "temporary_timestep_data": (self._temporary_timestep_data
                                        if is_plain_data(self._temporary_timestep_data) else {}),
            "is_numpy": self._is_numpy,
            "old_api": self._old if is_plain_data(self._old) else None,
            "return_before": self._return_before,
            "connector_data": self.connector_data,
        }

    @classmethod
    def from_state(cls, state: dict) -> SingleAgentEpisode:
        """The episode `get_state()` described, recording again where it stopped (its clock
        starts now)."""
        episode = cls(state["id_"], t_started=state["t_started"], env_index=state["env_index"])
        episode.observations = _rows(state["observations"], keep_scalars=True)
        episode.actions = _rows(state["actions"])
        episode.rewards = _rows(state["rewards"])
        episode.infos = list(state["infos"])
        episode.extra_model_outputs = {k: _rows(v)
                                       for k, v in state["extra_model_outputs"].items()}
        episode.is_terminated = state["is_terminated"]
        episode.is_truncated = state["is_truncated"]
        episode.custom_data = state["custom_data"]
        episode._temporary_timestep_data = state["temporary_timestep_data"]
        episode._old = state.get("old_api")
        episode._return_before = state.get("return_before", 0.0)
        episode.connector_data = dict(state.get("connector_data") or {})
        if episode.observations:
            episode._start_time = episode._last_step_time = time.perf_counter()
        if state["is_numpy"]:
            episode.to_numpy()
        return episode

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__
                if name not in self._LOCAL_SLOTS}

    def __setstate__(self, state):
        self._env_runner = None
        for name, value in state.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        status = "terminated" if self.is_terminated else "truncated" if self.is_truncated else "ongoing"
        return (f"SingleAgentEpisode(id_={self.id_[:8]}, t_started={self.t_started}, "
                f"len={len(self)}, return={self.get_return():.2f}, {status})")


def _column(values) -> Any:
    """A recorded column as one array where its entries stack into numbers, else as is."""
    if isinstance(values, np.ndarray):
        return values
    if not len(values):
        return []
    try:
        array = np.asarray(values)
    except ValueError:
        return list(values)
    return array if array.dtype.kind in "biufc" else list(values)


def _rows(column, *, keep_scalars: bool = False) -> list:
    """A column back as the list the episode records into: Python scalars for 1-d columns
    (as the EnvRunner appends them), numpy rows (or numpy scalars) otherwise."""
    if isinstance(column, np.ndarray):
        return list(column) if column.ndim > 1 or keep_scalars else column.tolist()
    return list(column)
