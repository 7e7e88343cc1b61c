"""`APPOConfig`: APPO's settings (RLlib 2.60's names and defaults: IMPALA's, whose config it
subclasses as RLlib's does, plus the clipped surrogate's, the KL term's, the target network's
and the circular buffer's) and its classes (its learners, by import path; the modules are
IMPALA's, PPO's).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.impala.config import CLASSES as IMPALA_CLASSES
from trainer.algorithms.impala.config import IMPALAConfig
from trainer.algorithms.settings import setting
from trainer.compat.rllib_settings import OLD_STACK, NoEffect
from trainer.core.models import MODEL_DEFAULTS
from trainer.util.checks import int_at_least, is_bool, number_above, number_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: APPO's Algorithm (`appo.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.appo.appo:APPO"
#: APPO's learners (`AlgorithmClasses`; the modules are IMPALA's), named by import path: they
#: read their settings off an `APPOConfig` (they import this module).
CLASSES = dataclasses.replace(
    IMPALA_CLASSES,
    numpy_learner="trainer.algorithms.appo.appo_learner:APPOLearner",
    torch_learner="trainer.algorithms.appo.torch_learner:APPOTorchLearner",
)


class APPOConfig(IMPALAConfig):
    """APPO's config: IMPALA's, with RLlib 2.60's APPO defaults: `clip_param=0.4`,
    `use_kl_loss=False`, `kl_coeff=1.0`, `kl_target=0.01`, `target_network_update_freq=2`,
    `tau=1.0`, `use_circular_buffer=True`, `circular_buffer_num_batches=8`,
    `circular_buffer_iterations_per_batch=2`, `simple_queue_size=32`."""

    clip_param: float = setting(0.4, number_at_least(0), "the clip of the probability ratio")
    use_kl_loss: bool = setting(False, is_bool, "the KL term between target network and policy")
    kl_coeff: float = setting(1.0, number_at_least(0), "initial weight of the KL term")
    kl_target: float = setting(0.01, number_at_least(0), "the KL the term's weight adapts toward")
    target_network_update_freq: float = setting(
        2,
        number_at_least(0),
        "target network updates every this x num_batches x iterations_per_batch x train batch "
        "size env steps trained, each train batch counted once (RLlib suggests 0.125 to 4)",
    )
    tau: float = setting(1.0, number_above(0), "target update: tau * module + (1 - tau) * target")
    use_circular_buffer: bool = setting(
        True,
        is_bool,
        "feed the learner from a circular buffer (else a first-in-first-out queue)",
    )
    circular_buffer_num_batches: int = setting(
        8, int_at_least(1), "train batches the circular buffer holds (N)"
    )
    circular_buffer_iterations_per_batch: int = setting(
        2, int_at_least(1), "times each train batch is trained on at most (K)"
    )
    simple_queue_size: int = setting(
        32, int_at_least(1), "train batches the queue holds without the circular buffer"
    )

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect]]] = {
        "training": {
            **IMPALAConfig._ALGO_RLLIB_SETTINGS["training"],
            "use_gae": NoEffect(True, "APPO's advantages are V-trace's (RLlib's as well)"),
            "lambda_": NoEffect(1.0, "APPO's advantages are V-trace's (RLlib's as well)"),
            "target_worker_clipping": NoEffect(
                2.0, "RLlib 2.60's loss clips the target network's ratio at 2.0 whatever this is"
            ),
            "replay_buffer_num_slots": NoEffect(100, OLD_STACK),
        },
        "debugging": IMPALAConfig._ALGO_RLLIB_SETTINGS["debugging"],
    }
    _CLASSES = CLASSES
    _DEFAULT_OVERRIDES = {
        **IMPALAConfig._DEFAULT_OVERRIDES,
        "learner_queue_size": 16,
        # RLlib's `_model_config_auto_includes` (as PPO's): separate policy and value encoders
        # unless the model config says otherwise.
        "model": {**MODEL_DEFAULTS, "vf_share_layers": False},
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        super().validate()
        if self.learner_queue_size != 16:
            raise ConfigError(
                f"APPOConfig.training(learner_queue_size={self.learner_queue_size}): APPO's "
                "learner queue is its circular buffer (RLlib 2.60 refuses this too): set "
                "circular_buffer_num_batches (batches held) and "
                "circular_buffer_iterations_per_batch (uses of each)"
            )


__all__ = ["CLASSES", "APPOConfig"]
