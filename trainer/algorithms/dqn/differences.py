"""DQN's rows of the deliberate-differences table (`trainer.compat.differences`, which
reads them through the registry): what DQN here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, Difference

#: DQN's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "DQNConfig.replay_sequence_length",
        "missing",
        "RLlib's old API stack (Policy, RolloutWorker, SampleBatch); this trainer is RLlib's "
        "new stack only; RLlib 2.60 has no builder keyword for it",
        API,
    ),
    Difference(
        "DQNConfig.exploration_config",
        "{} by default, meaning the algorithm's default exploration: "
        "config.get_exploration_config() returns the whole dict",
        "a dict without \"type\" updates the algorithm's default (RLlib's rule), so the empty "
        "default keeps a later algorithm-level default change visible",
        API,
    ),
    Difference(
        "DQN.training_step (multi-agent)",
        "replays and trains only the modules in policies_to_train "
        "(tests/test_multi_agent_dqn.py::test_a_policy_left_out_of_policies_to_train_keeps_its_weights)",
        "RLlib also samples the modules it does not train, then leaves their samples unused",
        BEHAVIOUR,
    ),
    Difference(
        "DQNConfig.validate (replay_buffer_config type)",
        "a multi-agent config with a single-agent buffer type, or the reverse, is a ConfigError "
        "naming the type to use "
        "(tests/test_multi_agent_dqn.py::test_a_buffer_type_that_does_not_fit_the_agents_is_refused)",
        "RLlib fails later, inside the buffer",
        BEHAVIOUR,
    ),
    Difference(
        "DefaultDQNTorchRLModule._forward_exploration",
        "returns the Q-values as action_dist_inputs (and greedy actions); the EnvRunner's "
        "EpsilonGreedy explores, where RLlib's module draws epsilon-greedy actions itself from "
        "model_config['epsilon']",
        "one exploration path for numpy and torch, drawn from the runner's seeded generator, "
        "with the same cur_epsilon metric",
        BEHAVIOUR,
    ),
    Difference(
        "DefaultDQNTorchRLModule target networks",
        "made in the module's setup() (full modules only); the learner's make_target_networks() "
        "re-syncs them",
        "the module's state keys are the same from construction on, so views, checkpoints and "
        "from_checkpoint agree",
        BEHAVIOUR,
    ),
    Difference(
        "DQNTorchLearner (TD errors, results)",
        "the TD errors return in the update's results for the algorithm to set priorities (not "
        "logged as an item_series metric; with num_atoms > 1, the per-row cross-entropies, as "
        "RLlib's); the gradient norm is reported as gradients_adam_global_norm, the numpy "
        "DQN's key; multi-agent torch DQN is refused",
        "the one-learner data flow of the numpy DQN, whose results the torch learner's match "
        "key for key "
        "(tests/test_torch_dqn.py::test_the_torch_learner_takes_the_numpy_learners_step)",
        BEHAVIOUR,
    ),
    Difference(
        "DQN's distributional projection (num_atoms > 1)",
        "the target distribution's atom indices are clipped to [0, num_atoms - 1] and summed "
        "per atom (tests/test_dqn_distributional.py::test_the_projection_is_rllibs_on_random_"
        "inputs: the same values)",
        "RLlib's one-hot of ceil(b) fails where float rounding puts b past the last atom",
        BEHAVIOUR,
    ),
    Difference(
        "DQNConfig.validate (num_atoms > 1, v_min >= v_max)",
        "a ConfigError naming both ends "
        "(tests/test_dqn_distributional.py::test_bad_values_are_config_errors_naming_the_setting)",
        "RLlib checks neither, and its projection then divides by a support of no width",
        BEHAVIOUR,
    ),
    Difference(
        "Algorithm.export_policy_model(onnx=...) of a distributional DQN (num_atoms > 1)",
        "refused with UnsupportedExport (a NotSupported) naming num_atoms; the numpy export too; "
        "export_policy_checkpoint writes RLlib's module",
        "the ONNX graph and the numpy reader here carry one Q-value per action; RLlib exports "
        "the torch module with torch.onnx",
        BEHAVIOUR,
    ),
)
