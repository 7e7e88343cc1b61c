"""Per-sub-env restarts (`restart_failed_sub_environments`) in the rollout loop.

A sub-env that raises in a step takes no step of its episode: the episode is dropped (its
steps counted as lost), the sub-env re-created and a new episode started in it after the step,
as the per-step loop does (`ColumnRecorder.recover`, `sub_env_recovery.recover_sub_envs`); in
"async" mode the child process re-creates it and its step is the new sub-env's reset
(`ColumnRecorder._restart_in_children`).
The per-step loop (`tests/step_loop_reference.py`) is the reference; both must
give the same episodes, callback events, metrics and connector state.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tests.step_loop_reference import sample_both_ways
from tests.test_columnar_connectors import PIPELINES
from tests.test_columnar_sampling import _assert_same_episodes, _config, _metric


class _FailingEnv(gym.Env):
    """Deterministic episodes (no RNG: a re-created sub-env starts them over) of lengths
    that vary by sub-env and episode; the step raises in some episodes of a sub-env that
    was not re-created."""

    observation_space = gym.spaces.Box(-100.0, 100.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.index = getattr(config, "vector_index", 0)
        self.recreated = bool(getattr(config, "recreated_worker", False))
        self.episode = -1
        self.t = 0

    def _obs(self):
        return np.array([self.t, self.episode, self.index + 0.5], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {"recreated": self.recreated}

    def step(self, action):
        self.t += 1
        if self.t == 3 and (self.episode + self.index) % 3 == 1 and not self.recreated:
            raise RuntimeError("the sub-env broke")
        length = 3 + (7 * self.episode + 2 * self.index) % 8
        return self._obs(), 0.1 * self.t + 0.01 * action, self.t == length, False, {}


def _sample(config, columnar, calls, **sample_kwargs):
    return sample_both_ways(config, columnar, calls, **sample_kwargs)


MODES = {
    "timesteps": ({}, {"num_timesteps": 37}),
    "num_episodes": ({}, {"num_episodes": 7}),
    "complete_episodes": ({"batch_mode": "complete_episodes"}, {}),
}


@pytest.mark.parametrize(
    ("mode", "pipeline", "vectorize"),
    [
        (mode, pipeline, "sync")
        for mode in sorted(MODES)
        for pipeline in (None, "mean_std", "reader")
    ]
    + [("timesteps", "mean_std", "async"), ("complete_episodes", None, "async")],
)
def test_sub_env_restarts_in_the_rollout_loop_match_the_per_step_loop(mode, pipeline, vectorize):
    settings, sample_kwargs = MODES[mode]
    events: list = []
    callbacks = {
        "on_episode_created": lambda env_index, **kw: events.append(("created", env_index)),
        "on_episode_start": lambda env_index, episode, **kw: events.append(
            ("start", env_index, np.asarray(episode.get_observations(-1)).tolist())
        ),
        "on_episode_end": lambda env_index, episode, **kw: events.append(
            ("end", env_index, len(episode))
        ),
    }
    config = (
        _config(_FailingEnv, 3, vectorize, callbacks=callbacks)
        .env_runners(
            env_to_module_connector=None if pipeline is None else PIPELINES[pipeline], **settings
        )
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    slow, slow_metrics, slow_state = _sample(config, False, 3, **sample_kwargs)
    half = len(events)
    fast, fast_metrics, fast_state = _sample(config, True, 3, **sample_kwargs)
    assert events[:half] == events[half:]
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    restarts = _metric(fast_metrics, "num_sub_environment_restarts_lifetime")
    assert restarts > 0
    for key in (
        "episode_return_mean",
        "num_env_steps_sampled_lifetime",
        "num_sub_environment_restarts_lifetime",
        "num_env_steps_lost_lifetime",
    ):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert repr(slow_state) == repr(fast_state)


class _CrashOnce(gym.Env):
    """Episodes of 10 steps; the first sub-env's 25th step raises (a re-created one never)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.recreated = bool(getattr(config, "recreated_worker", False))
        self.t = self.total = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        self.total += 1
        if self.total == 25 and not self.recreated:
            raise RuntimeError("the sub-env broke")
        return np.zeros(2, np.float32), 1.0, self.t >= 10, False, {}


def test_a_dropped_episodes_steps_are_not_counted_as_sampled():
    """RLlib starts its step count over when a sub-env fails: an iteration of a 40-step batch
    reports 40 steps sampled, not the 4 steps of the dropped episode on top (nor a second
    sample() call's 40 to make up for them)."""
    from trainer import PPOConfig

    algo = (
        PPOConfig()
        .environment(_CrashOnce)
        .env_runners(num_env_runners=0, rollout_fragment_length=40)
        .training(train_batch_size=40, minibatch_size=20, num_epochs=1)
        .fault_tolerance(restart_failed_sub_environments=True)
        .build()
    )
    try:
        for iteration in (1, 2):
            runners = algo.train()["env_runners"]
            assert runners["num_env_steps_sampled"] == 40
            assert runners["num_env_steps_sampled_lifetime"] == 40 * iteration
            assert runners["num_env_steps_lost_lifetime"] == 4
    finally:
        algo.stop()
