"""`IQLLearner`: one gradient step of implicit Q-learning (Kostrikov et al. 2021) on a batch of
recorded transitions, in numpy, with RLlib 2.60's losses (`IQLTorchLearner`): `loss.py`'s
(`numpy_loss`, which writes them out), on `IQLModule`: SAC's numpy module plus a state-value
network.

Each update: the module's forward passes (RLlib's `DefaultIQLTorchRLModule` outputs: V(s),
V(s'), the target critics' min_i Q_target_i(s, a), the critics' Q_i(s, a), the policy's
distribution inputs), `numpy_loss` and its gradients with respect to those outputs, then each
network's backward pass into the module's gradient buffer. Each optimizer ("policy", "qf",
"qf_twin", "value"; Adam, eps 1e-7) steps its own slice of the module's flat parameters with
its own loss's gradient; the target critics follow as SAC's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from trainer.algorithms.iql.loss import QF_TARGET_PREDS, VALUE, VF_PREDS_NEXT, numpy_loss
from trainer.algorithms.sac.loss import QF_PREDS, QF_TWIN_PREDS, SACLoss
from trainer.algorithms.sac.sac_learner import SACLearner, recorded_train_batch
from trainer.algorithms.sac.sac_module import SACModule, encoder_backward, mlp_backward
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.core.models import SpaceInfo, activated, activated_train, encoder_mlp, head_mlp
from trainer.errors import UnsupportedValue
from trainer.metrics import TD_ERROR_KEY

if TYPE_CHECKING:
    from trainer.algorithms.iql.config import IQLConfig


class IQLModule(SACModule):
    """SAC's numpy module plus RLlib's IQL value network: `vf_encoder` (an encoder like the
    policy's) and `vf` (a head to one value), their parameters last."""

    def _more_networks(self, rng: np.random.Generator) -> list[tuple[str, Any]]:
        config = self.model_config
        self.vf_encoder = encoder_mlp(self.spaces.obs_dim, config, rng)
        self.vf = head_mlp(config["fcnet_hiddens"][-1], 1, config, rng)
        return [("vf_encoder", self.vf_encoder), ("vf", self.vf)]

    def values(self, obs: np.ndarray) -> np.ndarray:
        """V(s) of preprocessed observations, shape (B,)."""
        return self.vf.forward(activated(self.vf_encoder, obs))[:, 0]

    def values_forward_train(self, obs: np.ndarray) -> tuple[np.ndarray, tuple]:
        features, encoder_cache = activated_train(self.vf_encoder, obs)
        out, head_cache = self.vf.forward_train(features)
        return out[:, 0], (encoder_cache, head_cache)

    def values_backward(self, cache: tuple, d_values: np.ndarray) -> None:
        """The value network's parameter gradients into the gradient buffer's views."""
        encoder_cache, head_cache = cache
        grads = self._gradient_views()[2]
        d_features = mlp_backward(self.vf, head_cache, d_values[:, None], grads["vf"], True)
        assert d_features is not None
        encoder_backward(self.vf_encoder, encoder_cache, d_features, grads["vf_encoder"], False)


class IQLLearner(SACLearner):
    """See the module docstring. SAC's learner (slices, Adams, target critics, state) with
    a "value" optimizer over the value network and no alpha."""

    config: IQLConfig  # type: ignore[assignment]  # SAC's settings IQL shares
    module: IQLModule
    loss_name = "IQL"
    learns_alpha = False

    def __init__(self, config: IQLConfig, spaces: SpaceInfo | None, **kwargs: Any):
        if spaces is not None and spaces.action_discrete_n is not None:
            raise UnsupportedValue(
                f"IQLConfig: the action space has {spaces.action_discrete_n} discrete actions; "
                "IQL learns Box actions (as RLlib's IQL)",
                ACTION_SPACES,
            )
        super().__init__(cast(Any, config), spaces, **kwargs)

    def _more_optimizers(self) -> dict[str, tuple[int, Any]]:
        """The value network's Adam ("value", value_lr)."""
        module = self.module
        size = sum(p.size for p in (*module.vf_encoder.params, *module.vf.params))
        return {VALUE: (size, self.config.value_lr)}

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> dict[str, Any]:
        """One step of every optimizer on a batch of recorded transitions (RLlib's column
        names), then the target critics' update when due."""
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def evaluation_loss(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The losses of `batch` with no step (offline evaluation): each optimizer's loss,
        their sum as `total_loss`."""
        loss = self.loss_and_gradients(recorded_train_batch(batch, self.config.gamma))
        results = self.loss_results(loss)
        results.pop(TD_ERROR_KEY, None)
        return {**results, "total_loss": sum(loss.losses.values())}

    def loss_and_gradients(self, batch: dict[str, np.ndarray]) -> SACLoss:
        """IQL's loss (`loss.numpy_loss`) on the module's outputs for `batch`, each
        optimizer's gradient of its own loss left in the module's gradient buffer."""
        module = self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        actions = np.asarray(batch["actions"], dtype=obs.dtype).reshape(len(obs), -1)

        # The forward passes: the module's outputs, under RLlib's keys.
        values, value_cache = module.values_forward_train(obs)
        dist_inputs, pi_cache = module.policy_forward_train(obs)
        critic_passes = [critic.forward_train(obs, actions) for critic in module.critics]
        critic_keys = (QF_PREDS, QF_TWIN_PREDS)[: len(critic_passes)]
        fwd_out = {
            Columns.VF_PREDS: values,
            QF_TARGET_PREDS: self.target.q_values(obs, actions),
            VF_PREDS_NEXT: module.values(next_obs),
            Columns.ACTION_DIST_INPUTS: dist_inputs,
            **{key: q for key, (q, _) in zip(critic_keys, critic_passes, strict=True)},
        }
        recorded = {
            Columns.ACTIONS: actions,
            Columns.REWARDS: batch["rewards"],
            Columns.TERMINATEDS: batch["terminateds"],
        }
        loss = numpy_loss(recorded, fwd_out, self.config)

        # The backward passes: each loss's gradient into its own network's parameters.
        gradients = loss.gradients
        module.values_backward(value_cache, gradients[Columns.VF_PREDS])
        for index, (critic, (_, cache), key) in enumerate(
            zip(module.critics, critic_passes, critic_keys, strict=True)
        ):
            critic.backward(cache, gradients[key], module.critic_grads(index), False)
        module.policy_backward(pi_cache, gradients[Columns.ACTION_DIST_INPUTS])
        return SACLoss(loss.losses, loss.td_error, loss.stats, d_log_alpha=0.0)
