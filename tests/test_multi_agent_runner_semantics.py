"""What RLlib's `rllib/env/tests/test_multi_agent_env.py` checks, on the new API stack: its
cases drive the old stack's RolloutWorker, so these tests give the same envs (agents that join
late, agents that leave early, steps in which no agent acts, agent sets that change every
step; tests/multi_agent_mock_envs.py) to the MultiAgentEnvRunner and to PPO, and check what
RLlib 2.60's MultiAgentEnvRunner and MultiAgentEpisode do with them.

Every mock env asserts that exactly the agents of its last observations that are not done
were sent actions, so sampling at all checks who acts."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from multi_agent_mock_envs import (
    BasicMultiAgent,
    EarlyDoneMultiAgent,
    FlexAgentsMultiAgent,
    RoundRobinMultiAgent,
    SometimesZeroAgentsMultiAgent,
)

from callbacks import RLlibCallback
from trainer import PPOConfig
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


def _config(env, policies=("p0",), mapping=None, **env_runners):
    mapping = mapping or (lambda agent_id, episode, **kw: "p0")
    return (
        PPOConfig()
        .environment(env)
        .multi_agent(policies=set(policies), policy_mapping_fn=mapping)
        .env_runners(**env_runners)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=5)
    )


def _runner(config) -> MultiAgentEnvRunner:
    return MultiAgentEnvRunner(config, worker_index=1, num_workers=1)


def _peek(metrics, *path):
    for key in path:
        metrics = metrics[key]
    return metrics.peek()


def test_all_agents_acting_every_step_end_together():
    runner = _runner(
        _config(
            lambda ctx: BasicMultiAgent(5),
            policies=("p0", "p1"),
            mapping=lambda agent_id, episode, **kw: f"p{agent_id % 2}",
        )
    )
    try:
        (episode,) = runner.sample(num_episodes=1)
        assert episode.env_steps() == 25 and episode.is_terminated
        assert episode.agent_steps() == 125
        assert {aid: len(agent) for aid, agent in episode.agent_episodes.items()} == {
            aid: 25 for aid in range(5)
        }
        assert {aid: agent.module_id for aid, agent in episode.agent_episodes.items()} == {
            0: "p0",
            1: "p1",
            2: "p0",
            3: "p1",
            4: "p0",
        }
        metrics = runner.get_metrics()
        assert _peek(metrics, "num_module_steps_sampled", "p0") == 75
        assert _peek(metrics, "num_module_steps_sampled", "p1") == 50
    finally:
        runner.stop()


def test_agents_join_in_turns_and_the_last_step_has_no_agent_to_act():
    runner = _runner(_config(lambda ctx: RoundRobinMultiAgent(2, increment_obs=True)))
    try:
        (episode,) = runner.sample(num_episodes=1)
        env = runner.env.envs[0]
        # 10 steps of one agent each, then one with nobody to act: both agents are done
        # and the env reports the end of the last one.
        assert episode.env_steps() == 11 and episode.is_terminated
        assert [sorted(sent) for sent in env.sent] == [[0], [1]] * 5 + [[]]
        for agent_id in (0, 1):
            agent = episode.agent_episodes[agent_id]
            assert len(agent) == 5 and agent.is_terminated
            assert list(agent.get_observations()) == [0, 1, 2, 3, 4, 5]
            assert list(agent.get_rewards()) == [100, 100, 100, 100, 0]
        # Agent 1 joins one env step after agent 0: each acts at every other env step.
        mapping = episode.env_t_to_agent_t
        assert list(mapping[0].data) == [0, "S", 1, "S", 2, "S", 3, "S", 4, "S", 5, "S"]
        assert list(mapping[1].data) == ["S", 0, "S", 1, "S", 2, "S", 3, "S", 4, "S", 5]
        metrics = runner.get_metrics()
        assert _peek(metrics, "num_env_steps_sampled") == 11
        # Agent steps count the agents in each step's result (RLlib's count).
        assert _peek(metrics, "num_agent_steps_sampled", "0") == 5
        assert _peek(metrics, "num_agent_steps_sampled", "1") == 6
    finally:
        runner.stop()


def test_counting_agent_steps_with_one_agent_per_step():
    runner = _runner(
        _config(lambda ctx: RoundRobinMultiAgent(3)).multi_agent(count_steps_by="agent_steps")
    )
    try:
        chunks = runner.sample(num_timesteps=7)
        # One agent observes per step: 7 agent steps are 7 env steps.
        assert sum(chunk.env_steps() for chunk in chunks) == 7
    finally:
        runner.stop()


def test_a_cut_chunk_leaves_out_agents_that_did_not_act_in_it():
    runner = _runner(_config(lambda ctx: RoundRobinMultiAgent(2, increment_obs=True)))
    try:
        # Step 1: agent 0 acts (its next observation comes at step 2), agent 1 observes.
        (first,) = runner.sample(num_timesteps=1)
        assert first.env_steps() == 1 and first.agent_episodes == {}
        (second,) = runner.sample(num_timesteps=2)
        assert second.env_t_started == 1 and second.env_steps() == 2
        assert len(second.agent_episodes[1]) == 1
        assert all(len(agent) > 0 for agent in second.agent_episodes.values())
    finally:
        runner.stop()


def test_the_episode_ends_when_one_agent_is_done_while_the_other_still_plays():
    runner = _runner(
        _config(
            lambda ctx: EarlyDoneMultiAgent(),
            policies=("p0", "p1"),
            mapping=lambda agent_id, episode, **kw: f"p{agent_id}",
        )
    )
    try:
        episodes = runner.sample(num_episodes=2)
        assert len(episodes) == 2
        for episode in episodes:
            # Agent 0 (3 steps of its own) ends the episode at env step 6; agent 1 had acted
            # 3 of its 5 steps.
            assert episode.env_steps() == 6 and episode.is_terminated
            assert {aid: len(agent) for aid, agent in episode.agent_episodes.items()} == {
                0: 3,
                1: 3,
            }
            assert all(agent.is_done for agent in episode.agent_episodes.values())
            assert episode.agent_episodes[0].get_rewards().tolist() == [1.0, 1.0, 0.0]
    finally:
        runner.stop()


def test_steps_in_which_no_agent_observes_are_env_steps_without_agent_steps():
    runner = _runner(
        _config(lambda ctx: SometimesZeroAgentsMultiAgent(num=4, seed=3)).multi_agent(
            count_steps_by="agent_steps"
        )
    )
    try:
        episodes = runner.sample(num_episodes=4)
        env = runner.env.envs[0]
        assert env.observing.count(0) > 0, "the seeded env has steps without observations"
        complete = [episode for episode in episodes if episode.agent_episodes]
        assert complete, "episodes in which agents acted"
        for episode in complete:
            # Each agent acts whenever it observes, 25 times before its MockEnv ends.
            assert {aid: len(agent) for aid, agent in episode.agent_episodes.items()} == {
                aid: 25 for aid in range(4)
            }
            assert episode.is_terminated
        # An episode whose first step has no agent at all is over at once: every agent it
        # has seen (none) is done (RLlib's MultiAgentEpisode rule).
        for episode in episodes:
            if not episode.agent_episodes:
                assert episode.env_steps() == 1 and episode.is_terminated
        metrics = runner.get_metrics()
        env_steps = sum(episode.env_steps() for episode in episodes)
        assert _peek(metrics, "num_env_steps_sampled") == env_steps
        counted = sum(_peek(metrics, "num_agent_steps_sampled", str(aid)) for aid in range(4))
        assert counted < env_steps * 4
        # Counting agent steps, a timestep sample ends at the first step reaching the count.
        chunks = runner.sample(num_timesteps=30)
        metrics = runner.get_metrics()
        counted = sum(stats.peek() for stats in metrics["num_agent_steps_sampled"].values())
        assert 30 <= counted < 30 + 4
        assert sum(chunk.env_steps() for chunk in chunks) == _peek(metrics, "num_env_steps_sampled")
    finally:
        runner.stop()


def test_agents_that_come_and_go_act_only_while_they_play():
    runner = _runner(_config(FlexAgentsMultiAgent, num_envs_per_env_runner=2))
    try:
        episodes = runner.sample(num_timesteps=400)
        envs = runner.env.envs
        spawned = set().union(*(env.spawned for env in envs))
        assert len(spawned) > 10, "the seeded env spawns agents"
        seen = set()
        for episode in episodes:
            seen |= set(episode.agent_episodes)
            for agent in episode.agent_episodes.values():
                assert len(agent) > 0
                assert agent.module_id == "p0"
        assert len(seen) > 10
        killed = set().union(*(env.killed for env in envs))
        done_agents = {
            agent_id
            for episode in episodes
            for agent_id, agent in episode.agent_episodes.items()
            if agent.is_terminated
        }
        assert killed & seen <= done_agents
        assert sum(episode.env_steps() for episode in episodes) in range(400, 402)
    finally:
        runner.stop()


class Relay(MultiAgentEnv):
    """One agent at a time: at each step the agent that acted is terminated (with its last
    observation) and a new one takes over; `"__all__"` is never set. Counts its resets."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = [f"a{i}" for i in range(100)]
        self.agents = []
        self.observation_spaces = {aid: gym.spaces.Discrete(2) for aid in self.possible_agents}
        self.action_spaces = {aid: gym.spaces.Discrete(2) for aid in self.possible_agents}
        self.resets = 0
        self.k = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        self.k = 0
        self.agents = ["a0"]
        return {"a0": 0}, {}

    def step(self, action_dict):
        actor = f"a{self.k}"
        assert set(action_dict) == {actor}
        self.k = (self.k + 1) % 100
        successor = f"a{self.k}"
        self.agents = [successor]
        obs = {actor: 1, successor: 0}
        return obs, {actor: 1.0}, {actor: True, "__all__": False}, {"__all__": False}, {}


