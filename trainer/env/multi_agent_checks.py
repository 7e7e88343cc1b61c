"""RLlib's multi-agent env checker (`ray.rllib.utils.pre_checks.env`):
`check_multiagent_environments(env)` resets the env, steps it once with actions sampled from the
agents' action spaces and checks what it returns, raising a `ValueError` that names the method,
the agent, the key and what is allowed.

Checked: the env is a `MultiAgentEnv`; `reset()` returns `(obs, infos)` and `step()` the five
dicts `(obs, rewards, terminateds, truncateds, infos)`; their keys are agents of the env
(`agents` or `possible_agents`) or `"__all__"` (infos: also `"__common__"`); every observation
is in its agent's observation space (the offending part of a Dict/Tuple observation named);
every agent with an observation has an action space; rewards are int or float scalars (not
bool); terminateds and truncateds are bools and terminateds has `"__all__"` (truncateds may
leave it out); infos are dicts.
"""

from __future__ import annotations

import logging
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.core.spaces import space_takes
from trainer.env.multi_agent_env import ALL_AGENTS, MultiAgentEnv

logger = logging.getLogger(__name__)

#: The infos key for data about all (or no) agents.
COMMON_INFOS = "__common__"

# Each error starts with RLlib's own sentence (so that what matches RLlib's messages matches
# these), then names the env's method, the agent, the key and what is allowed.
_OLD_API = "Your environment does not abide to the new gymnasium-style API!"


def check_multiagent_environments(env: MultiAgentEnv) -> None:
    """Resets and steps `env` once and raises a `ValueError` on the first thing RLlib's
    multi-agent EnvRunner could not use (see the module docstring)."""
    if not isinstance(env, MultiAgentEnv):
        raise ValueError(
            f"The passed env is not a MultiAgentEnv: check_multiagent_environments(env={env!r})"
            f" got a {type(env).__name__}; it checks subclasses of "
            "trainer.env.multi_agent_env.MultiAgentEnv (RLlib's "
            "ray.rllib.env.multi_agent_env.MultiAgentEnv)"
        )
    if not hasattr(env, "_agent_ids"):
        # As RLlib: a warning only, and the other checks are skipped.
        logger.warning(
            "Your MultiAgentEnv %s does not have some or all of the needed base-class "
            "attributes! Make sure you call `super().__init__()` from within your "
            "MultiAgentEnv's constructor.",
            env,
        )
        return
    checker = _EnvChecker(env)
    reset_obs = checker.check_reset()
    checker.check_step(reset_obs)


