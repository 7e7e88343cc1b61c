"""The env-to-module connector of a multi-agent run: RLlib's per-agent observation pieces
(`FlattenObservations(multi_agent=True, agent_ids=...)`, `MeanStdFilter(multi_agent=True)`) and
whole-step preprocessors (`MultiAgentObservationPreprocessor`), applied to each step's
observations as they leave the env, in the pipeline's order.

RLlib's MultiAgentEnvRunner runs such a piece over its episodes after every env step: the
episodes then hold the rewritten observations and each module is built for the rewritten
spaces of its agents. Here the runner wraps each sub-env in `ObservationPiecesEnv`, which
rewrites the observations of `reset` and `step` and reports the rewritten spaces: the episodes,
the modules' spaces and the learners see what they see in RLlib. Only pieces that rewrite one
agent's observation from that observation alone run this way; any other piece is refused by
name when the runner is built. A preprocessor's `preprocess()` gets `episode=None`: the
episode records its output."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from trainer.capabilities import MULTI_AGENT
from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2, call_factory
from trainer.connectors.env_to_module import (
    FlattenObservations,
    MeanStdFilter,
    MultiAgentObservationPreprocessor,
)
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import ConfigError

#: The pieces a multi-agent run applies per agent.
ObservationPiece = FlattenObservations | MeanStdFilter | MultiAgentObservationPreprocessor


def multi_agent_observation_pieces(config: Any, env: Any) -> list[ObservationPiece]:
    """The pieces of the config's `env_to_module_connector` for a MultiAgentEnv (`env`, one
    sub-env), checked: each must be a `FlattenObservations(multi_agent=True)`. Empty when the
    config has no env-to-module connector."""
    factory = config.env_to_module_factory()
    if factory is None:
        return []
    made = call_factory(factory, env, None)
    if isinstance(made, ConnectorPipelineV2):
        pieces = list(made.connectors)
    elif isinstance(made, (list, tuple)):
        pieces = list(made)
    else:
        pieces = [made]
    checked: list[ObservationPiece] = []
    for piece in pieces:
        if not isinstance(piece, ConnectorV2):
            raise TypeError(
                f"env_to_module_connector returned {made!r}: it must return a ConnectorV2 "
                "piece, a list of them, or a ConnectorPipelineV2"
            )
        if isinstance(piece, MultiAgentObservationPreprocessor) or (
            isinstance(piece, (FlattenObservations, MeanStdFilter)) and piece.multi_agent
        ):
            checked.append(piece)
            continue
        raise ConfigError(
            f"env_runners(env_to_module_connector=...) made {piece!r} for a multi-agent "
            "run: multi-agent runs take FlattenObservations(multi_agent=True, "
            "agent_ids=...), MeanStdFilter(multi_agent=True) and "
            "MultiAgentObservationPreprocessor pieces; other env-to-module pieces run with "
            "single-agent envs",
            MULTI_AGENT,
        )
    return checked


class ObservationPiecesEnv(MultiAgentEnv):
    """A MultiAgentEnv whose observations (and observation spaces) are the wrapped env's after
    the per-agent observation pieces. Its `unwrapped` is itself (the runner's episodes and
    module spaces read the rewritten spaces from it); any other attribute is the wrapped
    env's, so callbacks reach the env's own attributes as usual; `env` is the wrapped env."""

    def __init__(self, env: Any, pieces: list[ObservationPiece]) -> None:
        self.env = env
        self._pieces = list(pieces)
        self._inner = inner = env.unwrapped
        self.possible_agents = list(inner.possible_agents or inner.agents)
        self.agents = list(inner.agents)
        self._agent_ids = set(self.possible_agents)
        #: Each agent's env space, the input of the pieces.
        self._env_spaces = {aid: inner.get_observation_space(aid) for aid in self.possible_agents}
        #: Per piece, each agent's space going into it (a whole-dict preprocessor's input is
        #: the Dict of them); then each agent's space after the pieces.
        self._stage_spaces: list[dict] = []
        self._flat_spaces = self._rewritten_spaces(dict(self._env_spaces))
        self.observation_spaces = self._flat_spaces
        self.action_spaces = {aid: inner.get_action_space(aid) for aid in self.possible_agents}
        super().__init__()

    def _rewritten_spaces(self, spaces: dict) -> dict:
        """The agents' spaces after the pieces (`_stage_spaces`: before each piece)."""
        self._stage_spaces = []
        for piece in self._pieces:
            self._stage_spaces.append(spaces)
            if isinstance(piece, MultiAgentObservationPreprocessor):
                piece.set_input_spaces(gym.spaces.Dict(spaces), None)
                output = piece.observation_space
                spaces = dict(output.spaces) if isinstance(output, gym.spaces.Dict) else spaces
            else:
                spaces = {aid: piece.agent_observation_space(aid, sp) for aid, sp in spaces.items()}
        return spaces

    def _rewritten_space(self, agent_id: Any, space: gym.Space) -> gym.Space:
        """An agent the env did not name up front: its space after the per-agent pieces
        (a whole-dict preprocessor names its agents' spaces itself)."""
        for stage, piece in zip(self._stage_spaces, self._pieces, strict=True):
            stage.setdefault(agent_id, space)
            if not isinstance(piece, MultiAgentObservationPreprocessor):
                space = piece.agent_observation_space(agent_id, space)
        return space

    def _rewrite(self, observations: dict) -> dict:
        for agent_id in observations:
            if agent_id not in self._env_spaces:  # an agent the env did not name up front
                space = self._env_spaces[agent_id] = self._inner.get_observation_space(agent_id)
                self._flat_spaces[agent_id] = self._rewritten_space(agent_id, space)
        for stage, piece in zip(self._stage_spaces, self._pieces, strict=True):
            if isinstance(piece, MultiAgentObservationPreprocessor):
                observations = dict(piece.preprocess(observations=observations, episode=None))
                continue
            observations = {
                agent_id: piece.transform_agent_observation(agent_id, stage[agent_id], obs)
                for agent_id, obs in observations.items()
            }
        return observations

    @property
    def unwrapped(self) -> ObservationPiecesEnv:
        return self

    def get_observation_space(self, agent_id: Any) -> gym.Space:
        if agent_id not in self._flat_spaces:
            env_space = self._env_spaces[agent_id] = self._inner.get_observation_space(agent_id)
            self._flat_spaces[agent_id] = self._rewritten_space(agent_id, env_space)
        return self._flat_spaces[agent_id]

    def get_action_space(self, agent_id: Any) -> gym.Space:
        return self._inner.get_action_space(agent_id)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self._inner.agents)
        return self._rewrite(observations), infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        observations, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        self.agents = list(self._inner.agents)
        return self._rewrite(observations), rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        # Only called for names this wrapper does not have: the wrapped env's attributes.
        if name.startswith("__") or name in (
            "env",
            "_inner",
            "_pieces",
            "_env_spaces",
            "_flat_spaces",
        ):
            raise AttributeError(name)
        return getattr(self._inner, name)
