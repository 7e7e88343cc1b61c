"""The deliberate differences from RLlib 2.60: the one table of what this project does not do
as RLlib does, each with what happens here instead and why.

Two kinds of entries:

- API names: a public name or parameter of RLlib's that is missing here or has another default,
  keyed exactly as `trainer.compat.conformance` spells its findings
  (`AlgorithmConfig.training(lr=...)`, `Algorithm.compute_actions`). The conformance test
  (`tests/test_rllib_conformance.py`) fails for a finding not in this table, and for an entry
  here that is no longer a finding (the name now matches: the entry is stale).
- RLlib test cases left out of `tests/rllib/` (where RLlib's own test files run with only their
  imports changed), keyed `file::case`.
- Behaviour: a name that exists here with RLlib's signature but computes something else on
  purpose, keyed by the name; `here` names the test that shows what happens here.

Each algorithm's own rows live in its folder (`trainer/algorithms/<name>/differences.py`),
registered through its `AlgorithmEntry`. `python -m trainer.compat.differences` writes `docs/deliberate_differences.md` from this table
(`--check` exits 1 when the committed page differs from it; a test checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainer.algorithms.registry import API, BEHAVIOUR, TEST, UNIT_TEST, Difference, entries
from trainer.util.generated_page import write_or_check


def _same(here: str, why: str, *names: str, kind: str = API) -> tuple[Difference, ...]:
    return tuple(Difference(name, here, why, kind) for name in names)


# -- reasons shared by many entries -------------------------------------------------------------
_OLD_STACK = (
    "RLlib's old API stack (Policy, RolloutWorker, SampleBatch); this trainer is "
    "RLlib's new stack only"
)
_MULTI_AGENT = (
    "RLlib's old-stack multi-agent names (policies as Policy objects); the new stack's "
    "modules are added and removed with add_module / remove_module and restored with "
    "restore_from_path(component=...)"
)
_OFFLINE = (
    "recorded data is read and written with pyarrow here, not Ray Data; offline evaluation "
    "runs in the driver, with no runner actors"
)
_CHECKPOINTABLE = (
    "checkpoints are this project's format (a folder of msgpack state files, "
    "config.json and a SHA-256 manifest, see docs/checkpoints.md), written "
    "and read by save_to_path / restore_from_path / from_checkpoint of the "
    "Algorithm; RLlib's per-component Checkpointable protocol is not implemented"
)
_RUNNER_CHECKPOINTS = (
    "an EnvRunner's state is a component of the Algorithm's checkpoint (env_runner_<i>); "
    "saved on its own (save_to_path / restore_from_path) it is this project's format "
    "(metadata.json and env_runner.msgpack), without RLlib's Checkpointable file names"
)
_NO_BATCH = (
    "the env-to-module pieces here rewrite the episodes' observations and the "
    "EnvRunner batches them for the module (numpy or torch); there is no batch of "
    "columns for a piece to fill"
)
_OLD_CALLBACK_ARGS = (
    "RLlib passes worker, base_env and policies only on its old API stack; "
    "callbacks here get the new stack's arguments (env_runner, env, episode, "
    "metrics_logger, ...); old-stack signatures still work, translated by "
    "trainer.compat.old_callbacks"
)

#: Every deliberate difference (API names first, then RLlib tests left out).
#: The differences shared by every algorithm (each algorithm's own are in its folder:
#: `AlgorithmEntry.differences`; `all_differences()` is the whole table).
SHARED_DIFFERENCES: tuple[Difference, ...] = (
    # -- AlgorithmConfig, PPOConfig, DQNConfig -------------------------------------------------
    Difference(
        "EnvToModulePipeline.from_checkpoint / ModuleToEnvPipeline.from_checkpoint",
        "single-agent checkpoints: the env-to-module pipeline is rebuilt from the algorithm "
        "checkpoint's config (its env_to_module_connector factory called with the saved "
        "spaces, no env) with the saved state, then RLlib's default batching pieces; the "
        "module-to-env pipeline is the config's module_to_env_connector pieces (made the "
        "same way; their state is not kept), then RLlib's default pieces with the saved action "
        "space and "
        "normalize_actions / clip_actions (tests/test_inference_pipelines.py, "
        "tests/test_module_to_env_pieces.py)",
        "the directories hold metadata.json and msgpack state, checksummed with the "
        "algorithm's, not RLlib's class_and_ctor_args.pkl: nothing but the config (trusted "
        "as Algorithm.from_checkpoint trusts it) is unpickled; multi-agent EnvRunners map "
        "agents to modules themselves and write no pipeline directories",
        BEHAVIOUR,
    ),
    *_same(
        "missing (the callbacks() keywords are taken, with a warning at build when given)",
        _OFFLINE + ", so this event never fires",
        "AlgorithmConfig.callbacks_on_offline_eval_runners_recreated",
    ),
    Difference(
        "AlgorithmConfig.dataset_num_iters_per_eval_runner",
        "missing: evaluation(dataset_num_iters_per_offline_eval_runner=...) is taken "
        "and kept under the keyword's name",
        _OFFLINE,
    ),
    *_same(
        "missing",
        _OFFLINE + "; RLlib 2.60 has no builder keyword for these attributes "
        "(its offline evaluation code reads them)",
        "AlgorithmConfig.offline_evaluation_duration",
        "AlgorithmConfig.offline_evaluation_parallel_to_training",
        "AlgorithmConfig.input_spaces_jsonable",
    ),
    *_same(
        "missing",
        _OLD_STACK + "; RLlib 2.60 has no builder keyword for it",
        "AlgorithmConfig.replay_sequence_length",
        "AlgorithmConfig.sync_filters_on_rollout_workers_timeout_s",
    ),
    Difference(
        "AlgorithmConfig.fault_tolerance(delay_between_env_runner_restarts_s=...)",
        "default 0.1 s",
        "RLlib waits 60 s for a Ray node to come back; a worker process here restarts in "
        "a fraction of a second, within the train() call that saw it fail",
    ),
    *_same(
        "{} by default, meaning the algorithm's default exploration: "
        "config.get_exploration_config() returns the whole dict",
        "a dict without \"type\" updates the algorithm's default (RLlib's rule), so the "
        "empty default keeps a later algorithm-level default change visible",
    ),
    # -- Algorithm, PPO, DQN ----------------------------------------------------------------------
    *_same(
        "missing",
        _CHECKPOINTABLE,
        "Algorithm.CLASS_AND_CTOR_ARGS_FILE_NAME",
        "Algorithm.METADATA_FILE_NAME",
        "Algorithm.STATE_FILE_NAME",
    ),
    *_same(
        "missing",
        _MULTI_AGENT,
        "Algorithm.from_checkpoint(policy_ids=...)",
        "Algorithm.from_checkpoint(policy_mapping_fn=...)",
        "Algorithm.from_checkpoint(policies_to_train=...)",
    ),
    *_same(
        "missing",
        "inputs of old-stack policies (the info dict and Episode object a Policy's "
        "compute_single_action could read); the modules here act on observations, a "
        "recurrent module's state and its previous action and reward",
        "Algorithm.compute_single_action(info=...)",
        "Algorithm.compute_single_action(episode=...)",
    ),
    # -- SingleAgentEnvRunner ---------------------------------------------------------------------
    *_same(
        "missing",
        _RUNNER_CHECKPOINTS,
        "SingleAgentEnvRunner.CLASS_AND_CTOR_ARGS_FILE_NAME",
        "SingleAgentEnvRunner.METADATA_FILE_NAME",
        "SingleAgentEnvRunner.STATE_FILE_NAME",
    ),
    Difference(
        "Algorithm.save_to_path(use_msgpack=...)",
        "True by default; False is accepted and also writes msgpack",
        "checkpoints here are always msgpack and JSON, checksummed and read without "
        "unpickling; RLlib's default pickles the state",
    ),
    # -- EnvRunnerGroup ------------------------------------------------------------------------
    # -- SingleAgentEpisode -------------------------------------------------------------------------
    # -- ConnectorV2 and the env-to-module pieces --------------------------------------------------
    *_same(
        "missing",
        "a connector's state is part of its EnvRunner's state in the "
        "Algorithm's checkpoint (get_state() / set_state() data); RLlib's "
        "per-component Checkpointable protocol is not implemented",
        "ConnectorV2.CLASS_AND_CTOR_ARGS_FILE_NAME",
        "ConnectorV2.METADATA_FILE_NAME",
        "ConnectorV2.STATE_FILE_NAME",
    ),
    *_same(
        "missing",
        _NO_BATCH,
        "ConnectorV2.single_agent_episode_iterator(zip_with_batch_column=...)",
    ),
    *_same(
        "missing",
        "RLlib's agent-to-module mapping and observation write-back pieces: the "
        "MultiAgentEnvRunner maps agents to modules itself, and the user's pieces write into "
        "the episodes directly (the default batching pieces, AddObservationsFromEpisodesToBatch "
        "to NumpyToTensor, exist for a user's own single-agent env loop and end the pipeline "
        "EnvToModulePipeline.from_checkpoint restores; the EnvRunner batches for itself)",
        *(
            f"env_to_module.{name}"
            for name in (
                "AgentToModuleMapping",
                "WriteObservationsToEpisodes",
            )
        ),
    ),
    # -- RLlibCallback ------------------------------------------------------------------------------
    *_same(
        "missing",
        _OLD_CALLBACK_ARGS,
        *(
            f"RLlibCallback.{event}({arg}=...)"
            for event in (
                "on_episode_created",
                "on_episode_start",
                "on_episode_step",
                "on_episode_end",
            )
            for arg in ("worker", "base_env", "policies")
        ),
        "RLlibCallback.on_sample_end(worker=...)",
    ),
    Difference(
        "RLlibCallback.on_create_policy / on_learn_on_batch / on_postprocess_trajectory",
        "defined (no-ops, as in RLlib) and never fired; a subclass that overrides one gets a "
        "warning naming what to use instead (tests/test_rllib_component_state.py::"
        "test_rllibs_never_fired_events_exist_and_an_override_is_warned_about)",
        _OLD_STACK + ": the events belong to it",
        BEHAVIOUR,
    ),
    Difference(
        "SingleAgentEnvRunner: the weights_seq_no extra model output",
        "recorded on each step of the finished episodes a sample() returns (the weights' "
        "sequence number, as RLlib's); unfinished chunks carry none, and a multi-agent "
        "runner's episodes none (tests/test_rllib_component_state.py::"
        "test_env_runner_takes_weights_seq_no_and_records_it_per_step)",
        "the runners here may go on recording into an unfinished chunk they returned, whose "
        "columns must stay the same length",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.stop() and Ray",
        "an Algorithm whose build started Ray (env_runners(backend='ray'), Ray learners) shuts "
        "it down in stop(); a Ray the user (or another algorithm) started stays up "
        "(tests/test_ray_stop.py)",
        "RLlib 2.60 never shuts Ray down (its actors start Ray through auto-init; Ray's own "
        "atexit ends it with the process): a stopped algorithm here leaves no Ray behind it, "
        "and a script that runs several in turn starts one at a time",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.get_module",
        "the local EnvRunner's module, as RLlib's (a torch module's inference-only copy); a "
        "multi-agent module id that is not there raises a KeyError naming the modules (RLlib "
        "returns None); a numpy module is the EnvRunner's numpy copy (PPO's keeps its value "
        "network there); the learner's whole module is algo.learner_module() "
        "(tests/test_offline_spaces_and_get_module.py)",
        "a KeyError names the mistake where None fails later, at its first use; the numpy "
        "modules are this project's own, not RLlib's",
        BEHAVIOUR,
    ),
    Difference(
        "RLlibCallback.on_offline_eval_runners_recreated",
        "defined (a no-op, as in RLlib) and never fired; an override gets a warning",
        _OFFLINE + ", so there are no runners to recreate",
        BEHAVIOUR,
    ),
    # -- test_utils -----------------------------------------------------------------------------
    # -- RLModule, RLModuleSpec, MultiRLModule, MultiRLModuleSpec ----------------------------------
    Difference(
        "RLModule.CLASS_AND_CTOR_ARGS_FILE_NAME",
        "missing: a module checkpoint's metadata.json holds the class as a 'module:qualname' "
        "import path and the constructor arguments as plain data",
        "checkpoints hold no pickle (RLlib's class_and_ctor_args.pkl is one), so loading a "
        "checkpoint from anywhere runs no code",
    ),
    # -- RLlib's tests left out of tests/rllib/ ---------------------------------------------------
    Difference(
        "tests/rllib/test_catalog.py::test_get_encoder_config",
        "left out",
        "it builds the base Catalog's encoder configs (_get_encoder_config: MLPEncoderConfig, "
        "CNNEncoderConfig) for 'tf2' and 'torch'; the catalogs here build this project's "
        "torch networks through PPOCatalog's builders, and TensorFlow is not supported",
        TEST,
    ),
    Difference(
        "tests/rllib/test_catalog.py::test_atari_help",
        "left out",
        "its error comes from the base Catalog's encoder-config decision at construction "
        "(_determine_components_hook), which the catalogs here do not make; the torch CNN "
        "encoder refuses an image size without a preset, naming conv_filters",
        TEST,
    ),
    Difference(
        "tests/rllib/test_callbacks_on_env_runner.py::test_tune_trial_id_visible_in_callbacks",
        "left out",
        "it checks nothing when its trial fails (Tuner.fit() returns the trial's error "
        "without raising it); tests/test_tune.py::"
        "test_ray_backend_runners_are_placed_in_the_trials_placement_group checks that every "
        "EnvRunner of a trial has its tune_trial_id",
        TEST,
    ),
    Difference(
        "tests/rllib/test_callbacks_on_algorithm.py::test_on_env_runners_recreated_callback",
        "one line changed",
        'its callback counts recreations with reduce="sum", which RLlib 2.60\'s '
        "MetricsLogger (and this one) clears at each train()'s reduce, so its last check "
        "(more than one recreation per runner, read after train()) cannot hold there "
        'either; the port counts with reduce="lifetime_sum"',
        TEST,
    ),
    Difference(
        "tests/rllib/test_callbacks_old_api_stack.py::"
        "test_on_sub_environment_created_with_remote_envs",
        "left out",
        "remote_worker_envs makes sub-envs Ray actors (old stack)",
        TEST,
    ),
    Difference(
        "tests/rllib/test_callbacks_old_api_stack.py::PGConfig",
        "runs as PPOConfig",
        "PGConfig was removed from RLlib",
        TEST,
    ),
    Difference(
        "tests/rllib/test_single_agent_env_runner.py::test_distributed_env_runner",
        "its remote_worker_envs=True round steps the sub-envs in the actor like the "
        "other round (a register_env name travels inside the pickled config, as "
        "RLlib's registry does through Ray)",
        "remote_worker_envs (sub-envs as Ray actors) is an old-stack feature",
        TEST,
    ),
    Difference(
        "tests/rllib/test_single_agent_env_runner.py::test_env_context",
        'the "Swimmer-v4" parts left out; env_runner.env.env.get_attr reads '
        "env_runner.env.get_attr",
        "MuJoCo is not installed here; RLlib wraps the vector env once more in "
        "DictInfoToList (here env_runner.env is the vector env)",
        TEST,
    ),
    Difference(
        "tests/rllib/test_single_agent_env_runner.py::test_vectorize_mode",
        "env_runner.env.env reads env_runner.env",
        "RLlib wraps the vector env once more in DictInfoToList (here env_runner.env "
        "is the vector env)",
        TEST,
    ),
    Difference(
        "tests/rllib/test_env_runner_failures.py::test_modules_are_restored_on_recovered_env_runner",
        "left out",
        "not ported yet: its on_algorithm_init callback adds a module at run time "
        "(Algorithm.add_module, tested here in tests/test_multi_agent_checkpoints.py::"
        "test_a_restarted_env_runner_has_the_added_module)",
        TEST,
    ),
    Difference(
        "tests/rllib/test_env_runner_failures.py::the IMPALA and SAC cases",
        "left out (3 cases)",
        "those algorithms do not exist here",
        TEST,
    ),
    Difference(
        "tests/rllib/test_env_runner_failures.py::test_eval_env_runners_on_infinite_episodes",
        "left out",
        "it sets api_stack(...=False), which now runs the new stack; its evaluation "
        "round on never-ending episodes times out and the timed-out runner's restart "
        "did not finish within the test's wait on a loaded 2-core machine",
        TEST,
    ),
    Difference(
        "tests/rllib/test_env_runner_failures.py::time.sleep(15.0)",
        "1 s before restore_env_runners()",
        "a failed runner is restarted within the train() that saw it fail",
        TEST,
    ),
    Difference(
        "tests/rllib/test_metrics_logger.py::test_edge_cases",
        "a strict xfail: its last check expects a leaf EMA to be NaN after reduce()",
        "RLlib 2.60's own EmaStats keeps a leaf's EMA after reduce() (it fails this "
        "check too); this project follows the class",
        TEST,
    ),
    Difference(
        "tests/rllib/test_stats.py::test_peek_and_reduce[EmaStats]",
        "a strict xfail (2 cases)",
        "the same leaf-EMA check as test_metrics_logger.py::test_edge_cases",
        TEST,
    ),
    Difference(
        "tests/rllib/test_stats.py::torch halves",
        "the torch-tensor halves of two tests skip themselves (the file's try_import_torch "
        "reports torch missing)",
        "the Stats classes reduce numbers and numpy arrays; this project's learners, the "
        "torch one included, log Python floats, so no torch tensor reaches the metrics",
        TEST,
    ),
    Difference(
        "tests/rllib/test_metrics_logger.py::@ray.remote actors",
        "named objects (from trainer import named_objects as ray)",
        "there is no Ray cluster in the default backend",
        TEST,
    ),
    Difference(
        "tests/rllib/test_algorithm.py::multi-agent module and old-stack policy cases, "
        "BC (offline data)",
        "left out",
        f"{_MULTI_AGENT}; {_OLD_STACK}; {_OFFLINE}",
        TEST,
    ),
    Difference(
        "tests/rllib/test_algorithm.py::test_space_inference_from_remote_workers",
        "left out",
        "it asserts one build is faster than another; here the spaces come with the "
        "workers' start-up reply, so all three take the same time",
        TEST,
    ),
    # -- behaviour ----------------------------------------------------------------------------
    Difference(
        "Algorithm.from_checkpoint / RLModule.from_checkpoint (a checkpoint RLlib 2.60 wrote)",
        "read without Ray and without running its pickles (a restricted unpickler rebuilds "
        "numpy arrays, gymnasium spaces and plain data and names every other global): the "
        "modules' weights, a MeanStdFilter's statistics and the counters are restored, the "
        "config's plain settings are set, a setting whose value is code (a callbacks class, "
        "an env creator) is left out with a warning naming it, and a multi-agent learner's "
        "optimizer moments start afresh (a single-agent one's are restored: tests/"
        "test_rllib_checkpoints.py::test_the_cartpole_checkpoint_continues_training_here_to_450)",
        "unpickling RLlib's class_and_ctor_args.pkl would run whatever code it names and needs "
        "Ray; its multi-agent optimizer states are not mapped here yet",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.from_checkpoint (a checkpoint from another user or machine)",
        "the pickled class and config are unpickled when signed with this user's key (own "
        "checkpoints load as in RLlib, lambdas and __main__ classes included); another's is "
        "rebuilt from its plain-data config.json, and one whose config has no import path is "
        "refused until `python -m trainer trust PATH` or allow_pickle=True "
        "(tests/test_signed_configs.py::test_own_main_module_config_loads_another_keys_"
        "needs_trust)",
        "unpickling a checkpoint runs whatever code it holds; RLlib unpickles any checkpoint's "
        "class_and_config.pkl",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.training(learner_connector=...)",
        "PPO, IMPALA and APPO (IMPALA's and APPO's in their learner thread; multi-agent "
        "configs too, over the MultiAgentEpisodes) run the pieces over each train batch's "
        "episodes before the learner makes the batch; a piece that writes batch columns is "
        "refused at train(), naming them, except add_n_batch_items(column='rewards'), which "
        "writes the episode's rewards; other algorithms refuse the setting at "
        "validate() unless its pieces' output is in the episodes already "
        "(FrameStackingLearner: with these three it stacks the episodes' frames as RLlib's; "
        "with the others the EnvRunners stack the frames into the "
        "episodes; tests/test_frame_stacking.py) (tests/test_connectors.py::test_ppo_learns_"
        "from_the_episodes_its_learner_connector_rewrote)",
        "the learners here make their batches from the episodes (RLlib's default pieces are "
        "their code, not ConnectorV2 pieces), so only pieces that rewrite episodes have "
        "somewhere to act",
        BEHAVIOUR,
    ),
    Difference(
        "offline_data(output=...): the evaluation EnvRunners' files",
        "written under evaluation-run-<index>-<write>/ beside the training runners' "
        "run-<index>-<write>/ (tests/test_offline.py::"
        "test_the_evaluation_runners_record_their_episodes_too)",
        "RLlib's evaluation runners name their writes run-<index>-... as the training runners "
        "do, so the two can write to the same name",
        BEHAVIOUR,
    ),
    Difference(
        "ray.data (Ray Data) in a script run through the launcher",
        "read_parquet, read_json and read_binary_files of local files, in this process: a "
        "Dataset's count, schema, columns, take, take_all, take_batch, iter_rows, "
        "iter_batches, map, map_batches, materialize, to_pandas and show; Ray's scheduling "
        "options are taken without effect; other functions and methods, and paths of other "
        "stores (s3://, gs://), raise RLlibNotAvailable when used (tests/test_offline.py::"
        "test_an_rllib_script_counts_the_recorded_rows_with_ray_data, "
        "tests/test_offline_pipeline.py)",
        "RLlib's examples read their recordings back with read_parquet, and RLlib's "
        "OfflineData subclasses read and map their files with these; the trainer itself reads "
        "offline data with pyarrow, without Ray Data",
        BEHAVIOUR,
    ),
    Difference(
        "TorchMetaLearner / TorchDifferentiableLearner: TrainingData(episodes=, "
        "episodes_refs=, batch_refs=, data_iterators=)",
        "refused with UnsupportedCall when the update gets them, naming TrainingData(batch=...) "
        "(tests/test_meta_learning.py::test_bad_input_is_refused_by_name); batches of columns "
        "train as RLlib's, second-order terms included",
        "episodes need RLlib's learner connector pipeline, refs and Ray Data iterators Ray; "
        "RLlib's MAML example and the meta learners it shows train on batches",
        BEHAVIOUR,
    ),
    Difference(
        "Episode actions of a composite action space (Tuple, Dict, MultiDiscrete)",
        "each step's action is recorded as one float32 row of the leaves' values "
        "(episode.get_actions(), the learners' batch['actions']); the env, "
        "compute_single_action and RLlib's torch distributions get the nested action "
        "(ActionLayout(space).unflatten_one(row); tests/test_action_spaces.py)",
        "the EnvRunners record every step into array columns that the episodes view without a "
        "copy; nested actions would take them off that path. RLlib's TorchMultiDistribution "
        "reads such rows as well as nested actions",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.learners(num_learners=N), N >= 2",
        "N data-parallel learners, of which learner 0 is the algorithm's own learner in the "
        "main process and learners 1..N-1 are worker processes of this machine (with "
        "env_runners(backend='ray'): Ray actors on the cluster's nodes); each step's "
        "gradients are averaged through shared memory (Ray actors: over TCP to learner 0) "
        "(trainer/algorithms/data_parallel.py; "
        "PPO, SAC, TQC, DQN, APPO, IMPALA, DreamerV3, BC, MARWIL, CQL, IQL and RLlib's "
        "example custom algorithm; "
        "multi-agent offline runs and GPU learners warn and train on one "
        "learner; tests/test_ray_cluster.py::test_learner_actors_give_the_weights_of_"
        "averaged_gradients). Multi-agent "
        "PPO shards each module's episode chunks on their own, not whole multi-agent episodes",
        "RLlib puts all N in Ray actors and averages with torch DistributedDataParallel (gloo "
        "on CPU); here learner 0 is the one the weights, states and checkpoints are read "
        "from, so nothing else changes with N, one machine needs no Ray, and the numpy "
        "learners need no torch",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig settings that have no effect here (num_learners, num_gpus, "
        "num_cpus_per_env_runner, ...)",
        "a value of another kind than RLlib's default is refused with a ConfigError "
        "(tests/test_hostile_settings.py)",
        "RLlib stores any value; a wrong one here would only hide a typo",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig: sizes past what the machine can do",
        "counts above 2**63-1, waits above threading.TIMEOUT_MAX, hidden layers holding more "
        "than 2**31 weights, seeds above 2**63-1 and more num_env_runners than the machine's "
        "memory holds (10 MiB each) are refused by the builder or validate()",
        "RLlib takes any number and fails later (an OverflowError or MemoryError mid-run)",
        BEHAVIOUR,
    ),
    Difference(
        "config.<setting> = value",
        "checked at once, as the builder call would (validate() checks again what was "
        "written past both)",
        "RLlib checks at validate(), or never",
        BEHAVIOUR,
    ),
    Difference(
        "Callables in the config (policy_mapping_fn, policies_to_train, env_task_fn, "
        "custom_evaluation_function, env_to_module_connector, an env creator)",
        "one that cannot be called with the arguments RLlib passes is refused at the "
        "builder call, naming its signature",
        "RLlib fails with a TypeError when it first calls it, in a worker",
        BEHAVIOUR,
    ),
    Difference(
        "environment(observation_space=, action_space=)",
        "spaces the env cannot fill (without an env-to-module connector) are named when the "
        "runner starts",
        "RLlib fails at sampling with a reshape error",
        BEHAVIOUR,
    ),
    Difference(
        "Ray named actors (a call to one whose process stopped or hangs)",
        "a call to a named object whose server process is stopped or stuck fails within "
        "UNRESPONSIVE_REPORTED_WITHIN_S (4 s) with a ServerFailure; one whose server died "
        "fails at once with its exit status; a method that runs long on a healthy server is "
        "waited for (tests/test_named_objects_health.py)",
        "no call should hang; Ray waits for a stopped actor",
        BEHAVIOUR,
    ),
    Difference(
        "SingleAgentEpisode objects from EnvRunner.sample() and in on_episode_end",
        "an episode that no callback needed while it ran is an EpisodeView, a "
        "SingleAgentEpisode subclass made from the runner's step columns when it ends; "
        "its buffers are made when first read, and it pickles as a plain "
        "SingleAgentEpisode (tests/test_columnar_sampling.py::test_columnar_sampling_"
        "records_what_the_per_step_loop_records)",
        "per-episode objects and per-step appends were the measured cost of sampling "
        "short episodes; `isinstance(episode, SingleAgentEpisode)` holds, "
        "`type(episode) is SingleAgentEpisode` does not",
        BEHAVIOUR,
    ),
    Difference(
        "the SingleAgentEpisode on_episode_step gets",
        "a LiveEpisode, a SingleAgentEpisode subclass over the EnvRunner's rows: one value "
        "is read from them, whole columns are lists made when read, the setters write into "
        "them; a change to a buffer's `data` in place is not kept, and a value read before a "
        "setter keeps its old value (tests/test_live_episode.py::test_what_a_step_callback_"
        "writes_is_in_the_returned_episodes_and_metrics)",
        "appending each step to every episode object cost a no-op step callback a third of "
        "the sampling rate at 8 sub-envs; RLlib's setters are the API that changes an episode",
        BEHAVIOUR,
    ),
    Difference(
        "policy_mapping_fn(agent_id, episode) at a multi-agent episode's reset",
        "when no on_episode_start / on_episode_step callback reads episodes while they run, "
        "the MultiAgentEnvRunner logs a new episode's steps and fills the episode object when "
        "it ends or the sample() call returns: at the reset the mapping function gets the "
        "episode (its id_, custom_data) before the reset is recorded, with no agents yet "
        "(tests/test_multi_agent_episode_fast_path.py::test_the_mapping_function_sees_the_"
        "episode_as_documented)",
        "RLlib 2.60 calls it while it adds the reset's agents one by one, so it sees the "
        "agents before the one it maps; recording every agent step into its single-agent "
        "episode was a measured sixth of multi-agent sampling at 8 agents",
        BEHAVIOUR,
    ),
    Difference(
        "RLModule.as_multi_rl_module",
        "the MultiRLModule holds this very module (same instance and weights) under "
        '"default_policy" (tests/test_rl_module_api.py::test_default_modules_build_from_spec_'
        "and_answer_the_api)",
        "RLlib 2.60 builds a new module from the module's spec, with freshly initialised "
        "weights: a trained module wrapped that way silently loses its training",
        BEHAVIOUR,
    ),
    Difference(
        "StatefulRandomRLModule (ray.rllib.examples.rl_modules.classes.random_rlm)",
        "its forward passes return a random state per row under Columns.STATE_OUT, as its "
        "docstring says (tests/test_rl_module_api.py::test_stateful_random_module_returns_"
        "its_state)",
        "RLlib 2.60's puts the state into a _random_forward method that nothing calls (and "
        "that calls a parent method that does not exist), so it returns no state",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.multi_agent(policies=<a set>)",
        "the policies are stored in sorted order (tests/test_multi_agent_config.py::"
        "test_policies_take_rllib_s_forms_as_policy_specs); None means the single "
        '"default_policy" (RLlib raises a TypeError for None)',
        "a set's order depends on the process's string hashing, and the order of the modules "
        "must not change a seeded run",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisode getters on cut() chunks",
        "an agent's latest observation is left out by its position in the chunk's buffers, so "
        "a successor chunk reads all its steps "
        "(tests/test_multi_agent_episode_api.py::test_a_cut_chunk_reads_its_lookback_and_all_"
        "its_actions)",
        "RLlib 2.60 compares raw agent timesteps with buffer lengths there: in a cut successor "
        "its getters drop real steps (5 of a chunk's 6 actions) or raise IndexError",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisode.concat_episode (across an action hanging at the boundary)",
        "the hanging step is completed from the second chunk; rewards of agents absent from it "
        "add up (tests/test_multi_agent_episode_api.py::test_slice_and_concat_across_an_action_"
        "that_hangs_at_the_boundary)",
        "RLlib 2.60 fails its own assertion when an agent acted just before the split and "
        "observes again only in the second chunk",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisode getters (neg_index_as_lookback before the lookback; "
        "get_truncateds()['__all__']; key=None with env_steps=False)",
        "fill or IndexError like any index out of range; is_truncated; a dict per key "
        "(tests/rllib/test_multi_agent_episode.py, "
        "tests/test_multi_agent_episode_api.py::test_env_steps_and_agent_steps_getters_with_"
        "fill_and_lists)",
        "RLlib 2.60 returns an agent's pending action or reward there; returns is_terminated "
        "for __all__; raises TypeError / AttributeError",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisode.get_state",
        "plain msgpack data (agent-keyed maps as [agent_id, value] pairs); the mapping "
        "function is stored by import path, a lambda is left out and the restored episode "
        "keeps its agents' modules (tests/test_multi_agent_episode_api.py::test_state_with_int_"
        "agent_ids_and_a_lambda_mapping_fn)",
        "checkpoints here are read without unpickling",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.callbacks(...) with a callable of the wrong signature",
        "refused at once with a ConfigError naming the event, the callable (file:line), what it "
        "cannot take and what the event passes; RLlib's documented and old-stack signatures are "
        "accepted (tests/test_hostile_callback_signatures.py)",
        "RLlib 2.60 stores any callable and raises a TypeError when the event first fires, "
        "possibly in a worker process long after the config was written",
        BEHAVIOUR,
    ),
    Difference(
        "RLlibCallback.on_checkpoint_loaded",
        "also passes metrics_logger=, but only to a callable that can take it, so a callable "
        "written for RLlib's call (algorithm= alone) runs (tests/test_hostile_callback_"
        "signatures.py::test_the_keyword_table_is_what_the_events_pass_and_rllib_style_"
        "callables_run)",
        "every other Algorithm event passes the MetricsLogger; RLlib 2.60 passes algorithm= "
        "alone to this one",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisode.get_sample_batch",
        "raises NotImplementedError naming the new stack's getters",
        _OLD_STACK,
        BEHAVIOUR,
    ),
    Difference(
        "GroupAgentsWrapper (MultiAgentEnv.with_agent_groups)",
        "without given spaces, each group's Tuple spaces are made from its members'; "
        "agents/possible_agents name the groups "
        "(tests/test_multi_agent_env.py::test_grouped_agents_act_as_one_with_tuple_spaces_and_"
        "summed_rewards)",
        "RLlib's docstring promises both, its code leaves the spaces None and the agents empty",
        BEHAVIOUR,
    ),
    Difference(
        "TwoStepGame, GuessTheNumberGame, PettingZooEnv, ParallelPettingZooEnv, MultiAgentConnect4",
        "agents/possible_agents are set (PettingZoo's own order) "
        "(tests/test_multi_agent_env.py::test_example_env_passes_the_checker_and_plays_to_the_end)",
        "RLlib leaves them empty or in set order, which its own checker refuses",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentDebugCounterEnv",
        "builds and returns float32 observations "
        "(tests/test_multi_agent_env.py::test_example_env_passes_the_checker_and_plays_to_the_end)",
        "RLlib 2.60's constructor raises (it assigns the read-only num_agents) and its "
        "observations are float64, outside its own float32 space",
        BEHAVIOUR,
    ),
    Difference(
        "check_multiagent_environments",
        "also checks observations against their spaces and requires '__all__' in "
        "terminateds; accepts keys of possible_agents "
        "(tests/test_multi_agent_env.py::test_checker_names_the_agent_the_key_and_what_is_"
        "allowed)",
        "a bad observation or a missing '__all__' otherwise fails later, inside sampling, "
        "with a KeyError; agents leave `agents` when they end",
        BEHAVIOUR,
    ),
    Difference(
        "PettingZooEnv.render / ParallelPettingZooEnv.render",
        "render() takes no mode; reset passes the seed on "
        "(tests/test_multi_agent_env.py::test_pettingzoo_aec_env_returns_only_the_acting_agent)",
        "RLlib's render(mode) call fails on PettingZoo 1.24+",
        BEHAVIOUR,
    ),
    Difference(
        "make_multi_agent",
        "RLlib's example classes made by it carry their module attribute's name "
        "(MultiAgentCartPole, ...) and pickle by reference "
        "(tests/test_multi_agent_env.py::test_example_classes_pickle_by_reference)",
        "RLlib's are all called MultiEnv; error messages name the env",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisodeReplayBuffer(capacity=...)",
        "capacity also limits each module's stored agent steps (its oldest agent episodes "
        "go first) (tests/test_multi_agent_dqn.py::test_two_policies_learn_with_env_runner_"
        "processes)",
        "each module's steps live in a single-agent buffer of their own, sampled and "
        "prioritized with its array code; RLlib limits only the stored episodes' env steps, "
        "so a module shared by N agents can hold N x capacity steps there",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEpisodeReplayBuffer.sample(replay_mode='synchronized') and the uniform "
        "buffer's draws near an episode's end",
        "a draw may be an episode's final transition (terminated/truncated set there); a "
        "uniform n-step draw near the end stops at the end "
        "(tests/rllib/test_multi_agent_episode_buffer.py)",
        "RLlib's index never reaches the final observation, so it never samples the last "
        "transition; the single-agent uniform buffer here stops at the end too",
        BEHAVIOUR,
    ),
    Difference(
        "env_runners(env_to_module_connector=...) in a multi-agent run",
        "FlattenObservations(multi_agent=True, agent_ids=...), MeanStdFilter(multi_agent="
        "True) and MultiAgentObservationPreprocessor subclasses run, applied to each step's "
        "observations as they leave each sub-env (preprocess() gets episode=None); any other "
        "piece is refused when the runner is built, naming it (tests/test_multi_agent_"
        "examples.py::test_other_pieces_in_a_multi_agent_run_are_refused_naming_the_piece)",
        "the MultiAgentEnvRunner has no multi-agent connector pipeline over its episodes yet: "
        "the pieces that rewrite a step's observations from those observations alone run "
        "this way",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.add_module(add_to_learners=True, add_to_env_runners=False)",
        "refused, changing nothing (tests/test_multi_agent_checkpoints.py::test_add_module_"
        "refusals_change_nothing)",
        "the learners' weights go to every EnvRunner, which must then hold the module",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.restore_from_path(component=...)",
        "takes learner_group/learner/rl_module and learner_group/learner/rl_module/<module_id> "
        "(tests/test_multi_agent_checkpoints.py::test_component_restore_errors_name_the_problem)",
        "the learner's modules are the only component that restores on its own here; the "
        "rest of a checkpoint restores whole (all or nothing)",
        BEHAVIOUR,
    ),
    Difference(
        "RLModule(catalog_class=...)",
        "PPOCatalog and its subclasses are accepted on PPO's default modules: the torch module "
        "builds its encoder and heads through the catalog (an overridden build_pi_head / "
        "build_vf_head / build_actor_critic_encoder shapes them; tests/test_catalogs.py, "
        "tests/rllib/test_catalog.py); the numpy module builds the same layout itself and "
        "refuses a subclass that overrides builders; other catalog classes are refused at "
        "config time; the base Catalog decides RLlib's encoder configs when made "
        "(_get_encoder_config: MLPEncoderConfig, CNNEncoderConfig, RecurrentEncoderConfig; "
        "build_encoder builds them in torch), PPOCatalog and DQNCatalog decide theirs lazily",
        "the builders return this project's torch networks (an encoder with encode_actor / "
        "encode_critic), not RLlib's Encoder/Model config classes; the numpy networks cannot "
        "run a torch head",
        BEHAVIOUR,
    ),
    Difference(
        "default torch modules' initial weights (no *_initializer in the model config)",
        "orthogonal weights and zero biases, as the numpy modules' layers: gain sqrt(2) "
        "before a ReLU-like activation, 1 otherwise, 0.01 for PPO's policy output "
        "(tests/test_torch_modules.py::test_default_layers_start_as_the_numpy_modules_layers); "
        "with a seed, the default PPO and DQN modules start from the numpy module's weights "
        "for that seed (tests/test_torch_numpy_update.py::test_a_seeded_torch_run_starts_"
        "from_the_numpy_runs_weights)",
        "RLlib keeps torch's default (Kaiming uniform weights and biases); from it PPO on "
        "Pendulum-v1 took two to three times the env steps of the same run from these "
        "(bench/frameworks.py); a seeded run now learns alike on both frameworks",
        BEHAVIOUR,
    ),
    Difference(
        "Adam in the numpy learners (and the default torch learner's update, computed in numpy)",
        "every 16 steps the moments' entries below float32's smallest normal number (1.2e-38) "
        "become zero (tests/test_learner_fast_paths.py::test_adam_flushes_the_moments_of_"
        "parameters_whose_gradient_stays_zero); each such entry moved its parameter by less "
        "than 1e-30 of the learning rate",
        "torch's Adam keeps them: a dead ReLU unit's first moment shrinks into the subnormal "
        "range and stays there, and Intel CPUs compute on subnormals through a slow path (an "
        "Adam step of RLlib's Pendulum network took 1.4 ms on an Intel Xeon, 0.1 ms on an AMD "
        "EPYC)",
        BEHAVIOUR,
    ),
    Difference(
        "RLModuleSpec(load_state_path=...)",
        "a default torch PPO module also loads the numpy default PPO module's checkpoint "
        "(names and layout converted, weights transposed); refused with CheckpointError "
        "naming what differs when the networks differ (tests/test_torch_multi_agent.py::"
        "test_load_state_path_loads_a_numpy_module_checkpoint_into_the_torch_module)",
        "RLlib has no numpy modules; this lets a numpy pretraining run (a config that chose "
        "no framework) feed torch training, as RLlib's pretraining example does",
        BEHAVIOUR,
    ),
    Difference(
        "cv2 (OpenCV) in RLlib's Atari wrappers",
        "not needed: the wrappers grayscale and resize with numpy, OpenCV's weights and area "
        "averaging (tests/test_atari_wrappers.py runs RLlib's wrapper source beside ours, step "
        "for step); ALE's games come with the atari extra (ale-py ships the ROMs)",
        "OpenCV is a large dependency for two image operations",
        BEHAVIOUR,
    ),
    Difference(
        "uint8 images into the default torch modules (a CNN encoder's input)",
        "scaled to [-1, 1) as RLlib's NormalizedImageEnv scales frames (x / 128 - 1); RLlib "
        "feeds them as floats of 0-255",
        "frames can travel from the EnvRunners to the learner as bytes, a quarter of their "
        "float32 size (wrap_atari_for_new_api_stack(..., normalize=False)), while the network "
        "sees what RLlib's wrapper gives it",
        BEHAVIOUR,
    ),
    Difference(
        "image observations without a preset CNN size, in a config that chose no framework",
        "the numpy MLP takes each image as one flat row, with a warning naming "
        "model_config['conv_filters']; RLlib (torch by default) raises there, naming "
        "conv_filters. Images of a preset size (96, 84, 64, 42, 10) run on torch's default CNN, "
        "as in RLlib (tests/test_torch_cnn.py::"
        "test_a_config_without_framework_runs_images_on_rllibs_cnn)",
        "numpy is the default framework of this project's own imports; a script that "
        "trained on such images before keeps training (an RLlib script under the launcher "
        "runs on RLlib's default, torch, and gets RLlib's CNN or its error)",
        BEHAVIOUR,
    ),
    Difference(
        "RLlib's example multi_agent/self_play_footsies.py",
        "fails at its first import: No module named 'ray.rllib.examples.algorithms.ppo' "
        "(docs/rllib_compatibility.md)",
        "RLlib 2.60 fails there too: its wheel does not ship the module the script imports "
        "(examples/algorithms/ppo/multi_agent_footsies_ppo.py); run directly on the "
        "installed RLlib, the script stops with the same ModuleNotFoundError. Where the "
        "module exists (RLlib's repository), the script downloads the Footsies game from "
        "Ray's S3 bucket, which this machine cannot reach",
        BEHAVIOUR,
    ),
    Difference(
        "RLlib's example algorithms/dreamerv3/atari_200M_dreamerv3.py --env=ale_py:ALE/Pong-v5",
        "fails building the module: ValueError, DreamerV3 takes 64x64 images "
        "(docs/rllib_compatibility.md)",
        "RLlib 2.60 fails there too: the script hands ALE's raw 210x160x3 frames to "
        "DreamerV3, and RLlib's module build raises ValueError('No default CNN configuration "
        "for obs shape [210, 160, 3]...'). Its siblings (atari_100k_dreamerv3.py, "
        "atari_dreamerv3.py) resize the frames to 64x64 and run here",
        BEHAVIOUR,
    ),
    Difference(
        "RLlib's example inference/policy_inference_after_training_w_connector.py "
        "--use-onnx-for-inference",
        "fails after training, in torch.onnx.export: KeyError: -1 (docs/rllib_compatibility.md)",
        "RLlib 2.60 fails there too: the script passes the export's arguments as a dict, "
        "`torch.onnx.export(rl_module, {'batch': ...})`, which torch's exporter (dynamo=True, "
        "the default since torch 2.9) reads as a sequence; RLlib's own DefaultPPOTorchRLModule "
        "(LSTM) raises the same KeyError: -1 under torch 2.13. Its sibling "
        "policy_inference_after_training.py --use-onnx-for-inference passes here: a traced "
        "numpy module runs its torch twin (RLlib's default torch module with its weights)",
        BEHAVIOUR,
    ),
    Difference(
        "RLlib's example offline_rl/offline_rl_with_image_data.py",
        "fails: AttributeError: 'ImageOfflineData' object has no attribute 'data' "
        "(docs/rllib_compatibility.md), after the logged refusal of its s3:// input",
        "RLlib 2.60 fails there too on a machine without S3 access (the same AttributeError, "
        "after Ray Data's logged network error); with its images on local files, RLlib's "
        "ImageOfflineData reads them here as in RLlib, and its ImageOfflinePreLearner's "
        "call fails here as in RLlib 2.60: its _map_to_episodes is a staticmethod that the "
        "base class calls with the batch in its first parameter (TypeError: missing 1 required "
        "positional argument: 'batch'; tests/test_offline_pipeline.py::"
        "test_rllibs_image_example_classes_run_on_local_images)",
        BEHAVIOUR,
    ),
    Difference(
        "RLlib's RLModule.from_checkpoint on a checkpoint written here, outside the launcher",
        "fails in RLlib (the module folder has no class_and_ctor_args.pkl). Under `python -m "
        "trainer run`, every Python process the script starts, and the workers of a real Ray "
        "one of them starts, import this project's RLlib and load it (RLlib's "
        "ray_serve_with_rllib.py runs so: its Ray Serve replica loads the trained module); "
        "`python -m trainer export CHECKPOINT --format rllib` writes a module folder RLlib "
        "loads anywhere",
        "checkpoints hold no pickle, so loading one from anywhere runs no code",
        BEHAVIOUR,
    ),
    Difference(
        "Dict/Tuple observations with the default numpy modules",
        "refused, naming FlattenObservations or a torch module (torch modules get them "
        "nested, as in RLlib)",
        "the numpy networks take flat rows",
        BEHAVIOUR,
    ),
    Difference(
        "recurrent torch modules with Dict/Tuple observations",
        "refused, naming FlattenObservations",
        "the learner's sequence padding is not nested-aware",
        BEHAVIOUR,
    ),
    Difference(
        "ValueFunctionAPI.compute_values changing its batch (RLlib's GAE connector)",
        "the columns compute_values sets or replaces are copied into the train batch (as "
        "ActionMaskingTorchRLModule needs)",
        "the train batch is built in numpy, apart from the tensor batch compute_values sees; "
        "in RLlib that batch object is the train batch",
        BEHAVIOUR,
    ),
    Difference(
        "TorchRLModule sampling (TorchCategorical, TorchDiagGaussian)",
        "the EnvRunners draw the actions of RLlib's two default distributions with their "
        "numpy twins and the runner's seeded numpy generator "
        "(tests/test_torch_ppo.py::test_torch_sampling_draws_with_the_runners_seeded_"
        "generator); other TorchDistribution classes sample in torch",
        "the same draws as the numpy modules make, reproducible per seed and EnvRunner, "
        "without torch's global generator",
        BEHAVIOUR,
    ),
    Difference(
        "TorchLearner (torch_skip_nan_gradients, a NaN or infinite loss or gradient)",
        "NonFiniteUpdateError before the optimizer step, weights and optimizer state "
        "unchanged (tests/test_torch_learner.py::test_a_non_finite_loss_raises_before_the_"
        "weights_change)",
        "the numpy learners' policy: a run that diverged stops where it can be resumed "
        "from, instead of training on zeroed gradients",
        BEHAVIOUR,
    ),
    Difference(
        "TorchLearner.configure_optimizers_for_module / register_optimizer",
        "optimizers are registered as in RLlib, for the learner's one module: "
        "self.module[module_id] is self.rl_module, module_id is the learner's own or "
        "ALL_MODULES (a multi-agent run has one learner per module, or, for an algorithm "
        "that trains the whole MultiRLModule, one over all of it whose optimizers may span "
        "modules, as RLlib's: tests/test_joint_modules.py); a parameter belongs to one "
        "optimizer (checked at registration); no "
        "grad scaler, torch.compile or DDP; state saved by optimizer name, then parameter "
        "name (tests/test_torch_learner_optimizers.py::test_two_optimizer_state_resumes_"
        "exactly_through_msgpack)",
        "one learner in one process; checkpoints hold names and arrays, never torch's ids "
        "or pickles",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.experimental(_torch_lr_scheduler_classes=...)",
        "schedulers are built with the learner (RLlib: at the first gradient step), one "
        "chain per optimizer (RLlib 2.60 overwrites a module's other optimizer's chain), and "
        "their states are checkpointed (tests/test_torch_learner_optimizers.py::"
        "test_lr_scheduler_state_resumes_exactly_and_is_checked)",
        "exact resume; RLlib's two-optimizer case rebuilds its chains at every step",
        BEHAVIOUR,
    ),
    Difference(
        "Learner results per optimizer, Learner.metrics",
        "gradients_<optimizer>_global_norm (before clipping) on every update; "
        "<optimizer>_learning_rate for each optimizer but the default (curr_lr); values "
        "logged with self.metrics are reduced once per update into its results",
        "result keys match the numpy learner's; one learner, results per update (RLlib "
        "logs norms only when clipping by global_norm or with log_gradients)",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig.overrides(<builder method name>=...)",
        "an IgnoredSettingWarning, and the key is dropped "
        "(tests/test_config.py::test_to_dict_from_dict_round_trip_and_overrides)",
        "RLlib accepts it and applying it hides the method with no effect: the same outcome, "
        "and the user is told",
        BEHAVIOUR,
    ),
    Difference(
        "AlgorithmConfig settings outside their usual range (gamma=1.5, lambda_=2, "
        "clip_param=0, kl_target=0, grad_clip=0, evaluation_interval=0, DQN's tau=2)",
        "taken, with one UnusualSettingWarning per config naming the setting, the value and "
        "the usual range (tests/test_unusual_settings.py)",
        "RLlib takes them silently; they are accepted here too (a script that runs on RLlib "
        "runs here), and the user is told",
        BEHAVIOUR,
    ),
    Difference(
        "handle.method.remote() on a named object whose server died (Ray: a dead actor)",
        "raises NamedObjectError in the caller, seen within 50 ms of the death "
        "(tests/test_named_objects_health.py::test_remote_calls_raise_in_the_caller_once_the_"
        "server_is_killed)",
        "Ray raises RayActorError at ray.get(); a callback that sends calls without reading "
        "them would lose them silently, where raising it reports them as the callback's "
        "error (and ends train() when it repeats)",
        BEHAVIOUR,
    ),
    Difference(
        "model_config lstm_use_prev_action / lstm_use_prev_reward",
        "the previous action (one-hot for Discrete) and reward are added to the LSTM's input "
        "(tests/test_torch_lstm.py::test_box_actions_with_previous_actions_and_rewards_"
        "sample_and_train)",
        "RLlib 2.60's new-stack catalog ignores both keys (its users add the "
        "PrevActionsPrevRewards connector); a key that is accepted takes effect here",
        BEHAVIOUR,
    ),
    Difference(
        "TorchCategorical.rsample, TorchMultiCategorical.from_logits(temperatures=)",
        "rsample uses the distribution's probabilities when built from logits; temperatures "
        "divide each component's logits (tests/test_torch_modules.py::test_categorical_"
        "rsample_is_one_hot_with_the_probabilities_gradient, ::test_multi_categorical_is_"
        "the_sum_of_its_categoricals)",
        "RLlib 2.60's rsample reads self.probs, None when built from logits; its "
        "temperatures are validated and not applied, against its own docstring",
        BEHAVIOUR,
    ),
    Difference(
        "MeanStdFilter (merging the EnvRunners' statistics)",
        "each sampling round's new observations of every EnvRunner are merged into the "
        "filter's running mean and std exactly, then broadcast "
        "(tests/test_connectors.py::test_mean_std_filter_merges_runner_statistics_and_"
        "syncs_them)",
        "RLlib 2.60 merges from bookkeeping fields that its own broadcast resets every "
        "iteration: run with 2 EnvRunners of 260 observations each, its filter's mean "
        "drifts towards 0 and its std grows (mean -2627, -413, -18 and std 858, 2051, "
        "2777 at iterations 1, 10, 500 on lopsided Pendulum observations)",
        BEHAVIOUR,
    ),
    Difference(
        'MultiAgentEnvRunner (an episode done without the env\'s "__all__")',
        "when every agent an episode has seen is done (RLlib's MultiAgentEpisode rule, e.g. "
        "the last agent removed as a new one joins), the episode ends and its sub-env is "
        "reset for the next one (tests/test_multi_agent_runner_semantics.py::test_an_episode_"
        "ends_when_every_agent_it_has_seen_is_done)",
        "RLlib 2.60 ends the episode too, but its vector env resets a sub-env only on "
        '"__all__": the sub-env is stepped once more with no actions and that step\'s '
        "result becomes the next episode's first observation, mid-way through the env's own "
        "episode",
        BEHAVIOUR,
    ),
    Difference(
        "MultiAgentEnvRunner (restart_failed_sub_environments=True)",
        "only the sub-env that raised is re-created and its episode dropped; the other "
        "sub-envs go on, the failed step is no env step, and the sample still ends at the "
        "requested count (tests/test_multi_agent_sub_env_restarts.py), as the single-agent "
        "EnvRunner here does",
        "RLlib 2.60 re-creates all sub-envs, drops every ongoing episode and restarts its "
        "step count from 0 within the sample: one failing sub-env discards the others' "
        "work, and an env that fails within every num_timesteps never returns",
        BEHAVIOUR,
    ),
    Difference(
        "ray.tune.Tuner(PPO) (plain Ray Tune given an Algorithm class)",
        'Ray Tune refuses it with its TypeError ("Second argument must be convertable to '
        'Trainable"): import Tune as `from trainer import tune`, whose Tuner, run, '
        "register_trainable, with_parameters and with_resources take the Algorithm classes, "
        "their names and AlgorithmConfigs (tests/test_tune.py::test_algorithm_classes_and_"
        "configs_are_trainables_and_ray_tune_refuses_them)",
        "Tune runs only subclasses of ray.tune.Trainable, and the Algorithm here must not "
        "import Ray (an optional dependency of ~300 MB): trainer.tune makes one Trainable per "
        "Algorithm class on demand (trainer.tune.as_trainable)",
        BEHAVIOUR,
    ),
    Difference(
        "Tune's resource request of an Algorithm trial (default_resource_request)",
        'with backend="processes" a trial reserves one bundle holding the main process\'s '
        "CPUs and num_cpus_per_env_runner for each EnvRunner and evaluation EnvRunner; with "
        'backend="ray" RLlib\'s layout (a bundle per EnvRunner, placement_strategy), the '
        "actors placed in the trial's placement group (trainer/tune/trainable.py "
        "resource_request). The one bundle asks at most the largest node's CPUs (warned "
        "once), where RLlib's request would wait forever",
        "the EnvRunners of the process backend are child processes of the trial's actor, on "
        "its node: separate bundles could be placed on other nodes and overcommit this one; "
        "PPO's default 2 EnvRunners ask 3 CPUs, more than a 2-core machine has",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.reset_config (Tune's reuse_actors=True, PBT)",
        "the Tune Trainable of an Algorithm class rebuilds the algorithm from the new "
        "trial's config in the same actor and returns True (tests/test_tune.py::test_"
        "algorithm_classes_and_configs_are_trainables_and_ray_tune_refuses_them); the "
        "Algorithm's own reset_config returns False, as RLlib's",
        "a reused actor saves a process start and the imports per trial; RLlib's Algorithm "
        "returns False, so Tune starts a new actor for every trial",
        BEHAVIOUR,
    ),
    Difference(
        "Tuner.restore(path, trainable) without param_space",
        "trainer.tune's Tuner saves the param_space next to Tune's tuner.pkl "
        "(param_space.pkl) and Tuner.restore passes it back when none is given "
        "(tests/test_tune.py::test_tuner_restore_finishes_a_search_whose_driver_was_sigkilled)",
        "Tune leaves the param_space out of tuner.pkl; a config dict holds functions and "
        "classes (policy_mapping_fn, PolicySpec, callbacks) that a restored search cannot "
        "rebuild for its pending trials unless the param_space is given again",
        BEHAVIOUR,
    ),
    # -- RLlib 2.60's own unit tests (bench/rllib_tests.py) that RLlib passes and that cannot
    # pass here unmodified --------------------------------------------------------------------
    *_same(
        "passes, except in a sample whose last step ends an episode: no next episode is made "
        "then (RLlib makes it but does not start it), so the created/started counts the test "
        "compares are one short (7 of 100 seeds of a 32-step random CartPole sample)",
        "flaky under RLlib 2.60 itself: in the same case its started count is one short (4 of "
        "100 seeds, the same sample, checked with RLlib on this machine); the test does not fix "
        "the env's seed",
        *(
            f"rllib/env/tests/test_env_runner.py::TestEnvRunnerCallbacks::{case}"
            for case in (
                "test_callbacks_on_sample_rollout[multi_agent]",
                "test_callbacks_on_sample_rollout[single_agent]",
                "test_callbacks_on_sample_timesteps[multi_agent-32]",
                "test_callbacks_on_sample_timesteps[multi_agent-8]",
                "test_callbacks_on_sample_timesteps[single_agent-32]",
                "test_callbacks_on_sample_timesteps[single_agent-8]",
            )
        ),
        kind=UNIT_TEST,
    ),
    Difference(
        "rllib/utils/tests/test_errors.py::TestErrors::test_no_gpus_error",
        "api_stack(enable_rl_module_and_learner=False) builds the new stack (there is no old "
        "one here), where num_gpus has no effect: build() does not raise",
        "the test checks the old API stack's GPU check (IMPALA's old-stack num_gpus=1 default "
        "on a machine without GPUs); this trainer is RLlib's new stack only",
        UNIT_TEST,
    ),
)


def all_differences() -> tuple[Difference, ...]:
    """The whole table: the shared rows, then each registered algorithm's (importing every
    algorithm's package)."""
    return SHARED_DIFFERENCES + tuple(d for entry in entries() for d in entry.differences)


