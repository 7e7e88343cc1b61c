"""SAC's loss (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"), RLlib
2.60's (`SACTorchLearner`), in numpy: each term's forward pass and, right after it, its
backward pass by hand. `torch_loss.py` beside it has the same terms on tensors (autograd
differentiates them), in the same order and with the same statistics.

Per replayed row (s, a, r, s', terminated), with w its importance weight (`weights`) and
gamma^n its discount (`discounts`, gamma ** the steps an n-step row spans); alpha = exp(log_alpha)
is held (no gradient) in every loss but its own.

Box actions: a~ = tanh(u), u = mean(s) + std(s) noise, reparameterized; a' the same at s';
log pi with the tanh Jacobian:

    y            = r + gamma^n (1 - terminated) (min_i Q_target_i(s', a') - alpha log pi(a'|s'))
                   (the q-targets; no gradient)
    qf_loss_i    = mean(w huber(Q_i(s, a) - y)),  for each critic i (twin_q: two)
    policy_loss  = mean(alpha log pi(a~|s) - min_i Q_i(s, a~)),  the critics' parameters held
    alpha_loss   = -mean(log_alpha (log pi(a~|s) + target_entropy))

Discrete actions: p = softmax(logits), expectations over the actions instead of draws:

    y            = r + gamma^n (1 - terminated) sum_a p(a|s') (min_i Q_target_i(s', a)
                   - alpha log p(a|s'))
    qf_loss_i    = mean(w huber(Q_i(s, a) - y))
    policy_loss  = mean(sum_a p(a|s) (alpha log p(a|s) - min_i Q_i(s, a)))
    alpha_loss   = -mean(log_alpha (sum_a p(a|s) log p(a|s) + target_entropy))

td_error = |Q_1(s, a) - y| per row (0.5 (|Q_1 - y| + |Q_2 - y|) with twin_q), for the
prioritized replay buffer.

The statistics, RLlib's keys and definitions (`STAT_KEYS`), the same in both frameworks:

    policy_loss, qf_loss, alpha_loss     the losses (qf_twin_loss: the twin critic's, twin_q)
    alpha_value, log_alpha_value         exp(log_alpha) and log_alpha (float32), before the step
    target_entropy
    logps          mean log pi(a~|s) (Box); the mean of log p(a|s) over rows and actions
                   (Discrete)
    qf_mean, qf_max, qf_min
                   of min_i Q_i(s, a~) (Box); of Q_1(s, .) over rows and actions (Discrete)
    td_error_mean  mean(td_error)

A critic term other than SAC's (CQL's) may add statistics of its own, after target_entropy,
and choose the Q-values qf_mean, qf_max and qf_min describe.

`continuous_loss` and `discrete_loss` return each optimizer's loss (by optimizer name:
"qf", "qf_twin", "policy", "alpha"), the TD errors, the statistics and d alpha_loss /
d log_alpha; their backward passes leave each optimizer's gradient of its own loss in the
module's gradient buffer: critic i's slice from qf_loss_i only, the policy's from policy_loss
only (its gradient reaches a~ through the critics, whose parameters take none of it). The
learner steps the optimizers and moves the target critics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    SACModule,
    SquashedGaussian,
)
from trainer.core.learner import POLICY_LOSS_KEY
from trainer.core.nn import log_softmax

#: RLlib's statistics keys (`ray.rllib.algorithms.sac.sac_learner`), in the order both
#: frameworks report them; the last with twin_q only.
QF_LOSS_KEY = "qf_loss"
ALPHA_LOSS_KEY = "alpha_loss"
ALPHA_VALUE_KEY = "alpha_value"
LOG_ALPHA_VALUE_KEY = "log_alpha_value"
TARGET_ENTROPY_KEY = "target_entropy"
LOGPS_KEY = "logps"
QF_MEAN_KEY = "qf_mean"
QF_MAX_KEY = "qf_max"
QF_MIN_KEY = "qf_min"
TD_ERROR_MEAN_KEY = "td_error_mean"
QF_TWIN_LOSS_KEY = "qf_twin_loss"
STAT_KEYS = (
    POLICY_LOSS_KEY,
    QF_LOSS_KEY,
    ALPHA_LOSS_KEY,
    ALPHA_VALUE_KEY,
    LOG_ALPHA_VALUE_KEY,
    TARGET_ENTROPY_KEY,
    LOGPS_KEY,
    QF_MEAN_KEY,
    QF_MAX_KEY,
    QF_MIN_KEY,
    TD_ERROR_MEAN_KEY,
    QF_TWIN_LOSS_KEY,
)
#: RLlib's forward-pass keys of the critics' Q-values (`DefaultSACTorchRLModule`'s outputs,
#: `ray.rllib.algorithms.sac.sac_learner`): Q_1(s, a) and the twin's Q_2(s, a).
QF_PREDS = "qf_preds"
QF_TWIN_PREDS = "qf_twin_preds"
#: RLlib's optimizer names (each minimizes the loss "<name>_loss").
POLICY, QF, QF_TWIN, ALPHA = "policy", "qf", "qf_twin", "alpha"
#: The replay buffer's train-batch columns beyond RLlib's `Columns`: the importance weights,
#: the n-step discounts gamma ** n, and RLlib's steps each n-step row spans.
WEIGHTS = "weights"
DISCOUNTS = "discounts"
N_STEP = "n_step"

#: Sums through the ufunc itself (no Python wrapper call).
_sum = np.add.reduce


# -- what the terms hand over --------------------------------------------------------------------
@dataclass
class SACLoss:
    """One evaluation of the loss (the parameters' gradients are in the module's gradient
    buffer)."""

    #: Each optimizer's loss, by optimizer name.
    losses: dict[str, float]
    #: Per row, for the prioritized buffer.
    td_error: np.ndarray
    #: `STAT_KEYS` (and a critic term's own statistics).
    stats: dict[str, Any]
    #: d alpha_loss / d log_alpha (0 where alpha is not learned).
    d_log_alpha: Any


@dataclass
class PolicyDraws:
    """One pass of the squashed Gaussian policy over the rows of s then s' (2 * `size` rows)
    and a reparameterized draw per row: a = tanh(u), u = mean + std * noise."""

    size: int
    #: The forward pass's cache over the rows of s (the policy's backward runs over those).
    cache: Any
    mean: np.ndarray
    #: The log-std before its clamp to [LOG_STD_MIN, LOG_STD_MAX] (no gradient outside).
    raw_log_std: np.ndarray
    log_std: np.ndarray
    std: np.ndarray
    noise: np.ndarray
    actions: np.ndarray
    logp: np.ndarray


@dataclass
class CriticTerms:
    """A critic term's result, its backward pass done (each critic's gradient in the module's
    gradient buffer)."""

    #: Each critic's loss, by optimizer name ("qf", "qf_twin").
    losses: dict[str, float]
    td_error: np.ndarray
    #: Statistics of the term's own (CQL's cql_loss).
    stats: dict[str, Any] = field(default_factory=dict)
    #: The Q-values qf_mean, qf_max and qf_min describe; None: the policy objective's.
    q_stats: np.ndarray | None = None


@dataclass
class ActorObjective:
    """What the policy's loss subtracts per row of s (`value`), and the gradients of
    -mean(value): with respect to the resampled actions (`d_actions`) and directly to the
    distribution's mean and log-std (None: none). `q_curr`: the critics' values of the
    resampled actions (statistics), None where they were not computed."""

    value: np.ndarray
    q_curr: np.ndarray | None
    d_actions: np.ndarray
    d_mean: np.ndarray | None = None
    d_log_std: np.ndarray | None = None


#: A critic term for Box actions: (module, obs, next_obs, actions, q-targets, weights) -> its
#: losses, forward and backward (SAC's `huber_critic_term`; CQL's adds its conservative term).
CriticTerm = Callable[
    [SACModule, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], CriticTerms
]
#: The policy's objective for Box actions: (module, obs, actions, draws) -> what the policy
#: loss subtracts, and its gradients (SAC's `min_q_objective`; CQL's behaviour cloning).
ActorTerm = Callable[[SACModule, np.ndarray, np.ndarray, PolicyDraws], ActorObjective]


# -- Box actions ---------------------------------------------------------------------------------
def draw_actions(
    module: SACModule, rng: np.random.Generator, obs: np.ndarray, next_obs: np.ndarray
) -> PolicyDraws:
    """The policy over s and s' in one pass, a reparameterized draw for each row (the
    backward pass runs over the rows of s)."""
    size = len(obs)
    dist_inputs, pi_cache = module.policy_forward_train(np.concatenate([obs, next_obs]))
    n = dist_inputs.shape[1] // 2
    mean, raw_log_std = dist_inputs[:, :n], dist_inputs[:, n:]
    log_std = np.minimum(np.maximum(raw_log_std, LOG_STD_MIN), LOG_STD_MAX)
    std = np.exp(log_std)
    noise = rng.standard_normal(mean.shape).astype(np.float32)
    unsquashed = mean + std * noise
    return PolicyDraws(
        size=size,
        cache=_leading_rows(pi_cache, size),
        mean=mean,
        raw_log_std=raw_log_std,
        log_std=log_std,
        std=std,
        noise=noise,
        actions=np.tanh(unsquashed),
        logp=SquashedGaussian.squashed_logp(unsquashed, mean, log_std),
    )


def huber_critic_term(
    module: SACModule,
    obs: np.ndarray,
    next_obs: np.ndarray,
    actions: np.ndarray,
    q_targets: np.ndarray,
    weights: np.ndarray,
) -> CriticTerms:
    """SAC's critic term: qf_loss_i = mean(w huber(Q_i(s, a) - y)), then its backward pass
    into critic i's gradients; td_error."""
    size = len(obs)
    losses: dict[str, float] = {}
    td_error = np.zeros(size, dtype=np.float32)
    for index, critic in enumerate(module.critics):
        q, cache = critic.forward_train(obs, actions)
        td = q - q_targets
        huber, d_huber = _huber(td)
        losses[QF if index == 0 else QF_TWIN] = float(_sum(weights * huber) / size)
        # backward: d qf_loss_i / d Q_i(s, a) = w huber'(td) / B.
        critic.backward(cache, weights * d_huber / size, module.critic_grads(index), False)
        td_error += np.abs(td)
    td_error /= len(module.critics)
    return CriticTerms(losses, td_error)


