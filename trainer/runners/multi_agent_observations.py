"""The env-to-module connector of a multi-agent run: RLlib's per-agent observation pieces
(`FlattenObservations(multi_agent=True, agent_ids=...)`, `MeanStdFilter(multi_agent=True)`,
`PrevActionsPrevRewards(multi_agent=True)`, `FrameStackingEnvToModule(multi_agent=True)`) and
whole-step preprocessors
(`MultiAgentObservationPreprocessor`), applied to each step's observations as they leave the
env, in the pipeline's order.

RLlib's MultiAgentEnvRunner runs such a piece over its episodes after every env step: the
episodes then hold the rewritten observations and each module is built for the rewritten
spaces of its agents. Here the runner wraps each sub-env in `ObservationPiecesEnv`, which
rewrites the observations of `reset` and `step` and reports the rewritten spaces: the episodes,
the modules' spaces and the learners see what they see in RLlib. Only pieces that rewrite one
agent's observation from that observation alone run this way; a user's own ConnectorV2 piece
runs after them over the runner's episodes (`multi_agent_env_to_module_pieces`), and the
single-agent forms of this project's pieces are refused by name when the runner is built. A preprocessor's `preprocess()` gets `episode=None`: the
episode records its output. `PrevActionsPrevRewards` reads each agent's own last actions and
rewards from the wrapper's `AgentHistory`, which follows the actions the env is given and the
rewards it returns; `FrameStackingEnvToModule` each agent's stack, which the wrapper keeps
through the episode."""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym

from trainer.capabilities import MULTI_AGENT
from trainer.connectors.connector_v2 import ConnectorV2, call_factory, made_pieces
from trainer.connectors.env_to_module import (
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    MultiAgentObservationPreprocessor,
    PrevActionsPrevRewards,
    SingleAgentObservationPreprocessor,
)
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import ConfigError

#: The pieces a multi-agent run applies per agent.
ObservationPiece = (
    FlattenObservations
    | MeanStdFilter
    | PrevActionsPrevRewards
    | FrameStackingEnvToModule
    | MultiAgentObservationPreprocessor
)
#: The per-agent pieces (each has `multi_agent`).
_PER_AGENT = (FlattenObservations, MeanStdFilter, PrevActionsPrevRewards, FrameStackingEnvToModule)


def multi_agent_observation_pieces(config: Any, env: Any) -> list[ObservationPiece]:
    """The per-agent observation pieces of the config's `env_to_module_connector` for a
    MultiAgentEnv (`env`, one sub-env), checked (see `multi_agent_env_to_module_pieces`).
    Empty when the config has no env-to-module connector."""
    return multi_agent_env_to_module_pieces(config, env)[0]


