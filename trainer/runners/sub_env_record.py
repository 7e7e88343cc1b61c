"""`SubEnvRecord`: what a single-agent EnvRunner keeps about one sub-env between steps (its
episode under way, the episode's earlier chunks, its reset and autoreset flags, its task). The
runner (`runners/env_runner.py`), its rollout recorder (`runners/rollout.py`), its checkpoint
state (`runners/sampling_state.py`) and sub-env recovery (`runners/sub_env_recovery.py`) read
and write these records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trainer.env.episode import SingleAgentEpisode


@dataclass(slots=True)
class SubEnvRecord:
    """What an EnvRunner keeps about one sub-env between steps. The sampling loop, the
    checkpoint state (`EnvRunner.get_state` / `set_state`) and sub-env recovery all read and
    write these records; the batched arrays the policy's forward pass needs (the current
    observations, the module inputs) stay whole on the runner.

    After a columnar `sample()` call, the episode under way continues as `cut_from`, the
    chunk that call returned: its successor (`episode`, the chunk's `cut()`, and the
    `event_kwargs` naming it) is made the first time either is read. The next columnar call
    reads the chunk alone and records the continuation by column, so an episode cut at each
    call costs no object per call (at 256 sub-envs, the successors had been a fifth of the
    sampling time)."""

    #: `event_kwargs` for an episode (the runner's `_event_kwargs` for this sub-env).
    event_kwargs_of: Callable[[SingleAgentEpisode], dict] | None = None
    #: The episode under way (None before the first reset): see `episode`.
    _episode: SingleAgentEpisode | None = None
    #: The keyword arguments of the episode's callback events, built once per episode.
    _event_kwargs: dict = field(default_factory=dict)
    #: The chunk of the episode under way that the last columnar call returned, when its
    #: successor is not made yet (see the class docstring); else None.
    cut_from: SingleAgentEpisode | None = None
    #: The episode ended: the next `env.step()` resets this sub-env (gymnasium's NEXT_STEP
    #: autoreset) and that step starts the next episode.
    awaiting_reset: bool = False
    #: Starts no new episode: its episode ended while a complete-episodes sample lets the
    #: other sub-envs finish theirs; its steps are not recorded.
    idle: bool = False
    #: "async" mode: the episode ended in the last step, so the sub-env's child process
    #: autoresets it at the next (the runner's copy of what the child keeps out of reach).
    child_autoreset: bool = False
    #: The episode's earlier chunks, returned by earlier `sample()` calls: `on_episode_end`
    #: gets them (`prev_episode_chunks`) and the episode's return and length count them.
    prev_chunks: list[SingleAgentEpisode] = field(default_factory=list)
    #: `(task,)` as last read or set (curriculum), None when not known: a re-created vector
    #: env gets it back.
    task: tuple | None = None
    #: The temporary timestep data of `cut_from` when it was cut: its successor continues it
    #: (`sample()` drops the returned chunk's own).
    carried_temporary_data: dict | None = None

    @property
    def episode(self) -> SingleAgentEpisode | None:
        """The episode under way (None before the first reset)."""
        if self.cut_from is not None:
            self._make_successor()
        return self._episode

    @episode.setter
    def episode(self, episode: SingleAgentEpisode | None) -> None:
        self.cut_from = None
        self._episode = episode

    @property
    def event_kwargs(self) -> dict:
        """The keyword arguments of the episode's callback events."""
        if self.cut_from is not None:
            self._make_successor()
        return self._event_kwargs

    @event_kwargs.setter
    def event_kwargs(self, event_kwargs: dict) -> None:
        self._event_kwargs = event_kwargs

    def start(self, episode: SingleAgentEpisode, event_kwargs: dict) -> None:
        """`episode` is now under way here, with no earlier chunks."""
        self.episode = episode
        self.event_kwargs = event_kwargs
        self.prev_chunks = []
        self.carried_temporary_data = None

    def carry(self, chunk: SingleAgentEpisode) -> None:
        """`chunk`, returned by this call, is the episode's latest: it continues from it."""
        self.cut_from = chunk
        self.carried_temporary_data = chunk._temporary_timestep_data
        self.prev_chunks.append(chunk)

    def resume(self) -> None:
        """Makes the successor of the chunk carried in now, for a call whose callbacks read
        each episode's object as it steps."""
        if self.cut_from is not None:
            self._make_successor()

    def continue_with(self, successor: SingleAgentEpisode) -> None:
        """The chunk carried in continues as `successor` (made by the caller) from now on."""
        assert self.event_kwargs_of is not None
        self._continue_data(successor)
        self.cut_from = None
        self._episode = successor
        self._event_kwargs = self.event_kwargs_of(successor)

    def _continue_data(self, successor: SingleAgentEpisode) -> None:
        if self.carried_temporary_data is not None:
            successor._temporary_timestep_data = self.carried_temporary_data
            self.carried_temporary_data = None

    def _make_successor(self) -> None:
        chunk = self.cut_from
        assert chunk is not None and self.event_kwargs_of is not None
        self.cut_from = None
        # (The chunk ended with its call, which stamped its last step time.)
        successor = chunk._cut(ended=True)
        self._continue_data(successor)
        self._episode = successor
        self._event_kwargs = self.event_kwargs_of(successor)
