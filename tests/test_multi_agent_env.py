"""RLlib's multi-agent envs (`ray.rllib.env.multi_agent_env` and its example classes): stepping
with agents that end early, turn-based envs, the per-agent spaces API, agent groups, the
multi-agent env checker's errors, the PettingZoo wrappers on PettingZoo's own games, and the
refusal of a MultiAgentEnv by a single-agent Algorithm at build.

The cases of RLlib's `rllib/env/tests/test_multi_agent_env.py` that drive only an env (its
`BasicMultiAgent` and `RoundRobinMultiAgent` mocks) are covered here by
`test_all_agents_ending_together_ends_the_episode` and `test_round_robin_agents_act_in_turns`;
its sampling and training cases need the multi-agent EnvRunner.
"""

from __future__ import annotations

import multiprocessing
import pickle
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.env.envs import register_env
from trainer.env.multi_agent_checks import check_multiagent_environments
from trainer.env.multi_agent_env import MultiAgentEnv, SingleAgentEnvCopies, make_multi_agent
from trainer.env.wrappers.group_agents_wrapper import GROUP_INFO, GROUP_REWARDS
from trainer.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
from trainer.errors import ConfigError
from trainer.examples.envs.classes.cartpole_crashing import MultiAgentCartPoleCrashing
from trainer.examples.envs.classes.debug_counter_env import MultiAgentDebugCounterEnv
from trainer.examples.envs.classes.multi_agent import (
    GuessTheNumberGame,
    MultiAgentCartPole,
    MultiAgentCartPoleWithDictObservationSpace,
    MultiAgentMountainCar,
    MultiAgentNestedSpaceRepeatAfterMeEnv,
    MultiAgentPendulum,
    MultiAgentStatelessCartPole,
    TwoStepGame,
    TwoStepGameWithGroupedAgents,
)
from trainer.examples.envs.classes.multi_agent.double_row_corridor_env import (
    DoubleRowCorridorEnv,
)
from trainer.examples.envs.classes.multi_agent.rock_paper_scissors import RockPaperScissors
from trainer.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe
from trainer.examples.envs.classes.random_env import RandomMultiAgentEnv
from trainer.examples.envs.classes.six_room_env import HierarchicalSixRoomEnv

ALL = "__all__"


def _sample_action(env: MultiAgentEnv, agent_id: Any, obs: Any) -> Any:
    """A random action of `agent_id`, legal under an `action_mask` in its observation."""
    space = env.get_action_space(agent_id)
    if isinstance(obs, dict) and "action_mask" in obs and isinstance(space, gym.spaces.Discrete):
        return space.sample(mask=np.asarray(obs["action_mask"], dtype=np.int8))
    return space.sample()


def play_episode(env: MultiAgentEnv, seed: int = 0, max_steps: int = 5000) -> dict:
    """Plays one episode with random actions for the agents that observed (and are not done);
    checks every observation against its agent's space. Returns the episode's totals."""
    for agent_id in env.possible_agents:
        env.get_observation_space(agent_id).seed(seed)
        env.get_action_space(agent_id).seed(seed)
    obs, infos = env.reset(seed=seed)
    assert isinstance(infos, dict) and obs, f"{type(env).__name__}.reset() gave no observations"
    done: set = set()
    returns: dict = {}
    acted: dict = {}
    for step in range(1, max_steps + 1):
        for agent_id, value in obs.items():
            space = env.get_observation_space(agent_id)
            assert space.contains(value), (type(env).__name__, agent_id, value, space)
        actions = {a: _sample_action(env, a, o) for a, o in obs.items() if a not in done}
        for agent_id in actions:
            acted[agent_id] = acted.get(agent_id, 0) + 1
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        assert ALL in terminateds, (type(env).__name__, terminateds)
        for agent_id, reward in rewards.items():
            returns[agent_id] = returns.get(agent_id, 0.0) + float(reward)
        done |= {a for a, flag in {**terminateds, **truncateds}.items() if flag and a != ALL}
        if terminateds[ALL] or truncateds.get(ALL, False):
            for agent_id, value in obs.items():
                assert env.get_observation_space(agent_id).contains(value)
            return {"steps": step, "returns": returns, "acted": acted}
    raise AssertionError(f"{type(env).__name__}: no episode end within {max_steps} steps")


