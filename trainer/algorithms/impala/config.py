"""`IMPALAConfig`: IMPALA's settings (RLlib 2.60's names and defaults) and its classes (its
learners and PPO's modules, by import path).

RLlib's IMPALA trains PPO's policy-and-value module: `PolicyModule` for the numpy learner
(`IMPALALearner`), `DefaultPPOTorchRLModule` for the torch one (`IMPALATorchLearner`). Its
checks: V-trace only (`vtrace=True`), minibatches of whole rollout fragments, no shuffled
minibatches. `APPOConfig` (trainer/algorithms/appo/config.py) subclasses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.config.training import schedule_check
from trainer.algorithms.settings import setting
from trainer.compat.rllib_settings import OLD_SCHEDULE, OLD_STACK, NoEffect
from trainer.errors import UnsupportedSetting
from trainer.util.checks import int_at_least, is_bool, number_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: IMPALA's Algorithm (`impala.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.impala.impala:IMPALA"
#: IMPALA's learners (`AlgorithmClasses`) and PPO's modules (RLlib's IMPALA trains PPO's:
#: a policy and a value network), named by import path.
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.impala.impala_learner:IMPALALearner",
    torch_learner="trainer.algorithms.impala.torch_learner:IMPALATorchLearner",
    numpy_module="trainer.algorithms.ppo.module:PolicyModule",
    torch_module="trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule",
)
_NO_AGGREGATORS = "there are no aggregator actors here: the driver builds the batches"


class IMPALAConfig(AlgorithmConfig):
    """IMPALA's config. Defaults are RLlib's: `vtrace=True`, `vtrace_clip_rho_threshold=1.0`,
    `vtrace_clip_pg_rho_threshold=1.0`, `learner_queue_size=3`, `broadcast_interval=1`,
    `timeout_s_sampler_manager=0.0`, `vf_loss_coeff=0.5`, `entropy_coeff=0.01`, `lr=5e-4`,
    `grad_clip=40.0`, `rollout_fragment_length=50`, `train_batch_size=500`,
    `num_env_runners=2`, `min_time_s_per_iteration=10`."""

    vtrace: bool = setting(True, is_bool, "V-trace off-policy correction (RLlib 2.60: always on)")
    vtrace_clip_rho_threshold: float = setting(
        1.0,
        number_at_least(0),
        "V-trace's clip of the importance weights in the value targets (rho bar)",
    )
    vtrace_clip_pg_rho_threshold: float = setting(
        1.0,
        number_at_least(0),
        "V-trace's clip of the importance weights in the policy gradient",
    )
    learner_queue_size: int = setting(
        3,
        int_at_least(1),
        "train batches waiting for the learner at most (a full queue holds sampling back)",
    )
    broadcast_interval: int = setting(
        1, int_at_least(1), "training steps with new updates between two weight broadcasts"
    )
    timeout_s_sampler_manager: float = setting(
        0.0, number_at_least(0), "how long a training step waits for sample replies (seconds)"
    )
    vf_loss_coeff: float = setting(0.5, number_at_least(0), "weight of the value function's loss")
    entropy_coeff: float | list = setting(
        0.01,
        schedule_check("entropy_coeff", "coeff"),
        "weight of the entropy bonus, or RLlib's schedule [[timestep, coeff], ...], linear in "
        "env steps sampled",
    )

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect]]] = {
        "training": {
            "lr_schedule": NoEffect(None, OLD_SCHEDULE),
            "entropy_coeff_schedule": NoEffect(None, OLD_SCHEDULE),
            "num_gpu_loader_threads": NoEffect(
                8, "batches reach the learner in memory here (no GPU loader threads)"
            ),
            "timeout_s_aggregator_manager": NoEffect(0.0, _NO_AGGREGATORS),
            "num_aggregator_actors_per_learner": NoEffect(
                0, _NO_AGGREGATORS, fine=lambda v: v == 0
            ),
            # RLlib's old API stack only (its new stack ignores them too).
            "opt_type": NoEffect("adam", OLD_STACK, fine=lambda v: v == "adam"),
            "decay": NoEffect(0.99, OLD_STACK),
            "momentum": NoEffect(0.0, OLD_STACK),
            "epsilon": NoEffect(0.1, OLD_STACK),
            "minibatch_buffer_size": NoEffect(1, OLD_STACK),
            "replay_proportion": NoEffect(0.0, OLD_STACK, fine=lambda v: v == 0.0),
            "replay_buffer_num_slots": NoEffect(0, OLD_STACK),
            "learner_queue_timeout": NoEffect(300, OLD_STACK),
            "num_multi_gpu_tower_stacks": NoEffect(1, OLD_STACK),
            "_separate_vf_optimizer": NoEffect(False, OLD_STACK),
            "_lr_vf": NoEffect(0.0005, OLD_STACK),
        },
        "debugging": {
            "_env_runners_only": NoEffect(
                False, "RLlib's benchmark switch (sample without learning)", fine=lambda v: not v
            ),
            "_skip_learners": NoEffect(
                False, "RLlib's benchmark switch (sample without learning)", fine=lambda v: not v
            ),
        },
    }
    _DEFAULT_OVERRIDES = {
        "lr": 5e-4,
        "grad_clip": 40.0,
        "grad_clip_by": "global_norm",
        "rollout_fragment_length": 50,
        "train_batch_size": 500,
        "num_env_runners": 2,
        "min_time_s_per_iteration": 10,
        "exploration_config": {"type": "StochasticSampling"},
    }

    _CLASSES = CLASSES
    #: A learner per policy (`multi_agent(policies=...)`).
    _MULTI_AGENT_TRAINING = True

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    @property
    def replay_ratio(self) -> float:
        """RLlib's 1 / replay_proportion (0.0: no replay, the only value here)."""
        proportion = self["replay_proportion"]
        return 1.0 / proportion if proportion > 0 else 0.0

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        if not self.vtrace:
            raise ConfigError(
                f"{name}.training(vtrace=False): IMPALA and APPO learn with V-trace only "
                "(RLlib 2.60 refuses vtrace=False as well); set vtrace=True"
            )
        # RLlib's check: minibatches of whole rollout fragments (its rows), within a batch.
        rollout_fragment_length = self.get_rollout_fragment_length()
        if self.minibatch_size is not None and not (
            self.minibatch_size % rollout_fragment_length == 0
            and self.minibatch_size <= self.total_train_batch_size
        ):
            raise ConfigError(
                f"{name}.training(minibatch_size={self.minibatch_size}): `minibatch_size` "
                f"({self.minibatch_size}) must either be None or a multiple of "
                f"`rollout_fragment_length` ({rollout_fragment_length}) while at the same "
                "time smaller than or equal to `total_train_batch_size` "
                f"({self.total_train_batch_size})!"
            )
        if self.shuffle_batch_per_epoch and (self.num_epochs > 1 or self.minibatch_size):
            raise UnsupportedSetting(
                f"{name}.training(shuffle_batch_per_epoch=True): IMPALA and APPO train V-trace "
                "over the train batch's chunks in order (RLlib shuffles single rows, which "
                "cuts its sequences); leave shuffle_batch_per_epoch=False",
                "shuffled V-trace minibatches",
            )


__all__ = ["CLASSES", "IMPALAConfig"]
