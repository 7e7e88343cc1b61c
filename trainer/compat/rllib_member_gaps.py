"""Members of RLlib 2.60's classes deliberately absent here, or of another kind or signature on
purpose: `Owner.member` (the RLlib class that defines it, by its short name) -> why.

`tests/test_rllib_class_members.py` fails for a finding of `trainer.compat.rllib_members_check`
that is neither here nor in the deliberate-differences table (`trainer.compat.differences`, whose
API rows use the same `Class.member` keys), and for a row here that is no longer a finding (the
member is there now: the row goes). The rows are grouped by reason (`_rows(why, owner, names)`).
"""

from __future__ import annotations


def _rows(why: str, owner: str, names: str) -> dict[str, str]:
    return {f"{owner}.{name}": why for name in names.split()}


_ALGORITHM_INTERNALS = (
    "a private step of RLlib's `Algorithm.step()` / `evaluate()` / checkpoint loading (evaluation "
    "scheduling, Prometheus metrics, usage records, old-stack paths); `train()` and the "
    "evaluation rounds here (`trainer.algorithms.evaluation`) are organized differently and have "
    "no such step. The hooks users override are called where RLlib calls them: `setup`, "
    "`training_step`, `_run_one_training_iteration`, `_create_local_replay_buffer_if_necessary`, "
    "`restore_env_runners`, `log_result`"
)
_BUFFER_INTERNALS = (
    "a private helper of RLlib's replay buffer; the buffers here index their transitions "
    "differently and answer the same public API (`add`, `sample`, `update_priorities`, "
    "`get_state`, ...)"
)
_CHECKPOINTABLE = (
    "RLlib's per-component Checkpointable protocol; checkpoints here are this project's format (a "
    "folder of msgpack state files, config.json and a SHA-256 manifest; docs/checkpoints.md), "
    "written and read by `save_to_path` / `restore_from_path` / `from_checkpoint` of the "
    "Algorithm, its learner, EnvRunners and modules"
)
_CONFIG_VALIDATION = (
    "a step of RLlib's `AlgorithmConfig.validate()` or of its dict conversion; here every setting "
    "is checked by the settings table (`trainer.algorithms.config`), a subclass adds checks by "
    "overriding `validate()` (calling super), and there are no tf settings"
)
_CONNECTOR_INTERNALS = (
    "a private helper of RLlib's connector piece; the piece here computes the same in its "
    "`__call__` with its own helpers"
)
_ENV_CONTEXT = "`remote=`: whether RLlib's sub-envs are Ray actors; sub-envs here are never remote"
_EPISODE_INTERNALS = (
    "a private helper of RLlib's episode or lookback buffer; the episodes here store their data "
    "differently and answer the same public API (`get_observations`, `slice`, `concat_episode`, "
    "...)"
)
_EXAMPLE_INTERNALS = (
    "a private helper of RLlib's example env; this project's port computes the same observations "
    "and rewards with its own helpers"
)
_EXAMPLE_SIGNATURE = (
    "a parameter named (or defaulted) differently in this project's port of RLlib's example "
    "class; RLlib's own callers (gymnasium, the env loop, the module's forward) pass it by "
    "position"
)
_GROUP_INTERNALS = (
    "a private step of RLlib's EnvRunnerGroup over Ray actors (actor creation, connector-state "
    "merging); the group here starts its worker processes itself "
    "(`trainer.runners.env_runner_group`)"
)
_GROUP_SIGNATURE = (
    "`num_workers=` / `local_worker=`: the old stack's names of the EnvRunnerGroup's constructor "
    "arguments (the config's `num_env_runners` and `create_local_env_runner` say it here)"
)
_IMPALA_INTERNALS = (
    "RLlib's IMPALA / APPO queues of Ray object refs and old-stack steps; IMPALA here learns on a "
    "learner thread fed by the training step (`trainer.algorithms.impala`)"
)
_LEARNER_PLUMBING = (
    "a private step of RLlib's Learner around its learner connector (batch and iterator making), "
    "Ray placement groups, DDP wrapping, tf/torch tensor helpers and its metrics; a learner here "
    "is built over its module by the Algorithm and steps through `update_from_batch` -> "
    "`_update`, where overrides take effect"
)
_LEARNER_SIGNATURE = (
    "the learner is made by the Algorithm over its module (`config`, `module` given); RLlib's "
    "`update()` keywords that feed its learner connector (`episodes=`, `batch_refs=`, "
    "`data_iterators=`, ...) are not taken (`update(batch=..., timesteps=...)` is)"
)
_LOSS_INTERNALS = (
    "a private loss helper of RLlib's algorithm learner; the learner here computes the same loss "
    "in `compute_loss_for_module` with its own helpers"
)
_LOSS_SIGNATURE = (
    "RLlib's algorithm learner spells this loss hook's arguments differently from its base class "
    "(positional, or without `config`); here every learner's takes the base class's keywords "
    "(`module_id=, config=, batch=, fwd_out=`), as the Learner calls it"
)
_META_LEARNING = (
    "RLlib's meta-learning internals (`DifferentiableLearner`, `TrainingData` sharding over Ray); "
    "meta-learning here runs its own loop over the same public classes "
    "(`trainer.torch_rl.meta_learning`), in one process"
)
_METRICS_INTERNALS = (
    "a private helper of RLlib's MetricsLogger, Stats, filters or schedules (key paths, torch "
    "reductions); the classes here answer the same public API"
)
_MODULE_INTERNALS = (
    "a private helper of RLlib's module, catalog or spec; the module here computes the same in "
    "its public forward methods and builders, with its own helpers"
)
_MODULE_SIGNATURE = (
    "a private helper of RLlib's module or catalog with other arguments here (the torch framework "
    "only; the dueling heads passed as one)"
)
_OLD_EXPLORATION = (
    "RLlib's old-stack Exploration API (tf sessions, Policy hooks, trajectory postprocessing); "
    "the exploration classes here only draw actions for `Algorithm.compute_single_action` and the "
    "EnvRunners"
)
_OLD_STACK_ARGS = (
    "old API stack arguments (`info=`/`episode=` of the old stack's Policy, "
    "`policy_ids=`/`policy_mapping_fn=` of old-stack checkpoints, the removed `checkpoint=`); the "
    "new stack's callers never pass them"
)
_RAY_DATA = (
    "Ray Data's keyword defaults and the old stack's SampleBatch mapping of RLlib's offline "
    "pipeline; recorded data is read with pyarrow here (`trainer.offline`)"
)
_RLLINK_INTERNALS = (
    "a private step of RLlib's RLlink server (sockets, messages); the server here "
    "(`trainer.runners.external_server`) speaks the same RLlink protocol with its own helpers"
)
_RUNNER_INTERNALS = (
    "a private step of RLlib's EnvRunner env loop (episodes made, reset and pruned one sub-env at "
    "a time, metrics counters, tensor conversion); the runners here step all sub-envs in one "
    "vectorized rollout loop (`trainer/runners/rollout_loop.py`) with no such steps. The hook "
    "users override, `_sample`, is called where RLlib calls it"
)
_RUNNER_SIGNATURE = (
    "a private step of RLlib's EnvRunner with other arguments here (episode metrics are logged "
    "from the rollout loop's columns, not per episode object)"
)
_TRAINABLE = (
    "Ray Tune's Trainable internals (log files, checkpoint reports, method probes) that only "
    "Tune's trial runner calls; under Tune an algorithm here runs inside `trainer.tune`'s "
    "Trainable, which does that work"
)
_TRAINING_STEP_INTERNALS = (
    "the old-stack / new-stack halves of RLlib's `training_step()`; `training_step()` here is the "
    "new stack's only"
)
_WRAPPER_ENV = (
    "RLlib's `env=None` default wraps nothing, which gymnasium's Wrapper refuses too: the env is "
    "required here"
)

