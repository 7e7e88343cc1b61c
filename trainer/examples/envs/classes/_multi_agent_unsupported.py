"""Stand-ins for RLlib's multi-agent example envs.

Multi-agent envs do not run here yet, but RLlib's single-agent example scripts often import one at
the top (`from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole`) and use it
only when `--num-agents > 0`. So the names exist and import cleanly; constructing one raises
`NotImplementedError` naming the env and saying why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

MULTI_AGENT_UNSUPPORTED = (
    "multi-agent envs are not supported yet (one agent and one module per Algorithm here); run "
    "the single-agent variant (e.g. `--num-agents=0`), see docs/rllib-names.md, \"RLlib's tests and "
    'examples"'
)


class MultiAgentEnvPlaceholder(gym.Env):
    """Base of the stand-ins: importable and subclassable, refused when constructed. A
    `gymnasium.Env` subclass so that `config.environment(MultiAgentCartPole)` is accepted and
    the run stops on this class's own message when the env is built."""

    #: What the error message calls the env (defaults to the class name).
    rllib_name: str | None = None

    def __init__(self, *args: Any, **kwargs: Any):
        name = self.rllib_name or type(self).__name__
        raise NotImplementedError(f"{name}: {MULTI_AGENT_UNSUPPORTED}")


def multi_agent_placeholder(name: str, doc: str) -> type[MultiAgentEnvPlaceholder]:
    """A stand-in class called `name` for RLlib's multi-agent env class of that name."""
    return type(
        name,
        (MultiAgentEnvPlaceholder,),
        {
            "__doc__": f"RLlib's `{name}` ({doc}); {MULTI_AGENT_UNSUPPORTED}.",
            "rllib_name": name,
        },
    )


def make_multi_agent(
    env_name_or_creator: str | Callable[[Any], Any],
) -> type[MultiAgentEnvPlaceholder]:
    """RLlib's `make_multi_agent`: returns a class, as RLlib's does (so module-level
    `MultiAgentCartPole = make_multi_agent("CartPole-v1")` imports), whose construction raises
    `NotImplementedError`."""
    label = (
        env_name_or_creator
        if isinstance(env_name_or_creator, str)
        else getattr(env_name_or_creator, "__name__", repr(env_name_or_creator))
    )
    return type(
        "MultiAgentEnvFromSingleAgent",
        (MultiAgentEnvPlaceholder,),
        {
            "__doc__": f"RLlib's make_multi_agent({label!r}); {MULTI_AGENT_UNSUPPORTED}.",
            "rllib_name": f"make_multi_agent({label!r})",
        },
    )


def named_multi_agent_env(
    name: str, env_name_or_creator: str | Callable[[Any], Any]
) -> type[MultiAgentEnvPlaceholder]:
    """`make_multi_agent(env_name_or_creator)` as a module-level class called `name` (RLlib's
    `MultiAgentCartPole = make_multi_agent("CartPole-v1")`), whose error names it."""
    cls = make_multi_agent(env_name_or_creator)
    cls.__name__ = cls.__qualname__ = name
    cls.rllib_name = f"{name} ({cls.rllib_name})"
    return cls
