"""TQC's presets for the main job: RLlib 2.60's tuned example
(`rllib/examples/algorithms/tqc/pendulum_tqc.py`), and ones tuned here for Pendulum-v1 and
MountainCarContinuous-v0 (see `trainer.cli.presets` and `bench/compare.py`)."""

from __future__ import annotations

import copy
from typing import Any

from trainer.algorithms.presets import TUNED_HERE, Preset
from trainer.algorithms.sac.presets import PRESETS as SAC_PRESETS

#: RLlib's pendulum_tqc.py, at one learner (its rates scale with the learners' count).
_PENDULUM_TRAINING: dict[str, Any] = {
    "initial_alpha": 1.001,
    "actor_lr": 2e-4,
    "critic_lr": 8e-4,
    "alpha_lr": 9e-4,
    "target_entropy": "auto",
    "n_step": (2, 5),
    "tau": 0.005,
    "train_batch_size_per_learner": 256,
    "target_network_update_freq": 4,
    "n_quantiles": 25,
    "n_critics": 2,
    "top_quantiles_to_drop_per_net": 2,
    "replay_buffer_config": {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 10_000,
        "alpha": 1.0,
        "beta": 0.0,
    },
    "num_steps_sampled_before_learning_starts": 256,
}
_PENDULUM_MODEL: dict[str, Any] = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "relu",
    "fcnet_kernel_initializer": "xavier_uniform_",
    "head_fcnet_hiddens": [],
    "head_fcnet_activation": None,
    "head_fcnet_kernel_initializer": "orthogonal_",
    "head_fcnet_kernel_initializer_kwargs": {"gain": 0.01},
}

#: Pendulum-v1, for time to solve on a CPU: SAC's fast preset here
#: (`trainer.algorithms.sac.presets`: 64x64 networks without fusion layers, one update of 256
#: rows per env step, rates 1e-3 as rl-zoo's, a uniform buffer) with RLlib's quantile critics
#: (25 quantiles, 2 critics, the top 2 of each dropped).
_PENDULUM_FAST: dict[str, dict[str, Any]] = {
    "training": {
        **_PENDULUM_TRAINING,
        "actor_lr": 1e-3,
        "critic_lr": 1e-3,
        "alpha_lr": 1e-3,
        "target_network_update_freq": 1,
        "training_intensity": 256,
        "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 100000},
    },
    "rl_module": {
        "model_config": {
            **_PENDULUM_MODEL,
            "fcnet_hiddens": [64, 64],
            "fusionnet_hiddens": [],
            "fusionnet_activation": "relu",
        }
    },
    "reporting": {"metrics_num_episodes_for_smoothing": 5},
}

#: MountainCarContinuous-v0: SAC's preset here (rl-zoo's TQC entry is its SAC entry; see
#: `trainer.algorithms.sac.presets`: the policy head's biases at 1 explore, learning starts
#: after 20k env steps) with the fixed entropy coefficient at 0.001 instead of rl-zoo's 0.1.
#: At 0.1, TQC reached the flag and fell back (seed 0: a mean of 93 over 10 episodes at 32k
#: env steps, -54 at 48k): its quantile critics stay near the returns' size (about 200), so
#: the entropy bonus outweighed them and the policy spread out again; SAC's critics, with the
#: same settings, grew without bound (a mean Q of 2e7 by 62k steps) and held its policy
#: deterministic (SAC's preset has since taken a prioritized buffer and gamma 0.99; this one
#: keeps the uniform buffer and rl-zoo's gamma 0.9999 it was tuned with). Not the cause:
#: dropping no quantile (0 instead of 2) did not reach 90 either.
#: To a mean return of 90 over the last 100 episodes, within 100k env steps (2-core AMD EPYC,
#: two runs at a time): at 0.001 seeds 0 and 1 reached it at 36,768 and 37,472 env steps (92 s
#: and 104 s), seed 2 did not; at 0.01 seed 0 only; at 0.1 none of seeds 0-2.
_MOUNTAINCAR_CONTINUOUS: dict[str, dict[str, Any]] = copy.deepcopy(
    SAC_PRESETS["MountainCarContinuous-v0"].settings
)
_MOUNTAINCAR_CONTINUOUS["training"]["initial_alpha"] = 0.001
_MOUNTAINCAR_CONTINUOUS["training"]["gamma"] = 0.9999
_MOUNTAINCAR_CONTINUOUS["training"]["replay_buffer_config"] = {
    "type": "EpisodeReplayBuffer",
    "capacity": 50000,
}

#: env name -> preset (`AlgorithmEntry.presets`).
PRESETS: dict[str, Preset] = {
    "Pendulum-v1": Preset(
        source="rllib/examples/algorithms/tqc/pendulum_tqc.py",
        settings={
            "training": dict(_PENDULUM_TRAINING),
            "rl_module": {"model_config": dict(_PENDULUM_MODEL)},
            "reporting": {"metrics_num_episodes_for_smoothing": 5},
        },
        stop_reward=-200.0,
        stop_timesteps=200_000,
    ),
    "MountainCarContinuous-v0": Preset(
        source=TUNED_HERE,
        settings=_MOUNTAINCAR_CONTINUOUS,
        stop_reward=90.0,
        stop_timesteps=100_000,
    ),
}

#: env name -> preset tuned here that solves sooner than RLlib's tuned example in PRESETS
#: (`AlgorithmEntry.faster_presets`: the main job's default; `--preset rllib` runs RLlib's).
FASTER_PRESETS: dict[str, Preset] = {
    "Pendulum-v1": Preset(
        source=TUNED_HERE,
        settings=_PENDULUM_FAST,
        stop_reward=-200.0,
        stop_timesteps=60_000,
        faster_than="rllib/examples/algorithms/tqc/pendulum_tqc.py",
    ),
}

__all__ = ["FASTER_PRESETS", "PRESETS"]
