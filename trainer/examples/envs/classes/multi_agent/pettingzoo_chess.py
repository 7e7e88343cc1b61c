"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.pettingzoo_chess`
(PettingZoo's chess): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

MultiAgentChess = multi_agent_placeholder("MultiAgentChess", "PettingZoo's chess")
