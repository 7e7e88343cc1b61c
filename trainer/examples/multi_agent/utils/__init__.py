"""RLlib's self-play callbacks (`ray.rllib.examples.multi_agent.utils`) and the command-line
opponent of its OpenSpiel examples."""

from __future__ import annotations

import sys
from typing import Any

from trainer.examples.multi_agent.utils.self_play_callback import SelfPlayCallback
from trainer.examples.multi_agent.utils.self_play_league_based_callback import (
    SelfPlayLeagueBasedCallback,
)


def ask_user_for_action(time_step: Any) -> int:
    """Asks on the command line for one of the player's legal actions (an OpenSpiel
    `rl_environment` time step's), until one is given."""
    player = time_step.observations["current_player"]
    legal = time_step.observations["legal_actions"][player]
    while True:
        print(f"Choose an action from {legal}:")
        sys.stdout.flush()
        try:
            choice = int(input())
        except ValueError:
            continue
        if choice in legal:
            return choice


__all__ = ["SelfPlayCallback", "SelfPlayLeagueBasedCallback", "ask_user_for_action"]
