"""`DQNConfig`: DQN's settings (RLlib's, with its defaults) and its classes by import path (the
numpy and torch learners and default modules: `AlgorithmClasses`).

DQN trains on replayed n-step transitions (Mnih et al. 2015), with double Q-learning targets
(`double_q`, van Hasselt et al. 2016), dueling heads (`dueling`, Wang et al. 2016) and, with
`num_atoms` > 1, a categorical return distribution over [v_min, v_max] (Bellemare et al. 2017);
its loss is `loss.py`'s. The replay buffer (`replay_buffer_config`), the target network's
updates (`target_network_update_freq`, `tau`), the exploration (`epsilon`) and the ratio of
training to sampling (`training_intensity`) are set here too. The `DQN` Algorithm (`dqn.py`,
which imports this module) is named by import path.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.config.base import is_search_space
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.replay import (
    BUFFER_DEFAULTS,
    buffer_fits_agents,
    check_n_step,
    check_replay_buffer_config,
    max_n_step,
    updated_buffer_config,
)
from trainer.algorithms.settings import UsualRange, in_range, setting
from trainer.capabilities import TORCH
from trainer.compat.rllib_settings import NO_RNN, OLD_SCHEDULE, OLD_STACK, NoEffect, Unsupported
from trainer.core.schedules import Schedule
from trainer.util.checks import (
    finite_number,
    int_at_least,
    is_bool,
    number_above,
    one_of,
    optional,
)
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: DQN's Algorithm (`dqn.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.dqn.dqn:DQN"
#: DQN's learners and default modules (`AlgorithmClasses`), named by import path: the learners
#: read their settings off a `DQNConfig` (they import this module). The numpy learner builds
#: its target network as its Q network; a torch `learner_class` must be a DQNTorchLearner.
CLASSES = AlgorithmClasses(
    numpy_learner="trainer.algorithms.dqn.dqn_learner:DQNLearner",
    torch_learner="trainer.algorithms.dqn.torch_learner:DQNTorchLearner",
    numpy_module="trainer.algorithms.dqn.q_module:QModule",
    torch_module="trainer.algorithms.dqn.torch_module:DefaultDQNTorchRLModule",
    numpy_targets_from_build=True,
    required_learner_base="ray.rllib.algorithms.dqn.torch.dqn_torch_learner.DQNTorchLearner",
    required_learner_reason="DQN's learner trains on replayed transitions",
)


def _check_epsilon(value: Any) -> str | None:
    try:
        Schedule(value, setting="epsilon", low=0.0, high=1.0)
    except ValueError as error:
        return f"a number in [0, 1] or a schedule [(timestep, value), ...] ({error})"
    return None


#: Why RLlib's noisy-network settings have no effect, in RLlib 2.60's new stack as here.
NO_NOISY_LAYERS = (
    "RLlib 2.60's new-stack DQN module (DefaultDQNTorchRLModule) has no noisy layers and "
    "reads neither noisy nor sigma0 (passed to its model config as std_init), nor does "
    "DQN here; exploration is EpsilonGreedy's (epsilon)"
)


class DQNConfig(AlgorithmConfig):
    """DQN's config. Defaults are RLlib's: `lr=5e-4`, `train_batch_size=32`, `grad_clip=40`,
    `replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50000,
    "alpha": 0.6, "beta": 0.4}`, `target_network_update_freq=500`, `tau=1.0`,
    `num_steps_sampled_before_learning_starts=1000`, `double_q=True`, `dueling=True`,
    `n_step=1`, `epsilon=[(0, 1.0), (10000, 0.05)]`, `td_error_loss_fn="huber"`,
    `rollout_fragment_length="auto"` (= n_step), `min_sample_timesteps_per_iteration=1000`."""

    replay_buffer_config: dict[str, Any] = setting(
        dict(BUFFER_DEFAULTS["PrioritizedEpisodeReplayBuffer"]),
        check_replay_buffer_config,
        "type (EpisodeReplayBuffer or PrioritizedEpisodeReplayBuffer; for multi-agent runs "
        "MultiAgentEpisodeReplayBuffer or MultiAgentPrioritizedEpisodeReplayBuffer), capacity "
        "(env steps; whole episodes are evicted), alpha, beta and the buffers' other arguments; "
        "updates the current one unless it names another type",
    )
    target_network_update_freq: int = setting(
        500, int_at_least(0), "env steps between target network updates"
    )
    tau: float = setting(
        1.0,
        finite_number,  # RLlib checks no range
        "target update: tau * online + (1 - tau) * target",
        usual=UsualRange(
            in_range(0, 1, low_open=True),
            "above 0 and at most 1",
            "above 1 the target network overshoots the online one, and at 0 or below it never "
            "moves toward it",
        ),
    )
    num_steps_sampled_before_learning_starts: int = setting(
        1000, int_at_least(0), "env steps sampled before the first update"
    )
    double_q: bool = setting(True, is_bool, "double Q-learning targets")
    dueling: bool = setting(True, is_bool, "dueling value and advantage heads")
    n_step: int | tuple[int, int] = setting(
        1,
        check_n_step,
        "n-step returns: an int, or (low, high) to draw n from [low, high) per transition",
    )
    epsilon: float | list[tuple[int, float]] = setting(
        [(0, 1.0), (10000, 0.05)],
        _check_epsilon,
        "epsilon-greedy's epsilon: a number or [(timestep, epsilon), ...] interpolated",
    )
    training_intensity: float | None = setting(
        None,
        optional(number_above(0)),
        "env steps trained per env step sampled (None: RLlib's natural ratio)",
    )
    td_error_loss_fn: str = setting("huber", one_of("huber", "mse"), "the TD error's loss")
    num_atoms: int = setting(
        1,
        int_at_least(1),
        "atoms of the distributional Q-head (1: expected Q-values; > 1: a categorical return "
        "distribution over linspace(v_min, v_max, num_atoms), trained with the projected "
        "cross-entropy)",
    )
    v_min: float = setting(
        -10.0, finite_number, "the support's lowest return (num_atoms > 1); must be < v_max"
    )
    v_max: float = setting(
        10.0, finite_number, "the support's highest return (num_atoms > 1); must be > v_min"
    )
    store_buffer_in_checkpoints: bool = setting(
        False, is_bool, "checkpoints hold the replay buffer"
    )

    #: RLlib's settings of this config class that have no effect here, or are refused:
    #: builder method -> {setting: rule} (`trainer.compat.rllib_settings`).
    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            "lr_schedule": NoEffect(None, OLD_SCHEDULE),
            "adam_epsilon": NoEffect(
                1e-8,
                "RLlib's new stack does not read it; Adam's eps is "
                'training(optimizer={"eps": ...})',
            ),
            "categorical_distribution_temperature": NoEffect(
                1.0,
                "RLlib's new stack does not read it (its old stack's distributional action "
                "sampling did); actions are epsilon-greedy on the expected Q-values",
            ),
            "noisy": NoEffect(False, NO_NOISY_LAYERS),
            "sigma0": NoEffect(0.5, NO_NOISY_LAYERS),
            "hiddens": NoEffect(
                [256],
                "RLlib's new stack sizes DQN's heads with "
                'rl_module(model_config={"head_fcnet_hiddens": ...}), '
                "as this trainer does",
            ),
            "before_learn_on_batch": NoEffect(None, OLD_STACK),
            "burn_in_len": NoEffect(0, NO_RNN),
        },
    }
    _CLASSES = CLASSES
    _MULTI_AGENT_TRAINING = True
    _DEFAULT_OVERRIDES = {
        "lr": 5e-4,
        "train_batch_size": 32,
        "grad_clip": 40.0,
        "rollout_fragment_length": "auto",
        "min_sample_timesteps_per_iteration": 1000,
        # As RLlib: evaluate greedily.
        "evaluation_config": {"explore": False},
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def training(self, *, replay_buffer_config: dict = NotProvided, **kwargs: Any) -> Self:
        """Learning settings: DQN's own and those every algorithm has. A
        `replay_buffer_config` naming another `type` replaces the current one (on top of that
        type's defaults). With `num_atoms > 1`, `v_min` must be below `v_max` (checked by
        `validate()`, so that the two can be set in either order)."""
        super().training(**kwargs)
        if replay_buffer_config is not NotProvided:
            replay_buffer_config = updated_buffer_config(
                self.replay_buffer_config, replay_buffer_config
            )
        return self._set("training", {"replay_buffer_config": replay_buffer_config})

    def _check_support(self, where: str) -> None:
        """With `num_atoms > 1`, a ConfigError unless v_min < v_max (the distributional
        support's ends; the search spaces of a Tune grid are checked per trial). RLlib checks
        neither; its projection would divide by a support of width zero or less."""
        v_min, v_max, num_atoms = self.v_min, self.v_max, self.num_atoms
        if any(is_search_space(value) for value in (v_min, v_max, num_atoms)) or num_atoms == 1:
            return
        if not v_min < v_max:
            raise ConfigError(
                f"{where}: v_min={v_min!r}, v_max={v_max!r}: v_min must be < v_max (the "
                f"support of the distributional Q-head, num_atoms={num_atoms}, runs from v_min "
                "to v_max)"
            )

    def validate(self) -> None:
        if (
            self.is_multi_agent
            and self.framework_str == "torch"
            and not self.is_given("framework_str")
        ):
            # The launcher's default (RLlib's framework, for a script that chose none), not the
            # script's choice: multi-agent DQN runs on the numpy Q-modules.
            self.framework_str = "numpy"
            warnings.warn(
                "DQNConfig: multi-agent DQN trains the numpy Q-modules here: the script chose "
                "no framework, and RLlib's default one, torch, runs single-agent DQN only "
                "(framework('numpy') chooses this without the warning)",
                stacklevel=2,
            )
        super().validate()
        self._check_support(f"{type(self).__name__}.training()")
        if self.uses_torch:
            if self.is_multi_agent:
                raise ConfigError(
                    f"DQNConfig: {self.torch_reason} in a multi-agent config: multi-agent DQN "
                    "trains the numpy Q-modules here (leave framework() unset, or use "
                    "framework('numpy')); torch DQN runs single-agent",
                    TORCH,
                )
        n_max = max_n_step(self.n_step)
        if self.rollout_fragment_length != "auto" and self.rollout_fragment_length < n_max:
            raise ConfigError(
                f"DQNConfig: rollout_fragment_length={self.rollout_fragment_length} is smaller "
                f"than n_step={self.n_step}; use rollout_fragment_length >= {n_max} or 'auto'"
            )
        buffer_fits_agents("DQNConfig", self.replay_buffer_config, bool(self.is_multi_agent))

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        if self.rollout_fragment_length == "auto":
            return max_n_step(self.n_step)
        return self.rollout_fragment_length

    def _default_exploration_config(self) -> dict:
        return {"type": "EpsilonGreedy", "epsilon_schedule": self.epsilon}

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        if self.uses_torch:
            # RLlib's (its module reads all but std_init; the one here neither epsilon nor
            # std_init: exploration is the EnvRunners', and it has no noisy layers).
            return {
                "double_q": self.double_q,
                "dueling": self.dueling,
                "epsilon": self.epsilon,
                "num_atoms": self.num_atoms,
                "std_init": getattr(self, "sigma0", 0.5),  # an RLlib setting with no effect
                "v_max": self.v_max,
                "v_min": self.v_min,
            }
        # The numpy QModule's: num_atoms, v_min and v_max where they change the networks.
        if self.num_atoms == 1:
            return {"dueling": self.dueling}
        return {
            "dueling": self.dueling,
            "num_atoms": self.num_atoms,
            "v_min": self.v_min,
            "v_max": self.v_max,
        }

    def _numpy_module_kwargs(self, inference_only: bool) -> dict[str, Any]:
        """The numpy QModule's `dueling` and, with `num_atoms > 1`, its support (as its model
        config has them, `_model_config_auto_includes`)."""
        return dict(self._model_config_auto_includes)


__all__ = ["ALGORITHM_CLASS", "CLASSES", "DQNConfig"]
