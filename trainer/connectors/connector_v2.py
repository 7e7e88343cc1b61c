"""`ConnectorV2` (RLlib's base class of connector pieces) and `ConnectorPipelineV2`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gymnasium as gym

from trainer.capabilities import BATCH_CONNECTORS, CHECKPOINTABLE
from trainer.compat.rllib_utils import Columns
from trainer.errors import ConfigError
from trainer.util.rllib_members import refuse


@refuse(
    "ray.rllib.connectors.connector_v2.ConnectorV2",
    CHECKPOINTABLE,
    "a connector's state is part of its EnvRunner's state in the Algorithm's checkpoint "
    "(get_state() / set_state() data); RLlib's per-component Checkpointable protocol is not "
    "implemented (the pipelines' from_checkpoint reads an Algorithm checkpoint's)",
    "from_checkpoint",
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_metadata",
    "restore_from_path",
    "save_to_path",
)
@refuse(
    "ray.rllib.connectors.connector_v2.ConnectorV2",
    BATCH_CONNECTORS,
    "the env-to-module pieces here rewrite the episodes' observations and the EnvRunner "
    "batches them for the module (numpy or torch); there is no batch of columns for a piece "
    "to fill",
    "add_batch_item",
    "foreach_batch_item_change_in_place",
    "switch_batch_from_column_to_module_ids",
)
class ConnectorV2:
    """One piece of an env-to-module pipeline.

    Subclasses override `__call__`, which rewrites the last observation of each episode it is
    given (`episode.set_observations(new_data=..., at_indices=-1)`) and returns `batch`, and,
    when they change the observation's form, `recompute_output_observation_space`. Stateful
    pieces also override `get_state` / `set_state` and `merge_states`.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        **kwargs: Any,
    ):
        self._input_observation_space: gym.Space | None = None
        self._input_action_space: gym.Space | None = None
        #: The spaces this piece outputs (None until its input spaces are set).
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None
        if input_observation_space is not None or input_action_space is not None:
            self.set_input_spaces(input_observation_space, input_action_space)

    # -- spaces ------------------------------------------------------------------------------
    @property
    def input_observation_space(self) -> gym.Space | None:
        return self._input_observation_space

    @input_observation_space.setter
    def input_observation_space(self, space: gym.Space) -> None:
        self.set_input_spaces(space, self._input_action_space)

    @property
    def input_action_space(self) -> gym.Space | None:
        return self._input_action_space

    @input_action_space.setter
    def input_action_space(self, space: gym.Space) -> None:
        self.set_input_spaces(self._input_observation_space, space)

    def set_input_spaces(
        self, observation_space: gym.Space | None, action_space: gym.Space | None
    ) -> None:
        self._input_observation_space = observation_space
        self._input_action_space = action_space
        self.observation_space = self.recompute_output_observation_space(
            observation_space, action_space
        )
        self.action_space = self.recompute_output_action_space(observation_space, action_space)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        """The observation space this piece outputs (the input's, unless overridden); the
        input spaces are None until they are known."""
        return input_observation_space

    def recompute_output_action_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        return input_action_space

    # -- data --------------------------------------------------------------------------------
    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict,
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

    def transform_rows(self, observations: Any, *, order: list[int] | None = None) -> Any:
        """The latest observations of a batch of episodes (one row each) as this piece
        rewrites them, the rows taken in `order` (row indices, the order `__call__` would get
        the episodes in; None: first to last) and returned in row order: a piece that reads
        nothing of an episode but its latest observation defines it beside `__call__`, and
        the EnvRunner's sampling loop then filters a vector step's observations in one call
        (see `transforms_rows`)."""
        raise NotImplementedError(f"{type(self).__name__} rewrites episodes, not rows")

    @property
    def transforms_rows(self) -> bool:
        """Whether `transform_rows` stands for `__call__`: both are defined by the same class
        (a subclass that overrides `__call__` alone reads its episodes)."""
        rows_by = _defining_class(type(self), "transform_rows")
        return rows_by is not ConnectorV2 and rows_by is _defining_class(type(self), "__call__")

    @staticmethod
    def single_agent_episode_iterator(
        episodes: Iterable, agents_that_stepped_only: bool = True, **kwargs: Any
    ) -> Iterator:
        """The single-agent episodes in `episodes` (RLlib's helper): each single-agent episode,
        and each agent's episode of a MultiAgentEpisode (those with steps; with
        `agents_that_stepped_only`, those whose agent has an observation in its last step)."""
        for episode in episodes:
            agent_episodes = getattr(episode, "agent_episodes", None)
            if agent_episodes is None:
                yield episode
                continue
            stepped = set(episode.get_agents_that_stepped()) if agents_that_stepped_only else None
            for agent_id, agent_episode in agent_episodes.items():
                if stepped is not None:
                    if agent_id in stepped:
                        yield agent_episode
                elif len(agent_episode) > 0:
                    yield agent_episode

    # -- learner pieces ------------------------------------------------------------------------
    @staticmethod
    def add_n_batch_items(
        batch: dict,
        column: str,
        items_to_add: Any,
        num_items: int,
        single_agent_episode: Any = None,
    ) -> None:
        """RLlib's way for a learner piece to give an episode's `num_items` steps their values
        of `column`. The learners here make their batch from the episodes, so a column the
        episodes hold is written into `single_agent_episode` (rewards: its rewards, which the
        learner then trains on); any other column is refused, naming it."""
        if column != Columns.REWARDS or single_agent_episode is None:
            raise ConfigError(
                f"ConnectorV2.add_n_batch_items(column={column!r}, single_agent_episode="
                f"{single_agent_episode!r}): the learners here make their batch from the "
                f"episodes; a piece sets an episode's {Columns.REWARDS!r} this way (naming the "
                "episode), or rewrites the episodes directly"
            )
        values = list(items_to_add)
        if len(values) != num_items or num_items != len(single_agent_episode):
            raise ValueError(
                f"ConnectorV2.add_n_batch_items(column={column!r}): {len(values)} items for "
                f"num_items={num_items}, an episode chunk of {len(single_agent_episode)} steps"
            )
        single_agent_episode.set_rewards(new_data=values)

    # -- state -------------------------------------------------------------------------------
    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        pass

    def merge_states(self, states: list[dict]) -> dict:
        """The state after merging the runners' `states` into this piece's (stateless: {})."""
        return {}

    def reset_state(self) -> None:
        pass

    @property
    def is_stateful(self) -> bool:
        return type(self).get_state is not ConnectorV2.get_state

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ConnectorPipelineV2(ConnectorV2):
    """Pieces run in order; each one's output space is the next one's input space."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        connectors: list[ConnectorV2] | None = None,
        **kwargs: Any,
    ):
        self.connectors = list(connectors or [])
        for piece in self.connectors:
            if not isinstance(piece, ConnectorV2):
                raise TypeError(f"a connector piece must be a ConnectorV2 instance, got {piece!r}")
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def set_input_spaces(
        self, observation_space: gym.Space | None, action_space: gym.Space | None
    ) -> None:
        self._input_observation_space = observation_space
        self._input_action_space = action_space
        for piece in self.connectors:
            piece.set_input_spaces(observation_space, action_space)
            observation_space, action_space = piece.observation_space, piece.action_space
        self.observation_space, self.action_space = observation_space, action_space

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict | None = None,
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> Any:
        batch = {} if batch is None else batch
        shared_data = {} if shared_data is None else shared_data
        for piece in self.connectors:
            batch = piece(
                rl_module=rl_module,
                batch=batch,
                episodes=episodes,
                explore=explore,
                shared_data=shared_data,
                metrics=metrics,
                **kwargs,
            )
        return batch

    def transform_rows(self, observations: Any, *, order: list[int] | None = None) -> Any:
        """Each piece's `transform_rows` in turn (see `ConnectorV2.transform_rows`)."""
        for piece in self.connectors:
            observations = piece.transform_rows(observations, order=order)
        return observations

    @property
    def transforms_rows(self) -> bool:
        return all(piece.transforms_rows for piece in self.connectors)

    # -- changing the pieces (RLlib's pipeline API) ---------------------------------------------
    def append(self, connector: ConnectorV2) -> None:
        """Adds `connector` at the end."""
        self._change(lambda pieces: pieces.append(connector))

    def prepend(self, connector: ConnectorV2) -> None:
        """Adds `connector` at the start."""
        self._change(lambda pieces: pieces.insert(0, connector))

    def insert_before(self, name_or_class: str | type, connector: ConnectorV2) -> ConnectorV2:
        """Inserts `connector` before the first piece of that class (or class name); returns
        that piece."""
        index = self._index_of(name_or_class)
        self._change(lambda pieces: pieces.insert(index, connector))
        return self.connectors[index + 1]

    def insert_after(self, name_or_class: str | type, connector: ConnectorV2) -> ConnectorV2:
        """Inserts `connector` after the first piece of that class (or class name); returns
        that piece."""
        index = self._index_of(name_or_class)
        self._change(lambda pieces: pieces.insert(index + 1, connector))
        return self.connectors[index]

    def remove(self, name_or_class: str | type) -> None:
        """Removes the first piece of that class (or class name); nothing when there is none
        (as RLlib, which logs a warning)."""
        try:
            index = self._index_of(name_or_class)
        except ValueError:
            return
        self._change(lambda pieces: pieces.pop(index))

    def _index_of(self, name_or_class: str | type) -> int:
        for index, piece in enumerate(self.connectors):
            if type(piece) is name_or_class or type(piece).__name__ == name_or_class:
                return index
        raise ValueError(
            f"no connector piece named or of type {name_or_class!r} in "
            f"{[type(p).__name__ for p in self.connectors]}"
        )

    def _change(self, mutate: Callable[[list], Any]) -> None:
        """Changes the pieces, then gives each its input spaces from the one before it; a
        piece that cannot take its new input (MeanStdFilter before a Dict observation is
        flattened) raises and leaves the pipeline as it was."""
        before = list(self.connectors)
        mutate(self.connectors)
        if self._input_observation_space is None and self._input_action_space is None:
            return
        try:
            self.set_input_spaces(self._input_observation_space, self._input_action_space)
        except Exception:
            self.connectors[:] = before
            self.set_input_spaces(self._input_observation_space, self._input_action_space)
            raise

    def _keys(self) -> list[str]:
        return [f"{i:02d}_{type(piece).__name__}" for i, piece in enumerate(self.connectors)]

    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict:
        return {
            key: piece.get_state()
            for key, piece in zip(self._keys(), self.connectors, strict=True)
            if piece.is_stateful
        }

    def set_state(self, state: dict) -> None:
        for key, piece in zip(self._keys(), self.connectors, strict=True):
            if key in state:
                piece.set_state(state[key])

    def merge_states(self, states: list[dict]) -> dict:
        merged = {}
        for key, piece in zip(self._keys(), self.connectors, strict=True):
            if piece.is_stateful:
                merged[key] = piece.merge_states([s[key] for s in states if key in s])
        return merged

    @property
    def is_stateful(self) -> bool:
        return any(piece.is_stateful for piece in self.connectors)

    def __iter__(self) -> Any:
        """The pieces, in order (RLlib code iterates a pipeline)."""
        return iter(self.connectors)

    def __len__(self) -> int:
        return len(self.connectors)

    def __repr__(self) -> str:
        return f"ConnectorPipelineV2({self.connectors!r})"