def multi_agent_env_to_module_pieces(
    config: Any, env: Any
) -> tuple[list[ObservationPiece], list[ConnectorV2]]:
    """The config's `env_to_module_connector` for a MultiAgentEnv (`env`, one sub-env), split
    into (per-agent observation pieces, episode pieces):

    - the per-agent observation pieces (`FlattenObservations(multi_agent=True)`, ...,
      `MultiAgentObservationPreprocessor`) rewrite the observations as they leave each
      sub-env (`ObservationPiecesEnv`);
    - any other piece (a user's own ConnectorV2) runs as RLlib runs it: over the runner's
      `MultiAgentEpisode`s after each reset and env step (and once more over the episodes
      that just ended), after the observation pieces.

    Raises ConfigError for this project's single-agent forms of those pieces (their
    `multi_agent=False` forms, `SingleAgentObservationPreprocessor`), and for an observation
    piece after an episode piece (the episode pieces see the observations after every
    observation piece)."""
    factory = config.env_to_module_factory()
    if factory is None:
        return [], []
    made = call_factory(factory, env, None)
    pieces = made_pieces(made)
    checked: list[ObservationPiece] = []
    episode_pieces: list[ConnectorV2] = []
    for piece in pieces:
        if not isinstance(piece, ConnectorV2):
            raise TypeError(
                f"env_to_module_connector returned {made!r}: it must return a ConnectorV2 "
                "piece, a list of them, or a ConnectorPipelineV2"
            )
        if isinstance(piece, MultiAgentObservationPreprocessor) or (
            isinstance(piece, _PER_AGENT) and piece.multi_agent
        ):
            if episode_pieces:
                raise ConfigError(
                    f"env_runners(env_to_module_connector=...) made {piece!r} after "
                    f"{episode_pieces[0]!r}: in a multi-agent run the observation pieces "
                    "(FlattenObservations(multi_agent=True), MeanStdFilter(multi_agent=True), "
                    "PrevActionsPrevRewards(multi_agent=True), FrameStackingEnvToModule("
                    "multi_agent=True), MultiAgentObservationPreprocessor) come before a "
                    "user's own ConnectorV2 pieces; put them first in the list",
                    MULTI_AGENT,
                )
            checked.append(piece)
            continue
        if not isinstance(piece, (*_PER_AGENT, SingleAgentObservationPreprocessor)):
            episode_pieces.append(piece)
            continue
        raise ConfigError(
            f"env_runners(env_to_module_connector=...) made {piece!r} for a multi-agent "
            "run: multi-agent runs take FlattenObservations(multi_agent=True, "
            "agent_ids=...), MeanStdFilter(multi_agent=True), "
            "PrevActionsPrevRewards(multi_agent=True), FrameStackingEnvToModule(multi_agent="
            "True), MultiAgentObservationPreprocessor pieces and a user's own ConnectorV2 "
            "pieces; the single-agent forms run with single-agent envs",
            MULTI_AGENT,
        )
    return checked, episode_pieces


