"""IQL's rows of the deliberate-differences table (`trainer.compat.differences`): what IQL
here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import BEHAVIOUR, Difference

#: IQL's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "IQL target critics",
        "move towards the critics by tau after every update (target_network_update_freq "
        "env steps apart, 0 by default)",
        "RLlib 2.60's learner moves them once per update() call, which trains on all of a "
        "training step's dataset_num_iters_per_learner batches",
        BEHAVIOUR,
    ),
)
