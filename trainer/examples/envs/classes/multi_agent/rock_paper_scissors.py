"""RLlib's `RockPaperScissors`: two players play rock-paper-scissors (optionally with lizard and
Spock) for 10 simultaneous moves."""

from __future__ import annotations

import gymnasium as gym

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv


class RockPaperScissors(MultiAgentEnv):
    """Two players, `"player1"` and `"player2"`, move at the same time, 10 moves per episode.
    The winner of a move gets +1, the loser -1 (a tie 0 each). Each player observes the other
    player's last move (0 after reset). `config["sheldon_cooper_mode"]`: two more moves, lizard
    and Spock (spaces `Discrete(5)` instead of `Discrete(3)`)."""

    ROCK = 0
    PAPER = 1
    SCISSORS = 2
    LIZARD = 3
    SPOCK = 4

    #: (move of player1, move of player2) -> (reward of player1, reward of player2).
    WIN_MATRIX = {
        (ROCK, ROCK): (0, 0),
        (ROCK, PAPER): (-1, 1),
        (ROCK, SCISSORS): (1, -1),
        (PAPER, ROCK): (1, -1),
        (PAPER, PAPER): (0, 0),
        (PAPER, SCISSORS): (-1, 1),
        (SCISSORS, ROCK): (-1, 1),
        (SCISSORS, PAPER): (1, -1),
        (SCISSORS, SCISSORS): (0, 0),
        # Sheldon Cooper mode:
        (LIZARD, LIZARD): (0, 0),
        (LIZARD, SPOCK): (1, -1),  # lizard poisons Spock
        (LIZARD, ROCK): (-1, 1),  # rock crushes lizard
        (LIZARD, PAPER): (1, -1),  # lizard eats paper
        (LIZARD, SCISSORS): (-1, 1),  # scissors decapitate lizard
        (ROCK, LIZARD): (1, -1),
        (PAPER, LIZARD): (-1, 1),
        (SCISSORS, LIZARD): (1, -1),
        (SPOCK, SPOCK): (0, 0),
        (SPOCK, LIZARD): (-1, 1),
        (SPOCK, ROCK): (1, -1),  # Spock vaporizes rock
        (SPOCK, PAPER): (-1, 1),  # paper disproves Spock
        (SPOCK, SCISSORS): (1, -1),  # Spock smashes scissors
        (ROCK, SPOCK): (-1, 1),
        (PAPER, SPOCK): (1, -1),
        (SCISSORS, SPOCK): (-1, 1),
    }

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        self.agents = self.possible_agents = ["player1", "player2"]
        # The observations are the other player's last moves: the same spaces as the actions.
        num_moves = 5 if config.get("sheldon_cooper_mode") else 3
        self.sheldon_cooper_mode = num_moves == 5
        self.observation_spaces = self.action_spaces = {
            "player1": gym.spaces.Discrete(num_moves),
            "player2": gym.spaces.Discrete(num_moves),
        }
        self.last_move = None
        self.num_moves = 0

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.num_moves = 0
        # Nobody has moved yet: the first observation is 0 for both.
        return {"player1": 0, "player2": 0}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        self.num_moves += 1
        move1 = action_dict["player1"]
        move2 = action_dict["player2"]
        # Both players observe, so both act next (simultaneous moves).
        observations = {"player1": move2, "player2": move1}
        r1, r2 = self.WIN_MATRIX[move1, move2]
        rewards = {"player1": r1, "player2": r2}
        terminateds = {"__all__": self.num_moves >= 10}
        return observations, rewards, terminateds, {}, {}
