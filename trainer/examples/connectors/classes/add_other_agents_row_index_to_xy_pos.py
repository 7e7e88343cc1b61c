"""`AddOtherAgentsRowIndexToXYPos`: RLlib's example connector piece for the multi-agent
`DoubleRowCorridorEnv`. Multi-agent envs are not supported yet, so it imports and raises
`NotImplementedError` when constructed."""

from __future__ import annotations

from typing import Any

from trainer.connectors.connector_v2 import ConnectorV2
from trainer.examples.envs.classes._multi_agent_unsupported import MULTI_AGENT_UNSUPPORTED


class AddOtherAgentsRowIndexToXYPos(ConnectorV2):
    """Adds the other agent's row to each agent's observation (multi-agent only): refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(f"AddOtherAgentsRowIndexToXYPos: {MULTI_AGENT_UNSUPPORTED}")
