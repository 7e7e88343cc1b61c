"""How `Algorithm.compute_single_action` acts with one module: one adapter per module kind.

Every adapter answers `act(observation, state, prev_action, prev_reward, explore=, timestep=,
normalize=, clip=) -> (action, state_out)` for one observation. The Algorithm checks the
arguments, picks the module (by `policy_id`) and its adapter (`actor_for`, once per module) and
shapes the return value; the adapter does the rest:

- `SelfActingActor`: a user's RLModule that acts itself (its `forward_exploration` /
  `forward_inference` returns the actions).
- `NumpyModuleActor`: a numpy module (`FlatParameterModule`): its distribution inputs through
  the configured exploration.
- `TorchViewActor`: a torch module's numpy view (`rl_module`): its forward pass for `explore`,
  then the configured exploration, unless the forward pass drew the action itself.
- `RecurrentActor`: a stateful module: state in and out, the previous action and reward.

The last three share their steps (`DistributionActor`): the observation as a batch of one, the
exploration's draw, the drawn row as the env's action.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from trainer.core.exploration import ActionDistribution
from trainer.core.obs_tree import tree_map, tree_rows


class ModuleActor(ABC):
    """The interface of an acting adapter: `act` gives the action for one observation and the
    module's state out (`[]` for a module without state). `stateful`: the module carries a
    recurrent state, which `compute_single_action` always returns with the action."""

    #: Whether the module carries a recurrent state from one call to the next.
    stateful = False

    def __init__(self, module: Any, exploration: Any = None):
        #: The module acted with; the Algorithm makes a new adapter when it changes.
        self.module = module
        #: The exploration drawing the actions (None: the module acts itself).
        self.exploration = exploration

    def act_batch(self, observations: list, *, explore: bool, normalize: bool, clip: bool) -> list:
        """The actions for a list of observations, each as `act` gives it (no state: a
        stateful module starts each from its initial state). Here one `act` per observation;
        the distribution adapters run one forward pass for the whole list."""
        return [
            self.act(
                o, None, None, None, explore=explore, timestep=None, normalize=normalize, clip=clip
            )[0]
            for o in observations
        ]

    @abstractmethod
    def act(
        self,
        observation: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
        normalize: bool,
        clip: bool,
    ) -> tuple[Any, Any]:
        """The action for `observation` (exploring or greedy per `explore`, at `timestep`;
        None: the current one) and the state out; a Box action scaled (`normalize`) or clipped
        (`clip`) to its bounds."""


class SelfActingActor(ModuleActor):
    """For a user's RLModule that acts itself (in a multi-agent run, a module that is neither
    a numpy module nor a torch module the learners train, e.g. a heuristic policy): acts with
    its `forward_exploration` (`explore`) or `forward_inference` on a batch of one and takes
    its `actions` column as it is, with no exploration, scaling or clipping."""

    def act(
        self,
        observation: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
        normalize: bool,
        clip: bool,
    ) -> tuple[Any, Any]:
        batch = {"obs": np.asarray(observation)[None]}
        module = self.module
        out = module.forward_exploration(batch) if explore else module.forward_inference(batch)
        return np.asarray(out["actions"])[0], []


class DistributionActor(ModuleActor):
    """The steps of a module that gives action-distribution inputs, which the configured
    exploration draws from: the observation (through `connect`, the env-to-module pipeline,
    where given) as a preprocessed batch of one, the module's actions (`_actions`, per kind),
    the first row as the env's action. `timesteps` gives the current exploration timestep."""

    def __init__(
        self,
        module: Any,
        exploration: Any,
        rng: np.random.Generator,
        timesteps: Callable[[], int],
        connect: Callable[[Any], Any] | None = None,
    ):
        super().__init__(module, exploration)
        self.rng = rng
        self.timesteps = timesteps
        self.connect = connect

    def act(
        self,
        observation: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
        normalize: bool,
        clip: bool,
    ) -> tuple[Any, Any]:
        if self.connect is not None:
            observation = self.connect(observation)
        batch = self._batch(observation)
        actions, state_out = self._actions(
            batch, state, prev_action, prev_reward, explore=explore, timestep=timestep
        )
        return self._env_action(actions, normalize=normalize, clip=clip), state_out

    def act_batch(self, observations: list, *, explore: bool, normalize: bool, clip: bool) -> list:
        if self.stateful or not observations:
            return super().act_batch(observations, explore=explore, normalize=normalize, clip=clip)
        if self.connect is not None:
            observations = [self.connect(o) for o in observations]
        rows = [self._batch(o) for o in observations]
        if not all(isinstance(row, np.ndarray) for row in rows):  # nested leaves: one by one
            return super().act_batch(observations, explore=explore, normalize=normalize, clip=clip)
        actions, _ = self._actions(
            np.concatenate(rows), None, None, None, explore=explore, timestep=None
        )
        return [
            self._env_action(actions, normalize=normalize, clip=clip, row=i)
            for i in range(len(rows))
        ]

    @abstractmethod
    def _actions(
        self,
        batch: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
    ) -> tuple[np.ndarray, Any]:
        """The module's actions for the batch of one (flat rows) and its state out."""

    def _batch(self, observation: Any) -> Any:
        """The observation as the module's preprocessed batch of one (one per leaf of a nested
        observation); a ValueError in the observation's terms when it does not fit."""
        spaces = self.module.spaces
        given = observation
        try:
            if spaces.nested_obs_space is not None:  # a batch of one per leaf
                observation = tree_map(lambda leaf: np.asarray(leaf)[None], observation)
            else:
                observation = np.asarray(observation)[None]
            return spaces.preprocess(observation)
        except (ValueError, TypeError, KeyError) as error:
            # numpy's bare reshape or conversion error, said in the observation's terms.
            expected = (
                spaces.nested_obs_space
                or (f"shape {spaces.obs_shape}" if spaces.obs_shape is not None else None)
                or f"one of {spaces.obs_discrete_n} discrete values"
            )
            raise ValueError(
                f"compute_single_action(observation={given!r:.80}) (a {type(given).__name__}, "
                f"shape {np.shape(given) if not isinstance(given, dict) else '(a dict)'}): "
                f"the module takes observations of {expected} ({error})"
            ) from None

    @staticmethod
    def _refuse_state(state: Any) -> None:
        """A ValueError for a state given to a module without one (None and `[]` are none)."""
        if state is not None and (not isinstance(state, (list, tuple)) or len(state)):
            raise ValueError(
                f"compute_single_action(state={state!r}): the module is not recurrent, so it "
                "takes no state (leave state=None)"
            )

    def _draw(self, dist_inputs: np.ndarray, explore: bool, timestep: int | None) -> np.ndarray:
        """The exploration's actions for the distribution inputs, at `timestep` (None: the
        current one)."""
        actions, _ = self.exploration.get_exploration_action(
            action_distribution=ActionDistribution(self.module.dist, dist_inputs, self.rng),
            timestep=self.timesteps() if timestep is None else timestep,
            explore=explore,
        )
        return actions

    def _acted_or_drawn(
        self, dist_inputs: np.ndarray, explore: bool, timestep: int | None
    ) -> np.ndarray:
        """The actions the module's last forward pass drew itself (`module_acted`, RLlib's
        ACTIONS; a torch module's view sets it) or else the exploration's (`_draw`)."""
        acted = getattr(self.module, "module_acted", None)
        if acted is not None:  # the module drew its action itself
            return acted[0]
        return self._draw(dist_inputs, explore, timestep)

    def _env_action(self, actions: np.ndarray, *, normalize: bool, clip: bool, row: int = 0) -> Any:
        """Row `row` of the actions as the env takes it: a composite space's nested action
        (Python ints), a discrete action as an int, a Box action scaled or clipped."""
        module = self.module
        layout = module.spaces.action_layout
        if layout is not None:
            return layout.unflatten_one(actions[row], normalize=normalize, clip=clip)
        action = module.to_env_actions(actions[row : row + 1], normalize=normalize, clip=clip)[0]
        return int(action) if module.spaces.action_discrete_n is not None else action