# -- make_multi_agent ---------------------------------------------------------------------------
def test_make_multi_agent_builds_n_independent_copies_with_per_agent_spaces():
    env = MultiAgentCartPole({"num_agents": 3})
    assert env.agents == env.possible_agents == [0, 1, 2]
    assert env.num_agents == env.max_num_agents == 3
    assert env.observation_spaces == {i: e.observation_space for i, e in enumerate(env.envs)}
    for i in range(3):
        assert env.get_observation_space(i) == gym.make("CartPole-v1").observation_space
        assert env.get_action_space(i) == gym.spaces.Discrete(2)
    assert MultiAgentCartPole().agents == [0]  # num_agents defaults to 1
    assert MultiAgentCartPole(None).agents == [0]
    # As RLlib: every copy is reset with the same seed, so seeded copies start alike.
    obs, infos = env.reset(seed=3)
    assert set(obs) == set(infos) == {0, 1, 2}
    np.testing.assert_array_equal(obs[0], obs[2])
    obs_again, _ = MultiAgentCartPole({"num_agents": 3}).reset(seed=3)
    np.testing.assert_array_equal(obs[1], obs_again[1])


def test_make_multi_agent_pops_num_agents_from_a_copy_and_passes_the_rest_on():
    seen: list[dict] = []

    def creator(config: dict) -> gym.Env:
        seen.append(dict(config))
        return gym.make("CartPole-v1", max_episode_steps=config["limit"])

    config = {"num_agents": 2, "limit": 4}
    env = make_multi_agent(creator)(config)
    assert config == {"num_agents": 2, "limit": 4}  # the caller's dict is left as it was
    assert seen == [{"limit": 4}, {"limit": 4}]
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminateds, truncateds, _ = env.step({0: 0, 1: 0})
        assert not truncateds[ALL]
    _, _, terminateds, truncateds, _ = env.step({0: 0, 1: 0})
    # Truncated after 4 steps (unless CartPole fell first): both flags say the episode is over.
    assert terminateds[ALL]
    assert truncateds[ALL] == (truncateds[0] and truncateds[1])


def test_single_agents_terminate_alone_and_all_ends_the_episode():
    env = MultiAgentCartPole({"num_agents": 2})
    env.reset(seed=0)
    # Agent 0 pushes right until its pole falls; agent 1 balances by pushing against the tilt.
    obs, steps = env.reset(seed=0)[0], 0
    while True:
        steps += 1
        obs, rewards, terminateds, truncateds, infos = env.step(
            {0: 1, 1: int(obs[1][2] + 0.5 * obs[1][3] > 0)}
        )
        assert set(rewards) == set(terminateds) - {ALL} == {0, 1}
        if terminateds[0]:
            break
        assert not terminateds[ALL] and steps < 100
    assert not terminateds[1] and not terminateds[ALL] and not truncateds[ALL]
    assert 0 in obs  # the terminated agent's last observation is returned
    # Agent 0 no longer acts; the episode goes on for agent 1 alone.
    obs, rewards, terminateds, truncateds, _ = env.step({1: 0})
    assert set(obs) == set(rewards) == {1}
    assert not terminateds[ALL]
    while not terminateds[1]:
        obs, rewards, terminateds, truncateds, _ = env.step({1: 0})
    assert terminateds[ALL] and not truncateds[ALL]
    # A new episode: both agents act again.
    obs, _ = env.reset()
    assert set(obs) == {0, 1}
    _, _, terminateds, _, _ = env.step({0: 0, 1: 0})
    assert not terminateds[ALL]


