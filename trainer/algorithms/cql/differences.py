"""CQL's rows of the deliberate-differences table (`trainer.compat.differences`): what CQL
here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, ONE_LEARNER_WHY, Difference

#: CQL's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference("CQLConfig.get_default_learner_class", "missing", ONE_LEARNER_WHY, API),
    Difference("CQLConfig.build_learner_connector", "missing", ONE_LEARNER_WHY, API),
    Difference(
        "CQL.get_default_policy_class",
        "missing",
        "RLlib's old API stack (Policy, RolloutWorker, SampleBatch); this trainer is RLlib's "
        "new stack only",
        API,
    ),
    Difference(
        "CQLConfig.bc_iters",
        "counts the learner's updates over the whole run",
        "RLlib 2.60 compares bc_iters with a 'sum' metric that its learner clears at the end "
        "of every update() call, so the count restarts each training step and never exceeds "
        "dataset_num_iters_per_learner: with the tuned examples' bc_iters=200 its policy "
        "clones the data for ever. Here the first bc_iters updates clone the recorded "
        "actions, then the policy follows the critics, as the setting's docs say",
        BEHAVIOUR,
    ),
    Difference(
        "CQL target critics",
        "move towards the critics by tau after every update (target_network_update_freq "
        "env steps apart, 0 by default), as SAC's",
        "RLlib 2.60's CQL moves them once per learner update() call, which trains on all of "
        "a training step's dataset_num_iters_per_learner batches; the critics then chase "
        "nearly frozen targets (its CQL runs as behaviour cloning, see bc_iters, so the "
        "critics never steer its policy). Here they do, and their targets follow as in SAC",
        BEHAVIOUR,
    ),
    Difference(
        "CQLConfig.lr",
        "None",
        "RLlib's default is 3e-4, which its own validate() then refuses for the new stack "
        "(SAC's rates are actor_lr, critic_lr and alpha_lr); every RLlib CQL script sets "
        "lr=None, which passes here too",
        API,
    ),
    Difference(
        "CQL isinstance SAC",
        "CQL is not a subclass of SAC (CQLConfig is of SACConfig)",
        "CQL here shares the offline algorithms' training step (BC, MARWIL, IQL) and SAC's "
        "learner and module; SAC's algorithm class is its online, replay-buffer loop",
        BEHAVIOUR,
    ),
    Difference(
        "CQL training results: num_env_steps_sampled_lifetime",
        "train_batch_size_per_learner per training step, as BC and MARWIL",
        "RLlib's CQL logs no env steps at all (its tuned example's stop on "
        "num_env_steps_sampled_lifetime never fires); here CQL counts the recorded steps it "
        "reads, as RLlib's MARWIL does",
        BEHAVIOUR,
    ),
)
