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
    Difference(
        "DefaultIQLTorchRLModule._forward_train",
        "returns what IQL's loss reads (the critics' and target critics' Q(s, a), the "
        "policy's distribution inputs at s, V(s) and V(s'))",
        "RLlib 2.60's runs SAC's whole training pass first, whose other outputs (q_curr, "
        "q_target_next, logp_resampled, logp_next_resampled, action_dist_inputs_next) its "
        "IQL loss never reads: four passes of the critics over each batch, and two policy "
        "draws that advance torch's generator",
        BEHAVIOUR,
    ),
)
