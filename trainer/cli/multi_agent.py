"""Multi-agent envs on the command line: `--env MultiAgentCartPole` (RLlib's multi-agent example
envs by class name) and `--env pettingzoo.classic.rps_v2` (a PettingZoo env module: its
`parallel_env()` through `ParallelPettingZooEnv`, else its `env()` through `PettingZooEnv`).

Such a name is registered (`register_env`) under itself before the config takes it. A
multi-agent env given without `multi_agent()` settings (a config file may give them) gets one
policy per agent, as RLlib's independent-learning examples do: `p0`, `p1`, ... for agents
numbered 0, 1, ... (RLlib's MultiAgentCartPole examples), else the agent's own id.
"""

from __future__ import annotations

import importlib
from typing import Any

from trainer.cli.extras import PETTINGZOO, require
from trainer.env.envs import EnvContext, make_env_creator, register_env
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

#: Where RLlib's multi-agent example envs live here (by class name).
EXAMPLES_MODULE = "trainer.examples.envs.classes.multi_agent"
#: The prefix of a PettingZoo env module given as `--env`.
PETTINGZOO_PREFIX = "pettingzoo."


def agent_index_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Agent `i` acts with policy `p{i}` (RLlib's multi-agent CartPole examples)."""
    return f"p{agent_id}"


def agent_own_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Each agent acts with the policy of its own id (independent learning)."""
    return str(agent_id)


def example_env_class(name: str) -> Any:
    """RLlib's multi-agent example env class called `name`, or None."""
    module = importlib.import_module(EXAMPLES_MODULE)
    candidate = getattr(module, name, None)
    return (
        candidate if isinstance(candidate, type) and issubclass(candidate, MultiAgentEnv) else None
    )


def _pettingzoo_creator(module_path: str) -> Any:
    """The env creator of a PettingZoo env module (raises ValueError naming it, MissingExtra
    without PettingZoo)."""
    require(PETTINGZOO, PETTINGZOO, f"--env {module_path}")
    try:
        module = importlib.import_module(module_path)
    except ImportError as error:
        raise ValueError(
            f"argument --env: {module_path!r} is not an importable PettingZoo env module ({error})"
        ) from None
    from functools import partial

    if hasattr(module, "parallel_env"):
        return partial(_make_parallel, module.parallel_env)
    if hasattr(module, "env"):
        return partial(_make_aec, module.env)
    raise ValueError(
        f"argument --env: the module {module_path!r} has neither parallel_env() nor env()"
    )


def _make_parallel(factory: Any, env_config: Any) -> Any:
    return ParallelPettingZooEnv(factory(**dict(env_config or {})))


def _make_aec(factory: Any, env_config: Any) -> Any:
    return PettingZooEnv(factory(**dict(env_config or {})))


def register_named_env(name: Any) -> bool:
    """Registers `name` when it names one of RLlib's multi-agent example envs or a PettingZoo
    env module; whether it did."""
    if not isinstance(name, str):
        return False
    if name.startswith(PETTINGZOO_PREFIX):
        register_env(name, _pettingzoo_creator(name))
        return True
    env_class = example_env_class(name) if name.isidentifier() else None
    if env_class is None:
        return False
    register_env(name, env_class)
    return True


def add_default_policies(config: Any) -> None:
    """One policy per agent for a multi-agent env configured without policies (see the
    module docstring); nothing for a single-agent env or a config that has its own."""
    if config.is_multi_agent:
        return
    env = make_env_creator(config.env)(EnvContext(config.env_config))
    try:
        unwrapped = getattr(env, "unwrapped", env)
        if not isinstance(unwrapped, MultiAgentEnv):
            return
        agents = list(unwrapped.possible_agents or unwrapped.agents)
    finally:
        env.close()
    numbered = all(isinstance(agent, int) for agent in agents)
    mapping = agent_index_policy if numbered else agent_own_policy
    config.multi_agent(policies={mapping(agent) for agent in agents}, policy_mapping_fn=mapping)


def register_checkpoint_env(checkpoint: Any) -> None:
    """Registers the env a checkpoint was trained on when it is one of the names
    `register_named_env` knows (before its config is rebuilt: the config names the env)."""
    env = checkpoint.metadata.get("env")
    if isinstance(env, str):
        try:
            register_named_env(env)
        except ValueError:
            pass  # not importable here: the config's rebuild names the env
