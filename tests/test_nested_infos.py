"""Infos of any nesting (dicts of lists, arrays, dicts of dicts) reach the episodes untouched:
through real worker processes, with one and several sub-envs, across autoresets, and in each
`gym_env_vectorize_mode`."""

import gymnasium as gym
import numpy as np
import pytest

from trainer import AlgorithmConfig, PPOConfig
from trainer.env.env_runner import SingleAgentEnvRunner


class NestedInfoEnv(gym.Env):
    """Episodes of 3 steps; each info holds nested dicts, a list, arrays (one whose length
    differs between sub-envs and steps) and the step count, so every episode's infos can be
    checked against what the env returned."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._index = getattr(config, "vector_index", 0)
        self._t = 0

    def _info(self):
        return {
            "a": {"b": [1, 2], "deep": {"t": self._t, "sub_env": self._index}},
            "c": np.arange(3, dtype=np.float32) + self._t,
            "ragged": np.zeros(self._index + self._t + 1),
            "items": [{"x": self._t}, ("tuple", self._index)],
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(2, np.float32), self._info()

    def step(self, action):
        self._t += 1
        return np.zeros(2, np.float32), 1.0, self._t >= 3, False, self._info()


def check_episode_infos(episode):
    infos = episode.get_infos()
    assert len(infos) == len(episode) + 1
    t0 = infos[0]["a"]["deep"]["t"]
    for offset, info in enumerate(infos):
        t = t0 + offset
        sub_env = info["a"]["deep"]["sub_env"]
        assert info["a"]["b"] == [1, 2]
        assert info["a"]["deep"] == {"t": t, "sub_env": sub_env}
        np.testing.assert_array_equal(info["c"], np.arange(3, dtype=np.float32) + t)
        assert info["ragged"].shape == (sub_env + t + 1,)
        assert info["items"] == [{"x": t}, ("tuple", sub_env)]
        assert set(info) == {"a", "c", "ragged", "items"}


@pytest.mark.slow
@pytest.mark.parametrize("num_envs", [1, 3])
def test_nested_infos_reach_episodes_from_worker_processes(num_envs):
    config = (
        PPOConfig()
        .environment(NestedInfoEnv)
        .env_runners(num_env_runners=2, num_envs_per_env_runner=num_envs, rollout_fragment_length=7)
        .training(train_batch_size=84, minibatch_size=42, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    with config.build() as algo:
        batches = algo.env_runner_group.foreach_env_runner(
            lambda runner: [runner.sample() for _ in range(2)], local_env_runner=False
        )
        episodes = [ep for runner_batches in batches for batch in runner_batches for ep in batch]
        # 7 steps per sub-env and 3-step episodes: autoresets inside each sample, and chunks
        # cut across sample() calls.
        assert sum(ep.is_done for ep in episodes) >= 2 * 2 * num_envs * 2
        for episode in episodes:
            check_episode_infos(episode)
        sub_envs = {ep.get_infos(0)["a"]["deep"]["sub_env"] for ep in episodes}
        assert sub_envs == set(range(num_envs))
        result = algo.train()  # the learner takes batches with such infos too
        assert result["env_runners"]["num_episodes"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_nested_infos_in_each_vectorize_mode(mode):
    config = (
        AlgorithmConfig()
        .environment(NestedInfoEnv)
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode=mode)
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        episodes = runner.sample(num_timesteps=20, random_actions=True)
        episodes += runner.sample(num_episodes=3, random_actions=True)
        for episode in episodes:
            check_episode_infos(episode)
    finally:
        runner.stop()


class NestedInfoVectorEnv(gym.vector.VectorEnv):
    """A numpy-vectorized env (gym_env_vectorize_mode="vector_entry_point") that batches its
    nested infos itself, gymnasium's way (`key` batches with `_key` masks): episodes of 3 steps;
    even sub-envs have an extra key, so the masks matter."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, config):
        self.num_envs = config["num_envs"]
        self.single_observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)

    def _infos(self):
        infos = {}
        for i, t in enumerate(self._t.tolist()):
            info = {
                "a": {"b": [1, 2], "deep": {"t": t, "sub_env": i}},
                "c": np.arange(3, dtype=np.float32) + t,
                "items": [{"x": t}],
            }
            if i % 2 == 0:
                info["even"] = {"t": t}
            infos = self._add_info(infos, info, i)
        return infos

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t[:] = 0
        self._autoreset[:] = False
        return np.zeros((self.num_envs, 2), np.float32), self._infos()

    def step(self, actions):
        self._t = np.where(self._autoreset, 0, self._t + 1)
        terminated = (self._t >= 3) & ~self._autoreset
        rewards = np.where(self._autoreset, 0.0, 1.0)
        self._autoreset = terminated
        return (
            np.zeros((self.num_envs, 2), np.float32),
            rewards,
            terminated,
            np.zeros(self.num_envs, dtype=bool),
            self._infos(),
        )


def check_vector_episode_infos(episode):
    infos = episode.get_infos()
    assert len(infos) == len(episode) + 1
    t0 = infos[0]["a"]["deep"]["t"]
    for offset, info in enumerate(infos):
        t = t0 + offset
        sub_env = info["a"]["deep"]["sub_env"]
        assert info["a"]["b"] == [1, 2]
        assert info["a"]["deep"] == {"t": t, "sub_env": sub_env}
        np.testing.assert_array_equal(info["c"], np.arange(3, dtype=np.float32) + t)
        assert info["items"] == [{"x": t}]
        expected_keys = {"a", "c", "items"} | ({"even"} if sub_env % 2 == 0 else set())
        assert set(info) == expected_keys
        if sub_env % 2 == 0:
            assert info["even"] == {"t": t}


def test_nested_infos_of_a_vector_entry_point_env_are_unbatched_per_sub_env():
    config = (
        PPOConfig()
        .environment(NestedInfoVectorEnv)
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=3,
            rollout_fragment_length=7,
            gym_env_vectorize_mode="vector_entry_point",
        )
        .training(train_batch_size=42, minibatch_size=21, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    with config.build() as algo:
        batches = algo.env_runner_group.foreach_env_runner(
            lambda runner: [runner.sample() for _ in range(2)], local_env_runner=False
        )
        episodes = [ep for runner_batches in batches for batch in runner_batches for ep in batch]
        assert sum(ep.is_done for ep in episodes) >= 2 * 3
        for episode in episodes:
            check_vector_episode_infos(episode)
        assert {ep.get_infos(0)["a"]["deep"]["sub_env"] for ep in episodes} == {0, 1, 2}
        algo.train()
