"""VPG's rows of the deliberate-differences table (`trainer.compat.differences`, which reads
them through the registry): what VPG here does not do as RLlib 2.60's example does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import BEHAVIOUR, Difference

#: VPG's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "VPGTorchLearner: the mean return to go per action",
        "logged as action_<a>_return_to_go_mean with the action's number, one value per "
        "action and update (tests/test_vpg.py::"
        "test_a_training_step_samples_complete_episodes_on_the_runner_processes)",
        "RLlib's example formats the action tensor itself into the key "
        "(action_tensor(0)_return_to_go_mean) and logs one value per row",
        BEHAVIOUR,
    ),
    Difference(
        "VPGTorchLearner: training(minibatch_size=...)",
        "num_epochs gradient steps on the whole batch; minibatch_size is not used "
        "(tests/test_vpg.py::test_the_loss_is_minus_the_mean_of_log_pi_times_the_return_to_go)",
        "RLlib's Learner would cut the batch into minibatches; its VPG example sets no "
        "minibatch_size, so it also takes one step on the whole batch",
        BEHAVIOUR,
    ),
)
