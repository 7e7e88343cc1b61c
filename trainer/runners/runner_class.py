"""Which EnvRunner class a config's runners are made of.

The chooser lives apart from both runner classes: the multi-agent runner subclasses the
single-agent one, so this module, which names both, imports them at its top without a circle.
"""

from __future__ import annotations

from typing import Any, cast

from trainer.runners.env_runner import EnvRunner
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


def env_runner_class(config: Any) -> type:
    """The class a config's EnvRunners are made of: its `env_runner_cls`, else (as RLlib's
    EnvRunnerGroup chooses) the `MultiAgentEnvRunner` for a multi-agent config and the
    `EnvRunner` otherwise."""
    if config.env_runner_cls is not None:
        return cast(type, config.env_runner_cls)
    if config.is_multi_agent:
        return MultiAgentEnvRunner
    return EnvRunner
