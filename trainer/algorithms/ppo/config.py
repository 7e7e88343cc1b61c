"""`PPOConfig`: PPO's settings (RLlib 2.60's, with its defaults) and its classes (its numpy and
torch learners and default modules, by import path); the algorithm, `PPO`, is in `ppo.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.config.training import schedule_check
from trainer.algorithms.settings import UsualRange, in_range, setting
from trainer.compat.rllib_settings import OLD_SCHEDULE, NoEffect, Unsupported
from trainer.core.models import MODEL_DEFAULTS
from trainer.util.checks import finite_number, is_bool, number_at_least, number_at_least_or_inf
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: PPO's Algorithm (`ppo.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.ppo.ppo:PPO"
#: PPO's learners and default modules (`AlgorithmClasses`), named by import path: the learners
#: read their settings off a `PPOConfig` (they import this module).
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.ppo.ppo_learner:PPOLearner",
    torch_learner="trainer.algorithms.ppo.torch_learner:PPOTorchLearner",
    numpy_module="trainer.algorithms.ppo.module:PolicyModule",
    torch_module="trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule",
    deferred_torch="trainer.algorithms.ppo.deferred_torch:DEFERRED_TORCH",
)


class PPOConfig(AlgorithmConfig):
    """PPO's config. Defaults are RLlib's: `lr=5e-5`, `train_batch_size=4000`,
    `minibatch_size=128`, `num_epochs=30`, `lambda_=1.0`, `clip_param=0.3`, `vf_clip_param=10.0`,
    `vf_loss_coeff=1.0`, `entropy_coeff=0.0`, `kl_coeff=0.2`, `kl_target=0.01`,
    `num_env_runners=2`, `rollout_fragment_length="auto"`."""

    # RLlib checks no range for these: only what cannot train is refused (NaN; a negative
    # clip). float("inf") turns a clip off.
    lambda_: float = setting(
        1.0,
        finite_number,
        "GAE's lambda",
        usual=UsualRange(
            in_range(0, 1),
            "between 0 and 1",
            "GAE weighs the n-step advantage estimates by powers of lambda_: above 1 the "
            "longest weigh most, below 0 their signs alternate",
        ),
    )
    clip_param: float = setting(
        0.3,
        number_at_least_or_inf(0),
        "PPO's clip of the probability ratio",
        usual=UsualRange(
            in_range(0, float("inf"), low_open=True),
            "above 0, typically 0.1 to 0.3",
            "0 clips every probability ratio to exactly 1, so the policy can hardly change",
        ),
    )
    vf_clip_param: float = setting(
        10.0, number_at_least_or_inf(0), 'clip of the value function\'s loss (float("inf"): none)'
    )
    vf_loss_coeff: float = setting(1.0, number_at_least(0), "weight of the value function's loss")
    entropy_coeff: float | list = setting(
        0.0,
        schedule_check("entropy_coeff", "coeff"),
        "weight of the entropy bonus, or RLlib's schedule [[timestep, coeff], ...], linear in "
        "env steps sampled",
    )
    kl_coeff: float = setting(0.2, number_at_least(0), "initial weight of the KL penalty")
    kl_target: float = setting(
        0.01,
        number_at_least(0),
        "the KL the penalty's weight adapts toward",
        usual=UsualRange(
            in_range(0, float("inf"), low_open=True),
            "above 0, typically 0.01 to 0.05",
            "with 0 every update's KL is above the target, so the KL penalty's weight grows by "
            "half after every update",
        ),
    )
    use_gae: bool = setting(
        True,
        is_bool,
        "generalized advantage estimation (False: discounted returns minus the value)",
    )
    use_critic: bool = setting(
        True, is_bool, "a value function (truncated episodes bootstrap from it)"
    )
    use_kl_loss: bool = setting(True, is_bool, "the KL penalty term in the loss")

    #: RLlib's settings of this config class that have no effect here, or are refused:
    #: builder method -> {setting: rule} (`trainer.compat.rllib_settings`).
    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            "lr_schedule": NoEffect(None, OLD_SCHEDULE),
            "entropy_coeff_schedule": NoEffect(None, OLD_SCHEDULE),
            "vf_share_layers": NoEffect(
                None,
                "RLlib 2.60 ignores it as well; share layers with "
                'rl_module(model_config={"vf_share_layers": '
                "True})",
                fine=lambda v: v is None,
            ),
        },
    }
    _CLASSES = CLASSES
    _MULTI_AGENT_TRAINING = True
    _LEARNER_ONLY_MODULES = True
    _DEFAULT_OVERRIDES = {
        "lr": 5e-5,
        "shuffle_batch_per_epoch": True,
        "rollout_fragment_length": "auto",
        "train_batch_size": 4000,
        "num_epochs": 30,
        "minibatch_size": 128,
        "num_env_runners": 2,
        # RLlib's `_model_config_auto_includes`: a model config given as a dict, or none at all,
        # trains a policy encoder and a value encoder; a `DefaultModelConfig` names its own
        # `vf_share_layers` (True by default, one shared encoder).
        "model": {**MODEL_DEFAULTS, "vf_share_layers": False},
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def validate(self) -> None:
        super().validate()
        # RLlib's check for synchronous on-policy sampling: whole sampling rounds must come
        # within 10% of train_batch_size.
        self.validate_train_batch_size_vs_rollout_fragment_length()
        if self.batch_mode == "truncate_episodes" and not self.use_critic:
            raise ConfigError(
                "PPOConfig: batch_mode='truncate_episodes' needs use_critic=True (a cut episode "
                "bootstraps from the value function); use batch_mode='complete_episodes'"
            )
        if self.batch_mode == "truncate_episodes" and not self.use_gae and not self.in_evaluation:
            # RLlib's rule: without GAE, a cut episode's return has no value estimate to end on.
            raise ConfigError(
                "PPOConfig: batch_mode='truncate_episodes' needs use_gae=True (a cut episode's "
                "return is estimated with GAE from the value function); use "
                "batch_mode='complete_episodes' or use_gae=True"
            )


__all__ = ["PPOConfig"]
