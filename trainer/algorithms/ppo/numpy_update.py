"""The default torch PPO learner's update, computed in numpy.

RLlib's default framework is torch, so an unmodified RLlib script trains `PPOTorchLearner` on
`DefaultPPOTorchRLModule`. Where both are exactly the defaults, the update runs the numpy
`PPOLearner`'s loss, backward pass and Adam on a numpy `PolicyModule` with the same networks,
kept the same as the torch module and optimizer by a `NumpyTwin` (`trainer.torch_rl.numpy_twin`,
which says why and how). The conditions:

- the learner is `PPOTorchLearner` itself (a subclass may override any hook) and its config
  keeps the critic (`use_critic`: without it torch's Adam skips the value network's
  parameters, which have no gradient, where the numpy Adam would step them);
- the module is the default one itself (`DefaultPPOTorchRLModule` / `PPOTorchRLModule`: the
  class whose EnvRunner forward runs in numpy, `numpy_forward_class`) with an MLP encoder, no
  LSTM and no forward hooks, over Box or Discrete observations;
- the optimizer is the default one (`numpy_twin.plain_adam`).

Anything else trains in torch. The minibatches are drawn from the torch learner's generator
and the KL coefficient is the torch learner's, so the two updates take the same steps; the
statistics are the same as the torch learner's (`loss.py` defines them once for both). The
products are numpy's (OpenBLAS): float32 results agree with torch's to rounding, not to the
last bit (CartPole, 32 minibatch steps at lr 1e-3: weights within 2e-7 of the torch update's).

What a user calls by hand runs in torch: `update_from_batch` and RLlib's hooks
(`compute_losses`, `compute_gradients`, `postprocess_gradients`, `apply_gradients`) give the
same weights and Adam state bit for bit (`tests/test_ppo_torch_hand_step.py`). The twin keeps
the torch side exact around them: the numpy Adam's state is written into torch's before a
torch step (`NumpyTwinHost.apply_gradients`), the weights are one memory, and the next update
reads the torch Adam's stepped state (`NumpyTwin.pull`). Those weights are transposed views
of numpy's matrices: the fused torch Adam gets each gradient in its parameter's layout
(`trainer.torch_rl.learner.keep_gradients_in_parameter_layout`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from trainer.algorithms.ppo.loss import CURR_ENTROPY_COEFF
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.numpy_inference import NumpyPPOInference
from trainer.algorithms.ppo.ppo_learner import DEFAULT_OPTIMIZER_LR, PPOLearner
from trainer.algorithms.ppo.state_conversion import torch_names_of_numpy_parameters
from trainer.core.learner import UpdateResults
from trainer.core.models import StateConversionError
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.numpy_twin import (
    NumpyTwin,
    adam_like,
    is_default_mlp_module,
    plain_adam,
    twin_parameters,
)

if TYPE_CHECKING:  # the torch learner imports this module: typed by what this one reads of it
    from trainer.algorithms.ppo.torch_learner_view import PPOTorchLearnerView as PPOTorchLearner


class NumpyPPOUpdate:
    """A default `PPOTorchLearner`'s update in numpy (see the module docstring):
    `NumpyPPOUpdate.of(learner)` builds one, or None where the learner trains in torch."""

    def __init__(
        self, learner: PPOTorchLearner, numpy_learner: PPOLearner, twin: NumpyTwin
    ) -> None:
        self.learner = learner
        self.numpy_learner = numpy_learner
        self.twin = twin

    @classmethod
    def of(cls, learner: PPOTorchLearner) -> NumpyPPOUpdate | None:
        module = learner.rl_module
        config = learner.config
        # Without the critic, torch's Adam skips the value network (no gradient) where the
        # numpy Adam would step it.
        if not is_default_mlp_module(learner, NumpyPPOInference) or not config.use_critic:
            return None
        if learner.stateful or not module.has_default_parts():
            return None
        entry = plain_adam(learner)
        if entry is None:
            return None
        try:
            numpy_module = PolicyModule(
                dataclasses.replace(learner.spaces, keep_obs_shape=False), module._config
            )
            names = torch_names_of_numpy_parameters(module._config, module, "torch learner")
        except (StateConversionError, ValueError, TypeError, KeyError):
            return None  # networks the numpy module does not mirror train in torch
        numpy_learner = PPOLearner(config, None, module=numpy_module)
        adam = adam_like(learner, entry, numpy_module.flat_params)
        numpy_learner.optimizer = adam
        # One minibatch shuffler: the torch learner's (its state is the learner's state); one
        # entropy coefficient's scheduler, which the torch learner steps.
        numpy_learner.rng = learner.rng
        numpy_learner.entropy_coeff_scheduler = learner.entropy_coeff_scheduler
        trained = twin_parameters(numpy_module, names, dict(module.named_parameters()), adam)
        if trained is None:
            return None
        return cls(learner, numpy_learner, NumpyTwin(learner, entry, adam, trained))

    def usable(self) -> bool:
        """Whether the next update can run in numpy (`NumpyTwin.usable`)."""
        return self.twin.usable()

    def update(
        self,
        episodes: list[SingleAgentEpisode],
        num_env_steps_sampled_lifetime: int | None,
        num_total_minibatches: int = 0,
        minibatch_rng: np.random.Generator | None = None,
    ) -> UpdateResults:
        """`PPOTorchLearner.update`'s results, computed in numpy (call when `usable()`);
        data-parallel learners' steps take the mean of their gradients as the torch steps do
        (the torch learner's `gradient_allreduce`)."""
        learner = self.learner
        numpy_learner = self.numpy_learner
        numpy_learner.gradient_allreduce = learner.gradient_allreduce
        learner.metrics.reset()
        learner.apply_lr_schedule(num_env_steps_sampled_lifetime)
        self.twin.pull()
        self.twin.sync_settings()
        numpy_learner.kl_coeff = learner.kl_coeff
        try:
            # The rate is set above (the torch optimizer's, schedule applied): None keeps it.
            results = numpy_learner.update(
                episodes,
                num_env_steps_sampled_lifetime=None,
                num_total_minibatches=num_total_minibatches,
                minibatch_rng=minibatch_rng,
            )
        finally:
            # Also after a NonFiniteUpdateError: the minibatch steps before it count, as in
            # torch, where each step writes the parameters.
            self.twin.stepped()
            learner.kl_coeff = numpy_learner.kl_coeff
        learner.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime or 0}
        )
        results.update(learner.update_results())
        results[CURR_ENTROPY_COEFF] = learner.entropy_coeff
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR] = self.twin.rate()
        return results
