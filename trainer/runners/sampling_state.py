"""The sampling part of a single-agent EnvRunner's checkpoint state, captured and restored
outside the rollout loop: the sub-envs (their own state, captured in place or in "async" mode's
child processes), the observations and the module's next inputs, the autoreset flags, the
action space's RNG and the episodes under way with their earlier chunks. A runner restored from
it continues the episodes where they were.

What it reads, sets and calls of the runner is `SamplingStateRunner` (the EnvRunner imports this
module, so it is not named here).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.core.models import SpaceInfo
from trainer.core.obs_tree import batch_from_state, set_row
from trainer.env.env_state import capture_env_state, restore_env_state
from trainer.env.episode import SingleAgentEpisode
from trainer.runners.module_frames import ModuleFrames
from trainer.runners.runner_state import resumed_episode
from trainer.runners.sub_env_record import SubEnvRecord
from trainer.runners.vector_rows import unbatch
from trainer.util.rng import generator_state, new_generator

logger = logging.getLogger("trainer")


class SamplingStateRunner(Protocol):
    """What capturing and restoring the sampling state reads, sets and calls of a
    single-agent EnvRunner: its vector env (by mode), its sub-env records, the batched
    observations and module inputs, its env seed and reset flag, and how it starts an
    episode in a sub-env."""

    #: The vector env's current observations (a batch over the sub-envs).
    _obs: Any
    #: With an env-to-module pipeline: the module's next inputs (batched, and per sub-env).
    _module_obs: Any
    _module_obs_rows: list[Any]
    #: The seed of the next reset (None once the sub-envs were seeded).
    _env_seed: int | None
    #: The next `sample()` starts fresh episodes.
    _needs_reset: bool

    @property
    def worker_index(self) -> int: ...

    @property
    def num_envs(self) -> int: ...

    @property
    def vectorize_mode(self) -> str: ...

    @property
    def spaces(self) -> SpaceInfo | None: ...

    @property
    def env_spaces(self) -> tuple[gym.Space, gym.Space] | None: ...

    @property
    def _recording_pipeline(self) -> ConnectorPipelineV2 | None: ...

    @property
    def _module_frames(self) -> ModuleFrames | None: ...

    @property
    def _sub_env_records(self) -> list[SubEnvRecord]: ...

    def _require_env(self, what: str) -> gym.vector.VectorEnv: ...

    def _sync_env(self, what: str) -> gym.vector.SyncVectorEnv: ...

    def _async_env(self, what: str) -> gym.vector.AsyncVectorEnv: ...

    def _create_episode(
        self, env_index: int, restored: SingleAgentEpisode | None = None
    ) -> None: ...

    def _begin_episode(self, env_index: int, observation: Any, infos: dict) -> None: ...

    def _keep_module_inputs(
        self, episodes: list[SingleAgentEpisode], env_indices: list[int]
    ) -> None: ...


def capture_sampling_state(runner: SamplingStateRunner) -> dict:
    """The "sampling" part of a runner's state: the sub-envs' captured states, the
    observations and the module's next inputs, the autoreset flags, the action space's RNG and
    the episodes under way with their earlier chunks."""
    action_space_rng = runner._require_env("the sampling state").action_space._np_random
    rng_state = None if action_space_rng is None else generator_state(action_space_rng)
    if runner.vectorize_mode == "vector_entry_point":
        # One vector env, whose copies are not reachable one by one: its state is not
        # captured, so the episodes under way restart after a restore (the rest of the
        # runner's state is exact).
        return {
            "needs_reset": True,
            "env_seed": runner._env_seed,
            "observations": None,
            "awaiting_reset": [],
            "autoreset_envs": np.zeros(0, dtype=bool),
            "action_space_rng": rng_state,
            "sub_envs": [],
            "uncaptured": {"all": f"gym_env_vectorize_mode={runner.vectorize_mode!r}"},
            "episodes": [],
            "prev_chunks": {},
        }
    autoreset: list[bool] | np.ndarray
    if runner.vectorize_mode == "async":  # captured in each sub-env's child process
        captures = list(runner._async_env("the sampling state").get_attr("trainer_env_state"))
        autoreset = [record.child_autoreset for record in runner._sub_env_records]
    else:
        env = runner._sync_env("the sampling state")
        captures = [capture_env_state(sub_env) for sub_env in env.envs]
        autoreset = env._autoreset_envs
    records = runner._sub_env_records
    sub_envs: list[list[dict] | None] = []
    uncaptured: dict[str, str] = {}
    for i, (captured, reason) in enumerate(captures):
        sub_envs.append(captured)
        if reason is not None:
            uncaptured[str(i)] = reason
    return {
        "needs_reset": runner._needs_reset,
        "env_seed": runner._env_seed,
        "observations": runner._obs,
        # The module's next inputs with an env-to-module pipeline (its last outputs).
        "module_observations": runner._module_obs,
        # When the learner stacks the frames: the module's stacked inputs.
        "module_frames": None
        if runner._module_frames is None
        else runner._module_frames.get_state(),
        "awaiting_reset": [record.awaiting_reset for record in records],
        "autoreset_envs": np.asarray(autoreset, dtype=bool),
        "action_space_rng": rng_state,
        "sub_envs": sub_envs,
        "uncaptured": uncaptured,
        "episodes": [
            None if record.episode is None else record.episode.get_state() for record in records
        ],
        # Only an episode under way has earlier chunks.
        "prev_chunks": {
            record.episode.id_: [chunk.get_state() for chunk in record.prev_chunks]
            for record in records
            if record.prev_chunks and record.episode is not None
        },
    }


def restore_sampling_state(runner: SamplingStateRunner, state: dict) -> None:
    """Puts the sub-envs, observations and unfinished episodes back. A sub-env whose state
    was not captured (or no longer fits) starts a new episode, with a warning. Outside
    "vector_entry_point" mode every episode starts anew (see `capture_sampling_state`).

    In steps:

        `_restarts_all`          a state whose sub-envs cannot be put back: every episode
                                 restarts (at the next `sample()`)
        `_restore_sub_envs`      each sub-env's own state, in place or in its child process
                                 ("async"); those that fail are to restart
        `_restore_vector_state`  the observations and the autoreset flags
        episodes                 the episodes under way, the module's next inputs
                                 (`_restore_module_inputs`) and the earlier chunks of each
                                 episode (`_restore_prev_chunks`)
        `_restart_sub_envs`      the sub-envs whose state failed reset into new episodes
    """
    if _restarts_all(runner, state):
        runner._needs_reset = True
        return
    runner._env_seed = state["env_seed"]
    if state["action_space_rng"] is not None:
        runner._require_env(_RESTORING).action_space._np_random = new_generator(
            state["action_space_rng"]
        )
    restart = _restore_sub_envs(runner, state)
    records = runner._sub_env_records
    runner._needs_reset = state["needs_reset"]
    for record in records:
        record.prev_chunks = []
    if runner._needs_reset:
        return  # the next sample() starts fresh episodes anyway
    _restore_vector_state(runner, state)
    for i, episode_state in enumerate(state["episodes"]):
        runner._create_episode(i, resumed_episode(episode_state))
    _restore_module_inputs(runner, state.get("module_observations"))
    frames = runner._module_frames
    if frames is not None:
        saved = state.get("module_frames")
        if saved is not None:
            frames.set_state(saved)
        else:  # (a state without them: the episodes under way start from zeros)
            frames.starting[:] = True
    _restore_prev_chunks(runner, state["prev_chunks"])
    _restart_sub_envs(runner, restart)


#: What the vector env is wanted for, in its errors (`EnvRunner._require_env`).
_RESTORING = "restoring the sampling state"


def _restarts_all(runner: SamplingStateRunner, state: dict) -> bool:
    """Whether no sub-env of `state` can be put back: "vector_entry_point" mode or a state
    without sub-envs (the env seed is kept, where it has one), or a state of another number
    of sub-envs; warns where the state holds sub-envs."""
    if runner.vectorize_mode == "vector_entry_point" or not state["sub_envs"]:
        if state["sub_envs"]:
            logger.warning(
                "EnvRunner %d: the checkpoint holds its sub-envs' state, but "
                "with gym_env_vectorize_mode=%r it cannot be put back; all "
                "episodes restart",
                runner.worker_index,
                runner.vectorize_mode,
            )
        if state["env_seed"] is not None:
            runner._env_seed = state["env_seed"]
        return True
    if len(state["sub_envs"]) != runner.num_envs:
        logger.warning(
            "EnvRunner %d: the checkpoint has %d sub-envs, this runner %d; all episodes restart",
            runner.worker_index,
            len(state["sub_envs"]),
            runner.num_envs,
        )
        return True
    return False


def _restore_sub_envs(runner: SamplingStateRunner, state: dict) -> list[int]:
    """Puts each sub-env's captured state back (in its child process in "async" mode);
    returns the indices of those not captured or not restored, each warned about."""
    reasons: tuple[str | None, ...] | list[str | None]
    if runner.vectorize_mode == "async":
        async_env = runner._async_env(_RESTORING)
        async_env.set_attr("trainer_env_state", list(state["sub_envs"]))
        reasons = async_env.get_attr("trainer_restore_reason")
    else:
        reasons = [
            None if captured is None else restore_env_state(sub_env, captured)
            for sub_env, captured in zip(
                runner._sync_env(_RESTORING).envs, state["sub_envs"], strict=True
            )
        ]
    restart = []
    for i, captured in enumerate(state["sub_envs"]):
        reason = state["uncaptured"].get(str(i)) if captured is None else reasons[i]
        if reason is not None:
            restart.append(i)
            logger.warning(
                "EnvRunner %d, sub-env %d: its state could not be restored (%s); "
                "its episode restarts",
                runner.worker_index,
                i,
                reason,
            )
    return restart


def _restore_vector_state(runner: SamplingStateRunner, state: dict) -> None:
    """The vector env's last observations, the sub-envs awaiting a reset and the autoreset
    flags (in "async" mode, the new children owe the autoresets the old ones would have
    done)."""
    records = runner._sub_env_records
    env_spaces = runner.env_spaces
    runner._obs = batch_from_state(
        state["observations"], None if env_spaces is None else env_spaces[0]
    )
    for record, flag in zip(records, state["awaiting_reset"], strict=False):
        record.awaiting_reset = bool(flag)
    autoreset = np.array(state["autoreset_envs"], dtype=bool)
    if runner.vectorize_mode == "async":
        for record, flag in zip(records, autoreset.tolist(), strict=False):
            record.child_autoreset = flag
        runner._async_env(_RESTORING).set_attr("trainer_pending_reset", autoreset.tolist())
    else:
        runner._sync_env(_RESTORING)._autoreset_envs = autoreset


def _restore_module_inputs(runner: SamplingStateRunner, saved_inputs: Any) -> None:
    """With an env-to-module pipeline: the module's next inputs, as saved, or (a state
    without them) the pipeline's outputs the restored episodes end with."""
    if runner._recording_pipeline is None:
        return
    if saved_inputs is not None:
        nested = None if runner.spaces is None else runner.spaces.nested_obs_space
        runner._module_obs = batch_from_state(saved_inputs, nested)
        if nested is not None:
            runner._module_obs_rows = list(unbatch(runner._module_obs, runner.num_envs))
        return
    restored = [
        (i, record.episode)
        for i, record in enumerate(runner._sub_env_records)
        if record.episode is not None and len(record.episode.observations)
    ]
    if len(restored) == runner.num_envs:
        runner._keep_module_inputs([episode for _, episode in restored], [i for i, _ in restored])