class AgentHistory:
    """Each agent's own last actions and rewards in the running episode, oldest first (at most
    `length` of each). An action's reward is the sum of the agent's rewards from the step it
    acted in until it acts again (what its episode records for that action, rewards of the
    steps between included); rewards before an agent's first action are not kept."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.actions: dict[Any, deque] = {}
        self.rewards: dict[Any, deque] = {}

    def clear(self) -> None:
        """A new episode: no history."""
        self.actions.clear()
        self.rewards.clear()

    def record_step(self, action_dict: dict, rewards: dict) -> None:
        """The env stepped with `action_dict` and returned `rewards`."""
        for agent_id, action in action_dict.items():
            if agent_id not in self.actions:
                self.actions[agent_id] = deque(maxlen=self.length)
                self.rewards[agent_id] = deque(maxlen=self.length)
            self.actions[agent_id].append(action)
            self.rewards[agent_id].append(0.0)
        for agent_id, reward in rewards.items():
            kept = self.rewards.get(agent_id)
            if kept:
                kept[-1] += float(reward)

    def of(self, agent_id: Any) -> tuple[list, list]:
        """(`agent_id`'s last actions, its last rewards), oldest first."""
        return list(self.actions.get(agent_id, ())), list(self.rewards.get(agent_id, ()))

    def capture_state(self) -> dict:
        """The history as data (a runner's checkpoint of its sub-envs)."""
        return {"actions": dict(self.actions), "rewards": dict(self.rewards)}

    def restore_state(self, data: dict) -> None:
        self.actions = dict(data["actions"])
        self.rewards = dict(data["rewards"])


class ObservationPiecesEnv(MultiAgentEnv):
    """A MultiAgentEnv whose observations (and observation spaces) are the wrapped env's after
    the per-agent observation pieces. Its `unwrapped` is itself (the runner's episodes and
    module spaces read the rewritten spaces from it); any other attribute is the wrapped
    env's, so callbacks reach the env's own attributes as usual; `env` is the wrapped env.
    A runner's checkpoint captures the wrapped env and what the wrapper keeps per episode (each
    agent's frame stack and history), not the pieces, which the config makes again."""

    #: Attributes the constructor makes again (not captured with the sub-env's state).
    _NOT_STATE = ("_pieces", "_inner")

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
        history = [
            max(piece.n_prev_actions, piece.n_prev_rewards)
            for piece in pieces
            if isinstance(piece, PrevActionsPrevRewards)
        ]
        #: The agents' last actions and rewards, kept when a piece reads them.
        self._history = AgentHistory(max(history)) if history else None
        #: Per frame-stacking piece (by position), each agent's stacked observation.
        self._stacks: dict[int, dict[Any, Any]] = {
            index: {}
            for index, piece in enumerate(pieces)
            if isinstance(piece, FrameStackingEnvToModule)
        }
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
                spaces = {aid: self._piece_space(piece, aid, sp) for aid, sp in spaces.items()}
        return spaces

    def _piece_space(self, piece: ObservationPiece, agent_id: Any, space: gym.Space) -> gym.Space:
        """`agent_id`'s observation space after the per-agent `piece` (`space` before it)."""
        if isinstance(piece, PrevActionsPrevRewards):
            action_space = self._inner.get_action_space(agent_id)
            return piece.agent_observation_space(agent_id, space, action_space)
        return piece.agent_observation_space(agent_id, space)  # type: ignore[union-attr]

    def _rewritten_space(self, agent_id: Any, space: gym.Space) -> gym.Space:
        """An agent the env did not name up front: its space after the per-agent pieces
        (a whole-dict preprocessor names its agents' spaces itself)."""
        for stage, piece in zip(self._stage_spaces, self._pieces, strict=True):
            stage.setdefault(agent_id, space)
            if not isinstance(piece, MultiAgentObservationPreprocessor):
                space = self._piece_space(piece, agent_id, space)
        return space

    def _rewrite(self, observations: dict) -> dict:
        for agent_id in observations:
            if agent_id not in self._env_spaces:  # an agent the env did not name up front
                space = self._env_spaces[agent_id] = self._inner.get_observation_space(agent_id)
                self._flat_spaces[agent_id] = self._rewritten_space(agent_id, space)
        for index, (stage, piece) in enumerate(zip(self._stage_spaces, self._pieces, strict=True)):
            if isinstance(piece, MultiAgentObservationPreprocessor):
                observations = dict(piece.preprocess(observations=observations, episode=None))
                continue
            if isinstance(piece, FrameStackingEnvToModule):
                stacks = self._stacks[index]
                for agent_id, obs in observations.items():
                    stacks[agent_id] = piece.stack_agent_frame(stacks.get(agent_id), obs)
                observations = {agent_id: stacks[agent_id] for agent_id in observations}
                continue
            if isinstance(piece, PrevActionsPrevRewards):
                observations = {
                    agent_id: self._with_history(piece, agent_id, stage[agent_id], obs)
                    for agent_id, obs in observations.items()
                }
                continue
            observations = {
                agent_id: piece.transform_agent_observation(agent_id, stage[agent_id], obs)
                for agent_id, obs in observations.items()
            }
        return observations

    def _with_history(
        self, piece: PrevActionsPrevRewards, agent_id: Any, space: gym.Space, observation: Any
    ) -> Any:
        assert self._history is not None, "kept when a PrevActionsPrevRewards piece runs"
        actions, rewards = self._history.of(agent_id)
        return piece.transform_agent_observation(
            agent_id,
            space,
            observation,
            actions=actions,
            rewards=rewards,
            action_space=self._inner.get_action_space(agent_id),
        )

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
        if self._history is not None:
            self._history.clear()
        for stacks in self._stacks.values():
            stacks.clear()
        return self._rewrite(observations), infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        observations, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        self.agents = list(self._inner.agents)
        if self._history is not None:
            self._history.record_step(action_dict, rewards)
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
            "_history",
            "_stacks",
        ):
            raise AttributeError(name)
        return getattr(self._inner, name)
