"""RLlib's env-to-module connectors (`ray.rllib.connectors`): pieces that turn what the env
returned into what the module sees.

Data flow in an EnvRunner, each env step:

    env.step() -> each sub-env's observation is appended to its episode (raw)
               -> on_episode_step callbacks (they see the raw observation)
               -> the pipeline's pieces, in order, rewrite each episode's last observation
                  (`episode.set_observations(new_data=..., at_indices=-1)`)
               -> on_episode_end callbacks for finished episodes
               -> the module acts on the episodes' last observations

So the episodes hold what the module saw, and the learner trains on exactly that (RLlib's
`MeanStdFilter` writes into the episodes the same way). Stateful pieces (`MeanStdFilter`) keep
statistics per runner; the `EnvRunnerGroup` merges them after each training step and sends the
merged state with the next weights (see `ConnectorPipelineV2.merge_states`).
"""

from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2, build_pipeline
from trainer.connectors.env_to_module import (
    EnvToModulePipeline,
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    MultiAgentObservationPreprocessor,
    ObservationPreprocessor,
    PrevActionsPrevRewards,
    SingleAgentObservationPreprocessor,
)

__all__ = [
    "ConnectorPipelineV2",
    "ConnectorV2",
    "EnvToModulePipeline",
    "ObservationPreprocessor",
    "MultiAgentObservationPreprocessor",
    "SingleAgentObservationPreprocessor",
    "FlattenObservations",
    "FrameStackingEnvToModule",
    "MeanStdFilter",
    "PrevActionsPrevRewards",
    "build_pipeline",
]