def _restore_prev_chunks(runner: SamplingStateRunner, saved_chunks: dict[str, list]) -> None:
    """The earlier chunks of the episodes under way, saved by episode id: each goes back to
    the sub-env running that episode."""
    chunks_by_id = {
        id_: [resumed_episode(c) for c in chunks] for id_, chunks in saved_chunks.items()
    }
    for record in runner._sub_env_records:
        if record.episode is not None:
            record.prev_chunks = chunks_by_id.pop(record.episode.id_, [])


def _restart_sub_envs(runner: SamplingStateRunner, restart: list[int]) -> None:
    """The sub-envs in `restart` (their state was not restored) reset into new episodes; the
    restored episode and its chunks are dropped."""
    records = runner._sub_env_records
    in_children = runner.vectorize_mode == "async"
    if in_children and restart:
        async_env = runner._async_env(_RESTORING)
        async_env.set_attr("trainer_reset_flag", [i in restart for i in range(runner.num_envs)])
        resets = async_env.call("trainer_reset_if_flagged")
    for i in restart:
        record = records[i]
        runner._create_episode(i)
        if in_children:
            observation, infos = resets[i]
            record.child_autoreset = False
        else:
            sync_env = runner._sync_env(_RESTORING)
            observation, infos = sync_env.envs[i].reset()
            sync_env._autoreset_envs[i] = False
        set_row(runner._obs, i, observation)
        record.awaiting_reset = False
        runner._begin_episode(i, observation, infos)
