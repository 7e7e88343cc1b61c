"""SAC's rows of the deliberate-differences table (`trainer.compat.differences`, which reads
them through the registry): what SAC here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, ONE_LEARNER_WHY, Difference

#: SAC's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference("SACConfig.get_default_learner_class", "missing", ONE_LEARNER_WHY, API),
    Difference(
        "SAC.get_default_policy_class",
        "missing",
        "RLlib's old API stack (Policy, RolloutWorker, SampleBatch); this trainer is RLlib's "
        "new stack only",
        API,
    ),
    Difference(
        "SACConfig.training(lr=...)",
        "a value other than None is refused at the call",
        "RLlib refuses it in validate(); SAC trains with actor_lr, critic_lr and alpha_lr",
        BEHAVIOUR,
    ),
    Difference(
        "SquashedGaussian deterministic actions (explore=False)",
        "tanh(mean), the squashed distribution's mode",
        "RLlib's TorchSquashedGaussian.to_deterministic() returns the unsquashed mean, which "
        "the EnvRunner then clips to [-1, 1]: a different action wherever |mean| is not small; "
        "the mode is what SAC's paper, Stable-Baselines3 and CleanRL evaluate",
        BEHAVIOUR,
    ),
)
