"""`CQLLearner`: one gradient step of conservative Q-learning (Kumar et al. 2020, the CQL(H)
variant) on a batch of recorded transitions, in numpy, with RLlib 2.60's losses
(`CQLTorchLearner`) on SAC's module, learner and loss (`trainer.algorithms.sac.loss`:
`continuous_loss` with CQL's critic term and policy objective).

For a batch of B recorded transitions (s, a, r, s', terminated), with N = `num_actions`:

    y            = r + gamma (1 - terminated) Q_next,   Q_next = min_i Q_target_i(s', a')
                   (deterministic_backup; else minus alpha log pi(a'|s')),  a' ~ pi(.|s')
    critic i     = mean((Q_i(s, a) - y)^2) + cql_i
    cql_i        = min_q_weight * (T mean_s logsumexp_j(X_ij / T) - mean Q_i(s, a)),
                   X_i over 3N values per s: Q_i(s, a_rand) - log(0.5^dim(A)) for N uniform
                   draws a_rand from the action space's bounds, Q_i(s', a~') - log pi(a~'|s')
                   and Q_i(s, a~) - log pi(a~|s) for N policy draws each; T = `temperature`
    policy       = mean(alpha log pi(a~|s) - min_i Q_i(s, a~))      after `bc_iters` iterations
                 = mean(alpha log pi(a~|s) - log pi(a|s))           before (behaviour cloning)
    alpha        = -mean(log_alpha (log pi(a~|s) + target_entropy))

The policy draws in the CQL term carry no gradient to the policy (RLlib freezes it there); the
critics' gradient of the CQL term is softmax(X_i / T) * min_q_weight / B per value. The target
critics follow the critics (by `tau`) after every update, as SAC's
(`target_network_update_freq` env steps apart, 0 by default).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.sac.loss import (
    QF,
    QF_TWIN,
    ActorObjective,
    CriticTerms,
    PolicyDraws,
    SACLoss,
    continuous_loss,
    min_q_objective,
)
from trainer.algorithms.sac.sac_learner import SACLearner, recorded_train_batch
from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    SACModule,
    SquashedGaussian,
)
from trainer.capabilities import ACTION_SPACES
from trainer.core.models import SpaceInfo
from trainer.errors import UnsupportedValue
from trainer.metrics import TD_ERROR_KEY

if TYPE_CHECKING:
    from trainer.algorithms.cql.cql import CQLConfig

#: RLlib's CQL statistic: the conservative term of the (first) critic's loss.
CQL_LOSS_KEY = "cql_loss"

_sum = np.add.reduce


def logsumexp_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log sum_j exp(x_ij) per row and softmax(x) (its gradient), without overflow."""
    top = np.maximum.reduce(x, axis=1, keepdims=True)
    shifted = np.exp(x - top)
    total = _sum(shifted, axis=1, keepdims=True)
    return (np.log(total) + top)[:, 0], shifted / total


class CloningPhase:
    """Whether a CQL learner's policy still clones the recorded actions: during the first
    `bc_iters` training iterations (RLlib 2.60's learner compares `bc_iters` with its
    `training_iteration` metric, "Number of iterations with Behavior Cloning pretraining").
    The algorithm sets `training_iteration` (the iterations completed before the running one)
    before each training step; a checkpoint restores it with the algorithm's iteration."""

    config: CQLConfig
    #: Training iterations completed before the one that runs.
    training_iteration: int = 0

    @property
    def cloning(self) -> bool:
        """True while the policy's loss is the recorded actions' log-likelihood."""
        return self.training_iteration < self.config.bc_iters


