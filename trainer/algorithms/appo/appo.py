"""APPO: the `APPO` algorithm: IMPALA's asynchronous training step
(trainer/algorithms/impala/impala.py) with APPO's learner (appo_learner.py; torch_learner.py)
fed from a circular buffer: each train batch is trained on up to
`circular_buffer_iterations_per_batch` times, the buffer holding `circular_buffer_num_batches`;
the target network's clock counts each batch once, for every module (one without steps in a
batch too, as RLlib 2.60's learner checks every module's target network after each update).
Its settings, `APPOConfig`, are config.py's; this module re-exports it (RLlib's
`ray.rllib.algorithms.appo.appo` holds both).
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.appo.config import APPOConfig
from trainer.algorithms.impala.impala import IMPALA
from trainer.algorithms.impala.learner_thread import BatchQueue, CircularBuffer, TrainBatch
from trainer.algorithms.multi_agent_learner import MultiAgentLearner
from trainer.util import seeding

#: The entropy word of the circular buffer's stream (`seeding.derived_stream`): which train
#: batch the learner takes next. Fixed: changing it changes every seeded APPO result.
CIRCULAR_BUFFER_SEED_WORD = 11


class APPO(IMPALA):
    """See the module docstring."""

    config: APPOConfig

    @classmethod
    def get_default_config(cls) -> APPOConfig:
        return APPOConfig()

    def learner_queue(self) -> BatchQueue | CircularBuffer:
        """The circular buffer (`use_circular_buffer`), else a queue of `simple_queue_size`."""
        config = self.config
        if not config.use_circular_buffer:
            return BatchQueue(config.simple_queue_size)
        return CircularBuffer(
            config.circular_buffer_num_batches,
            config.circular_buffer_iterations_per_batch,
            seed=seeding.derived_stream(config.seed, CIRCULAR_BUFFER_SEED_WORD),
        )

    def _learner_clock(self, batch: TrainBatch, *, first_use: bool) -> dict[str, Any]:
        """The target network's clock counts each train batch's env steps once, at its first
        use (RLlib 2.60's `NUM_ENV_STEPS_TRAINED_LIFETIME`: see appo_learner.py), the same for
        every module's learner."""
        return {"num_env_steps_new": batch.env_steps if first_use else 0}

    def _update_on(self, batch: TrainBatch) -> dict:
        """IMPALA's update on `batch`; at the batch's first use, the modules without steps in
        it advance their target's clock by its env steps (`APPOTargetState.advance_clock`);
        one whose target followed reports its counters."""
        first_use = batch.arrays is None
        results = super()._update_on(batch)
        learner = self.learner
        if not first_use or not isinstance(learner, MultiAgentLearner):
            return results
        assert batch.arrays is not None  # (made by the update)
        replicas = self.learner_replicas
        for module_id in learner.learners:
            if module_id in batch.arrays:
                continue
            if replicas is None:
                stats = learner.advance_module_clock(module_id, batch.env_steps)
            else:  # every learner's replica of the module alike
                call: tuple[str, tuple, dict] = (
                    "advance_module_clock",
                    (module_id, batch.env_steps),
                    {},
                )
                stats = replicas.run_calls([call] * replicas.num_learners)
            if "num_target_updates" in stats:
                results[module_id] = stats
        return results


__all__ = ["APPO", "APPOConfig"]
