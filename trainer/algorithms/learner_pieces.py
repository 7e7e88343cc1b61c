"""A config's learner connector pieces (`training(learner_connector=...)`) as the algorithms
run them: over each train batch's episodes, before the learner makes its batch from them.

    sampled episodes -> the pieces, in order (each may rewrite the episodes: their rewards, ...)
                     -> the learner's own batch (RLlib's default learner pieces are its code)

A piece that writes batch columns is refused, naming them, unless it writes a column the
episodes hold (`ConnectorV2.add_n_batch_items` for rewards writes into the episode). The
pipeline is built once for the modules' spaces and kept on the learner as RLlib's
`learner._learner_connector`, where RLlib code reaches it. In multi-agent configs the pieces
get the MultiAgentEpisodes and reach each agent's episode with `single_agent_episode_iterator`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.errors import ConfigError


def build_learner_pieces(config: Any, spaces: Any, learner: Any) -> ConnectorPipelineV2 | None:
    """The config's learner pipeline for the module's `spaces` (None without one), also set as
    `learner._learner_connector`. A multi-agent config's pieces get the modules' spaces as
    Dicts by module id (they run over the MultiAgentEpisodes, each agent's episode through
    `single_agent_episode_iterator`)."""
    if config.learner_connector is None:
        return None
    if config.is_multi_agent:
        observation_space = gym.spaces.Dict(
            {str(module_id): spaces[module_id][0] for module_id in spaces}
        )
        action_space = gym.spaces.Dict(
            {str(module_id): spaces[module_id][1] for module_id in spaces}
        )
    else:
        observation_space, action_space = spaces.observation_space(), spaces.action_space()
    pipeline = config.build_learner_connector(observation_space, action_space)
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
