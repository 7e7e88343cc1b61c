"""RLlib 2.60's builder settings that mean nothing on one machine, or that this trainer cannot
honour, and what happens when a script sets them.

Every builder method of `AlgorithmConfig` takes every keyword argument RLlib's does. Those with a
meaning here are real settings (`AlgorithmConfig._BASE_SETTINGS` and the algorithms' own); the
rest are listed below, by builder method, each as one of:

- `NoEffect(default, why)`: accepted and stored (readable as `config.<name>`, kept by `copy()`
  and `to_dict()`); when its value is not one that matches what runs here (`fine`, by default
  RLlib's default), `build()` emits one `IgnoredSettingWarning` naming the setting and why.
- `Unsupported(default, instead)`: accepted while its value is RLlib's default (or `fine`);
  any other value would change results silently if ignored, so the builder call raises
  `UnsupportedSetting` (a `ConfigError` and a `NotSupported`, with the rule's capability)
  saying what to do instead.

docs/config.md's "RLlib's settings" table lists the same three groups.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainer.capabilities import (
    LEARNER_CONNECTORS,
    OFFLINE,
    OTHER_SETTINGS,
)

DEFAULT_POLICY_ID = "default_policy"


class IgnoredSettingWarning(UserWarning):
    """An RLlib setting was given that has no effect on one machine (emitted by `build()`)."""


class _Rule:
    """A value is fine when `fine(value)` says so, or (without `fine`) when it is the default."""

    default: Any
    fine: Callable[[Any], bool] | None

    def is_fine(self, value: Any) -> bool:
        return self.fine(value) if self.fine is not None else _same(value, self.default)


@dataclass(frozen=True)
class NoEffect(_Rule):
    default: Any
    why: str
    fine: Callable[[Any], bool] | None = field(default=None)
    #: RLlib takes None too (its annotation is Optional), whatever the default's kind.
    takes_none: bool = False


@dataclass(frozen=True)
class Unsupported(_Rule):
    default: Any
    instead: str
    fine: Callable[[Any], bool] | None = field(default=None)
    #: What a value other than the default needs (a `trainer.capabilities` word): the builder
    #: call raises `UnsupportedSetting` (a `NotSupported`) with it.
    capability: str = OTHER_SETTINGS


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except Exception:  # arrays and other objects without a plain ==
        return False


def _is_none_or_empty(value: Any) -> bool:
    return value is None or value == {} or value == []


_RAY = "Ray resource settings have no meaning here: EnvRunners are local processes"
_GPU = "there is no GPU learner here: the learner runs numpy on the CPU"
_TF = "the learner is numpy here, not TensorFlow"
_TORCH = "the learner is numpy here, not torch"
_ONE_LEARNER = (
    "learners run in the main process and, with data-parallel num_learners, in worker "
    "processes of this machine (Ray actors with env_runners(backend='ray'))"
)
OLD_STACK = "an old-API-stack (RolloutWorker) setting; this trainer runs RLlib's new stack"
_TUNE = (
    "Tune's loggers are not used here; results go to the train() result dict (and the "
    "command line's run folder)"
)
_POLICY_MAP = (
    "RLlib's old-stack PolicyMap setting; the new stack (the one here) keeps modules in a "
    "MultiRLModule"
)
RAY_DATA_OPTION = _OFFLINE = (
    "recorded data is read and written with pyarrow here, one row group at a time, not with "
    "Ray Data, whose options mean nothing here"
)
_OFFLINE_EVAL = (
    "offline evaluation runs in the driver here, between training steps, on its own reader "
    "of the recorded data: there are no offline evaluation runner actors to size, restart or "
    "time out"
)
_NO_OFFLINE_EVENT = "there are no offline evaluation runners here to recreate"
NO_RNN = "there are no recurrent (stateful) modules here"
OLD_SCHEDULE = "an old-API-stack schedule; RLlib's new stack (and this trainer) ignore it"
#: RLlib's TensorFlow session defaults (`framework(tf_session_args=...)`).
_TF_SESSION_ARGS = {
    "intra_op_parallelism_threads": 2,
    "inter_op_parallelism_threads": 2,
    "gpu_options": {"allow_growth": True},
    "log_device_placement": False,
    "device_count": {"CPU": 1},
    "allow_soft_placement": True,
}
_LOCAL_TF_SESSION_ARGS = {"intra_op_parallelism_threads": 8, "inter_op_parallelism_threads": 8}

#: Shared by `learners()` and `training()`, which both take them in RLlib.
_LEARNER_DEFAULT_PIECES = Unsupported(
    True, "the learner's default pieces always run here", capability=LEARNER_CONNECTORS
)
_AGGREGATORS = NoEffect(0, _ONE_LEARNER)
_AGGREGATOR_REQUESTS = NoEffect(3, _ONE_LEARNER, fine=lambda v: True)
#: RLlib reads it only when a learner asks for a GPU (None too, which RLlib takes).
_LOCAL_GPU_IDX = NoEffect(0, _GPU, fine=lambda v: v is None or v == 0, takes_none=True)

#: builder method -> {setting: NoEffect | Unsupported}
RLLIB_SETTINGS: dict[str, dict[str, NoEffect | Unsupported]] = {
    "environment": {
        "render_env": NoEffect(
            False,
            "EnvRunners do not render here; record episodes with "
            "`python -m trainer evaluate CHECKPOINT --video out.gif`",
        ),
        "clip_rewards": NoEffect(
            None,
            "rewards are not clipped, as on RLlib 2.60's new API stack (only its old stack's "
            "connectors clip); clip them in the env creator, for example with "
            "gymnasium.wrappers.ClipReward(env, -1, 1)",
            fine=lambda v: v is None or v is False,
        ),
        "disable_env_checking": NoEffect(
            False, "RLlib's env checker does not run here", fine=lambda v: isinstance(v, bool)
        ),
        "is_atari": NoEffect(
            None,
            "no Atari preprocessing is applied for you here; wrap the env "
            "yourself, as RLlib's new-stack scripts do, with "
            "trainer.env.wrappers.atari_wrappers.wrap_atari_for_new_api_stack",
            fine=lambda v: not v,
        ),
        "action_mask_key": NoEffect("action_mask", "action masking is not built in here"),
    },
    "env_runners": {
        "num_cpus_per_env_runner": NoEffect(1, _RAY),
        "num_gpus_per_env_runner": NoEffect(0, _RAY),
        "custom_resources_per_env_runner": NoEffect({}, _RAY, fine=_is_none_or_empty),
        "create_local_env_runner": NoEffect(
            True,
            "the local EnvRunner always exists here: it holds the weights a restarted "
            "runner is synced from (it has envs only with create_env_on_local_worker)",
        ),
        "max_requests_in_flight_per_env_runner": NoEffect(
            1,
            "it limits only EnvRunnerGroup.foreach_env_runner_async's requests per "
            "EnvRunner here; PPO and DQN sample with one request per EnvRunner at a time",
            fine=lambda v: isinstance(v, int) and v >= 1,
        ),
        "add_default_connectors_to_env_to_module_pipeline": Unsupported(
            True, "the default pieces (batching, observation preprocessing) always run here"
        ),
        "add_default_connectors_to_module_to_env_pipeline": Unsupported(
            True, "the default pieces (sampling, action unsquashing) always run here"
        ),
        "episode_lookback_horizon": NoEffect(
            1,
            "the single-agent EnvRunner cuts episode chunks without a lookback buffer "
            "(env-to-module connectors keep what they need across chunks in "
            "episode.connector_data); the MultiAgentEnvRunner cuts with it, as RLlib's does "
            "(a chunk must reach back to the last observation of an agent whose action hangs)",
            fine=lambda v: isinstance(v, int) and v >= 1,
        ),
        "merge_env_runner_states": NoEffect("training_only", "", fine=lambda v: True),
        "broadcast_env_runner_states": NoEffect(True, "", fine=lambda v: True),
        "use_worker_filter_stats": NoEffect(True, "", fine=lambda v: True),
        "update_worker_filter_stats": NoEffect(True, "", fine=lambda v: True),
        "compress_observations": NoEffect(
            False, "observations travel uncompressed between local processes"
        ),
        "episodes_to_numpy": NoEffect(True, "episodes always come back as numpy here"),
        "sample_collector": NoEffect(None, OLD_STACK, fine=lambda v: True),
        "enable_connectors": NoEffect(True, OLD_STACK, fine=lambda v: True),
        "remote_worker_envs": NoEffect(False, OLD_STACK, takes_none=True),
        "use_env_runner_state_server": NoEffect(
            False, "EnvRunner states (connector filters) are merged by the main process here"
        ),
        "env_runner_state_server_max_concurrency": NoEffect(16, _RAY, fine=lambda v: True),
        "remote_env_batch_wait_ms": NoEffect(0, OLD_STACK),
        "preprocessor_pref": NoEffect("deepmind", OLD_STACK, fine=lambda v: True),
        "enable_tf1_exec_eagerly": NoEffect(False, _TF),
        "sampler_perf_stats_ema_coef": NoEffect(None, OLD_STACK),
    },
    "learners": {
        "num_learners": NoEffect(0, _ONE_LEARNER, fine=lambda v: v in (0, 1)),
        "num_cpus_per_learner": NoEffect("auto", _ONE_LEARNER, fine=lambda v: True),
        "num_gpus_per_learner": NoEffect(0, _GPU),
        "custom_resources_per_learner": NoEffect({}, _RAY, fine=_is_none_or_empty),
        "local_gpu_idx": _LOCAL_GPU_IDX,
        "num_aggregator_actors_per_learner": _AGGREGATORS,
        "max_requests_in_flight_per_aggregator_actor": _AGGREGATOR_REQUESTS,
        "max_requests_in_flight_per_learner": NoEffect(3, _ONE_LEARNER, fine=lambda v: True),
        "add_default_connectors_to_learner_pipeline": _LEARNER_DEFAULT_PIECES,
    },
    "training": {
        "max_requests_in_flight_per_sampler_worker": NoEffect(2, _ONE_LEARNER, fine=lambda v: True),
        "add_default_connectors_to_learner_pipeline": _LEARNER_DEFAULT_PIECES,
        "num_aggregator_actors_per_learner": _AGGREGATORS,
        "max_requests_in_flight_per_aggregator_actor": _AGGREGATOR_REQUESTS,
    },
    "evaluation": {
        "off_policy_estimation_methods": NoEffect(
            {},
            "off-policy estimation is for offline RL, which is not supported here",
            fine=_is_none_or_empty,
        ),
        "ope_split_batch_by_episode": NoEffect(
            True, "off-policy estimation is not supported here", fine=lambda v: True
        ),
        "evaluation_unhealthy_workers_timeout_s": NoEffect(
            0.0,
            "a failed evaluation runner is restarted within the round that saw it fail "
            "(fault_tolerance() settings)",
        ),
        "evaluation_error_after_n_consecutive_skips": NoEffect(
            None,
            "evaluation rounds are never skipped here: a round without healthy runners "
            "follows fault_tolerance()",
        ),
        "offline_eval_runner_class": Unsupported(
            None,
            "offline evaluation runs in the driver here: there is no runner class to replace",
            capability=OFFLINE,
        ),
        "offline_loss_for_module_fn": Unsupported(
            None,
            "offline evaluation computes the learner's own loss here; change it in a "
            "learner_class's compute_loss_for_module",
            capability=OFFLINE,
        ),
        "offline_eval_rl_module_inference_only": NoEffect(False, _OFFLINE_EVAL),
        "num_cpus_per_offline_eval_runner": NoEffect(1, _OFFLINE_EVAL),
        "num_gpus_per_offline_eval_runner": NoEffect(0, _OFFLINE_EVAL),
        "custom_resources_per_offline_eval_runner": NoEffect(
            {}, _OFFLINE_EVAL, fine=_is_none_or_empty
        ),
        "offline_evaluation_timeout_s": NoEffect(120.0, _OFFLINE_EVAL),
        "max_requests_in_flight_per_offline_eval_runner": NoEffect(1, _OFFLINE_EVAL),
        "broadcast_offline_eval_runner_states": NoEffect(False, _OFFLINE_EVAL),
        "validate_offline_eval_runners_after_construction": NoEffect(True, _OFFLINE_EVAL),
        "restart_failed_offline_eval_runners": NoEffect(True, _OFFLINE_EVAL),
        "ignore_offline_eval_runner_failures": NoEffect(False, _OFFLINE_EVAL),
        "max_num_offline_eval_runner_restarts": NoEffect(1000, _OFFLINE_EVAL),
        "offline_eval_runner_health_probe_timeout_s": NoEffect(30.0, _OFFLINE_EVAL),
        "offline_eval_runner_restore_timeout_s": NoEffect(1800.0, _OFFLINE_EVAL),
    },
    "offline_data": {
        "input_read_sample_batches": Unsupported(
            False,
            "the old stack's SampleBatch data is not read here; record it again as columns "
            "or episodes (offline_data(output=...))",
            capability=OFFLINE,
        ),
        "input_filesystem": NoEffect(None, _OFFLINE),
        "input_filesystem_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "materialize_data": NoEffect(False, _OFFLINE),
        "materialize_mapped_data": NoEffect(True, _OFFLINE),
        "map_batches_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "iter_batches_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "prelearner_buffer_class": NoEffect(None, _OFFLINE),
        "prelearner_buffer_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "prelearner_module_synch_period": NoEffect(10, _OFFLINE),
        "prelearner_use_recorded_module_states": NoEffect(False, _OFFLINE),
        "input_config": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "actions_in_input_normalized": NoEffect(False, _OFFLINE),
        "postprocess_inputs": NoEffect(False, _OFFLINE),
        "shuffle_buffer_size": NoEffect(0, _OFFLINE),
        "output_config": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "output_max_file_size": NoEffect(64 * 1024 * 1024, _OFFLINE),
        "output_write_method_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "output_filesystem": NoEffect(None, _OFFLINE),
        "output_filesystem_kwargs": NoEffect({}, _OFFLINE, fine=_is_none_or_empty),
        "offline_sampling": NoEffect(False, _OFFLINE),
    },
    "callbacks": {
        "on_offline_eval_runners_recreated": NoEffect(None, _NO_OFFLINE_EVENT),
    },
    "fault_tolerance": {
        "num_consecutive_env_runner_failures_tolerance": NoEffect(
            100,
            "RLlib's old-stack retry count of training_step(); here, as on RLlib's new "
            "stack, a failed runner is restarted at most once per iteration and "
            "max_num_env_runner_restarts times in all",
            fine=lambda v: True,
        ),
    },
    "debugging": {
        "logger_creator": NoEffect(None, _TUNE),
        "logger_config": NoEffect(None, _TUNE),
        "log_sys_usage": NoEffect(
            True, "system usage is not logged into results here", fine=lambda v: True
        ),
        "fake_sampler": Unsupported(False, "a fake sampler is not supported here"),
        "_run_training_always_in_thread": NoEffect(
            False, "training steps run in the main thread here"
        ),
    },
    "reporting": {
        "keep_per_episode_custom_metrics": NoEffect(False, OLD_STACK, fine=lambda v: True),
        "metrics_episode_collection_timeout_s": NoEffect(
            60.0, "metrics come back with every sample here", fine=lambda v: True
        ),
        "log_gradients": NoEffect(
            False, "gradient norms are always in the learner results here", fine=lambda v: True
        ),
    },
    "checkpointing": {
        "export_native_model_files": NoEffect(
            False,
            "there are no torch or TF model files "
            "here: weights are in the checkpoint's "
            "msgpack state",
        ),
        "checkpoint_trainable_policies_only": NoEffect(
            False, "there is one policy, always checkpointed", fine=lambda v: True
        ),
    },
    "resources": {
        "num_gpus": NoEffect(0, _GPU),
        "custom_resources_for_main_process": NoEffect({}, _RAY, fine=_is_none_or_empty),
        "local_gpu_idx": _LOCAL_GPU_IDX,
        "num_cpus_for_local_worker": NoEffect(1, _RAY, fine=lambda v: True),
        "_fake_gpus": NoEffect(False, _GPU),
        "num_cpus_for_main_process": NoEffect(1, _RAY, fine=lambda v: True),
        "placement_strategy": NoEffect("PACK", _RAY),
        "num_cpus_per_worker": NoEffect(1, _RAY),
        "num_gpus_per_worker": NoEffect(0, _RAY),
        "num_learner_workers": NoEffect(0, _ONE_LEARNER, fine=lambda v: v in (0, 1)),
        "num_gpus_per_learner_worker": NoEffect(0, _GPU),
        "num_cpus_per_learner_worker": NoEffect(1, _ONE_LEARNER, fine=lambda v: True),
        "custom_resources_per_worker": NoEffect({}, _RAY, fine=_is_none_or_empty),
    },
    "framework": {
        "eager_tracing": NoEffect(True, _TF, fine=lambda v: True),
        "eager_max_retraces": NoEffect(20, _TF, fine=lambda v: True),
        "tf_session_args": NoEffect(_TF_SESSION_ARGS, _TF, fine=lambda v: True),
        "local_tf_session_args": NoEffect(_LOCAL_TF_SESSION_ARGS, _TF, fine=lambda v: True),
        "torch_compile_learner": NoEffect(False, _TORCH),
        "torch_compile_learner_what_to_compile": NoEffect(None, _TORCH, fine=lambda v: True),
        "torch_compile_learner_dynamo_mode": NoEffect(None, _TORCH),
        "torch_compile_learner_dynamo_backend": NoEffect(None, _TORCH, fine=lambda v: True),
        "torch_compile_worker": NoEffect(False, _TORCH),
        "torch_compile_worker_dynamo_backend": NoEffect(None, _TORCH, fine=lambda v: True),
        "torch_compile_worker_dynamo_mode": NoEffect(None, _TORCH),
        "torch_ddp_kwargs": NoEffect({}, _TORCH, fine=_is_none_or_empty),
        "torch_skip_nan_gradients": NoEffect(False, _TORCH),
    },
    "multi_agent": {
        # policies, policy_mapping_fn, policies_to_train and count_steps_by are settings
        # (AlgorithmConfig's table); these three belong to RLlib's old-stack PolicyMap.
        "policy_map_capacity": NoEffect(100, _POLICY_MAP, fine=lambda v: True),
        "policy_states_are_swappable": NoEffect(False, _POLICY_MAP, fine=lambda v: True),
        "observation_fn": NoEffect(None, OLD_STACK + " (RLlib's new stack ignores it too)"),
    },
    "experimental": {
        "_torch_grad_scaler_class": NoEffect(None, _TORCH),
        "_tf_policy_handles_more_than_one_loss": NoEffect(False, _TF),
        "_disable_preprocessor_api": NoEffect(False, OLD_STACK, fine=lambda v: True),
        "_disable_action_flattening": NoEffect(False, OLD_STACK, fine=lambda v: True),
        "_disable_initialize_loss_from_dummy_batch": NoEffect(
            False, OLD_STACK, fine=lambda v: True
        ),
        "_validate_config": NoEffect(
            True, "the config is always validated here", fine=lambda v: True
        ),
        "_use_msgpack_checkpoints": NoEffect(
            False, "checkpoints are always msgpack here", fine=lambda v: True
        ),
    },
}


def rules_of(
    own: dict[str, dict[str, NoEffect | Unsupported]] | None = None,
) -> dict[str, dict[str, NoEffect | Unsupported]]:
    """Builder method -> {setting: rule}: the shared table, plus an algorithm's `own` (its
    config class's `_ALGO_RLLIB_SETTINGS`)."""
    if not own:
        return RLLIB_SETTINGS
    merged = {method: dict(table) for method, table in RLLIB_SETTINGS.items()}
    for method, table in own.items():
        merged.setdefault(method, {}).update(table)
    return merged