def min_q_objective(
    module: SACModule, obs: np.ndarray, actions: np.ndarray, draws: PolicyDraws
) -> ActorObjective:
    """SAC's policy objective: min_i Q_i(s, a~), whose gradient reaches the policy through
    the resampled actions only (the critics' backward to a~, no parameter gradients)."""
    size = draws.size
    resampled = draws.actions[:size]
    q_values, caches = zip(
        *(critic.forward_train(obs, resampled) for critic in module.critics), strict=True
    )
    q_curr = q_values[0] if len(q_values) == 1 else np.minimum(q_values[0], q_values[1])
    # backward: d(-mean q_curr) / d a~, through the critic each row's minimum came from.
    d_actions = np.zeros_like(resampled)
    for index, critic in enumerate(module.critics):
        # torch.min's gradient goes to the smaller value (the first critic's on a tie).
        if len(q_values) == 1:
            chosen = np.ones(size, dtype=bool)
        elif index == 0:
            chosen = q_values[0] <= q_values[1]
        else:
            chosen = q_values[1] < q_values[0]
        d_q = np.where(chosen, -1.0 / size, 0.0).astype(np.float32)
        d_action = critic.backward(caches[index], d_q, None, True)
        assert d_action is not None
        d_actions += d_action
    return ActorObjective(value=q_curr, q_curr=q_curr, d_actions=d_actions)


