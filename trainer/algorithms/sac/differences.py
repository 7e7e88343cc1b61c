"""SAC's rows of the deliberate-differences table (`trainer.compat.differences`, which reads
them through the registry): what SAC here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, Difference

#: SAC's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "SACConfig.optimization",
        "missing (training(optimization_config=...) is accepted with a warning that it has no "
        "effect)",
        "RLlib's old-API-stack rates; its new stack (and this trainer) read actor_lr, critic_lr "
        "and alpha_lr",
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
    Difference(
        "DefaultSACTorchRLModule Q-values (compute_q_values, forward_target)",
        'return {"qf_preds": Q} (the min over the critics), as every Q module here does',
        "RLlib's SAC module returns the tensor itself where its DQN module returns the dict; "
        "one QNetAPI for numpy and torch, DQN and SAC",
        BEHAVIOUR,
    ),
    Difference(
        "SAC with Discrete actions (log-probabilities)",
        "log_softmax(logits)",
        "RLlib takes softmax(logits).log(): -inf where a probability underflows, and the policy "
        "loss NaN",
        BEHAVIOUR,
    ),
    Difference(
        "SACTorchLearner",
        "a TorchLearner (not a DQNTorchLearner subclass); the TD errors come back in the "
        "update's results for the algorithm to set priorities",
        "the one-learner data flow of the numpy SACLearner, whose results the torch learner's "
        "match key for key (tests/test_sac_torch.py)",
        BEHAVIOUR,
    ),
)
