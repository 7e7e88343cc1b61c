"""`SACTorchLearner` (RLlib's `ray.rllib.algorithms.sac.torch.sac_torch_learner.SACTorchLearner`):
one gradient step of SAC on a replay batch for a torch module, with RLlib 2.60's losses and the
numpy `SACLearner`'s data flow and statistics.

`update(batch, num_env_steps_sampled_lifetime=...)` takes the replay buffer's train batch
(`obs`, `next_obs`, `actions`, `rewards`, `terminateds`, `discounts` = gamma ** the steps each
n-step transition spans, RLlib's `n_step` = those steps, `weights` = the importance weights),
preprocesses the observations as the EnvRunners did, and runs `TorchLearner.update_from_batch`:
the module's `forward_train` (`DefaultSACTorchRLModule`'s outputs), then RLlib's losses
(`torch_loss.py`; `loss.py`'s docstring writes out the math and the statistics): each
critic's importance-weighted Huber loss on the q-targets, the policy's and alpha's. Each loss
steps its own optimizer only, over its own parameters, as RLlib's `compute_gradients` does:
"qf" and "qf_twin" (critic_lr), "policy" (actor_lr) and "alpha" (alpha_lr, over
`curr_log_alpha`); Adam with eps 1e-7, rates or schedules. A loss names the tensor each
optimizer minimizes in `self._temp_losses[(module_id, "<optimizer name>_loss")]` (RLlib's
hand-over), so a subclass's `compute_loss_for_module` (RLlib's hook) may change any of them.

After the step, every `target_network_update_freq` sampled env steps, each target critic moves
towards its critic: target <- tau * critic + (1 - tau) * target. The results are the numpy
SACLearner's (RLlib's keys), with the per-row TD errors under `TD_ERROR_KEY` for the
prioritized buffer.

The squashed Gaussian's draws come from torch's CPU generator, run on a state of the learner's
own (seeded from the config's seed, saved in checkpoints; the global generator is left as it
was), so a seeded run and a resumed checkpoint draw the same noise (a module on a GPU draws
from the GPU's generator, which stays torch's). The learner state is the TorchLearner's (the
module's state, target critics included; each optimizer's Adam moments by parameter name,
`curr_log_alpha`'s among them) and `curr_log_alpha`, the env step of the last target update
and that generator state.

Where it differs from RLlib's: it is a TorchLearner, not a DQNTorchLearner subclass (the DQN
learner here is DQN's numpy-twin fast path); the bootstrap discount is the batch's `discounts`
column (gamma ** n_step, as RLlib computes it from `n_step`); the TD errors come back in the
update's results (`TD_ERROR_KEY`; a loss may also log them as RLlib does, an item series under
the module id); the results carry the numpy learner's keys;
Discrete actions with `twin_q=False` train (RLlib's discrete policy loss reads the twin's
Q-values unconditionally).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
import torch

from trainer.algorithms.sac.loss import (
    ALPHA,
    DISCOUNTS,
    N_STEP,
    POLICY,
    QF,
    QF_TWIN,
    STAT_KEYS,
    WEIGHTS,
)
from trainer.algorithms.sac.torch_loss import TorchSACLoss, continuous_loss, discrete_loss
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TargetNetworkAPI
from trainer.core.learner import UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.core.replay_update_call import rllib_replay_update
from trainer.metrics import (
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TD_ERROR_KEY,
)
from trainer.torch_rl.learner import (
    OwnGenerator,
    TorchLearner,
    adam_kernel,
    generator_state_for,
)
from trainer.torch_rl.target_networks import (
    TargetUpdateStepsAPI,
    update_target_network,
    with_target_networks,
)
from trainer.util.state_checks import require_float_array, require_int

if TYPE_CHECKING:
    from trainer.algorithms.sac.config import SACConfig

#: RLlib's SAC optimizers' eps.
ADAM_EPS = 1e-7
#: The name `curr_log_alpha`'s tensor has among the learner's parameters (its optimizer's
#: state is keyed by it).
LOG_ALPHA = "curr_log_alpha"


def target_entropy_for(config: SACConfig, action_space: gym.Space) -> float:
    """`target_entropy`, with "auto" (or None) as RLlib's: -prod(action_space.shape), which
    is -1 for Discrete actions."""
    value = config.target_entropy
    if value is None or value == "auto":
        return -float(np.prod(action_space.shape or ()))
    return float(value)


class SACTorchLearner(TargetUpdateStepsAPI, OwnGenerator, TorchLearner):
    """SAC's learner for torch modules (see the module docstring). RLlib's attributes:
    `curr_log_alpha[module_id]` (the trained log-temperature, a tensor of shape (1,)) and
    `target_entropy[module_id]`."""

    config: SACConfig
    algorithm_name = "SAC"
    #: Whether the entropy weight alpha is learned (its own optimizer, "alpha").
    learns_alpha = True
    #: Its steps are large products (256-wide networks, 256-row batches): one torch thread
    #: or two, timed (`TorchLearner.times_large_linear_steps`).
    times_large_linear_steps = True
    extra_state_keys: tuple[str, ...] = ("curr_log_alpha", "last_target_update_step", "rng")

    def __init__(
        self,
        config: SACConfig,
        module: Any,
        *,
        spaces: SpaceInfo | None = None,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the SACConfig; `module`: the full TorchRLModule to train (RLlib's SAC
        layout: `pi_encoder`, `pi`, `qf_encoder`, `qf` and with twin_q `qf_twin_encoder`,
        `qf_twin`; QNetAPI and TargetNetworkAPI), built by the caller, or a view of one (see
        `TorchLearner`); `spaces`: how the EnvRunners preprocessed the observations (the
        learner feeds the module the same), by default the view's, else the module's spaces;
        `module_id`: its id."""
        module = with_target_networks(module, "SACTorchLearner", "SAC")
        rl_module = getattr(module, "rl_module", module)
        device = next((p.device for p in rl_module.parameters()), torch.device("cpu"))
        # RLlib's trained temperature (in log form) and its target entropy, per module id;
        # made before the optimizers, which step the former (a learner that does not learn
        # alpha keeps them at 1 and 0).
        learns_alpha = self.learns_alpha
        self.curr_log_alpha: dict[str, torch.Tensor] = {
            module_id: torch.tensor(
                [math.log(config.initial_alpha if learns_alpha else 1.0)],
                dtype=torch.float32,
                device=device,
                requires_grad=True,
            )
        }
        self.target_entropy: dict[str, torch.Tensor] = {
            module_id: torch.tensor(
                target_entropy_for(config, rl_module.action_space) if learns_alpha else 0.0,
                dtype=torch.float32,
                device=device,
            )
        }
        #: The losses `compute_loss_for_module` hands to `compute_gradients`, by
        #: `(module_id, "<optimizer name>_loss")` (RLlib's `_temp_losses`).
        self._temp_losses: dict[tuple[str, str], torch.Tensor] = {}
        super().__init__(config, module, module_id=module_id)
        self.spaces: SpaceInfo = (
            spaces
            or getattr(module, "spaces", None)
            or SpaceInfo.from_spaces(
                cast(Any, rl_module).observation_space, cast(Any, rl_module).action_space
            ).keeping_obs_shape()
        )
        self.continuous = isinstance(cast(Any, rl_module).action_space, gym.spaces.Box)
        #: The sampled env step of the last target network update.
        self.last_target_update_step = 0
        #: The state of the generator the module's draws use during an update.
        self._rng_state = generator_state_for(config.seed, 0x5AC)
        #: The per-row TD errors the last loss computed (for the prioritized buffer).
        self.td_errors: torch.Tensor | None = None

    # -- optimizers ---------------------------------------------------------------------------
    def _param_names(self, params: list[Any], who: str, what: str) -> list[str]:
        """The learner's parameters include `curr_log_alpha` (not a module parameter: it is
        neither sent to the EnvRunners nor in the module's state), under `LOG_ALPHA`."""
        log_alpha = self.curr_log_alpha[self.module_id]
        if log_alpha not in self._names_by_param:
            self._names_by_param[log_alpha] = LOG_ALPHA
            self._params_by_name[LOG_ALPHA] = log_alpha
        return super()._param_names(params, who, what)

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """RLlib's four optimizers (Adam, eps 1e-7): "qf" over `qf_encoder` and `qf` and, with
        twin_q, "qf_twin" over `qf_twin_encoder` and `qf_twin` (critic_lr), "policy" over
        `pi_encoder` and `pi` (actor_lr), "alpha" over `curr_log_alpha` (alpha_lr). Each is
        built on its first use (see `RegisteredOptimizer`)."""
        config = config or self.config
        module: Any = self.rl_module
        groups = [(QF, [module.qf_encoder, module.qf], config.critic_lr)]
        if self._twin_q(config):
            groups.append((QF_TWIN, [module.qf_twin_encoder, module.qf_twin], config.critic_lr))
        groups.append((POLICY, [module.pi_encoder, module.pi], config.actor_lr))
        for name, networks, rate in groups:
            params = [p for network in networks for p in self.get_parameters(network)]
            self._register_adam(module_id, name, params, rate)
        self._register_adam(module_id, ALPHA, [self.curr_log_alpha[module_id]], config.alpha_lr)

    def _register_adam(
        self, module_id: str, name: str, params: list[torch.Tensor], rate: Any
    ) -> None:
        self._add_optimizer(
            module_id=module_id,
            optimizer_name=name,
            optimizer=functools.partial(
                torch.optim.Adam, params, eps=ADAM_EPS, **adam_kernel(params)
            ),
            params=params,
            lr_or_lr_schedule=rate,
        )

    def _twin_q(self, config: Any) -> bool:
        """Whether the module has a twin critic (its `twin_q`, else the config's)."""
        return bool(getattr(self.rl_module, "twin_q", config.twin_q))

    # -- the loss (RLlib 2.60's: torch_loss.py) -------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a SACConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: SACConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The sum of the critics', the policy's and alpha's losses (each also handed to its
        optimizer through `self._temp_losses`); Box or Discrete actions by the module's
        action space."""
        if isinstance(cast(Any, self.rl_module).action_space, gym.spaces.Discrete):
            return self._compute_loss_for_module_discrete(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        return self._compute_loss_for_module_continuous(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )

    def _compute_loss_for_module_continuous(
        self,
        *,
        module_id: str,
        config: SACConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        loss = continuous_loss(
            batch,
            fwd_out,
            log_alpha=self.curr_log_alpha[module_id],
            target_entropy=self.target_entropy[module_id],
            gamma=config.gamma,
        )
        return self._finish_loss(module_id, loss)

    def _compute_loss_for_module_discrete(
        self,
        *,
        module_id: str,
        config: SACConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        loss = discrete_loss(
            batch,
            fwd_out,
            log_alpha=self.curr_log_alpha[module_id],
            target_entropy=self.target_entropy[module_id],
            gamma=config.gamma,
        )
        return self._finish_loss(module_id, loss)

    def _finish_loss(self, module_id: str, loss: TorchSACLoss) -> torch.Tensor:
        """Hands each loss to its optimizer (`_temp_losses`), logs the statistics and keeps
        the TD errors; returns the total loss."""
        self.log_loss_stats(loss.stats)
        total_loss = torch.zeros((), device=loss.td_error.device)
        for key, term in loss.losses.items():
            if term is None:
                continue
            self._temp_losses[(module_id, key)] = term
            total_loss = total_loss + term
        # Per row, for the priorities (RLlib logs them as an "item_series").
        self.td_errors = loss.td_error.detach()
        return total_loss

    # -- gradients: each optimizer's loss to its own parameters ----------------------------------
    def compute_gradients(
        self, loss_per_module: dict[str, torch.Tensor], gradient_tape: Any = None, **kwargs: Any
    ) -> dict:
        """Each registered optimizer's gradient: of its loss (`self._temp_losses[(module_id,
        "<optimizer name>_loss")]`) with respect to its own parameters only (RLlib's). A loss
        that handed over none (a user's `compute_loss_for_module` that does not set
        `_temp_losses`) has the summed loss's gradients, as any TorchLearner."""
        temp_losses, self._temp_losses = self._temp_losses, {}
        if not temp_losses:
            return super().compute_gradients(loss_per_module)
        losses: dict[str, Any] = {}
        for entry in self._optimizers.values():
            loss = temp_losses.pop((self.module_id, f"{entry.name}_loss"), None)
            if loss is None:
                raise KeyError(
                    f"{type(self).__name__}: no loss for optimizer {entry.name!r}: "
                    f"compute_loss_for_module must set self._temp_losses[({self.module_id!r}, "
                    f"{entry.name + '_loss'!r})] (RLlib's hand-over of each optimizer's loss); "
                    f"it set {sorted(temp_losses)}"
                )
            losses[entry.name] = loss
        if temp_losses:
            raise KeyError(
                f"{type(self).__name__}: self._temp_losses holds losses no optimizer steps: "
                f"{sorted(temp_losses)} (optimizers: {list(self._optimizers)})"
            )
        return self.gradients_of_own_losses(losses)

    # -- one update ----------------------------------------------------------------------------
    def update(
        self,
        batch: dict[str, np.ndarray] | None = None,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        timesteps: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> UpdateResults:
        """One step of every optimizer on `batch` (the replay buffer's train batch, see the
        module docstring), then the target critics' update when due. Returns the numpy
        SACLearner's statistics (RLlib's keys; `gradients_<optimizer>_global_norm` with a
        global-norm `grad_clip`) and, under `TD_ERROR_KEY`, the per-row TD errors (the
        algorithm takes them out before logging). RLlib's call, `update(batch=MultiAgentBatch,
        timesteps=...)`, is taken too (`trainer.core.replay_update_call`)."""
        if num_env_steps_sampled_lifetime is None or batch is None:
            return rllib_replay_update(self, batch, timesteps, **kwargs)
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        preprocess = self.spaces.preprocess
        actions = np.asarray(batch["actions"])
        train_batch = {
            Columns.OBS: preprocess(batch["obs"]),
            Columns.NEXT_OBS: preprocess(batch["next_obs"]),
            Columns.ACTIONS: (
                actions.astype(np.float32) if self.continuous else actions.astype(np.int64)
            ),
            Columns.REWARDS: np.asarray(batch["rewards"], dtype=np.float32),
            Columns.TERMINATEDS: np.asarray(batch["terminateds"]),
            DISCOUNTS: np.asarray(batch["discounts"], dtype=np.float32),
            WEIGHTS: np.asarray(batch["weights"], dtype=np.float32),
        }
        if N_STEP in batch:  # RLlib's column, for a subclass's loss (gamma ** n_step)
            train_batch[N_STEP] = np.asarray(batch[N_STEP])
        self._temp_losses = {}
        self.td_errors = None
        self.metrics.reset()  # (an update that stopped on an error may have logged some)
        with self._own_rng():
            stats = self.update_from_batch(train_batch)
        self.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime}
        )
        logged = self.update_results()
        results: UpdateResults = {key: stats[key] for key in STAT_KEYS if key in stats}
        # Each optimizer's rate (RLlib's `<optimizer>_learning_rate`), and what a subclass's
        # loss logs (with log_loss_stats or self.metrics).
        for key, value in [*stats.items(), *logged.items()]:
            if (
                key not in results
                and key not in (TD_ERROR_KEY, "total_loss")
                and not (key.startswith("gradients_") and key.endswith("_global_norm"))
            ):
                results[key] = value
        config = self.config
        if config.grad_clip is not None and config.grad_clip_by == "global_norm":
            for name in self._optimizers:
                results[f"gradients_{name}_global_norm"] = stats[f"gradients_{name}_global_norm"]
        results[MODULE_TRAIN_BATCH_SIZE_MEAN] = float(len(train_batch[Columns.REWARDS]))
        td_errors: Any = self.td_errors if self.td_errors is not None else logged.get(TD_ERROR_KEY)
        if td_errors is None:
            raise RuntimeError(
                f"{type(self).__name__}.compute_loss_for_module did not set self.td_errors "
                "(the per-row TD errors the prioritized replay buffer needs)"
            )
        if isinstance(td_errors, torch.Tensor):
            td_errors = td_errors.detach().cpu().numpy()
        results[TD_ERROR_KEY] = np.asarray(td_errors, dtype=np.float32).reshape(-1)
        self.td_errors = None
        return results

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Steps the torch lr schedulers (TorchLearner's), then moves every target critic
        towards its critic (by `tau`) when `target_network_update_freq` sampled env steps
        passed since the last time (RLlib's DQN and SAC learners)."""
        super().after_gradient_based_update(timesteps=timesteps)
        num_env_steps_sampled_lifetime = int(timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))
        if (
            num_env_steps_sampled_lifetime - self.last_target_update_step
            < self.config.target_network_update_freq
        ):
            return
        for main_net, target_net in cast(
            TargetNetworkAPI, self.rl_module
        ).get_target_network_pairs():
            update_target_network(
                main_net=main_net, target_net=target_net, tau=float(self.config.tau)
            )
        self.last_target_update_step = num_env_steps_sampled_lifetime

    # -- state: the TorchLearner's (the module's, target critics included, and the
    # optimizers', alpha's among them), log-alpha, the last target update's step and the
    # generator's state ------------------------------------------------------------------------
    def get_extra_state(self) -> dict:
        return {
            "curr_log_alpha": self.curr_log_alpha[self.module_id].detach().cpu().numpy().copy(),
            "last_target_update_step": self.last_target_update_step,
            "rng": self._rng_state.numpy().copy(),
        }

    def check_extra_state(self, state: dict, where: str) -> None:
        require_float_array(state["curr_log_alpha"], f"{where}['curr_log_alpha']", (1,))
        require_int(state["last_target_update_step"], f"{where}['last_target_update_step']")
        self._check_rng_state(state["rng"], f"{where}['rng']")

    def set_extra_state(self, state: dict) -> None:
        with torch.no_grad():
            log_alpha = self.curr_log_alpha[self.module_id]
            log_alpha.copy_(torch.from_numpy(np.asarray(state["curr_log_alpha"], np.float32)))
        self.last_target_update_step = int(state["last_target_update_step"])
        self._rng_state = torch.from_numpy(np.array(state["rng"], dtype=np.uint8))


__all__ = ["SACTorchLearner"]