def test_all_agents_ending_together_ends_the_episode():
    env = MultiAgentDebugCounterEnv({"num_agents": 4, "base_episode_len": 3})
    obs, _ = env.reset()
    assert list(obs) == [0, 1, 2, 3]
    done: set = set()
    for t in range(1, 8):
        obs, rewards, terminateds, truncateds, _ = env.step(
            {i: np.array([0.0, 0.0], np.float32) for i in range(4) if i not in done}
        )
        assert rewards == {i: t % 3 for i in range(4) if i not in done}
        done |= {i for i in range(4) if truncateds.get(i)}
        assert done == {i for i in range(4) if t > 3 + i}
        assert truncateds[ALL] == (len(done) == 4) and not terminateds[ALL]
    assert truncateds[ALL]


def test_make_multi_agent_refuses_empty_and_unknown_actions():
    env = MultiAgentCartPole({"num_agents": 2})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="at least one agent"):
        env.step({})
    with pytest.raises(KeyError, match=r"agent 2; the agents are 0\.\.1"):
        env.step({2: 0})
    with pytest.raises(TypeError, match="build this class with make_multi_agent"):
        SingleAgentEnvCopies({"num_agents": 2})


def test_example_classes_pickle_by_reference():
    for cls in (MultiAgentCartPole, MultiAgentPendulum, MultiAgentCartPoleCrashing):
        assert pickle.loads(pickle.dumps(cls)) is cls
        assert cls.__name__ in repr(cls)


# -- turn-based envs ----------------------------------------------------------------------------
def test_round_robin_agents_act_in_turns():
    env = TicTacToe()
    obs, _ = env.reset()
    first = next(iter(obs))
    second = "player2" if first == "player1" else "player1"
    assert list(obs) == [first] and np.array_equal(obs[first], np.zeros(9, np.float32))
    obs, rewards, terminateds, _, _ = env.step({first: 4})
    # Only the next player observes (the board seen from its side), the mover gets its reward.
    assert list(obs) == [second] and rewards == {first: 0.0}
    assert obs[second][4] == -1.0 and not terminateds[ALL]
    obs, rewards, _, _, _ = env.step({second: 4})  # an occupied field: -0.5, the turn passes
    assert list(obs) == [first] and rewards == {second: -0.5}
    for field in (0, 1):
        env.step({first: field})
        env.step({second: field + 6})
    obs, rewards, terminateds, truncateds, _ = env.step({first: 2})  # row 0, 1, 2
    assert set(obs) == {first, second} and rewards == {first: 1.0, second: -1.0}
    assert terminateds[ALL] and not truncateds[ALL]
    np.testing.assert_array_equal(obs[first], -obs[second])


def test_rewards_reach_agents_that_did_not_act():
    env = GuessTheNumberGame({"max_number": 4, "max_steps": 3})
    obs, _ = env.reset()
    assert obs == {0: 0}
    obs, rewards, terminateds, truncateds, _ = env.step({0: np.array([0, 2])})
    assert obs == {1: 0} and rewards == {0: 0}
    # Agent 1 asks "lower than 3?": yes; agent 0 did not act, but is paid for the wasted step.
    obs, rewards, terminateds, _, _ = env.step({1: np.array([0, 3])})
    assert obs == {1: 0} and rewards == {1: 1, 0: 1} and not terminateds[ALL]
    obs, rewards, _, _, _ = env.step({1: np.array([1, 3])})  # "higher than 3?": no
    assert rewards == {1: 0, 0: 1}
    obs, rewards, terminateds, truncateds, _ = env.step({1: np.array([2, 2])})  # "2?": yes
    assert rewards == {1: 100, 0: -100}
    assert terminateds == {1: True, ALL: True} and truncateds[ALL]  # also the step limit
    with pytest.raises(ValueError, match="agent 0 has not picked a number"):
        env.reset()
        env.step({1: np.array([2, 2])})


# -- the spaces API -----------------------------------------------------------------------------
class _SpacesEnv(MultiAgentEnv):
    def __init__(self, observation_space=None, observation_spaces=None):
        self._agent_ids = {"a", "b"}  # RLlib's older form: agents inferred from _agent_ids
        super().__init__()
        if observation_space is not None:
            self.observation_space = observation_space
        if observation_spaces is not None:
            self.observation_spaces = observation_spaces