def methods_of(rules: dict[str, dict[str, NoEffect | Unsupported]]) -> dict[str, str]:
    """Setting -> its builder method (the last one that takes it)."""
    return {name: method for method, table in rules.items() for name in table}


#: setting -> its builder method, for `update_from_dict` and `overrides`.
METHOD_OF: dict[str, str] = methods_of(RLLIB_SETTINGS)


def rule(
    name: str, rules: dict[str, dict[str, NoEffect | Unsupported]] = RLLIB_SETTINGS
) -> NoEffect | Unsupported | None:
    for table in rules.values():
        if name in table:
            return table[name]
    return None


def warn_ignored(
    config_name: str,
    given: dict[str, Any],
    rules: dict[str, dict[str, NoEffect | Unsupported]] = RLLIB_SETTINGS,
) -> list[str]:
    """One `IgnoredSettingWarning` per `NoEffect` setting in `given` whose value does not match
    what runs here; returns the messages."""
    method_of = methods_of(rules)
    messages = []
    for name, value in given.items():
        setting_rule = rule(name, rules)
        if isinstance(setting_rule, NoEffect) and not setting_rule.is_fine(value):
            message = (
                f"{config_name}.{method_of[name]}({name}={value!r}) has no effect: "
                f"{setting_rule.why}"
            )
            messages.append(message)
            warnings.warn(message, IgnoredSettingWarning, stacklevel=3)
    return messages
