"""The `Learner` interface: what an algorithm's learner is to the rest of the trainer.

One learner per algorithm, in the driver process (several learners are out of scope here). It
owns `module` (the network whose weights every EnvRunner samples with: `module.get_weights()`),
`optimizer` (Adam over `module.flat_params`), and the update rule. `Algorithm` reaches it only
through this interface: `update(...)` in its training step, the state methods for checkpoints,
`module` for weights and actions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import numpy as np

from trainer.core.nn import Adam
from trainer.core.schedules import Schedule

#: What `Learner.update` returns: statistic name -> value. Each is a float, except per-row
#: arrays that the algorithm takes out before logging them (DQN's TD errors under
#: `trainer.metrics.TD_ERROR_KEY`, as in RLlib's learner results).
UpdateResults = dict[str, float | np.ndarray]

#: RLlib's names (`ray.rllib.core.learner.learner`): the optimizer a learner registers when it
#: registers one (`TorchLearner.register_optimizer`), and common result keys.
DEFAULT_OPTIMIZER = "default_optimizer"
POLICY_LOSS_KEY = "policy_loss"
VF_LOSS_KEY = "vf_loss"
ENTROPY_KEY = "entropy"
LR_KEY = "learning_rate"


class LearnerConfig(Protocol):
    """What the learner machinery reads of an algorithm's config (an `AlgorithmConfig`; the
    learners sit below the algorithms and name none of their classes)."""

    lr: float | list
    optimizer: dict
    grad_clip: float | None
    grad_clip_by: str
    seed: int | None


class Learner(ABC):
    config: LearnerConfig
    module: Any
    #: The numpy learners' Adam; a torch optimizer for the torch learners.
    optimizer: Any

    @abstractmethod
    def update(self, data: Any, /, *, num_env_steps_sampled_lifetime: int) -> UpdateResults:
        """One training update on `data` (PPO: the sampled episodes; DQN: a replay batch), with
        the env steps sampled so far (for the learning-rate schedule and target updates);
        returns the update's statistics (losses, gradient norm, current lr, ...). Raises
        `trainer.errors.NonFiniteUpdateError` before the weights change if the loss or the
        gradient is not finite."""

    @abstractmethod
    def get_state(self) -> dict:
        """Weights, optimizer state and the learner's own counters, as plain data and arrays."""

    @abstractmethod
    def check_state(self, state: dict, where: str = "learner") -> None:
        """Raises `trainer.util.state_checks.StateError` unless `state` fits; changes nothing."""

    @abstractmethod
    def set_state(self, state: dict) -> None:
        """Takes `state` back after `check_state` (a state that does not fit changes nothing)."""


def adam_settings(optimizer: dict) -> dict:
    """`training(optimizer=...)` as `Adam`'s keyword arguments (numpy's and torch's)."""
    beta1, beta2 = optimizer.get(
        "betas", (optimizer.get("beta1", 0.9), optimizer.get("beta2", 0.999))
    )
    eps = optimizer.get("eps", optimizer.get("adam_epsilon", optimizer.get("epsilon", 1e-8)))
    return {"betas": (float(beta1), float(beta2)), "eps": float(eps)}


class LearningRate:
    """`training(lr=...)`: a constant, or RLlib's schedule `[[timestep, lr], ...]`, piecewise
    linear in the env steps sampled so far (the last rate after the last point)."""

    def __init__(self, lr: float | list, *, setting: str = "lr"):
        """`setting`: the name bad values are reported under."""
        self.schedule = Schedule(lr, setting=setting, low=0.0)

    def apply(self, optimizer: Adam, num_env_steps_sampled_lifetime: int | None) -> None:
        """Sets the optimizer's rate for the update about to run (a constant rate is left as
        it is: it may have come from a checkpoint)."""
        rate = self.scheduled(num_env_steps_sampled_lifetime)
        if rate is not None:
            optimizer.lr = rate

    def scheduled(self, num_env_steps_sampled_lifetime: int | None) -> float | None:
        """The schedule's rate at this many env steps; None for a constant rate or unknown
        steps (the optimizer's rate then stays as it is)."""
        if len(self.schedule.points) > 1 and num_env_steps_sampled_lifetime is not None:
            return self.schedule.value(num_env_steps_sampled_lifetime)
        return None

    @property
    def initial(self) -> float:
        return self.schedule.value(0)
