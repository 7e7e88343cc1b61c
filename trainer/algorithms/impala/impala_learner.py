"""IMPALA's learner in numpy (Espeholt et al. 2018), with RLlib 2.60's loss (`IMPALATorchLearner`;
loss.py's `numpy_loss` and its backward pass, on V-trace's targets from vtrace.py) on PPO's
policy-and-value module.

One update is one Adam step on one train batch (RLlib's one epoch of one minibatch), the gradient
clipped by `grad_clip`. The batch is a list of episode chunks as the EnvRunners return them:
each chunk bootstraps V-trace from the value of its last observation (0 after termination),
which is RLlib's extra time step per rollout fragment without the time-major padding.

With `training(minibatch_size=..., num_epochs=...)` one update takes a step per minibatch, as
RLlib's learner cycles its `MiniBatchCyclicIterator` over the train batch: each minibatch holds
`minibatch_size` steps (None with `num_epochs > 1`: the batch's env steps), taken in the
batch's order and wrapping around to its first step, until every step was trained on
`num_epochs` times (`cyclic_step_ranges`; a multi-agent update makes as many minibatches for
every module as the module with the most steps needs, so all modules train on equally many
steps). A minibatch that cuts a chunk bootstraps its first part from the value of the
observation where it was cut, as V-trace does at the end of a rollout fragment
(`take_steps`). The update reports the last minibatch's losses and the steps of all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.impala.loss import numpy_loss, numpy_loss_gradients
from trainer.algorithms.impala.vtrace import VTraceReturns, vtrace
from trainer.compat.rllib_utils import Columns
from trainer.core.extra_outputs import extra_output_columns
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.core.nn import LossTerms
from trainer.core.obs_tree import tree_concat, tree_rows
from trainer.core.schedules import Schedule
from trainer.env.episode import SingleAgentEpisode

if TYPE_CHECKING:
    from trainer.algorithms.impala.config import IMPALAConfig


class EntropyCoeff:
    """The entropy bonus's weight of IMPALA's and APPO's learners (numpy and torch): the
    config's `entropy_coeff`, a number or a schedule in env steps sampled, read at each
    update (`at`)."""

    def __init__(self, config: Any):
        self._schedule = Schedule(config.entropy_coeff, setting="entropy_coeff", low=0.0)
        self.value = self._schedule.value(0)

    def at(self, num_env_steps_sampled_lifetime: int | None) -> float:
        if num_env_steps_sampled_lifetime is not None:
            self.value = self._schedule.value(num_env_steps_sampled_lifetime)
        return self.value


@dataclass
class TrajectoryBatch:
    """Episode chunks as rows: `obs` holds every chunk's observations, its last one (the
    bootstrap observation) included; `is_step` marks the rows that are steps (all but each
    chunk's last observation). The per-step arrays (`actions`, `rewards`, `behaviour_logp`,
    `terminated`, `chunk_end`, each of `extra_model_outputs`) have one entry per step.

    `extra_model_outputs` holds the episodes' other extra model outputs by key (a user
    module's "my_value": every key `extra_output_columns` gives but the action draw's
    `action_logp`, here `behaviour_logp`, and `action_dist_inputs`), as RLlib's
    `AddColumnsFromEpisodesToTrainBatch` adds them to the train batch: the torch learners
    give them to the loss laid out as the observations (torch_learner.py's
    `extra_output_rows`); the numpy learners' losses do not read them."""

    obs: Any
    is_step: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    behaviour_logp: np.ndarray
    terminated: np.ndarray
    chunk_end: np.ndarray
    extra_model_outputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        return len(self.rewards)


#: The action draw's extra model outputs, which a `TrajectoryBatch` does not take as extra
#: columns: `action_logp` is its `behaviour_logp`, and its losses read no `action_dist_inputs`
#: (APPO's old policy is the target network's).
IN_TRAJECTORY_BATCH = frozenset({Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS})


