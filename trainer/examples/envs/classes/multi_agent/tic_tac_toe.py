"""RLlib's `ray.rllib.examples.envs.classes.multi_agent.tic_tac_toe`
(two players play tic-tac-toe): multi-agent, so its classes import and raise
`NotImplementedError` when constructed."""

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

TicTacToe = multi_agent_placeholder("TicTacToe", "two players play tic-tac-toe")
