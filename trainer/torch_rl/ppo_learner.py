"""`PPOTorchLearner` (RLlib's `ray.rllib.algorithms.ppo.torch.PPOTorchLearner`): PPO's update
on a `TorchRLModule`, with the numpy `PPOLearner`'s data flow and statistics.

`update(episodes)` builds the train batch as the numpy learner does (GAE advantages and value
targets, from the module's `compute_values`, then standardized advantages), runs `num_epochs`
passes of shuffled minibatch steps (the same minibatches, drawn from an rng seeded as the
numpy learner's), and adapts the KL coefficient on the last minibatch's KL. The loss is RLlib
2.60's: clipped surrogate, squared value error clipped at `vf_clip_param`, entropy bonus and the
KL penalty (`use_kl_loss`); without `use_critic` the value terms are zero.

The module: a TorchRLModule with `ValueFunctionAPI` whose `_forward_train` returns
`Columns.ACTION_DIST_INPUTS` (and may return `Columns.EMBEDDINGS`, passed on to
`compute_values`), and whose action distribution classes have RLlib's TorchDistribution API
(`from_logits`, `logp`, `entropy`, `kl`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from trainer.algorithms.learner import UpdateResults
from trainer.algorithms.ppo.ppo_learner import (
    adapted_kl_coeff,
    build_train_batch,
    shuffled_minibatches,
    standardize_advantages,
)
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.env.episode import SingleAgentEpisode
from trainer.torch_rl.learner import TorchLearner, to_train_tensors
from trainer.util import seeding
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import require_generator_state, require_map, require_number

if TYPE_CHECKING:
    from trainer.algorithms.ppo.ppo import PPOConfig

#: The train batch's columns (RLlib's `Postprocessing.ADVANTAGES` / `VALUE_TARGETS`).
ADVANTAGES = "advantages"
VALUE_TARGETS = "value_targets"

#: RLlib's `SMALL_NUMBER`, in its explained variance.
_SMALL_NUMBER = 1e-6


def explained_variance(targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """RLlib's `torch_utils.explained_variance`: max(-1, 1 - var(y - pred) / var(y)), with
    torch's (unbiased) variance."""
    targets = targets.squeeze()
    residual_var = torch.var(targets - predictions.squeeze(), dim=0)
    return torch.clamp(1 - residual_var / (torch.var(targets, dim=0) + _SMALL_NUMBER), min=-1.0)