def test_an_episode_ends_when_every_agent_it_has_seen_is_done():
    runner = _runner(_config(Relay))
    try:
        episodes = runner.sample(num_episodes=3)
        # RLlib's MultiAgentEpisode is done once all its agents are; the runner ends it then,
        # without the env's "__all__", and the sub-env starts the next episode from a reset.
        assert [episode.env_steps() for episode in episodes] == [1, 1, 1]
        assert all(episode.is_terminated for episode in episodes)
        assert [sorted(episode.agent_episodes) for episode in episodes] == [["a0"]] * 3
        # The first reset, then one after each episode (the third's starts the next one).
        assert runner.env.envs[0].resets == 1 + 3
    finally:
        runner.stop()


@pytest.mark.parametrize(
    "make_env",
    [FlexAgentsMultiAgent, lambda ctx: SometimesZeroAgentsMultiAgent(num=4)],
    ids=["flex_agents", "sometimes_zero_agents"],
)
def test_ppo_trains_on_changing_agent_sets(make_env):
    config = _config(make_env).training(train_batch_size=100, minibatch_size=50, num_epochs=1)
    algo = config.build()
    try:
        lifetime = []
        for _ in range(3):
            result = algo.train()
            lifetime.append(result["num_env_steps_sampled_lifetime"])
            assert np.isfinite(result["learners"]["p0"]["total_loss"])
        assert lifetime[0] >= 100 and lifetime[0] < lifetime[1] < lifetime[2]
    finally:
        algo.stop()