def test_spaces_per_agent_in_the_older_dict_and_shared_forms():
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    older = _SpacesEnv(gym.spaces.Dict({"a": box, "b": gym.spaces.Discrete(3)}))
    assert sorted(older.agents) == sorted(older.possible_agents) == ["a", "b"]
    assert older.get_agent_ids() == {"a", "b"}
    assert older.get_observation_space("a") == box
    assert older.get_observation_space("b") == gym.spaces.Discrete(3)
    shared = _SpacesEnv(box)  # one space for every agent
    assert shared.get_observation_space("a") == shared.get_observation_space("b") == box
    newer = _SpacesEnv(box, observation_spaces={"a": gym.spaces.Discrete(5), "b": box})
    assert newer.get_observation_space("a") == gym.spaces.Discrete(5)  # the dict wins
    with pytest.raises(KeyError):
        newer.get_observation_space("c")
    # DoubleRowCorridorEnv overrides the getters: one space for both agents.
    corridor = DoubleRowCorridorEnv({"length": 5})
    assert corridor.get_observation_space("agent_0") is corridor.get_observation_space("agent_1")
    assert corridor.get_action_space("agent_1") == gym.spaces.Discrete(4)


# -- agent groups -------------------------------------------------------------------------------
def test_grouped_agents_act_as_one_with_tuple_spaces_and_summed_rewards():
    grouped = TwoStepGame({}).with_agent_groups({"both": [0, 1]})
    assert grouped.agents == grouped.possible_agents == ["both"]
    assert grouped.get_observation_space("both") == gym.spaces.Tuple(
        [gym.spaces.Discrete(6), gym.spaces.Discrete(6)]
    )
    assert grouped.get_action_space("both") == gym.spaces.Tuple(
        [gym.spaces.Discrete(2), gym.spaces.Discrete(2)]
    )
    obs, infos = grouped.reset(seed=0)
    assert obs == {"both": [0, 3]} and infos == {}
    obs, rewards, terminateds, _, infos = grouped.step({"both": (1, 0)})  # to state 2
    assert obs == {"both": [2, 5]} and rewards == {"both": 0.0} and not terminateds[ALL]
    assert infos["both"][GROUP_REWARDS] == [0.0, 0.0]
    obs, rewards, terminateds, truncateds, infos = grouped.step({"both": (1, 1)})
    assert rewards == {"both": 8.0} and terminateds[ALL] and not truncateds[ALL]
    assert infos["both"][GROUP_REWARDS] == [4.0, 4.0]
    assert infos["both"][GROUP_INFO] == [{"done": True}, {"done": True}]
    check_multiagent_environments(grouped)


def test_ungrouped_agents_pass_through_and_bad_groups_are_named():
    env = MultiAgentCartPole({"num_agents": 3}).with_agent_groups({"pair": [0, 2]})
    assert env.possible_agents == ["pair", 1]
    assert env.get_observation_space(1) == env.env.envs[1].observation_space
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"pair", 1} and len(obs["pair"]) == 2
    assert env.get_observation_space("pair").contains(tuple(obs["pair"]))
    obs, rewards, terminateds, _, _ = env.step({"pair": (0, 1), 1: 0})
    assert rewards == {"pair": 2.0, 1: 1.0}
    assert set(terminateds) == {"pair", 1, ALL} and not terminateds["pair"]
    with pytest.raises(ValueError, match=r"group 'pair' has 2 agents .* has 1 parts"):
        env.step({"pair": (0,), 1: 0})
    with pytest.raises(ValueError, match="agent 1 is in groups 'x' and 'y'"):
        MultiAgentCartPole({"num_agents": 2}).with_agent_groups({"x": [0, 1], "y": [1]})


