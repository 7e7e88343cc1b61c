"""CQL's loss (Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning",
the CQL(H) variant), RLlib 2.60's (`CQLTorchLearner.compute_loss_for_module`), in numpy: SAC's
loss for Box actions (`trainer.algorithms.sac.loss`) with CQL's critic term and, during the
first `bc_iters` training iterations, behaviour cloning as the policy's objective.
`torch_loss.py` beside it has the same terms on tensors, with the same statistics.

For a batch of B recorded transitions (s, a, r, s', terminated), with N = `num_actions`,
T = `temperature`, alpha = exp(log_alpha) held (no gradient) in every loss but its own:

    y            = r + gamma (1 - terminated) min_i Q_target_i(s', a'),  a' ~ pi(.|s')
                   (deterministic_backup; without it minus alpha log pi(a'|s'); no gradient)
    X_i(s)       = 3N values per state, N of each:
                   Q_i(s, a_rand) - log(0.5^dim(A))   a_rand uniform between the action bounds
                   Q_i(s, a~') - log pi(a~'|s')       a~' ~ pi(.|s')
                   Q_i(s, a~) - log pi(a~|s)          a~ ~ pi(.|s)
                   (the policy's draws and log pi carry no gradient: RLlib freezes the policy)
    cql_loss_i   = min_q_weight (T mean_s logsumexp_j(X_ij(s) / T) - mean Q_i(s, a))
    qf_loss_i    = mean((Q_i(s, a) - y)^2) + cql_loss_i,  for each critic i (twin_q: two)
    policy_loss  = mean(alpha log pi(a~|s) - min_i Q_i(s, a~))   after `bc_iters` iterations
                 = mean(alpha log pi(a~|s) - log pi(a|s))        before: behaviour cloning
    alpha_loss   = -mean(log_alpha (log pi(a~|s) + target_entropy))

td_error = |Q_1(s, a) - y| per row (0.5 (|Q_1 - y| + |Q_2 - y|) with twin_q).

The statistics are SAC's (`trainer.algorithms.sac.loss.STAT_KEYS`), with cql_loss (the first
critic's conservative term) after target_entropy, and qf_mean, qf_max and qf_min of the first
critic's Q_1(s, a~) over the N policy draws per state (RLlib's `q_curr_repeat`).

- `conservative_critic_losses`: qf_loss_i, cql_loss and td_error on the critics' outputs
  (RLlib's forward-pass keys), then the backward pass: each qf_loss_i's gradient with respect
  to its critic's outputs.
- `behaviour_cloning_objective`: log pi(a|s) of the recorded actions, the policy's objective
  while it clones them, and its gradient.
- `numpy_loss`: the whole loss on SAC's numpy module, forward and backward, from SAC's pieces
  (`trainer.algorithms.sac.loss`): the policy's draws, the q-targets, `conservative_critic_term`
  (the critics' pass over the recorded and the repeated rows, `conservative_critic_losses`, the
  critics' backward pass), the policy's objective (`behaviour_cloning_objective` while cloning,
  else `min_q_objective`) and SAC's policy and alpha losses, the policy's backward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from trainer.algorithms.sac.loss import (
    ALPHA,
    POLICY,
    QF,
    QF_PREDS,
    QF_TWIN,
    QF_TWIN_PREDS,
    PolicyDraws,
    ResampledQ,
    SACLoss,
    alpha_loss,
    draw_actions,
    policy_gradient,
    policy_loss,
    q_targets,
    statistics,
)
from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    SACModule,
    SquashedGaussian,
)

if TYPE_CHECKING:
    from trainer.algorithms.cql.config import CQLConfig

#: RLlib's CQL statistic: the conservative term of the first critic's loss.
CQL_LOSS_KEY = "cql_loss"
#: RLlib's forward-pass keys (`DefaultCQLTorchRLModule`) of what the conservative term reads
#: besides each critic's values: the policy's draws at s (their last axis is dim(A)) and the
#: log-likelihoods of its draws at s' and at s, shaped (B, N) or (B, N, 1).
ACTIONS_CURR_REPEAT = "actions_curr_repeat"
LOGPS_NEXT_REPEAT = "logps_next_repeat"
LOGPS_CURR_REPEAT = "logps_curr_repeat"
#: Each critic's forward-pass keys: its Q_i(s, a) of the recorded actions, and the prefix of
#: its values of the repeated states' actions, "<prefix>_<draw>_repeat" for each draw of
#: `DRAWS` (in X's order), shaped as the log-likelihoods.
CRITIC_KEYS = ((QF_PREDS, "q"), (QF_TWIN_PREDS, "q_twin"))
DRAWS = ("rand", "next", "curr")

#: Sums through the ufunc itself (no Python wrapper call).
_sum = np.add.reduce


def repeat_key(prefix: str, draw: str) -> str:
    """The forward-pass key of a critic's values of one draw's repeated rows."""
    return f"{prefix}_{draw}_repeat"


def logsumexp_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log sum_j exp(x_ij) per row and softmax(x) (its gradient), without overflow."""
    top = np.maximum.reduce(x, axis=1, keepdims=True)
    shifted = np.exp(x - top)
    total = _sum(shifted, axis=1, keepdims=True)
    return (np.log(total) + top)[:, 0], shifted / total