def test_the_runners_env_is_a_vector_multi_agent_env():
    from trainer import EnvRunner
    from trainer.env.vector_multi_agent_env import VectorMultiAgentEnv

    runner = _runner(_config(lambda ctx: BasicMultiAgent(2), num_envs_per_env_runner=3))
    try:
        env = runner.env
        assert isinstance(runner, EnvRunner)
        assert isinstance(env, VectorMultiAgentEnv) and env.unwrapped is env
        assert env.num_envs == 3
        obs, infos = env.reset(seed=1)
        assert obs == [{0: 0, 1: 0}] * 3 and len(infos) == 3
        obs, rewards, terminateds, truncateds, _ = env.step([{0: 1, 1: 0}] * 3)
        assert rewards == [{0: 1.0, 1: 1.0}] * 3
        assert [t["__all__"] for t in terminateds] == [False] * 3
        with pytest.raises(ValueError, match="2 action dicts for 3 sub-envs"):
            env.step([{0: 1, 1: 0}] * 2)
    finally:
        runner.stop()
    assert env.closed


class _EpisodeEvents(RLlibCallback):
    events: list = []

    def on_episode_start(self, *, episode, env_index, **kwargs):
        type(self).events.append(("start", env_index, episode.id_))

    def on_episode_end(self, *, episode, env_index, **kwargs):
        type(self).events.append(("end", env_index, episode.id_))


