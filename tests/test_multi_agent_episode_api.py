"""`MultiAgentEpisode` beyond RLlib's own test file: episodes recorded from real multi-agent
envs (agents acting in turns, agents acting together and finishing one by one), chunks cut and
concatenated back, the state through the checkpoint codec, numpy episodes, errors, and the
RLlib import path through the launcher."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

from trainer.checkpoints.codec import pack, unpack
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.multi_agent_episode import MultiAgentEpisode, default_agent_to_module_mapping_fn
from trainer.errors import MultiAgentEnvError


class TakeTurns(MultiAgentEnv):
    """Two players act in turns (only the player to move gets an observation); every step pays
    both players, so the waiting player's rewards must be carried to its next step."""

    def __init__(self, length: int = 9):
        super().__init__()
        self.agents = self.possible_agents = ["p0", "p1"]
        self.observation_spaces = {
            a: gym.spaces.Box(-100.0, 100.0, (2,), np.float32) for a in self.agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.agents}
        self.length = length

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return {"p0": self._obs()}, {"p0": {"t": 0}}

    def _obs(self):
        return np.array([self.t, self.t * 2], np.float32)

    def step(self, action_dict):
        (mover,) = action_dict
        self.t += 1
        other = "p1" if mover == "p0" else "p0"
        rewards = {mover: float(action_dict[mover]), other: 0.5}
        done = self.t >= self.length
        if done:  # both get their final observation
            obs = {"p0": self._obs(), "p1": self._obs()}
        else:
            obs = {other: self._obs()}
        return obs, rewards, {"__all__": done}, {"__all__": False}, {a: {"t": self.t} for a in obs}


