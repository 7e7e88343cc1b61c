"""Presets for the main job, as rl-zoo keeps its hyperparameters: RLlib's own tuned-example
settings where RLlib 2.60 ships one, else settings tuned here, labelled as such.

`python -m trainer` applies the preset of (algorithm, env) and says on its first line where it
came from: the RLlib file, or "tuned here"; `--preset none` keeps RLlib's plain defaults.
Settings are data (builder method -> keyword arguments); everything a preset does not set is
the algorithm's default, as in RLlib. What RLlib's example scripts' own command-line defaults
set (`add_rllib_example_script_args`) is left as RLlib's default here too:
`num_env_runners=2`, one learner, no GPU.

RLlib 2.60 has tuned examples for PPO and DQN on CartPole-v1 and for PPO on Pendulum-v1
(`rllib/tuned_examples/ppo/`, `rllib/tuned_examples/dqn/`); none for Acrobot-v1,
MountainCar-v0 or LunarLander-v3. Those have presets tuned here on this project (PPO, and DQN
since their actions are discrete), to reach gymnasium's reward threshold (Acrobot -100,
MountainCar -110, LunarLander 200) within a minute on two cores: `bench/compare.py` times
them against Stable-Baselines3. DQN on Pendulum has none (its actions are continuous).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainer.connectors import MeanStdFilter

#: The `--preset` choices.
PRESET_RLLIB = "rllib"
PRESET_NONE = "none"


def mean_std_filter(env: Any = None, spaces: Any = None, device: Any = None) -> MeanStdFilter:
    """RLlib's `lambda env, spaces, device: MeanStdFilter()`, as a named function so that the
    config pickles by reference."""
    from trainer.connectors import MeanStdFilter

    return MeanStdFilter()


#: A preset's `source` when RLlib has no tuned example for it: its settings were tuned here.
TUNED_HERE = "tuned here"


@dataclasses.dataclass(frozen=True)
class Preset:
    """One preset: where it came from, its settings and its stop criteria."""

    #: The RLlib file in ray-project/ray it copies, or TUNED_HERE.
    source: str
    settings: dict[str, dict[str, Any]]  # builder method -> keyword arguments
    stop_reward: float  # the reward to stop at (RLlib's stop for its tuned examples)
    stop_timesteps: int  # the env-step budget (the script's default_timesteps)

    @property
    def tuned_here(self) -> bool:
        """Whether the settings were tuned on this project (RLlib has no tuned example)."""
        return self.source == TUNED_HERE

    @property
    def evaluates(self) -> bool:
        """Whether the preset evaluates every iteration (its stop is then the evaluation's)."""
        return bool(self.settings.get("evaluation", {}).get("evaluation_interval"))

    def apply(self, config: Any) -> None:
        """Calls the config's builder methods with the preset's settings."""
        for method, kwargs in self.settings.items():
            getattr(config, method)(**kwargs)

    def describe(self) -> str:
        """Where the preset came from, then its settings."""
        shown = ", ".join(
            f"{key}={value!r}" if not callable(value) else f"{key}={value.__name__}"
            for kwargs in self.settings.values()
            for key, value in kwargs.items()
        )
        if self.tuned_here:
            return f"tuned here (RLlib 2.60 has no tuned example for it): {shown}"
        return f"RLlib's tuned example {self.source}: {shown}"


#: RLlib's tuned PPO settings for CartPole, shared by its single- and multi-agent examples.
_CARTPOLE_PPO_TRAINING = {
    "gamma": 0.99,
    "lr": 0.0003,
    "num_epochs": 6,
    "vf_loss_coeff": 0.01,
    "use_kl_loss": True,
}
_CARTPOLE_PPO_MODEL = {"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}

PRESETS: dict[tuple[str, str], Preset] = {
    ("PPO", "CartPole-v1"): Preset(
        source="rllib/tuned_examples/ppo/cartpole_ppo.py",
        settings={
            "training": dict(_CARTPOLE_PPO_TRAINING),
            "rl_module": {"model_config": dict(_CARTPOLE_PPO_MODEL)},
            "evaluation": {
                "evaluation_num_env_runners": 1,
                "evaluation_interval": 1,
                "evaluation_parallel_to_training": True,
                "evaluation_config": {"explore": False},
            },
        },
        stop_reward=350.0,
        stop_timesteps=200_000,
    ),
    ("DQN", "CartPole-v1"): Preset(
        source="rllib/tuned_examples/dqn/cartpole_dqn.py",
        settings={
            "training": {
                "lr": 0.0005,
                "train_batch_size_per_learner": 32,
                "replay_buffer_config": {
                    "type": "PrioritizedEpisodeReplayBuffer",
                    "capacity": 50000,
                    "alpha": 0.6,
                    "beta": 0.4,
                },
                "n_step": (2, 5),
                "double_q": True,
                "dueling": True,
                "epsilon": [(0, 1.0), (10000, 0.02)],
            },
            "rl_module": {
                "model_config": {
                    "fcnet_hiddens": [256],
                    "fcnet_activation": "tanh",
                    "fcnet_bias_initializer": "zeros_",
                    "head_fcnet_bias_initializer": "zeros_",
                    "head_fcnet_hiddens": [256],
                    # DefaultModelConfig's default, which the file uses.
                    "vf_share_layers": True,
                }
            },
        },
        stop_reward=450.0,
        stop_timesteps=200_000,
    ),
    ("PPO", "MultiAgentCartPole"): Preset(
        source="rllib/tuned_examples/ppo/multi_agent_cartpole_ppo.py",
        settings={
            "environment": {"env_config": {"num_agents": 2}},
            "training": dict(_CARTPOLE_PPO_TRAINING),
            "rl_module": {"model_config": dict(_CARTPOLE_PPO_MODEL)},
        },
        # The return summed over the 2 agents (RLlib's stop: 400 per agent).
        stop_reward=800.0,
        stop_timesteps=300_000,
    ),
    ("PPO", "Pendulum-v1"): Preset(
        source="rllib/tuned_examples/ppo/pendulum_ppo.py",
        settings={
            "env_runners": {
                "num_env_runners": 2,
                "num_envs_per_env_runner": 20,
                "env_to_module_connector": mean_std_filter,
            },
            "training": {
                "train_batch_size_per_learner": 1024,
                "minibatch_size": 128,
                "lr": 0.0002,
                "gamma": 0.95,
                "lambda_": 0.5,
            },
            "rl_module": {"model_config": {"fcnet_activation": "relu", "vf_share_layers": True}},
        },
        stop_reward=-300.0,
        stop_timesteps=400_000,
    ),
}


# -- tuned here: envs RLlib 2.60 has no tuned example for -----------------------------------
#: PPO on the small discrete-action classic-control envs: a 64 x 64 tanh policy and a value
#: network of its own, many short minibatch passes (as CleanRL and rl-zoo size them).
_SMALL_PPO_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [64, 64],
    "fcnet_activation": "tanh",
    "vf_share_layers": False,
}

#: DQN on the small discrete-action envs: RLlib's CartPole DQN recipe (prioritized replay,
#: n-step (2, 5), double and dueling heads of 256), which solves Acrobot as it is.
_SMALL_DQN_REPLAY: dict[str, Any] = {
    "type": "PrioritizedEpisodeReplayBuffer",
    "capacity": 50000,
    "alpha": 0.6,
    "beta": 0.4,
}
_SMALL_DQN_TRAINING: dict[str, Any] = {
    "lr": 0.0005,
    "train_batch_size_per_learner": 32,
    "replay_buffer_config": dict(_SMALL_DQN_REPLAY),
    "n_step": (2, 5),
    "double_q": True,
    "dueling": True,
    "epsilon": [(0, 1.0), (10000, 0.02)],
}
_SMALL_DQN_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [256],
    "fcnet_activation": "tanh",
    "head_fcnet_hiddens": [256],
}