def trajectory_batch(episodes: list[SingleAgentEpisode], preprocess: Any) -> TrajectoryBatch:
    """The `TrajectoryBatch` of `episodes` (empty chunks left out); `preprocess` turns the
    concatenated observations into the module's input."""
    episodes = [ep for ep in episodes if len(ep) > 0]
    if not episodes:
        raise ValueError("IMPALA's train batch needs at least one env step")
    is_step, terminated, chunk_end = [], [], []
    for ep in episodes:
        n = len(ep)
        step = np.ones(n + 1, dtype=bool)
        step[-1] = False
        is_step.append(step)
        ends = np.zeros(n, dtype=bool)
        ends[-1] = True
        chunk_end.append(ends)
        terminated.append(ends & bool(ep.is_terminated))
    return TrajectoryBatch(
        obs=preprocess(tree_concat([ep.get_observations() for ep in episodes])),
        is_step=np.concatenate(is_step),
        actions=np.concatenate([ep.get_actions() for ep in episodes]),
        rewards=np.concatenate([np.asarray(ep.get_rewards()) for ep in episodes]),
        behaviour_logp=np.concatenate(
            [ep.get_extra_model_outputs("action_logp") for ep in episodes]
        ),
        terminated=np.concatenate(terminated),
        chunk_end=np.concatenate(chunk_end),
        extra_model_outputs=extra_output_columns(episodes, skip=IN_TRAJECTORY_BATCH),
    )


def minibatch_size_of(config: Any, env_steps: int) -> int | None:
    """The steps per minibatch of an update on `env_steps` env steps, as RLlib's learner cuts
    them: `minibatch_size`, else (with `num_epochs > 1`) the batch's env steps; None: one step
    on the whole batch (RLlib's defaults, num_epochs=1 and minibatch_size=None)."""
    if config.minibatch_size:
        return int(config.minibatch_size)
    if config.num_epochs > 1:
        return int(env_steps)
    return None