class ActTogether(MultiAgentEnv):
    """Three agents act every step; agent i terminates after 3 + 2 i steps, the episode ends with
    the last one."""

    def __init__(self):
        super().__init__()
        self.agents = self.possible_agents = [0, 1, 2]  # int agent ids, as make_multi_agent's
        self.observation_spaces = {a: gym.spaces.Discrete(100) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.alive = 0, {0, 1, 2}
        return {a: 0 for a in self.alive}, {}

    def step(self, action_dict):
        self.t += 1
        obs = {a: self.t for a in action_dict}
        rewards = {a: 1.0 + a for a in action_dict}
        terminateds = {a: self.t >= 3 + 2 * a for a in action_dict}
        self.alive -= {a for a, done in terminateds.items() if done}
        terminateds["__all__"] = not self.alive
        return obs, rewards, terminateds, {"__all__": False}, {}


def record(env, episode=None, steps=None, seed=0, policy=None):
    """Runs `env` (from a reset unless `episode` is a chunk to go on with) and logs it."""
    env_rewards = []
    if episode is None:
        episode = MultiAgentEpisode(
            observation_space=dict(env.observation_spaces),
            action_space=dict(env.action_spaces),
        )
        obs, infos = env.reset(seed=seed)
        episode.add_env_reset(observations=obs, infos=infos)
    taken = 0
    while not episode.is_done and (steps is None or taken < steps):
        to_act = episode.get_agents_to_act()
        actions = {a: (policy or (lambda a, t: (t + len(str(a))) % 2))(a, env.t) for a in to_act}
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        env_rewards.append(rewards)
        episode.add_env_step(
            observations=obs,
            actions=actions,
            rewards=rewards,
            infos=infos,
            terminateds=terminateds,
            truncateds=truncateds,
            extra_model_outputs={a: {"action_logp": -0.5 - a_i} for a_i, a in enumerate(actions)},
        )
        taken += 1
    return episode, env_rewards


# -- recording -----------------------------------------------------------------------------------
def test_agents_in_turns_carry_the_waiting_players_rewards_to_its_next_step():
    env = TakeTurns(length=7)
    episode, env_rewards = record(env)
    assert episode.is_terminated and episode.is_done and not episode.is_truncated
    assert len(episode) == episode.env_steps() == 7
    p0, p1 = episode.agent_episodes["p0"], episode.agent_episodes["p1"]
    # p0 moves at env steps 0, 2, 4, 6; p1 at 1, 3, 5; both get the final observation.
    assert (len(p0), len(p1)) == (4, 3)
    assert episode.agent_steps() == 7
    # Each step's reward: the mover's own action reward plus the 0.5 paid while waiting.
    # (Its last step ends on the final observation right after its own action: no wait.)
    assert list(p0.get_rewards()) == pytest.approx(
        [r["p0"] + 0.5 for r in env_rewards[0:6:2]] + [env_rewards[6]["p0"]]
    )
    assert p1.get_rewards()[0] == pytest.approx(env_rewards[1]["p1"] + 0.5)
    # The agents' returns add up to everything the env paid, but p1's 0.5 before its first
    # observation (hanging rewards of done agents are dropped, as in RLlib).
    total = sum(sum(r.values()) for r in env_rewards)
    assert episode.get_return() == pytest.approx(total - env_rewards[0]["p1"])
    # While the episode runs, no reward is lost.
    ongoing, paid = record(TakeTurns(length=7), steps=4)
    assert ongoing.get_return(include_hanging_rewards=True) == pytest.approx(
        sum(sum(r.values()) for r in paid)
    )
    assert ongoing.get_return() < ongoing.get_return(include_hanging_rewards=True)
    # The env-step view: at each step only the mover has an action.
    assert episode.get_actions(0) == {"p0": p0.get_actions(0)}
    assert episode.get_actions(1) == {"p1": p1.get_actions(0)}
    assert list(episode.env_t_to_agent_t["p1"].data) == ["S", 0, "S", 1, "S", 2, "S", 3]
    assert episode.get_terminateds() == {"p0": True, "p1": True, "__all__": True}
    assert episode.get_truncateds() == {"p0": False, "p1": False, "__all__": False}


def test_agents_finish_one_by_one_and_the_episode_ends_with_the_last():
    episode, _ = record(ActTogether())
    assert {a: len(e) for a, e in episode.agent_episodes.items()} == {0: 3, 1: 5, 2: 7}
    assert all(e.is_terminated for e in episode.agent_episodes.values())
    assert episode.is_terminated and len(episode) == 7
    # After agent 0 is done, it no longer acts or appears at env steps.
    assert episode.get_observations(4) == {1: 4, 2: 4}
    assert episode.get_agents_that_stepped() == {2}
    assert episode.get_agents_to_act() == set()
    with pytest.raises(MultiAgentEnvError, match="already done"):
        episode.add_env_step(observations={2: 8}, actions={2: 0}, rewards={2: 1.0})


def test_env_steps_and_agent_steps_getters_with_fill_and_lists():
    episode, _ = record(TakeTurns(length=5))
    # Observations at the last two env steps: both agents got the final one.
    obs = episode.get_observations([-2, -1])
    assert [o.tolist() for o in obs["p0"]] == [[4, 8], [5, 10]]
    assert [o.tolist() for o in obs["p1"]] == [[5, 10]]
    # With fill, absent steps are filled, shaped like the agent's observation space.
    filled = episode.get_observations(slice(0, 3), fill=0.0)
    assert np.shape(filled["p1"][0]) == (2,) and filled["p1"][0].tolist() == [0.0, 0.0]
    as_list = episode.get_actions(return_list=True)
    assert len(as_list) == 5 and [set(step) for step in as_list] == [
        {"p0"},
        {"p1"},
        {"p0"},
        {"p1"},
        {"p0"},
    ]
    by_agent = episode.get_rewards(env_steps=False, agent_ids="p1")
    assert list(by_agent) == ["p1"] and len(by_agent["p1"]) == 2
    logp = episode.get_extra_model_outputs("action_logp", -1)
    assert logp == {"p0": -0.5}
    every_key = episode.get_extra_model_outputs(indices=-1)
    assert every_key == {"p0": {"action_logp": -0.5}}
    one_hot = episode.get_actions(-1, one_hot_discrete=True)
    assert one_hot["p0"].shape == (3,) and one_hot["p0"].sum() == 1


def test_module_for_asks_the_mapping_fn_once_per_agent():
    calls = []

    def mapping(agent_id, episode):
        calls.append(agent_id)
        return f"module_{agent_id}"

    episode = MultiAgentEpisode(agent_to_module_mapping_fn=mapping)
    env = TakeTurns()
    obs, infos = env.reset(seed=1)
    episode.add_env_reset(observations=obs, infos=infos)
    record(env, episode=episode)
    assert episode.module_for("p0") == "module_p0"
    assert {a: e.module_id for a, e in episode.agent_episodes.items()} == {
        "p0": "module_p0",
        "p1": "module_p1",
    }
    assert sorted(calls) == ["p0", "p1"]
    assert all(e.multi_agent_episode_id == episode.id_ for e in episode.agent_episodes.values())
    assert MultiAgentEpisode().module_for("anyone") == "default_policy"


# -- chunks --------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_class", [TakeTurns, ActTogether])
@pytest.mark.parametrize("lookback", [0, 2])
def test_cut_chunks_concatenate_back_to_the_whole_episode(env_class, lookback):
    whole, _ = record(env_class())
    env = env_class()
    chunk, _ = record(env, steps=2)
    chunk.custom_data["seen"] = ["first"]
    chunks = [chunk]
    while not chunks[-1].is_done:
        successor = chunks[-1].cut(len_lookback_buffer=lookback)
        assert successor.id_ == chunk.id_ and successor.env_t_started == chunks[-1].env_t
        assert successor.custom_data == {"seen": ["first"]}
        assert successor.custom_data is not chunks[-1].custom_data  # copied, as RLlib
        record(env, episode=successor, steps=2)
        chunks.append(successor)
    assert sum(len(c) for c in chunks) == len(whole)
    # (An action hanging over a cut makes the successor reach back to the agent's last
    # observation, so every agent keeps one single-agent episode id over all chunks.)
    ids: dict = {}
    for c in chunks:
        for agent_id, agent_episode in c.agent_episodes.items():
            ids.setdefault(agent_id, set()).add(agent_episode.id_)
    assert all(len(agent_ids) == 1 for agent_ids in ids.values()), ids
    joined = chunks[0]
    for successor in chunks[1:]:
        joined.concat_episode(successor)
    assert len(joined) == len(whole) and joined.is_done
    for agent_id, expected in whole.agent_episodes.items():
        got = joined.agent_episodes[agent_id]
        assert got.t_started == 0 and got.t == expected.t
        np.testing.assert_array_equal(
            np.asarray(got.get_observations()), np.asarray(expected.get_observations())
        )
        assert list(got.get_actions()) == list(expected.get_actions())
        assert list(got.get_rewards()) == pytest.approx(list(expected.get_rewards()))
        assert list(got.get_extra_model_outputs("action_logp")) == list(
            expected.get_extra_model_outputs("action_logp")
        )


def test_a_cut_chunk_reads_its_lookback_and_all_its_actions():
    env = ActTogether()
    first, _ = record(env, steps=3)
    second = first.cut(len_lookback_buffer=2)
    record(env, episode=second, steps=2)
    # The chunk's own two env steps: agent 0 finished at step 3, so 1 and 2 acted twice.
    assert {a: list(v) for a, v in second.get_actions().items()} == {
        1: [second.agent_episodes[1].get_actions(0), second.agent_episodes[1].get_actions(1)],
        2: [second.agent_episodes[2].get_actions(0), second.agent_episodes[2].get_actions(1)],
    }
    # Negative indices with neg_index_as_lookback read the steps before the chunk.
    assert second.get_observations(-1, neg_index_as_lookback=True) == {0: 2, 1: 2, 2: 2}
    assert second.get_observations(-2, neg_index_as_lookback=True) == {0: 1, 1: 1, 2: 1}


def test_slice_and_concat_across_an_action_that_hangs_at_the_boundary():
    whole, _ = record(TakeTurns(length=8))
    # (Not split 7: a slice holding only an agent's final observation, after an action taken
    # before the slice, has nothing of that agent, as in RLlib.)
    for split in range(1, 7):
        head, tail = whole[:split], whole[split:]
        assert (len(head), len(tail)) == (split, 8 - split)
        head.concat_episode(tail)
        for agent_id, expected in whole.agent_episodes.items():
            got = head.agent_episodes[agent_id]
            assert list(got.get_actions()) == list(expected.get_actions()), split
            assert list(got.get_rewards()) == pytest.approx(list(expected.get_rewards()))
    with pytest.raises(NotImplementedError, match="step other than 1"):
        whole.slice(slice(0, 4, 2))
    with pytest.raises(NotImplementedError, match="Only slice objects"):
        whole[3]


# -- state ---------------------------------------------------------------------------------------
def test_state_round_trips_through_the_checkpoint_codec():
    env = TakeTurns()
    episode, _ = record(env, steps=4)
    episode.custom_data["note"] = {"step": 4}
    restored = MultiAgentEpisode.from_state(unpack(pack(episode.get_state())))
    assert restored.id_ == episode.id_ and len(restored) == len(episode)
    assert restored.env_t_to_agent_t == episode.env_t_to_agent_t
    assert restored._hanging_actions_end == episode._hanging_actions_end
    assert dict(restored._hanging_rewards_end) == dict(episode._hanging_rewards_end)
    assert restored.observation_space == episode.observation_space
    assert restored.agent_to_module_mapping_fn is default_agent_to_module_mapping_fn
    assert restored.custom_data == {"note": {"step": 4}}
    # The restored episode goes on exactly as the original.
    twin_env = copy.deepcopy(env)
    record(env, episode=episode)
    record(twin_env, episode=restored)
    for agent_id, original in episode.agent_episodes.items():
        again = restored.agent_episodes[agent_id]
        assert again.id_ == original.id_
        np.testing.assert_array_equal(
            np.asarray(again.get_observations()), np.asarray(original.get_observations())
        )
        assert list(again.get_rewards()) == pytest.approx(list(original.get_rewards()))


def test_state_with_int_agent_ids_and_a_lambda_mapping_fn():
    episode = MultiAgentEpisode(agent_to_module_mapping_fn=lambda aid, ep: f"m{aid}")
    env = ActTogether()
    obs, infos = env.reset()
    episode.add_env_reset(observations=obs, infos=infos)
    record(env, episode=episode, steps=4)
    state = unpack(pack(episode.get_state()))
    assert state["agent_to_module_mapping_fn"] is None  # no import path: left out
    restored = MultiAgentEpisode.from_state(state)
    assert set(restored.agent_episodes) == {0, 1, 2}
    # Agents already mapped keep their modules; the mapping fn itself is the default again.
    assert restored.module_for(1) == "m1"
    assert restored.agent_to_module_mapping_fn is default_agent_to_module_mapping_fn


# -- numpy, time, display, errors --------------------------------------------------------------
def test_to_numpy_and_slices_of_numpy_episodes():
    episode, _ = record(ActTogether())
    assert not episode.is_numpy
    assert episode.to_numpy() is episode and episode.is_numpy
    actions = episode.get_actions(slice(0, 3))
    assert all(isinstance(v, np.ndarray) for v in actions.values())
    part = episode[1:4]
    assert part.is_numpy and len(part) == 3


def test_duration_and_print(capsys):
    episode = MultiAgentEpisode()
    assert episode.get_duration_s() == 0.0
    record(TakeTurns(length=3), episode=None)
    episode, _ = record(TakeTurns(length=3))
    assert episode.get_duration_s() > 0.0
    episode.print()
    printed = capsys.readouterr().out
    assert printed.splitlines()[1].startswith("p0") and " x " in printed
    assert repr(episode).startswith("MAEps(len=3 done=True")


def test_env_data_errors_name_the_agent():
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"a": 0, "b": 0})
    with pytest.raises(MultiAgentEnvError, match="Agent a acted .* did NOT receive any reward"):
        episode.add_env_step(observations={"a": 1}, actions={"a": 0}, rewards={})
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"a": 0})
    with pytest.raises(MultiAgentEnvError, match="Agent a acted and then got truncated"):
        episode.add_env_step(
            observations={}, actions={"a": 0}, rewards={"a": 1.0}, truncateds={"a": True}
        )
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"a": 0, "b": 0})
    episode.add_env_step(
        observations={"a": 1, "b": 1},
        actions={"a": 0, "b": 0},
        rewards={"a": 1.0, "b": 1.0},
        terminateds={"a": True},
    )
    with pytest.raises(MultiAgentEnvError, match="Agent a already had its"):
        episode.add_env_step(observations={"a": 2, "b": 2}, actions={"b": 1}, rewards={"b": 0.0})


def test_bad_arguments_and_removed_methods():
    with pytest.raises(ValueError, match="len_lookback_buffer=-1"):
        MultiAgentEpisode(observations=[{"a": 0}], len_lookback_buffer=-1)
    episode, _ = record(TakeTurns())
    with pytest.raises(ValueError, match="env_steps=False` and `return_list=True"):
        episode.get_rewards(env_steps=False, return_list=True)
    with pytest.raises(KeyError, match="nobody"):
        episode.set_rewards(new_data={"nobody": 1.0}, at_indices=0)
    with pytest.raises(NotImplementedError, match="custom_data"):
        episode.add_temporary_timestep_data("key", 1)
    with pytest.raises(NotImplementedError, match="MultiAgentBatch"):
        episode.get_sample_batch()
    with pytest.raises(RuntimeError, match="already done"):
        episode.cut()


def test_rllib_import_path_through_the_launcher():
    from trainer import launcher

    launcher.install()
    try:
        from ray.rllib.env.multi_agent_episode import MultiAgentEpisode as FromRLlib
    finally:
        launcher.uninstall()
    assert FromRLlib is MultiAgentEpisode
