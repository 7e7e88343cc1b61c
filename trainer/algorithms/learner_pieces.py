"""A config's learner connector pieces (`training(learner_connector=...)`) as the algorithms
run them: over each train batch's episodes, before the learner makes its batch from them.

    sampled episodes -> the pieces, in order (each may rewrite the episodes: their rewards, ...)
                     -> the learner's own batch (RLlib's default learner pieces are its code)

A piece that writes batch columns is refused, naming them, unless it writes a column the
episodes hold (`ConnectorV2.add_n_batch_items` for rewards writes into the episode). The
pipeline is built once for the module's spaces and kept on the learner as RLlib's
`learner._learner_connector`, where RLlib code reaches it (single-agent configs).
"""

from __future__ import annotations

from typing import Any

from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.errors import ConfigError


def build_learner_pieces(config: Any, spaces: Any, learner: Any) -> ConnectorPipelineV2 | None:
    """The config's learner pipeline for the module's `spaces` (None without one), also set as
    `learner._learner_connector`."""
    if config.learner_connector is None or config.is_multi_agent:
        return None  # (validate(): multi-agent configs take pieces that need not run)
    pipeline = config.build_learner_connector(spaces.observation_space(), spaces.action_space())
    learner._learner_connector = pipeline
    return pipeline


def run_learner_pieces(
    pipeline: ConnectorPipelineV2, rl_module: Any, episodes: list, metrics: Any = None
) -> None:
    """Runs the pieces over `episodes`; raises ConfigError when they wrote batch columns."""
    batch = pipeline(
        rl_module=rl_module,
        batch={},
        episodes=episodes,
        explore=False,
        shared_data={},
        metrics=metrics,
    )
    if batch:
        raise ConfigError(
            f"training(learner_connector=...): the pieces "
            f"{[type(piece).__name__ for piece in pipeline.connectors]} wrote the batch "
            f"columns {sorted(batch)}; learner pieces here rewrite the episodes, from which "
            "the learner makes its batch (write into the episodes instead, e.g. "
            "episode.set_rewards(...))"
        )