def test_force_reset_abandons_the_running_episodes_and_starts_new_ones():
    _EpisodeEvents.events = []
    runner = _runner(
        _config(lambda ctx: BasicMultiAgent(2), num_envs_per_env_runner=2).callbacks(_EpisodeEvents)
    )
    try:
        first = runner.sample(num_timesteps=6)
        assert [chunk.env_steps() for chunk in first] == [3, 3]
        # Without force_reset the chunks continue the running episodes...
        second = runner.sample(num_timesteps=4)
        assert [chunk.env_t_started for chunk in second] == [3, 3]
        assert {chunk.id_ for chunk in second} == {chunk.id_ for chunk in first}
        # ... with it, new episodes start from a reset; the old ones never end.
        third = runner.sample(num_timesteps=4, force_reset=True)
        assert [chunk.env_t_started for chunk in third] == [0, 0]
        assert not {chunk.id_ for chunk in third} & {chunk.id_ for chunk in first}
        assert [kind for kind, _, _ in _EpisodeEvents.events] == ["start"] * 4
        assert runner.get_metrics()["num_episodes"].peek() == 0
    finally:
        runner.stop()


def test_num_episodes_returns_exactly_that_many_finished_episodes():
    runner = _runner(_config(lambda ctx: BasicMultiAgent(2), num_envs_per_env_runner=3))
    try:
        runner.sample(num_timesteps=5)
        # All three sub-envs end their episodes in the same step: 4 of 6 are asked for.
        episodes = runner.sample(num_episodes=4)
        assert len(episodes) == 4
        assert all(episode.is_done and episode.env_t_started == 0 for episode in episodes)
        assert all(episode.env_steps() == 25 for episode in episodes)
        metrics = runner.get_metrics()
        assert metrics["num_episodes"].peek() == 4
        # The next timestep sample starts new episodes (RLlib resets after num_episodes).
        chunks = runner.sample(num_timesteps=3)
        assert all(chunk.env_t_started == 0 for chunk in chunks)
    finally:
        runner.stop()


def test_random_actions_come_from_each_agents_action_space():
    runner = _runner(_config(lambda ctx: BasicMultiAgent(3)))
    try:
        (episode,) = runner.sample(num_episodes=1, random_actions=True)
        for agent in episode.agent_episodes.values():
            actions = agent.get_actions()
            assert len(actions) == 25 and set(np.asarray(actions).tolist()) <= {0, 1}
            # No module ran: no model outputs are recorded.
            assert "action_logp" not in agent.extra_model_outputs
    finally:
        runner.stop()


def test_explore_false_takes_each_modules_greedy_action():
    runner = _runner(
        _config(
            lambda ctx: BasicMultiAgent(2),
            policies=("p0", "p1"),
            mapping=lambda agent_id, episode, **kw: f"p{agent_id}",
        )
    )
    try:
        (episode,) = runner.sample(num_episodes=1, explore=False)
        for agent in episode.agent_episodes.values():
            logits = np.asarray(agent.extra_model_outputs["action_dist_inputs"])
            assert np.array_equal(np.asarray(agent.get_actions()), logits.argmax(axis=-1))
        (explored,) = runner.sample(num_episodes=1, explore=True)
        sampled = [np.asarray(a.get_actions()) for a in explored.agent_episodes.values()]
        greedy = [
            np.asarray(a.extra_model_outputs["action_dist_inputs"]).argmax(axis=-1)
            for a in explored.agent_episodes.values()
        ]
        # Exploring samples from the distribution: some actions are not the greedy one.
        assert any(not np.array_equal(s, g) for s, g in zip(sampled, greedy, strict=True))
    finally:
        runner.stop()
