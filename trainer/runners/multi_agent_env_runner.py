"""`MultiAgentEnvRunner`: steps `num_envs_per_env_runner` MultiAgentEnvs with the modules of a
`MultiRLModule`, records `MultiAgentEpisode`s and fires the EnvRunner callbacks (RLlib's
`ray.rllib.env.multi_agent_env_runner.MultiAgentEnvRunner`).

One step of the runner, over all its sub-envs:

    agents to act       every sub-env's agents with an observation in its last result (and not
                        done); each agent's module is its episode's `module_for(agent_id)`
                        (`policy_mapping_fn`, asked once per agent and episode)
    one forward pass    per module, over the rows of all its agents in all sub-envs: default
    per module          numpy modules through their exploration (logits / Q-values), a user's
                        RLModule through `forward_exploration` / `forward_inference`; a
                        recurrent module's rows start from each agent's last recorded
                        `Columns.STATE_OUT` (its initial state at the agent's first step);
                        a MultiRLModule class that runs its modules together (a shared
                        encoder) makes one pass of the container over every acting module
    module-to-env       the config's module-to-env pieces, if any, over every acting module's
    pieces              outputs at once (`{module_id: batch}`); actions are drawn from what
                        they leave (or taken as a piece wrote them)
    env.step            each sub-env with the actions of its acting agents
    episodes            an episode's plain steps go into its `AgentColumns` (a list per
                        agent and field), which become (a new episode's) or extend (one
                        continued from the last call's) its agents' buffers when it ends or the
                        call returns, unless a callback reads episodes while they run
                        (`on_episode_start`, `on_episode_step`); other steps are recorded by
                        `add_env_step` with the module's model outputs; a sub-env whose
                        episode ended (`"__all__"`) is reset at once into a new episode

Step counts follow RLlib: an env step is one step of one sub-env; agent steps count the
agents in its result. `sample(num_timesteps=...)` counts what `count_steps_by` says.
Sub-envs are stepped one after the other ("sync"), as RLlib does for multi-agent envs.

A `sample()` call runs the rollout loop both runners share (`runners/rollout_loop.py`) over a
`MultiAgentRecorder` (`runners/multi_agent_recorder.py`), which steps the sub-envs and records
their results; this runner keeps what lasts across calls (the sub-envs, their episodes and
columns, the agents' last observations) and computes each step's actions (`_random_actions`,
`_module_actions_of`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any, NamedTuple, NoReturn, cast

import gymnasium as gym
import numpy as np

from trainer.capabilities import CHECKPOINTABLE, MULTI_AGENT
from trainer.compat.rllib_utils import Columns
from trainer.connectors.connector_v2 import (
    ConnectorPipelineV2,
    build_pipeline,
    call_module_to_env_factory,
)
from trainer.core.exploration import ActionDistribution, StochasticSampling, module_exploration
from trainer.core.extra_outputs import extra_outputs
from trainer.core.models import (
    INPUT_ENV_SINGLE_SPACES,
    INPUT_ENV_SPACES,
    RL_MODULE_STATE,
    FlatParameterModule,
)
from trainer.core.multi_rl_module import runs_modules_together
from trainer.core.nn import Categorical, act_small_rows
from trainer.core.obs_tree import tree_rows
from trainer.core.recurrent import step_inputs
from trainer.env.envs import EnvContext, EnvCreator
from trainer.env.episode import ACTION_DIST_INPUTS, ACTION_LOGP
from trainer.env.lookback_buffer import split_rows
from trainer.env.multi_agent_checks import result_problem
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.env.vector_multi_agent_env import VectorMultiAgentEnv
from trainer.errors import ConfigError, EnvDataError, StepFailedRecreateEnvError
from trainer.metrics import (
    EPISODE_AGENT_RETURN_MEAN,
    EPISODE_AGENT_STEPS,
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    MetricsLogger,
)
from trainer.runners.env_runner import EnvRunner, RunnerSetup
from trainer.runners.module_frames import (
    multi_agent_learner_stacked_frames,
    newest_frame_space,
    newest_frames,
)
from trainer.runners.module_to_env_pieces import for_pieces, missing_dist_inputs, pieces_left
from trainer.runners.multi_agent_columns import AgentColumns
from trainer.runners.multi_agent_observations import (
    ObservationPiecesEnv,
    multi_agent_env_to_module_pieces,
)
from trainer.runners.multi_agent_recorder import MultiAgentRecorder, StepActions
from trainer.runners.multi_agent_runner_state import (
    capture_multi_agent_env_state,
    check_sampling_state,
    restore_multi_agent_env_state,
    resumed_episode,
)
from trainer.runners.multi_agent_sub_env_guard import MultiAgentSubEnvGuard
from trainer.runners.rollout_loop import collect_rollout
from trainer.runners.runner_checkpoint import (
    COMPONENT_PROTOCOL_METHODS,
    COMPONENT_PROTOCOL_REFUSAL,
)
from trainer.runners.runner_state import (
    RUNNER_STATE_KEYS,
    WEIGHTS_SEQ_NO,
    connector_components,
    set_connector_components,
    weights_are_new,
)
from trainer.util.rllib_members import refuse
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.seeding import module_seed
from trainer.util.state_checks import (
    StateError,
    check_loads,
    require_generator_state,
    require_int,
    require_map,
    select_components,
)

logger = logging.getLogger("trainer")

#: The key of a user RLModule's actions in its forward pass's output (RLlib's Columns.ACTIONS).
ACTIONS = "actions"
OBS = "obs"
#: A recurrent module's state after a step, recorded with it (RLlib's Columns.STATE_OUT).
STATE_OUT = Columns.STATE_OUT


#: The keys of a MultiAgentEnvRunner's state (`get_state`): the single-agent runner's but its
#: sub-envs' tasks; the group's restart state also carries a connector state (None here).
_STATE_KEYS = RUNNER_STATE_KEYS - {"tasks"}


#: A sub-env's done agents when none is (shared, never changed).
_NONE_DONE: frozenset = frozenset()


class ModuleOutput(NamedTuple):
    """A module's forward pass over its agents' rows, before its actions are drawn."""

    #: The action distribution's inputs, one row per agent (None: a module that drew its
    #: actions itself and returned none).
    dist_inputs: Any
    #: (actions, their log-likelihoods or None) the module (or a module-to-env piece) drew.
    acted: tuple[Any, Any] | None = None
    #: A recurrent module's state out per row (`Columns.STATE_OUT`).
    state_rows: list[Any] | None = None
    #: The module's other outputs by key, a row per agent (a user's "my_value",
    #: `trainer.core.extra_outputs`), recorded among the agents' model outputs; None: none.
    extras: dict[str, np.ndarray] | None = None


#: No module yet (`_one_module_actions`: the acting agents' one module, once seen).
_NO_MODULE = object()


class _ModuleActions:
    """The actions of one module for a batch of observation rows: a default numpy module
    (logits or Q-values through the config's exploration), or a user's `RLModule`
    (`forward_exploration` / `forward_inference` returning `actions`, or
    `action_dist_inputs` sampled from its action distribution class)."""

    def __init__(
        self, module: Any, exploration: Any, rng: np.random.Generator, config: Any
    ) -> None:
        self.module = module
        self.exploration = exploration
        self.rng = rng
        self.config = config
        #: A torch module's view (`TorchModuleView`): it acts as a default numpy module
        #: does (distribution inputs, drawn by the exploration), its forward pass in torch.
        self.torch_view = getattr(module, "framework", None) == "torch" and hasattr(
            module, "rl_module"
        )
        self.numpy_default = isinstance(module, FlatParameterModule) or self.torch_view
        #: Categorical sampling through plain StochasticSampling (the default): drawn on
        #: Python lists for small batches, past the exploration's random steps.
        self.categorical_sampling = (
            self.numpy_default
            and getattr(module, "dist", None) is Categorical
            and type(exploration) is StochasticSampling
        )
        #: A recurrent torch module (`is_stateful()`, e.g. `use_lstm`): each row's state in
        #: comes from its agent's episode and its state out goes into the step's outputs.
        self.stateful = self.torch_view and bool(getattr(module, "stateful", False))
        #: A numpy module (not a torch module's view) sampling Categorical actions: its
        #: forward pass and draw in one call (`_numpy_categorical`).
        self.numpy_categorical = self.categorical_sampling and not self.torch_view

    def forward(
        self, obs_rows: list[Any], explore: bool, agent_episodes: list[Any] | None = None
    ) -> ModuleOutput:
        """The module's forward pass over its agents' rows, before any action is drawn (a
        recurrent module's rows start from `agent_episodes`' last states out)."""
        module = self.module
        if self.stateful:
            obs = module.spaces.preprocess(_stack(obs_rows))
            states, prev_actions, prev_rewards = step_inputs(module, agent_episodes or [])
            dist_inputs, state_out = module.dist_inputs_and_state(
                obs, states, explore=explore, prev_actions=prev_actions, prev_rewards=prev_rewards
            )
            state_rows = [tree_rows(state_out, k) for k in range(len(obs_rows))]
            return ModuleOutput(dist_inputs, None, state_rows, module.module_extras)
        if self.numpy_default:
            obs = module.spaces.preprocess(_stack(obs_rows))
            if self.torch_view:  # forward_exploration / forward_inference
                dist_inputs = module.dist_inputs(obs, explore=explore)
                # A module that drew its actions itself (RLlib's ACTIONS) is taken as it acted.
                return ModuleOutput(dist_inputs, module.module_acted, None, module.module_extras)
            return ModuleOutput(module.dist_inputs(obs))
        batch = {OBS: _stack(obs_rows)}
        out = module.forward_exploration(batch) if explore else module.forward_inference(batch)
        acted = None
        if ACTIONS in out:
            logp = out.get(ACTION_LOGP)
            acted = (np.asarray(out[ACTIONS]), None if logp is None else np.asarray(logp))
        elif ACTION_DIST_INPUTS not in out:
            raise ValueError(
                f"{type(module).__name__}.forward_{'exploration' if explore else 'inference'}() "
                f"returned {sorted(out)}: an RLModule that acts returns 'actions' or "
                "'action_dist_inputs'"
            )
        phase = "exploration" if explore else "inference"
        extras = extra_outputs(out, len(obs_rows), f"{type(module).__name__}.forward_{phase}()")
        return ModuleOutput(out.get(ACTION_DIST_INPUTS), acted, None, extras)

    def draw(
        self, output: ModuleOutput, explore: bool, timestep: int
    ) -> tuple[list[Any], list[Any], list[float] | None, Any]:
        """`__call__`'s results for a forward pass's outputs: the actions it drew, else those
        drawn from its distribution inputs."""
        dist_inputs, acted = output.dist_inputs, output.acted
        if self.numpy_default:
            return (*self._drawn(dist_inputs, explore, timestep, acted), dist_inputs)
        if acted is not None:
            actions, logp = acted
            return (
                _rows(actions),
                _env_rows(actions),
                None if logp is None else logp.tolist(),
                dist_inputs,
            )
        module = self.module
        dist_inputs = np.asarray(dist_inputs)
        dist_cls = (
            module.get_exploration_action_dist_cls()
            if explore
            else module.get_inference_action_dist_cls()
        )
        dist = dist_cls.from_logits(dist_inputs)
        actions = dist.sample() if explore else dist.to_deterministic().sample()
        logp = np.asarray(dist.logp(actions), dtype=np.float32)
        return _rows(actions), _env_rows(actions), logp.tolist(), dist_inputs

    def _drawn(
        self, dist_inputs: Any, explore: bool, timestep: int, acted: Any = None
    ) -> tuple[list[Any], list[Any], list[float]]:
        """A default module's actions for its distribution inputs, drawn by the exploration
        (or `acted`: (actions, log-probs) the module drew itself), as the episodes record them,
        as the envs take them (nested spaces leaf by leaf), and their log-probs."""
        module = self.module
        if acted is not None:
            actions, logp = acted
        else:
            actions, logp = self.exploration.get_exploration_action(
                action_distribution=ActionDistribution(module.dist, dist_inputs, self.rng),
                timestep=timestep,
                explore=explore,
            )
        env_actions = module.to_env_actions(
            actions, normalize=self.config.normalize_actions, clip=self.config.clip_actions
        )
        to_env = split_rows if module.spaces.action_layout is not None else _env_rows
        return _rows(actions), to_env(env_actions), logp.tolist()

    def preprocessed(self, obs_rows: list[Any]) -> Any:
        """A torch or default module's batch of observation rows, preprocessed."""
        return self.module.spaces.preprocess(_stack(obs_rows))

    def __call__(
        self, obs_rows: list[Any], explore: bool, timestep: int
    ) -> tuple[list[Any], list[Any], list[float] | None, Any, dict[str, np.ndarray] | None]:
        """(actions as the episode records them, actions for the env, log-probs or None,
        distribution inputs (one row per observation) or None, the module's other outputs
        (`ModuleOutput.extras`) or None)."""
        if self.numpy_categorical:
            return (*self._numpy_categorical(obs_rows, explore, timestep), None)
        output = self.forward(obs_rows, explore)
        dist_inputs = output.dist_inputs
        if (
            self.categorical_sampling
            and output.acted is None
            and dist_inputs.size <= Categorical.SMALL
            and dist_inputs.ndim == 2
            and (not explore or timestep >= self.exploration.random_timesteps)
        ):
            # What `draw` computes, without the arrays in between.
            acted_rows, logp_rows = act_small_rows(dist_inputs, self.rng, explore)
            return (
                acted_rows,
                list(map(np.int64, acted_rows)),
                logp_rows,
                dist_inputs,
                output.extras,
            )
        return (*self.draw(output, explore, timestep), output.extras)

    def _numpy_categorical(
        self, obs_rows: list[Any], explore: bool, timestep: int
    ) -> tuple[list[Any], list[Any], list[float] | None, Any]:
        """`__call__` for a numpy module sampling Categorical actions (the default): its
        forward pass, then (a small batch past the random steps) the draw on Python lists."""
        module = self.module
        dist_inputs = module.dist_inputs(module.spaces.preprocess(_stack(obs_rows)))
        if (
            dist_inputs.size <= Categorical.SMALL
            and dist_inputs.ndim == 2
            and (not explore or timestep >= self.exploration.random_timesteps)
        ):
            acted_rows, logp_rows = act_small_rows(dist_inputs, self.rng, explore)
            return acted_rows, list(map(np.int64, acted_rows)), logp_rows, dist_inputs
        return self.draw(ModuleOutput(dist_inputs), explore, timestep)


def _drawn_outputs(
    logp: Any, dist_inputs: Any, state_rows: Any = None, extras: dict | None = None
) -> dict[str, Any]:
    """A module's model outputs over its rows by key, as its episodes record them: the
    action draw's log-probs and distribution inputs, a recurrent module's states out (None:
    not given) and the module's other outputs (`extras`)."""
    outputs = {ACTION_LOGP: logp, ACTION_DIST_INPUTS: dist_inputs, STATE_OUT: state_rows}
    if extras:
        outputs.update(extras)
    return outputs


def _stack(rows: list[Any]) -> Any:
    """Observation rows as one batch (dict and tuple observations stacked leaf by leaf)."""
    first = rows[0]
    if isinstance(first, dict):
        return {key: _stack([row[key] for row in rows]) for key in first}
    if isinstance(first, tuple):
        return tuple(_stack([row[i] for row in rows]) for i in range(len(first)))
    return np.array(rows)  # rows of one space: one shape (np.array: a third of np.stack's time)


def _rows(batch: np.ndarray) -> list[Any]:
    """A batch's rows as the episodes record them: Python scalars for a 1-D batch, arrays
    otherwise."""
    batch = np.asarray(batch)
    return batch.tolist() if batch.ndim == 1 else list(batch)


def _env_rows(batch: np.ndarray) -> list[Any]:
    """A batch's rows as the envs get them (RLlib's unbatched actions): numpy scalars for a
    1-D batch, arrays otherwise. (A Discrete space checks a numpy integer faster than an
    int: a sixth of a MultiAgentCartPole step was that check.)"""
    return list(np.asarray(batch))


@refuse(
    "ray.rllib.env.multi_agent_env_runner.MultiAgentEnvRunner",
    CHECKPOINTABLE,
    COMPONENT_PROTOCOL_REFUSAL,
    *COMPONENT_PROTOCOL_METHODS,
)
@refuse(
    "ray.rllib.env.multi_agent_env_runner.MultiAgentEnvRunner",
    MULTI_AGENT,
    "the multi-agent runner builds an acting module per policy module when it starts "
    "(add_module / remove_module change them); there is no rebuild of all of them at once",
    "make_module",
)
class MultiAgentEnvRunner(RunnerSetup):
    """Samples multi-agent episodes (see the module docstring). Built like `EnvRunner`:
    `MultiAgentEnvRunner(config, env_creator, worker_index=..., num_workers=...)`.

    Attributes a callback may use: `config`, `worker_index`, `num_workers`, `env` (the list of
    sub-envs: `env.envs[i]`), `module` (the `MultiRLModule`), `metrics`."""

    def __init__(
        self,
        config: Any,
        env_creator: EnvCreator | None = None,
        *,
        worker_index: int = 0,
        num_workers: int | None = None,
        create_env: bool = True,
        spaces: dict[Any, tuple[gym.Space, gym.Space]] | None = None,
        recreated: bool = False,
        env_spaces: tuple[dict, dict] | None = None,
        **kwargs: Any,
    ):
        config = self._set_up(config, env_creator, worker_index, num_workers, kwargs)
        self._recreated = recreated
        self.num_envs = int(config.num_envs_per_env_runner)
        self._restart_sub_envs = bool(config.restart_failed_sub_environments)
        #: The sub-envs (`envs.envs[i]`), or None without env.
        self.env: _SubEnvs | None = None
        #: Per agent id: (observation space, action space), as the env gives them.
        self.env_spaces = env_spaces
        #: Per module id: (observation space, action space) its networks are built for.
        self.spaces = spaces
        #: The config's module-to-env pieces (`_build_module_to_env`), or None.
        self._module_to_env: ConnectorPipelineV2 | None = None
        #: The per-agent observation pieces of the env-to-module connector (run inside each
        #: sub-env, see `ObservationPiecesEnv`) ...
        self._observation_pieces: list[Any] = []
        #: ... and its other pieces (a user's own ConnectorV2s) as one pipeline, run over the
        #: episodes after each reset and step (`_run_episode_pieces`), or None.
        self._episode_pieces: ConnectorPipelineV2 | None = None
        #: The `shared_data` the episode pieces get, kept across calls (as RLlib's runner).
        self._shared_data: dict[str, Any] = {}
        #: When the learner stacks the frames (`trainer.runners.module_frames`): how many; the
        #: episodes then record each agent's newest frame, under `_episode_spaces`.
        self._learner_frames: int | None = None
        #: Per agent id: the observation space of its episodes (the env spaces, or the frame
        #: spaces where the learner stacks the frames).
        self._episode_spaces: dict[Any, gym.Space] = {}
        if create_env:
            self.make_env()
        else:
            self._take_pieces_without_env()
        self.module = self._build_module()
        self._build_module_to_env()
        self._actors = {
            module_id: self._module_actions(module_id, module)
            for module_id, module in self.module.items()
        }
        #: Whether the MultiRLModule's class runs its modules together (RLlib's shared
        #: encoder): each step's forward pass is then the container's, over every acting
        #: module at once (`_joint_dist_inputs`).
        self._joint_forward = runs_modules_together(type(self.module))
        if self._joint_forward:
            self._check_joint_modules()
        self._episodes: list[MultiAgentEpisode | None] = [None] * self.num_envs
        #: Per sub-env, its new episode's steps by agent and column, not yet in the episode
        #: object (see `trainer.runners.multi_agent_columns`), or None.
        self._columns: list[AgentColumns | None] = [None] * self.num_envs
        #: Each sub-env's last result: the observations of the agents to act next.
        self._last_obs: list[dict] = [{} for _ in range(self.num_envs)]
        #: ... and of those, the agents that are done (they do not act again).
        self._last_done: list[set | frozenset] = [set() for _ in range(self.num_envs)]
        #: Per sub-env: each agent's module in its current episode.
        self._agent_modules: list[dict] = [{} for _ in range(self.num_envs)]
        #: Chunks of each running episode returned by earlier samples (for its metrics and
        #: `on_episode_end`'s `prev_episode_chunks`).
        self._prev_chunks: list[list[MultiAgentEpisode]] = [[] for _ in range(self.num_envs)]
        self._needs_reset = True
        self._ended: list[tuple[MultiAgentEpisode, list[MultiAgentEpisode]]] = []
        #: Agent steps since the last sample's metrics, by (agent id, module id).
        self._agent_steps: Counter[tuple[Any, Any]] = Counter()
        self.global_timestep = 0
        self.num_env_steps_stepped = 0

    # -- building ----------------------------------------------------------------------------
    def _take_pieces_without_env(self) -> None:
        """The env-to-module pieces of a runner without envs (the driver's beside remote
        ones): they still hold the state the runners' connector states merge into. RLlib's
        factories read no env for them (one that does leaves this runner without pieces)."""
        try:
            observation_pieces, episode_pieces = multi_agent_env_to_module_pieces(self.config, None)
        except (AttributeError, TypeError):
            observation_pieces, episode_pieces = [], []
        self._observation_pieces = list(observation_pieces)
        if episode_pieces:
            self._episode_pieces = ConnectorPipelineV2(connectors=episode_pieces)

    def sub_env_context(self, index: int) -> EnvContext:
        return EnvContext(
            self.config.env_config,
            worker_index=self.worker_index,
            num_workers=self.num_workers,
            vector_index=index,
            recreated_worker=self._recreated,
        )

    def make_env(self) -> None:
        """(Re)creates the sub-envs from the runner's config, then fires
        `on_environment_created`; episodes under way are dropped."""
        if self.env is not None:
            self.env.close()
        envs = []
        for index in range(self.num_envs):
            env = self._env_creator(self.sub_env_context(index))
            if not isinstance(getattr(env, "unwrapped", env), MultiAgentEnv):
                raise ValueError(
                    f"{type(self).__name__}: the env {self._env_creator.description} made a "
                    f"{type(env).__name__}, not a MultiAgentEnv; a single-agent env trains "
                    "without config.multi_agent(...)"
                )
            envs.append(env)
        # The env-to-module pieces (per-agent observation pieces) rewrite the observations as
        # they leave each sub-env (see multi_agent_observations); the guard, if any, is
        # outermost (a failure inside either is caught).
        observation_pieces, episode_pieces = multi_agent_env_to_module_pieces(self.config, envs[0])
        self._observation_pieces = list(observation_pieces)
        envs = [self._wrap(env) for env in envs]
        self.env = _SubEnvs(envs)
        first = cast(MultiAgentEnv, envs[0].unwrapped)
        agents = list(first.possible_agents or first.agents)
        self.env_spaces = (
            {aid: first.get_observation_space(aid) for aid in agents},
            {aid: first.get_action_space(aid) for aid in agents},
        )
        stacking = multi_agent_learner_stacked_frames(
            self.config, observation_pieces, episode_pieces
        )
        self._learner_frames = None if stacking is None else stacking.num_frames
        self._episode_spaces = (
            dict(self.env_spaces[0])
            if stacking is None
            else {
                aid: newest_frame_space(space, stacking.num_frames)
                for aid, space in self.env_spaces[0].items()
            }
        )
        self._episode_pieces = self._build_episode_pieces(episode_pieces)
        self._needs_reset = True
        if self._callbacks.has("on_environment_created"):
            self._callbacks.fire(
                "on_environment_created",
                env_runner=self,
                metrics_logger=self.metrics,
                env=self.env,
                env_context=self.sub_env_context(0),
            )

    def _build_episode_pieces(self, pieces: list[Any]) -> ConnectorPipelineV2 | None:
        """The user's own env-to-module pieces as one pipeline, its input spaces the agents'
        spaces (after the observation pieces) as Dicts; None without such pieces. A pipeline
        whose output observation space differs is refused: the modules are built for the
        agents' spaces, and the runner reads each acting agent's observation back from its
        episode after the pieces ran (so a piece may rewrite it within its space)."""
        if not pieces:
            return None
        assert self.env_spaces is not None, "the env spaces are known first"
        obs_space = gym.spaces.Dict(self.env_spaces[0])
        pipeline = build_pipeline(pieces, obs_space, gym.spaces.Dict(self.env_spaces[1]))
        if pipeline.observation_space not in (None, obs_space):
            raise ConfigError(
                f"env_runners(env_to_module_connector=...): the pieces {pieces!r} turn the "
                f"agents' observation space {obs_space} into {pipeline.observation_space}; in "
                "a multi-agent run a user's own env-to-module pieces keep the observation "
                "spaces (per-agent rewrites that change them: FlattenObservations("
                "multi_agent=True) or a MultiAgentObservationPreprocessor)",
                MULTI_AGENT,
            )
        return pipeline

    def _run_episode_pieces(
        self, episodes: list[MultiAgentEpisode], indices: Iterable[int] = ()
    ) -> None:
        """Runs the user's own env-to-module pieces over `episodes` (as RLlib's runner does
        after each reset and step: the running episodes; and once more, without metrics, the
        episodes that just ended), then reads each acting agent's observation of sub-envs
        `indices` (whose episodes are among `episodes`) back from its episode."""
        pipeline = self._episode_pieces
        if pipeline is None or not episodes:
            return
        pipeline(
            rl_module=self.module,
            batch={},
            episodes=episodes,
            explore=self.pipeline_explore,
            shared_data=self._shared_data,
            metrics=None if all(episode.is_done for episode in episodes) else self.metrics,
        )
        for index in indices:
            episode = self._episodes[index]
            if episode is None:
                continue
            agent_episodes = episode.agent_episodes
            self._last_obs[index] = {
                agent_id: (
                    agent_episodes[agent_id].get_observations(-1)
                    if agent_id in agent_episodes and len(agent_episodes[agent_id].observations)
                    else obs
                )
                for agent_id, obs in self._last_obs[index].items()
            }

    def _run_pieces_over_running_episodes(self) -> None:
        """`_run_episode_pieces` over every sub-env's episode under way (not done)."""
        running = [
            (index, episode)
            for index, episode in enumerate(self._episodes)
            if episode is not None and not episode.is_done
        ]
        self._run_episode_pieces(
            [episode for _, episode in running], [index for index, _ in running]
        )

    def _wrap(self, env: Any) -> Any:
        """A made sub-env as the runner steps it: under its observation pieces (if any),
        in a `MultiAgentSubEnvGuard` with `restart_failed_sub_environments=True`."""
        if self._observation_pieces:
            env = ObservationPiecesEnv(env, self._observation_pieces)
        return MultiAgentSubEnvGuard(env) if self._restart_sub_envs else env

    def _recover_sub_envs(self, draining: set[int] | None = None) -> int:
        """Re-creates each sub-env whose last reset/step raised (see `MultiAgentSubEnvGuard`),
        drops its episode (no `on_episode_end`; its steps count as lost) and starts a new one
        in the new sub-env (while `draining`, the sub-env instead leaves that set: no new
        episode starts then). Returns how many sub-envs were re-created."""
        env = self.env
        assert env is not None, "sampling needs the sub-envs"
        failed_steps = 0
        for index, sub_env in enumerate(env.envs):
            error = getattr(sub_env, "failure", None)
            if error is None:
                continue
            failed_steps += int(sub_env.failed_in == "step")
            if isinstance(error, StepFailedRecreateEnvError):
                logger.debug(
                    "MultiAgentEnvRunner %d: sub-env %d asked to be re-created (%s)",
                    self.worker_index,
                    index,
                    error,
                )
            else:
                logger.error(
                    "MultiAgentEnvRunner %d: sub-env %d raised %s: %s; it is re-created and "
                    "its episode dropped (restart_failed_sub_environments=True)",
                    self.worker_index,
                    index,
                    type(error).__name__,
                    error,
                    exc_info=error,
                )
            self._fill(index)
            episode = self._episodes[index]
            # The episode's real steps (the failed step added an empty one).
            lost = 0 if episode is None else episode.env_steps() - int(sub_env.failed_in == "step")
            lost += sum(chunk.env_steps() for chunk in self._prev_chunks[index])
            self.metrics.log_value("num_env_steps_lost_lifetime", lost, reduce="lifetime_sum")
            self.metrics.log_value(
                "num_sub_environment_restarts_lifetime", 1, reduce="lifetime_sum"
            )
            try:
                sub_env.close()
            except Exception:
                pass  # a broken env may fail to close too; it is dropped either way
            context = self.sub_env_context(index).copy_with_overrides(recreated_worker=True)
            new_env = self._wrap(self._env_creator(context))
            env.envs[index] = new_env
            self._prev_chunks[index] = []
            if draining is not None:
                draining.discard(index)
                self._episodes[index] = None
                self._last_obs[index] = {}
                self._last_done[index] = set()
                continue
            self._new_episode(index)
            self._start_episode(index)
            if new_env.failure is not None:  # an env that cannot even start: the runner fails
                raise RuntimeError(
                    f"sub-env {index} raised again right after it was re-created: "
                    f"{type(new_env.failure).__name__}: {new_env.failure}"
                ) from new_env.failure
        return failed_steps

    def _build_module(self) -> Any:
        """The `MultiRLModule` of the config's policies, each module built for its agents'
        spaces (or those given), seeded by its id."""
        env = self.env.envs[0] if self.env is not None else None
        spec = self.config.get_multi_rl_module_spec(
            env=env, spaces=self.spaces, inference_only=True
        )
        module = spec.build()
        seed = self.config.seed
        if seed is not None:
            # (The default numpy modules draw their first weights unseeded when the container
            # builds them: a seeded run's runners start from the learners' seeded ones.)
            for module_id, sub_spec in spec.rl_module_specs.items():
                from_spec = getattr(sub_spec.module_class, "from_rl_module_spec", None)
                if from_spec is not None and module_id in module:
                    seeded = from_spec(sub_spec, seed=module_seed(seed, module_id))
                    module[module_id].set_weights(seeded.get_weights())
        self.spaces = {
            module_id: (sub.observation_space, sub.action_space)
            for module_id, sub in module.items()
        }
        return module

    def _build_module_to_env(self) -> None:
        """The config's module-to-env pieces, made once (kept when the sub-envs are re-made):
        RLlib's factory gets the sub-envs and the spaces (`"__env__"`, `"__env_single__"`: each
        agent's spaces as Dicts; each module id's), the pipeline's input spaces those Dicts."""
        factory = self.config.module_to_env_connector
        if factory is None or self.env is None or self._module_to_env is not None:
            return
        assert self.env_spaces is not None and self.spaces is not None, "env and module built"
        env_spaces = (gym.spaces.Dict(self.env_spaces[0]), gym.spaces.Dict(self.env_spaces[1]))
        spaces = {INPUT_ENV_SPACES: env_spaces, INPUT_ENV_SINGLE_SPACES: env_spaces, **self.spaces}
        pieces = call_module_to_env_factory(factory, self.env, spaces)
        self._module_to_env = build_pipeline(pieces, *env_spaces, setting="module_to_env_connector")

    def _check_joint_modules(self) -> None:
        """A container that runs its modules together acts through torch modules without
        recurrent state (raises ConfigError, naming the others)."""
        others = [
            f"{module_id!r} ({type(getattr(actor.module, 'rl_module', actor.module)).__name__})"
            for module_id, actor in self._actors.items()
            if not actor.torch_view or actor.stateful
        ]
        if others:
            raise ConfigError(
                f"{type(self.module).__name__} runs its modules together (it overrides the "
                "MultiRLModule's forward): the EnvRunners act through it with TorchRLModules "
                f"without recurrent state; modules {', '.join(others)} are not"
            )

    def _joint_dist_inputs(
        self, rows: dict[Any, list[tuple[int, Any]]], explore: bool
    ) -> dict[Any, tuple[np.ndarray, dict[str, np.ndarray] | None]]:
        """The distribution inputs (and other outputs) of every module in `rows` from one
        forward pass of the container (see `_joint_forward`)."""
        from trainer.torch_rl.runner_view import joint_dist_inputs

        last_obs = self._last_obs
        obs = {
            module_id: self._actors[module_id].preprocessed(
                [last_obs[index][agent_id] for index, agent_id in where]
            )
            for module_id, where in rows.items()
        }
        views = {module_id: self._actors[module_id].module for module_id in rows}
        return joint_dist_inputs(self.module, views, obs, explore)

    def _module_actions(self, module_id: Any, module: Any) -> _ModuleActions:
        """How module `module_id` acts; a `TorchRLModule` through a `TorchModuleView` (numpy
        observations in, distribution inputs out; its weights set as arrays)."""
        assert self.spaces is not None, "_build_module() sets the spaces"
        if getattr(module, "framework", None) == "torch":
            from trainer.torch_rl.runner_view import torch_view

            module = torch_view(module)
        config = self.config.get_config_for_module(module_id)
        exploration = module_exploration(
            config.get_exploration_config(),
            self.spaces[module_id][1],
            type_chosen="type" in config.exploration_config,
            worker_index=self.worker_index,
            num_workers=self.num_workers,
        )
        return _ModuleActions(module, exploration, self._rng, config)

    # -- episodes ----------------------------------------------------------------------------
    def _event_kwargs(self, index: int) -> dict[str, Any]:
        return {
            "episode": self._episodes[index],
            "env_runner": self,
            "metrics_logger": self.metrics,
            "env": self.env,
            "rl_module": self.module,
            "env_index": index,
        }

    def _new_episode(self, index: int) -> None:
        assert self.env_spaces is not None, "make_env() sets the env spaces"
        self._episodes[index] = MultiAgentEpisode(
            observation_space=dict(self._episode_spaces),
            action_space=dict(self.env_spaces[1]),
            agent_to_module_mapping_fn=self.config.policy_mapping_fn,
        )
        self._prev_chunks[index] = []
        self._columns[index] = None
        #: Each agent's module in this episode (its `module_for`, asked once).
        self._agent_modules[index] = {}
        if self._callbacks.has("on_episode_created"):
            self._callbacks.fire_with("on_episode_created", self._event_kwargs(index))

    def _start_episode(self, index: int, seed: int | None = None) -> None:
        """Resets sub-env `index` into its (new) episode; fires `on_episode_start`."""
        assert self.env is not None, "sampling needs the sub-envs"
        result = self.env.envs[index].reset(seed=seed)
        episode = self._episodes[index]
        assert episode is not None, "_new_episode() comes first"
        try:
            obs, infos = result
            recorded = self.recorded_observations(obs)
            if self._records_by_column():
                self._columns[index] = AgentColumns(episode, recorded, infos)
            else:
                episode.add_env_reset(observations=recorded, infos=infos)
        except Exception as error:
            explained = self._explained(index, result, "reset()")
            if explained is None:
                raise
            raise explained from error
        self._last_obs[index] = obs
        self._last_done[index] = _NONE_DONE
        if self._callbacks.has("on_episode_start"):
            self._callbacks.fire_with("on_episode_start", self._event_kwargs(index))

    def recorded_observations(self, observations: dict) -> dict:
        """What the episodes record of the agents' `observations` (the module's inputs): each
        agent's newest frame where the learner stacks the frames, else themselves."""
        if self._learner_frames is None:
            return observations
        return newest_frames(observations, self._learner_frames)

    def _records_by_column(self) -> bool:
        """Whether new episodes go into `AgentColumns` (no callback reads an episode's data
        while it runs)."""
        callbacks = self._callbacks
        if any(actor.stateful for actor in self._actors.values()):
            return False  # a recurrent module reads its agents' episodes at every step
        if self._module_to_env is not None or self._episode_pieces is not None:
            return False  # their pieces read the episodes at every step
        return not (callbacks.has("on_episode_start") or callbacks.has("on_episode_step"))

    def _fill(self, index: int) -> None:
        """Sub-env `index`'s columns (if any) into its episode object, and their agent steps
        into the sample's counts."""
        columns = self._columns[index]
        if columns is None:
            return
        self._columns[index] = None
        episode = self._episodes[index]
        assert episode is not None, "columns belong to an episode"
        # (An agent of the reset without steps yet is not counted, as step by step.)
        stepped = {agent_id: steps for agent_id, steps in columns.fill(episode).items() if steps}
        self._count_agent_steps(index, stepped, stepped.values())

    def _fill_all(self) -> None:
        for index in range(self.num_envs):
            self._fill(index)

    def _explained(self, index: int, result: Any, method: str) -> EnvDataError | None:
        """The error for a sub-env `result` that failed to go into its episode, saying what
        the env returned wrong (RLlib's env checker's words), or None when the result looks
        right (the failure was elsewhere). Runs only after a failure."""
        assert self.env is not None, "sampling needs the sub-envs"
        problem = result_problem(self.env.envs[index], result, method)
        if problem is None:
            return None
        return EnvDataError(f"EnvRunner {self.worker_index}: sub-env {index}: {problem}")

    def _explained_observations(
        self, where: list[tuple[int, Any]], obs_rows: list[Any]
    ) -> EnvDataError | None:
        """The error for the first of `obs_rows` (the observations of `where`'s (sub-env,
        agent) pairs) that does not fit its agent's observation space in shape or kind, or
        None. Runs only after a module failed to take the batch."""
        assert self.env is not None, "sampling needs the sub-envs"
        for (index, agent_id), observation in zip(where, obs_rows, strict=True):
            space = self.env.envs[index].get_observation_space(agent_id)
            if isinstance(space, gym.spaces.Box):
                fits = (
                    np.shape(observation) == space.shape
                    and np.asarray(observation).dtype.kind in "fiub"
                )
            else:
                fits = space.contains(observation)
            if not fits:
                return EnvDataError(
                    f"EnvRunner {self.worker_index}: sub-env {index} returned an observation "
                    f"for agent {agent_id!r} that is not in its observation space {space}: "
                    f"{observation!r:.80} (a {type(observation).__name__}, shape "
                    f"{np.shape(observation)})"
                )
        return None

    def _reset_all(self) -> None:
        for index in range(self.num_envs):
            self._new_episode(index)
        seed = self._env_seed
        self._env_seed = None  # seed once; later resets continue the sub-envs' own RNGs
        for index in range(self.num_envs):
            self._start_episode(index, None if seed is None else seed + index)
        if self._restart_sub_envs:
            self._recover_sub_envs()
        self._needs_reset = False
        if self._episode_pieces is not None:
            self._run_pieces_over_running_episodes()

    # -- sampling ----------------------------------------------------------------------------
    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[MultiAgentEpisode]:
        """Steps the sub-envs and returns episodes: `num_timesteps` (env or agent steps, as
        `count_steps_by` says; unfinished episodes are cut and continue next call),
        `num_episodes` finished episodes, or by default `rollout_fragment_length` per sub-env
        (`batch_mode="complete_episodes"`: whole episodes)."""
        return self._sample_call(num_timesteps, num_episodes, explore, random_actions, force_reset)

    def _sample_columnar(
        self,
        num_timesteps: int,
        explore: bool,
        *,
        random_actions: bool = False,
        num_episodes: int | None = None,
        complete: bool = False,
    ) -> list[MultiAgentEpisode]:
        """The rollout loop over a `MultiAgentRecorder` (`runners/multi_agent_recorder.py`)."""
        return collect_rollout(
            self,
            MultiAgentRecorder(self),
            num_timesteps,
            explore,
            random_actions=random_actions,
            num_episodes=num_episodes,
            complete=complete,
        )

    def _random_actions(self, acting: dict[int, list[Any]]) -> StepActions:
        """Actions drawn from each acting agent's action space (no model outputs)."""
        env = self.env
        assert env is not None, "sampling needs the sub-envs"
        actions: dict[int, list] = {}
        for index, agents in acting.items():
            sub_env = env.envs[index].unwrapped
            actions[index] = [sub_env.get_action_space(agent_id).sample() for agent_id in agents]
        return StepActions(
            acting,
            actions,
            {
                index: dict(zip(agents, actions[index], strict=True))
                for index, agents in acting.items()
            },
            None,
            None,
            {index: {} for index in acting},
        )

    def _rows_by_module(self, acting: dict[int, list[Any]]) -> dict[Any, list[tuple[int, Any]]]:
        """Each acting module's rows, (sub-env, agent) pairs in acting order: one forward
        pass per module over them."""
        rows: dict[Any, list[tuple[int, Any]]] = defaultdict(list)
        for index, agents in acting.items():
            modules = self._agent_modules[index]
            for agent_id in agents:
                module_id = modules.get(agent_id)
                if module_id is None:
                    module_id = modules[agent_id] = self._module_of(index, agent_id)
                rows[module_id].append((index, agent_id))
        return rows

    def _module_actions_of(self, acting: dict[int, list[Any]], explore: bool) -> StepActions:
        """The acting agents' actions and model outputs from their modules: the common step
        (every acting agent with one module without recurrent state, no module-to-env pieces,
        no container running the modules together) in one forward pass handed out per sub-env
        (`_one_module_actions`); any other by module and row (`_actions_by_rows`)."""
        if self._module_to_env is None and not self._joint_forward:
            step = self._one_module_actions(acting, explore)
            if step is not None:
                return step
        return self._actions_by_rows(acting, explore)

    def _one_module_actions(
        self, acting: dict[int, list[Any]], explore: bool
    ) -> StepActions | None:
        """`_module_actions_of` where every acting agent maps to one module without recurrent
        state (None otherwise): one forward pass over the agents' rows in acting order (by
        sub-env, then agent), its outputs handed to each sub-env's agents as slices of that
        order. Agents not yet mapped in their episode are mapped here, in acting order (up to
        the first agent of a second module: `_rows_by_module` maps the rest in that order)."""
        last_obs, agent_modules = self._last_obs, self._agent_modules
        sole = _NO_MODULE
        obs_rows: list[Any] = []
        for index, agents in acting.items():
            modules, obs = agent_modules[index], last_obs[index]
            for agent_id in agents:
                module_id = modules.get(agent_id)
                if module_id is None:
                    module_id = modules[agent_id] = self._module_of(index, agent_id)
                if module_id != sole:
                    if sole is not _NO_MODULE:
                        return None
                    sole = module_id
                obs_rows.append(obs[agent_id])
        if sole is _NO_MODULE:
            return None  # no agent acts
        actor = self._actors[sole]
        if actor.stateful:
            return None
        try:
            acted, for_env, logp, module_dist_inputs, extras = actor(
                obs_rows, explore, self.global_timestep
            )
        except (ValueError, TypeError) as error:
            where = [(index, agent_id) for index, agents in acting.items() for agent_id in agents]
            self._raise_explained(where, obs_rows, error)
        plain = logp is not None and module_dist_inputs is not None and extras is None
        actions: dict[int, list] = {}
        env_actions: dict[int, dict] = {}
        logps: dict[int, list] = {}
        dist_inputs: dict[int, list] = {}
        # (Rows by index: iterating an array ends in an IndexError, whose message costs.)
        dist_rows = [module_dist_inputs[k] for k in range(len(obs_rows))] if plain else []
        start = 0
        for index, agents in acting.items():
            end = start + len(agents)
            actions[index] = acted[start:end]
            env_actions[index] = dict(zip(agents, for_env[start:end], strict=True))
            if plain:
                assert logp is not None
                logps[index] = logp[start:end]
                dist_inputs[index] = dist_rows[start:end]
            start = end
        if plain:
            return StepActions(acting, actions, env_actions, logps, dist_inputs, None)
        where = [(index, agent_id) for index, agents in acting.items() for agent_id in agents]
        no_outputs: dict[int, dict] = {index: {} for index in acting}
        outputs = self._outputs_per_agent(
            acting,
            no_outputs,
            no_outputs,
            [(where, _drawn_outputs(logp, module_dist_inputs, None, extras))],
        )
        return StepActions(acting, actions, env_actions, None, None, outputs)

    def _actions_by_rows(self, acting: dict[int, list[Any]], explore: bool) -> StepActions:
        """`_module_actions_of` for any step: a forward pass per module (or the container's
        over all, `_joint_forward`), the config's module-to-env pieces, recurrent modules'
        states; the outputs handed out row by row."""
        indices = list(acting)
        actions: dict[int, dict] = {index: {} for index in indices}
        env_actions: dict[int, dict] = {index: {} for index in indices}
        # The action draw's model outputs (log-prob and distribution inputs per agent), or,
        # once a module returns anything else, every agent's outputs as one dict.
        logps: dict[int, dict] = {index: {} for index in indices}
        dist_inputs: dict[int, dict] = {index: {} for index in indices}
        outputs: dict[int, dict] | None = None
        rows = self._rows_by_module(acting)
        last_obs = self._last_obs
        others: list[tuple[list[tuple[int, Any]], dict[str, Any]]] = []
        joint = self._joint_dist_inputs(rows, explore) if self._joint_forward else None
        through_pieces = (
            None
            if self._module_to_env is None
            else self._outputs_through_pieces(rows, explore, joint)
        )
        for module_id, where in rows.items():
            obs_rows = [last_obs[index][agent_id] for index, agent_id in where]
            actor = self._actors[module_id]
            logp: list[float] | None
            state_rows = None
            try:
                if through_pieces is None and joint is None and not actor.stateful:
                    # The plain path (with its small-batch draw): forward, then draw.
                    acted, for_env, logp, module_dist_inputs, extras = actor(
                        obs_rows, explore, self.global_timestep
                    )
                else:
                    output = (
                        through_pieces[module_id]
                        if through_pieces is not None
                        else self._module_output(module_id, where, obs_rows, explore, joint)
                    )
                    state_rows, extras = output.state_rows, output.extras
                    acted, for_env, logp, module_dist_inputs = actor.draw(
                        output, explore, self.global_timestep
                    )
            except (ValueError, TypeError) as error:
                self._raise_explained(where, obs_rows, error)
            for k, (index, agent_id) in enumerate(where):
                actions[index][agent_id] = acted[k]
                env_actions[index][agent_id] = for_env[k]
            if (
                logp is not None
                and module_dist_inputs is not None
                and state_rows is None
                and extras is None
            ):
                for k, (index, agent_id) in enumerate(where):
                    logps[index][agent_id] = logp[k]
                    dist_inputs[index][agent_id] = module_dist_inputs[k]
            else:
                others.append((where, _drawn_outputs(logp, module_dist_inputs, state_rows, extras)))
        agents = {index: list(by_agent) for index, by_agent in actions.items()}
        action_rows = {index: list(by_agent.values()) for index, by_agent in actions.items()}
        if others:
            outputs = self._outputs_per_agent(indices, logps, dist_inputs, others)
            return StepActions(agents, action_rows, env_actions, None, None, outputs)
        return StepActions(
            agents,
            action_rows,
            env_actions,
            {index: [logps[index][a] for a in agents[index]] for index in indices},
            {index: [dist_inputs[index][a] for a in agents[index]] for index in indices},
            None,
        )

    def _module_output(
        self,
        module_id: Any,
        where: list[tuple[int, Any]],
        obs_rows: list[Any],
        explore: bool,
        joint: dict[Any, tuple[np.ndarray, dict[str, np.ndarray] | None]] | None,
    ) -> ModuleOutput:
        """Module `module_id`'s forward pass over its agents' rows (`where`, observations
        `obs_rows`): the container's distribution inputs when it ran every module together
        (`joint`), else the module's own (a recurrent one's from each agent's last state)."""
        if joint is not None:
            inputs, extras = joint[module_id]
            return ModuleOutput(inputs, extras=extras)
        actor = self._actors[module_id]
        agent_episodes = (
            [
                self._episodes[index].agent_episodes.get(agent_id)  # type: ignore[union-attr]
                for index, agent_id in where
            ]
            if actor.stateful
            else None
        )
        return actor.forward(obs_rows, explore, agent_episodes)

    def _raise_explained(
        self, where: list[tuple[int, Any]], obs_rows: list[Any], error: Exception
    ) -> NoReturn:
        """Re-raises a module's `error` over `obs_rows` as the observations' problem when they
        have one (an `EnvDataError` naming the agent and sub-env), else as it is."""
        explained = self._explained_observations(where, obs_rows)
        if explained is None:
            raise error
        raise explained from error

    def _outputs_through_pieces(
        self,
        rows: dict[Any, list[tuple[int, Any]]],
        explore: bool,
        joint: dict[Any, tuple[np.ndarray, dict[str, np.ndarray] | None]] | None,
    ) -> dict[Any, ModuleOutput]:
        """Every acting module's forward pass (or the container's, `joint`), then the config's
        module-to-env pieces over all of them at once, as RLlib's MultiAgentEnvRunner runs
        them: `batch[module_id]` holds the module's rows (its agents' in `rows`' order: by
        sub-env, then agent), `episodes` every sub-env's MultiAgentEpisode. Returns what the
        pieces left for each module (see `trainer.runners.module_to_env_pieces`)."""
        assert self._module_to_env is not None, "called only with module-to-env pieces"
        outputs: dict[Any, ModuleOutput] = {}
        batch: dict[Any, dict[str, Any]] = {}
        for module_id, where in rows.items():
            actor = self._actors[module_id]
            obs_rows = [self._last_obs[index][agent_id] for index, agent_id in where]
            try:
                output = self._module_output(module_id, where, obs_rows, explore, joint)
            except (ValueError, TypeError) as error:
                self._raise_explained(where, obs_rows, error)
            outputs[module_id] = output
            batch[module_id] = for_pieces(
                output.dist_inputs, output.acted, actor.torch_view, output.extras
            )
        out = self._module_to_env(
            rl_module=self.module,
            batch=batch,
            episodes=list(self._episodes),
            explore=explore,
            shared_data={},
            metrics=self.metrics,
        )
        for module_id, output in outputs.items():
            actor = self._actors[module_id]
            module_out = out.get(module_id)
            if not isinstance(module_out, dict):
                raise ValueError(
                    f"the module_to_env_connector pieces left no batch for module {module_id!r} "
                    f"(batch[{module_id!r}] is {type(module_out).__name__}): each acting "
                    "module's outputs stay under its id"
                )
            module = actor.module
            dist_inputs, acted, extras = pieces_left(
                module_out,
                actor.torch_view,
                getattr(module, "dist", None) if actor.numpy_default else None,
                module.spaces.action_layout if actor.numpy_default else None,
                rows=len(rows[module_id]),
            )
            if dist_inputs is None and (acted is None or actor.numpy_default):
                raise missing_dist_inputs(f"module {module_id!r}'s batch")
            outputs[module_id] = output._replace(
                dist_inputs=dist_inputs, acted=acted, extras=extras
            )
        return outputs

    @staticmethod
    def _outputs_per_agent(
        indices: Any,
        logps: dict[int, dict],
        dist_inputs: dict[int, dict],
        others: list[tuple[list[tuple[int, Any]], dict[str, Any]]],
    ) -> dict[int, dict]:
        """Every acting agent's model outputs as one dict (`extra_model_outputs`), for a step
        in which a module (a user's RLModule, a recurrent one with its `Columns.STATE_OUT`)
        gave other than the action draw's two (`logps` and `dist_inputs`, by sub-env and
        agent): `others` holds the rest, per module its rows (`where`) and its outputs by
        key (`_drawn_outputs`), each passed on by key, row by row."""
        outputs: dict[int, dict] = {index: {} for index in indices}
        for index in indices:
            for agent_id, logp in logps[index].items():
                outputs[index][agent_id] = {
                    ACTION_LOGP: logp,
                    ACTION_DIST_INPUTS: dist_inputs[index][agent_id],
                }
        for where, by_key in others:
            given = [(key, rows) for key, rows in by_key.items() if rows is not None]
            for k, (index, agent_id) in enumerate(where):
                outputs[index][agent_id] = {key: rows[k] for key, rows in given}
        return outputs

    def _module_of(self, index: int, agent_id: Any) -> Any:
        """The module of `agent_id` in sub-env `index`'s episode (its `module_for`)."""
        episode = self._episodes[index]
        assert episode is not None, "every sub-env has an episode while sampling"
        return episode.module_for(agent_id)

    def _count_agent_steps(self, index: int, obs: dict, steps: Iterable[int] | None = None) -> None:
        """Counts the steps of each agent in `obs` (`steps`: one per agent, in its order;
        by default a step each), logged once per sample (see `_log_sample_metrics`: a metric
        call per agent and step cost more than the step)."""
        counts = self._agent_steps
        modules = self._agent_modules[index]
        for agent_id, agent_steps in zip(obs, repeat(1) if steps is None else steps, strict=False):
            module_id = modules.get(agent_id)
            if module_id is None:
                module_id = modules[agent_id] = self._module_of(index, agent_id)
            counts[agent_id, module_id] += agent_steps

    def _finish_episode(self, index: int) -> None:
        """The episode of sub-env `index` ended: fires `on_episode_end` (with its earlier
        chunks) and keeps it for the metrics."""
        episode = self._episodes[index]
        assert episode is not None
        prev_chunks = self._prev_chunks[index]
        self._prev_chunks[index] = []
        if self._callbacks.has("on_episode_end"):
            self._callbacks.fire_with(
                "on_episode_end", {**self._event_kwargs(index), "prev_episode_chunks": prev_chunks}
            )
        self._ended.append((episode, prev_chunks))

    # -- metrics -----------------------------------------------------------------------------
    def _log_episode_metrics(self) -> None:
        """Logs each ended episode's return, length, duration and its per-agent and
        per-module returns (RLlib's keys), its earlier chunks included: one `log_values` per
        metric with its values in episode order (a `log_value` per metric, agent and episode
        cost more than the episode's steps), the metrics made in the order per-episode
        `log_dict` calls would make them."""
        if not self._ended:
            return
        window = max(
            1,
            math.ceil(
                self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)
            ),
        )
        #: Per (metric key, reduce): its values, one per episode (first seen, first made).
        values: dict[tuple[Any, str], list] = {}
        for episode, prev_chunks in self._ended:
            for key_and_reduce, value in _episode_metric_values(episode, prev_chunks):
                found = values.get(key_and_reduce)
                if found is None:
                    values[key_and_reduce] = [value]
                else:
                    found.append(value)
        self._ended.clear()
        log_values = self.metrics.log_values
        for (key, reduce), metric_values in values.items():
            log_values(key, metric_values, reduce=reduce, window=window)

    def _log_sample_metrics(self, env_steps: int, episodes: int) -> None:
        self._log_episode_metrics()
        log = self.metrics.log_value
        by_agent: Counter[str] = Counter()
        by_module: Counter[str] = Counter()
        for (agent_id, module_id), count in self._agent_steps.items():
            by_agent[str(agent_id)] += count
            by_module[str(module_id)] += count
        self._agent_steps.clear()
        for agent_id, count in by_agent.items():
            log((NUM_AGENT_STEPS_SAMPLED, agent_id), count, reduce="sum")
            log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, agent_id), count, reduce="lifetime_sum")
        for module_id, count in by_module.items():
            log((NUM_MODULE_STEPS_SAMPLED, module_id), count, reduce="sum")
            log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), count, reduce="lifetime_sum")
        log(NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True)
        log(NUM_EPISODES, episodes, reduce="sum")
        log(NUM_EPISODES_LIFETIME, episodes, reduce="lifetime_sum")

    def get_metrics(self) -> dict:
        """This runner's metrics reduced (see `EnvRunner.get_metrics`)."""
        return self.metrics.reduce()

    def sample_with_metrics(self, **sample_kwargs: Any) -> tuple[list, dict, dict | None]:
        """`sample()`, `get_metrics()` and the connector state in one request."""
        return self.sample(**sample_kwargs), self.get_metrics(), self.get_connector_state()

    def sample_metrics_only(self, **sample_kwargs: Any) -> dict:
        self.sample(**sample_kwargs)
        return self.get_metrics()

    # -- weights and state -------------------------------------------------------------------
    def get_weights(self, modules: Any = None) -> dict[Any, dict[str, np.ndarray]]:
        """`{module_id: weights}` of the modules with weights (all, or those in `modules`)."""
        wanted = None if modules is None else set(modules)
        return {
            module_id: module.get_weights()
            for module_id, module in self._weighted_modules().items()
            if (wanted is None or module_id in wanted) and hasattr(module, "get_weights")
        }

    def _weighted_modules(self) -> dict[Any, Any]:
        """Each module as its weights are read and set: a torch module's view (weights as
        arrays), the module itself otherwise."""
        return {module_id: actor.module for module_id, actor in self._actors.items()}

    def set_weights(
        self,
        weights: dict[Any, dict[str, np.ndarray]],
        global_timestep: int | None = None,
        connector_state: dict | None = None,
        *,
        global_vars: dict | None = None,
        weights_seq_no: int | None = None,
    ) -> None:
        """Sets the weights of the modules in `weights` (`{module_id: weights}`); others keep
        theirs. RLlib's `global_vars` (its "timestep") sets the global timestep too;
        `weights_seq_no` is RLlib's version stamp of the weights, which no runner here
        compares (the weights always replace the runner's)."""
        if global_timestep is None and global_vars is not None:
            global_timestep = global_vars.get("timestep")
        for module_id, module_weights in weights.items():
            if module_id not in self.module:
                raise KeyError(
                    f"set_weights(): no module {module_id!r} here (modules: "
                    f"{sorted(map(str, self.module.keys()))})"
                )
            self._actors[module_id].module.set_weights(module_weights)
        if global_timestep is not None:
            self.global_timestep = int(global_timestep)
        self.set_connector_state(connector_state)

    def get_state(
        self,
        components: Any = None,
        *,
        not_components: Any = None,
        include_weights: bool = True,
        include_env: bool = True,
        **kwargs: Any,
    ) -> dict:
        """The runner's RNG, global timestep, each module's exploration state, metrics,
        (with `include_weights`) `{module_id: weights}` and (with `include_env`) where
        sampling stands ("sampling": the sub-envs' state, the running episodes; see
        `trainer.runners.multi_agent_runner_state`), so a restored runner continues exactly.
        `components` / `not_components` keep or drop top-level keys (RLlib's Checkpointable
        arguments)."""
        state: dict[str, Any] = {
            "rng": generator_state(self._rng),
            "global_timestep": self.global_timestep,
            "exploration": {
                str(module_id): actor.exploration.get_state()
                for module_id, actor in self._actors.items()
            },
            "metrics": self.metrics.get_state(),
        }
        if include_weights:
            state[RL_MODULE_STATE] = {str(k): v for k, v in self.get_weights().items()}
        connector_state = self.get_connector_state()
        if connector_state is not None:
            state["connector_state"] = connector_state
        if include_env:
            state["sampling"] = self._sampling_state()
        return {
            **select_components(state, components, not_components),
            **connector_components(self, components, not_components),
        }

    def check_state(self, state: Any, where: str = "env_runner") -> None:
        """Raises `StateError` unless `state` is one `get_state()` of such a runner wrote (or
        a part of one); nothing changes."""
        require_map(state, where)
        unknown = sorted(set(state) - _STATE_KEYS)
        if unknown:
            raise StateError(where, f"has keys a multi-agent runner state does not: {unknown[:4]}")
        if "rng" in state:
            require_generator_state(state["rng"], f"{where}['rng']")
        if "global_timestep" in state:
            require_int(state["global_timestep"], f"{where}['global_timestep']")
        if WEIGHTS_SEQ_NO in state:
            require_int(state[WEIGHTS_SEQ_NO], f"{where}[{WEIGHTS_SEQ_NO!r}]")
        if RL_MODULE_STATE in state:
            weights = require_map(state[RL_MODULE_STATE], f"{where}[{RL_MODULE_STATE!r}]")
            by_name = {str(mid): module for mid, module in self._weighted_modules().items()}
            for name, module_weights in weights.items():
                if name not in by_name:
                    raise StateError(f"{where}[{RL_MODULE_STATE!r}]", f"no module {name!r} here")
                by_name[name].check_weights(
                    module_weights, f"{where}[{RL_MODULE_STATE!r}][{name!r}]"
                )
        if "metrics" in state:
            MetricsLogger.check_state(
                state["metrics"], f"{where}['metrics']", self.config.stats_cls_lookup
            )
        if state.get("connector_state") is not None:
            require_map(state["connector_state"], f"{where}['connector_state']")
            if self.env_to_module is None:
                raise StateError(
                    f"{where}['connector_state']",
                    "is given, and this runner has no stateful env-to-module piece",
                )
        if "sampling" in state:
            check_sampling_state(state["sampling"], f"{where}['sampling']")
        if "exploration" in state:
            explorations = require_map(state["exploration"], f"{where}['exploration']")
            by_name = {str(module_id): actor for module_id, actor in self._actors.items()}
            for name, exploration_state in explorations.items():
                if name in by_name:
                    check_loads(
                        by_name[name].exploration,
                        exploration_state,
                        f"{where}['exploration'][{name!r}]",
                    )

    def set_state(self, state: dict) -> None:
        """Takes back what `get_state()` returned (any subset), after `check_state`; the
        group's restart state (weights, global timestep, connector state) too."""
        self.check_state(state)
        if "rng" in state:
            set_generator_state(self._rng, state["rng"])
        if RL_MODULE_STATE in state and weights_are_new(self, state):
            by_name = {str(module_id): module_id for module_id in self.module.keys()}
            self.set_weights(
                {by_name[name]: weights for name, weights in state[RL_MODULE_STATE].items()}
            )
        if "global_timestep" in state:
            self.global_timestep = int(state["global_timestep"])
        if state.get("connector_state") is not None:
            self.set_connector_state(state["connector_state"])
        set_connector_components(self, state)
        if "exploration" in state:
            for module_id, actor in self._actors.items():
                if str(module_id) in state["exploration"]:
                    actor.exploration.set_state(state["exploration"][str(module_id)])
        if "metrics" in state:
            self.metrics.set_state(state["metrics"])
            self._ended.clear()
        if "sampling" in state:
            self._restore_sampling(state["sampling"])
        else:
            self._needs_reset = True

    # -- sampling state (exact resume) -------------------------------------------------------
    def _sampling_state(self) -> dict:
        """Where sampling stands (`trainer.runners.multi_agent_runner_state.SAMPLING_KEYS`)."""
        state: dict[str, Any] = {
            "needs_reset": self._needs_reset or self.env is None,
            "env_seed": self._env_seed,
            "sub_envs": [],
            "uncaptured": {},
            "observations": [],
            "done_agents": [],
            "episodes": [],
            "prev_chunks": [],
        }
        if state["needs_reset"]:
            return state  # the next sample starts new episodes anyway
        assert self.env is not None
        self._fill_all()
        for index, sub_env in enumerate(self.env.envs):
            captured, reason = capture_multi_agent_env_state(sub_env)
            state["sub_envs"].append(captured)
            if reason is not None:
                state["uncaptured"][str(index)] = reason
        state["observations"] = [[[a, o] for a, o in obs.items()] for obs in self._last_obs]
        state["done_agents"] = [list(done) for done in self._last_done]
        state["episodes"] = [None if e is None else e.get_state() for e in self._episodes]
        state["prev_chunks"] = [[c.get_state() for c in chunks] for chunks in self._prev_chunks]
        return state

    def _restore_sampling(self, state: dict) -> None:
        """Puts the sub-envs, the agents' last observations and the running episodes back; a
        sub-env whose state was not captured (or does not fit) starts a new episode, with a
        warning."""
        self._env_seed = state["env_seed"]
        self._needs_reset = True
        if state["needs_reset"] or self.env is None:
            return
        if len(state["sub_envs"]) != self.num_envs:
            logger.warning(
                "MultiAgentEnvRunner %d: the checkpoint has %d sub-envs, this runner %d; all "
                "episodes restart",
                self.worker_index,
                len(state["sub_envs"]),
                self.num_envs,
            )
            return
        mapping_fn = self.config.policy_mapping_fn
        restart = []
        for index, sub_env in enumerate(self.env.envs):
            captured = state["sub_envs"][index]
            reason = (
                state["uncaptured"].get(str(index), "not captured")
                if captured is None
                else restore_multi_agent_env_state(sub_env, captured)
            )
            if reason is not None:
                restart.append(index)
                logger.warning(
                    "MultiAgentEnvRunner %d, sub-env %d: its state could not be restored (%s); "
                    "its episode restarts",
                    self.worker_index,
                    index,
                    reason,
                )
                continue
            self._episodes[index] = resumed_episode(state["episodes"][index], mapping_fn)
            self._columns[index] = None
            self._last_obs[index] = dict(state["observations"][index])
            self._last_done[index] = set(state["done_agents"][index])
            self._prev_chunks[index] = [
                resumed_episode(chunk, mapping_fn) for chunk in state["prev_chunks"][index]
            ]
        self._needs_reset = False
        for index in restart:
            self._new_episode(index)
            self._start_episode(index)

    # -- modules added and removed at run time (Algorithm.add_module / remove_module) --------
    def add_module(self, change: Any) -> None:
        """Applies `change` (a `trainer.algorithms.module_changes.ModuleChange` that adds a
        module) to this runner's config, then builds the module as the config now describes it
        and acts with it from now on. Episodes under way keep their agents' modules; new
        episodes map agents with the (new) mapping function."""
        change.apply_to(self.config)
        module_id = change.module_id
        env = self.env.envs[0] if self.env is not None else None
        spec = self.config.get_multi_rl_module_spec(
            env=env, spaces=self.spaces, inference_only=True
        ).rl_module_specs[module_id]
        module = spec.build()
        self.module.add_module(module_id, module, override=True)
        assert self.spaces is not None, "the module is built in __init__"
        self.spaces[module_id] = (module.observation_space, module.action_space)
        self._actors[module_id] = self._module_actions(module_id, module)

    def remove_module(self, change: Any) -> None:
        """Applies `change` (a `ModuleChange` that removes a module) to this runner's config and
        drops the module. Every episode starts anew at the next sample (as RLlib forces a
        reset), so no agent acts with a module that is gone."""
        change.apply_to(self.config)
        module_id = change.module_id
        self.module.remove_module(module_id, raise_err_if_not_found=False)
        self._actors.pop(module_id, None)
        if self.spaces is not None:
            self.spaces.pop(module_id, None)
        self._needs_reset = True

    def abandon_episodes(self) -> None:
        """After a sample was interrupted mid-step: the next sample starts new episodes."""
        self._needs_reset = True

    # -- connectors: the env-to-module pieces' state (a MeanStdFilter's) ---------------------
    @property
    def env_to_module(self) -> ConnectorPipelineV2 | None:
        """The env-to-module pieces (the observation pieces, then a user's own) as one
        pipeline when one of them keeps a state (a `MeanStdFilter(multi_agent=True)`'s
        statistics, merged across runners), else None."""
        episode_pieces = getattr(self, "_episode_pieces", None)
        pieces = [
            *getattr(self, "_observation_pieces", []),
            *([] if episode_pieces is None else episode_pieces.connectors),
        ]
        if not any(piece.is_stateful for piece in pieces):
            return None
        # Made from the current pieces each time (no input spaces: nothing is computed), so
        # pieces re-made by `make_env()` are the ones read and set.
        return ConnectorPipelineV2(connectors=pieces)

    def get_connector_state(self) -> dict | None:
        pipeline = self.env_to_module
        return None if pipeline is None else pipeline.get_state()

    def set_connector_state(self, state: dict | None) -> None:
        if state is None:
            return
        pipeline = self.env_to_module
        if pipeline is None:
            raise ValueError(
                "this MultiAgentEnvRunner has no stateful env-to-module piece to take a "
                "connector state"
            )
        pipeline.set_state(state)

    # -- the rest of RLlib's EnvRunner API ---------------------------------------------------
    def sample_get_state_and_metrics(self, **sample_kwargs: Any) -> tuple[list, Any, dict]:
        """`sample()`, then the connector state and the metrics, in one call (RLlib's, for
        asynchronous algorithms)."""
        episodes = self.sample(**sample_kwargs)
        return episodes, self.get_connector_state(), self.get_metrics()

    def get_tasks(self) -> None:
        return None

    def get_spaces(self) -> dict[Any, tuple[gym.Space, gym.Space]]:
        """Each module's (observation space, action space)."""
        assert self.spaces is not None, "the module is built in __init__"
        return dict(self.spaces)

    def ping(self) -> str:
        return "pong"

    def assert_healthy(self) -> None:
        assert self.module is not None

    @property
    def pid(self) -> int:
        return os.getpid()

    def apply(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    def foreach_env(self, func: Callable[[gym.Env], Any]) -> list:
        assert self.env is not None
        return [func(sub_env) for sub_env in self.env.envs]

    def stop(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


def _episode_metric_values(
    episode: MultiAgentEpisode, prev_chunks: list[MultiAgentEpisode]
) -> list[tuple[tuple[Any, str], Any]]:
    """An ended episode's metrics, its earlier chunks included, as ((key, reduce), value)
    pairs in the order RLlib's runner logs them: length, return and duration, each agent's
    return and steps and each module's return (means), then the length and return again as
    minimum and maximum."""
    length, ret, duration = 0, 0.0, 0.0
    agent_returns: dict[str, float] = defaultdict(float)
    agent_steps: dict[str, int] = defaultdict(int)
    module_returns: dict[str, float] = defaultdict(float)
    for part in [*prev_chunks, episode]:
        length += part.env_steps()
        ret += part.get_return()
        duration += part.get_duration_s()
        for agent_id, agent_episode in part.agent_episodes.items():
            agent_return = agent_episode.get_return()
            agent_returns[str(agent_id)] += agent_return
            agent_steps[str(agent_id)] += len(agent_episode)
            module_returns[str(agent_episode.module_id)] += agent_return
    pairs: list[tuple[tuple[Any, str], Any]] = [
        ((EPISODE_LEN_MEAN, "mean"), length),
        ((EPISODE_RETURN_MEAN, "mean"), ret),
        ((EPISODE_DURATION_SEC_MEAN, "mean"), duration),
    ]
    for group, by_id in (
        (EPISODE_AGENT_RETURN_MEAN, agent_returns),
        (EPISODE_AGENT_STEPS, agent_steps),
        (EPISODE_MODULE_RETURN_MEAN, module_returns),
    ):
        pairs.extend((((group, name), "mean"), value) for name, value in by_id.items())
    pairs += [
        ((EPISODE_LEN_MIN, "min"), length),
        ((EPISODE_RETURN_MIN, "min"), ret),
        ((EPISODE_LEN_MAX, "max"), length),
        ((EPISODE_RETURN_MAX, "max"), ret),
    ]
    return pairs


# RLlib's EnvRunner is the base of both kinds of runner: a MultiAgentEnvRunner is an EnvRunner.
EnvRunner.register(MultiAgentEnvRunner)


class _SubEnvs(VectorMultiAgentEnv):
    """The runner's MultiAgentEnvs (`envs`), stepped one after the other ("sync", RLlib's
    SyncVectorMultiAgentEnv without its autoreset: the runner resets a sub-env whose episode
    ended). The runner steps `envs[i]` itself; `reset()` / `step()` serve callbacks."""

    envs: list[Any]  # always a list here (None only on the base class)

    def __init__(self, envs: list[Any]) -> None:
        self.envs = envs
        self.num_envs = len(envs)
        self.created_s = time.time()
        first = envs[0].unwrapped
        agents = list(first.possible_agents or first.agents)
        self.single_observation_spaces = {
            agent_id: first.get_observation_space(agent_id) for agent_id in agents
        }
        self.single_action_spaces = {
            agent_id: first.get_action_space(agent_id) for agent_id in agents
        }
        self.single_observation_space = gym.spaces.Dict(self.single_observation_spaces)
        self.single_action_space = gym.spaces.Dict(self.single_action_spaces)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[list[dict], list[dict]]:
        results = [
            env.reset(seed=None if seed is None else seed + index, options=options)
            for index, env in enumerate(self.envs)
        ]
        return [obs for obs, _ in results], [infos for _, infos in results]

    def render(self) -> tuple:
        """Every sub-env's frame (RLlib's SyncVectorMultiAgentEnv.render)."""
        return tuple(env.render() for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple:
        """Each sub-env's method `name` called with the arguments, or its attribute `name`
        (RLlib's SyncVectorMultiAgentEnv.call)."""
        results = []
        for env in self.envs:
            value = getattr(env, name)
            results.append(value(*args, **kwargs) if callable(value) else value)
        return tuple(results)

    def step(
        self, actions: list[dict]
    ) -> tuple[list[dict], list[dict], list[dict], list[dict], list[dict]]:
        if len(actions) != self.num_envs:
            raise ValueError(
                f"{type(self).__name__}.step(): {len(actions)} action dicts for "
                f"{self.num_envs} sub-envs"
            )
        results = [
            env.step(action_dict) for env, action_dict in zip(self.envs, actions, strict=True)
        ]
        obs, rewards, terminateds, truncateds, infos = (
            list(column) for column in zip(*results, strict=True)
        )
        return obs, rewards, terminateds, truncateds, infos

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()
