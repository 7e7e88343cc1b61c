"""`AddOtherAgentsRowIndexToXYPos`: RLlib's example preprocessor for the two-agent
`DoubleRowCorridorEnv`, whose agents observe their own (row, column) position (a Box of two
ints). Each agent also needs the other agent's row to find it, so this piece rewrites a step's
observations into:

- `agent_0`: `{"agent": its position as one index (row * corridor length + column),
  "other_agent_row": agent_1's row, or 2 once agent_1 is done}` (a Dict of two Discretes);
- `agent_1`: `[row, column, agent_0's row (2 once done)]` as float32.

A `MultiAgentObservationPreprocessor`: the MultiAgentEnvRunner applies it to each step's
observations as they leave a sub-env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.env_to_module import MultiAgentObservationPreprocessor

#: The row an agent that is done is reported in.
DONE_ROW = 2


class AddOtherAgentsRowIndexToXYPos(MultiAgentObservationPreprocessor):
    """See the module docstring."""

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if input_observation_space is None:
            return None
        if not isinstance(input_observation_space, gym.spaces.Dict) or not {
            "agent_0",
            "agent_1",
        } <= set(input_observation_space.spaces):
            raise ValueError(
                "AddOtherAgentsRowIndexToXYPos runs on DoubleRowCorridorEnv (agents 'agent_0' "
                f"and 'agent_1'); the observation space is {input_observation_space}"
            )
        position = input_observation_space.spaces["agent_0"]
        assert isinstance(position, gym.spaces.Box)
        #: The corridor's length: the largest column index (Box bounds are inclusive) + 1.
        self.corridor_length = int(position.high[1]) + 1
        return gym.spaces.Dict(
            {
                "agent_0": gym.spaces.Dict(
                    {
                        "agent": gym.spaces.Discrete(2 * self.corridor_length),
                        "other_agent_row": gym.spaces.Discrete(DONE_ROW + 1),
                    }
                ),
                "agent_1": gym.spaces.Box(0.0, float(self.corridor_length - 1), (3,), np.float32),
            }
        )

    def preprocess(self, observations: dict, episode: Any) -> dict:
        row_0 = int(observations["agent_0"][0]) if "agent_0" in observations else DONE_ROW
        row_1 = int(observations["agent_1"][0]) if "agent_1" in observations else DONE_ROW
        rewritten: dict[str, Any] = {}
        if "agent_0" in observations:
            row, column = (int(v) for v in observations["agent_0"][:2])
            rewritten["agent_0"] = {
                "agent": row * self.corridor_length + column,
                "other_agent_row": row_1,
            }
        if "agent_1" in observations:
            position = [float(v) for v in observations["agent_1"][:2]]
            rewritten["agent_1"] = np.array([*position, row_0], dtype=np.float32)
        return rewritten
