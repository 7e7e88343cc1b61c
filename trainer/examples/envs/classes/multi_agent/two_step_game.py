"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.two_step_game`
(the two-step matrix game): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

TwoStepGame = multi_agent_placeholder("TwoStepGame", "the two-step matrix game")
TwoStepGameWithGroupedAgents = multi_agent_placeholder(
    "TwoStepGameWithGroupedAgents", "the two-step matrix game"
)