def api_keys() -> set[str]:
    """The API names the table allows (the conformance test's allowance)."""
    return {d.rllib for d in all_differences() if d.kind == API}


def _group(key: str) -> str:
    return key.split("(")[0].split(".")[0]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """The docs page: every entry, API names grouped by class or module, then the tests."""
    table = all_differences()
    api = [d for d in table if d.kind == API]
    tests = [d for d in table if d.kind == TEST]
    behaviour = [d for d in table if d.kind == BEHAVIOUR]
    lines = [
        "# Deliberate differences from RLlib 2.60",
        "",
        "<!-- Generated by `python -m trainer.compat.differences` from "
        "trainer/compat/differences.py; do not edit. -->",
        "",
        "Everything this project does differently from RLlib 2.60 on purpose, with what "
        "happens here instead and why. It is the only allowance of the API conformance test "
        "(`tests/test_rllib_conformance.py`): that test reads RLlib 2.60's public classes and "
        "modules from the installed Ray wheel's source and fails for any public name or "
        "parameter that is missing here or has another default, unless it stands below; it "
        "also fails for an entry below whose name now matches RLlib.",
        "",
        f"## API names ({len(api)})",
        "",
    ]
    for group in dict.fromkeys(_group(d.rllib) for d in api):
        lines += [f"### {group}", "", "| RLlib | here | why |", "|---|---|---|"]
        lines += [
            f"| `{_cell(d.rllib)}` | {_cell(d.here)} | {_cell(d.why)} |"
            for d in api
            if _group(d.rllib) == group
        ]
        lines.append("")
    lines += [
        f"## RLlib's tests left out of `tests/rllib/` ({len(tests)})",
        "",
        "`tests/rllib/` runs RLlib's own test files with only their imports changed; "
        "each file's header names any other change. These cases are left out or "
        "changed:",
        "",
        "| RLlib test | here | why |",
        "|---|---|---|",
    ]
    for d in tests:
        file, _, case = d.rllib.partition("::")
        lines.append(f"| `{_cell(file)}`: {_cell(case)} | {_cell(d.here)} | {_cell(d.why)} |")
    lines += [
        "",
        f"## Behaviour ({len(behaviour)})",
        "",
        "Names that exist here with RLlib's signature and compute something else on "
        "purpose; each names the test that shows what happens here.",
        "",
        "| RLlib | here | why |",
        "|---|---|---|",
    ]
    lines += [f"| {_cell(d.rllib)} | {_cell(d.here)} | {_cell(d.why)} |" for d in behaviour]
    unit_tests = [d for d in table if d.kind == UNIT_TEST]
    lines += [
        "",
        f"## RLlib's unit tests that cannot pass here ({len(unit_tests)})",
        "",
        "Tests of RLlib 2.60's own unit-test files that RLlib passes on this machine and that "
        "do not pass unmodified through the launcher, on purpose (`bench/rllib_tests.py` "
        "runs them; its table is in [rllib_compatibility.md](rllib_compatibility.md)).",
        "",
        "| RLlib test | here | why |",
        "|---|---|---|",
    ]
    lines += [f"| `{_cell(d.rllib)}` | {_cell(d.here)} | {_cell(d.why)} |" for d in unit_tests]
    return "\n".join(lines) + "\n"


PAGE = Path(__file__).resolve().parents[2] / "docs" / "deliberate_differences.md"


def main(argv: list[str] | None = None) -> int:
    """Writes the docs page; with `--check`, exits 1 (writing nothing) when it is stale."""
    argv = sys.argv[1:] if argv is None else argv
    return write_or_check(PAGE, render(), argv, "python -m trainer.compat.differences")


if __name__ == "__main__":
    sys.exit(main())
