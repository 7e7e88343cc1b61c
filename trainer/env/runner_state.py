"""An EnvRunner's state, for checkpoints and exact resume: what `get_state()` writes, how
`check_state()` checks a state before anything changes, and how `set_state()` puts it back.

The state is plain data and numpy arrays: the runner's RNG, the global timestep, the
exploration's, metrics' and connectors' state, the weights, the sub-envs' tasks, and where
sampling stands (each sub-env's captured state, `trainer.env.env_state`; the current
observations; the unfinished episodes). `EnvRunner` takes these methods from `RunnerStateMixin`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from trainer.core.models import RL_MODULE_STATE
from trainer.env.env_state import capture_env_state, restore_env_state
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import MetricsLogger
from trainer.util.rng import generator_state, new_generator, set_generator_state
from trainer.util.state_checks import (
    StateError,
    check_loads,
    require_generator_state,
    require_int,
    require_map,
)

logger = logging.getLogger("trainer")


class RunnerStateMixin:
    """`get_state`, `check_state` and `set_state` of `EnvRunner`."""

    def get_state(self, components: Any = None, *, not_components: Any = None,
                  include_weights: bool = True, include_env: bool = True, **kwargs: Any
                  ) -> dict:
        """Everything this runner needs to continue exactly: its RNG, the global timestep, the
        exploration's and metrics' state, the weights, the sub-envs' tasks (for envs with tasks,
        see `trainer.env.curriculum`), and (with `include_env`) where sampling
        stands: each sub-env's captured state (see `trainer.env.env_state`), the current
        observations and the unfinished episodes. Plain data and numpy arrays only.
        `components` keeps only the named top-level keys, `not_components` drops them
        (RLlib's Checkpointable arguments; a name or a list)."""
        state = self._full_runner_state(include_weights, include_env)
        if components is not None:
            keep = {components} if isinstance(components, str) else set(components)
            state = {key: value for key, value in state.items() if key in keep}
        if not_components is not None:
            drop = {not_components} if isinstance(not_components, str) else set(not_components)
            state = {key: value for key, value in state.items() if key not in drop}
        return state

    def _full_runner_state(self, include_weights: bool, include_env: bool) -> dict:
        state = {"rng": generator_state(self._rng), "global_timestep": self.global_timestep,
                 "exploration": self.exploration.get_state(),
                 "metrics": self.metrics.get_state()}
        if include_weights:
            state[RL_MODULE_STATE] = self.module.get_weights()
        connector_state = self.get_connector_state()
        if connector_state is not None:
            state["connector_state"] = connector_state
        tasks = self.get_tasks()
        if tasks is not None:
            state["tasks"] = tasks
        if include_env and self.env is not None:
            state["sampling"] = self._sampling_state()
        return state

    def check_state(self, state: Any, where: str = "env_runner") -> None:
        """Raises `StateError` unless `state` is a runner state this runner can take: every key
        `get_state()` writes has the right kind of value, the exploration, metrics and
        connector states load into scratch copies, and the unfinished episodes rebuild. Nothing
        here changes."""
        require_map(state, where)
        unknown = sorted(set(state) - _RUNNER_STATE_KEYS)
        if unknown:
            raise StateError(where, f"has keys a runner state does not: {unknown[:4]}")
        if "rng" in state:
            require_generator_state(state["rng"], f"{where}['rng']")
        if "global_timestep" in state:
            require_int(state["global_timestep"], f"{where}['global_timestep']")
        if RL_MODULE_STATE in state:
            self.module.check_weights(state[RL_MODULE_STATE], f"{where}[{RL_MODULE_STATE!r}]")
        if "metrics" in state:
            MetricsLogger.check_state(state["metrics"], f"{where}['metrics']",
                                      self.config.stats_cls_lookup)
        for key, component in (("exploration", self.exploration),
                               ("connector_state", self._env_to_module)):
            if state.get(key) is not None and component is not None:
                check_loads(component, state[key], f"{where}[{key!r}]")
        if "tasks" in state and not isinstance(state["tasks"], list):
            raise StateError(f"{where}['tasks']", f"expected a list, got "
                                                  f"{type(state['tasks']).__name__}")
        if "sampling" in state:
            _check_sampling_state(state["sampling"], f"{where}['sampling']")

    def set_state(self, state: dict) -> None:
        """Takes back what `get_state()` returned (any subset of its keys), after `check_state`:
        a state that does not fit raises `StateError` and changes nothing."""
        self.check_state(state)
        if "rng" in state:
            set_generator_state(self._rng, state["rng"])
        if RL_MODULE_STATE in state:
            self.module.set_weights(state[RL_MODULE_STATE])
        if "global_timestep" in state:
            self.global_timestep = state["global_timestep"]
        if "connector_state" in state:
            self.set_connector_state(state["connector_state"])
        if "exploration" in state:
            self.exploration.set_state(state["exploration"])
        if "metrics" in state:
            self.metrics.set_state(state["metrics"])
            self._ended_episodes.clear()  # ended before the state was taken: in it already
        if "tasks" in state and self.env is not None:
            self.set_tasks(state["tasks"])  # before the sub-envs' own state, which may refine it
        if "sampling" in state and self.env is not None:
            self._restore_sampling(state["sampling"])

    def _sampling_state(self) -> dict:
        action_space_rng = self.env.action_space._np_random
        rng_state = None if action_space_rng is None else generator_state(action_space_rng)
        if self.vectorize_mode == "vector_entry_point":
            # One vector env, whose copies are not reachable one by one: its state is not
            # captured, so the episodes under way restart after a restore (the rest of the
            # runner's state is exact).
            return {
                "needs_reset": True, "env_seed": self._env_seed, "observations": None,
                "awaiting_reset": [], "autoreset_envs": np.zeros(0, dtype=bool),
                "action_space_rng": rng_state, "sub_envs": [],
                "uncaptured": {"all": f"gym_env_vectorize_mode={self.vectorize_mode!r}"},
                "episodes": [], "prev_chunks": {},
            }
        if self.vectorize_mode == "async":  # captured in each sub-env's child process
            captures = list(self.env.get_attr("trainer_env_state"))
            autoreset = self._child_autoreset
        else:
            captures = [capture_env_state(sub_env) for sub_env in self.env.envs]
            autoreset = self.env._autoreset_envs
        sub_envs, uncaptured = [], {}
        for i, (captured, reason) in enumerate(captures):
            sub_envs.append(captured)
            if reason is not None:
                uncaptured[str(i)] = reason
        return {
            "needs_reset": self._needs_reset, "env_seed": self._env_seed,
            "observations": self._obs, "awaiting_reset": list(self._awaiting_reset),
            "autoreset_envs": np.asarray(autoreset, dtype=bool),
            "action_space_rng": rng_state,
            "sub_envs": sub_envs, "uncaptured": uncaptured,
            "episodes": [None if ep is None else ep.get_state() for ep in self._episodes],
            "prev_chunks": {id_: [chunk.get_state() for chunk in chunks]
                            for id_, chunks in self._prev_chunks.items()},
        }

    def _restore_sampling(self, state: dict) -> None:
        """Puts the sub-envs, observations and unfinished episodes back. A sub-env whose state
        was not captured (or no longer fits) starts a new episode, with a warning. Outside
        "vector_entry_point" mode every episode starts anew (see `_sampling_state`)."""
        if self.vectorize_mode == "vector_entry_point" or not state["sub_envs"]:
            if state["sub_envs"]:
                logger.warning("EnvRunner %d: the checkpoint holds its sub-envs' state, but "
                               "with gym_env_vectorize_mode=%r it cannot be put back; all "
                               "episodes restart", self.worker_index, self.vectorize_mode)
            if state["env_seed"] is not None:
                self._env_seed = state["env_seed"]
            self._needs_reset = True
            return
        if len(state["sub_envs"]) != self.num_envs:
            logger.warning("EnvRunner %d: the checkpoint has %d sub-envs, this runner %d; "
                           "all episodes restart", self.worker_index, len(state["sub_envs"]),
                           self.num_envs)
            self._needs_reset = True
            return
        self._env_seed = state["env_seed"]
        if state["action_space_rng"] is not None:
            self.env.action_space._np_random = new_generator(state["action_space_rng"])
        in_children = self.vectorize_mode == "async"
        if in_children:
            self.env.set_attr("trainer_env_state", list(state["sub_envs"]))
            reasons = self.env.get_attr("trainer_restore_reason")
        else:
            reasons = [None if captured is None else restore_env_state(sub_env, captured)
                       for sub_env, captured in zip(self.env.envs, state["sub_envs"],
                                                    strict=True)]
        restart = []
        for i, captured in enumerate(state["sub_envs"]):
            reason = state["uncaptured"].get(str(i)) if captured is None else reasons[i]
            if reason is not None:
                restart.append(i)
                logger.warning("EnvRunner %d, sub-env %d: its state could not be restored (%s); "
                               "its episode restarts", self.worker_index, i, reason)
        self._needs_reset = state["needs_reset"]
        self._prev_chunks = {}
        if self._needs_reset:
            return  # the next sample() starts fresh episodes anyway
        self._obs = np.array(state["observations"])
        self._awaiting_reset = [bool(flag) for flag in state["awaiting_reset"]]
        autoreset = np.array(state["autoreset_envs"], dtype=bool)
        if in_children:  # the new children owe the autoresets the old ones would have done
            self._child_autoreset = autoreset
            self.env.set_attr("trainer_pending_reset", autoreset.tolist())
        else:
            self.env._autoreset_envs = autoreset
        for i, episode_state in enumerate(state["episodes"]):
            self._create_episode(i, _resumed_episode(episode_state))
        self._prev_chunks = {id_: [_resumed_episode(c) for c in chunks]
                             for id_, chunks in state["prev_chunks"].items()}
        if in_children and restart:
            self.env.set_attr("trainer_reset_flag", [i in restart for i in range(self.num_envs)])
            resets = self.env.call("trainer_reset_if_flagged")
        for i in restart:
            self._prev_chunks.pop(self._episodes[i].id_, None)
            self._create_episode(i)
            if in_children:
                observation, infos = resets[i]
                self._child_autoreset[i] = False
            else:
                observation, infos = self.env.envs[i].reset()
                self.env._autoreset_envs[i] = False
            self._obs[i] = observation
            self._awaiting_reset[i] = False
            self._begin_episode(i, observation, infos)


#: The keys `EnvRunner.get_state()` writes.
_RUNNER_STATE_KEYS = {"rng", "global_timestep", "exploration", "metrics", RL_MODULE_STATE,
                      "connector_state", "tasks", "sampling"}
_SAMPLING_STATE_KEYS = ("needs_reset", "env_seed", "observations", "awaiting_reset",
                        "autoreset_envs", "action_space_rng", "sub_envs", "uncaptured",
                        "episodes", "prev_chunks")


def _check_sampling_state(state: Any, where: str) -> None:
    require_map(state, where, _SAMPLING_STATE_KEYS)
    if not isinstance(state["needs_reset"], bool):
        raise StateError(f"{where}['needs_reset']", "expected true or false")
    if state["env_seed"] is not None:
        require_int(state["env_seed"], f"{where}['env_seed']", minimum=None)
    if state["action_space_rng"] is not None:
        require_generator_state(state["action_space_rng"], f"{where}['action_space_rng']")
    for key in ("sub_envs", "awaiting_reset", "episodes"):
        if not isinstance(state[key], list):
            raise StateError(f"{where}[{key!r}]", f"expected a list, got "
                                                  f"{type(state[key]).__name__}")
    require_map(state["uncaptured"], f"{where}['uncaptured']")
    require_map(state["prev_chunks"], f"{where}['prev_chunks']")
    episodes = [(f"{where}['episodes'][{i}]", episode)
                for i, episode in enumerate(state["episodes"]) if episode is not None]
    for id_, chunks in state["prev_chunks"].items():
        if not isinstance(chunks, list):
            raise StateError(f"{where}['prev_chunks'][{id_!r}]", "expected a list of episodes")
        episodes += [(f"{where}['prev_chunks'][{id_!r}][{i}]", chunk)
                     for i, chunk in enumerate(chunks)]
    for place, episode_state in episodes:
        try:
            SingleAgentEpisode.from_state(episode_state)
        except Exception as error:  # from_state raises KeyError, TypeError, ValueError...
            raise StateError(place, f"not an episode state ({type(error).__name__}: "
                                    f"{error})") from None


def _resumed_episode(state: dict) -> SingleAgentEpisode:
    """An episode from a runner state, recording again where it stopped. Its clock starts now:
    the saved `perf_counter` readings belong to another process (or machine)."""
    episode = SingleAgentEpisode.from_state(state)
    if episode.is_reset:
        episode._start_time = episode._last_step_time = time.perf_counter()
    return episode
