"""IMPALA's (and APPO's) rows of the deliberate-differences table (`trainer.compat.differences`):
what they do here not as RLlib 2.60's do, and why."""

from __future__ import annotations

from trainer.algorithms.registry import API, BEHAVIOUR, Difference

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
        "0 (one learner, in a thread of the main process; 2 or more: data-parallel "
        "learners, learner 0 in that thread and the others in worker processes)",
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
            "minibatches of minibatch_size env steps, cycled over the train batch's chunks in "
            "order as RLlib's MiniBatchCyclicIterator cycles its rows (every module takes as "
            "many as the module with the most steps needs); a minibatch that cuts a chunk "
            "bootstraps its first part from the value of the observation after the cut; "
            "num_env_steps_trained counts the minibatches' steps; shuffle_batch_per_epoch=True "
            "with minibatches is refused at validate() "
            "(tests/test_impala_minibatches.py::test_a_minibatch_cuts_chunks_into_pieces_that_bootstrap_where_cut)",
            "the train batch is whole episode chunks here, not RLlib's padded rows of "
            "rollout_fragment_length (which bootstrap from the next row's first value and "
            "which RLlib's shuffle would scatter step by step)",
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
