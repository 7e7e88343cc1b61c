"""SAC's presets for the main job: RLlib 2.60's tuned examples
(`rllib/examples/algorithms/sac/pendulum_sac.py`, `mountaincar_sac.py`) for Pendulum-v1 and
MountainCar-v0 (see `trainer.cli.presets`)."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.presets import Preset

#: RLlib's tuned SAC settings, shared by its Pendulum and MountainCar examples.
_TUNED_TRAINING: dict[str, Any] = {
    "initial_alpha": 1.001,
    "actor_lr": 2e-4,
    "critic_lr": 8e-4,
    "alpha_lr": 9e-4,
    "target_entropy": "auto",
    "n_step": (2, 5),
    "tau": 0.005,
    "train_batch_size_per_learner": 256,
    "target_network_update_freq": 1,
    "replay_buffer_config": {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 100000,
        "alpha": 1.0,
        "beta": 0.0,
    },
    "num_steps_sampled_before_learning_starts": 256,
}
_TUNED_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "relu",
    "fcnet_kernel_initializer": "xavier_uniform_",
    "head_fcnet_hiddens": [],
    "head_fcnet_activation": None,
    "head_fcnet_kernel_initializer": "orthogonal_",
    "head_fcnet_kernel_initializer_kwargs": {"gain": 0.01},
    "fusionnet_hiddens": [256, 256, 256],
    "fusionnet_activation": "relu",
}

#: env name -> preset (`AlgorithmEntry.presets`).
PRESETS: dict[str, Preset] = {
    "Pendulum-v1": Preset(
        source="rllib/examples/algorithms/sac/pendulum_sac.py",
        settings={
            "training": dict(_TUNED_TRAINING),
            "rl_module": {"model_config": dict(_TUNED_MODEL)},
            "reporting": {"metrics_num_episodes_for_smoothing": 5},
        },
        stop_reward=-250.0,
        stop_timesteps=20_000,
    ),
    "MountainCar-v0": Preset(
        source="rllib/examples/algorithms/sac/mountaincar_sac.py",
        settings={
            "training": dict(_TUNED_TRAINING),
            "rl_module": {"model_config": dict(_TUNED_MODEL)},
            "reporting": {"metrics_num_episodes_for_smoothing": 5},
        },
        stop_reward=-250.0,
        stop_timesteps=20_000,
    ),
}
