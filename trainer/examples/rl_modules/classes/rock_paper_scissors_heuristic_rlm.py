"""RLlib's `ray.rllib.examples.rl_modules.classes.rock_paper_scissors_heuristic_rlm`: two
heuristic (not trainable) numpy modules for RLlib's RockPaperScissors env, whose observation
is the opponent's previous move (0 rock, 1 paper, 2 scissors; 3 right after a reset) and whose
actions are 0-2. The same code as RLlib's, imports changed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns, override
from trainer.core.rl_module import RLModule


class AlwaysSameHeuristicRLM(RLModule):
    """In rock-paper-scissors, always chooses the same action within an episode.

    The first move is random, all the following moves are the same as the first one.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._actions_per_vector_idx: defaultdict[int, int] = defaultdict(int)

    @override(RLModule)
    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        ret = []
        # The obs is the opponent's previous move (0-2); 3 means there was none yet (the
        # episode just started).
        for i, obs in enumerate(batch[Columns.OBS]):
            if obs == 3:
                self._actions_per_vector_idx[i] = np.random.choice([0, 1, 2])
            ret.append(self._actions_per_vector_idx[i])
        return {Columns.ACTIONS: np.array(ret)}

    @override(RLModule)
    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)

    @override(RLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(
            "AlwaysSameHeuristicRLM is not trainable! Make sure you do NOT include it "
            "in your `config.multi_agent(policies_to_train={...})` set."
        )


class BeatLastHeuristicRLM(RLModule):
    """In rock-paper-scissors, always acts such that it beats the opponent's previous move.

    The first move is random. For example, after the opponent played rock (and this module a
    random move), the next move is paper (to beat rock).
    """

    @override(RLModule)
    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The action that beats the opponent's previous action (this agent's observation):
        0 rock, 1 paper, 2 scissors; observation 3 (after a reset) gets a random action."""
        return {
            Columns.ACTIONS: np.array(
                [self._pick_single_action(obs) for obs in batch[Columns.OBS]]
            ),
        }

    @override(RLModule)
    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)

    @override(RLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(
            "BeatLastHeuristicRLM is not trainable! Make sure you do NOT include it in "
            "your `config.multi_agent(policies_to_train={...})` set."
        )

    @staticmethod
    def _pick_single_action(prev_opponent_obs: Any) -> Any:
        if prev_opponent_obs == 0:
            return 1
        elif prev_opponent_obs == 1:
            return 2
        elif prev_opponent_obs == 2:
            return 0
        else:
            return np.random.choice([0, 1, 2])
