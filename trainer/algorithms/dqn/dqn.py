"""DQN: `DQNConfig` (RLlib's settings and defaults) and the `DQN` algorithm.

The training step is the off-policy loop (`trainer.algorithms.off_policy`, RLlib's new-stack
DQN loop): the EnvRunners sample `rollout_fragment_length` steps per sub-env ("auto" =
`n_step`) into the replay buffer, and the learner (`dqn_learner.py`) trains on n-step
transitions replayed from it. `calculate_rr_weights` (RLlib's name here) sets how many sampling
and training rounds a step runs from `training_intensity`.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.config.base import is_search_space
from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.multi_agent_learner import build_multi_agent_learner
from trainer.algorithms.off_policy import OffPolicyAlgorithm
from trainer.algorithms.off_policy import (  # RLlib's dqn.dqn name, shared with SAC
    calculate_rr_weights as calculate_rr_weights,
)
from trainer.algorithms.replay import (
    BUFFER_DEFAULTS,
    buffer_fits_agents,
    check_n_step,
    check_replay_buffer_config,
    make_replay_buffer,
    max_n_step,
    updated_buffer_config,
)
from trainer.algorithms.settings import UsualRange, in_range, setting
from trainer.capabilities import TORCH
from trainer.compat.rllib_settings import NO_RNN, OLD_SCHEDULE, OLD_STACK, NoEffect, Unsupported
from trainer.core.schedules import Schedule
from trainer.runners.env_runner_group import spaces_of
from trainer.torch_rl import require_torch
from trainer.util.checks import (
    finite_number,
    int_at_least,
    is_bool,
    number_above,
    one_of,
    optional,
)
from trainer.util.import_paths import resolve_import_path

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: DQN's numpy learner, named by its import path: it reads its settings off a `DQNConfig` (it
#: imports this module), so this module does not import it.
NUMPY_LEARNER = "trainer.algorithms.dqn.dqn_learner:DQNLearner"


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
        super().__init__(algo_class=algo_class or DQN)

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
            self._check_torch_learner_class()
        n_max = max_n_step(self.n_step)
        if self.rollout_fragment_length != "auto" and self.rollout_fragment_length < n_max:
            raise ConfigError(
                f"DQNConfig: rollout_fragment_length={self.rollout_fragment_length} is smaller "
                f"than n_step={self.n_step}; use rollout_fragment_length >= {n_max} or 'auto'"
            )
        buffer_fits_agents("DQNConfig", self.replay_buffer_config, bool(self.is_multi_agent))

    def _check_torch_learner_class(self) -> None:
        """A `learner_class` for DQN must be a DQNTorchLearner (it trains on replayed
        transitions, not on episodes as PPO's learner does)."""
        learner_class = self.__dict__.get("_learner_class")
        if learner_class is None:
            return
        from trainer.algorithms.dqn.torch_learner import DQNTorchLearner

        if not issubclass(learner_class, DQNTorchLearner):
            raise ConfigError(
                f"DQNConfig: learner_class={learner_class.__qualname__} is not a subclass of "
                "DQNTorchLearner (trainer.algorithms.dqn.torch_learner, RLlib's "
                "ray.rllib.algorithms.dqn.torch.dqn_torch_learner.DQNTorchLearner): DQN's "
                "learner trains on replayed transitions"
            )

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        if self.rollout_fragment_length == "auto":
            return max_n_step(self.n_step)
        return self.rollout_fragment_length

    def _default_exploration_config(self) -> dict:
        return {"type": "EpsilonGreedy", "epsilon_schedule": self.epsilon}

    def default_module_class(self) -> type:
        return QModule

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

    def get_default_learner_class(self) -> type:
        """DQN's learner (RLlib's method, behind `learner_class`): the numpy `DQNLearner`,
        or with torch (`uses_torch`) `DQNTorchLearner`."""
        if not self.uses_torch:
            return resolve_import_path(NUMPY_LEARNER)
        require_torch(f"{type(self).__name__}.framework('torch')")
        from trainer.algorithms.dqn.torch_learner import DQNTorchLearner

        return DQNTorchLearner

    def default_torch_module_class(self) -> type:
        """RLlib's DefaultDQNTorchRLModule."""
        require_torch("DQNConfig.framework('torch')")
        from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule

        return DefaultDQNTorchRLModule

    def build_module(
        self, spaces: Any, seed: int | None = None, *, inference_only: bool = False
    ) -> Any:
        """The numpy QModule, or with torch a view of the spec's or the default torch module
        (its model config with DQN's `dueling`, `double_q`, `num_atoms`, `v_min`, `v_max`,
        `epsilon` and `std_init`, as RLlib's)."""
        if self.uses_torch:
            return self._build_torch_module(spaces, seed, inference_only)
        if self.num_atoms == 1:
            return QModule(spaces, self.model, dueling=self.dueling, seed=seed)
        return QModule(
            spaces,
            self.model,
            dueling=self.dueling,
            num_atoms=self.num_atoms,
            v_min=self.v_min,
            v_max=self.v_max,
            seed=seed,
        )


class DQN(OffPolicyAlgorithm):
    config: DQNConfig
    #: The numpy DQNLearner, a DQNTorchLearner (torch), or a learner per module.
    learner: Any

    @classmethod
    def get_default_config(cls) -> DQNConfig:
        return DQNConfig()

    @classmethod
    def learner_for(cls, config: Any, spaces: Any) -> Any:
        """`config.learner_class` (the numpy `DQNLearner`, or with torch `DQNTorchLearner` or
        the class given) for `spaces`; multi-agent, a learner (Q network, target network,
        optimizer) per module with weights."""
        if config.is_multi_agent:
            return build_multi_agent_learner(
                config,
                spaces,
                lambda config, build: resolve_import_path(NUMPY_LEARNER)(config, None, build=build),
            )
        if not config.uses_torch:
            return config.learner_class(config, spaces)
        module = config.build_module(spaces, seed=config.seed)
        if config["num_gpus_per_learner"]:  # validate() found CUDA
            module.rl_module.to("cuda")  # the EnvRunners' copies stay on the CPU
        return config.learner_class(config, module)

    def setup_learner(self) -> None:
        self.learner = self.learner_for(self.config, spaces_of(self.env_runner_group))
        self.local_replay_buffer = make_replay_buffer(
            self.config.replay_buffer_config, seed=self.config.seed
        )
