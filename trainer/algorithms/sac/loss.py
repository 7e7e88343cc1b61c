"""SAC's loss (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"), RLlib
2.60's (`SACTorchLearner`), in numpy: the terms on the module's outputs with their gradients
with respect to those outputs, and the passes through the numpy module around them.
`torch_loss.py` beside it has the same terms on tensors (autograd differentiates them), in the
same order and with the same statistics.

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

- The terms, pure functions of the batch and the module's outputs (RLlib's forward-pass keys,
  `DefaultSACTorchRLModule`'s): `continuous_loss_terms` (Q_i(s, a), q_curr = min_i Q_i(s, a~),
  log pi(a~|s), the target critics' min_i Q_target_i(s', a') and log pi(a'|s')) and
  `discrete_loss_terms` (Q_i(s, .), p(.|s) and log p(.|s), the same at s', the target
  critics' min_i Q_target_i(s', .)). Each returns each optimizer's loss (by optimizer name:
  "qf", "qf_twin", "policy", "alpha"), the TD errors, the statistics, d alpha_loss /
  d log_alpha and each loss's gradient with respect to the outputs it reads: qf_loss_i's to
  Q_i; policy_loss's to q_curr and log pi(a~|s) (Box), or to the logits at s (Discrete). They
  are built from `q_targets`, `huber_critic_losses`, `policy_loss`, `alpha_loss` and
  `statistics`, which CQL's loss reuses.
- The passes through the numpy module: `continuous_loss` and `discrete_loss` run the module's
  forward passes into those outputs, the terms, then the backward passes, which leave each
  optimizer's gradient of its own loss in the module's gradient buffer: critic i's slice from
  qf_loss_i only, the policy's from policy_loss only. For Box actions the policy's gradient
  flows from q_curr through the critic each row's minimum came from (its parameters take none
  of it) to a~ (`ResampledQ.backward`), then with log pi(a~|s)'s own through the
  reparameterization to the distribution's mean and log-std (`policy_gradient`), then into the
  policy network. The learner steps the optimizers and moves the target critics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    Critic,
    SACModule,
    SquashedGaussian,
)
from trainer.compat.rllib_utils import Columns
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
#: RLlib's forward-pass keys (`DefaultSACTorchRLModule`'s outputs,
#: `ray.rllib.algorithms.sac.sac_learner`). The critics' Q_i(s, a) (Box actions) or Q_i(s, .)
#: (Discrete), in the critics' order, and the target critics' min_i Q_target_i at s' (of a').
QF_PREDS = "qf_preds"
QF_TWIN_PREDS = "qf_twin_preds"
CRITIC_OUTPUTS = (QF_PREDS, QF_TWIN_PREDS)
QF_TARGET_NEXT = "q_target_next"
#: Box actions: min_i Q_i(s, a~) (the critics' parameters held), log pi(a~|s) of the
#: reparameterized draws at s, log pi(a'|s') of the draws at s', the policy's outputs at s'.
Q_CURR = "q_curr"
LOGP_RESAMPLED = "logp_resampled"
LOGP_NEXT_RESAMPLED = "logp_next_resampled"
ACTION_DIST_INPUTS_NEXT = "action_dist_inputs_next"
#: Discrete actions: p(.|s) and log p(.|s), and the same at s'.
ACTION_PROBS = "action_probs"
ACTION_LOG_PROBS = "action_log_probs"
ACTION_PROBS_NEXT = "action_probs_next"
ACTION_LOG_PROBS_NEXT = "action_log_probs_next"
#: RLlib's optimizer names (each minimizes the loss "<name>_loss").
POLICY, QF, QF_TWIN, ALPHA = "policy", "qf", "qf_twin", "alpha"
#: The replay buffer's train-batch columns beyond RLlib's `Columns`: the importance weights,
#: the n-step discounts gamma ** n, and RLlib's steps each n-step row spans.
WEIGHTS = "weights"
DISCOUNTS = "discounts"
N_STEP = "n_step"

#: Sums through the ufunc itself (no Python wrapper call).
_sum = np.add.reduce


@dataclass
class SACLoss:
    """One evaluation of the loss."""

    #: Each optimizer's loss, by optimizer name.
    losses: dict[str, float]
    #: Per row, for the prioritized buffer.
    td_error: np.ndarray
    #: `STAT_KEYS` (and a critic term's own statistics).
    stats: dict[str, Any]
    #: d alpha_loss / d log_alpha (0 where alpha is not learned).
    d_log_alpha: Any
    #: The terms' gradients with respect to the module's outputs, by forward-pass key (each
    #: loss's to the outputs it reads; see the module docstring). The passes through the
    #: numpy module leave the parameters' gradients in its gradient buffer.
    gradients: dict[str, np.ndarray] = field(default_factory=dict)


# -- the terms, on the module's outputs ----------------------------------------------------------
def q_targets(batch: dict[str, np.ndarray], v_next: np.ndarray) -> np.ndarray:
    """y = r + gamma^n (1 - terminated) V(s'), `v_next` the value of s' the loss bootstraps
    from (no gradient)."""
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].astype(np.float32)
    return batch[Columns.REWARDS] + batch[DISCOUNTS] * not_terminated * v_next


class CriticLosses(NamedTuple):
    """`huber_critic_losses`' result."""

    #: qf_loss_i by optimizer name ("qf", "qf_twin").
    losses: dict[str, float]
    #: Per row, |Q_i(s, a) - y| averaged over the critics.
    td_error: np.ndarray
    #: d qf_loss_i / d Q_i(s, a), per critic.
    gradients: list[np.ndarray]


def huber_critic_losses(
    weights: np.ndarray, q_selected: Sequence[np.ndarray], q_selected_target: np.ndarray
) -> CriticLosses:
    """qf_loss_i = mean(w huber(Q_i(s, a) - y)) for each critic's Q_i(s, a) (`q_selected`, one
    or two), the TD errors, and d qf_loss_i / d Q_i(s, a) = w huber'(Q_i(s, a) - y) / B."""
    size = len(q_selected_target)
    losses: dict[str, float] = {}
    gradients: list[np.ndarray] = []
    td_error = np.zeros(size, dtype=q_selected[0].dtype)
    for index, q in enumerate(q_selected):
        td = q - q_selected_target
        huber, d_huber = _huber(td)
        losses[QF if index == 0 else QF_TWIN] = float(_sum(weights * huber) / size)
        gradients.append(weights * d_huber / size)
        td_error += np.abs(td)
    td_error /= len(q_selected)
    return CriticLosses(losses, td_error, gradients)


class PolicyLoss(NamedTuple):
    """`policy_loss`' result."""

    loss: float
    #: d policy_loss / d log pi(a~|s): alpha / B per row.
    d_logp: np.ndarray
    #: d policy_loss / d objective: -1 / B per row.
    d_objective: np.ndarray


def policy_loss(alpha: float, logp: np.ndarray, objective: np.ndarray) -> PolicyLoss:
    """policy_loss = mean(alpha log pi(a~|s) - objective) for Box actions, `objective` what it
    subtracts per row (SAC's q_curr = min_i Q_i(s, a~)), and its gradients."""
    size = len(logp)
    loss = float(_sum(alpha * logp - objective) / size)
    d_logp = np.full(size, alpha / size, dtype=logp.dtype)
    d_objective = np.full(size, -1.0 / size, dtype=objective.dtype)
    return PolicyLoss(loss, d_logp, d_objective)


def alpha_loss(
    log_alpha: np.ndarray, target_entropy: float, logp: np.ndarray
) -> tuple[float, float]:
    """alpha_loss = -mean(log_alpha (logp + target_entropy)) and d alpha_loss / d log_alpha:
    `logp` log pi(a~|s) per row (Box), or sum_a p(a|s) log p(a|s) (Discrete)."""
    entropy_gap = logp + target_entropy
    loss = float(-log_alpha[0] * _sum(entropy_gap) / len(logp))
    return loss, -_sum(entropy_gap) / len(logp)


def continuous_loss_terms(
    batch: dict[str, np.ndarray],
    fwd_out: dict[str, np.ndarray],
    log_alpha: np.ndarray,
    target_entropy: float,
) -> SACLoss:
    """SAC's loss for Box actions on the module's outputs (`fwd_out`: `CRITIC_OUTPUTS` of the
    critics it has, `Q_CURR`, `LOGP_RESAMPLED`, `QF_TARGET_NEXT`, `LOGP_NEXT_RESAMPLED`) and
    the batch's `rewards`, `terminateds`, `discounts` and `weights`; `log_alpha`: shape (1,).
    Its gradients: to each critic's output, to `Q_CURR` and to `LOGP_RESAMPLED`."""
    alpha = math.exp(float(log_alpha[0]))
    critics = [key for key in CRITIC_OUTPUTS if key in fwd_out]
    logp, q_curr = fwd_out[LOGP_RESAMPLED], fwd_out[Q_CURR]

    # q-targets y (no gradient): the target critics' soft value of s'.
    y = q_targets(batch, fwd_out[QF_TARGET_NEXT] - alpha * fwd_out[LOGP_NEXT_RESAMPLED])

    # qf_loss_i and td_error.
    critic = huber_critic_losses(batch[WEIGHTS], [fwd_out[key] for key in critics], y)

    # policy_loss, against q_curr (the critics' parameters held).
    policy = policy_loss(alpha, logp, q_curr)

    # alpha_loss.
    alpha_loss_value, d_log_alpha = alpha_loss(log_alpha, target_entropy, logp)

    losses = {**critic.losses, POLICY: policy.loss, ALPHA: alpha_loss_value}
    stats = statistics(losses, alpha, log_alpha, target_entropy, logp, q_curr, critic.td_error, {})
    gradients = dict(zip(critics, critic.gradients, strict=True))
    gradients.update({Q_CURR: policy.d_objective, LOGP_RESAMPLED: policy.d_logp})
    return SACLoss(losses, critic.td_error, stats, d_log_alpha, gradients)


def discrete_loss_terms(
    batch: dict[str, np.ndarray],
    fwd_out: dict[str, np.ndarray],
    log_alpha: np.ndarray,
    target_entropy: float,
) -> SACLoss:
    """SAC's loss for Discrete actions on the module's outputs (`fwd_out`: `CRITIC_OUTPUTS` of
    the critics it has, `ACTION_PROBS`, `ACTION_LOG_PROBS`, `ACTION_PROBS_NEXT`,
    `ACTION_LOG_PROBS_NEXT`, `QF_TARGET_NEXT`) and the batch's `actions`, `rewards`,
    `terminateds`, `discounts` and `weights` (see `continuous_loss_terms`). Its gradients: to
    each critic's Q_i(s, .) and to the logits at s (`Columns.ACTION_DIST_INPUTS`), through
    p(.|s) and log p(.|s)."""
    alpha = math.exp(float(log_alpha[0]))
    critics = [key for key in CRITIC_OUTPUTS if key in fwd_out]
    q_all = [fwd_out[key] for key in critics]
    probs, log_probs = fwd_out[ACTION_PROBS], fwd_out[ACTION_LOG_PROBS]
    size = len(probs)
    actions = np.asarray(batch[Columns.ACTIONS]).astype(np.int64).reshape(size)
    rows = np.arange(size)

    # q-targets y (no gradient): the target critics' soft value of s', in expectation.
    log_probs_next = fwd_out[ACTION_LOG_PROBS_NEXT]
    v_next = _sum(
        fwd_out[ACTION_PROBS_NEXT] * (fwd_out[QF_TARGET_NEXT] - alpha * log_probs_next), axis=1
    )
    y = q_targets(batch, v_next)

    # qf_loss_i and td_error, on Q_i(s, a) of the taken actions (the only ones with a gradient).
    critic = huber_critic_losses(batch[WEIGHTS], [q[rows, actions] for q in q_all], y)
    gradients: dict[str, np.ndarray] = {}
    for key, q, d_selected in zip(critics, q_all, critic.gradients, strict=True):
        gradients[key] = np.zeros_like(q)
        gradients[key][rows, actions] = d_selected

    # policy_loss = mean(sum_a p(a|s) (alpha log p(a|s) - min_i Q_i(s, a))), the critics held;
    # d/d logit_k of sum_a p_a f_a (f = alpha log p - Q) is p_k (f_k - sum_a p_a f_a).
    q_min = q_all[0] if len(q_all) == 1 else np.minimum(q_all[0], q_all[1])
    per_action = alpha * log_probs - q_min
    per_row = _sum(probs * per_action, axis=1)
    policy_loss_value = float(_sum(per_row) / size)
    gradients[Columns.ACTION_DIST_INPUTS] = probs * (per_action - per_row[:, None]) / size

    # alpha_loss, on the negative entropy sum_a p(a|s) log p(a|s).
    negative_entropy = _sum(probs * log_probs, axis=1)
    alpha_loss_value, d_log_alpha = alpha_loss(log_alpha, target_entropy, negative_entropy)

    losses = {**critic.losses, POLICY: policy_loss_value, ALPHA: alpha_loss_value}
    stats = statistics(
        losses, alpha, log_alpha, target_entropy, log_probs, q_all[0], critic.td_error, {}
    )
    return SACLoss(losses, critic.td_error, stats, d_log_alpha, gradients)


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


# -- the passes through the numpy module ---------------------------------------------------------
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


@dataclass
class ResampledQ:
    """The critics' pass over (s, a~), their parameters held: q_curr = min_i Q_i(s, a~), and
    what the backward pass to a~ needs."""

    critics: list[Critic]
    #: a~, and each critic's Q_i(s, a~) and its pass's cache.
    actions: np.ndarray
    values: list[np.ndarray]
    caches: list[Any]
    q_curr: np.ndarray

    @classmethod
    def forward(cls, module: SACModule, obs: np.ndarray, actions: np.ndarray) -> ResampledQ:
        """The module's critics at (s, a~), a~ the resampled `actions`."""
        passes = [critic.forward_train(obs, actions) for critic in module.critics]
        values = [q for q, _ in passes]
        q_curr = values[0] if len(values) == 1 else np.minimum(values[0], values[1])
        return cls(module.critics, actions, values, [cache for _, cache in passes], q_curr)

    def backward(self, d_q_curr: np.ndarray) -> np.ndarray:
        """d loss / d a~ from d loss / d q_curr, through the critic each row's minimum came
        from (torch.min's gradient: the first critic's on a tie); no parameter gradients."""
        values = self.values
        d_actions = np.zeros_like(self.actions)
        for index, critic in enumerate(self.critics):
            if len(values) == 1:
                chosen = np.ones(len(d_q_curr), dtype=bool)
            elif index == 0:
                chosen = values[0] <= values[1]
            else:
                chosen = values[1] < values[0]
            d_q = np.where(chosen, d_q_curr, 0.0)
            d_action = critic.backward(self.caches[index], d_q, None, True)
            assert d_action is not None
            d_actions += d_action
        return d_actions


def policy_gradient(
    draws: PolicyDraws,
    d_logp: np.ndarray,
    d_actions: np.ndarray,
    d_mean: np.ndarray | None = None,
    d_log_std: np.ndarray | None = None,
) -> np.ndarray:
    """d policy_loss / d the policy's outputs at s ([mean, log_std], the log-std before its
    clamp) from its gradients with respect to log pi(a~|s) (`d_logp`, per row) and to a~
    (`d_actions`): through a~ = tanh(u), u = mean + std noise, and log pi's own dependence on
    them (d log pi / d mean = 2 a~, d log pi / d log_std = 2 a~ std noise - 1); plus an
    objective's direct gradients to the mean and the (clamped) log-std, if any."""
    size = draws.size
    resampled, noise, std = draws.actions[:size], draws.noise[:size], draws.std[:size]
    d_unsquashed = d_actions * (1.0 - resampled * resampled)
    d_logp = d_logp[:, None]
    d_mean_total = d_unsquashed + d_logp * 2.0 * resampled
    d_log_std_total = (d_unsquashed + d_logp * 2.0 * resampled) * std * noise
    d_log_std_total -= d_logp
    if d_mean is not None:
        d_mean_total += d_mean
    if d_log_std is not None:
        d_log_std_total += d_log_std
    raw_log_std = draws.raw_log_std[:size]  # (the clamp passes no gradient outside its range)
    d_log_std_total *= (raw_log_std > LOG_STD_MIN) & (raw_log_std < LOG_STD_MAX)
    return np.concatenate([d_mean_total, d_log_std_total], axis=1)


def continuous_loss(
    batch: dict[str, np.ndarray],
    module: SACModule,
    target: SACModule,
    log_alpha: np.ndarray,
    target_entropy: float,
    rng: np.random.Generator,
) -> SACLoss:
    """SAC's loss for Box actions on the replay buffer's train batch: the module's forward
    passes, `continuous_loss_terms`, the backward passes (see the module docstring).
    `module`: the trained module; `target`: the target critics (a copy of the module);
    `log_alpha`: shape (1,); `rng`: the reparameterized draws'."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)
    actions = np.asarray(batch["actions"], dtype=np.float32).reshape(size, -1)

    # The forward passes: a~ ~ pi(.|s) and a' ~ pi(.|s') from one pass of the policy over s
    # then s'; the critics at (s, a) and at (s, a~); the target critics at (s', a').
    pi = draw_actions(module, rng, obs, next_obs)
    critic_passes = [critic.forward_train(obs, actions) for critic in module.critics]
    resampled = ResampledQ.forward(module, obs, pi.actions[:size])
    fwd_out = {
        **{key: q for key, (q, _) in zip(CRITIC_OUTPUTS, critic_passes, strict=False)},
        Q_CURR: resampled.q_curr,
        LOGP_RESAMPLED: pi.logp[:size],
        QF_TARGET_NEXT: target.q_values(next_obs, pi.actions[size:]),
        LOGP_NEXT_RESAMPLED: pi.logp[size:],
    }

    loss = continuous_loss_terms(batch, fwd_out, log_alpha, target_entropy)

    # The backward passes: each critic's loss into its parameters; policy_loss into the
    # policy's, through a~ (the critics' parameters take none of it) and log pi(a~|s).
    gradients = loss.gradients
    for index, (critic, (_, cache), key) in enumerate(
        zip(module.critics, critic_passes, CRITIC_OUTPUTS, strict=False)
    ):
        critic.backward(cache, gradients[key], module.critic_grads(index), False)
    d_actions = resampled.backward(gradients[Q_CURR])
    module.policy_backward(pi.cache, policy_gradient(pi, gradients[LOGP_RESAMPLED], d_actions))
    return loss


def discrete_loss(
    batch: dict[str, np.ndarray],
    module: SACModule,
    target: SACModule,
    log_alpha: np.ndarray,
    target_entropy: float,
) -> SACLoss:
    """SAC's loss for Discrete actions on the replay buffer's train batch: the module's
    forward passes, `discrete_loss_terms`, the backward passes (see `continuous_loss`)."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)

    # The forward passes: p(.|s) and p(.|s') from one pass of the policy over s then s'; the
    # critics at s; the target critics at s'.
    logits, pi_cache = module.policy_forward_train(np.concatenate([obs, next_obs]))
    log_probs = log_softmax(logits)
    probs = np.exp(log_probs)
    critic_passes = [critic.forward_train(obs, None) for critic in module.critics]
    fwd_out = {
        **{key: q for key, (q, _) in zip(CRITIC_OUTPUTS, critic_passes, strict=False)},
        ACTION_PROBS: probs[:size],
        ACTION_LOG_PROBS: log_probs[:size],
        ACTION_PROBS_NEXT: probs[size:],
        ACTION_LOG_PROBS_NEXT: log_probs[size:],
        QF_TARGET_NEXT: target.q_values(next_obs),
    }

    loss = discrete_loss_terms(batch, fwd_out, log_alpha, target_entropy)

    # The backward passes: each critic's loss into its parameters, policy_loss into the
    # policy's (over the rows of s).
    gradients = loss.gradients
    for index, (critic, (_, cache), key) in enumerate(
        zip(module.critics, critic_passes, CRITIC_OUTPUTS, strict=False)
    ):
        critic.backward(cache, gradients[key], module.critic_grads(index), False)
    d_logits = gradients[Columns.ACTION_DIST_INPUTS].astype(np.float32)
    module.policy_backward(_leading_rows(pi_cache, size), d_logits)
    return loss


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
