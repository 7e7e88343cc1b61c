"""`AddOtherAgentsRowIndexToXYPos`: RLlib's example connector piece for the multi-agent
`DoubleRowCorridorEnv`. It is an env-to-module connector of a multi-agent run, and the
MultiAgentEnvRunner runs no connector pipeline yet, so it imports and raises
`NotImplementedError` when constructed."""

from __future__ import annotations

from typing import Any

from trainer.connectors.connector_v2 import ConnectorV2

MULTI_AGENT_UNSUPPORTED = (
    "multi-agent connector pipelines are not available yet (the MultiAgentEnvRunner runs "
    "without env-to-module connectors); train without it"
)


class AddOtherAgentsRowIndexToXYPos(ConnectorV2):
    """Adds the other agent's row to each agent's observation (multi-agent only): refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(f"AddOtherAgentsRowIndexToXYPos: {MULTI_AGENT_UNSUPPORTED}")