class _EnvChecker:
    """The checks of one env's `reset()` and `step()` results."""

    def __init__(self, env: MultiAgentEnv, *, strict: bool = True):
        self.env = env
        self.name = type(env).__name__
        #: RLlib's checker's rules that the EnvRunner itself does not need (dict keys that
        #: are the env's declared agents, "__all__" in terminateds): off to explain a
        #: runtime failure.
        self.strict = strict

    def agent_ids(self) -> list[Any]:
        """The agents the env may name (now or ever)."""
        ids = list(self.env.agents)
        ids += [a for a in self.env.possible_agents if a not in ids]
        return ids

    def check_reset(self) -> dict:
        try:
            result = self.env.reset(seed=42, options={})
        except Exception as error:
            raise ValueError(
                f"{_OLD_API} In particular, the `reset()` method seems to be faulty: "
                f"{self.name}.reset(seed=42, options={{}}) raised {type(error).__name__}: "
                f"{error} (a MultiAgentEnv's reset takes the keyword arguments seed and options "
                "and returns (observations, infos))"
            ) from error
        return self.check_reset_result(result)

    def check_reset_result(self, result: Any) -> dict:
        """Checks what `reset()` returned; returns the observations."""
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ValueError(
                f"{_OLD_API} In particular, the `reset()` method seems to be faulty: "
                f"{self.name}.reset() returned {_short(result)}; it must return a tuple "
                "(observations, infos) of two dicts keyed by agent id"
            )
        obs, infos = result
        self._check_dict(obs, "reset()", "reset()", "observations")
        self._check_dict(infos, "reset()", "reset(), infos", "infos", allow_common=True)
        self._check_observations(obs, "reset()")
        self._check_infos(infos, "reset()")
        return obs

    def check_step(self, reset_obs: dict) -> None:
        actions = {}
        for agent_id in reset_obs:
            space = self.env.get_action_space(agent_id)
            if not isinstance(space, gym.Space):
                raise ValueError(
                    f"{self.name}: agent {agent_id!r} has an observation from reset() but "
                    f"get_action_space({agent_id!r}) gives {space!r}, not a gymnasium space; set "
                    "action_spaces (a dict by agent id) or override get_action_space(agent_id)"
                )
            actions[agent_id] = space.sample()
        try:
            result = self.env.step(actions)
        except Exception as error:
            raise ValueError(
                f"{_OLD_API} In particular, the `step()` method seems to be faulty: "
                f"{self.name}.step({_short(actions)}) raised {type(error).__name__}: {error} "
                "(the actions were sampled from the action spaces of the agents that observed "
                "in reset(); only those agents act next)"
            ) from error
        self.check_step_result(result)

    def check_step_result(self, result: Any) -> None:
        """Checks what `step()` returned."""
        if not (isinstance(result, tuple) and len(result) == 5):
            raise ValueError(
                f"{_OLD_API} In particular, the `step()` method seems to be faulty: "
                f"{self.name}.step() returned {_short(result)}; it must return a tuple of five "
                "dicts (observations, rewards, terminateds, truncateds, infos) keyed by agent id"
            )
        obs, rewards, terminateds, truncateds, infos = result
        self._check_dict(obs, "step()", "step, next_obs", "observations")
        self._check_dict(rewards, "step()", "step, reward", "rewards")
        self._check_dict(terminateds, "step()", "step, done", "terminateds")
        self._check_dict(truncateds, "step()", "step, truncated", "truncateds")
        self._check_dict(infos, "step()", "step, info", "infos", allow_common=True)
        self._check_observations(obs, "step()")
        for agent_id, reward in rewards.items():
            if agent_id != ALL_AGENTS and not _is_number(reward):
                raise ValueError(
                    "Your step function must return rewards that are integer or float: "
                    f"{self.name}.step(): the reward of agent {agent_id!r} is {reward!r} "
                    f"({type(reward).__name__}); rewards must be int or float scalars (not bool)"
                )
        if self.strict and ALL_AGENTS not in terminateds:
            raise ValueError(
                f"{self.name}.step(): terminateds {terminateds!r} has no {ALL_AGENTS!r} key; it "
                f"must say whether the episode ended for all agents ({ALL_AGENTS!r}: True or "
                f"False; truncateds may leave {ALL_AGENTS!r} out)"
            )
        for what, flags in (("terminateds", terminateds), ("truncateds", truncateds)):
            for agent_id, flag in flags.items():
                if not isinstance(flag, (bool, np.bool_)):
                    raise ValueError(
                        f"Your step function must return `{what}` that are boolean: "
                        f"{self.name}.step(): {what}[{agent_id!r}] is {flag!r} "
                        f"({type(flag).__name__}); it must be a bool"
                    )
        self._check_infos(infos, "step()")

    def _check_dict(
        self,
        element: Any,
        method: str,
        label: str,
        what: str,
        allow_common: bool = False,
    ) -> None:
        """`element` is a dict whose keys are the env's agents, or `"__all__"` (in any of the
        dicts, as RLlib allows; its episodes ignore the key outside terminateds and truncateds),
        or `"__common__"` (infos)."""
        if not isinstance(element, dict):
            raise ValueError(
                f"The element returned by {label} is not a MultiAgentDict. Instead, it is of "
                f"type: {type(element).__name__} ({self.name}.{method}: the {what} are "
                f"{_short(element)}; they must be a dict keyed by agent id)"
            )
        if not self.strict:
            return
        allowed = self.agent_ids()
        specials = [ALL_AGENTS] + ([COMMON_INFOS] if allow_common else [])
        for key in element:
            if key not in allowed and key not in specials:
                raise ValueError(
                    f"The element returned by {label} has agent_ids that are not the names of "
                    f"the agents in the env: {self.name}.{method}: the {what} have key "
                    f"{key!r}, which is no agent of the env; allowed: the env's agents "
                    f"{allowed} and {specials}. Set `agents` (the agents in the env now) and "
                    "`possible_agents` (every agent that may ever appear) in the env's "
                    "constructor"
                )

    def _check_observations(self, obs: dict, method: str) -> None:
        for agent_id, value in obs.items():
            if agent_id == ALL_AGENTS:
                continue
            space = self.env.get_observation_space(agent_id)
            if not isinstance(space, gym.Space):
                raise ValueError(
                    f"{self.name}: get_observation_space({agent_id!r}) gives {space!r}, not a "
                    "gymnasium space; set observation_spaces (a dict by agent id) or override "
                    "get_observation_space(agent_id)"
                )
            if space_takes(space, value):
                continue
            path, sub_space, sub_value = _offending_part(space, value)
            where = f" (at {path})" if path else ""
            raise ValueError(
                f"The observation collected from env.{method.rstrip('()')} was not contained "
                f"within your env's observation space: {self.name}.{method}: the observation "
                f"of agent {agent_id!r} is not in its "
                f"observation space{where}: {_short(sub_value)} ({_type_of(sub_value)}) is not "
                f"in {sub_space} (dtype {getattr(sub_space, 'dtype', None)}): a value out of "
                "bounds, of another shape or not a number fails (another numeric dtype is cast)"
            )

    def _check_infos(self, infos: dict, method: str) -> None:
        for agent_id, info in infos.items():
            if agent_id == ALL_AGENTS:
                continue
            if not isinstance(info, dict):
                raise ValueError(
                    f"Your step function must return infos that are a dict: {self.name}."
                    f"{method}: the info of {agent_id!r} is {_short(info)} "
                    f"({type(info).__name__}); infos must be dicts"
                )