def continuous_loss(
    batch: dict[str, np.ndarray],
    module: SACModule,
    target: SACModule,
    log_alpha: np.ndarray,
    target_entropy: float,
    rng: np.random.Generator,
    *,
    critic_term: CriticTerm = huber_critic_term,
    actor_term: ActorTerm = min_q_objective,
    soft_backup: bool = True,
) -> SACLoss:
    """SAC's loss for Box actions on the replay buffer's train batch, forward and backward
    (see the module docstring). `module`: the trained module; `target`: the target critics
    (a copy of the module); `log_alpha`: shape (1,); `rng`: the reparameterized draws'.
    CQL's: `critic_term` and `actor_term` replace SAC's, and `soft_backup=False` leaves
    alpha log pi(a'|s') out of the q-targets (`deterministic_backup`)."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)
    actions = np.asarray(batch["actions"], dtype=np.float32).reshape(size, -1)
    alpha = math.exp(float(log_alpha[0]))

    # a~ ~ pi(.|s) and a' ~ pi(.|s'), from one pass of the policy over s then s'.
    pi = draw_actions(module, rng, obs, next_obs)
    log_pi, log_pi_next = pi.logp[:size], pi.logp[size:]

    # q-targets y (no gradient): the target critics' soft value of s'.
    q_target_next = target.q_values(next_obs, pi.actions[size:])
    v_next = q_target_next - alpha * log_pi_next if soft_backup else q_target_next
    not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
    q_targets = batch["rewards"] + batch[DISCOUNTS] * not_terminated * v_next

    # qf_loss_i and td_error; backward into each critic's gradients.
    critic = critic_term(module, obs, next_obs, actions, q_targets, batch[WEIGHTS])

    # policy_loss = mean(alpha log pi(a~|s) - objective), the objective min_i Q_i(s, a~).
    objective = actor_term(module, obs, actions, pi)
    policy_loss = float(_sum(alpha * log_pi - objective.value) / size)
    # backward: to the distribution's mean and log-std through a~ = tanh(u),
    # u = mean + std noise, and log pi's own dependence on them (d log pi / d mean = 2 a~,
    # d log pi / d log_std = 2 a~ std noise - 1), plus the objective's direct gradients.
    resampled, noise, std = pi.actions[:size], pi.noise[:size], pi.std[:size]
    d_unsquashed = objective.d_actions * (1.0 - resampled * resampled)
    coefficient = alpha / size
    d_mean = d_unsquashed + coefficient * 2.0 * resampled
    d_log_std = (d_unsquashed + coefficient * 2.0 * resampled) * std * noise
    d_log_std -= coefficient
    if objective.d_mean is not None:
        d_mean += objective.d_mean
    if objective.d_log_std is not None:
        d_log_std += objective.d_log_std
    raw_log_std = pi.raw_log_std[:size]  # (the clamp passes no gradient outside its range)
    d_log_std *= (raw_log_std > LOG_STD_MIN) & (raw_log_std < LOG_STD_MAX)
    module.policy_backward(pi.cache, np.concatenate([d_mean, d_log_std], axis=1))

    # alpha_loss = -mean(log_alpha (log pi(a~|s) + target_entropy)); backward: d/d log_alpha.
    entropy_gap = log_pi + target_entropy
    alpha_loss = float(-log_alpha[0] * _sum(entropy_gap) / size)
    d_log_alpha = -_sum(entropy_gap) / size

    losses = {**critic.losses, POLICY: policy_loss, ALPHA: alpha_loss}
    q_stats = critic.q_stats if critic.q_stats is not None else objective.q_curr
    assert q_stats is not None
    stats = statistics(
        losses, alpha, log_alpha, target_entropy, log_pi, q_stats, critic.td_error, critic.stats
    )
    return SACLoss(losses, critic.td_error, stats, d_log_alpha)


# -- Discrete actions ----------------------------------------------------------------------------
def discrete_loss(
    batch: dict[str, np.ndarray],
    module: SACModule,
    target: SACModule,
    log_alpha: np.ndarray,
    target_entropy: float,
) -> SACLoss:
    """SAC's loss for Discrete actions on the replay buffer's train batch, forward and
    backward (see the module docstring and `continuous_loss`)."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)
    actions = np.asarray(batch["actions"]).astype(np.int64).reshape(size)
    rows = np.arange(size)
    alpha = math.exp(float(log_alpha[0]))

    # p(.|s) and p(.|s'), from one pass of the policy over s then s'.
    logits, pi_cache = module.policy_forward_train(np.concatenate([obs, next_obs]))
    pi_cache = _leading_rows(pi_cache, size)
    log_probs = log_softmax(logits)
    probs = np.exp(log_probs)
    probs_cur, log_probs_cur = probs[:size], log_probs[:size]
    probs_next, log_probs_next = probs[size:], log_probs[size:]

    # q-targets y (no gradient): the target critics' soft value of s', in expectation.
    q_target_next = target.q_values(next_obs)
    v_next = _sum(probs_next * (q_target_next - alpha * log_probs_next), axis=1)
    not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
    q_targets = batch["rewards"] + batch[DISCOUNTS] * not_terminated * v_next

    # qf_loss_i = mean(w huber(Q_i(s, a) - y)) and td_error; backward into each critic's
    # gradients, through Q_i(s, a) of the taken actions only.
    weights = batch[WEIGHTS]
    losses: dict[str, float] = {}
    td_error = np.zeros(size, dtype=np.float32)
    q_all = []
    for index, critic in enumerate(module.critics):
        q, cache = critic.forward_train(obs, None)
        q_all.append(q)
        td = q[rows, actions] - q_targets
        huber, d_huber = _huber(td)
        losses[QF if index == 0 else QF_TWIN] = float(_sum(weights * huber) / size)
        d_q = np.zeros_like(q)
        d_q[rows, actions] = weights * d_huber / size
        critic.backward(cache, d_q, module.critic_grads(index), False)
        td_error += np.abs(td)
    td_error /= len(module.critics)

    # policy_loss = mean(sum_a p(a|s) (alpha log p(a|s) - min_i Q_i(s, a))), the critics held.
    q_min = q_all[0] if len(q_all) == 1 else np.minimum(q_all[0], q_all[1])
    per_action = alpha * log_probs_cur - q_min
    per_row = _sum(probs_cur * per_action, axis=1)
    policy_loss = float(_sum(per_row) / size)
    losses[POLICY] = policy_loss
    # backward: d/d logit_k of sum_a p_a f_a (f = alpha log p - Q) is p_k (f_k - sum_a p_a f_a).
    d_logits = probs_cur * (per_action - per_row[:, None]) / size
    module.policy_backward(pi_cache, d_logits.astype(np.float32))

    # alpha_loss = -mean(log_alpha (sum_a p log p + target_entropy)); backward: d/d log_alpha.
    negative_entropy = _sum(probs_cur * log_probs_cur, axis=1)
    entropy_gap = negative_entropy + target_entropy
    alpha_loss = float(-log_alpha[0] * _sum(entropy_gap) / size)
    d_log_alpha = -_sum(entropy_gap) / size
    losses[ALPHA] = alpha_loss

    stats = statistics(
        losses, alpha, log_alpha, target_entropy, log_probs_cur, q_all[0], td_error, {}
    )
    return SACLoss(losses, td_error, stats, d_log_alpha)


