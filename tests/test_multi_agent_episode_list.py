"""A MultiAgentEnvRunner's episodes pickle by column (`MultiAgentEpisodeList`): every numeric
array of every agent concatenated by dtype and row shape, one record per episode and agent. The
main process must get the episodes the runner had, slot for slot: chunks with lookback buffers,
hanging actions and rewards, agents that join and leave, agents of different spaces."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from helpers import assert_same_objects
from test_multi_agent_episode_fast_path import ENVS

from trainer import PPOConfig
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.env.multi_agent_episode_list import MultiAgentEpisodeList
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


class TwoSpaces(MultiAgentEnv):
    """Two agents of different observation shapes and action spaces, for a few steps."""

    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        self.agents = self.possible_agents = ["small", "large"]
        self.observation_spaces = {
            "small": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "large": gym.spaces.Box(-1.0, 1.0, (3, 2), np.float64),
        }
        self.action_spaces = {"small": gym.spaces.Discrete(2), "large": gym.spaces.Discrete(3)}
        self.t = 0

    def _obs(self) -> dict:
        return {aid: space.sample() for aid, space in self.observation_spaces.items()}

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        for space in self.observation_spaces.values():
            space.seed(seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):  # type: ignore[no-untyped-def]
        self.t += 1
        done = self.t >= 7
        rewards = {aid: float(action) for aid, action in action_dict.items()}
        return self._obs(), rewards, {"__all__": done}, {"__all__": False}, {"small": {"t": 1}}


def _sampled(env: Any, env_config: dict, **multi_agent: Any) -> list[MultiAgentEpisode]:
    runner = MultiAgentEnvRunner(
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(
            **(
                multi_agent
                or {"policies": {"p0"}, "policy_mapping_fn": lambda agent_id, *a, **kw: "p0"}
            )
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3),
        worker_index=1,
        num_workers=1,
    )
    try:
        episodes = []
        for request in ({"num_timesteps": 90}, {"num_timesteps": 50}, {"num_episodes": 2}):
            sampled = runner.sample(**request)
            assert type(sampled) is MultiAgentEpisodeList
            episodes += sampled
        return episodes
    finally:
        runner.stop()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENVS))
def test_episodes_arrive_as_they_were_sampled(name):
    env, env_config, _ = ENVS[name]
    episodes = MultiAgentEpisodeList(_sampled(env, env_config))
    arrived = pickle.loads(pickle.dumps(episodes, protocol=5))
    assert type(arrived) is MultiAgentEpisodeList
    assert_same_objects(list(episodes), list(arrived), name)
    # The received arrays are slices of one column per kind: every agent's observations share
    # one base array.
    bases = {
        id(agent.observations.data.base)
        for episode in arrived
        for agent in episode.agent_episodes.values()
    }
    assert len(bases) == 1


def test_agents_of_different_spaces_arrive_in_their_own_columns():
    episodes = MultiAgentEpisodeList(
        _sampled(
            TwoSpaces,
            {},
            policies={"small", "large"},
            policy_mapping_fn=lambda agent_id, *a, **kw: agent_id,
        )
    )
    arrived = pickle.loads(pickle.dumps(episodes, protocol=5))
    assert_same_objects(list(episodes), list(arrived))
    shapes = {
        agent.observations.data.shape[1:]
        for episode in arrived
        for agent in episode.agent_episodes.values()
    }
    assert shapes == {(2,), (3, 2)}
    # The received episodes still read and record as RLlib's.
    episode = arrived[-1]
    assert episode.get_observations(-1).keys() == {"small", "large"}
    assert episode.agent_episodes["small"].get_infos(-1) == {"t": 1}


def test_a_list_with_other_items_pickles_as_a_plain_list():
    episodes = MultiAgentEpisodeList(_sampled(*ENVS["agents drop out"][:2]))
    mixed = MultiAgentEpisodeList([*episodes[:2], "not an episode"])
    arrived = pickle.loads(pickle.dumps(mixed, protocol=5))
    assert arrived[2] == "not an episode"
    assert_same_objects(list(mixed[:2]), list(arrived[:2]))


def test_a_shallow_copy_keeps_the_episodes_and_a_deep_copy_makes_new_ones():
    episodes = MultiAgentEpisodeList(_sampled(*ENVS["agents drop out"][:2]))
    shallow = copy.copy(episodes)
    assert type(shallow) is MultiAgentEpisodeList
    assert all(a is b for a, b in zip(shallow, episodes, strict=True))
    deep = copy.deepcopy(episodes)
    assert not any(a is b for a, b in zip(deep, episodes, strict=True))
    assert_same_objects(list(deep), list(episodes))
