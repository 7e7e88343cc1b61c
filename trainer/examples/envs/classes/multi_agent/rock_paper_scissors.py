"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.rock_paper_scissors`
(two players play rock-paper-scissors): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

RockPaperScissors = multi_agent_placeholder(
    "RockPaperScissors", "two players play rock-paper-scissors"
)