class _EndsInTurnsEnv(MultiAgentEnv):
    """Agents 0 and 1 act together; agent 0 terminates after 1 step, agent 1 after 2."""

    def __init__(self):
        super().__init__()
        self.agents = self.possible_agents = [0, 1]
        self.observation_spaces = {0: gym.spaces.Discrete(3), 1: gym.spaces.Discrete(3)}
        self.action_spaces = {0: gym.spaces.Discrete(2), 1: gym.spaces.Discrete(2)}
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {0: 0, 1: 0}, {}

    def step(self, action_dict):
        self.t += 1
        ids = [0, 1]
        ended = {0: self.t >= 1, 1: self.t >= 2}
        terminateds = {**ended, ALL: all(ended.values())}
        return {a: self.t for a in ids}, {a: 1.0 for a in ids}, terminateds, {ALL: False}, {}


def test_a_group_is_terminated_when_all_its_members_are():
    env = _EndsInTurnsEnv().with_agent_groups({"team": [0, 1]})
    env.reset()
    _, _, terminateds, _, _ = env.step({"team": (0, 0)})
    assert terminateds == {"team": False, ALL: False}  # agent 0 ended, agent 1 did not
    _, _, terminateds, _, _ = env.step({"team": (0, 0)})
    assert terminateds == {"team": True, ALL: True}


def test_a_group_member_missing_from_the_output_is_named():
    env = GuessTheNumberGame({}).with_agent_groups({"players": [0, 1]})
    with pytest.raises(ValueError, match=r"observations have agent\(s\) \[0\] of group "):
        env.reset()


def test_two_step_game_with_grouped_agents_keeps_rllibs_spaces():
    env = TwoStepGameWithGroupedAgents({})
    assert env.agents == ["agents"]
    tuple_space = gym.spaces.Tuple([gym.spaces.Discrete(6), gym.spaces.Discrete(6)])
    assert env.observation_space == gym.spaces.Dict({"agents": tuple_space})
    assert env.get_observation_space("agents") == tuple_space
    env.reset()
    env.step({"agents": (0, 0)})  # state 1: 7 whatever the actions
    _, rewards, terminateds, _, _ = env.step({"agents": (1, 0)})
    assert rewards == {"agents": 7.0} and terminateds[ALL]


# -- the checker --------------------------------------------------------------------------------
class _FlawedEnv(MultiAgentEnv):
    """Two agents; `flaw` breaks one thing the checker must name."""

    def __init__(self, flaw: str = ""):
        super().__init__()
        self.flaw = flaw
        self.agents = self.possible_agents = ["red", "blue"]
        box = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.observation_spaces = {
            "red": box,
            "blue": gym.spaces.Dict({"pos": box, "hp": gym.spaces.Discrete(3)}),
        }
        self.action_spaces = {"red": gym.spaces.Discrete(2), "blue": gym.spaces.Discrete(2)}

    def _obs(self) -> dict:
        red = np.array([0.5, 2.0] if self.flaw == "red_out_of_bounds" else [0.5, 0.5], np.float32)
        hp = 7 if self.flaw == "blue_hp" else 1
        return {"red": red, "blue": {"pos": np.zeros(2, np.float32), "hp": hp}}

    def reset(self, *, seed=None, options=None):
        if self.flaw == "reset_raises":
            raise RuntimeError("no board")
        if self.flaw == "old_reset":
            return self._obs()
        return self._obs(), {}

    def step(self, action_dict):
        obs, rewards = self._obs(), {"red": 1.0, "blue": 0}
        terminateds, truncateds, infos = {"red": False, ALL: False}, {}, {}
        if self.flaw == "no_all":
            del terminateds[ALL]
        if self.flaw == "stranger_reward":
            rewards["green"] = 1.0
        if self.flaw == "bool_reward":
            rewards["blue"] = True
        if self.flaw == "array_reward":
            rewards["red"] = np.array([1.0, 2.0])
        if self.flaw == "int_terminated":
            terminateds["red"] = 0
        if self.flaw == "info_list":
            infos["red"] = ["x"]
        if self.flaw == "obs_list":
            obs = [obs["red"]]
        if self.flaw == "four_tuple":
            return obs, rewards, terminateds, infos
        return obs, rewards, terminateds, truncateds, infos


