"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.double_row_corridor_env`
(two agents walk a two-row corridor): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

DoubleRowCorridorEnv = multi_agent_placeholder(
    "DoubleRowCorridorEnv", "two agents walk a two-row corridor"
)
