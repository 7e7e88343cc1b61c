"""`IQLLearner`: one gradient step of implicit Q-learning (Kostrikov et al. 2021) on a batch of
recorded transitions, in numpy, with RLlib 2.60's losses (`IQLTorchLearner`, whose docstring
writes them out) on `IQLModule`: SAC's numpy module plus a state-value network.

Per batch of B transitions (s, a, r, s', terminated), d = min_i Q_target_i(s, a) - V(s):

    value   mean(w d^2), w = expectile where d > 0, else 1 - expectile      -> V's parameters
    critic  mean((r + gamma (1 - terminated) V(s') - Q_i(s, a))^2) (each halved with twin_q)
                                                                            -> Q_i's parameters
    policy  -mean(min(exp(beta d), 100) log pi(a|s))                        -> the policy's

Each optimizer ("policy", "qf", "qf_twin", "value"; Adam, eps 1e-7) steps its own slice of
the module's flat parameters with its own loss's gradient; the target critics follow as SAC's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from trainer.algorithms.sac.loss import (
    POLICY,
    QF,
    QF_LOSS_KEY,
    QF_TWIN,
    QF_TWIN_LOSS_KEY,
    SACLoss,
)
from trainer.algorithms.sac.sac_learner import SACLearner, recorded_train_batch
from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    SACModule,
    SquashedGaussian,
    encoder_backward,
    mlp_backward,
)
from trainer.capabilities import ACTION_SPACES
from trainer.core.learner import POLICY_LOSS_KEY
from trainer.core.models import SpaceInfo, activated, activated_train, encoder_mlp, head_mlp
from trainer.errors import UnsupportedValue
from trainer.metrics import TD_ERROR_KEY

if TYPE_CHECKING:
    from trainer.algorithms.iql.iql import IQLConfig

#: RLlib's name of the value network's optimizer.
VALUE = "value"
#: RLlib's cap on the exponentiated advantages.
MAX_EXP_ADVANTAGE = 100.0


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
        """IQL's losses (the module docstring's), each optimizer's gradient of its own left in
        the module's gradient buffer."""
        config, module = self.config, self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        size = len(obs)
        actions = np.asarray(batch["actions"], dtype=obs.dtype).reshape(size, -1)
        losses: dict[str, float] = {}

        # The value network: the expectile of the target critics' values.
        values, value_cache = module.values_forward_train(obs)
        advantages = self.target.q_values(obs, actions) - values
        weights = np.where(advantages > 0, config.expectile, 1.0 - config.expectile)
        losses[VALUE] = float(np.mean(weights * advantages * advantages))
        module.values_backward(value_cache, (-2.0 / size) * weights * advantages)

        # The critics: regressed on r + gamma (1 - terminated) V(s').
        not_terminated = 1.0 - batch["terminateds"].astype(obs.dtype)
        targets = batch["rewards"] + config.gamma * not_terminated * module.values(next_obs)
        half = 0.5 if len(module.critics) == 2 else 1.0
        td_errors = np.zeros(size, dtype=obs.dtype)
        for index, critic in enumerate(module.critics):
            q, cache = critic.forward_train(obs, actions)
            td = q - targets
            losses[QF if index == 0 else QF_TWIN] = half * float(np.mean(td * td))
            critic.backward(cache, (2.0 * half / size) * td, module.critic_grads(index), False)
            td_errors += np.abs(td) / len(module.critics)

        # The policy: the recorded actions' log-likelihood, weighted by exp(beta * A).
        dist_inputs, pi_cache = module.policy_forward_train(obs)
        n = dist_inputs.shape[1] // 2
        mean, raw_log_std = dist_inputs[:, :n], dist_inputs[:, n:]
        log_std = np.minimum(np.maximum(raw_log_std, LOG_STD_MIN), LOG_STD_MAX)
        logp, d_mean, d_log_std = SquashedGaussian.logp_and_grads(mean, log_std, actions)
        exp_advantages = np.minimum(np.exp(config.beta * advantages), MAX_EXP_ADVANTAGE)
        losses[POLICY] = -float(np.mean(exp_advantages * logp))
        scale = (-exp_advantages / size)[:, None]
        d_log_std = scale * d_log_std * ((raw_log_std > LOG_STD_MIN) & (raw_log_std < LOG_STD_MAX))
        module.policy_backward(pi_cache, np.concatenate([scale * d_mean, d_log_std], axis=1))

        stats: dict[str, Any] = {POLICY_LOSS_KEY: losses[POLICY], QF_LOSS_KEY: losses[QF]}
        if QF_TWIN in losses:
            stats[QF_TWIN_LOSS_KEY] = losses[QF_TWIN]
        return SACLoss(losses, td_errors, stats, d_log_alpha=0.0)
