"""DQN: `DQNConfig` (RLlib's settings and defaults) and the `DQN` algorithm.

One training step (RLlib's new-stack loop): the EnvRunners sample `rollout_fragment_length` steps
per sub-env ("auto" = `n_step`), the steps go into `local_replay_buffer`; once
`num_steps_sampled_before_learning_starts` env steps were sampled, the learner takes
`train_batch_size` n-step transitions from the buffer per update, the priorities follow the TD
errors, and the new weights go to the EnvRunners. `training_intensity` sets how many replayed
steps are trained on per sampled step (RLlib's round-robin weights).
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import numpy as np

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.dqn.dqn_learner import DQNLearner
from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.dqn.replay_buffer import (
    BUFFER_TYPES,
    MULTI_AGENT_BUFFER_TYPES,
    EpisodeReplayBuffer,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
    make_replay_buffer,
    sample_train_batch,
    sample_train_batches,
)
from trainer.algorithms.multi_agent_learner import MultiAgentLearner, build_multi_agent_learner
from trainer.algorithms.settings import UsualRange, in_range, settings_of
from trainer.capabilities import DQN_VARIANTS, TORCH
from trainer.compat.rllib_settings import NO_RNN, OLD_SCHEDULE, OLD_STACK, NoEffect, Unsupported
from trainer.core.schedules import Schedule
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TD_ERROR_KEY,
    TIMERS,
)
from trainer.runners.env_runner_group import spaces_of
from trainer.torch_rl import require_torch
from trainer.util.checks import (
    finite_number,
    int_at_least,
    is_bool,
    number_above,
    number_at_least,
    one_of,
    optional,
)
from trainer.util.state_checks import check_loads

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: RLlib's key of the replay buffer's metrics in the results.
REPLAY_BUFFER_RESULTS = "replay_buffer"

_BUFFER_DEFAULTS: dict[str, dict[str, Any]] = {
    **{
        name: {"type": name, "capacity": 50_000}
        for name in ("EpisodeReplayBuffer", "MultiAgentEpisodeReplayBuffer")
    },
    **{
        name: {"type": name, "capacity": 50_000, "alpha": 0.6, "beta": 0.4}
        for name in ("PrioritizedEpisodeReplayBuffer", "MultiAgentPrioritizedEpisodeReplayBuffer")
    },
}
# Further keys each buffer's constructor takes (RLlib's), besides its defaults above.
_BUFFER_OPTIONAL_KEYS = ("batch_size_B", "batch_length_T", "metrics_num_episodes_for_smoothing")

_BUFFER_VALUE_CHECKS = {
    "capacity": int_at_least(1),
    "alpha": number_at_least(0),
    "beta": number_at_least(0),
    "batch_size_B": int_at_least(1),
    "batch_length_T": int_at_least(0),
    "metrics_num_episodes_for_smoothing": int_at_least(1),
}


def _check_replay_buffer_config(value: Any) -> str | None:
    allowed_types = sorted(BUFFER_TYPES)
    if not isinstance(value, dict):
        return (
            f"a dict with 'type' (one of {allowed_types}), 'capacity' and, for prioritized "
            "replay, 'alpha' and 'beta'"
        )
    type_ = value.get("type")
    if type_ not in BUFFER_TYPES:
        return f"a dict whose 'type' is one of {allowed_types} (got {type_!r})"
    allowed_keys = sorted((*_BUFFER_DEFAULTS[type_], *_BUFFER_OPTIONAL_KEYS))
    for key, item in value.items():
        if key not in allowed_keys:
            return f"a dict with keys from {allowed_keys} for {type_} (got {key!r})"
        problem = _BUFFER_VALUE_CHECKS[key](item) if key in _BUFFER_VALUE_CHECKS else None
        if problem is not None:
            return f"a dict whose {key!r} is {problem} (got {item!r})"
    return None


def _check_epsilon(value: Any) -> str | None:
    try:
        Schedule(value, setting="epsilon", low=0.0, high=1.0)
    except ValueError as error:
        return f"a number in [0, 1] or a schedule [(timestep, value), ...] ({error})"
    return None


def _check_n_step(value: Any) -> str | None:
    positive_int = int_at_least(1)
    if positive_int(value) is None:
        return None
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(positive_int(v) is None for v in value)
        and value[0] < value[1]
    ):
        return None
    return (
        "an int >= 1 or a (low, high) pair of ints with 1 <= low < high (each transition's "
        "n is drawn from [low, high), as RLlib's replay buffers draw it)"
    )


#: Why RLlib's distributional DQN settings are refused or have no effect here.
DISTRIBUTIONAL = "distributional DQN (num_atoms > 1) is not implemented here"


class DQNConfig(AlgorithmConfig):
    """DQN's config. Defaults are RLlib's: `lr=5e-4`, `train_batch_size=32`, `grad_clip=40`,
    `replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50000,
    "alpha": 0.6, "beta": 0.4}`, `target_network_update_freq=500`, `tau=1.0`,
    `num_steps_sampled_before_learning_starts=1000`, `double_q=True`, `dueling=True`,
    `n_step=1`, `epsilon=[(0, 1.0), (10000, 0.05)]`, `td_error_loss_fn="huber"`,
    `rollout_fragment_length="auto"` (= n_step), `min_sample_timesteps_per_iteration=1000`."""

    _ALGO_SETTINGS = settings_of(
        "training",
        {
            "replay_buffer_config": (
                dict(_BUFFER_DEFAULTS["PrioritizedEpisodeReplayBuffer"]),
                _check_replay_buffer_config,
                "type (EpisodeReplayBuffer or PrioritizedEpisodeReplayBuffer; for "
                "multi-agent runs MultiAgentEpisodeReplayBuffer or "
                "MultiAgentPrioritizedEpisodeReplayBuffer), "
                "capacity (env steps; whole episodes are evicted), alpha, "
                "beta and the buffers' other arguments; updates the current "
                "one unless it names another type",
            ),
            "target_network_update_freq": (
                500,
                int_at_least(0),
                "env steps between target network updates",
            ),
            "tau": (
                1.0,
                finite_number,  # RLlib checks no range
                "target update: tau * online + (1 - tau) * target",
                UsualRange(
                    in_range(0, 1, low_open=True),
                    "above 0 and at most 1",
                    "above 1 the target network overshoots the online one, and at 0 or below "
                    "it never moves toward it",
                ),
            ),
            "num_steps_sampled_before_learning_starts": (
                1000,
                int_at_least(0),
                "env steps sampled before the first update",
            ),
            "double_q": (True, is_bool, "double Q-learning targets"),
            "dueling": (True, is_bool, "dueling value and advantage heads"),
            "n_step": (
                1,
                _check_n_step,
                "n-step returns: an int, or (low, high) to draw n from [low, high) per transition",
            ),
            "epsilon": (
                [(0, 1.0), (10000, 0.05)],
                _check_epsilon,
                "epsilon-greedy's epsilon: a number or [(timestep, epsilon), ...] interpolated",
            ),
            "training_intensity": (
                None,
                optional(number_above(0)),
                "env steps trained per env step sampled (None: RLlib's natural ratio)",
            ),
            "td_error_loss_fn": ("huber", one_of("huber", "mse"), "the TD error's loss"),
            "store_buffer_in_checkpoints": (False, is_bool, "checkpoints hold the replay buffer"),
        },
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
            "num_atoms": Unsupported(1, DISTRIBUTIONAL, capability=DQN_VARIANTS),
            "v_min": NoEffect(-10.0, DISTRIBUTIONAL),
            "v_max": NoEffect(10.0, DISTRIBUTIONAL),
            "categorical_distribution_temperature": NoEffect(1.0, DISTRIBUTIONAL),
            "noisy": Unsupported(
                False,
                "noisy networks are not implemented here; explore with EpsilonGreedy (the default)",
                capability=DQN_VARIANTS,
            ),
            "sigma0": NoEffect(0.5, "noisy networks are not implemented here"),
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

    # DQN's own settings' types (set from `_ALGO_SETTINGS` by `AlgorithmConfig.__init__`).
    replay_buffer_config: dict[str, Any]
    target_network_update_freq: int
    tau: float
    num_steps_sampled_before_learning_starts: int
    double_q: bool
    dueling: bool
    n_step: int | tuple[int, int]
    epsilon: float | list[tuple[int, float]]
    training_intensity: float | None
    td_error_loss_fn: str
    store_buffer_in_checkpoints: bool

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or DQN)

    def training(
        self,
        *,
        replay_buffer_config: dict = NotProvided,
        target_network_update_freq: int = NotProvided,
        tau: float = NotProvided,
        num_steps_sampled_before_learning_starts: int = NotProvided,
        double_q: bool = NotProvided,
        dueling: bool = NotProvided,
        n_step: int | tuple[int, int] = NotProvided,
        epsilon: float | list = NotProvided,
        training_intensity: float | None = NotProvided,
        td_error_loss_fn: str = NotProvided,
        store_buffer_in_checkpoints: bool = NotProvided,
        **kwargs: Any,
    ) -> Self:
        """Learning settings: DQN's own and those every algorithm has. A
        `replay_buffer_config` naming another `type` replaces the current one (on top of that
        type's defaults)."""
        super().training(**kwargs)
        if isinstance(replay_buffer_config, dict):
            type_ = replay_buffer_config.get("type", self.replay_buffer_config["type"])
            base = (
                self.replay_buffer_config
                if type_ == self.replay_buffer_config["type"]
                else _BUFFER_DEFAULTS.get(type_, {})
            )
            replay_buffer_config = {**base, **replay_buffer_config}
        return self._set(
            "training",
            {
                "replay_buffer_config": replay_buffer_config,
                "target_network_update_freq": target_network_update_freq,
                "tau": tau,
                "num_steps_sampled_before_learning_starts": num_steps_sampled_before_learning_starts,
                "double_q": double_q,
                "dueling": dueling,
                "n_step": n_step,
                "epsilon": epsilon,
                "training_intensity": training_intensity,
                "td_error_loss_fn": td_error_loss_fn,
                "store_buffer_in_checkpoints": store_buffer_in_checkpoints,
            },
        )

    def validate(self) -> None:
        super().validate()
        if self.uses_torch:
            if self.is_multi_agent:
                raise ConfigError(
                    f"DQNConfig: {self.torch_reason} in a multi-agent config: multi-agent DQN "
                    "trains the numpy Q-modules here (leave framework() unset, or use "
                    "framework('numpy')); torch DQN runs single-agent",
                    TORCH,
                )
            self._check_torch_learner_class()
        n_max = self.n_step[1] if isinstance(self.n_step, (list, tuple)) else self.n_step
        if self.rollout_fragment_length != "auto" and self.rollout_fragment_length < n_max:
            raise ConfigError(
                f"DQNConfig: rollout_fragment_length={self.rollout_fragment_length} is smaller "
                f"than n_step={self.n_step}; use rollout_fragment_length >= {n_max} or 'auto'"
            )
        self._check_buffer_fits_agents()

    def _check_torch_learner_class(self) -> None:
        """A `learner_class` for DQN must be a DQNTorchLearner (it trains on replayed
        transitions, not on episodes as PPO's learner does)."""
        learner_class = self.__dict__.get("learner_class")
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

    def _check_buffer_fits_agents(self) -> None:
        """A multi-agent run stores MultiAgentEpisodes: it needs a multi-agent buffer, and a
        single-agent run a single-agent one (RLlib fails inside the buffer otherwise)."""
        type_ = self.replay_buffer_config["type"]
        multi_agent_buffer = type_ in MULTI_AGENT_BUFFER_TYPES
        if bool(self.is_multi_agent) == multi_agent_buffer:
            return
        if self.is_multi_agent:
            wanted = "MultiAgent" + type_
            why = "a multi-agent config (multi_agent(policies=...)) samples MultiAgentEpisodes"
        else:
            wanted = type_.removeprefix("MultiAgent")
            why = "a single-agent config samples SingleAgentEpisodes"
        raise ConfigError(
            f"DQNConfig: replay_buffer_config type={type_!r} does not fit: {why}; use "
            f"training(replay_buffer_config={{'type': {wanted!r}, ...}})"
        )

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        if self.rollout_fragment_length == "auto":
            return self.n_step[1] if isinstance(self.n_step, (list, tuple)) else self.n_step
        return self.rollout_fragment_length

    def _default_exploration_config(self) -> dict:
        return {"type": "EpsilonGreedy", "epsilon_schedule": self.epsilon}

    def default_module_class(self) -> type:
        return QModule

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        if self.uses_torch:
            # RLlib's: what the default torch module reads (num_atoms is always 1 here).
            return {"dueling": self.dueling, "double_q": self.double_q, "epsilon": self.epsilon}
        return {"dueling": self.dueling}

    def default_torch_module_class(self) -> type:
        """RLlib's DefaultDQNTorchRLModule."""
        require_torch("DQNConfig.framework('torch')")
        from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule

        return DefaultDQNTorchRLModule

    def build_module(
        self, spaces: Any, seed: int | None = None, *, inference_only: bool = False
    ) -> Any:
        """The numpy QModule, or with torch a view of the spec's or the default torch module
        (its model config with DQN's `dueling`, `double_q` and `epsilon`, as RLlib's)."""
        if self.uses_torch:
            return self._build_torch_module(spaces, seed, inference_only)
        return QModule(spaces, self.model, dueling=self.dueling, seed=seed)


def round_robin_weights(config: DQNConfig) -> tuple[int, int]:
    """(sampling rounds, training rounds) per training step, as RLlib computes them: the natural
    ratio of replayed to sampled steps is train_batch_size / (fragment * envs * (runners + 1));
    `training_intensity` asks for another ratio."""
    if not config.training_intensity:
        return 1, 1
    native_ratio = config.train_batch_size / (
        config.get_rollout_fragment_length()
        * config.num_envs_per_env_runner
        * max(config.num_env_runners + 1, 1)
    )
    weight = config.training_intensity / native_ratio
    if weight < 1:
        return int(round(1 / weight)), 1
    return 1, int(round(weight))


class DQN(Algorithm):
    config: DQNConfig
    #: The numpy DQNLearner, a DQNTorchLearner (torch), or a learner per module.
    learner: Any
    #: RLlib's name: the replay buffer the training step samples into and learns from (in a
    #: multi-agent run, a MultiAgentEpisodeReplayBuffer: a buffer per module).
    local_replay_buffer: EpisodeReplayBuffer | MultiAgentEpisodeReplayBuffer

    @classmethod
    def get_default_config(cls) -> DQNConfig:
        return DQNConfig()

    def setup_learner(self) -> None:
        if self.config.is_multi_agent:
            # A learner (Q network, target network, optimizer) per module with weights.
            self.learner = build_multi_agent_learner(
                self.config,
                spaces_of(self.env_runner_group),
                lambda config, build: DQNLearner(config, None, build=build),
            )
        elif self.config.uses_torch:
            from trainer.algorithms.dqn.torch_learner import DQNTorchLearner

            learner_class = self.config.learner_class or DQNTorchLearner
            module = self.config.build_module(
                spaces_of(self.env_runner_group), seed=self.config.seed
            )
            if self.config["num_gpus_per_learner"]:  # validate() found CUDA
                module.rl_module.to("cuda")  # the EnvRunners' copies stay on the CPU
            self.learner = learner_class(self.config, module)
        else:
            self.learner = DQNLearner(self.config, spaces_of(self.env_runner_group))
        self.local_replay_buffer = make_replay_buffer(
            self.config.replay_buffer_config, seed=self.config.seed
        )

    def training_step(self) -> None:
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        sampling_rounds, training_rounds = round_robin_weights(config)
        # 1. Sample with the current weights and store the steps in the replay buffer.
        for _ in range(sampling_rounds):
            with metrics.log_time((TIMERS, "env_runner_sampling_timer")):
                episodes, runner_metrics = self.env_runner_group.sample(min_env_steps=1)
            metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
            metrics.log_value(
                NUM_ENV_STEPS_SAMPLED_LIFETIME,
                sum(len(ep) for ep in episodes),
                reduce="lifetime_sum",
            )
            with metrics.log_time((TIMERS, "replay_buffer_add_data_timer")):
                buffer.add(episodes)
        if (
            self._steps_sampled_for_learning_start()
            < config.num_steps_sampled_before_learning_starts
        ):
            return
        # 2. Learn on n-step transitions replayed from the buffer; priorities follow the TD
        #    errors.
        if isinstance(self.learner, MultiAgentLearner):
            self._learn_per_module(training_rounds)
        else:
            self._learn(training_rounds)
        # 3. Send the new weights (and the sampled-steps count) to the EnvRunners.
        with metrics.log_time((TIMERS, "synch_weights")):
            self.sync_weights()

    def _steps_sampled_for_learning_start(self) -> int:
        """The steps `num_steps_sampled_before_learning_starts` counts, as RLlib counts them:
        env steps, or with `count_steps_by="agent_steps"` every agent's steps."""
        if self.config.count_steps_by == "agent_steps":
            per_agent = self.metrics.peek(
                (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
            )
            if isinstance(per_agent, dict):
                return int(sum(per_agent.values()))
        return self.num_env_steps_sampled_lifetime

    def _learn(self, training_rounds: int) -> None:
        """`training_rounds` updates of the (single) learner on replayed batches."""
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        assert isinstance(buffer, EpisodeReplayBuffer)
        assert not isinstance(self.learner, MultiAgentLearner)
        sampled = self.num_env_steps_sampled_lifetime
        beta = config.replay_buffer_config.get("beta")
        update_results: list[dict] = []
        # One BLAS thread for the whole round of updates (see BlasThreads; entering it for
        # each update of about 0.5 ms would add a quarter to it).
        with self.learner.update_threads():
            for _ in range(training_rounds):
                with metrics.log_time((TIMERS, "replay_buffer_sample_timer")):
                    batch = sample_train_batch(
                        buffer,
                        config.train_batch_size,
                        n_step=config.n_step,
                        gamma=config.gamma,
                        beta=beta,
                    )
                with metrics.log_time((TIMERS, "learner_update_timer")):
                    results = self.learner.update(batch, num_env_steps_sampled_lifetime=sampled)
                # The TD errors are per replayed row: they set priorities and are not logged.
                td_errors = results.pop(TD_ERROR_KEY)
                if isinstance(buffer, PrioritizedEpisodeReplayBuffer):
                    buffer.update_priorities(np.abs(td_errors))
                update_results.append(results)
                metrics.log_value(
                    (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime"),
                    config.train_batch_size,
                    reduce="lifetime_sum",
                )
        self._log_update_means({"default_policy": update_results})

    def _learn_per_module(self, training_rounds: int) -> None:
        """`training_rounds` updates of each trained module's learner, each on a batch from
        its own module's buffer (RLlib's "independent" replay); its priorities follow its TD
        errors. A module without stored steps yet is not updated."""
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        learner = self.learner
        assert isinstance(buffer, MultiAgentEpisodeReplayBuffer)
        assert isinstance(learner, MultiAgentLearner)
        sampled = self.num_env_steps_sampled_lifetime
        beta = config.replay_buffer_config.get("beta")
        update_results: dict[Any, list[dict]] = {}
        for _ in range(training_rounds):
            with metrics.log_time((TIMERS, "replay_buffer_sample_timer")):
                batches = sample_train_batches(
                    buffer,
                    config.train_batch_size,
                    n_step=config.n_step,
                    gamma=config.gamma,
                    beta=beta,
                    modules=learner.trained,
                )
            if not batches:
                return
            with metrics.log_time((TIMERS, "learner_update_timer")):
                for module_id, batch in batches.items():
                    module_learner = learner.learners[module_id]
                    assert isinstance(module_learner, DQNLearner)
                    with module_learner.update_threads():
                        results = module_learner.update(
                            batch, num_env_steps_sampled_lifetime=sampled
                        )
                    td_errors = np.asarray(results.pop(TD_ERROR_KEY))
                    if isinstance(buffer, MultiAgentPrioritizedEpisodeReplayBuffer):
                        buffer.update_priorities(np.abs(td_errors), module_id)
                    update_results.setdefault(module_id, []).append(results)
                    metrics.log_value(
                        (LEARNER_RESULTS, module_id, "num_module_steps_trained_lifetime"),
                        len(td_errors),
                        reduce="lifetime_sum",
                    )
            metrics.log_value(
                (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime"),
                config.train_batch_size,
                reduce="lifetime_sum",
            )
        self._log_update_means(update_results)

    def _log_update_means(self, update_results: dict[Any, list[dict]]) -> None:
        """Each module's learner statistics: their means over this step's updates."""
        for module_id, results in update_results.items():
            if results:
                self.metrics.log_dict(
                    {key: float(np.mean([r[key] for r in results])) for key in results[0]},
                    key=(LEARNER_RESULTS, module_id),
                    window=1,
                )

    def _compile_result(self, time_this_iter: float) -> dict:
        # The buffer's metrics (RLlib's "replay_buffer" results), once per iteration: the buffer
        # counts its adds and samples itself, so one aggregate carries all training steps'.
        self.metrics.aggregate([self.local_replay_buffer.get_metrics()], key=REPLAY_BUFFER_RESULTS)
        return super()._compile_result(time_this_iter)

    # -- state (checkpoints) -----------------------------------------------------------------
    def _full_state(self) -> dict:
        """The Algorithm's state, plus the replay buffer with `store_buffer_in_checkpoints`."""
        state = super()._full_state()
        if self.config.store_buffer_in_checkpoints:
            state["replay_buffer"] = self.local_replay_buffer.get_state()
        return state

    def check_state(self, state: dict) -> None:
        super().check_state(state)
        if "replay_buffer" in state:
            # Loaded into an empty buffer of the same config (cheaper than copying this one).
            check_loads(
                make_replay_buffer(self.config.replay_buffer_config),
                state["replay_buffer"],
                "replay_buffer",
            )

    def _apply_state(self, state: dict, *, strict: bool = False) -> None:
        super()._apply_state(state, strict=strict)
        # Last: a restore that fails before this point leaves the buffer as it was.
        if "replay_buffer" in state:
            self.local_replay_buffer.set_state(state["replay_buffer"])
