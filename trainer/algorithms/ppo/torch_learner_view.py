"""What the numpy update of PPO's torch learner (`numpy_update.py`) reads of the
`PPOTorchLearner` it stands in for: the torch learner imports the numpy update, so the update
types the learner against this protocol, not its class."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from trainer.core.models import SpaceInfo
from trainer.core.schedules import Scheduler
from trainer.metrics.metrics_logger import MetricsLogger

if TYPE_CHECKING:
    from trainer.algorithms.ppo.config import PPOConfig


class PPOTorchLearnerView(Protocol):
    """A `PPOTorchLearner` as the numpy update uses it: its config, module, spaces and state
    (`PPOLearnerState`'s KL coefficient, shuffler and entropy schedule, shared with the numpy
    learner), and the hooks around an update; the `numpy_twin` functions read the rest (its
    optimizer, its module's parameters)."""

    kl_coeff: float
    #: Data-parallel learners' all-reduce (`Learner.gradient_allreduce`).
    gradient_allreduce: Any

    @property
    def config(self) -> PPOConfig: ...

    @property
    def rl_module(self) -> Any: ...

    @property
    def spaces(self) -> SpaceInfo: ...

    @property
    def stateful(self) -> bool: ...

    @property
    def rng(self) -> np.random.Generator: ...

    @property
    def entropy_coeff_scheduler(self) -> Scheduler: ...

    @property
    def entropy_coeff(self) -> float: ...

    @property
    def metrics(self) -> MetricsLogger: ...

    def apply_lr_schedule(self, num_env_steps_sampled_lifetime: int | None) -> None: ...

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None: ...

    def update_results(self) -> dict[str, Any]: ...
