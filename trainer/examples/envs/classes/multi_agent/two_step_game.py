"""RLlib's two-step matrix game (`TwoStepGame`) and its grouped form
(`TwoStepGameWithGroupedAgents`), the cooperative game of the QMIX paper."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Dict, Discrete, MultiDiscrete, Tuple

from trainer.env.multi_agent_env import ENV_STATE, MultiAgentDict, MultiAgentEnv


class TwoStepGame(MultiAgentEnv):
    """Two agents (0 and 1), three states. In state 0 agent 0's action picks state 1 (action 0)
    or state 2 (action 1). State 1 pays 7 whatever the actions; in state 2 both acting 1 pays 8,
    both 0 pays 0, otherwise 1. The reward is split evenly; the episode ends after the second
    step. Observations: the state index (agent 0: 0..2, agent 1: 3..5), or with
    `one_hot_state_encoding` the one-hot state plus the agent's number (1 or 2), and with
    `separate_state_space` a Dict of that and the global state (`"state"`).
    `actions_are_logits`: actions are probabilities of 0 and 1, sampled with `np.random`."""

    action_space = Discrete(2)

    def __init__(self, env_config: dict):
        super().__init__()
        self.action_space = Discrete(2)
        self.state: np.ndarray | None = None
        self.agent_1 = 0
        self.agent_2 = 1
        # MADDPG emits action logits instead of actual discrete actions.
        self.actions_are_logits = env_config.get("actions_are_logits", False)
        self.one_hot_state_encoding = env_config.get("one_hot_state_encoding", False)
        self.with_state = env_config.get("separate_state_space", False)
        self._agent_ids = {0, 1}
        # RLlib sets only `_agent_ids` (after the base class read it): the agents here too.
        self.agents = [0, 1]
        self.possible_agents = [0, 1]
        if not self.one_hot_state_encoding:
            self.observation_space = Discrete(6)
            self.with_state = False
        elif self.with_state:
            self.observation_space = Dict(
                {"obs": MultiDiscrete([2, 2, 2, 3]), ENV_STATE: MultiDiscrete([2, 2, 2])}
            )
        else:
            self.observation_space = MultiDiscrete([2, 2, 2, 3])

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        if seed is not None:
            np.random.seed(seed)  # as RLlib: `actions_are_logits` samples from np.random
        self.state = np.array([1, 0, 0])
        return self._obs(), {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        if self.state is None:
            raise RuntimeError("TwoStepGame: call reset() before step()")
        if self.actions_are_logits:
            action_dict = {k: np.random.choice([0, 1], p=v) for k, v in action_dict.items()}
        state_index = int(np.flatnonzero(self.state)[0])
        if state_index == 0:
            action = action_dict[self.agent_1]
            if action not in (0, 1):
                raise ValueError(f"TwoStepGame: agent 0's action {action!r} is not 0 or 1")
            self.state = np.array([0, 1, 0]) if action == 0 else np.array([0, 0, 1])
            global_rew = 0
            terminated = False
        elif state_index == 1:
            global_rew = 7
            terminated = True
        else:
            a1, a2 = action_dict[self.agent_1], action_dict[self.agent_2]
            if a1 == 0 and a2 == 0:
                global_rew = 0
            elif a1 == 1 and a2 == 1:
                global_rew = 8
            else:
                global_rew = 1
            terminated = True
        rewards = {self.agent_1: global_rew / 2.0, self.agent_2: global_rew / 2.0}
        infos = {self.agent_1: {"done": terminated}, self.agent_2: {"done": terminated}}
        return self._obs(), rewards, {"__all__": terminated}, {"__all__": False}, infos

    def _obs(self) -> MultiAgentDict:
        if self.with_state:
            return {
                self.agent_1: {"obs": self.agent_1_obs(), ENV_STATE: self.state},
                self.agent_2: {"obs": self.agent_2_obs(), ENV_STATE: self.state},
            }
        return {self.agent_1: self.agent_1_obs(), self.agent_2: self.agent_2_obs()}

    def agent_1_obs(self) -> Any:
        assert self.state is not None, "reset() sets the state"
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [1]])
        return np.flatnonzero(self.state)[0]

    def agent_2_obs(self) -> Any:
        assert self.state is not None, "reset() sets the state"
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [2]])
        return np.flatnonzero(self.state)[0] + 3


class TwoStepGameWithGroupedAgents(MultiAgentEnv):
    """`TwoStepGame` with both agents in one group, `"agents"`: Tuple observations and actions
    of the two agents', and the summed reward."""

    def __init__(self, env_config: dict):
        self._agent_ids = {"agents"}
        super().__init__()
        env = TwoStepGame(env_config)
        obs_space, act_space = env.get_observation_space(0), env.get_action_space(0)
        tuple_obs_space = Tuple([obs_space, obs_space])
        tuple_act_space = Tuple([act_space, act_space])
        self.env = env.with_agent_groups(
            groups={"agents": [0, 1]},
            obs_space=tuple_obs_space,
            act_space=tuple_act_space,
        )
        self.observation_space = Dict({"agents": tuple_obs_space})
        self.action_space = Dict({"agents": tuple_act_space})

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        return self.env.reset(seed=seed, options=options)

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        return self.env.step(action_dict)
