"""`AddOtherAgentsRowIndexToXYPos`: RLlib's example connector piece for the multi-agent
`DoubleRowCorridorEnv`. It is an env-to-module connector of a multi-agent run, and the
MultiAgentEnvRunner runs only per-agent observation pieces (FlattenObservations), so it
imports and raises a `ConfigError` naming the multi-agent capability when constructed."""

from __future__ import annotations

from typing import Any

from trainer.capabilities import MULTI_AGENT
from trainer.connectors.connector_v2 import ConnectorV2
from trainer.errors import ConfigError

MULTI_AGENT_UNSUPPORTED = (
    "multi-agent connector pipelines are not available yet (the MultiAgentEnvRunner runs "
    "FlattenObservations(multi_agent=True) pieces only); train without it"
)


class AddOtherAgentsRowIndexToXYPos(ConnectorV2):
    """Adds the other agent's row to each agent's observation (multi-agent only): refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise ConfigError(f"AddOtherAgentsRowIndexToXYPos: {MULTI_AGENT_UNSUPPORTED}", MULTI_AGENT)