@pytest.mark.parametrize(
    "flaw, message",
    [
        (
            "red_out_of_bounds",
            r"^The observation collected from env.reset was not contained .* agent 'red'",
        ),
        ("blue_hp", r"agent 'blue' is not in its observation space \(at \['hp'\]\): 7"),
        ("reset_raises", r"_FlawedEnv.reset\(seed=42, options=\{\}\) raised RuntimeError"),
        ("old_reset", r"reset\(\) returned .*tuple \(observations, infos\)"),
        ("four_tuple", r"step\(\) returned .*five dicts"),
        ("no_all", r"terminateds .* has no '__all__' key"),
        ("stranger_reward", r"the rewards have key 'green', which is no agent .*\['red', 'blue'\]"),
        (
            "bool_reward",
            r"^Your step function must return rewards .* agent 'blue' is True \(bool\)",
        ),
        ("array_reward", r"the reward of agent 'red' is array"),
        ("int_terminated", r"terminateds\['red'\] is 0 \(int\); it must be a bool"),
        ("info_list", r"the info of 'red' is \['x'\] \(list\); infos must be dicts"),
        ("obs_list", r"step, next_obs is not a MultiAgentDict. Instead, it is of type: list"),
    ],
)
def test_checker_names_the_agent_the_key_and_what_is_allowed(flaw, message):
    check_multiagent_environments(_FlawedEnv())  # the flawless env passes
    with pytest.raises(ValueError, match=message):
        check_multiagent_environments(_FlawedEnv(flaw))


def test_checker_refuses_other_envs_and_missing_action_spaces():
    with pytest.raises(
        ValueError, match="The passed env is not a MultiAgentEnv.* got a CartPoleEnv"
    ):
        check_multiagent_environments(gym.make("CartPole-v1").unwrapped)
    env = _FlawedEnv()
    env.action_spaces = None
    with pytest.raises(ValueError, match=r"get_action_space\('red'\) gives None"):
        check_multiagent_environments(env)


class _LateJoinerEnv(MultiAgentEnv):
    """Agent `first` acts at reset; `late` is rewarded before it ever observes, then observes."""

    def __init__(self):
        super().__init__()
        self.agents = self.possible_agents = ["first", "late"]
        self.observation_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        return {"first": 0}, {}

    def step(self, action_dict):
        rewards = {"first": 1.0, "late": 0.5, ALL: 0.0}  # "__all__" is allowed as in RLlib
        return {"late": 1}, rewards, {ALL: False}, {}, {"__common__": {"turn": 1}}


def test_checker_accepts_rewards_for_agents_without_an_observation():
    # As RLlib: a reward may reach an agent that has not observed yet (RLlib's episodes keep it
    # for the agent's first step); truncateds may leave "__all__" out; infos may have
    # "__common__".
    check_multiagent_environments(_LateJoinerEnv())


# -- every example env, to the end of an episode ----------------------------------------------
EXAMPLE_ENVS = {
    "MultiAgentCartPole": lambda: MultiAgentCartPole({"num_agents": 2}),
    "MultiAgentMountainCar": lambda: MultiAgentMountainCar({"num_agents": 2}),
    "MultiAgentPendulum": lambda: MultiAgentPendulum({"num_agents": 2}),
    "MultiAgentStatelessCartPole": lambda: MultiAgentStatelessCartPole({"num_agents": 3}),
    "MultiAgentCartPoleWithDictObservationSpace": (
        lambda: MultiAgentCartPoleWithDictObservationSpace({"num_agents": 2})
    ),
    "MultiAgentNestedSpaceRepeatAfterMeEnv": (
        lambda: MultiAgentNestedSpaceRepeatAfterMeEnv({"num_agents": 2})
    ),
    "MultiAgentCartPoleCrashing": lambda: MultiAgentCartPoleCrashing(
        {"num_agents": 2, "p_crash": 0.0}
    ),
    "RandomMultiAgentEnv": lambda: RandomMultiAgentEnv({"num_agents": 2}),
    "MultiAgentDebugCounterEnv": lambda: MultiAgentDebugCounterEnv({"num_agents": 2}),
    "TwoStepGame": lambda: TwoStepGame({}),
    "TwoStepGame(one_hot)": lambda: TwoStepGame({"one_hot_state_encoding": True}),
    "TwoStepGame(state)": lambda: TwoStepGame(
        {"one_hot_state_encoding": True, "separate_state_space": True}
    ),
    "TwoStepGameWithGroupedAgents": lambda: TwoStepGameWithGroupedAgents({}),
    "RockPaperScissors": lambda: RockPaperScissors({}),
    "RockPaperScissors(sheldon_cooper)": lambda: RockPaperScissors({"sheldon_cooper_mode": True}),
    "TicTacToe": lambda: TicTacToe(),
    "GuessTheNumberGame": lambda: GuessTheNumberGame({}),
    "DoubleRowCorridorEnv": lambda: DoubleRowCorridorEnv({"length": 4}),
    "HierarchicalSixRoomEnv": lambda: HierarchicalSixRoomEnv({"time_limit": 30}),
}


