"""IMPALA's (and APPO's) rows of the deliberate-differences table (`trainer.compat.differences`):
what they do here not as RLlib 2.60's do, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, ONE_LEARNER_WHY, Difference

#: IMPALA's own rows: the names RLlib's APPO inherits from IMPALA (or sets as here).
_IMPALA_ONLY: tuple[Difference, ...] = (
    Difference(
        "IMPALAConfig.use_env_runner_state_server",
        "False (the driver holds the weights; see the weight broadcast)",
        "RLlib 2.60 pulls weights from an EnvRunner-state server actor",
        API,
    ),
    Difference(
        "IMPALAConfig.num_learners",
        "0 (one learner, in a thread of the main process)",
        "RLlib's default 1 puts its learner in a Ray actor; here the learner thread "
        "learns while the EnvRunner processes sample",
        API,
    ),
    Difference(
        "IMPALAConfig.num_gpus",
        "0",
        "RLlib's default 1 is an old-API-stack setting; the learner here runs numpy on the CPU",
        API,
    ),
)


def async_differences(name: str) -> tuple[Difference, ...]:
    """The asynchronous algorithms' shared rows, `name` being "IMPALA" or "APPO"."""
    return (
        Difference(f"{name}Config.get_default_learner_class", "missing", ONE_LEARNER_WHY, API),
        Difference(
            f"{name}.get_default_policy_class",
            "missing",
            "RLlib's old API stack (Policy, RolloutWorker, SampleBatch); this trainer is "
            "RLlib's new stack only",
            API,
        ),
        Difference(
            f"{name} train batches",
            "whole episode chunks, each bootstrapping V-trace from its own last observation, "
            "train_batch_size_per_learner env steps or more per batch",
            "RLlib cuts the chunks into rows of rollout_fragment_length + 1 time steps "
            "(time-major, padded, masked) and bootstraps each row from the next row's first "
            "value; the targets are the same, without padding",
            BEHAVIOUR,
        ),
        Difference(
            f"{name} weight broadcast",
            "the weights travel with an EnvRunner's next sample request, when the EnvRunner "
            "has older ones (weights_seq_no)",
            "RLlib 2.60 pushes them to an EnvRunner-state server actor that the EnvRunners "
            "poll before sampling; here the driver holds them, with the same seq numbers",
            BEHAVIOUR,
        ),
        Difference(
            f"{name}Config.training(num_epochs, minibatch_size)",
            "refused at validate() unless 1 and None (RLlib's defaults)",
            "one update per train batch here: RLlib's minibatches cut V-trace's rows mid-chunk "
            "and cycle each module's rows to minibatch_size, which is not built",
            BEHAVIOUR,
        ),
        Difference(
            f"{name} recurrent modules",
            "a recurrent module (use_lstm, torch) with lstm_use_prev_action or "
            "lstm_use_prev_reward is refused when the learner is built",
            "the previous action and reward inputs of a recurrent module are not built into "
            "IMPALA's and APPO's sequences yet (PPO has them)",
            BEHAVIOUR,
        ),
        *(_IMPALA_ONLY if name == "IMPALA" else ()),
    )


#: IMPALA's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = async_differences("IMPALA")