def result_problem(env: Any, result: Any, method: str) -> str | None:
    """What is wrong with `result`, the `method` ("reset()" or "step()") result of the
    MultiAgentEnv `env`, or None: RLlib's checker's words, for a failure while the EnvRunner took
    the result in (the error path only; sampling checks nothing per step)."""
    checker = _EnvChecker(env, strict=False)
    try:
        if method == "reset()":
            checker.check_reset_result(result)
        else:
            checker.check_step_result(result)
    except ValueError as error:
        return str(error)
    except Exception:  # the env's own spaces or methods fail too: nothing clearer to say
        return None
    return None


def _offending_part(space: gym.Space, value: Any, path: str = "") -> tuple[str, gym.Space, Any]:
    """The innermost part of a Dict/Tuple space that `value` breaks: (path, space, value)."""
    if isinstance(space, gym.spaces.Dict) and isinstance(value, dict):
        for key, sub_space in space.spaces.items():
            if key not in value:
                return f"{path}[{key!r}] (missing)", sub_space, None
            if not sub_space.contains(value[key]):
                return _offending_part(sub_space, value[key], f"{path}[{key!r}]")
    if isinstance(space, gym.spaces.Tuple) and isinstance(value, (tuple, list)):
        if len(value) == len(space.spaces):
            for i, (sub_space, sub_value) in enumerate(zip(space.spaces, value, strict=True)):
                if not sub_space.contains(sub_value):
                    return _offending_part(sub_space, sub_value, f"{path}[{i}]")
    return path, space, value


def _is_number(value: Any) -> bool:
    """An int or float scalar (a numpy one or a 0-d array too), not a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.shape == () and np.issubdtype(value.dtype, np.number)
    return isinstance(value, (int, float, np.integer, np.floating))


def _type_of(value: Any) -> str:
    return str(value.dtype) if hasattr(value, "dtype") else type(value).__name__


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["check_multiagent_environments"]
