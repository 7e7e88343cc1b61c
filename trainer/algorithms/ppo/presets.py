"""PPO's presets for the main job: RLlib 2.60's tuned examples
(`rllib/tuned_examples/ppo/`) for CartPole-v1, MultiAgentCartPole and Pendulum-v1, and settings
tuned here for Acrobot-v1, MountainCar-v0 and LunarLander-v3 (see `trainer.cli.presets`)."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.presets import TUNED_HERE, Preset, mean_std_filter

#: RLlib's tuned PPO settings for CartPole, shared by its single- and multi-agent examples.
_CARTPOLE_PPO_TRAINING = {
    "gamma": 0.99,
    "lr": 0.0003,
    "num_epochs": 6,
    "vf_loss_coeff": 0.01,
    "use_kl_loss": True,
}
_CARTPOLE_PPO_MODEL = {"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}

#: PPO on the small discrete-action classic-control envs: a 64 x 64 tanh policy and a value
#: network of its own, many short minibatch passes (as CleanRL and rl-zoo size them).
_SMALL_PPO_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [64, 64],
    "fcnet_activation": "tanh",
    "vf_share_layers": False,
}

#: env name -> preset (`AlgorithmEntry.presets`).
PRESETS: dict[str, Preset] = {
    "CartPole-v1": Preset(
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
    "MultiAgentCartPole": Preset(
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
    "Pendulum-v1": Preset(
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
    "Acrobot-v1": Preset(
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
    # MountainCar's reward is -1 a step until the flag: observations standardized
    # (MeanStdFilter), returns near -200 left unclipped in the value loss.
    "MountainCar-v0": Preset(
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
    "LunarLander-v3": Preset(
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
}
