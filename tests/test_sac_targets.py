"""SAC's MountainCarContinuous-v0 preset learns sensible values: the critics take the flag's
+100 from the few replayed steps that reach it, and hold near it.

RLlib's SAC critic loss is a Huber loss with delta 1 (`SACTorchLearner`): for TD errors above 1
it is an absolute-error loss, so each critic fits the median of the targets near a state, not
their mean. The flag's terminated steps are a few in ten thousand of the replayed steps (a
handful of episodes reach it among long truncated ones), and their +100 is far above 1: drawn
uniformly, they are outvoted by their bootstrapped neighbours, whose targets follow the
critics' own values. Nothing then anchors the values near the flag: with the preset's uniform
buffer the critics grew without bound (a mean Q of 2.4e7 at 62k env steps) while the policy
still reached the flag. A prioritized buffer draws the steps whose TD errors are large, the
flag's among them, until the critics fit them. With the critics right, rl-zoo's gamma 0.9999
let the entropy bonus outweigh the flag: the preset's gamma is 0.99 (the second test)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from trainer import SACConfig
from trainer.cli.presets import find_preset
from trainer.env.episode import SingleAgentEpisode

ENV = "MountainCarContinuous-v0"


def _episode(
    env: gym.Env, rng: np.random.Generator, *, pump: bool, seed: int
) -> SingleAgentEpisode:
    """One episode of the real env: `pump` pushes along the velocity (to the flag in about 100
    steps, terminated there), else uniform random actions (truncated at the 999-step limit)."""
    episode = SingleAgentEpisode()
    obs, _ = env.reset(seed=seed)
    episode.add_env_reset(obs)
    terminated = truncated = False
    while not (terminated or truncated):
        push = rng.uniform(0.6, 1.0) * (1.0 if obs[1] >= 0 else -1.0)
        action = np.array([push if pump else rng.uniform(-1.0, 1.0)], np.float32)
        obs, reward, terminated, truncated, _ = env.step(action)
        episode.add_env_step(obs, action, float(reward), terminated=terminated, truncated=truncated)
    return episode.to_numpy()


def _preset_config() -> SACConfig:
    config = SACConfig().environment(ENV).debugging(seed=0)
    preset = find_preset("SAC", ENV)
    assert preset is not None
    preset.apply(config)
    return config


@pytest.mark.slow
def test_mountaincar_continuous_preset_critics_learn_the_flags_value() -> None:
    """On replayed MountainCarContinuous episodes (3 reach the flag, 12 random ones are
    truncated: 3 flag steps in about 12k), the preset's critics value the steps that reach the
    flag at about +100 after 512 updates, and no replayed step above 150. With the uniform
    buffer they stood at about 3 (the median fit outvotes those 3 steps), later far above 100."""
    env = gym.make(ENV)
    rng = np.random.default_rng(0)
    episodes = [_episode(env, rng, pump=True, seed=seed) for seed in range(3)]
    episodes += [_episode(env, rng, pump=False, seed=seed) for seed in range(3, 15)]
    assert [bool(e.is_terminated) for e in episodes] == [True] * 3 + [False] * 12

    config = _preset_config()
    # Learning from the first iteration on, on these episodes (the preset's 20k-step warm-up
    # gathers episodes like them), one 32-step fragment (32 updates) an iteration: 512 updates
    # in all. The preset's min_time_s_per_iteration=1 is lifted, else each iteration repeats
    # its training step for a second and the count of updates follows the machine's speed
    # (about 1500 in a run of 19 s). Seeds 0-4 (`debugging(seed=)`) put the flag's values
    # within 10 of +100 after the 512 updates; the uniform buffer's stand at about 1.
    config.training(num_steps_sampled_before_learning_starts=0)
    config.reporting(min_sample_timesteps_per_iteration=32, min_time_s_per_iteration=0)
    algo = config.build()
    try:
        algo.local_replay_buffer.add(episodes)
        for _ in range(16):
            algo.train()
        module = algo.learner_module()
        flag_steps = {
            "obs": np.stack([e.get_observations(-2) for e in episodes[:3]]),
            "actions": np.stack([e.get_actions(-1) for e in episodes[:3]]),
        }
        rows = algo.local_replay_buffer.sample_transitions(4096, n_step=1, gamma=config.gamma)
        q_flag = np.asarray(module.compute_q_values(flag_steps)["qf_preds"])
        q_rows = np.asarray(module.compute_q_values(rows)["qf_preds"])
    finally:
        algo.stop()
    assert np.all(np.abs(q_flag - 100.0) < 25.0), q_flag
    assert q_rows.max() < 150.0, q_rows.max()


def test_mountaincar_continuous_presets_entropy_bonus_is_worth_less_than_the_flag() -> None:
    """The most the entropy bonus can add to a value, alpha * log 2 (the entropy of a uniform
    action in [-1, 1]) per step over the discount's horizon 1 / (1 - gamma), is below the
    flag's +100: else wandering until the time limit (bootstrapped: the limit is not in the
    observation) can be worth more than reaching the flag. With rl-zoo's gamma 0.9999 it was
    690, and seed 0, its critics right, stopped reaching the flag."""
    config = _preset_config()
    assert config.alpha_lr == 0.0  # alpha is held at initial_alpha
    bonus = config.initial_alpha * np.log(2.0) / (1.0 - config.gamma)
    assert bonus < 100.0 / 2, bonus
