"""The default torch DQN learner's update, computed in numpy.

RLlib's default framework is torch, so an unmodified RLlib script trains `DQNTorchLearner` on
`DefaultDQNTorchRLModule`, one replay batch of a few dozen rows per update: through torch,
almost all of such a step is dispatch. Where both are exactly the defaults, the gradient step
runs the numpy `DQNLearner`'s step (`loss.py`'s numpy loss and its backward pass, then
Adam) on a numpy `QModule` with the same networks (its target network holds the torch target
networks' weights), kept the same as the torch module and optimizer by a `NumpyTwin`
(`trainer.torch_rl.numpy_twin`, which says why and how). The target networks still move in torch (`after_gradient_based_update`), and the next
update reads them again. The conditions:

- the learner is `DQNTorchLearner` itself (a subclass may override any hook);
- the module is the default one itself (`DefaultDQNTorchRLModule`: the class whose EnvRunner
  forward runs in numpy, `numpy_forward_class`) with an MLP encoder, the default parts (not a
  `DQNCatalog` subclass's) and no forward hooks, over Box or Discrete observations;
- the optimizer is the default one (`numpy_twin.plain_adam`).

Anything else trains in torch. The statistics are the torch learner's (the TD errors for the
priorities as absolute values). The products are numpy's (OpenBLAS): float32 results agree
with torch's to rounding, not to the last bit.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from trainer.algorithms.dqn.dqn_learner import DQNLearner
from trainer.algorithms.dqn.numpy_inference import NumpyDQNInference
from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.dqn.torch_module import torch_names_of_numpy_parameters
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, TD_ERROR_KEY
from trainer.torch_rl.numpy_twin import (
    NumpyTwin,
    adam_like,
    is_default_mlp_module,
    plain_adam,
    twin_parameters,
)

if TYPE_CHECKING:
    from trainer.algorithms.dqn.config import DQNConfig


class TorchDQNLearner(Protocol):
    """What the numpy update reads of the `DQNTorchLearner` it stands in for (the torch learner
    imports this module, so it is not named here); the `numpy_twin` functions read the rest
    (its optimizer, its module's parameters)."""

    #: Data-parallel learners' all-reduce (`Learner.gradient_allreduce`).
    gradient_allreduce: Any

    @property
    def config(self) -> DQNConfig: ...

    @property
    def spaces(self) -> SpaceInfo: ...

    @property
    def rl_module(self) -> Any: ...

    def apply_lr_schedule(self, num_env_steps_sampled_lifetime: int | None) -> None: ...

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None: ...


class NumpyDQNUpdate:
    """A default `DQNTorchLearner`'s gradient step in numpy (see the module docstring):
    `NumpyDQNUpdate.of(learner)` builds one, or None where the learner trains in torch."""

    def __init__(self, learner: TorchDQNLearner, numpy_learner: DQNLearner, twin: NumpyTwin):
        self.learner = learner
        self.numpy_learner = numpy_learner
        self.twin = twin

    @classmethod
    def of(cls, learner: TorchDQNLearner) -> NumpyDQNUpdate | None:
        module = learner.rl_module
        if not is_default_mlp_module(learner, NumpyDQNInference) or not module.has_default_parts():
            return None
        entry = plain_adam(learner)
        if entry is None:
            return None
        spaces = dataclasses.replace(learner.spaces, keep_obs_shape=False)
        try:
            numpy_learner = DQNLearner(
                learner.config,
                None,
                build=lambda: QModule(
                    spaces,
                    module._config,
                    dueling=module.uses_dueling,
                    **module.support_settings(),
                ),
            )
        except (ValueError, TypeError, KeyError):
            return None  # networks the numpy module does not mirror train in torch
        adam = adam_like(learner, entry, numpy_learner.module.flat_params)
        numpy_learner.optimizer = adam
        params = dict(module.named_parameters())
        trained = twin_parameters(
            numpy_learner.module, torch_names_of_numpy_parameters(module), params, adam
        )
        targets = twin_parameters(
            numpy_learner.target, torch_names_of_numpy_parameters(module, "_target_"), params
        )
        if trained is None or targets is None or len(trained) + len(targets) != len(params):
            return None
        return cls(learner, numpy_learner, NumpyTwin(learner, entry, adam, trained, targets))

    def usable(self) -> bool:
        """Whether the next update can run in numpy (`NumpyTwin.usable`)."""
        return self.twin.usable()

    def update(
        self, batch: dict[str, np.ndarray], num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """`DQNTorchLearner.update`'s results, computed in numpy (call when `usable()`)."""
        learner = self.learner
        # Data-parallel learners' steps take the mean of their gradients, as the torch ones.
        self.numpy_learner.gradient_allreduce = learner.gradient_allreduce
        learner.apply_lr_schedule(num_env_steps_sampled_lifetime)
        self.twin.pull()
        self.twin.sync_settings()
        try:
            results = self.numpy_learner.gradient_step(batch)
        finally:
            self.twin.stepped()
        # The target networks move in torch (and the torch lr schedulers would step there).
        learner.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime}
        )
        results[TD_ERROR_KEY] = np.abs(results[TD_ERROR_KEY]).astype(np.float64)
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR_KEY] = self.twin.rate()
        return results
