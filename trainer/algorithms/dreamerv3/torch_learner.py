"""`DreamerV3TorchLearner` (RLlib's `ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_learner.
DreamerV3TorchLearner`): one update of DreamerV3 on a replayed batch of B x T sequences.

`update(batch, num_env_steps_sampled_lifetime=...)` takes the replay buffer's batch (`obs`,
`actions`, `rewards`, `is_first`, `is_terminated`, each (B, T, ...)), preprocesses the
observations as the EnvRunners did (Discrete ones one-hot), and runs one gradient step
(`TorchLearner.update_from_batch`): the module's `forward_train` (the posterior roll of the world
model), then `compute_loss_for_module`: the world model's loss, H steps dreamed from every
replayed state (`DreamerModel.dream_trajectory`), the lambda-returns, the critic's and the
actor's losses (`loss.py`). Three optimizers (Adam, RLlib's eps: 1e-8 for the world model, 1e-5
for the actor and the critic), each stepped on its own loss's gradient with respect to its own
parameters only (RLlib's `compute_gradients`), each clipped by its own global norm
(`world_model_grad_clip_by_global_norm`, ...). After the step the critic's EMA copy moves
towards the critic (RLlib's `after_gradient_based_update`).

The learner's draws (the world model's z, the dreamed actions) come from a torch generator of
its own, seeded from the config's seed and kept in its state, so a seeded run and a resumed
checkpoint draw the same.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
import torch

from trainer.algorithms.dreamerv3.loss import (
    actor_loss,
    critic_loss,
    lambda_returns,
    scaled_advantages,
    world_model_loss,
)
from trainer.algorithms.dreamerv3.torch_module import IS_FIRST, unset_emas_as_zero
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.learner import (
    AdaptiveTorchThreads,
    OwnGenerator,
    ParamDict,
    TorchLearner,
    adam_kernel,
    generator_state_for,
)
from trainer.torch_rl.torch_utils import clip_gradients

if TYPE_CHECKING:
    from trainer.algorithms.dreamerv3.config import DreamerV3Config

#: The three optimizers (RLlib's names), each with its Adam eps.
WORLD_MODEL = "world_model"
ACTOR = "actor"
CRITIC = "critic"
ADAM_EPS = {WORLD_MODEL: 1e-8, ACTOR: 1e-5, CRITIC: 1e-5}


class DreamerV3TorchLearner(OwnGenerator, TorchLearner):
    """DreamerV3's learner (see the module docstring)."""

    config: DreamerV3Config
    algorithm_name = "DreamerV3"
    extra_state_keys: tuple[str, ...] = ("rng",)

    def __init__(
        self,
        config: DreamerV3Config,
        module: Any,
        *,
        spaces: SpaceInfo | None = None,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        #: Each optimizer's loss of the step, by name (RLlib's `_temp_losses`).
        self._temp_losses: dict[str, torch.Tensor] = {}
        #: The step's per-item statistics (arrays: `report_individual_batch_item_stats`,
        #: `report_dream_data`), by RLlib's keys.
        self._item_stats: dict[str, torch.Tensor] = {}
        super().__init__(config, module, module_id=module_id)
        # Its update is a few large products (the heads over B x T x (H + 1) dreamed states,
        # the GRU over B x T rows): on an idle machine they split well over two threads, where
        # the small ones of the other learners run best on one (`TorchThreads`). XS CartPole,
        # 2 idle cores, before z's products were column sums: 1.17 s per iteration on one
        # thread, 0.74 s on two; beside a busy process two threads stall. So the updates are
        # timed and the faster count kept; a seeded run stays on one (`AdaptiveTorchThreads`).
        self.update_threads = AdaptiveTorchThreads(seeded=getattr(config, "seed", None) is not None)
        self.step_threads = None  # (its update's own count, timed above)
        rl_module: Any = self.rl_module
        self.spaces: SpaceInfo = (
            spaces
            or getattr(module, "spaces", None)
            or SpaceInfo.from_spaces(
                rl_module.observation_space, rl_module.action_space
            ).keeping_obs_shape()
        )
        self.discrete = isinstance(rl_module.action_space, gym.spaces.Discrete)
        self._rng_state = generator_state_for(getattr(config, "seed", None), 0xD3E)

    # -- optimizers ----------------------------------------------------------------------------
    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """RLlib's three Adams: "world_model" (world_model_lr), "actor" (actor_lr) and "critic"
        (critic_lr), each over its part's trained parameters (the critic's EMA copy and the
        actor's percentile EMAs are not trained)."""
        config = config or self.config
        module: Any = self.rl_module
        for name, part, rate in (
            (WORLD_MODEL, module.world_model, config.world_model_lr),
            (ACTOR, module.actor, config.actor_lr),
            (CRITIC, module.critic, config.critic_lr),
        ):
            params = [p for p in part.parameters() if p.requires_grad]
            self._add_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=functools.partial(
                    torch.optim.Adam, params, eps=ADAM_EPS[name], **adam_kernel(params)
                ),
                params=params,
                lr_or_lr_schedule=rate,
            )

    # -- the losses (loss.py) ------------------------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a DreamerV3Config, as RLlib's
        self,
        *,
        module_id: str,
        config: DreamerV3Config,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The world model's, the critic's and the actor's losses (each handed to its own
        optimizer through `_temp_losses`); returns their sum."""
        module: Any = self.rl_module
        world = world_model_loss(fwd_out, batch[Columns.REWARDS], batch["is_terminated"])
        stats: dict[str, Any] = {
            "WORLD_MODEL_learned_initial_h": module.world_model.initial_h.mean(),
            **world.stats,
        }
        per_item = dict(world.per_item)
        dream_data = module.dreamer_model.dream_trajectory(
            fwd_out["h_states_BxT"],
            fwd_out["z_posterior_states_BxT"],
            batch["is_terminated"].reshape(-1),
            config.horizon_H,
            config.gamma,
            start_z_index=fwd_out.get("z_posterior_index_BxT"),
        )
        if config.report_dream_data:
            T = config.batch_length_T
            self._item_stats.update(
                {
                    f"dream_data/{key[:-1]}1": value[:, ::T]
                    for key, value in dream_data.items()
                    if key.endswith("H_BxT")
                }
            )
        R_lambda = lambda_returns(
            dream_data["rewards_dreamed_t0_to_H_BxT"],
            dream_data["continues_dreamed_t0_to_H_BxT"],
            dream_data["values_dreamed_t0_to_H_BxT"],
            config.gamma,
            config.gae_lambda,
        )
        losses = {WORLD_MODEL: world.loss}
        if config.train_critic:
            critic = critic_loss(dream_data, R_lambda)
            stats.update(critic.stats)
            per_item.update(critic.per_item)
            losses[CRITIC] = critic.loss
        if config.train_actor:
            A = scaled_advantages(
                R_lambda,
                dream_data["values_dreamed_t0_to_H_BxT"][:-1],
                module.actor,
                config.return_normalization_decay,
                # (data-parallel learners: the percentiles' mean over them, so that every
                # replica moves its EMAs alike)
                mean=None if self.gradient_allreduce is None else self.mean_over_learners,
            )
            actor = actor_loss(dream_data, A, module.actor, config.entropy_scale)
            stats.update(actor.stats)
            per_item.update(actor.per_item)
            losses[ACTOR] = actor.loss
        if config.report_individual_batch_item_stats:
            self._item_stats.update(per_item)
        self.log_loss_stats({key: value for key, value in stats.items() if value.dim() == 0})
        self._item_stats.update({key: value for key, value in stats.items() if value.dim() > 0})
        self._temp_losses = losses
        return cast(torch.Tensor, sum(losses.values()))

    def compute_gradients(
        self, loss_per_module: dict[str, torch.Tensor], gradient_tape: Any = None, **kwargs: Any
    ) -> ParamDict:
        """Each optimizer's gradient: of its own loss with respect to its own parameters
        (RLlib's: the actor's and the critic's losses leave the world model untouched). An
        optimizer whose part is not trained (`train_actor=False`, ...) gets none."""
        temp_losses, self._temp_losses = self._temp_losses, {}
        return self.gradients_of_own_losses(temp_losses)

    def postprocess_gradients_for_module(
        self,
        *,
        module_id: str,
        config: Any = None,
        module_gradients_dict: ParamDict,
    ) -> ParamDict:
        """Each optimizer's gradients clipped by its own global norm (RLlib's three settings);
        logs `<NAME>_gradients_global_norm` and `<NAME>_gradients_maxabs_after_clipping`."""
        config = config or self.config
        clips = {
            WORLD_MODEL: config.world_model_grad_clip_by_global_norm,
            ACTOR: config.actor_grad_clip_by_global_norm,
            CRITIC: config.critic_grad_clip_by_global_norm,
        }
        for entry in self._optimizers.values():
            own = {
                name: module_gradients_dict[name]
                for name in entry.param_names
                if name in module_gradients_dict
            }
            if not own:
                continue
            norm = clip_gradients(own, grad_clip=clips[entry.name], grad_clip_by="global_norm")
            module_gradients_dict.update(own)
            maxabs = max(float(grad.abs().max()) for grad in own.values())
            self.log_loss_stats(
                {
                    f"{entry.name.upper()}_gradients_global_norm": float(cast(Any, norm)),
                    f"{entry.name.upper()}_gradients_maxabs_after_clipping": maxabs,
                }
            )
        return module_gradients_dict

    # -- one update ----------------------------------------------------------------------------
    def train_batch(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The replay buffer's (B, T) batch as the module's training columns: observations
        preprocessed as the EnvRunners did (Discrete ones one-hot), actions as ints (Discrete)
        or floats (Box), rewards and flags."""
        obs = np.asarray(batch["obs"])
        B, T = obs.shape[:2]
        flat = self.spaces.preprocess(obs.reshape((B * T,) + obs.shape[2:]))
        actions = np.asarray(batch["actions"])
        return {
            Columns.OBS: np.asarray(flat, dtype=np.float32).reshape((B, T, -1)),
            Columns.ACTIONS: (
                actions.astype(np.int64) if self.discrete else actions.astype(np.float32)
            ),
            Columns.REWARDS: np.asarray(batch["rewards"], dtype=np.float32),
            IS_FIRST: np.asarray(batch["is_first"], dtype=np.float32),
            "is_terminated": np.asarray(batch["is_terminated"], dtype=np.float32),
        }

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One step of the three optimizers on `batch` (see the module docstring); returns the
        losses' statistics under RLlib's keys and each optimizer's rate
        (`<name>_learning_rate`)."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        train_batch = self.train_batch(batch)
        self._temp_losses = {}
        self._item_stats = {}
        self.metrics.reset()
        with self._own_rng():
            stats = self.update_from_batch(train_batch)
        self.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime}
        )
        results: UpdateResults = {
            key: value
            for key, value in stats.items()
            if not (key.startswith("gradients_") and key.endswith("_global_norm"))
        }
        results.update(self.update_results())
        for key, value in self._item_stats.items():
            results[key] = value.detach().cpu().numpy()
        self._item_stats = {}
        return results

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """The TorchLearner's (lr schedulers), then the critic's EMA copy moves towards the
        critic (RLlib's `DreamerV3Learner`)."""
        super().after_gradient_based_update(timesteps=timesteps)
        cast(Any, self.rl_module).critic.update_ema()

    # -- state: the TorchLearner's and the generator's ------------------------------------------
    def _check_module_state(self, state: Any, where: str) -> None:
        """The TorchLearner's check, the unset (NaN) percentile EMAs allowed."""
        super()._check_module_state(
            unset_emas_as_zero(state) if isinstance(state, dict) else state, where
        )

    def get_extra_state(self) -> dict:
        return {"rng": self._rng_state.numpy().copy()}

    def check_extra_state(self, state: dict, where: str) -> None:
        self._check_rng_state(state["rng"], f"{where}['rng']")

    def set_extra_state(self, state: dict) -> None:
        self._rng_state = torch.from_numpy(np.array(state["rng"], dtype=np.uint8))


__all__ = ["DreamerV3TorchLearner"]
