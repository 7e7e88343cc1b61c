"""RLlib's `GuessTheNumberGame`: agent 0 picks a number, agent 1 guesses it by asking
lower/higher/equal questions (agents acting in turns)."""

from __future__ import annotations

import gymnasium as gym

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv


class GuessTheNumberGame(MultiAgentEnv):
    """Agent 0 acts once, after reset: the second part of its `MultiDiscrete([3, max_number])`
    action is the number. Then agent 1 acts every step, asking `(direction, number)`: 0 "is
    `number` lower?", 1 "higher?", 2 "equal?". A lower/higher question is answered by agent
    1's reward (1 if true, else 0) and pays agent 0 1 for the wasted step; a right "equal"
    guess pays agent 1 100 and agent 0 -100 and ends the episode. After `max_steps` (20)
    guesses the episode is truncated, and agent 0 gets 100 if the number was not guessed.
    Observations are always 0 (`Discrete(2)`). `config`: `max_number` (3), `max_steps` (20).
    """

    MAX_NUMBER = 3
    MAX_STEPS = 20

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        self._agent_ids = {0, 1}
        # RLlib sets only `_agent_ids` (after the base class read it): the agents here too.
        self.agents = [0, 1]
        self.possible_agents = [0, 1]
        self.max_number = config.get("max_number", self.MAX_NUMBER)
        self.max_steps = config.get("max_steps", self.MAX_STEPS)
        self._number: int | None = None
        self._step = 0
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([3, self.max_number])

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self._step = 0
        self._number = None
        # Agent 0 picks a number first; what it observes does not matter.
        return {0: 0}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        agent_0_action = action_dict.get(0)
        if agent_0_action is not None:
            # The number is the action's second part; agent 1 guesses from now on.
            self._number = agent_0_action[1]
            return {1: 0}, {0: 0}, {0: False, "__all__": False}, {0: False, "__all__": False}, {}
        if self._number is None:
            raise ValueError(
                "GuessTheNumberGame: agent 0 has not picked a number yet (step() needs agent "
                "0's action first after reset())"
            )
        direction, number = action_dict[1]
        obs = {1: 0}  # agent 1 keeps guessing; agent 0 never acts again this episode
        guessed_correctly = False
        terminated = {1: False, "__all__": False}
        truncated = {1: False, "__all__": False}
        if direction == 0:  # "is it lower than number?"
            reward = {1: int(number > self._number), 0: 1}
        elif direction == 1:  # "is it higher than number?"
            reward = {1: int(number < self._number), 0: 1}
        else:  # "is it number?"
            guessed_correctly = bool(number == self._number)
            reward = {1: guessed_correctly * 100, 0: guessed_correctly * -100}
            terminated = {1: guessed_correctly, "__all__": guessed_correctly}
        self._step += 1
        if self._step >= self.max_steps:
            truncated["__all__"] = True
            if not guessed_correctly:
                reward[0] = 100  # agent 0 wins
        return obs, reward, terminated, truncated, {}