# -- the critics' loss, on their outputs -----------------------------------------------------
class ConservativeCriticLosses(NamedTuple):
    """`conservative_critic_losses`' result."""

    #: qf_loss_i by optimizer name ("qf", "qf_twin").
    losses: dict[str, float]
    #: The first critic's conservative term.
    cql_loss: float
    #: Per row, |Q_i(s, a) - y| averaged over the critics.
    td_error: np.ndarray
    #: The backward pass: d qf_loss_i / d each of critic i's outputs, by forward-pass key
    #: (`CRITIC_KEYS`), shaped as the outputs.
    gradients: dict[str, np.ndarray]


def conservative_critic_losses(
    fwd_out: dict[str, np.ndarray], q_selected_target: np.ndarray, config: CQLConfig
) -> ConservativeCriticLosses:
    """Each critic's squared Bellman error plus its conservative term, on the critics' outputs
    (`fwd_out`, RLlib's keys: `CRITIC_KEYS` of the critics it holds, `ACTIONS_CURR_REPEAT`,
    `LOGPS_NEXT_REPEAT`, `LOGPS_CURR_REPEAT`) and the q-targets y; then their gradients."""
    temperature, min_q_weight = float(config.temperature), float(config.min_q_weight)
    # log(0.5^dim(A)): RLlib's density of the random actions, in the values' float type.
    dtype = fwd_out[QF_PREDS].dtype
    random_density = dtype.type(fwd_out[ACTIONS_CURR_REPEAT].shape[-1] * math.log(0.5))
    # What X subtracts from each draw's values: its log-density (log pi held).
    log_densities: dict[str, Any] = {
        "rand": random_density,
        "next": fwd_out[LOGPS_NEXT_REPEAT],
        "curr": fwd_out[LOGPS_CURR_REPEAT],
    }
    critics = [(preds, prefix) for preds, prefix in CRITIC_KEYS if preds in fwd_out]
    losses: dict[str, float] = {}
    gradients: dict[str, np.ndarray] = {}
    cql_loss = 0.0
    td_error = np.zeros(len(q_selected_target), dtype=dtype)
    for index, (preds, prefix) in enumerate(critics):
        q_selected = fwd_out[preds]
        size = len(q_selected)
        td = q_selected - q_selected_target

        # X_i(s): its 3N values per state, the random draws', then the policy's at s' and at s.
        q_repeat = [fwd_out[repeat_key(prefix, draw)] for draw in DRAWS]
        x = np.concatenate(
            [q - log_densities[draw] for q, draw in zip(q_repeat, DRAWS, strict=True)], axis=1
        ).reshape(size, -1)
        logsumexp, softmax = logsumexp_rows(x / temperature)

        # cql_loss_i and qf_loss_i.
        cql_loss_i = min_q_weight * (temperature * float(_sum(logsumexp)) - float(_sum(q_selected)))
        cql_loss_i /= size
        losses[QF if index == 0 else QF_TWIN] = float(_sum(td * td) / size) + cql_loss_i
        if index == 0:
            cql_loss = cql_loss_i
        td_error += np.abs(td)

        # backward: d qf_loss_i / d Q_i(s, a) = (2 (Q_i(s, a) - y) - min_q_weight) / B, and
        # d qf_loss_i / d X_ij = min_q_weight softmax_j(X_i(s) / T) / B, X's blocks back to
        # the draws they came from.
        gradients[preds] = (2.0 * td - min_q_weight) / size
        d_x = softmax * (min_q_weight / size)
        start = 0
        for q, draw in zip(q_repeat, DRAWS, strict=True):
            n = q.shape[1]
            gradients[repeat_key(prefix, draw)] = d_x[:, start : start + n].reshape(q.shape)
            start += n
    td_error /= len(critics)
    return ConservativeCriticLosses(losses, cql_loss, td_error, gradients)


