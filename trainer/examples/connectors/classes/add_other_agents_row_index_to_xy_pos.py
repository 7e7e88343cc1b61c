"""`AddOtherAgentsRowIndexToXYPos`: RLlib's example connector piece for the multi-agent
`DoubleRowCorridorEnv`. It works on multi-agent episodes, which no EnvRunner samples yet, so it
imports and raises `NotImplementedError` when constructed."""

from __future__ import annotations

from typing import Any

from trainer.connectors.connector_v2 import ConnectorV2

MULTI_AGENT_UNSUPPORTED = (
    "multi-agent training is not available yet (no EnvRunner samples multi-agent episodes); "
    "run the single-agent variant (e.g. `--num-agents=0`)"
)


class AddOtherAgentsRowIndexToXYPos(ConnectorV2):
    """Adds the other agent's row to each agent's observation (multi-agent only): refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(f"AddOtherAgentsRowIndexToXYPos: {MULTI_AGENT_UNSUPPORTED}")
