"""`SACConfig`: SAC's settings (RLlib 2.60's, with its defaults) and its classes (learners and
default modules, numpy and torch, by import path; the `SAC` algorithm of `sac.py` too).

SAC trains with three rates, `actor_lr`, `critic_lr` and `alpha_lr` (`lr` must stay None, as
RLlib requires), on n-step transitions from a replay buffer (`replay_buffer_config`, RLlib's
prioritized buffer by default); `twin_q` adds the second critic, `tau` and
`target_network_update_freq` move the target critics, `initial_alpha` and `target_entropy`
set the entropy weight alpha and what it steers to.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.config.training import check_lr
from trainer.algorithms.replay import (
    BUFFER_DEFAULTS,
    buffer_fits_agents,
    check_n_step,
    check_replay_buffer_config,
    max_n_step,
    updated_buffer_config,
)
from trainer.algorithms.settings import setting
from trainer.compat.rllib_settings import OLD_STACK, NoEffect, Unsupported
from trainer.util.checks import int_at_least, is_bool, number_above, optional
from trainer.util.import_paths import resolve_import_path

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: SAC's Algorithm (`sac.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.sac.sac:SAC"
#: SAC's learners and default modules (`AlgorithmClasses`), named by import path: the learners
#: read their settings off a `SACConfig` (they import this module). The numpy learner builds
#: its target critics as its module; a torch `learner_class` must be a SACTorchLearner.
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.sac.sac_learner:SACLearner",
    torch_learner="trainer.algorithms.sac.torch_learner:SACTorchLearner",
    numpy_module="trainer.algorithms.sac.sac_module:SACModule",
    torch_module="trainer.algorithms.sac.torch_module:DefaultSACTorchRLModule",
    numpy_targets_from_build=True,
    required_learner_base="ray.rllib.algorithms.sac.torch.sac_torch_learner.SACTorchLearner",
)

#: RLlib's old-stack model dicts (`q_model_config`, `policy_model_config`) at their defaults.
_OLD_STACK_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "relu",
    "post_fcnet_hiddens": [],
    "post_fcnet_activation": None,
    "custom_model": None,
    "custom_model_config": {},
}

#: RLlib's SAC default buffer: prioritized, a million env steps.
_DEFAULT_BUFFER = {**BUFFER_DEFAULTS["PrioritizedEpisodeReplayBuffer"], "capacity": 1_000_000}


def _must_be_none(value: Any) -> str | None:
    return None if value is None else "None (SAC's rates are actor_lr, critic_lr and alpha_lr)"


def _check_target_entropy(value: Any) -> str | None:
    if value is None or value == "auto":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return None
    return '"auto" (-prod(action shape)) or a number'


class SACConfig(AlgorithmConfig):
    """SAC's config. Defaults are RLlib 2.60's: `twin_q=True`, `tau=0.005`,
    `initial_alpha=1.0`, `target_entropy="auto"`, `n_step=1`, `actor_lr=3e-5`,
    `critic_lr=3e-4`, `alpha_lr=3e-4`, `target_network_update_freq=0` (every update),
    `replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1000000,
    "alpha": 0.6, "beta": 0.4}`, `num_steps_sampled_before_learning_starts=1500`,
    `train_batch_size=256`, `rollout_fragment_length="auto"` (= n_step),
    `min_time_s_per_iteration=1`, `min_sample_timesteps_per_iteration=100`. `lr` is not used:
    the actor, the critics and alpha have their own rates."""

    twin_q: bool = setting(True, is_bool, "two critics (and target critics); the minimum is used")
    # RLlib's: SAC has no single rate (training(lr=...) other than None is refused),
    # typed as the shared setting it redefines.
    lr: float | list[list[float]] = setting(
        None, _must_be_none, "not used: SAC's rates are actor_lr, critic_lr, alpha_lr"
    )
    tau: float = setting(5e-3, number_above(0), "target update: tau * critic + (1 - tau) * target")
    initial_alpha: float = setting(1.0, number_above(0), "the entropy weight alpha's start")
    target_entropy: str | float | None = setting(
        "auto",
        _check_target_entropy,
        'the entropy alpha steers to; "auto": -prod(action shape) (-1 for Discrete)',
    )
    n_step: int | tuple[int, int] = setting(
        1,
        check_n_step,
        "n-step returns: an int, or (low, high) to draw n from [low, high) per transition",
    )
    actor_lr: float | list = setting(3e-5, check_lr, "the policy's Adam rate (or a schedule)")
    critic_lr: float | list = setting(3e-4, check_lr, "the critics' Adam rate (or a schedule)")
    alpha_lr: float | list = setting(3e-4, check_lr, "alpha's Adam rate (or a schedule)")
    target_network_update_freq: int = setting(
        0, int_at_least(0), "env steps between target critic updates (0: after every update)"
    )
    replay_buffer_config: dict[str, Any] = setting(
        dict(_DEFAULT_BUFFER),
        check_replay_buffer_config,
        "type (EpisodeReplayBuffer or PrioritizedEpisodeReplayBuffer; for multi-agent runs "
        "MultiAgentEpisodeReplayBuffer or MultiAgentPrioritizedEpisodeReplayBuffer), capacity "
        "(env steps), alpha, beta and the buffers' other arguments; updates the current one "
        "unless it names another type",
    )
    num_steps_sampled_before_learning_starts: int = setting(
        1500, int_at_least(0), "env steps sampled before the first update"
    )
    training_intensity: float | None = setting(
        None,
        optional(number_above(0)),
        "env steps trained per env step sampled (None: RLlib's natural ratio)",
    )
    store_buffer_in_checkpoints: bool = setting(
        False, is_bool, "checkpoints hold the replay buffer"
    )

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            "q_model_config": NoEffect(
                dict(_OLD_STACK_MODEL),
                "RLlib's old-stack Q-model dict; the new stack (and this trainer) size the "
                "critics with rl_module(model_config=...)",
            ),
            "policy_model_config": NoEffect(
                dict(_OLD_STACK_MODEL),
                "RLlib's old-stack policy-model dict; the new stack (and this trainer) size the "
                "policy with rl_module(model_config=...)",
            ),
            "optimization_config": NoEffect(
                {
                    "actor_learning_rate": 3e-4,
                    "critic_learning_rate": 3e-4,
                    "entropy_learning_rate": 3e-4,
                },
                OLD_STACK + "; SAC's rates are actor_lr, critic_lr and alpha_lr",
            ),
            "_deterministic_loss": NoEffect(
                False, "RLlib's new-stack SAC does not read it (nor does this trainer)"
            ),
            "_use_beta_distribution": Unsupported(
                False, "SAC acts with the squashed Gaussian (RLlib's new stack has no Beta)"
            ),
        },
    }
    _CLASSES = CLASSES
    _MULTI_AGENT_TRAINING = True
    _DEFAULT_OVERRIDES = {
        "exploration_config": {"type": "StochasticSampling"},
        "train_batch_size": 256,
        "rollout_fragment_length": "auto",
        "min_time_s_per_iteration": 1,
        "min_sample_timesteps_per_iteration": 100,
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def training(
        self,
        *,
        replay_buffer_config: dict = NotProvided,
        clip_actions: bool = NotProvided,
        **kwargs: Any,
    ) -> Self:
        """Learning settings: SAC's own and those every algorithm has. `lr` must be None (or
        not given): SAC trains with `actor_lr`, `critic_lr` and `alpha_lr`, as in RLlib. A
        `replay_buffer_config` naming another `type` replaces the current one (on top of that
        type's defaults). `clip_actions` is `environment(clip_actions=...)`'s."""
        lr = kwargs.pop("lr", NotProvided)
        if lr is not NotProvided and lr is not None:
            raise ConfigError(
                f"SACConfig.training(lr={lr!r}): SAC trains with actor_lr, critic_lr and "
                "alpha_lr (the policy's, the critics' and alpha's rates); leave lr unset or "
                "None, as RLlib requires"
            )
        super().training(**kwargs)
        if replay_buffer_config is not NotProvided:
            replay_buffer_config = updated_buffer_config(
                self.replay_buffer_config, replay_buffer_config
            )
        if clip_actions is not NotProvided:
            self.environment(clip_actions=clip_actions)
        return self._set("training", {"replay_buffer_config": replay_buffer_config})

    def validate(self) -> None:
        super().validate()
        n_max = max_n_step(self.n_step)
        if self.rollout_fragment_length != "auto" and self.rollout_fragment_length < n_max:
            raise ConfigError(
                f"SACConfig: rollout_fragment_length={self.rollout_fragment_length} is smaller "
                f"than n_step={self.n_step}; use rollout_fragment_length >= {n_max} or 'auto'"
            )
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ConfigError(f"SACConfig: grad_clip={self.grad_clip} must be > 0 (or None)")
        buffer_fits_agents("SACConfig", self.replay_buffer_config, bool(self.is_multi_agent))

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        if self.rollout_fragment_length == "auto":
            return max_n_step(self.n_step)
        return self.rollout_fragment_length

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {"twin_q": self.twin_q}

    def _numpy_module_kwargs(self, inference_only: bool) -> dict[str, Any]:
        """The numpy SACModule's twin critics, and whether it is the EnvRunners' copy (the
        policy only)."""
        return {"twin_q": self.twin_q, "inference_only": inference_only}


__all__ = ["CLASSES", "SACConfig"]