# -- the critic term and the policy objective on SAC's numpy module --------------------------
@dataclass
class CriticTerms:
    """`conservative_critic_term`'s result, its backward pass done (each critic's gradient in
    the module's gradient buffer)."""

    #: Each critic's loss, by optimizer name ("qf", "qf_twin").
    losses: dict[str, float]
    td_error: np.ndarray
    #: The term's own statistics (cql_loss).
    stats: dict[str, Any]
    #: The Q-values qf_mean, qf_max and qf_min describe.
    q_stats: np.ndarray


@dataclass
class ActorObjective:
    """What the policy's loss subtracts per row of s (`value`), and the gradients of
    -mean(value): with respect to the resampled actions (`d_actions`) and directly to the
    distribution's mean and log-std (None: none)."""

    value: np.ndarray
    d_actions: np.ndarray
    d_mean: np.ndarray | None = None
    d_log_std: np.ndarray | None = None


def policy_draws(
    module: SACModule, rng: np.random.Generator, obs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Squashed Gaussian draws and their log-likelihoods for each row of `obs` (no gradient:
    the policy is frozen in the conservative term)."""
    dist_inputs = module.dist_inputs(obs)
    n = dist_inputs.shape[1] // 2
    mean = dist_inputs[:, :n]
    log_std = np.minimum(np.maximum(dist_inputs[:, n:], LOG_STD_MIN), LOG_STD_MAX)
    noise = rng.standard_normal(mean.shape).astype(np.float32)
    unsquashed = mean + np.exp(log_std) * noise
    return np.tanh(unsquashed), SquashedGaussian.squashed_logp(unsquashed, mean, log_std)


def conservative_critic_term(
    module: SACModule,
    obs: np.ndarray,
    next_obs: np.ndarray,
    actions: np.ndarray,
    q_selected_target: np.ndarray,
    *,
    config: CQLConfig,
    rng: np.random.Generator,
    action_low: np.ndarray,
    action_high: np.ndarray,
) -> CriticTerms:
    """CQL's critic term for `numpy_loss`: the random and the policy's draws, each
    critic's pass over the B recorded rows and the 3 N B repeated ones at once,
    `conservative_critic_losses`, and each critic's backward pass into its gradients."""
    size, n = len(obs), int(config.num_actions)
    # Rows in blocks: [recorded (B) | random (B N) | pi at s' (B N) | pi at s (B N)]; each
    # state repeated N times in place, as RLlib's repeat_interleave.
    obs_repeat = np.repeat(obs, n, axis=0)
    next_obs_repeat = np.repeat(next_obs, n, axis=0)
    random_shape = (size * n, len(action_low))
    random_actions = rng.uniform(action_low, action_high, size=random_shape).astype(np.float32)
    pi_actions, pi_logps = policy_draws(module, rng, np.concatenate([next_obs_repeat, obs_repeat]))
    all_obs = np.concatenate([obs, obs_repeat, next_obs_repeat, obs_repeat])
    all_actions = np.concatenate([actions, random_actions, pi_actions])

    # The forward passes, as RLlib's DefaultCQLTorchRLModule's outputs.
    fwd_out = {
        ACTIONS_CURR_REPEAT: pi_actions[size * n :],
        LOGPS_NEXT_REPEAT: pi_logps[: size * n].reshape(size, n),
        LOGPS_CURR_REPEAT: pi_logps[size * n :].reshape(size, n),
    }
    caches = []
    for critic, (preds, prefix) in zip(module.critics, CRITIC_KEYS, strict=False):
        q_all, cache = critic.forward_train(all_obs, all_actions)
        caches.append(cache)
        fwd_out[preds] = q_all[:size]
        for draw, q_draw in zip(DRAWS, q_all[size:].reshape(3, size, n), strict=True):
            fwd_out[repeat_key(prefix, draw)] = q_draw

    loss = conservative_critic_losses(fwd_out, q_selected_target, config)

    # The backward passes: each critic's gradients, in its rows' order.
    gradients = loss.gradients
    for index, (critic, cache, (preds, prefix)) in enumerate(
        zip(module.critics, caches, CRITIC_KEYS, strict=False)
    ):
        d_q = np.concatenate(
            [gradients[preds], *(gradients[repeat_key(prefix, d)].reshape(-1) for d in DRAWS)]
        )
        critic.backward(
            cache, d_q.astype(np.float32, copy=False), module.critic_grads(index), False
        )
    # RLlib's qf_mean/max/min: the first critic's values of the policy's draws at s.
    q_curr = fwd_out[repeat_key("q", "curr")].reshape(-1)
    return CriticTerms(loss.losses, loss.td_error, {CQL_LOSS_KEY: loss.cql_loss}, q_curr)


def behaviour_cloning_objective(
    module: SACModule, obs: np.ndarray, actions: np.ndarray, draws: PolicyDraws
) -> ActorObjective:
    """The policy's objective during the first `bc_iters` training iterations: log pi(a|s) of
    the recorded actions, whose gradient reaches the distribution's mean and log-std directly
    (`module` and `obs` unused: `draws` holds the policy's outputs at s)."""
    size = draws.size
    logp, d_mean, d_log_std = SquashedGaussian.logp_and_grads(
        draws.mean[:size], draws.log_std[:size], actions
    )
    # backward: d(-mean log pi(a|s)) / d mean and / d log_std.
    return ActorObjective(
        value=logp,
        d_actions=np.zeros_like(d_mean),
        d_mean=-d_mean / size,
        d_log_std=-d_log_std / size,
    )


def min_q_objective(
    module: SACModule, obs: np.ndarray, actions: np.ndarray, draws: PolicyDraws
) -> ActorObjective:
    """SAC's objective, after `bc_iters` iterations: q_curr = min_i Q_i(s, a~), whose gradient
    (-1 / B per row) reaches the policy through the resampled actions only (`actions` unused)."""
    size = draws.size
    resampled = ResampledQ.forward(module, obs, draws.actions[:size])
    q_curr = resampled.q_curr
    d_q_curr = np.full(size, -1.0 / size, dtype=q_curr.dtype)
    return ActorObjective(value=q_curr, d_actions=resampled.backward(d_q_curr))


# -- the whole loss ----------------------------------------------------------------------------
def numpy_loss(
    batch: dict[str, np.ndarray],
    module: SACModule,
    target: SACModule,
    log_alpha: np.ndarray,
    target_entropy: float,
    rng: np.random.Generator,
    config: CQLConfig,
    *,
    cloning: bool,
    action_low: np.ndarray,
    action_high: np.ndarray,
) -> SACLoss:
    """CQL's loss on the replay-style train batch of recorded transitions, forward and backward
    (each optimizer's gradient of its own loss left in the module's gradient buffer): SAC's
    terms with `conservative_critic_term`, behaviour cloning for the policy while `cloning`,
    and with `deterministic_backup` no entropy term in the q-targets. `target`: the target
    critics; `rng`: the draws'; `action_low`, `action_high`: the action space's bounds (the
    random actions')."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)
    actions = np.asarray(batch["actions"], dtype=np.float32).reshape(size, -1)
    alpha = math.exp(float(log_alpha[0]))

    # a~ ~ pi(.|s) and a' ~ pi(.|s'), from one pass of the policy over s then s'.
    pi = draw_actions(module, rng, obs, next_obs)
    log_pi, log_pi_next = pi.logp[:size], pi.logp[size:]

    # q-targets y (no gradient): the target critics' value of s' (its soft value without
    # deterministic_backup).
    v_next = target.q_values(next_obs, pi.actions[size:])
    if not config.deterministic_backup:
        v_next = v_next - alpha * log_pi_next
    y = q_targets(batch, v_next)

    # qf_loss_i (with its conservative term) and td_error; backward into each critic's
    # gradients. (The weights, all 1 for recorded rows, unused.)
    critic = conservative_critic_term(
        module,
        obs,
        next_obs,
        actions,
        y,
        config=config,
        rng=rng,
        action_low=action_low,
        action_high=action_high,
    )

    # policy_loss = mean(alpha log pi(a~|s) - objective); backward into the policy's gradients,
    # through a~, log pi(a~|s) and the objective's direct gradients.
    objective = (behaviour_cloning_objective if cloning else min_q_objective)(
        module, obs, actions, pi
    )
    policy = policy_loss(alpha, log_pi, objective.value)
    d_dist_inputs = policy_gradient(
        pi, policy.d_logp, objective.d_actions, objective.d_mean, objective.d_log_std
    )
    module.policy_backward(pi.cache, d_dist_inputs)

    # alpha_loss.
    alpha_loss_value, d_log_alpha = alpha_loss(log_alpha, target_entropy, log_pi)

    losses = {**critic.losses, POLICY: policy.loss, ALPHA: alpha_loss_value}
    # SAC's statistics, with the critic term's own and of the Q-values it chose.
    q_stats, extra = critic.q_stats, critic.stats
    stats = statistics(
        losses, alpha, log_alpha, target_entropy, log_pi, q_stats, critic.td_error, extra
    )
    return SACLoss(losses, critic.td_error, stats, d_log_alpha)


__all__ = [
    "CQL_LOSS_KEY",
    "ActorObjective",
    "ConservativeCriticLosses",
    "CriticTerms",
    "behaviour_cloning_objective",
    "conservative_critic_losses",
    "conservative_critic_term",
    "logsumexp_rows",
    "min_q_objective",
    "numpy_loss",
]