class PPOTorchLearner(TorchLearner):
    """PPO's learner for torch modules (see the module docstring)."""

    config: PPOConfig
    algorithm_name = "PPO"

    def __init__(
        self,
        config: PPOConfig,
        module: Any,
        *,
        spaces: SpaceInfo | None = None,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the PPOConfig; `module`: the full TorchRLModule to train (with
        ValueFunctionAPI), built by the caller, or a view of one (see `TorchLearner`);
        `spaces`: how the EnvRunners preprocessed the observations they fed the module (the
        learner feeds it the same), by default the view's `spaces`, else the module's
        observation and action spaces; `module_id`: its id."""
        rl_module = getattr(module, "rl_module", module)
        if not isinstance(rl_module, ValueFunctionAPI):
            raise TypeError(
                f"PPOTorchLearner: the module ({type(rl_module).__name__}) must implement "
                "ValueFunctionAPI (compute_values(batch, embeddings=None)): PPO's advantages "
                "and value loss need it"
            )
        super().__init__(config, module, module_id=module_id)
        self.spaces: SpaceInfo = (
            spaces
            or getattr(module, "spaces", None)
            or SpaceInfo.from_spaces(
                cast(Any, rl_module).observation_space, cast(Any, rl_module).action_space
            ).keeping_obs_shape()
        )
        self.kl_coeff = float(config.kl_coeff)
        # Seeded as the numpy PPOLearner's shuffler: the same seed draws the same minibatches.
        self.rng = np.random.default_rng(seeding.ppo_learner_stream(config.seed))

    # -- 1. from episodes to a train batch ---------------------------------------------------
    def build_train_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        """The numpy learner's train batch (`build_train_batch`): observations preprocessed
        as the EnvRunners did (`spaces.preprocess`: float32 rows, one-hot for Discrete),
        valued by this module's `compute_values`."""
        return build_train_batch(episodes, self.config, self.spaces.preprocess, self._values)

    def _values(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            batch = to_train_tensors({Columns.OBS: observations}, self.device)
            values = self.rl_module.compute_values(batch)
        return values.detach().cpu().numpy().astype(np.float32, copy=False).reshape(-1)

    # -- 2. the loss -------------------------------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a PPOConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: PPOConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """RLlib 2.60's PPO loss (`PPOTorchLearner.compute_loss_for_module`), as a mean over
        the minibatch; logs policy_loss, vf_loss, vf_loss_unclipped, vf_explained_var,
        entropy and mean_kl_loss. With `Columns.LOSS_MASK` in the batch (a boolean row
        mask), the means are over the masked-in rows, as RLlib's."""
        module = self.rl_module
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK].bool()
            num_valid = torch.sum(mask)

            def mean(data: torch.Tensor) -> torch.Tensor:
                return torch.sum(data[mask]) / num_valid

        else:
            mean = torch.mean
        current_dist = module.get_train_action_dist_cls().from_logits(
            fwd_out[Columns.ACTION_DIST_INPUTS]
        )
        behaviour_dist = module.get_exploration_action_dist_cls().from_logits(
            batch[Columns.ACTION_DIST_INPUTS]
        )
        logp_ratio = torch.exp(
            current_dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP]
        )
        if config.use_kl_loss:
            mean_kl_loss = mean(behaviour_dist.kl(current_dist))
        else:
            mean_kl_loss = torch.tensor(0.0, device=logp_ratio.device)
        current_entropy = current_dist.entropy()
        mean_entropy = mean(current_entropy)

        advantages = batch[ADVANTAGES]
        surrogate_loss = torch.min(
            advantages * logp_ratio,
            advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
        )
        if config.use_critic:
            values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
            vf_loss = torch.pow(values - batch[VALUE_TARGETS], 2.0)
            vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
            mean_vf_loss = mean(vf_loss_clipped)
            mean_vf_unclipped_loss = mean(vf_loss)
            explained_var = explained_variance(batch[VALUE_TARGETS], values)
        else:
            zero = torch.tensor(0.0, device=surrogate_loss.device)
            vf_loss_clipped = mean_vf_loss = mean_vf_unclipped_loss = zero
            explained_var = explained_variance(batch[VALUE_TARGETS], zero.expand_as(advantages))

        total_loss = mean(
            -surrogate_loss
            + config.vf_loss_coeff * vf_loss_clipped
            - config.entropy_coeff * current_entropy
        )
        if config.use_kl_loss:
            total_loss = total_loss + self.kl_coeff * mean_kl_loss

        self.log_loss_stats(
            {
                "policy_loss": -mean(surrogate_loss),
                "vf_loss": mean_vf_loss,
                "vf_loss_unclipped": mean_vf_unclipped_loss,
                "vf_explained_var": explained_var,
                "entropy": mean_entropy,
                "mean_kl_loss": mean_kl_loss,
            }
        )
        return total_loss

    # -- 3. epochs of minibatches ------------------------------------------------------------
    def update(
        self,
        episodes: list[SingleAgentEpisode],
        *,
        num_env_steps_sampled_lifetime: int | None = None,
    ) -> UpdateResults:
        """One PPO update on `episodes`; returns the numpy PPOLearner's statistics: those of
        the last minibatch (total_loss, policy_loss, vf_loss, vf_loss_unclipped,
        vf_explained_var, entropy, mean_kl_loss, gradients_default_optimizer_global_norm),
        curr_kl_coeff after its adaptation, curr_lr and num_env_steps_trained.
        `num_env_steps_sampled_lifetime` places a learning-rate schedule."""
        with self.update_threads():
            return self._update(episodes, num_env_steps_sampled_lifetime)

    def _update(
        self, episodes: list[SingleAgentEpisode], num_env_steps_sampled_lifetime: int | None
    ) -> UpdateResults:
        cfg = self.config
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        batch = self.build_train_batch(episodes)
        standardize_advantages(batch)
        step_stats: dict[str, float] = {}
        for minibatch in shuffled_minibatches(batch, cfg, self.rng):
            step_stats = self.update_from_batch(minibatch)
        # As RLlib: the last minibatch's statistics, and the KL coefficient adapted on its KL.
        results: UpdateResults = dict(step_stats)
        if cfg.use_kl_loss:
            self.kl_coeff = adapted_kl_coeff(self.kl_coeff, float(results["mean_kl_loss"]), cfg)
        results["curr_kl_coeff"] = self.kl_coeff
        results["curr_lr"] = self.current_lr
        results["num_env_steps_trained"] = len(batch[ADVANTAGES])
        return results

    # -- state (checkpoints) -----------------------------------------------------------------
    def get_state(self) -> dict:
        """The TorchLearner's state, the KL coefficient and the minibatch shuffler's rng."""
        state = super().get_state()
        state["kl_coeff"] = self.kl_coeff
        state["rng"] = generator_state(self.rng)
        return state

    def check_state(self, state: dict, where: str = "learner") -> None:
        require_map(state, where, ("module", "optimizer", "kl_coeff", "rng"))
        super().check_state(state, where)
        require_number(state["kl_coeff"], f"{where}['kl_coeff']", minimum=0.0)
        require_generator_state(state["rng"], f"{where}['rng']")

    def set_state(self, state: dict) -> None:
        self.check_state(state)
        super().set_state(state)
        self.kl_coeff = float(state["kl_coeff"])
        set_generator_state(self.rng, state["rng"])