PRESETS.update(
    {
        ("PPO", "Acrobot-v1"): Preset(
            source=TUNED_HERE,
            settings={
                "env_runners": {"num_envs_per_env_runner": 8},
                "training": {
                    "train_batch_size_per_learner": 2048,
                    "minibatch_size": 256,
                    "num_epochs": 6,
                    "lr": 0.0005,
                    "gamma": 0.99,
                    "lambda_": 0.95,
                    "vf_loss_coeff": 0.01,
                },
                "rl_module": {"model_config": dict(_SMALL_PPO_MODEL)},
            },
            stop_reward=-100.0,
            stop_timesteps=500_000,
        ),
        ("DQN", "Acrobot-v1"): Preset(
            source=TUNED_HERE,
            settings={
                "training": dict(_SMALL_DQN_TRAINING),
                "rl_module": {"model_config": dict(_SMALL_DQN_MODEL)},
            },
            stop_reward=-100.0,
            stop_timesteps=200_000,
        ),
        # MountainCar's reward is -1 a step until the flag: observations standardized
        # (MeanStdFilter), returns near -200 left unclipped in the value loss.
        ("PPO", "MountainCar-v0"): Preset(
            source=TUNED_HERE,
            settings={
                "env_runners": {
                    "num_envs_per_env_runner": 16,
                    "env_to_module_connector": mean_std_filter,
                },
                "training": {
                    "train_batch_size_per_learner": 4096,
                    "minibatch_size": 256,
                    "num_epochs": 10,
                    "lr": 0.001,
                    "gamma": 0.99,
                    "lambda_": 0.98,
                    "clip_param": 0.2,
                    "vf_loss_coeff": 0.5,
                    "vf_clip_param": float("inf"),
                    "use_kl_loss": False,
                },
                "rl_module": {"model_config": dict(_SMALL_PPO_MODEL)},
            },
            stop_reward=-110.0,
            stop_timesteps=1_000_000,
        ),
        ("DQN", "MountainCar-v0"): Preset(
            source=TUNED_HERE,
            settings={
                "env_runners": {"env_to_module_connector": mean_std_filter},
                "training": {
                    **_SMALL_DQN_TRAINING,
                    "lr": 0.001,
                    "train_batch_size_per_learner": 64,
                    "target_network_update_freq": 500,
                    "epsilon": [(0, 1.0), (20000, 0.02)],
                },
                "rl_module": {"model_config": dict(_SMALL_DQN_MODEL)},
            },
            stop_reward=-110.0,
            stop_timesteps=300_000,
        ),
        ("PPO", "LunarLander-v3"): Preset(
            source=TUNED_HERE,
            settings={
                "env_runners": {
                    "num_envs_per_env_runner": 16,
                    "env_to_module_connector": mean_std_filter,
                },
                "training": {
                    "train_batch_size_per_learner": 8192,
                    "minibatch_size": 512,
                    "num_epochs": 10,
                    "lr": 0.0003,
                    "gamma": 0.99,
                    "lambda_": 0.95,
                    "clip_param": 0.2,
                    "grad_clip": 0.5,
                    "vf_loss_coeff": 0.5,
                    "vf_clip_param": float("inf"),
                    "use_kl_loss": False,
                },
                "rl_module": {"model_config": dict(_SMALL_PPO_MODEL)},
            },
            stop_reward=200.0,
            stop_timesteps=3_000_000,
        ),
        ("DQN", "LunarLander-v3"): Preset(
            source=TUNED_HERE,
            settings={
                "training": {
                    **_SMALL_DQN_TRAINING,
                    "train_batch_size_per_learner": 64,
                    "target_network_update_freq": 500,
                    "replay_buffer_config": {**_SMALL_DQN_REPLAY, "capacity": 100000},
                    "epsilon": [(0, 1.0), (20000, 0.02)],
                },
                "rl_module": {"model_config": {**_SMALL_DQN_MODEL, "fcnet_activation": "relu"}},
            },
            stop_reward=200.0,
            stop_timesteps=300_000,
        ),
    }
)


def find_preset(algo: str, env: Any) -> Preset | None:
    """The preset of (algo, env), None when there is none (an env given as a class: none)."""
    return PRESETS.get((algo, env)) if isinstance(env, str) else None


def no_preset_line(algo: str, env: Any) -> str:
    """The CLI's first line when (algo, env) has no preset."""
    known = ", ".join(f"{a} on {e}" for a, e in PRESETS)
    return (
        f"no preset: neither RLlib 2.60 nor this project has tuned settings for {algo} on "
        f"{env!r} (presets: {known}); RLlib's default settings"
    )
