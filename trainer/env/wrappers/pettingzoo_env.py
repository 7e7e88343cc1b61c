"""RLlib's PettingZoo wrappers (`ray.rllib.env.wrappers.pettingzoo_env`): a PettingZoo env as a
`MultiAgentEnv`. `PettingZooEnv` wraps an AEC env (agents act in turns: each step returns the
observation of the agent to act next only), `ParallelPettingZooEnv` a parallel env (all live
agents act at once). PettingZoo itself is not imported here: the env passed in brings it
(`pip install localrl[pettingzoo]`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from trainer.env.multi_agent_env import ALL_AGENTS, MultiAgentDict, MultiAgentEnv

_StepResult = tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


def _require(env: Any, wrapper: str, kind: str, methods: tuple[str, ...], other: str) -> None:
    """A clear error when `env` lacks what a PettingZoo `kind` env has."""
    missing = [name for name in methods if not hasattr(env, name)]
    if missing:
        raise TypeError(
            f"{wrapper}(env={env!r}): needs a PettingZoo {kind} env (one with "
            f"{', '.join(methods)}); this one has no {', '.join(missing)}. {other}"
        )


class PettingZooEnv(MultiAgentEnv):
    """A PettingZoo AEC (agent-environment-cycle) env as a `MultiAgentEnv`.

    `reset()` returns the observation of `env.agent_selection` only; `step({agent: action})`
    applies the acting agent's action and returns the observation, reward, terminated,
    truncated and info of the agent to act next. Agents that are done on the way are stepped
    with `None` (as PettingZoo requires) and appear in the result with their last data.
    `"__all__"` is True once no agent is left and all returned agents are terminated
    (truncated). Each agent's spaces are PettingZoo's `observation_space(agent)` /
    `action_space(agent)` (also as one `Dict` in `observation_space` / `action_space`).
    """

    def __init__(self, env: Any):
        # (PettingZoo's order-enforcing wrapper has no agent_selection before the first reset.)
        env.reset()
        _require(
            env,
            "PettingZooEnv",
            "AEC",
            ("agent_selection", "observe", "last", "observation_space", "action_space"),
            "A parallel env goes into ParallelPettingZooEnv.",
        )
        super().__init__()
        self.env = env
        self.agents = list(env.agents)
        self.possible_agents = list(getattr(env, "possible_agents", None) or env.agents)
        self._agent_ids = set(self.possible_agents)
        self.observation_spaces = {aid: env.observation_space(aid) for aid in self.possible_agents}
        self.action_spaces = {aid: env.action_space(aid) for aid in self.possible_agents}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        info = self.env.reset(seed=seed, options=options)
        acting = self.env.agent_selection
        return {acting: self.env.observe(acting)}, info or {}

    def step(self, action: MultiAgentDict) -> _StepResult:  # type: ignore[override]
        acting = self.env.agent_selection
        if acting not in action:
            raise KeyError(
                f"PettingZooEnv.step(): agent {acting!r} is to act now, but the action dict "
                f"has only {list(action)}"
            )
        self.env.step(action[acting])
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        # Report every agent that is done before the next one to act (PettingZoo needs a
        # `step(None)` for each), then the next acting agent.
        while self.env.agents:
            agent_obs, reward, terminated, truncated, info = self.env.last()
            agent_id = self.env.agent_selection
            obs[agent_id] = agent_obs
            rewards[agent_id] = reward
            terminateds[agent_id] = terminated
            truncateds[agent_id] = truncated
            infos[agent_id] = info
            if self.env.terminations[agent_id] or self.env.truncations[agent_id]:
                self.env.step(None)
            else:
                break
        all_gone = not self.env.agents
        terminateds[ALL_AGENTS] = all_gone and all(terminateds.values())
        truncateds[ALL_AGENTS] = all_gone and all(truncateds.values())
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        self.env.close()

    def render(self) -> Any:
        return self.env.render()

    @property
    def get_sub_environments(self) -> Any:
        """The unwrapped PettingZoo env (a property, as in RLlib)."""
        return self.env.unwrapped


class ParallelPettingZooEnv(MultiAgentEnv):
    """A PettingZoo parallel env as a `MultiAgentEnv`: every live agent observes and acts each
    step. `"__all__"` of terminateds (truncateds) is True when all returned agents are
    terminated (truncated)."""

    def __init__(self, env: Any):
        _require(env, "ParallelPettingZooEnv", "parallel", ("reset", "step"), "")
        env.reset()
        _require(
            env,
            "ParallelPettingZooEnv",
            "parallel",
            ("agents", "observation_space", "action_space"),
            "An AEC env goes into PettingZooEnv.",
        )
        super().__init__()
        self.par_env = env
        self.agents = list(env.agents)
        self.possible_agents = list(getattr(env, "possible_agents", None) or env.agents)
        self._agent_ids = set(self.possible_agents)
        self.observation_space = gym.spaces.Dict(
            {aid: env.observation_space(aid) for aid in self.possible_agents}
        )
        self.action_space = gym.spaces.Dict(
            {aid: env.action_space(aid) for aid in self.possible_agents}
        )

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        obs, info = self.par_env.reset(seed=seed, options=options)
        return obs, info or {}

    def step(self, action_dict: MultiAgentDict) -> _StepResult:  # type: ignore[override]
        obs, rewards, terminateds, truncateds, infos = self.par_env.step(action_dict)
        # Copies: the env may keep the dicts it returned.
        terminateds = dict(terminateds)
        truncateds = dict(truncateds)
        terminateds[ALL_AGENTS] = all(terminateds.values())
        truncateds[ALL_AGENTS] = all(truncateds.values())
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        self.par_env.close()

    def render(self) -> Any:
        return self.par_env.render()

    @property
    def get_sub_environments(self) -> Any:
        """The unwrapped PettingZoo env (a property, as in RLlib)."""
        return self.par_env.unwrapped