@pytest.mark.parametrize("name", list(EXAMPLE_ENVS))
def test_example_env_passes_the_checker_and_plays_to_the_end(name):
    env = EXAMPLE_ENVS[name]()
    check_multiagent_environments(env)
    for seed in (0, 1):
        result = play_episode(env, seed=seed)
        assert result["steps"] >= 1 and result["acted"]


def test_example_envs_keep_rllibs_episode_lengths_and_rewards():
    assert play_episode(MultiAgentPendulum({"num_agents": 2}))["steps"] == 200
    assert play_episode(MultiAgentMountainCar({"num_agents": 1}))["steps"] == 999
    rps = play_episode(RockPaperScissors({}))
    assert rps["steps"] == 10 and rps["returns"]["player1"] == -rps["returns"]["player2"]
    two_step = play_episode(TwoStepGame({}))
    assert two_step["steps"] == 2 and two_step["returns"][0] in (0.0, 0.5, 3.5, 4.0)
    corridor = DoubleRowCorridorEnv({"length": 3})
    corridor.reset()
    for action in (3, 3):  # agent_0 walks right, agent_1 stays blocked at the right wall
        _, rewards, terminateds, _, _ = corridor.step({"agent_0": action, "agent_1": 3})
    assert rewards == {"agent_0": pytest.approx(9.9), "agent_1": -0.1}
    assert terminateds == {"agent_0": True, "agent_1": False, ALL: False}
    obs, _, _, _, _ = corridor.step({"agent_1": 2})
    assert list(obs) == ["agent_1"]  # the agent at its goal no longer observes


def test_chess_names_the_missing_package(monkeypatch):
    from trainer.examples.envs.classes.multi_agent.pettingzoo_chess import MultiAgentChess

    monkeypatch.setitem(sys.modules, "chess", None)  # `import chess` fails, installed or not
    for module in [m for m in sys.modules if m.startswith("pettingzoo.classic.chess")]:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ModuleNotFoundError, match=r"needs the `chess` package.*pip install chess"):
        MultiAgentChess()


# -- PettingZoo ---------------------------------------------------------------------------------
pettingzoo = pytest.importorskip("pettingzoo", reason="needs pettingzoo (the test extra)")


def _classic(name: str) -> Any:
    pytest.importorskip("pygame", reason="PettingZoo's classic games need pygame (test extra)")
    import importlib

    return importlib.import_module(f"pettingzoo.classic.{name}")