# -- the statistics ------------------------------------------------------------------------------
def statistics(
    losses: dict[str, float],
    alpha: float,
    log_alpha: np.ndarray,
    target_entropy: float,
    logps: np.ndarray,
    q: np.ndarray,
    td_error: np.ndarray,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """RLlib's statistics (`STAT_KEYS`; `extra`, a critic term's own, after target_entropy):
    `logps` the log-likelihoods logps averages, `q` the Q-values qf_mean, qf_max and qf_min
    describe."""
    stats = {
        POLICY_LOSS_KEY: losses[POLICY],
        QF_LOSS_KEY: losses[QF],
        ALPHA_LOSS_KEY: losses[ALPHA],
        # (the float32 alpha the loss terms multiply by, as RLlib's torch.exp(log_alpha))
        ALPHA_VALUE_KEY: float(np.float32(alpha)),
        LOG_ALPHA_VALUE_KEY: float(log_alpha[0]),
        TARGET_ENTROPY_KEY: target_entropy,
        **extra,
        LOGPS_KEY: float(_sum(logps, axis=None) / logps.size),
        QF_MEAN_KEY: float(_sum(q, axis=None) / q.size),
        QF_MAX_KEY: float(np.maximum.reduce(q, axis=None)),
        QF_MIN_KEY: float(np.minimum.reduce(q, axis=None)),
        TD_ERROR_MEAN_KEY: float(_sum(td_error) / len(td_error)),
    }
    if QF_TWIN in losses:
        stats[QF_TWIN_LOSS_KEY] = losses[QF_TWIN]
    return stats


# -- helpers -------------------------------------------------------------------------------------
def _huber(td: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Huber loss (delta 1) per row and its derivative."""
    abs_td = np.abs(td)
    loss = np.where(abs_td <= 1.0, 0.5 * td * td, abs_td - 0.5)
    return loss, np.minimum(np.maximum(td, -1.0), 1.0)


def _leading_rows(cache: Any, n: int) -> Any:
    """A forward pass's cache restricted to its first `n` rows (views), for a backward pass
    over those rows only."""
    if isinstance(cache, np.ndarray):
        return cache[:n]
    if isinstance(cache, (tuple, list)):
        return type(cache)(_leading_rows(item, n) for item in cache)
    return cache
