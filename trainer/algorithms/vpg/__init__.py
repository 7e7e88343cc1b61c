"""VPG, vanilla policy gradient without a baseline (RLlib's example custom algorithm), one folder:

    vpg.py             VPGConfig (its settings, default module and learner) and VPG
                       (training_step: sample complete episodes, update, sync the weights)
    torch_learner.py   VPGTorchLearner: returns to go and the policy-gradient loss
    torch_module.py    VPGTorchRLModule: the policy network

The learner and the module need torch (the torch extra); they are imported when a config asks
for them. `ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads: besides the
classes, the RLlib example modules the launcher serves from this folder.
"""

from trainer.algorithms.registry import AlgorithmEntry
from trainer.algorithms.vpg.vpg import VPG, VPGConfig
from trainer.compat.differences import BEHAVIOUR, Difference

ALGORITHM = AlgorithmEntry(
    name="VPG",
    algorithm_cls=VPG,
    config_cls=VPGConfig,
    rllib_modules={
        "ray.rllib.examples.algorithms.classes.vpg": ("trainer.algorithms.vpg.vpg",),
        "ray.rllib.examples.learners.classes.vpg_torch_learner": (
            "trainer.algorithms.vpg.torch_learner",
        ),
        "ray.rllib.examples.rl_modules.classes.vpg_torch_rlm": (
            "trainer.algorithms.vpg.torch_module",
        ),
    },
    differences=(
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
    ),
)

__all__ = ["ALGORITHM", "VPG", "VPGConfig"]