class NumpyModuleActor(DistributionActor):
    """For a numpy module (`FlatParameterModule`, or any module with `dist_inputs(batch)` and
    neither state nor `rl_module`): its distribution inputs for the observation, drawn from
    by the configured exploration (unless the module drew the action itself, `module_acted`).
    Takes no state."""

    def _actions(
        self,
        batch: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
    ) -> tuple[np.ndarray, Any]:
        self._refuse_state(state)
        return self._acted_or_drawn(self.module.dist_inputs(batch), explore, timestep), []


class TorchViewActor(DistributionActor):
    """For a torch module's numpy view (it has `rl_module`; not recurrent): the module's
    forward pass for `explore` (`dist_inputs(batch, explore=)`); when that pass drew the action
    itself (`module_acted`, RLlib's ACTIONS), that action, else the configured exploration's
    draw from its distribution inputs. Takes no state."""

    def _actions(
        self,
        batch: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
    ) -> tuple[np.ndarray, Any]:
        self._refuse_state(state)
        dist_inputs = self.module.dist_inputs(batch, explore=explore)
        return self._acted_or_drawn(dist_inputs, explore, timestep), []


class RecurrentActor(DistributionActor):
    """For a stateful module (`use_lstm`, or a stateful RLModule): its distribution inputs and
    state out from `state` (None: its initial state) and, where the module asks for them, the
    previous action and reward (None: zeros), drawn from by the configured exploration. The
    state out is one row, to give back at the next call."""

    stateful = True

    def _actions(
        self,
        batch: Any,
        state: Any,
        prev_action: Any,
        prev_reward: float | None,
        *,
        explore: bool,
        timestep: int | None,
    ) -> tuple[np.ndarray, Any]:
        module = self.module
        initial = module.initial_state()
        state_row = initial if state is None else state
        if _tree_shapes(state_row) != _tree_shapes(initial):
            raise ValueError(
                f"compute_single_action(state={state!r}): the state must be what the previous "
                f"call returned, shaped like the module's initial state {_tree_shapes(initial)}"
            )
        state_in = tree_map(lambda leaf: np.asarray(leaf)[None], state_row)
        prev_actions = prev_rewards = None
        if module.needs_prev_actions:
            space = module.action_space
            given = np.zeros(space.shape, space.dtype) if prev_action is None else prev_action
            prev_actions = np.asarray(given, dtype=space.dtype)[None]
        if module.needs_prev_rewards:
            prev_rewards = np.asarray([prev_reward or 0.0], dtype=np.float32)
        dist_inputs, state_out = module.dist_inputs_and_state(
            batch, state_in, explore=explore, prev_actions=prev_actions, prev_rewards=prev_rewards
        )
        return self._draw(dist_inputs, explore, timestep), tree_rows(state_out, 0)


def actor_for(
    module: Any,
    exploration: Any,
    rng: np.random.Generator,
    timesteps: Callable[[], int],
    connect: Callable[[Any], Any] | None = None,
) -> ModuleActor:
    """The acting adapter for `module`: `SelfActingActor` without an exploration (None: the
    module acts itself), `RecurrentActor` for a stateful module, `TorchViewActor` for a torch
    module's view, else `NumpyModuleActor`. `rng`, `timesteps` and `connect`: see
    `DistributionActor`."""
    if exploration is None:
        return SelfActingActor(module)
    if getattr(module, "stateful", False):
        kind: type[DistributionActor] = RecurrentActor
    elif hasattr(module, "rl_module"):
        kind = TorchViewActor
    else:
        kind = NumpyModuleActor
    return kind(module, exploration, rng, timesteps, connect)


def _tree_shapes(tree: Any) -> Any:
    """A recurrent state's structure with each leaf's shape (dicts by key; anything else is a
    leaf), to compare a state given to `compute_single_action` with the module's."""
    if isinstance(tree, dict):
        return {key: _tree_shapes(value) for key, value in tree.items()}
    try:
        return tuple(np.shape(tree))
    except Exception:  # noqa: BLE001 - ragged: no shape
        return None
