"""RLlib's multi-agent example envs, by name only: multi-agent envs do not run here, and these
say so when used (not at import, so a script that imports them and runs single-agent works)."""

from __future__ import annotations

from typing import Any

MULTI_AGENT_UNSUPPORTED = ("multi-agent envs do not run here (one agent, one module per "
                           "Algorithm); see the README, \"RLlib's tests and examples\"")


def make_multi_agent(env_name_or_creator: Any) -> Any:
    """RLlib's wrapper that turns a single-agent env into a multi-agent one: refused here."""
    raise NotImplementedError(f"make_multi_agent({env_name_or_creator!r}): "
                              f"{MULTI_AGENT_UNSUPPORTED}")


class MultiAgentCartPole:
    """RLlib's multi-agent CartPole: refused at construction."""

    def __init__(self, config: Any = None):
        raise NotImplementedError(f"MultiAgentCartPole({config!r}): {MULTI_AGENT_UNSUPPORTED}")
