"""MARWIL's (and BC's) rows of the deliberate-differences table (`trainer.compat.differences`):
what they do here not as RLlib 2.60's do, and why."""

from __future__ import annotations

from trainer.algorithms.registry import BEHAVIOUR, Difference

#: MARWIL's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "MARWIL value targets after a restore",
        "r + gamma * V(s') with the weights frozen at the run's first update, which the "
        "checkpoint holds (value_targets_weights): a restored run goes on with the same targets",
        "RLlib 2.60's OfflinePreLearner maps the dataset once with the weights the learner has "
        "when reading begins (GAE over one-step episodes, lambda 1: the same formula) and never "
        "updates them; a restored run begins reading again, with the restored weights",
        BEHAVIOUR,
    ),
    Difference(
        "offline_data(dataset_num_iters_per_learner=None)",
        "one update per training step",
        "RLlib refuses None with a local learner and runs one pass over the dataset with "
        "remote learners; here a training step always reads and trains on "
        "dataset_num_iters_per_learner batches (None: 1)",
        BEHAVIOUR,
    ),
)
