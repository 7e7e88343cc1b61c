"""OpenSpiel games as multi-agent envs: RLlib's `OpenSpielEnv` (the `openspiel` extra).

Agents are the players' indices (0, 1, ...). Observations are each player's
`observation_tensor` as float32 vectors; actions are `Discrete(num_distinct_actions)`.

- Sequential games (connect_four, tic_tac_toe): only the player to move observes and acts. An
  illegal action is replaced by a random legal one and costs that player 0.1 (RLlib's
  behaviour: the env publishes no action mask; here the move is checked before OpenSpiel
  sees it, so OpenSpiel prints no refusal).
- Simultaneous games (markov_soccer): every player observes and acts each step.
- Chance nodes are resolved by sampling their outcomes, from a generator seeded by `reset`.

Rewards are the players' returns so far, as RLlib computes them (`state.returns()`); the episode
terminates for everyone when the game ends.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.util.rng import generator_state, set_generator_state


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError as error:
        raise ModuleNotFoundError(
            f"OpenSpielEnv needs OpenSpiel ({error}); install it with "
            "pip install -e '.[openspiel]' (or pip install open_spiel)",
            name="pyspiel",
        ) from None
    return pyspiel


class OpenSpielEnv(MultiAgentEnv):
    """An OpenSpiel game (`pyspiel.load_game(name)`) as a `MultiAgentEnv` (see the module
    doc)."""

    def __init__(self, env: Any):
        super().__init__()
        _pyspiel()
        self.env = env
        self.agents = self.possible_agents = list(range(env.num_players()))
        self.type = env.get_type()
        self._sequential = str(self.type.dynamics) == "Dynamics.SEQUENTIAL"
        self.state: Any = None
        self._rng = np.random.default_rng()
        size = (env.observation_tensor_size(),)
        self.observation_space = gym.spaces.Dict(
            {aid: gym.spaces.Box(-np.inf, np.inf, size, np.float32) for aid in self.agents}
        )
        self.action_space = gym.spaces.Dict(
            {aid: gym.spaces.Discrete(env.num_distinct_actions()) for aid in self.agents}
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = self.env.new_initial_state()
        return self._get_obs(), {}

    def step(self, action: dict) -> tuple:
        if self.state is None:
            raise RuntimeError("OpenSpielEnv.step() before reset()")
        self._solve_chance_nodes()
        penalties: dict[int, float] = {}
        if self._sequential:
            player = self.state.current_player()
            if player not in action:
                raise ValueError(
                    f"OpenSpielEnv.step: player {player} is to move; the action dict has "
                    f"{sorted(action)}"
                )
            move = int(action[player])
            legal = self.state.legal_actions()
            if move not in legal:  # (checked first: OpenSpiel prints its refusals to stderr)
                move = int(self._rng.choice(legal))
                penalties[player] = -0.1
            self.state.apply_action(move)
        else:
            self.state.apply_actions([int(action[aid]) for aid in self.agents])
        obs = self._get_obs()
        rewards = dict(enumerate(self.state.returns()))
        for aid, penalty in penalties.items():
            rewards[aid] += penalty
        done = bool(self.state.is_terminal())
        terminateds = {aid: done for aid in self.agents}
        terminateds["__all__"] = done
        truncateds = {aid: False for aid in self.agents}
        truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, {}

    def capture_state(self) -> dict:
        """The game so far as plain data, for checkpoints: OpenSpiel's serialized state
        (its moves, chance outcomes included) and the chance generator's state."""
        return {
            "game": None if self.state is None else self.state.serialize(),
            "rng": generator_state(self._rng),
        }

    def restore_state(self, data: dict) -> None:
        """The game `capture_state()` described, its moves replayed by OpenSpiel."""
        set_generator_state(self._rng, data["rng"])
        game = data["game"]
        self.state = None if game is None else self.env.deserialize_state(game)

    def render(self, mode: str | None = None) -> None:
        if mode == "human":
            print(self.state)

    def _get_obs(self) -> dict:
        self._solve_chance_nodes()
        if self.state.is_terminal():
            return {}
        if self._sequential:
            player = self.state.current_player()
            return {player: np.asarray(self.state.observation_tensor(), np.float32).ravel()}
        return {
            aid: np.asarray(self.state.observation_tensor(aid), np.float32).ravel()
            for aid in self.agents
        }

    def _solve_chance_nodes(self) -> None:
        while self.state.is_chance_node():
            actions, probs = zip(*self.state.chance_outcomes(), strict=True)
            self.state.apply_action(int(self._rng.choice(actions, p=probs)))


def _try_import(module: str, error: bool) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as failure:
        if error:
            raise ImportError(
                f"could not import {module} ({failure}): install OpenSpiel with "
                "pip install -e '.[openspiel]' (or pip install open_spiel)"
            ) from None
        return None


def try_import_pyspiel(error: bool = False) -> Any:
    """The `pyspiel` module, or None where it is not installed (ImportError with `error`)."""
    return _try_import("pyspiel", error)


def try_import_open_spiel(error: bool = False) -> Any:
    """The `open_spiel` package, or None where it is not installed (ImportError with
    `error`)."""
    return _try_import("open_spiel", error)
