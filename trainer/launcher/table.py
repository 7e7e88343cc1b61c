"""The RLlib launcher's mapping: which Ray/RLlib module path imports which module of this
project, and which paths and names have no counterpart (and what they need).

Adding a module is one row:

- `MODULES["ray.rllib.some.module"] = ("trainer.our.module",)`: the RLlib path imports a
  stand-in module whose names are those of our module(s), looked up in the order given;
- `UNAVAILABLE_MODULES["ray.rllib.some.package"] = Unavailable(CAPABILITY, "what instead")`:
  that path, and anything under it, imports, and each name RLlib defines there that no
  `MODULES` row serves is a placeholder that raises `RLlibNotAvailable` naming the capability
  when it is used (`trainer.launcher.finder.placeholder`);
- `UNAVAILABLE_NAMES["ray.rllib.some.module"] = {"Name": Unavailable(...)}`: that name, from a
  mapped module, is such a placeholder (the key "*" stands for every name the module's targets
  lack).

Every module and name of RLlib 2.60 resolves, whatever the table says (RLlib's record of them:
`trainer.launcher.rllib_names`): a constant with RLlib's value, a name this project serves, or a
placeholder; the table says what a placeholder's refusal names. One with no row here is a gap:
its refusal has no capability.

`ray.rllib.examples.*`, `ray.rllib.utils.metrics.stats.*` and `ray.rllib.utils.replay_buffers.*`
map generically by relative path onto `trainer.examples.*`, `trainer.metrics.stats.*` and
`trainer.replay_buffers.*` (`GENERIC_PREFIXES`): a module added there (with RLlib's file name) is
found with no row here. An example module with no such counterpart and no `UNAVAILABLE_MODULES`
row runs from the installed Ray wheel's own file, its `ray.*` imports served by the table.
The most specific entry wins: a `MODULES` row over a generic prefix over an
`UNAVAILABLE_MODULES` prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer.algorithms.registry import entries
from trainer.capabilities import (  # noqa: F401 - the table's words, re-exported
    ATARI,
    DEFAULT_MODELS_INSTEAD,
    LEARNER_CONNECTORS,
    META_LEARNING,
    MULTI_AGENT,
    OFFLINE,
    OLD_API_STACK,
    OTHER_ALGORITHMS,
    RAY_DATA,
    RAY_INTERNALS,
    SERVE,
    THIRD_PARTY_ENVS,
    TORCH,
    TUNE,
)


@dataclass(frozen=True)
class Unavailable:
    """Why an RLlib path or name has no counterpart: the capability it needs, and what to use
    instead (empty when there is nothing). The path imports and the name resolves; using it
    fails (`trainer.launcher.finder.placeholder`): a class can be subclassed (by a class that is
    never made) and isinstance-checked, but making one or reading its attributes fails; a
    function fails when called."""

    capability: str
    instead: str = ""


#: The registered algorithms' configs, what to use instead of another algorithm
#: ("PPOConfig/DQNConfig (ray.rllib.algorithms.ppo/.dqn)").
#: Only those that serve an RLlib algorithm package (`ray.rllib.algorithms.<x>`): one from
#: RLlib's examples is no stand-in for RLlib's other algorithms.
_RLLIB_ALGORITHM_PACKAGES = {
    entry.name: path.rpartition(".")[2]
    for entry in entries()
    for path in entry.rllib_modules
    if path.rpartition(".")[0] == "ray.rllib.algorithms"
}
_REGISTERED_CONFIGS = "/".join(f"{name}Config" for name in _RLLIB_ALGORITHM_PACKAGES) + (
    " (ray.rllib.algorithms." + "/.".join(_RLLIB_ALGORITHM_PACKAGES.values()) + ")"
)
_MODEL = DEFAULT_MODELS_INSTEAD
#: The new stack's external simulators: RLlink over TCP.
_RLLINK = (
    "EnvRunnerServerForExternalInference (ray.rllib.env.external."
    "env_runner_server_for_external_inference: external simulators over TCP, RLlink)"
)
_TUNE_ON_REAL_RAY = (
    "Ray Tune on real Ray: pip install 'localrl[tune]'; the launcher runs a script that "
    "uses Tune's experiment runner (Tuner, tune.run, schedulers, ...) on real Ray by itself, "
    "or force it with `python -m trainer run --ray SCRIPT`"
)

#: RLlib (or Ray) module path -> the module(s) whose names it has, searched in order.
MODULES: dict[str, tuple[str, ...]] = {
    # Ray itself (the stand-in; `trainer.launcher.ray_api`) and the parts of Tune RLlib uses
    # (with real Ray and Ray Tune installed, `ray.tune`, `ray.air` and `ray.train` are Tune's
    # own instead, `ray.tune` and `ray.tune.registry` seen through `TUNE_OVERLAYS`).
    "ray": ("trainer.launcher.ray_api",),
    "ray.exceptions": ("trainer.launcher.ray_exceptions",),
    "ray.tune": ("trainer.launcher.tune_api",),
    "ray.tune.registry": ("trainer.launcher.tune_api",),
    "ray.tune.result": ("trainer.launcher.tune_api",),
    "ray.tune.logger": ("trainer.launcher.tune_logger",),  # pretty_print; the rest at use
    "ray.air": ("trainer.launcher.tune_api",),
    "ray.air.constants": ("trainer.launcher.tune_api",),
    # Ray's host:port helpers (RLlib's examples name the servers they start with them)
    "ray._common.network_utils": ("trainer.launcher.ray_network",),
    "ray._common.deprecation": ("trainer.compat.rllib_utils",),
    "ray.util.annotations": ("trainer.launcher.ray_annotations",),
    # RLlib
    "ray.rllib": ("trainer",),
    "ray.rllib.algorithms": ("trainer.algorithms", "trainer"),
    "ray.rllib.algorithms.algorithm": ("trainer.algorithms.algorithm",),
    "ray.rllib.algorithms.algorithm_config": (
        "trainer.algorithms.algorithm_config",
        "trainer.algorithms.differentiable_config",
    ),
    # Each registered algorithm's own paths (`AlgorithmEntry.rllib_modules`).
    **{path: modules for entry in entries() for path, modules in entry.rllib_modules.items()},
    "ray.rllib.algorithms.callbacks": ("trainer.callbacks",),
    "ray.rllib.callbacks": ("trainer.callbacks",),
    "ray.rllib.callbacks.callbacks": ("trainer.callbacks",),
    "ray.rllib.connectors": ("trainer.connectors",),
    "ray.rllib.connectors.connector_v2": ("trainer.connectors.connector_v2",),
    "ray.rllib.connectors.env_to_module": (
        "trainer.connectors.env_to_module",
        "trainer.connectors.batching",
    ),
    "ray.rllib.connectors.common": (
        "trainer.connectors.batching",
        "trainer.connectors.module_to_env",
        "trainer.connectors.env_to_module",
    ),
    **{
        f"ray.rllib.connectors.common.{name}": ("trainer.connectors.batching",)
        for name in (
            "add_observations_from_episodes_to_batch",
            "add_states_from_episodes_to_batch",
            "add_time_dim_to_batch_and_zero_pad",
            "batch_individual_items",
            "numpy_to_tensor",
        )
    },
    "ray.rllib.connectors.common.tensor_to_numpy": ("trainer.connectors.module_to_env",),
    "ray.rllib.connectors.module_to_env": ("trainer.connectors.module_to_env",),
    "ray.rllib.connectors.learner": ("trainer.connectors.learner",),
    "ray.rllib.connectors.learner.frame_stacking": ("trainer.connectors.learner",),
    **{
        f"ray.rllib.connectors.module_to_env.{name}": ("trainer.connectors.module_to_env",)
        for name in (
            "get_actions",
            "listify_data_for_vector_env",
            "module_to_env_pipeline",
            "normalize_and_clip_actions",
            "remove_single_ts_time_rank_from_batch",
            "unbatch_to_individual_items",
        )
    },
    "ray.rllib.connectors.env_to_module.flatten_observations": (
        "trainer.connectors.env_to_module",
    ),
    "ray.rllib.connectors.env_to_module.frame_stacking": ("trainer.connectors.env_to_module",),
    "ray.rllib.connectors.env_to_module.mean_std_filter": ("trainer.connectors.env_to_module",),
    "ray.rllib.connectors.env_to_module.prev_actions_prev_rewards": (
        "trainer.connectors.env_to_module",
    ),
    "ray.rllib.connectors.env_to_module.observation_preprocessor": (
        "trainer.connectors.env_to_module",
    ),
    "ray.rllib.core": ("trainer.compat.rllib_utils",),
    "ray.rllib.core.columns": ("trainer.compat.rllib_utils",),
    "ray.rllib.core.rl_module": (
        "trainer.core.rl_module",
        "trainer.core.multi_rl_module",
        "trainer.core.models",
        "trainer",
    ),
    "ray.rllib.core.rl_module.default_model_config": ("trainer.core.models",),
    "ray.rllib.core.rl_module.rl_module": ("trainer.core.rl_module", "trainer.core.models"),
    "ray.rllib.core.rl_module.multi_rl_module": ("trainer.core.multi_rl_module",),
    # Torch modules and distributions (the `torch` extra; imported only when asked for).
    "ray.rllib.core.rl_module.torch": ("trainer.torch_rl.rl_module",),
    "ray.rllib.core.rl_module.torch.torch_rl_module": ("trainer.torch_rl.rl_module",),
    "ray.rllib.core.rl_module.torch.torch_compile_config": ("trainer.torch_rl.rl_module",),
    "ray.rllib.core.distribution.torch.torch_distribution": ("trainer.torch_rl.distributions",),
    "ray.rllib.models.torch.torch_distributions": ("trainer.torch_rl.distributions",),
    "ray.rllib.core.learner.torch.torch_learner": ("trainer.torch_rl.learner",),
    # Meta-learning: the meta learner, the differentiable learners and their data.
    **{
        f"ray.rllib.core.learner.{name}": ("trainer.torch_rl.meta_learning",)
        for name in (
            "torch.torch_meta_learner",
            "torch.torch_differentiable_learner",
            "differentiable_learner",
            "differentiable_learner_config",
            "training_data",
        )
    },
    "ray.rllib.utils.torch_utils": ("trainer.torch_rl.torch_utils",),
    # RLlib's Learner base and its names (DEFAULT_OPTIMIZER, LR_KEY, ...): framework-free.
    "ray.rllib.core.learner.learner": ("trainer.core.learner",),
    # Catalogs: names a spec carries (an algorithm's on its default module); no model builders.
    "ray.rllib.core.models.catalog": ("trainer.core.catalog",),
    # RLlib's model configs for a user's own module (MLP encoders and heads) and their keys.
    "ray.rllib.core.models.base": ("trainer.core.model_configs",),
    "ray.rllib.core.models.configs": ("trainer.core.model_configs",),
    "ray.rllib.core.models.torch.base": ("trainer.torch_rl.model_config_networks",),
    "ray.rllib.core.models.torch.encoder": ("trainer.torch_rl.model_config_networks",),
    "ray.rllib.core.models.torch.heads": ("trainer.torch_rl.model_config_networks",),
    "ray.rllib.utils.actor_manager": ("trainer.util.call_results",),
    "ray.rllib.utils.debug": ("trainer.util.seeding",),
    "ray.rllib.utils.debug.deterministic": ("trainer.util.seeding",),
    "ray.rllib.core.testing.torch.bc_module": ("trainer.core.testing.torch.bc_module",),
    "ray.rllib.core.testing.torch.bc_learner": ("trainer.core.testing.torch.bc_learner",),
    "ray.rllib.core.testing.testing_learner": ("trainer.core.testing.testing_learner",),
    # RLlib's LearnerGroup, over the one learner here (config.build_learner_group(...)).
    "ray.rllib.core.learner.learner_group": ("trainer.algorithms.learner_group",),
    "ray.rllib.core.rl_module.apis": ("trainer.core.apis",),
    "ray.rllib.core.learner.utils": ("trainer.torch_rl.target_networks",),
    **{
        f"ray.rllib.core.rl_module.apis.{name}": ("trainer.core.apis",)
        for name in (
            "value_function_api",
            "inference_only_api",
            "q_net_api",
            "target_network_api",
            "self_supervised_loss_api",
        )
    },
    # The old stack's observation preprocessors (RLlib's new-stack tests flatten with them).
    "ray.rllib.models.preprocessors": ("trainer.compat.preprocessors",),
    # The old stack's model config defaults (a plain dict; new-stack tests pass a copy as a
    # module's model_config) and its CNN presets (`get_filter_config`, pure arithmetic).
    "ray.rllib.models.catalog": ("trainer.compat.old_model_defaults",),
    "ray.rllib.models.utils": ("trainer.core.model_configs",),
    # The old stack's `Policy` module: only its `PolicySpec` serves the new stack's configs.
    "ray.rllib.policy.policy": ("trainer.core.policy_spec",),
    # ...and `SampleBatch`'s column names (new-stack code uses them as batch keys).
    "ray.rllib.policy.sample_batch": ("trainer.compat.sample_batch",),
    # Ray Data's read_parquet, over pyarrow (RLlib's examples count the rows they recorded).
    "ray.data": ("trainer.compat.ray_data",),
    "ray.rllib.env": (
        "trainer.env.envs",
        "trainer",
        "trainer.env.multi_agent_env",
        "trainer.env.wrappers.group_agents_wrapper",
        "trainer.env.wrappers.pettingzoo_env",
        "trainer.env.multi_agent_episode",
        "trainer.runners.multi_agent_env_runner",
    ),
    "ray.rllib.env.multi_agent_env": ("trainer.env.multi_agent_env",),
    "ray.rllib.env.wrappers.group_agents_wrapper": ("trainer.env.wrappers.group_agents_wrapper",),
    "ray.rllib.env.wrappers.pettingzoo_env": ("trainer.env.wrappers.pettingzoo_env",),
    "ray.rllib.env.wrappers.dm_control_wrapper": ("trainer.env.wrappers.dm_control_wrapper",),
    "ray.rllib.env.wrappers.open_spiel": ("trainer.env.wrappers.open_spiel",),
    "ray.rllib.utils.pre_checks": ("trainer.env.multi_agent_checks",),
    "ray.rllib.utils.pre_checks.env": ("trainer.env.multi_agent_checks",),
    "ray.rllib.env.env_context": ("trainer.env.envs",),
    "ray.rllib.env.apis": ("trainer.env.curriculum",),
    "ray.rllib.env.apis.task_settable_env": ("trainer.env.curriculum",),
    "ray.rllib.env.env_runner": ("trainer.runners.env_runner", "trainer.errors"),
    "ray.rllib.env.env_runner_group": ("trainer.runners.env_runner_group",),
    "ray.rllib.env.single_agent_env_runner": ("trainer.runners.env_runner",),
    "ray.rllib.env.multi_agent_env_runner": ("trainer.runners.multi_agent_env_runner",),
    "ray.rllib.env.single_agent_episode": ("trainer.env.episode",),
    "ray.rllib.env.multi_agent_episode": ("trainer.env.multi_agent_episode",),
    "ray.rllib.env.utils": ("trainer.env.envs", "trainer.env.wrappers.open_spiel"),
    "ray.rllib.env.utils.infinite_lookback_buffer": ("trainer.env.lookback_buffer",),
    # External simulators over TCP (RLlink)
    "ray.rllib.env.external": ("trainer.env.external",),
    "ray.rllib.env.external.rllink": ("trainer.env.external.rllink",),
    "ray.rllib.env.utils.external_env_protocol": ("trainer.env.external.rllink",),
    "ray.rllib.env.external.env_runner_server_for_external_inference": (
        "trainer.runners.external_server",
    ),
    "ray.rllib.env.tcp_client_inference_env_runner": ("trainer.runners.external_server",),
    "ray.rllib.utils": ("trainer.compat.rllib_utils",),
    "ray.rllib.utils.lambda_defaultdict": ("trainer.compat.rllib_utils",),
    # The old stack's module, whose column names and discounted sums the new stack uses too.
    "ray.rllib.evaluation.postprocessing": ("trainer.compat.rllib_utils",),
    "ray.rllib.utils.annotations": ("trainer.compat.rllib_utils",),
    "ray.rllib.utils.error": ("trainer.errors",),
    "ray.rllib.utils.exploration": ("trainer.core.exploration",),
    "ray.rllib.utils.exploration.epsilon_greedy": ("trainer.core.exploration",),
    "ray.rllib.utils.exploration.exploration": ("trainer.core.exploration",),
    "ray.rllib.utils.exploration.soft_q": ("trainer.core.exploration",),
    "ray.rllib.utils.exploration.stochastic_sampling": ("trainer.core.exploration",),
    "ray.rllib.utils.framework": ("trainer.compat.rllib_utils",),
    "ray.rllib.utils.metrics": ("trainer.metrics",),
    "ray.rllib.utils.metrics.metrics_logger": ("trainer.metrics.metrics_logger",),
    "ray.rllib.utils.metrics.legacy_stats": ("trainer.metrics.legacy_stats",),
    "ray.rllib.utils.metrics.stats": ("trainer.metrics.stats",),
    "ray.rllib.utils.numpy": ("trainer.compat.rllib_numpy",),
    "ray.rllib.utils.replay_buffers": ("trainer.replay_buffers",),
    # RLlib's offline data pipeline (offline_data(offline_data_class=..., prelearner_class=...))
    "ray.rllib.offline.offline_data": ("trainer.algorithms.offline_pipeline",),
    "ray.rllib.offline.offline_prelearner": ("trainer.algorithms.offline_pipeline",),
    "ray.rllib.execution.segment_tree": ("trainer.replay_buffers.segment_tree",),
    "ray.rllib.utils.images": ("trainer.util.images",),
    "ray.rllib.utils.spaces.repeated": ("trainer.core.spaces",),
    "ray.rllib.utils.spaces.simplex": ("trainer.core.spaces",),
    "ray.rllib.utils.schedules": ("trainer.core.schedules",),
    "ray.rllib.utils.schedules.scheduler": ("trainer.core.schedules",),
    "ray.rllib.utils.spaces": ("trainer.core.spaces",),
    # RLlib's batch() (with individual_items_already_have_batch_dim) before this project's.
    "ray.rllib.utils.spaces.space_utils": ("trainer.compat.space_utils", "trainer.core.spaces"),
    "ray.rllib.utils.spaces.flexdict": ("trainer.compat.space_utils",),
    "ray.rllib.utils.serialization": ("trainer.compat.serialization",),
    "ray.rllib.utils.filter": ("trainer.compat.filters",),
    "ray.rllib.utils.actors": ("trainer.compat.task_pool",),
    "ray.rllib.algorithms.utils": ("trainer.compat.resources",),
    "ray.rllib.utils.test_utils": ("trainer.testing",),
    "ray.rllib.utils.typing": ("trainer.compat.rllib_utils",),
    "ray.rllib.examples.utils": ("trainer.testing",),
    "ray.rllib.env.vector.vector_multi_agent_env": ("trainer.env.vector_multi_agent_env",),
    "ray.rllib.env.wrappers.atari_wrappers": ("trainer.env.wrappers.atari_wrappers",),
}

#: With real Ray and Ray Tune installed: Tune's modules whose public names are first looked up
#: in these modules, in order (`trainer.launcher.tune_overlay`: what RLlib's scripts need beyond
#: the front; `trainer.tune`, this project's Tune front: `Tuner`, `run`, `register_trainable`,
#: `register_env`, ... that accept this project's algorithms), then in Tune's own module. Every
#: other `ray.tune.*`, `ray.air.*` and `ray.train.*` module is Tune's.
TUNE_OVERLAYS: dict[str, tuple[str, ...]] = {
    "ray.tune": ("trainer.launcher.tune_overlay", "trainer.tune"),
    "ray.tune.registry": ("trainer.launcher.tune_overlay", "trainer.tune"),
}

#: RLlib package -> our package with the same layout below it: `ray.rllib.examples.a.b` is
#: `trainer.examples.a.b` when that module exists.
GENERIC_PREFIXES: dict[str, str] = {
    "ray.rllib.examples": "trainer.examples",
    "ray.rllib.utils.metrics.stats": "trainer.metrics.stats",
    "ray.rllib.utils.replay_buffers": "trainer.replay_buffers",
}

#: RLlib's algorithm packages (`ray.rllib.algorithms.<name>`) other than the registered ones.
OTHER_ALGORITHM_PACKAGES = ("appo", "bc", "cql", "impala", "iql", "marwil")
#: Ray Tune's modules of its experiment runner (`ray.tune.<name>`: loggers, searchers,
#: schedulers, stoppers, callbacks, ...). Under Ray's stand-in they import and each of their
#: names fails when used; the launcher runs a script that uses one on real Ray
#: (`trainer.launcher.script`).
TUNE_RUNNER_MODULES = (
    "analysis",
    "automl",
    "callback",
    "cli",
    "constants",
    "context",
    "error",
    "examples",
    "execution",
    "experiment",
    "experimental",
    "impl",
    "integration",
    "logger",
    "progress_reporter",
    "resources",
    "result_grid",
    "schedulers",
    "search",
    "stopper",
    "syncer",
    "trainable",
    "tune",
    "tune_config",
    "tuner",
    "utils",
)
#: RLlib/Ray module path (and everything under it) -> why it has no counterpart.
UNAVAILABLE_MODULES: dict[str, Unavailable] = {
    # Algorithms
    **{
        f"ray.rllib.algorithms.{name}": Unavailable(OTHER_ALGORITHMS, _REGISTERED_CONFIGS)
        for name in OTHER_ALGORITHM_PACKAGES
    },
    # Each registered algorithm's paths without a counterpart (`rllib_unavailable`).
    **{
        path: Unavailable(capability, instead)
        for entry in entries()
        for path, (capability, instead) in entry.rllib_unavailable.items()
    },
    # Torch modules, models, learners
    "ray.rllib.core.learner": Unavailable(
        TORCH,
        "Learner, TorchLearner, LearnerGroup and PPOTorchLearner "
        "(ray.rllib.core.learner.learner, .torch.torch_learner, .learner_group, "
        "ray.rllib.algorithms.ppo.torch.ppo_torch_learner), the meta and differentiable "
        "learners (.torch.torch_meta_learner, ...); no TF learners",
    ),
    "ray.rllib.core.models": Unavailable(TORCH, _MODEL),
    "ray.rllib.core.distribution": Unavailable(TORCH, _MODEL),
    "ray.rllib.core.testing": Unavailable(TORCH),
    "ray.rllib.utils.tf_utils": Unavailable(TORCH),
    # RLlib's example modules: those with a counterpart map generically (GENERIC_PREFIXES);
    # these need what is not here; any other runs from the installed wheel's own file.
    "ray.rllib.examples.rl_modules.classes.modelv2_to_rlm": Unavailable(OLD_API_STACK),
    "ray.rllib.examples.rl_modules.classes.mobilenet_rlm": Unavailable(TORCH, _MODEL),
    # (a Serve deployment: built at its import; RLlib's Serve example imports it in Serve's
    # own process, by its folder's path)
    "ray.rllib.examples.ray_serve.classes.cartpole_deployment": Unavailable(SERVE),
    # Served: classes.custom_ppo_loss_fn_learner, classes.separate_vf_lr_and_optimizer_learner,
    # classes.intrinsic_curiosity_learners (trainer.examples.learners); those of a registered
    # algorithm (its registry entry's rows).
    "ray.rllib.examples.learners": Unavailable(
        TORCH, "PPOTorchLearner subclasses (the custom-loss and separate-optimizer examples)"
    ),
    # Custom Algorithm subclasses (a registered algorithm's are served by its entry's rows;
    # APPO with a shared data actor by trainer.examples.algorithms.classes).
    "ray.rllib.examples.algorithms": Unavailable(OTHER_ALGORITHMS, _REGISTERED_CONFIGS),
    # Multi-agent
    "ray.rllib.examples.multi_agent.utils.self_play_callback_old_api_stack": Unavailable(
        OLD_API_STACK, "SelfPlayCallback"
    ),
    "ray.rllib.examples.multi_agent.utils.self_play_league_based_callback_old_api_stack": (
        Unavailable(OLD_API_STACK, "SelfPlayLeagueBasedCallback")
    ),
    "ray.rllib.examples.envs.classes.multi_agent.footsies": Unavailable(MULTI_AGENT),
    # Envs and wrappers
    "ray.rllib.env.wrappers": Unavailable(THIRD_PARTY_ENVS, "gymnasium's own wrappers"),
    "ray.rllib.env.external_env": Unavailable(OLD_API_STACK, _RLLINK),
    "ray.rllib.env.policy_client": Unavailable(OLD_API_STACK, _RLLINK),
    # Replay buffers of the old API stack (timestep-based)
    **{
        f"ray.rllib.utils.replay_buffers.{name}": Unavailable(
            OLD_API_STACK, "EpisodeReplayBuffer or PrioritizedEpisodeReplayBuffer"
        )
        for name in (
            "replay_buffer",
            "prioritized_replay_buffer",
            "reservoir_replay_buffer",
            "fifo_replay_buffer",
            "simple_replay_buffer",
            "multi_agent_replay_buffer",
            "multi_agent_prioritized_replay_buffer",
            "multi_agent_mixin_replay_buffer",
        )
    },
    # Offline data
    "ray.rllib.offline": Unavailable(OFFLINE),
    "ray.data": Unavailable(RAY_DATA),
    # The old API stack
    "ray.rllib.policy": Unavailable(OLD_API_STACK, "the new stack's Algorithm/EnvRunner API"),
    "ray.rllib.models": Unavailable(OLD_API_STACK, _MODEL),
    "ray.rllib.evaluation": Unavailable(OLD_API_STACK, "SingleAgentEnvRunner"),
    "ray.rllib.execution": Unavailable(OLD_API_STACK),
    "ray.rllib.examples._old_api_stack": Unavailable(OLD_API_STACK),
    # Ray Tune's experiment runner and Ray Train (on real Ray with Ray Tune, these are Tune's)
    **{f"ray.tune.{name}": Unavailable(TUNE, _TUNE_ON_REAL_RAY) for name in TUNE_RUNNER_MODULES},
    "ray.air.integrations": Unavailable(TUNE, _TUNE_ON_REAL_RAY),
    "ray.train": Unavailable(TUNE, _TUNE_ON_REAL_RAY),
    # Serve and Ray's internals
    "ray.serve": Unavailable(SERVE),
    "ray.util": Unavailable(RAY_INTERNALS, "import ray (init, remote, get, get_actor, ...)"),
    "ray.actor": Unavailable(RAY_INTERNALS, "import ray (remote, get_actor)"),
    "ray._private": Unavailable(RAY_INTERNALS),
    "ray.cluster_utils": Unavailable(
        RAY_INTERNALS, "one machine: ray.init() (no simulated multi-node clusters)"
    ),
    "ray._common": Unavailable(RAY_INTERNALS),
}

#: Tune's experiment runner as `ray.tune` names it (the Tuner, search spaces, reporters,
#: callbacks, ...): a script that uses one runs on real Ray (`trainer.launcher.script`),
#: and without Ray Tune each fails when used.
TUNE_RUNNER_NAMES = (
    "Tuner",
    "TuneConfig",
    "run",
    "run_experiments",
    "Experiment",
    "CLIReporter",
    "JupyterNotebookReporter",
    "ProgressReporter",
    "Callback",
    "Trainable",
    "with_parameters",
    "with_resources",
    "report",
    "get_checkpoint",
    "Stopper",
    "ResultGrid",
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randn",
    "qrandn",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
    "choice",
    "sample_from",
)
#: The run configs of Tune's runner that `ray.air` names (as `ray.tune` does).
AIR_RUNNER_NAMES = ("RunConfig", "CheckpointConfig", "FailureConfig")
_TUNE_NAMES = (*TUNE_RUNNER_NAMES, "SyncConfig", "PlacementGroupFactory", "Checkpoint")

#: Names of mapped modules that have no counterpart (module -> name -> why).
#: What RLlib's model modules have beyond the MLP configs served (`trainer.core.model_configs`).
_MODEL_CONFIGS_INSTEAD = (
    "MLPEncoderConfig, MLPHeadConfig, FreeLogStdMLPHeadConfig, CNNEncoderConfig, "
    "CNNTransposeHeadConfig, RecurrentEncoderConfig and ActorCriticEncoderConfig "
    "(ray.rllib.core.models.configs) for your own module's networks, or " + _MODEL
)

#: RLlib's old-stack functions that build a class (`CQLTorchPolicy = build_policy_class(
#: name="CQLTorchPolicy", ...)`, run when a module of the user's is imported): their
#: placeholders give back a placeholder class of that name, which refuses when it is used
#: (made, or an attribute read), as every other placeholder does.
CLASS_FACTORIES = frozenset(
    (
        "ray.rllib.policy.policy_template.build_policy_class",
        "ray.rllib.policy.tf_policy_template.build_tf_policy",
        "ray.rllib.policy.eager_tf_policy.build_eager_tf_policy",
    )
)

UNAVAILABLE_NAMES: dict[str, dict[str, Unavailable]] = {
    "ray.rllib.core.models.base": {"*": Unavailable(TORCH, _MODEL_CONFIGS_INSTEAD)},
    "ray.rllib.core.models.configs": {"*": Unavailable(TORCH, _MODEL_CONFIGS_INSTEAD)},
    # Only the call results LearnerGroup.foreach_learner returns: no actor manager.
    "ray.rllib.utils.actor_manager": {
        "*": Unavailable(
            RAY_INTERNALS,
            "the EnvRunner and learner groups' own fault tolerance (fault_tolerance(...)); "
            "RemoteCallResults / CallResult / ResultOrError are served",
        )
    },
    # Of the old stack's model modules only MODEL_DEFAULTS and get_filter_config are served.
    "ray.rllib.models.catalog": {"*": Unavailable(OLD_API_STACK, _MODEL)},
    "ray.rllib.models.utils": {"*": Unavailable(OLD_API_STACK, _MODEL_CONFIGS_INSTEAD)},
    # Of the old stack's postprocessing only its column names and discounted sums are served.
    "ray.rllib.evaluation.postprocessing": {
        "*": Unavailable(OLD_API_STACK, "the learners' own advantages (GAE) of the new stack")
    },
    # The learners make their batches from the episodes (RLlib's default learner pieces).
    "ray.rllib.connectors.learner": {
        "*": Unavailable(LEARNER_CONNECTORS, "PPO's and DQN's built-in learner steps")
    },
    "ray": {  # (ray.data, ray.serve, ray.train, ray.util: modules, in UNAVAILABLE_MODULES)
        "get_runtime_context": Unavailable(RAY_INTERNALS),
        "method": Unavailable(RAY_INTERNALS),
    },
    # (every other name Ray Tune has, "*", fails the same way when used)
    "ray.tune": {name: Unavailable(TUNE, _TUNE_ON_REAL_RAY) for name in (*_TUNE_NAMES, "*")},
    "ray.air": {
        name: Unavailable(TUNE, _TUNE_ON_REAL_RAY)
        for name in (*AIR_RUNNER_NAMES, "ScalingConfig", "session", "*")
    },
    "ray.tune.logger": {"*": Unavailable(TUNE, _TUNE_ON_REAL_RAY)},
    "ray.data": {"*": Unavailable(RAY_DATA, "ray.data.read_parquet (its Dataset's rows)")},
    "ray.rllib.policy.policy": {
        "*": Unavailable(OLD_API_STACK, "the new stack's Algorithm/EnvRunner API"),
    },
    # concat_samples, ...: the old stack's batch operations (SampleBatch and MultiAgentBatch
    # are served as containers of columns; their old-stack methods refuse when called).
    "ray.rllib.policy.sample_batch": {
        "*": Unavailable(OLD_API_STACK, "episodes, and dicts keyed by Columns' names"),
    },
    "ray.rllib.env": {
        "ExternalEnv": Unavailable(OLD_API_STACK, _RLLINK),
        "ExternalMultiAgentEnv": Unavailable(OLD_API_STACK, _RLLINK),
        "PolicyClient": Unavailable(OLD_API_STACK, _RLLINK),
        "PolicyServerInput": Unavailable(OLD_API_STACK, _RLLINK),
        "BaseEnv": Unavailable(OLD_API_STACK, "a gymnasium.Env"),
        "RemoteBaseEnv": Unavailable(OLD_API_STACK, "a gymnasium.Env"),
    },
    "ray.rllib.utils.replay_buffers": {
        **{
            name: Unavailable(OLD_API_STACK, "EpisodeReplayBuffer")
            for name in (
                "ReplayBuffer",
                "PrioritizedReplayBuffer",
                "ReservoirReplayBuffer",
                "FifoReplayBuffer",
                "SimpleReplayBuffer",
                "StorageUnit",
                "MultiAgentReplayBuffer",
                "MultiAgentPrioritizedReplayBuffer",
                "MultiAgentMixInReplayBuffer",
                "ReplayMode",
            )
        },
    },
    # The old stack's multi-GPU towers of a TorchPolicy.
    "ray.rllib.utils.torch_utils": {
        "concat_multi_gpu_td_errors": Unavailable(OLD_API_STACK, "the new stack's learners"),
    },
    # Ray actors' placement (co-located actors) and RLlib's aggregator actors.
    "ray.rllib.utils.actors": {"*": Unavailable(RAY_INTERNALS, "TaskPool")},
    "ray.rllib.algorithms.utils": {"*": Unavailable(RAY_INTERNALS, "_get_main_process_bundle")},
    "ray.rllib.utils.framework": {
        "get_device": Unavailable(TORCH),
        "convert_to_tensor": Unavailable(TORCH),
        "get_activation_fn": Unavailable(TORCH),
    },
}


@dataclass(frozen=True)
class Removed:
    """An RLlib name (or module) that RLlib itself removed: what replaced it, and the RLlib
    version that removed it where known (empty: RLlib 2.60 no longer has it)."""

    replacement: str
    removed_in: str = ""


_RL_MODULE_SPEC = "RLModuleSpec (ray.rllib.core.rl_module.rl_module, or ray.rllib.core.rl_module)"
_MULTI_RL_MODULE = "MultiRLModule (ray.rllib.core.rl_module.multi_rl_module)"
_MULTI_RL_MODULE_SPEC = "MultiRLModuleSpec (ray.rllib.core.rl_module.multi_rl_module)"

#: Names RLlib removed (module -> name -> what replaced it): importing one raises
#: `RemovedFromRLlib` naming the replacement, not a "no counterpart in localrl" gap.
REMOVED_NAMES: dict[str, dict[str, Removed]] = {
    "ray.rllib.core.rl_module": {
        "SingleAgentRLModuleSpec": Removed(_RL_MODULE_SPEC),
        "MultiAgentRLModule": Removed(_MULTI_RL_MODULE),
        "MultiAgentRLModuleSpec": Removed(_MULTI_RL_MODULE_SPEC),
    },
    "ray.rllib.core.rl_module.rl_module": {
        "SingleAgentRLModuleSpec": Removed(_RL_MODULE_SPEC),
    },
    "ray.rllib.core.rl_module.multi_rl_module": {
        "MultiAgentRLModule": Removed(_MULTI_RL_MODULE),
        "MultiAgentRLModuleSpec": Removed(_MULTI_RL_MODULE_SPEC),
    },
}
#: Modules RLlib removed (path -> what replaced it).
REMOVED_MODULES: dict[str, Removed] = {
    "ray.rllib.core.rl_module.marl_module": Removed(
        "ray.rllib.core.rl_module.multi_rl_module (MultiRLModule, MultiRLModuleSpec)"
    ),
}
