"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.pettingzoo_connect4`
(PettingZoo's connect four): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

MultiAgentConnect4 = multi_agent_placeholder("MultiAgentConnect4", "PettingZoo's connect four")
