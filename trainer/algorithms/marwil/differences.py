"""MARWIL's (and BC's) rows of the deliberate-differences table (`trainer.compat.differences`):
what they do here not as RLlib 2.60's do, and why."""

from __future__ import annotations

from trainer.algorithms.registry import BEHAVIOUR, Difference

#: MARWIL's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "MARWIL value targets",
        "r + gamma * V(s') with the module's current weights at each update",
        "RLlib's OfflinePreLearner computes them (GAE over one-step episodes, lambda 1: the "
        "same formula) once per read with the weights the learner had when reading began, "
        "which it does not update",
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
