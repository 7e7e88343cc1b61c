"""The exploration API: how an EnvRunner turns the model's outputs into actions.

`config.exploration(explore=..., exploration_config={"type": ..., **constructor_args})` picks the
class; each EnvRunner (and the Algorithm, for `compute_single_action`) makes its own instance. On
every env step the runner calls `get_exploration_action(action_distribution=...,
timestep=..., explore=...)`, where `timestep` is the number of env steps sampled so far by all
EnvRunners together (synced with the weights, advanced locally in between).

Built-in types, as in RLlib's docs:
- `StochasticSampling(random_timesteps=0)`: samples from the action distribution (uniformly
  random actions for the first `random_timesteps`); PPO's default.
- `EpsilonGreedy(initial_epsilon=1.0, final_epsilon=0.05, epsilon_timesteps=100000,
  warmup_timesteps=0, epsilon_schedule=None)`: a uniformly random action with probability
  epsilon, else the greedy one. DQN's default, driven by its `epsilon` setting.
- `SoftQ(temperature=1.0)`: samples from softmax(inputs / temperature).

A user subclass of `Exploration` given by class (`"type": MyExploration`) or by import path
(`"type": "my_package.module.MyExploration"`) works the same way.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.core.schedules import Schedule
from trainer.util.checks import int_at_least, number_above
from trainer.util.rllib_members import refuse


class ActionDistribution:
    """The model's outputs for a batch of observations, as an Exploration sees them.

    `inputs`: logits (PPO, discrete), Q-values (DQN) or `[mean, log_std]` (continuous).
    """

    def __init__(self, dist_class: Any, inputs: np.ndarray, rng: np.random.Generator):
        self.dist_class = dist_class
        self.inputs = inputs
        self.rng = rng

    def sample(self) -> np.ndarray:
        """Actions drawn from the distribution."""
        return self.dist_class.act(self.inputs, self.rng, True)[0]

    def deterministic_sample(self) -> np.ndarray:
        """The most likely action of every row (the greedy action for Q-values)."""
        return self.dist_class.act(self.inputs, self.rng, False)[0]

    def logp(self, actions: np.ndarray) -> np.ndarray:
        return self.dist_class.logp(self.inputs, actions)


@refuse(
    "ray.rllib.utils.exploration.exploration.Exploration",
    OLD_API_STACK,
    "RLlib's old-stack Exploration hooks (Policy calls, tf sessions, trajectory "
    "postprocessing); the exploration classes here only draw actions for "
    "Algorithm.compute_single_action and the EnvRunners",
    "before_compute_actions",
    "get_exploration_optimizer",
    "on_episode_end",
    "on_episode_start",
    "postprocess_trajectory",
)
class Exploration:
    """Base class. Subclasses override `get_exploration_action` and may keep state (returned by
    `get_state`, restored by `set_state`) and report numbers (`get_info`, shown in the results
    under `env_runners`)."""

    def __init__(
        self, action_space: gym.Space, *, worker_index: int = 0, num_workers: int = 0, **kwargs: Any
    ):
        self.action_space = action_space
        self.worker_index = worker_index
        self.num_workers = num_workers

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions for a batch and their log-likelihoods under the distribution. `explore=False`
        must be deterministic: the greedy / most likely action."""
        if explore:
            actions = action_distribution.sample()
        else:
            actions = action_distribution.deterministic_sample()
        return actions, action_distribution.logp(actions)

    def get_info(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        pass

    def _random_actions(self, n: int, rng: np.random.Generator) -> np.ndarray:
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            return rng.integers(space.n, size=n) + int(space.start)
        if not isinstance(space, gym.spaces.Box):  # the constructors take Discrete or Box
            raise ValueError(f"random actions need a Discrete or Box space, not {space}")
        low, high = space.low.ravel(), space.high.ravel()
        bounded = np.isfinite(low) & np.isfinite(high)
        low, high = np.where(bounded, low, -1.0), np.where(bounded, high, 1.0)
        return rng.uniform(low, high, size=(n, low.size)).astype(np.float32)


class NeedsDiscreteActions(ValueError):
    """An exploration type for Q-values (EpsilonGreedy, SoftQ) given another action space."""


def _require_discrete(name: str, action_space: gym.Space) -> None:
    if not isinstance(action_space, gym.spaces.Discrete):
        raise NeedsDiscreteActions(
            f"exploration_config type {name!r} needs a Discrete action space; the "
            f"env's is {action_space}. Use StochasticSampling for Box actions"
        )


class StochasticSampling(Exploration):
    """Samples from the action distribution; uniformly random actions for the first
    `random_timesteps` env steps."""

    def __init__(self, action_space: gym.Space, *, random_timesteps: int = 0, **kwargs: Any):
        super().__init__(action_space, **kwargs)
        problem = int_at_least(0)(random_timesteps)
        if problem is not None:
            raise ValueError(
                f"StochasticSampling(random_timesteps={random_timesteps!r}): must be {problem}"
            )
        self.random_timesteps = random_timesteps

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        if explore and timestep < self.random_timesteps:
            actions = self._random_actions(len(action_distribution.inputs), action_distribution.rng)
            return actions, action_distribution.logp(actions)
        return action_distribution.dist_class.act(
            action_distribution.inputs, action_distribution.rng, explore
        )


class EpsilonGreedy(Exploration):
    """With probability epsilon a uniformly random action, else the greedy one. Epsilon anneals
    linearly from `initial_epsilon` to `final_epsilon` over `epsilon_timesteps` env steps after
    `warmup_timesteps`; or follows `epsilon_schedule` (a number or `[(t, value), ...]`)."""

    def __init__(
        self,
        action_space: gym.Space,
        *,
        initial_epsilon: float = 1.0,
        final_epsilon: float = 0.05,
        epsilon_timesteps: int = 100_000,
        warmup_timesteps: int = 0,
        epsilon_schedule: Any = None,
        **kwargs: Any,
    ):
        super().__init__(action_space, **kwargs)
        _require_discrete("EpsilonGreedy", action_space)
        # Checked even when epsilon_schedule wins over them: a bad value is never ignored.
        for name, rate in (("initial_epsilon", initial_epsilon), ("final_epsilon", final_epsilon)):
            Schedule(rate, setting=f"EpsilonGreedy({name})", low=0.0, high=1.0)
        if epsilon_schedule is None:
            for name, value in (
                ("epsilon_timesteps", epsilon_timesteps),
                ("warmup_timesteps", warmup_timesteps),
            ):
                problem = int_at_least(0)(value)
                if problem is not None:
                    raise ValueError(f"EpsilonGreedy({name}={value!r}): must be {problem}")
            points: list[tuple[int, float]] = [(0, initial_epsilon)]
            if warmup_timesteps:
                points.append((warmup_timesteps, initial_epsilon))
            if epsilon_timesteps:
                points.append((warmup_timesteps + epsilon_timesteps, final_epsilon))
            else:
                points[-1] = (points[-1][0], final_epsilon)
            epsilon_schedule = points
        self.schedule = Schedule(
            epsilon_schedule, setting="EpsilonGreedy(epsilon_schedule)", low=0.0, high=1.0
        )
        self.cur_epsilon = self.schedule.value(0)

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        greedy = action_distribution.deterministic_sample()
        if not explore:
            return greedy, action_distribution.logp(greedy)
        self.cur_epsilon = self.schedule.value(timestep)
        rng = action_distribution.rng
        n = len(greedy)
        random_rows = rng.random(n) < self.cur_epsilon
        actions = np.where(random_rows, self._random_actions(n, rng), greedy)
        return actions, action_distribution.logp(actions)

    def get_info(self) -> dict[str, float]:
        return {"cur_epsilon": self.cur_epsilon}


class SoftQ(Exploration):
    """Boltzmann exploration: samples from softmax(inputs / temperature)."""

    def __init__(self, action_space: gym.Space, *, temperature: float = 1.0, **kwargs: Any):
        super().__init__(action_space, **kwargs)
        _require_discrete("SoftQ", action_space)
        problem = number_above(0)(temperature)
        if problem is not None:
            raise ValueError(f"SoftQ(temperature={temperature!r}): must be {problem}")
        self.temperature = float(temperature)

    def get_exploration_action(
        self, *, action_distribution: ActionDistribution, timestep: int, explore: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        if not explore:
            return super().get_exploration_action(
                action_distribution=action_distribution, timestep=timestep, explore=False
            )
        scaled = action_distribution.inputs / self.temperature
        actions, _ = action_distribution.dist_class.act(scaled, action_distribution.rng, True)
        return actions, action_distribution.logp(actions)


BUILT_IN_TYPES = {
    "StochasticSampling": StochasticSampling,
    "EpsilonGreedy": EpsilonGreedy,
    "SoftQ": SoftQ,
}


def resolve_type(type_: Any, setting: str = "exploration_config['type']") -> type[Exploration]:
    """The Exploration class that `type_` names: a built-in name, RLlib's full path to a
    built-in, an importable "module.Class" path, or the class itself."""
    if isinstance(type_, type):
        if not issubclass(type_, Exploration):
            raise ValueError(
                f"{setting}={type_.__qualname__}: exploration classes must subclass "
                "trainer.core.exploration.Exploration"
            )
        return type_
    if isinstance(type_, str):
        short = type_.rsplit(".", 1)[-1]
        if type_ in BUILT_IN_TYPES or (type_.startswith("ray.rllib.") and short in BUILT_IN_TYPES):
            return BUILT_IN_TYPES[short]
        if "." in type_:
            module_name, _, class_name = type_.rpartition(".")
            try:
                cls = getattr(importlib.import_module(module_name), class_name)
            except (ImportError, AttributeError) as error:
                raise ValueError(f"{setting}={type_!r}: cannot import it ({error})") from None
            return resolve_type(cls, setting)
    raise ValueError(
        f"{setting}={type_!r}: must be one of {sorted(BUILT_IN_TYPES)}, an importable "
        "'module.Class' path, or a subclass of trainer.core.exploration.Exploration"
    )


def check_exploration_config(exploration_config: dict, setting: str) -> None:
    """Fails early on an unknown type, unknown constructor arguments or bad values."""
    if not isinstance(exploration_config, dict):
        raise ValueError(f"{setting}={exploration_config!r}: must be a dict with a 'type' key")
    if not exploration_config:
        return
    if "type" not in exploration_config:
        raise ValueError(
            f"{setting}={exploration_config!r}: the 'type' key is missing; one of "
            f"{sorted(BUILT_IN_TYPES)} or an Exploration subclass"
        )
    cls = resolve_type(exploration_config["type"], f"{setting}['type']")
    args = {k: v for k, v in exploration_config.items() if k != "type"}
    params = inspect.signature(cls.__init__).parameters
    built_in = cls in BUILT_IN_TYPES.values()
    accepts_any = not built_in and any(p.kind is p.VAR_KEYWORD for p in params.values())
    known = [
        p
        for p in params
        if p not in ("self", "action_space", "kwargs", "worker_index", "num_workers")
    ]
    unknown = [k for k in args if k not in known]
    if unknown and not accepts_any:
        raise ValueError(
            f"{setting}: {cls.__name__} has no argument {unknown[0]!r}; its arguments are {known}"
        )
    if built_in:
        # Built-ins check their values in the constructor; a probe instance finds bad ones now.
        try:
            cls(gym.spaces.Discrete(2), **args)
        except ValueError as error:
            raise ValueError(f"{setting}: {error}") from None


def make_exploration(
    exploration_config: dict,
    action_space: gym.Space,
    *,
    worker_index: int = 0,
    num_workers: int = 0,
) -> Exploration:
    config = dict(exploration_config)
    cls = resolve_type(config.pop("type"))
    return cls(action_space, worker_index=worker_index, num_workers=num_workers, **config)


def module_exploration(
    exploration_config: dict,
    action_space: gym.Space,
    *,
    type_chosen: bool,
    worker_index: int = 0,
    num_workers: int = 0,
) -> Exploration:
    """A module's exploration in an EnvRunner: `make_exploration` of `exploration_config`,
    except where the algorithm's default type (the user named none: not `type_chosen`) is for
    Q-values (DQN's EpsilonGreedy) and the module acts in another action space. Such a module
    is the user's own (the algorithm's own module refuses that space when built), and it
    samples from its own action distribution, as a custom module on RLlib's new stack does
    (whose DQN keeps its epsilon in its own module). A type the user named is kept, and so is
    its error."""
    try:
        return make_exploration(
            exploration_config, action_space, worker_index=worker_index, num_workers=num_workers
        )
    except NeedsDiscreteActions:
        if type_chosen:
            raise
        return StochasticSampling(action_space, worker_index=worker_index, num_workers=num_workers)
