"""`SACLearner`: one gradient step of SAC (Haarnoja et al. 2018) on a replay batch, in numpy,
with RLlib 2.60's losses (`SACTorchLearner`).

Box actions (a = tanh(u), u ~ N(mean(s), std(s)), log pi(a|s) with the tanh Jacobian):

    y            = r + gamma^n (1 - terminated) (min_i Q_target_i(s', a') - alpha log pi(a'|s'))
                   with a' ~ pi(.|s')                                    (no gradient)
    critic loss  = mean(w * huber(Q_i(s, a) - y)),  for each critic i (twin_q: two)
    policy loss  = mean(alpha log pi(a~|s) - min_i Q_i(s, a~)),  a~ ~ pi(.|s) reparameterized;
                   the critics' parameters take no gradient from it
    alpha loss   = -mean(log_alpha (log pi(a~|s) + target_entropy))

Discrete actions (probabilities p = softmax(logits)):

    y            = r + gamma^n (1 - terminated) sum_a p(a|s') (min_i Q_target_i(s', a)
                   - alpha log p(a|s'))
    policy loss  = mean(sum_a p(a|s) (alpha log p(a|s) - min_i Q_i(s, a)))
    alpha loss   = -mean(log_alpha (sum_a p log p + target_entropy))

All gradients are taken from the same forward passes, then each optimizer steps its slice of
the module's flat parameters: "qf" and "qf_twin" (critic_lr), "policy" (actor_lr), and "alpha"
(alpha_lr) on log_alpha; Adam with eps 1e-7, as RLlib's. The target critics (a copy of the
module) follow the critics every `target_network_update_freq` sampled env steps:
target <- tau * critic + (1 - tau) * target. The per-row TD errors, 0.5 (|Q_1 - y| + |Q_2 - y|)
with twin_q, go back under TD_ERROR_KEY for the prioritized buffer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.sac.sac_module import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    SACModule,
    SquashedGaussian,
)
from trainer.core.blas import BlasThreads
from trainer.core.learner import (
    LR_KEY,
    POLICY_LOSS_KEY,
    Learner,
    LearningRate,
    UpdateResults,
)
from trainer.core.models import SpaceInfo
from trainer.core.nn import Adam, check_finite_update, clip_gradients, log_softmax
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN, TD_ERROR_KEY
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import (
    require_float_array,
    require_generator_state,
    require_int,
    require_map,
)

if TYPE_CHECKING:
    from trainer.algorithms.sac.sac import SACConfig

#: RLlib's SAC learner statistics (`ray.rllib.algorithms.sac.sac_learner`).
QF_LOSS_KEY = "qf_loss"
QF_TWIN_LOSS_KEY = "qf_twin_loss"
QF_MEAN_KEY = "qf_mean"
QF_MAX_KEY = "qf_max"
QF_MIN_KEY = "qf_min"
LOGPS_KEY = "logps"
TD_ERROR_MEAN_KEY = "td_error_mean"
#: A subclass's statistics key for the Q-values behind qf_mean/qf_max/qf_min (not reported).
Q_CURR_KEY = "q_curr"
#: RLlib's optimizer names, each over its slice of the parameters.
POLICY, QF, QF_TWIN, ALPHA = "policy", "qf", "qf_twin", "alpha"
#: RLlib's SAC optimizers' eps (`SACTorchLearner.configure_optimizers_for_module`).
ADAM_EPS = 1e-7

#: Sums through the ufunc itself (no Python wrapper call).
_sum = np.add.reduce


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


def _leading_rows(cache: Any, n: int) -> Any:
    """A forward pass's cache restricted to its first `n` rows (views), for a backward pass
    over those rows only."""
    if isinstance(cache, np.ndarray):
        return cache[:n]
    if isinstance(cache, (tuple, list)):
        return type(cache)(_leading_rows(item, n) for item in cache)
    return cache


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


def _huber(td: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Huber loss (delta 1) per row and its derivative."""
    abs_td = np.abs(td)
    loss = np.where(abs_td <= 1.0, 0.5 * td * td, abs_td - 0.5)
    return loss, np.minimum(np.maximum(td, -1.0), 1.0)


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
        for name, size in zip((QF, QF_TWIN), critic_sizes, strict=False):
            self.slices[name] = slice(start, start + size)
            start += size
        rates = {POLICY: config.actor_lr, QF: config.critic_lr, QF_TWIN: config.critic_lr}
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
        if self.module.continuous:
            results, losses = self._continuous_gradients(batch)
        else:
            results, losses = self._discrete_gradients(batch)
        results.update(self._apply_gradients(losses))
        self.update_target_network(num_env_steps_sampled_lifetime)
        return results

    def _continuous_gradients(
        self, batch: dict[str, np.ndarray]
    ) -> tuple[UpdateResults, dict[str, float]]:
        module = self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        size = len(obs)
        actions = np.asarray(batch["actions"], dtype=np.float32).reshape(size, -1)
        alpha = math.exp(float(self.log_alpha[0]))
        draws = self._draw_actions(obs, next_obs)

        # TD targets from the target critics (no gradient flows through them).
        not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
        targets = batch["rewards"] + batch["discounts"] * not_terminated * self._next_value(
            next_obs, draws, alpha
        )
        losses, td_errors, stats = self._critic_gradients(obs, next_obs, actions, targets, batch)

        # The policy's loss: alpha log pi(a~|s) minus the actor's objective.
        objective = self._actor_objective(obs, actions, draws)
        logp_resampled = draws.logp[:size]
        policy_loss = float(_sum(alpha * logp_resampled - objective.value) / size)
        losses[POLICY] = policy_loss
        self._policy_backward(draws, objective, alpha)

        # The temperature.
        entropy_gap = logp_resampled + self.target_entropy
        alpha_loss = float(-self.log_alpha[0] * _sum(entropy_gap) / size)
        self._alpha_grad[0] = -_sum(entropy_gap) / size
        losses[ALPHA] = alpha_loss

        q_curr = stats.pop(Q_CURR_KEY, objective.q_curr)
        results: UpdateResults = {
            POLICY_LOSS_KEY: policy_loss,
            QF_LOSS_KEY: losses[QF],
            "alpha_loss": alpha_loss,
            "alpha_value": alpha,
            "log_alpha_value": float(self.log_alpha[0]),
            "target_entropy": self.target_entropy,
            LOGPS_KEY: float(_sum(logp_resampled) / size),
            QF_MEAN_KEY: float(_sum(q_curr, axis=None) / q_curr.size),
            QF_MAX_KEY: float(np.maximum.reduce(q_curr, axis=None)),
            QF_MIN_KEY: float(np.minimum.reduce(q_curr, axis=None)),
            TD_ERROR_MEAN_KEY: float(_sum(td_errors) / size),
            MODULE_TRAIN_BATCH_SIZE_MEAN: float(size),
            TD_ERROR_KEY: td_errors,
            **stats,
        }
        if QF_TWIN in losses:
            results[QF_TWIN_LOSS_KEY] = losses[QF_TWIN]
        return results, losses

    def _draw_actions(self, obs: np.ndarray, next_obs: np.ndarray) -> PolicyDraws:
        """The policy over s and s' in one pass, a reparameterized draw for each row (the
        backward pass runs over the rows of s)."""
        size = len(obs)
        dist_inputs, pi_cache = self.module.policy_forward_train(np.concatenate([obs, next_obs]))
        n = dist_inputs.shape[1] // 2
        mean, raw_log_std = dist_inputs[:, :n], dist_inputs[:, n:]
        log_std = np.minimum(np.maximum(raw_log_std, LOG_STD_MIN), LOG_STD_MAX)
        std = np.exp(log_std)
        noise = self.rng.standard_normal(mean.shape).astype(np.float32)
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

    def _next_value(self, next_obs: np.ndarray, draws: PolicyDraws, alpha: float) -> np.ndarray:
        """The soft value of s' (SAC's backup): min_i Q_target_i(s', a') - alpha log pi(a'|s')."""
        size = draws.size
        next_actions, logp_next = draws.actions[size:], draws.logp[size:]
        return self.target.q_values(next_obs, next_actions) - alpha * logp_next

    def _critic_gradients(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        actions: np.ndarray,
        targets: np.ndarray,
        batch: dict[str, np.ndarray],
    ) -> tuple[dict[str, float], np.ndarray, dict[str, Any]]:
        """Each critic's loss (by optimizer name) and gradient, the per-row TD errors and
        extra statistics: SAC's importance-weighted Huber loss."""
        module, size = self.module, len(obs)
        weights = batch["weights"]
        losses: dict[str, float] = {}
        td_errors = np.zeros(size, dtype=np.float32)
        for index, critic in enumerate(module.critics):
            q, cache = critic.forward_train(obs, actions)
            td = q - targets
            huber, d_huber = _huber(td)
            losses[QF if index == 0 else QF_TWIN] = float(_sum(weights * huber) / size)
            critic.backward(cache, weights * d_huber / size, module.critic_grads(index), False)
            td_errors += np.abs(td)
        td_errors /= len(module.critics)
        return losses, td_errors, {}

    def _actor_objective(
        self, obs: np.ndarray, actions: np.ndarray, draws: PolicyDraws
    ) -> ActorObjective:
        """What the policy maximizes besides its entropy: SAC's min_i Q_i(s, a~), whose
        gradient reaches the policy through the resampled actions only."""
        module, size = self.module, draws.size
        resampled = draws.actions[:size]
        q_values, caches = zip(
            *(critic.forward_train(obs, resampled) for critic in module.critics), strict=True
        )
        q_curr = q_values[0] if len(q_values) == 1 else np.minimum(q_values[0], q_values[1])
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

    def _policy_backward(self, draws: PolicyDraws, objective: ActorObjective, alpha: float) -> None:
        """The policy's gradient of mean(alpha log pi(a~|s)) - mean(objective): through
        a~ = tanh(u), u = mean + std * noise, and log pi's own dependence
        (d log pi / d mean = 2a, d log pi / d log_std = 2a std noise - 1), plus the
        objective's direct gradients."""
        size = draws.size
        resampled = draws.actions[:size]
        noise_cur, std_cur = draws.noise[:size], draws.std[:size]
        d_unsquashed = objective.d_actions * (1.0 - resampled * resampled)
        coefficient = alpha / size
        d_mean = d_unsquashed + coefficient * 2.0 * resampled
        d_log_std = (d_unsquashed + coefficient * 2.0 * resampled) * std_cur * noise_cur
        d_log_std -= coefficient
        if objective.d_mean is not None:
            d_mean += objective.d_mean
        if objective.d_log_std is not None:
            d_log_std += objective.d_log_std
        raw_log_std = draws.raw_log_std[:size]
        d_log_std *= (raw_log_std > LOG_STD_MIN) & (raw_log_std < LOG_STD_MAX)
        self.module.policy_backward(draws.cache, np.concatenate([d_mean, d_log_std], axis=1))

    def _discrete_gradients(
        self, batch: dict[str, np.ndarray]
    ) -> tuple[UpdateResults, dict[str, float]]:
        module = self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        size = len(obs)
        actions = np.asarray(batch["actions"]).astype(np.int64).reshape(size)
        rows = np.arange(size)
        alpha = math.exp(float(self.log_alpha[0]))

        logits, pi_cache = module.policy_forward_train(np.concatenate([obs, next_obs]))
        pi_cache = _leading_rows(pi_cache, size)
        log_probs = log_softmax(logits)
        probs = np.exp(log_probs)
        probs_cur, log_probs_cur = probs[:size], log_probs[:size]
        probs_next, log_probs_next = probs[size:], log_probs[size:]

        q_target_next = self.target.q_values(next_obs)
        next_values = _sum(probs_next * (q_target_next - alpha * log_probs_next), axis=1)
        not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
        targets = batch["rewards"] + batch["discounts"] * not_terminated * next_values

        weights = batch["weights"]
        losses: dict[str, float] = {}
        td_errors = np.zeros(size, dtype=np.float32)
        q_all = []
        for index, critic in enumerate(module.critics):
            q, cache = critic.forward_train(obs, None)
            q_all.append(q)
            td = q[rows, actions] - targets
            huber, d_huber = _huber(td)
            losses[QF if index == 0 else QF_TWIN] = float(_sum(weights * huber) / size)
            d_q = np.zeros_like(q)
            d_q[rows, actions] = weights * d_huber / size
            critic.backward(cache, d_q, module.critic_grads(index), False)
            td_errors += np.abs(td)
        td_errors /= len(module.critics)

        q_min = q_all[0] if len(q_all) == 1 else np.minimum(q_all[0], q_all[1])
        per_action = alpha * log_probs_cur - q_min
        per_row = _sum(probs_cur * per_action, axis=1)
        policy_loss = float(_sum(per_row) / size)
        losses[POLICY] = policy_loss
        # d/d logit_k of sum_a p_a f_a (f = alpha log p - Q): p_k (f_k - sum_a p_a f_a).
        d_logits = probs_cur * (per_action - per_row[:, None]) / size
        module.policy_backward(pi_cache, d_logits.astype(np.float32))

        negative_entropy = _sum(probs_cur * log_probs_cur, axis=1)
        entropy_gap = negative_entropy + self.target_entropy
        alpha_loss = float(-self.log_alpha[0] * _sum(entropy_gap) / size)
        self._alpha_grad[0] = -_sum(entropy_gap) / size
        losses[ALPHA] = alpha_loss

        q_first = q_all[0]
        results: UpdateResults = {
            POLICY_LOSS_KEY: policy_loss,
            QF_LOSS_KEY: losses[QF],
            "alpha_loss": alpha_loss,
            "alpha_value": alpha,
            "log_alpha_value": float(self.log_alpha[0]),
            "target_entropy": self.target_entropy,
            LOGPS_KEY: float(np.mean(log_probs_cur)),
            QF_MEAN_KEY: float(np.mean(q_first)),
            QF_MAX_KEY: float(np.max(q_first)),
            QF_MIN_KEY: float(np.min(q_first)),
            TD_ERROR_MEAN_KEY: float(_sum(td_errors) / size),
            MODULE_TRAIN_BATCH_SIZE_MEAN: float(size),
            TD_ERROR_KEY: td_errors,
        }
        if QF_TWIN in losses:
            results[QF_TWIN_LOSS_KEY] = losses[QF_TWIN]
        return results, losses

    def _apply_gradients(self, losses: dict[str, float]) -> dict[str, float]:
        """Clips each optimizer's gradient (`grad_clip`, `grad_clip_by`), checks every loss
        and gradient is finite before any weight changes, then steps every optimizer. Returns
        RLlib's `{optimizer}_learning_rate` and, with a `grad_clip`,
        `gradients_{optimizer}_global_norm`."""
        config = self.config
        gradient = self.module.gradient_buffer()[0]
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
    def get_state(self) -> dict:
        return {"module": self.module.get_weights(), **self.get_extra_state()}

    def check_state(self, state: dict, where: str = "learner") -> None:
        require_map(state, where, ("module", *self.extra_state_keys))
        self.module.check_weights(state["module"], f"{where}['module']")
        self.check_extra_state(state, where)

    def set_state(self, state: dict) -> None:
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
