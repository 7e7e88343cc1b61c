"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.guess_the_number_game`
(two players guess a number): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

GuessTheNumberGame = multi_agent_placeholder("GuessTheNumberGame", "two players guess a number")