def num_minibatches(num_steps: Iterable[int], num_epochs: int, minibatch_size: int) -> int:
    """How many minibatches of `minibatch_size` steps cover each module's steps (`num_steps`)
    `num_epochs` times, cycling (RLlib's `MiniBatchCyclicIterator`, which stops once the module
    with the most steps is covered)."""
    return max(-(-num_epochs * int(n) // minibatch_size) for n in num_steps)


def cyclic_step_ranges(
    num_steps: int, minibatch_size: int, count: int
) -> list[list[tuple[int, int]]]:
    """The `[start, stop)` step ranges of each of `count` minibatches of `minibatch_size`
    steps, taken in order from a batch of `num_steps` steps and wrapping around to its first
    step (RLlib's `MiniBatchCyclicIterator`, without shuffling)."""
    minibatches, start = [], 0
    for _ in range(count):
        ranges, wanted = [], minibatch_size
        while start + wanted >= num_steps:
            if start < num_steps:
                ranges.append((start, num_steps))
            wanted -= num_steps - start
            start = 0
        if wanted > 0:
            ranges.append((start, start + wanted))
            start += wanted
        minibatches.append(ranges)
    return minibatches


def chunk_pieces(batch: TrajectoryBatch, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`ranges` of the batch's steps cut at its chunks' ends: each piece lies in one chunk."""
    ends = np.flatnonzero(batch.chunk_end)
    pieces = []
    for start, stop in ranges:
        while start < stop:
            chunk_last = int(ends[np.searchsorted(ends, start)])
            end = min(stop, chunk_last + 1)
            pieces.append((start, end))
            start = end
    return pieces


def piece_rows(batch: TrajectoryBatch, pieces: list[tuple[int, int]]) -> list[np.ndarray]:
    """Each piece's rows of `batch.obs`: its steps' observations and the one after its last
    step (the next step's, or its chunk's bootstrap observation)."""
    step_rows = np.flatnonzero(batch.is_step)
    return [np.arange(step_rows[start], step_rows[stop - 1] + 2) for start, stop in pieces]


def take_steps(batch: TrajectoryBatch, ranges: list[tuple[int, int]]) -> TrajectoryBatch:
    """The `TrajectoryBatch` of the steps in `ranges` (a minibatch): each piece of a chunk is
    a chunk of its own that bootstraps from the observation after its last step, terminated
    only where its original chunk was (see the module docstring)."""
    pieces = chunk_pieces(batch, ranges)
    rows = piece_rows(batch, pieces)
    steps = np.concatenate([np.arange(start, stop) for start, stop in pieces])
    is_step = np.concatenate([np.arange(len(r)) < len(r) - 1 for r in rows])
    chunk_end = np.zeros(len(steps), dtype=bool)
    chunk_end[np.cumsum([stop - start for start, stop in pieces]) - 1] = True
    return TrajectoryBatch(
        obs=tree_rows(batch.obs, np.concatenate(rows)),
        is_step=is_step,
        actions=batch.actions[steps],
        rewards=batch.rewards[steps],
        behaviour_logp=batch.behaviour_logp[steps],
        terminated=batch.terminated[steps],
        chunk_end=chunk_end,
        extra_model_outputs={key: value[steps] for key, value in batch.extra_model_outputs.items()},
    )


@dataclass
class MinibatchPlan:
    """The minibatches of one update: `minibatch_size` steps each, `count` of them."""

    minibatch_size: int
    count: int

    def ranges(self, num_steps: int) -> list[list[tuple[int, int]]]:
        return cyclic_step_ranges(num_steps, self.minibatch_size, self.count)


def minibatch_plan(
    config: Any,
    num_steps: int,
    minibatch_size: int | None = None,
    count: int | None = None,
) -> MinibatchPlan | None:
    """The minibatches of an update on `num_steps` steps: those given (a multi-agent update's,
    the same for every module), else the config's (`minibatch_size_of`); None: one step on
    the whole batch."""
    if minibatch_size is None:
        minibatch_size = minibatch_size_of(config, num_steps)
        if minibatch_size is None:
            return None
    if count is None:
        count = num_minibatches([num_steps], config.num_epochs, minibatch_size)
    return MinibatchPlan(int(minibatch_size), int(count))


@dataclass
class PolicyTerms:
    """What the loss needs of one forward pass over a `TrajectoryBatch`: per step, the
    distribution inputs and the distribution's terms with their gradients (`dist`: the
    log-likelihoods of the actions, the entropies, the KL from the given old inputs); V(x_t)
    and V(x_{t+1}); and the pass's cache for `backward`."""

    dist_inputs: np.ndarray
    dist: LossTerms
    values: np.ndarray
    next_values: np.ndarray
    cache: tuple

    @property
    def logp(self) -> np.ndarray:
        """log pi(a_t|x_t) of the steps' actions."""
        return self.dist.logp


class IMPALALearner(NumpyLearner):
    """See the module docstring. `update(episodes)` takes one Adam step on their batch."""

    config: IMPALAConfig
    loss_name = "IMPALA"

    def __init__(self, config: IMPALAConfig, spaces: SpaceInfo | None, module: Any = None):
        super().__init__(
            config, module if module is not None else config.build_module(spaces, seed=config.seed)
        )
        self.entropy_coeff = EntropyCoeff(config)

    # -- the batch and the forward pass ----------------------------------------------------
    def trajectory_batch(self, episodes: list[SingleAgentEpisode]) -> TrajectoryBatch:
        return trajectory_batch(episodes, self.module.spaces.preprocess)

    def policy_terms(
        self, batch: TrajectoryBatch, old_dist_inputs: np.ndarray | None = None
    ) -> PolicyTerms:
        """One forward pass over every observation of `batch` (see `PolicyTerms`); the KL
        term is from `old_dist_inputs` (default: the pass's own inputs, a KL of 0)."""
        all_dist_inputs, all_values, cache = self.module.forward_train(batch.obs)
        dist_inputs = all_dist_inputs[batch.is_step]
        dist = self.module.dist.loss_grads(
            dist_inputs,
            batch.actions,
            dist_inputs if old_dist_inputs is None else old_dist_inputs,
        )
        values = all_values[batch.is_step]
        # V(x_{t+1}): the next row's value (the chunk's last observation at its end), 0 after
        # termination.
        next_values = all_values[1:][batch.is_step[:-1]] * ~batch.terminated
        return PolicyTerms(dist_inputs, dist, values, next_values, cache)

    def vtrace(
        self, batch: TrajectoryBatch, terms: PolicyTerms, target_logp: np.ndarray
    ) -> VTraceReturns:
        cfg = self.config
        return vtrace(
            target_logp=target_logp,
            behaviour_logp=batch.behaviour_logp,
            rewards=batch.rewards,
            discounts=cfg.gamma * ~batch.terminated,
            values=terms.values,
            next_values=terms.next_values,
            chunk_end=batch.chunk_end,
            clip_rho_threshold=cfg.vtrace_clip_rho_threshold,
            clip_pg_rho_threshold=cfg.vtrace_clip_pg_rho_threshold,
        )

    def backward(
        self,
        batch: TrajectoryBatch,
        terms: PolicyTerms,
        d_dist_inputs: np.ndarray,
        d_values: np.ndarray,
    ) -> None:
        """The module's gradient (into its gradient buffer) from the losses' gradients w.r.t.
        the steps' distribution inputs and values; the bootstrap rows get none."""
        dtype = terms.dist_inputs.dtype
        d_all_inputs = np.zeros((len(batch.is_step), d_dist_inputs.shape[1]), dtype=dtype)
        d_all_inputs[batch.is_step] = d_dist_inputs
        d_all_values = np.zeros(len(batch.is_step), dtype=dtype)
        d_all_values[batch.is_step] = d_values
        self.module.backward(terms.cache, d_all_inputs, d_all_values)

    # -- the loss --------------------------------------------------------------------------
    def loss_and_grads(self, batch: TrajectoryBatch) -> dict[str, float]:
        """IMPALA's loss on `batch` (loss.py), its gradient left in the module's gradient
        buffer; returns RLlib's statistics."""
        terms = self.policy_terms(batch)
        entropy_coeff = self.entropy_coeff.value
        loss = numpy_loss(
            dist=terms.dist,
            values=terms.values,
            vtrace_targets=lambda target_logp: self.vtrace(batch, terms, target_logp),
            config=self.config,
            entropy_coeff=entropy_coeff,
        )
        d_dist_inputs, d_values = numpy_loss_gradients(
            loss, terms.dist, self.config, entropy_coeff=entropy_coeff
        )
        self.backward(batch, terms, d_dist_inputs, d_values)
        return loss.stats

    # -- the update ------------------------------------------------------------------------
    def update(
        self,
        episodes: list[SingleAgentEpisode] | TrajectoryBatch,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        minibatch_size: int | None = None,
        num_minibatches: int | None = None,
    ) -> UpdateResults:
        """One Adam step on the batch of `episodes` (or their `trajectory_batch`, made once for
        a batch trained on several times), or one per minibatch (the module docstring:
        `minibatch_size` and `num_minibatches` given, or the config's); the statistics under
        RLlib's keys (the last step's losses)."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        self.entropy_coeff.at(num_env_steps_sampled_lifetime)
        batch = (
            episodes if isinstance(episodes, TrajectoryBatch) else self.trajectory_batch(episodes)
        )
        plan = minibatch_plan(self.config, batch.num_steps, minibatch_size, num_minibatches)
        if plan is None:
            stats = self._step(batch)
            stats["num_env_steps_trained"] = batch.num_steps
            stats["num_module_steps_trained"] = batch.num_steps
            return stats
        for ranges in plan.ranges(batch.num_steps):
            stats = self._step(take_steps(batch, ranges))
        trained = plan.count * plan.minibatch_size
        stats["num_env_steps_trained"] = trained
        stats["num_module_steps_trained"] = trained
        stats["module_train_batch_size_mean"] = plan.minibatch_size
        return stats

    def _step(self, batch: TrajectoryBatch) -> UpdateResults:
        """One Adam step on `batch`; its statistics."""
        stats: UpdateResults = dict(self.loss_and_grads(batch))
        stats["curr_entropy_coeff"] = self.entropy_coeff.value
        stats["gradients_default_optimizer_global_norm"] = self.apply_gradients(
            float(stats["total_loss"])
        )
        stats[DEFAULT_OPTIMIZER_LR_KEY] = self.optimizer.lr
        return stats


__all__ = [
    "EntropyCoeff",
    "IMPALALearner",
    "MinibatchPlan",
    "cyclic_step_ranges",
    "minibatch_plan",
    "minibatch_size_of",
    "num_minibatches",
    "take_steps",
    "PolicyTerms",
    "TrajectoryBatch",
    "trajectory_batch",
]