def _defining_class(cls: type, name: str) -> type | None:
    """The class of `cls`'s MRO whose own namespace defines `name`."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _takes_positional(factory: Callable, count: int) -> bool:
    """Whether `factory` takes `count` positional arguments (False when it cannot tell)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= count or any(p.kind == p.VAR_POSITIONAL for p in params)


def call_factory(factory: Callable, env: Any, spaces: Any) -> Any:
    """Calls the user's `env_to_module_connector` as RLlib does: `(env, spaces, device)` if it
    takes three arguments, else `(env)`."""
    return factory(env, spaces, None) if _takes_positional(factory, 3) else factory(env)


def call_module_to_env_factory(factory: Callable, env: Any, spaces: Any) -> Any:
    """Calls the user's `module_to_env_connector` as RLlib does: `(env, spaces)` if it takes
    two arguments, else `(env)`."""
    return factory(env, spaces) if _takes_positional(factory, 2) else factory(env)


def made_pieces(made: Any) -> list:
    """The pieces a connector factory returned: a pipeline's, a list's, or the one piece."""
    if isinstance(made, ConnectorPipelineV2):
        return list(made.connectors)
    if isinstance(made, (list, tuple)):
        return list(made)
    return [made]


def build_pipeline(
    pieces: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    *,
    setting: str = "env_to_module_connector",
) -> ConnectorPipelineV2:
    """A pipeline from what a connector factory (the config's `setting`) returned (a piece, a
    list of pieces, or a pipeline), its input spaces set to the given ones."""
    if isinstance(pieces, ConnectorPipelineV2):
        pipeline = pieces
    elif isinstance(pieces, ConnectorV2):
        pipeline = ConnectorPipelineV2(connectors=[pieces])
    elif isinstance(pieces, (list, tuple)):
        pipeline = ConnectorPipelineV2(connectors=list(pieces))
    else:
        raise TypeError(
            f"{setting} returned {pieces!r}: it must return a "
            "ConnectorV2 piece, a list of them, or a ConnectorPipelineV2"
        )
    pipeline.set_input_spaces(observation_space, action_space)
    return pipeline
