"""`SACLearner`: one gradient step of SAC (Haarnoja et al. 2018) on a replay batch, in numpy,
with RLlib 2.60's losses (`SACTorchLearner`). The loss, its backward pass and its statistics
are `loss.py`'s (`continuous_loss` for Box actions, `discrete_loss` for Discrete ones); this
learner holds what they train and steps it.

The loss leaves each optimizer's gradient in its slice of the module's flat gradient buffer
and log_alpha's beside; each optimizer then steps its slice of the module's flat parameters:
"qf" and "qf_twin" (critic_lr), "policy" (actor_lr), and "alpha" (alpha_lr) on log_alpha;
Adam with eps 1e-7, as RLlib's (`grad_clip` by `grad_clip_by` first, each optimizer's own
gradient). The target critics (a copy of the module) follow the critics every
`target_network_update_freq` sampled env steps: target <- tau * critic + (1 - tau) * target.
The per-row TD errors go back under TD_ERROR_KEY for the prioritized buffer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.sac.loss import (
    ALPHA,
    POLICY,
    QF,
    QF_TWIN,
    SACLoss,
    continuous_loss,
    discrete_loss,
)
from trainer.algorithms.sac.sac_module import SACModule
from trainer.core.blas import BlasThreads
from trainer.core.learner import LR_KEY, Learner, LearningRate, UpdateResults
from trainer.core.learner_components import Names, own_learner_state, rllib_learner_state
from trainer.core.models import SpaceInfo
from trainer.core.nn import Adam, check_finite_update, clip_gradients
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN, TD_ERROR_KEY
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import (
    require_float_array,
    require_generator_state,
    require_int,
    require_map,
)

if TYPE_CHECKING:
    from trainer.algorithms.sac.config import SACConfig

#: RLlib's SAC optimizers' eps (`SACTorchLearner.configure_optimizers_for_module`).
ADAM_EPS = 1e-7


def target_entropy_of(config: SACConfig, spaces: SpaceInfo) -> float:
    """`target_entropy`, with "auto" (or None) as RLlib's: -prod(action_space.shape), which is
    -1 for Discrete actions."""
    value = config.target_entropy
    if value is None or value == "auto":
        return -float(spaces.action_dim) if spaces.action_discrete_n is None else -1.0
    return float(value)


def recorded_train_batch(batch: dict[str, Any], gamma: float) -> dict[str, Any]:
    """The replay buffer's train-batch columns for recorded one-step transitions (the offline
    reader's, RLlib's column names): `next_obs`, the discounts gamma, the weights 1."""
    rows = len(batch["rewards"])
    return {
        **batch,
        "next_obs": batch["new_obs"],
        "discounts": np.full(rows, gamma, dtype=np.float32),
        "weights": np.ones(rows, dtype=np.float32),
    }


class SACLearner(Learner):
    """See the module docstring. `build` makes the module (a multi-agent run's, from its
    spec); None builds the config's for `spaces`."""

    config: SACConfig
    module: SACModule
    loss_name = "SAC"
    #: Whether the entropy weight alpha is learned (its own optimizer, "alpha").
    learns_alpha = True
    extra_state_keys: tuple[str, ...] = (
        "target",
        "log_alpha",
        "optimizers",
        "last_target_update_step",
        "rng",
    )

    def __init__(
        self,
        config: SACConfig,
        spaces: SpaceInfo | None,
        build: Callable[[], Any] | None = None,
        module: SACModule | None = None,
    ):
        """`module`: the module to train, built already by `build` (its target critics are
        then built by `build` again)."""
        if build is None:
            module = config.build_module(spaces, seed=config.seed)
            target = config.build_module(spaces, seed=config.seed)
        else:
            module = module if module is not None else build()
            target = build()
        self.config = config
        self.module = module
        self.target = target
        self.target.flat_params[:] = module.flat_params
        self.target_entropy = target_entropy_of(config, module.spaces) if self.learns_alpha else 0.0
        initial_alpha = config.initial_alpha if self.learns_alpha else 1.0
        self.log_alpha = np.array([math.log(initial_alpha)], dtype=np.float32)
        flat = module.flat_params
        critic_sizes = [
            sum(p.size for net in critic.nets.values() for p in net.params)
            for critic in module.critics
        ]
        start = module.critic_offset
        #: Each optimizer's slice of the flat parameters (and of the gradient buffer).
        self.slices: dict[str, slice] = {POLICY: slice(0, start)}
        rates = {POLICY: config.actor_lr}
        for name, size in self._critic_optimizers(critic_sizes).items():
            self.slices[name] = slice(start, start + size)
            rates[name] = config.critic_lr
            start += size
        for name, (size, rate) in self._more_optimizers().items():
            self.slices[name] = slice(start, start + size)
            rates[name] = rate
            start += size
        #: Each slice's parameter tensors' sizes, in order (`grad_clip_by="norm"` clips each).
        sizes, offset = [p.size for p in module.parameters()], 0
        self._tensor_sizes: dict[str, list[int]] = {}
        for name, part in self.slices.items():
            self._tensor_sizes[name] = []
            while offset < part.stop:
                self._tensor_sizes[name].append(sizes.pop(0))
                offset += self._tensor_sizes[name][-1]
        self.learning_rates = {
            name: LearningRate(rates[name], setting=f"{name}_lr") for name in self.slices
        }
        self.optimizers: dict[str, Adam] = {
            name: Adam(flat[part], lr=self.learning_rates[name].initial, eps=ADAM_EPS)
            for name, part in self.slices.items()
        }
        if self.learns_alpha:
            self._tensor_sizes[ALPHA] = [1]
            self.learning_rates[ALPHA] = LearningRate(config.alpha_lr, setting="alpha_lr")
            self.optimizers[ALPHA] = Adam(
                self.log_alpha, lr=self.learning_rates[ALPHA].initial, eps=ADAM_EPS
            )
        #: RLlib's `Learner.optimizer`-like handle: the policy's Adam.
        self.optimizer = self.optimizers[POLICY]
        self._alpha_grad = np.zeros(1, dtype=np.float32)
        self._last_target_update_step = 0
        # The reparameterized draws: seeded from the config's seed (a stream of its own).
        self.rng = np.random.default_rng(None if config.seed is None else [config.seed, 0x5AC])
        #: Updates run on one BLAS thread unless the user sized the pools (see BlasThreads).
        self.update_threads = BlasThreads()

    def _critic_optimizers(self, critic_sizes: list[int]) -> dict[str, int]:
        """The critics' optimizers (critic_lr), by name, with the size of the slice each steps,
        in order, from each critic's size: RLlib's SAC steps each critic with its own ("qf",
        "qf_twin")."""
        return dict(zip((QF, QF_TWIN), critic_sizes, strict=False))

    def _more_optimizers(self) -> dict[str, tuple[int, Any]]:
        """A subclass's optimizers beyond the policy's and the critics', by name: the size of
        the slice each steps (after the critics', in order) and its rate setting; none here."""
        return {}

    # -- the update ----------------------------------------------------------------------------
    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One step of every optimizer on `batch` (`replay_buffer.sample_train_batch`'s), then
        the target critics' update when due. Returns RLlib's statistics and, under
        `TD_ERROR_KEY`, the per-row TD errors."""
        for name, rate in self.learning_rates.items():
            rate.apply(self.optimizers[name], num_env_steps_sampled_lifetime)
        loss = self.loss_and_gradients(batch)
        self._alpha_grad[0] = loss.d_log_alpha
        results = self.loss_results(loss)
        results.update(self._apply_gradients(loss.losses))
        self.update_target_network(num_env_steps_sampled_lifetime)
        return results

    def loss_and_gradients(self, batch: dict[str, np.ndarray]) -> SACLoss:
        """SAC's loss on `batch` (`loss.py`): each optimizer's gradient of its own loss left
        in the module's gradient buffer, log_alpha's in the result."""
        if self.module.continuous:
            return continuous_loss(
                batch, self.module, self.target, self.log_alpha, self.target_entropy, self.rng
            )
        return discrete_loss(batch, self.module, self.target, self.log_alpha, self.target_entropy)

    @staticmethod
    def loss_results(loss: SACLoss) -> UpdateResults:
        """The loss's statistics, the batch's size (RLlib's `module_train_batch_size_mean`)
        and, under `TD_ERROR_KEY`, the per-row TD errors."""
        return {
            **loss.stats,
            MODULE_TRAIN_BATCH_SIZE_MEAN: float(len(loss.td_error)),
            TD_ERROR_KEY: loss.td_error,
        }

    def gradient_size(self) -> int:
        """The numbers one all-reduce of an update carries: the module's flat gradient,
        log_alpha's and every optimizer's loss."""
        # (the losses: one per optimizer and per critic; 16 is room for them)
        return int(self.module.flat_params.size) + int(self._alpha_grad.size) + 16

    def _apply_gradients(self, losses: dict[str, float]) -> dict[str, float]:
        """Clips each optimizer's gradient (`grad_clip`, `grad_clip_by`), checks every loss
        and gradient is finite before any weight changes, then steps every optimizer. Returns
        RLlib's `{optimizer}_learning_rate` and, with a `grad_clip`,
        `gradients_{optimizer}_global_norm`."""
        config = self.config
        gradient = self.module.gradient_buffer()[0]
        if self.gradient_allreduce is not None:  # the mean over the data-parallel learners
            names = sorted(losses)
            mean = self.gradient_allreduce.mean(
                np.concatenate(
                    [gradient, self._alpha_grad, [losses[name] for name in names]],
                    dtype=np.float64,
                )
            )
            gradient[:] = mean[: gradient.size]
            self._alpha_grad[:] = mean[gradient.size : gradient.size + self._alpha_grad.size]
            losses = dict(zip(names, mean[-len(names) :].tolist(), strict=True))
        parts = {name: gradient[part] for name, part in self.slices.items()}
        if ALPHA in self.optimizers:
            parts[ALPHA] = self._alpha_grad
        norms: dict[str, float] = {}
        for name, part in parts.items():
            sizes = self._tensor_sizes[name]
            norms[name] = clip_gradients(part, config.grad_clip, config.grad_clip_by, sizes)
            check_finite_update(losses[name], norms[name], self.loss_name)
        # RLlib's statistics: each optimizer's rate for this update, and with a global-norm
        # grad_clip each optimizer's norm before clipping.
        results = {f"{name}_{LR_KEY}": adam.lr for name, adam in self.optimizers.items()}
        for name, part in parts.items():
            self.optimizers[name].step(part)
        if config.grad_clip is not None and config.grad_clip_by == "global_norm":
            results.update({f"gradients_{name}_global_norm": norm for name, norm in norms.items()})
        return results

    def update_target_network(self, num_env_steps_sampled_lifetime: int) -> None:
        """Moves the target critics towards the critics when `target_network_update_freq`
        sampled env steps passed since the last time (0: after every update)."""
        config = self.config
        if (
            num_env_steps_sampled_lifetime - self._last_target_update_step
            >= config.target_network_update_freq
        ):
            critics = slice(self.module.critic_offset, None)
            target = self.target.flat_params[critics]
            target *= 1.0 - config.tau
            target += config.tau * self.module.flat_params[critics]
            self._last_target_update_step = num_env_steps_sampled_lifetime

    # -- weights -------------------------------------------------------------------------------
    def get_weights(self) -> dict[str, np.ndarray]:
        """The weights the EnvRunners sample with: the policy's (their modules are
        inference-only, as RLlib's; the critics stay here)."""
        module = self.module
        return {
            name: param.copy()
            for name, param in zip(module.parameter_names(), module.parameters(), strict=True)
            if name.startswith("pi")
        }

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Sets the policy's weights (`get_weights()`'s), or the whole module's."""
        module = self.module
        if set(weights) != set(module.policy_parameter_names()):
            module.set_weights(weights)
            return
        full = module.get_weights()
        full.update(weights)
        module.set_weights(full)

    # -- state (checkpoints) -----------------------------------------------------------------
    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        own = {"module": self.module.get_weights(), **self.get_extra_state()}
        if components is None and not_components is None:
            return own
        return rllib_learner_state(self, own, components, not_components)

    def check_state(self, state: dict, where: str = "learner") -> None:
        require_map(state, where, ("module", *self.extra_state_keys))
        self.module.check_weights(state["module"], f"{where}['module']")
        self.check_extra_state(state, where)

    def set_state(self, state: dict) -> None:
        state = own_learner_state(self, state, lambda: SACLearner.get_state(self))
        self.check_state(state)
        self.module.set_weights(state["module"])
        self.set_extra_state(state)

    def get_extra_state(self) -> dict:
        return {
            "target": self.target.get_weights(),
            "log_alpha": self.log_alpha.copy(),
            "optimizers": {name: adam.get_state() for name, adam in self.optimizers.items()},
            "last_target_update_step": self._last_target_update_step,
            "rng": generator_state(self.rng),
        }

    def check_extra_state(self, state: dict, where: str) -> None:
        self.target.check_weights(state["target"], f"{where}['target']")
        require_float_array(state["log_alpha"], f"{where}['log_alpha']", (1,))
        optimizers = state["optimizers"]
        require_map(optimizers, f"{where}['optimizers']", tuple(self.optimizers))
        for name, adam in self.optimizers.items():
            adam.check_state(optimizers[name], f"{where}['optimizers'][{name!r}]")
        require_int(state["last_target_update_step"], f"{where}['last_target_update_step']")
        require_generator_state(state["rng"], f"{where}['rng']")

    def set_extra_state(self, state: dict) -> None:
        self.target.set_weights(state["target"])
        self.log_alpha[...] = state["log_alpha"]
        for name, adam in self.optimizers.items():
            adam.set_state(state["optimizers"][name])
        self._last_target_update_step = int(state["last_target_update_step"])
        set_generator_state(self.rng, state["rng"])