class CQLLearner(CloningPhase, SACLearner):
    """See the module docstring. Keys of the train batch: RLlib's column names (`obs`,
    `new_obs`, `actions`, `rewards`, `terminateds`), as the offline reader gives them."""

    config: CQLConfig
    loss_name = "CQL"

    def __init__(self, config: CQLConfig, spaces: SpaceInfo | None, **kwargs: Any):
        super().__init__(config, spaces, **kwargs)
        module_spaces = self.module.spaces
        if not self.module.continuous or module_spaces.action_low is None:
            raise UnsupportedValue(
                f"CQLConfig: the action space has {module_spaces.action_discrete_n} discrete "
                "actions; CQL learns Box actions (its conservative term draws random actions "
                "between the space's bounds, as RLlib's CQL)",
                ACTION_SPACES,
            )
        assert module_spaces.action_high is not None
        self.action_low = np.asarray(module_spaces.action_low, dtype=np.float32).reshape(-1)
        self.action_high = np.asarray(module_spaces.action_high, dtype=np.float32).reshape(-1)

    # -- the update ----------------------------------------------------------------------------
    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> dict[str, Any]:
        """One step of every optimizer on a batch of recorded transitions, then the target
        critics' update."""
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def evaluation_loss(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The losses of `batch` with no step (offline evaluation): each optimizer's loss,
        their sum as `total_loss`, and the statistics; the draws' generator left as it was."""
        state = self.rng.bit_generator.state
        try:
            loss = self.loss_and_gradients(recorded_train_batch(batch, self.config.gamma))
        finally:
            self.rng.bit_generator.state = state
        results = self.loss_results(loss)
        results.pop(TD_ERROR_KEY, None)
        return {**results, "total_loss": sum(loss.losses.values())}

    def loss_and_gradients(self, batch: dict[str, np.ndarray]) -> SACLoss:
        """SAC's loss (`loss.continuous_loss`) with CQL's critic term, behaviour cloning for
        the policy during the first `bc_iters` iterations, and with `deterministic_backup` no
        entropy term in the q-targets."""
        return continuous_loss(
            batch,
            self.module,
            self.target,
            self.log_alpha,
            self.target_entropy,
            self.rng,
            critic_term=self._conservative_critic_term,
            actor_term=self._cloning_objective if self.cloning else min_q_objective,
            soft_backup=not self.config.deterministic_backup,
        )

    def _policy_draws(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Squashed Gaussian draws and their log-likelihoods for each row of `obs` (no
        gradient: the policy is frozen in the conservative term)."""
        dist_inputs = self.module.dist_inputs(obs)
        n = dist_inputs.shape[1] // 2
        mean = dist_inputs[:, :n]
        log_std = np.minimum(np.maximum(dist_inputs[:, n:], LOG_STD_MIN), LOG_STD_MAX)
        noise = self.rng.standard_normal(mean.shape).astype(np.float32)
        unsquashed = mean + np.exp(log_std) * noise
        return np.tanh(unsquashed), SquashedGaussian.squashed_logp(unsquashed, mean, log_std)

    def _conservative_critic_term(
        self,
        module: SACModule,
        obs: np.ndarray,
        next_obs: np.ndarray,
        actions: np.ndarray,
        targets: np.ndarray,
        weights: np.ndarray,
    ) -> CriticTerms:
        """Each critic's squared Bellman error plus its conservative term, in one forward and
        one backward pass over the B recorded rows and the 3 N B repeated ones (the weights,
        all 1 for recorded rows, unused)."""
        config = self.config
        size, n = len(obs), int(config.num_actions)
        dim = len(self.action_low)
        # Rows in blocks: [recorded (B) | random (B N) | pi at s' (B N) | pi at s (B N)];
        # each state repeated N times in place, as RLlib's repeat_interleave.
        obs_repeat = np.repeat(obs, n, axis=0)
        next_obs_repeat = np.repeat(next_obs, n, axis=0)
        random_actions = self.rng.uniform(
            self.action_low, self.action_high, size=(size * n, dim)
        ).astype(np.float32)
        pi_actions, pi_logps = self._policy_draws(np.concatenate([next_obs_repeat, obs_repeat]))
        all_obs = np.concatenate([obs, obs_repeat, next_obs_repeat, obs_repeat])
        all_actions = np.concatenate([actions, random_actions, pi_actions])
        # X's offsets: -log(0.5^dim) for the random actions, -log pi for the policy's.
        offsets = np.concatenate(
            [np.full(size * n, -dim * math.log(0.5), dtype=np.float32), -pi_logps]
        )
        temperature, weight = float(config.temperature), float(config.min_q_weight)
        losses: dict[str, float] = {}
        td_errors = np.zeros(size, dtype=np.float32)
        stats: dict[str, Any] = {}
        q_curr: np.ndarray | None = None
        for index, critic in enumerate(module.critics):
            q_all, cache = critic.forward_train(all_obs, all_actions)
            q_selected = q_all[:size]
            td = q_selected - targets
            # X per state: its 3 N values (random, next, current), grouped by state.
            x = (q_all[size:] + offsets).reshape(3, size, n).transpose(1, 0, 2).reshape(size, -1)
            logsumexp, softmax = logsumexp_rows(x / temperature)
            cql_loss = weight * (temperature * float(_sum(logsumexp)) - float(_sum(q_selected)))
            cql_loss /= size
            losses[QF if index == 0 else QF_TWIN] = float(_sum(td * td) / size) + cql_loss
            d_q = np.empty_like(q_all)
            d_q[:size] = (2.0 * td - weight) / size
            d_x = softmax * (weight / size)
            d_q[size:] = d_x.reshape(size, 3, n).transpose(1, 0, 2).reshape(-1)
            critic.backward(
                cache, d_q.astype(np.float32, copy=False), module.critic_grads(index), False
            )
            td_errors += np.abs(td)
            if index == 0:
                stats[CQL_LOSS_KEY] = cql_loss
                # RLlib's qf_mean/max/min: the critic's values of the policy's draws at s.
                q_curr = q_all[size + 2 * size * n :]
        td_errors /= len(module.critics)
        return CriticTerms(losses, td_errors, stats, q_curr)

    @staticmethod
    def _cloning_objective(
        module: SACModule, obs: np.ndarray, actions: np.ndarray, draws: PolicyDraws
    ) -> ActorObjective:
        """The policy's objective during the first `bc_iters` training iterations: the
        log-likelihood of the recorded actions, whose gradient reaches the distribution's mean
        and log-std directly."""
        size = draws.size
        logp, d_mean, d_log_std = SquashedGaussian.logp_and_grads(
            draws.mean[:size], draws.log_std[:size], actions
        )
        return ActorObjective(
            value=logp,
            q_curr=None,
            d_actions=np.zeros_like(d_mean),
            d_mean=-d_mean / size,
            d_log_std=-d_log_std / size,
        )