GAPS: dict[str, str] = {
    **_rows(_WRAPPER_ENV, "ActionClip", "__init__"),
    **_rows(_EXAMPLE_SIGNATURE, "ActionMaskEnv", "_fix_action_mask"),
    **_rows(_EXAMPLE_SIGNATURE, "ActionMaskingTorchRLModule", "_mask_action_logits"),
    **_rows(_CONNECTOR_INTERNALS, "AddTimeDimToBatchAndZeroPad", "_get_max_seq_len"),
    **_rows(
        _ALGORITHM_INTERNALS,
        "Algorithm",
        "_before_evaluate _checkpoint_info_to_algorithm_state _compile_iteration_results_old_api_stack _evaluate_offline_on_local_runner _evaluate_offline_with_fixed_duration _evaluate_on_local_env_runner _evaluate_with_auto_duration _evaluate_with_custom_eval_function _evaluate_with_fixed_duration _export_model _get_env_id_and_creator _make_on_env_runners_recreated_callbacks _maybe_wait_for_eval_env_runner_recovery _record_usage _remote_worker_ids_for_metrics _run_offline_evaluation_old_api_stack _run_one_evaluation _run_one_offline_evaluation _run_one_training_iteration_and_evaluation_in_parallel _run_one_training_iteration_old_api_stack _set_up_metrics _should_create_evaluation_env_runners _should_create_offline_evaluation_runners _sync_filters_if_needed",
    ),
    **_rows(_OLD_STACK_ARGS, "Algorithm", "compute_single_action from_checkpoint"),
    **_rows(
        _CONFIG_VALIDATION,
        "AlgorithmConfig",
        "_check_if_correct_nn_framework_installed _resolve_tf_settings _serialize_dict "
        "_translate_special_keys _validate_callbacks_settings "
        "_validate_env_runner_settings _validate_evaluation_settings "
        "_validate_framework_settings _validate_input_settings "
        "_validate_multi_agent_settings _validate_new_api_stack_settings "
        "_validate_offline_settings _validate_resources_settings "
        "_validate_to_be_deprecated_settings _value_error",
    ),
    **_rows(_EXAMPLE_SIGNATURE, "AutoregressiveActionsRLM", "_pi"),
    **_rows(_MODULE_INTERNALS, "BCTorchRLModuleWithSharedGlobalEncoder", "_common_forward"),
    **_rows(_EXAMPLE_SIGNATURE, "BCTorchRLModuleWithSharedGlobalEncoder", "__init__"),
    **_rows(_TRAINING_STEP_INTERNALS, "CQL", "_training_step_old_api_stack"),
    **_rows(_EXAMPLE_INTERNALS, "CartPoleCrashing", "_stall_if_necessary"),
    **_rows(_EXAMPLE_INTERNALS, "CartPoleWithDictObservationSpace", "_compile_current_obs"),
    **_rows(_EXAMPLE_INTERNALS, "CartPoleWithLargeObservationSpace", "_compile_current_obs"),
    **_rows(
        _EXAMPLE_INTERNALS,
        "CartPoleWithProtobufObservationSpace",
        "_convert_observation_to_protobuf",
    ),
    **_rows(
        _CHECKPOINTABLE,
        "Checkpointable",
        "_check_component _get_subcomponents _restore_all_subcomponents_from_path",
    ),
    **_rows(_CONNECTOR_INTERNALS, "ConnectorPipelineV2", "_fix_spaces"),
    **_rows(
        _MODULE_INTERNALS, "CustomActionDistributionRLModule", "_compute_embeddings_and_logits"
    ),
    **_rows(
        _TRAINING_STEP_INTERNALS, "DQN", "_training_step_new_api_stack _training_step_old_api_stack"
    ),
    **_rows(_MODULE_INTERNALS, "DQNCatalog", "_get_head_config"),
    **_rows(_MODULE_INTERNALS, "DefaultCQLTorchRLModule", "_repeat_tensor"),
    **_rows(_MODULE_SIGNATURE, "DefaultDQNTorchRLModule", "_qf_forward_helper"),
    **_rows(
        _MODULE_INTERNALS, "DefaultTQCTorchRLModule", "_get_catalog_class _qf_forward_all_critics"
    ),
    **_rows(
        _META_LEARNING,
        "DifferentiableLearner",
        "_check_is_built _create_iterator_if_necessary _get_tensor_variable "
        "_log_steps_trained_metrics _make_batch_if_necessary _make_functional_call _reset "
        "_set_slicing_by_batch_id",
    ),
    **_rows(
        _LOSS_INTERNALS,
        "DreamerV3TorchLearner",
        "_compute_actor_loss _compute_critic_loss _compute_scaled_value_targets "
        "_compute_value_targets _compute_world_model_dynamics_and_representation_loss "
        "_compute_world_model_prediction_losses",
    ),
    **_rows(_LOSS_SIGNATURE, "DreamerV3TorchLearner", "compute_loss_for_module"),
    **_rows(
        _MODULE_INTERNALS, "DreamerV3TorchRLModule", "_forward_inference_or_exploration_helper"
    ),
    **_rows(_ENV_CONTEXT, "EnvContext", "__init__"),
    **_rows(
        _RUNNER_INTERNALS,
        "EnvRunner",
        "_convert_to_tensor _log_env_steps _reset_envs_and_episodes _try_env_reset _try_env_step",
    ),
    **_rows(
        _GROUP_INTERNALS,
        "EnvRunnerGroup",
        "_make_worker _merge_env_runner_connector_states _setup _valid_module",
    ),
    **_rows(_GROUP_SIGNATURE, "EnvRunnerGroup", "__init__"),
    **_rows(
        _RLLINK_INTERNALS,
        "EnvRunnerServerForExternalInference",
        "_close_sockets_if_necessary _process_episodes_message _recycle_sockets "
        "_send_pong_message _send_set_config_message _send_set_state_message",
    ),
    **_rows(_RLLINK_INTERNALS, "EnvRunnerServerForExternalInference", "_log_episode_metrics"),
    **_rows(
        _BUFFER_INTERNALS,
        "EpisodeReplayBuffer",
        "_sample_batch _sample_episodes _set_episodes _update_add_metrics _update_sample_metrics",
    ),
    **_rows(_BUFFER_INTERNALS, "EpisodeReplayBuffer", "_sample_batch _sample_episodes"),
    **_rows(
        _OLD_EXPLORATION,
        "EpsilonGreedy",
        "_get_tf_exploration_action_op _get_torch_exploration_action",
    ),
    **_rows(_OLD_EXPLORATION, "EpsilonGreedy", "get_state set_state"),
    **_rows(_OLD_EXPLORATION, "Exploration", "get_state set_state"),
    **_rows(_EXAMPLE_SIGNATURE, "FireResetEnv", "step"),
    **_rows(_EXAMPLE_INTERNALS, "FrameStack", "_get_ob"),
    **_rows(_CONNECTOR_INTERNALS, "GetActions", "_get_actions"),
    **_rows(_EXAMPLE_SIGNATURE, "GroupAgentsWrapper", "_group_items"),
    **_rows(
        _IMPALA_INTERNALS,
        "IMPALA",
        "_compile_iteration_results_old_api_stack _concatenate_batches_and_pre_queue "
        "_get_samples_from_workers_old_api_stack "
        "_place_processed_samples_on_learner_thread_queue _pre_queue_batch_refs "
        "_pre_queue_episode_refs _process_experiences_old_api_stack "
        "_process_trained_results _sample_and_get_connector_states _set_up_metrics "
        "_training_step_old_api_stack _update_workers_old_api_stack",
    ),
    **_rows(_LOSS_INTERNALS, "IQLTorchLearner", "_expectile_loss"),
    **_rows(
        _EPISODE_INTERNALS,
        "InfiniteLookbackBuffer",
        "_get_all_data _get_int_index _interpret_slice _set_all_data _set_int_index _set_slice",
    ),
    **_rows(_EPISODE_INTERNALS, "InfiniteLookbackBuffer", "_get_slice _one_hot"),
    **_rows(
        _LEARNER_PLUMBING,
        "Learner",
        "_check_is_built _create_iterator_if_necessary _get_tensor_variable _log_metrics _log_steps_trained_metrics _log_trainable_parameters _make_batch_if_necessary _make_module _reset _set_learner_index_and_placement_group _set_slicing_by_batch_id",
    ),
    **_rows(_LEARNER_SIGNATURE, "Learner", "_check_is_built update"),
    **_rows(_LEARNER_PLUMBING, "LearnerGroup", "_get_results"),
    **_rows(_EXAMPLE_SIGNATURE, "LinearDiscreteEnv", "render"),
    **_rows(_TRAINING_STEP_INTERNALS, "MARWIL", "_training_step_old_api_stack"),
    **_rows(_MODULE_INTERNALS, "MARWILConfig", "_model_auto_keys"),
    **_rows(_LOSS_SIGNATURE, "MARWILTorchLearner", "compute_loss_for_module"),
    **_rows(_METRICS_INTERNALS, "MaxStats", "_torch_reduce_fn"),
    **_rows(_METRICS_INTERNALS, "MeanStats", "_torch_reduce_fn"),
    **_rows(_METRICS_INTERNALS, "MeanStdFilter", "_get_state_from_filters _init_new_filters"),
    **_rows(
        _METRICS_INTERNALS,
        "MetricsLogger",
        "_del_key _get_key _key_in_stats _maybe_create_stats_object _set_key",
    ),
    **_rows(_METRICS_INTERNALS, "MetricsLogger", "merge_and_log_n_dicts"),
    **_rows(_METRICS_INTERNALS, "MinStats", "_torch_reduce_fn"),
    **_rows(_MODULE_INTERNALS, "Model", "_set_to_dummy_weights"),
    **_rows(_WRAPPER_ENV, "MonitorEnv", "__init__"),
    **_rows(_EXAMPLE_SIGNATURE, "MultiAgentChess", "render"),
    **_rows(_EXAMPLE_SIGNATURE, "MultiAgentConnect4", "render"),
    **_rows(
        _RUNNER_INTERNALS,
        "MultiAgentEnvRunner",
        "_increase_sampled_metrics _make_on_episode_callback _prune_zero_len_sa_episodes "
        "_reset_envs",
    ),
    **_rows(_RUNNER_SIGNATURE, "MultiAgentEnvRunner", "_log_episode_metrics _new_episode"),
    **_rows(
        _EPISODE_INTERNALS,
        "MultiAgentEpisode",
        "_copy_hanging _del_agent _del_hanging _get_data_by_agent_steps "
        "_get_data_by_env_steps _get_data_by_env_steps_as_list _get_hanging_value "
        "_get_inf_lookback_buffer_or_dict _get_single_agent_data_by_env_step_indices "
        "_get_single_agent_data_by_index _init_single_agent_episodes",
    ),
    **_rows(_EPISODE_INTERNALS, "MultiAgentEpisode", "_get"),
    **_rows(
        _BUFFER_INTERNALS,
        "MultiAgentEpisodeReplayBuffer",
        "_add_new_module_indices _agents_with_full_transitions _evict_module_episodes "
        "_num_remaining_episodes _sample_synchonized _set_episodes "
        "_update_module_counters",
    ),
    **_rows(_BUFFER_INTERNALS, "MultiAgentEpisodeReplayBuffer", "_sample_independent"),
    **_rows(
        _BUFFER_INTERNALS,
        "MultiAgentPrioritizedEpisodeReplayBuffer",
        "_add_new_module_indices _get_free_node_and_assign _get_free_node_per_module_and_assign",
    ),
    **_rows(
        _BUFFER_INTERNALS, "MultiAgentPrioritizedEpisodeReplayBuffer", "_sample_independent add"
    ),
    **_rows(_MODULE_INTERNALS, "MultiRLModule", "_check_module_specs"),
    **_rows(_MODULE_INTERNALS, "MultiRLModuleSpec", "_check_before_build"),
    **_rows(_EXAMPLE_SIGNATURE, "NoopResetEnv", "step"),
    **_rows(_WRAPPER_ENV, "NormalizedImageEnv", "__init__"),
    **_rows(
        _RAY_DATA,
        "OfflinePreLearner",
        "_map_sample_batch_to_episode _postprocess_and_sample _validate_episodes",
    ),
    **_rows(_EXAMPLE_SIGNATURE, "OneHot", "_encode_obs"),
    **_rows(_TRAINING_STEP_INTERNALS, "PPO", "_training_step_old_api_stack"),
    **_rows(_METRICS_INTERNALS, "PercentilesStats", "_comp_error"),
    **_rows(_CONNECTOR_INTERNALS, "PrevActionsPrevRewards", "_convert_individual_space"),
    **_rows(
        _BUFFER_INTERNALS,
        "PrioritizedEpisodeReplayBuffer",
        "_get_free_node_and_assign _num_remaining_episodes",
    ),
    **_rows(_LOSS_INTERNALS, "SACLearner", "_get_target_entropy"),
    **_rows(_METRICS_INTERNALS, "Scheduler", "_create_tensor_variable"),
    **_rows(_EXAMPLE_INTERNALS, "SimpleCorridor", "_get_obs"),
    **_rows(
        _RUNNER_INTERNALS,
        "SingleAgentEnvRunner",
        "_increase_sampled_metrics _make_on_episode_callback _new_episode _reset_envs",
    ),
    **_rows(_RUNNER_SIGNATURE, "SingleAgentEnvRunner", "_log_episode_metrics"),
    **_rows(_OLD_EXPLORATION, "SoftQ", "get_exploration_action"),
    **_rows(_MODULE_INTERNALS, "StatefulRandomRLModule", "_random_forward"),
    **_rows(_METRICS_INTERNALS, "Stats", "_comp_error _numpy_if_necessary"),
    **_rows(_METRICS_INTERNALS, "Stats", "_reduced_values _set_values"),
    **_rows(
        _OLD_EXPLORATION,
        "StochasticSampling",
        "_get_tf_exploration_action_op _get_torch_exploration_action",
    ),
    **_rows(_OLD_EXPLORATION, "StochasticSampling", "get_exploration_action"),
    **_rows(_METRICS_INTERNALS, "SumStats", "_torch_reduce_fn"),
    **_rows(_LOSS_INTERNALS, "TQCLearner", "_get_n_target_quantiles"),
    **_rows(
        _META_LEARNING,
        "TorchDifferentiableLearner",
        "_compute_off_policyness _convert_batch_type _get_tensor_variable "
        "_make_functional_call _uncompiled_update",
    ),
    **_rows(_META_LEARNING, "TorchDifferentiableLearner", "__init__"),
    **_rows(
        _LEARNER_PLUMBING,
        "TorchLearner",
        "_compute_off_policyness _get_tensor_variable _log_trainable_parameters _make_module _make_modules_ddp_if_necessary _map_module_to_device",
    ),
    **_rows(_LEARNER_SIGNATURE, "TorchLearner", "__init__ _convert_batch_type"),
    **_rows(_META_LEARNING, "TorchMetaLearner", "_make_functional_call"),
    **_rows(_META_LEARNING, "TorchMetaLearner", "__init__ _uncompiled_update"),
    **_rows(_MODULE_SIGNATURE, "TorchSquashedGaussian", "_unsquash"),
    **_rows(
        _TRAINABLE,
        "Trainable",
        "_close_logfiles _implements_method _open_logfiles "
        "_report_class_trainable_checkpoint _setup_logdir",
    ),
    **_rows(_META_LEARNING, "TrainingData", "_compute_num_total_minibatches"),
    **_rows(_EXAMPLE_SIGNATURE, "TwoStepGameWithGroupedAgents", "step"),
    **_rows(_EXAMPLE_SIGNATURE, "VPGMultiRLModuleWithSharedEncoder", "_forward"),
    **_rows(_EXAMPLE_SIGNATURE, "WheelBanditEnv", "render"),
}