def test_pettingzoo_aec_env_returns_only_the_acting_agent():
    env = PettingZooEnv(_classic("tictactoe_v3").env())
    assert env.possible_agents == ["player_1", "player_2"]
    assert env.get_action_space("player_1") == gym.spaces.Discrete(9)
    assert isinstance(env.observation_space, gym.spaces.Dict)
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["player_1"] and infos == {}
    assert set(obs["player_1"]) == {"observation", "action_mask"}
    moves = [("player_1", 0), ("player_2", 3), ("player_1", 1), ("player_2", 4)]
    for player, field in moves:
        obs, rewards, terminateds, truncateds, _ = env.step({player: field})
        other = "player_2" if player == "player_1" else "player_1"
        assert list(obs) == [other] and not terminateds[ALL] and not truncateds[ALL]
    obs, rewards, terminateds, truncateds, _ = env.step({"player_1": 2})  # three in a row
    # Both players' last data, the winner +1 and the loser -1; the episode is over.
    assert set(obs) == {"player_1", "player_2"}
    assert rewards == {"player_2": -1, "player_1": 1}
    assert terminateds == {"player_1": True, "player_2": True, ALL: True}
    assert not truncateds[ALL]
    with pytest.raises(KeyError, match="agent 'player_1' is to act now"):
        env.reset(seed=0)
        env.step({"player_2": 0})
    check_multiagent_environments(env)
    for seed in range(3):
        play_episode(env, seed=seed)


def test_pettingzoo_parallel_env_steps_all_agents_at_once():
    env = ParallelPettingZooEnv(_classic("rps_v2").parallel_env(max_cycles=5))
    assert env.possible_agents == ["player_0", "player_1"]
    assert env.get_action_space("player_0") == gym.spaces.Discrete(3)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"player_0", "player_1"}
    obs, rewards, terminateds, truncateds, _ = env.step({"player_0": 0, "player_1": 1})
    assert rewards == {"player_0": -1, "player_1": 1}  # paper covers rock
    assert not terminateds[ALL] and not truncateds[ALL]
    assert play_episode(env)["steps"] == 5  # truncated at max_cycles
    check_multiagent_environments(env)


def test_pettingzoo_connect4_example_plays_to_the_end():
    _classic("connect_four_v3")
    from trainer.examples.envs.classes.multi_agent.pettingzoo_connect4 import MultiAgentConnect4

    env = MultiAgentConnect4()
    assert env.possible_agents == ["player_0", "player_1"]
    check_multiagent_environments(env)
    for seed in range(3):
        result = play_episode(env, seed=seed)
        assert 7 <= result["steps"] <= 42
        assert sorted(result["returns"].values()) in ([-1.0, 1.0], [0.0, 0.0])


def test_pettingzoo_wrappers_refuse_the_other_kind_of_env():
    with pytest.raises(TypeError, match="needs a PettingZoo AEC env.*ParallelPettingZooEnv"):
        PettingZooEnv(_classic("rps_v2").parallel_env())
    with pytest.raises(TypeError, match="needs a PettingZoo parallel env"):
        ParallelPettingZooEnv(object())


# -- a single-agent config refuses multi-agent envs at build ------------------------------------
MESSAGE = "is a MultiAgentEnv: it trains with a multi-agent config"


def test_multi_agent_env_class_with_a_single_agent_config_is_refused_before_workers_start():
    before = set(multiprocessing.active_children())
    with pytest.raises(ConfigError, match=f"MultiAgentCartPole {MESSAGE}"):
        PPOConfig().environment(MultiAgentCartPole, env_config={"num_agents": 2}).build()
    assert set(multiprocessing.active_children()) == before  # no EnvRunner was started

    class MyTurnGame(TicTacToe):  # a user's own subclass
        pass

    with pytest.raises(ConfigError, match=f"MyTurnGame {MESSAGE}"):
        PPOConfig().environment(MyTurnGame).env_runners(num_env_runners=1).build()


@pytest.mark.slow
def test_multi_agent_env_from_a_creator_with_a_single_agent_config_is_refused_in_the_runner():
    register_env("ma_cartpole_for_refusal", lambda config: MultiAgentCartPole(config))
    config = PPOConfig().environment("ma_cartpole_for_refusal", env_config={"num_agents": 2})
    with pytest.raises(ValueError, match=f"made a MultiAgentCartPole, which {MESSAGE}"):
        config.env_runners(num_env_runners=0).build()
    # In a worker process: its init error, re-raised with its type.
    with pytest.raises(ValueError, match=f"made a MultiAgentCartPole, which {MESSAGE}"):
        config.env_runners(num_env_runners=1).build()
