"""CQL's rows of the deliberate-differences table (`trainer.compat.differences`): what CQL
here does not do as RLlib 2.60's does, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, Difference

#: CQL's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "CQLConfig.bc_iters",
        "counts training iterations (train() calls): the first bc_iters clone the recorded "
        "actions, then the policy follows the critics",
        "RLlib's docs and its learner's metric (training_iteration) say iterations, but "
        "RLlib 2.60 sums that metric per update() call and clears it after each, so its "
        "count restarts every training step and never exceeds dataset_num_iters_per_learner: "
        "with its tuned example's bc_iters=200 its policy clones the data for ever, with "
        "bc_iters=2 it clones on the first update of each training step only",
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
        "CQLConfig without an env",
        "builds and trains from recorded data for environment(observation_space=..., "
        "action_space=...), as BC, MARWIL and IQL do in RLlib and here "
        "(tests/test_offline_spaces_and_get_module.py)",
        "RLlib 2.60's CQL config is an online one (it does not set _is_online=False as "
        "MARWIL's does), so its Algorithm builds a local EnvRunner that makes the env and "
        'fails: "`config.env` is not provided!"; CQL here learns from recorded data only',
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
