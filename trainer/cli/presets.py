"""Presets for the main job: RLlib's own tuned-example settings, as rl-zoo keeps its
hyperparameters.

`python -m trainer` applies the preset of (algorithm, env) when RLlib 2.60 ships a tuned example
for it, and says which file it came from on the first line; `--preset none` keeps RLlib's plain
defaults. Settings are copied from the files as data (builder method -> keyword arguments);
everything a file does not set is the algorithm's default, as in RLlib. What the scripts' own
command-line defaults set (RLlib's `add_rllib_example_script_args`) is left as RLlib's default
here too: `num_env_runners=2`, one learner, no GPU.

RLlib 2.60 has tuned examples for PPO and DQN on CartPole-v1 and for PPO on Pendulum-v1; none
for Acrobot-v1 or MountainCar-v0 (nor DQN on Pendulum, whose actions are continuous), so those
train with the defaults and the first line says so.
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


@dataclasses.dataclass(frozen=True)
class Preset:
    """One tuned example: where it came from, its settings and its stop criteria."""

    source: str  # the file in ray-project/ray
    settings: dict[str, dict[str, Any]]  # builder method -> keyword arguments
    stop_reward: float  # the script's reward to stop at (RLlib's stop)
    stop_timesteps: int  # the script's default_timesteps

    @property
    def evaluates(self) -> bool:
        """Whether the preset evaluates every iteration (its stop is then the evaluation's)."""
        return bool(self.settings.get("evaluation", {}).get("evaluation_interval"))

    def apply(self, config: Any) -> None:
        for method, kwargs in self.settings.items():
            getattr(config, method)(**kwargs)

    def describe(self) -> str:
        shown = ", ".join(
            f"{key}={value!r}" if not callable(value) else f"{key}={value.__name__}"
            for kwargs in self.settings.values()
            for key, value in kwargs.items()
        )
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


def find_preset(algo: str, env: Any) -> Preset | None:
    return PRESETS.get((algo, env)) if isinstance(env, str) else None


def no_preset_line(algo: str, env: Any) -> str:
    tuned = ", ".join(f"{a} on {e}" for a, e in PRESETS)
    return (
        f"no preset: RLlib 2.60 has no tuned example for {algo} on {env!r} (it has: "
        f"{tuned}); RLlib's default settings"
    )
