"""PPO's rows of the deliberate-differences table (`trainer.compat.differences`, which
reads them through the registry): what PPO here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, TEST, Difference

#: PPO's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "PPOConfig.exploration_config",
        "{} by default, meaning the algorithm's default exploration: "
        "config.get_exploration_config() returns the whole dict",
        "a dict without \"type\" updates the algorithm's default (RLlib's rule), so the empty "
        "default keeps a later algorithm-level default change visible",
        API,
    ),
    Difference(
        "tests/rllib/test_ppo_torch.py::all cases",
        ".framework('torch') added to the config",
        "this file is RLlib's test_ppo.py run on the torch framework; the default framework "
        "here is numpy",
        TEST,
    ),
    Difference(
        "tests/rllib/test_ppo_rl_module.py::test_rollouts, test_forward_train",
        "ALE Breakout left out",
        "ale_py is not installed",
        TEST,
    ),
    Difference(
        "tests/rllib/test_ppo_learner.py (RLlib's), tests/rllib/test_learner.py (RLlib's)",
        "not ported",
        "they build standalone learners and LearnerGroups (config.build_learner(env=), "
        "build_learner_group), hold MultiRLModules in one learner with gradients keyed by "
        "parameter object (here by name), and read offline datasets",
        TEST,
    ),
    Difference(
        "PPOTorchLearner results (gradients_default_optimizer_global_norm)",
        "always reported, with the numpy learner's keys "
        "(tests/test_torch_learner.py::test_update_changes_weights_and_reports_the_numpy_learners_keys)",
        "one set of result keys for both frameworks; RLlib logs the norm only when clipping by "
        "global_norm or with log_gradients",
        BEHAVIOUR,
    ),
    Difference(
        "DefaultPPOTorchRLModule (model_config)",
        "head_fcnet_*_initializer keys reach the pi and vf heads; Discrete observations are "
        "one-hot encoded and 2-D Boxes flattened; an empty fcnet_hiddens feeds the observation "
        "to the heads; the log-std clip is applied without a log_std_clip_param_const buffer in "
        "the state (tests/test_torch_modules.py::test_same_network_as_the_numpy_policy_module, "
        "::test_empty_fcnet_hiddens_feeds_the_observation_to_the_heads)",
        "the same network and input handling as the numpy default module for the same "
        "model_config; RLlib's PPOCatalog ignores the head initializers and fails on an empty "
        "fcnet_hiddens",
        BEHAVIOUR,
    ),
    Difference(
        "PPO minibatches (num_epochs passes over the train batch)",
        "each pass splits a fresh shuffle of the batch into minibatch_size rows; a remainder of "
        "at least half a minibatch is a smaller minibatch of its own, a smaller one is left "
        "out, so module_train_batch_size_mean is below minibatch_size where the batch is no "
        "multiple of it "
        "(tests/test_learner_results.py::test_ppo_logs_the_mean_minibatch_size_per_module)",
        "RLlib's MiniBatchCyclicIterator wraps around the batch, so every minibatch holds "
        "minibatch_size rows and a pass may repeat rows of the next one",
        BEHAVIOUR,
    ),
    Difference(
        "PPO with use_lstm (minibatches of sequences)",
        "a minibatch is as many whole sequences as RLlib's (the batch's sequences times "
        "minibatch_size over its steps); a pass's remainder is a smaller minibatch or left "
        "out, as without the LSTM; vf_explained_var is over the real steps only "
        "(tests/test_torch_lstm.py::test_the_learner_builds_rllibs_sequences_from_hand_built_episodes)",
        "RLlib's MiniBatchCyclicIterator wraps around the batch (a minibatch may take the "
        "sequences of the next pass) and counts the padding in vf_explained_var",
        BEHAVIOUR,
    ),
)
