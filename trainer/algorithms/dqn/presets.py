"""DQN's presets for the main job: RLlib 2.60's tuned example
(`rllib/tuned_examples/dqn/cartpole_dqn.py`) for CartPole-v1, and settings tuned here for
Acrobot-v1, MountainCar-v0 and LunarLander-v3 (see `trainer.cli.presets`; DQN on Pendulum has
none: its actions are continuous)."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.presets import TUNED_HERE, Preset, mean_std_filter

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

#: env name -> preset (`AlgorithmEntry.presets`).
PRESETS: dict[str, Preset] = {
    "CartPole-v1": Preset(
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
    "Acrobot-v1": Preset(
        source=TUNED_HERE,
        settings={
            "training": dict(_SMALL_DQN_TRAINING),
            "rl_module": {"model_config": dict(_SMALL_DQN_MODEL)},
        },
        stop_reward=-100.0,
        stop_timesteps=200_000,
    ),
    "MountainCar-v0": Preset(
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
    "LunarLander-v3": Preset(
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
