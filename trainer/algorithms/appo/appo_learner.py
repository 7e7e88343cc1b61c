"""APPO's learner in numpy: IMPALA's learner (V-trace on PPO's module) with RLlib 2.60's APPO
loss (`APPOTorchLearner`; loss.py's `numpy_loss` and its backward pass). With pi the module,
pi_old its target network (a copy that follows the module) and mu the behaviour policy that
sampled, V-trace's targets take pi_old as the target policy, and the clipped surrogate
compares pi with mu, weighted by clip(mu / pi_old, 0, 2) (see loss.py).

After each update the KL coefficient adapts (x1.5 above twice `kl_target`, x0.5 below half of
it) when `use_kl_loss`, and the target network becomes the module (tau = 1; else moves by tau)
once `target_network_update_freq * circular_buffer_num_batches *
circular_buffer_iterations_per_batch * train_batch_size_per_learner` env steps were trained
since its last update. The env steps trained are counted as RLlib 2.60's algorithm counts them
(the `NUM_ENV_STEPS_TRAINED_LIFETIME` it hands its learner): each train batch once, however
often the circular buffer hands it out. Its learner returns one result per batch queued, so
with K uses per batch the target network follows the module every `target_network_update_freq
* N * K` batches, K times the updates its docstring names. The algorithm passes each update's
new env steps (`num_env_steps_new`: the batch's at its first use, 0 at the others); an update
without them (a learner driven directly) counts every env step it trains on.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.appo.loss import numpy_loss, numpy_loss_gradients
from trainer.algorithms.impala.impala_learner import (
    IN_TRAJECTORY_BATCH,
    IMPALALearner,
    TrajectoryBatch,
)
from trainer.algorithms.ppo.loss import adapted_kl_coeff, float32_coeff
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.core.obs_tree import tree_rows
from trainer.core.torch_inputs import from_torch
from trainer.util.state_checks import (
    StateError,
    require_float_array,
    require_int,
    require_map,
    require_number,
)

if TYPE_CHECKING:
    from trainer.algorithms.appo.config import APPOConfig


class APPOTargetState:
    """APPO's learner state beyond the module and its optimizer, and its rules (numpy and torch
    learners alike): the target network's weights, the KL coefficient, and the env steps
    trained in all and at the last target update. A learner gives `target_weights()`,
    `set_target_weights()` and `module_weights()` (name -> array) and calls `after_update`
    after each step."""

    extra_state_keys: tuple[str, ...] = (
        "target",
        "kl_coeff",
        "last_target_update_ts",
        "num_env_steps_trained",
    )
    config: Any  # an APPOConfig
    kl_coeff: float
    last_target_update_ts: int
    num_env_steps_trained: int

    def start_target_state(self) -> None:
        self.set_target_weights(self.module_weights())
        self.kl_coeff = float32_coeff(self.config.kl_coeff)
        self.last_target_update_ts = 0
        self.num_env_steps_trained = 0

    if TYPE_CHECKING:  # the learner this state is mixed into gives it

        def mean_over_learners(self, value: float) -> float: ...

    @abstractmethod
    def target_weights(self) -> dict[str, np.ndarray]:
        """The target network's weights by name."""

    @abstractmethod
    def set_target_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Sets the target network's weights (`target_weights()`'s form)."""

    @abstractmethod
    def module_weights(self) -> dict[str, np.ndarray]:
        """The trained module's weights by name (`target_weights()`'s form)."""

    def after_update(
        self,
        stats: dict,
        num_env_steps_new: int | None = None,
        num_env_steps_trained_lifetime: int | None = None,
    ) -> None:
        """The KL coefficient's adaptation and the target network's update after a step whose
        statistics are `stats` (which get `curr_kl_coeff` and the target's counters). The
        target's clock: RLlib's `num_env_steps_trained_lifetime` when given (its `timesteps`),
        else advanced by `num_env_steps_new` when given (the algorithm's count: see the module
        docstring), else by the step's env steps trained."""
        cfg = self.config
        if num_env_steps_trained_lifetime is not None:
            self.num_env_steps_trained = int(num_env_steps_trained_lifetime)
        elif num_env_steps_new is not None:
            self.num_env_steps_trained += int(num_env_steps_new)
        else:
            # (Data-parallel learners count and adapt on the learners' means, so that every
            # replica moves its target network and KL coefficient alike.)
            self.num_env_steps_trained += round(
                self.mean_over_learners(float(stats["num_env_steps_trained"]))
            )
        if cfg.use_kl_loss:
            kl = self.mean_over_learners(float(stats["mean_kl_loss"]))
            self.kl_coeff = adapted_kl_coeff(self.kl_coeff, kl, cfg)
        stats["curr_kl_coeff"] = self.kl_coeff
        self._follow_target(stats)

    def advance_clock(self, num_env_steps_new: int) -> dict:
        """An update of the algorithm's in which this learner's module had no steps (a
        multi-agent batch without its agents): the target's clock still advances by the
        batch's `num_env_steps_new`, and the target network follows the module once it is due,
        as RLlib 2.60's APPOLearner checks every module after each update. Returns the
        target's statistics (`num_target_updates` where it followed)."""
        self.num_env_steps_trained += int(num_env_steps_new)
        stats: dict = {}
        self._follow_target(stats)
        return stats

    def _follow_target(self, stats: dict) -> None:
        """The target network becomes (tau = 1; else moves towards) the module once its
        period of env steps trained has passed since its last update; `stats` get its
        counters."""
        cfg = self.config
        period = (
            cfg.target_network_update_freq
            * cfg.circular_buffer_num_batches
            * cfg.circular_buffer_iterations_per_batch
            * cfg.train_batch_size_per_learner
        )
        if self.num_env_steps_trained - self.last_target_update_ts >= period:
            tau = cfg.tau
            weights = self.module_weights()
            if tau != 1.0:
                old = self.target_weights()
                weights = {k: tau * w + (1.0 - tau) * old[k] for k, w in weights.items()}
            self.set_target_weights(weights)
            self.last_target_update_ts = self.num_env_steps_trained
            stats["num_target_updates"] = 1
        stats["last_target_update_ts"] = self.last_target_update_ts

    # -- state -------------------------------------------------------------------------------
    def get_extra_state(self) -> dict:
        return {
            "target": {k: np.array(v) for k, v in self.target_weights().items()},
            "kl_coeff": self.kl_coeff,
            "last_target_update_ts": self.last_target_update_ts,
            "num_env_steps_trained": self.num_env_steps_trained,
        }

    def check_extra_state(self, state: dict, where: str) -> None:
        target = state["target"]
        expected = {name: np.shape(array) for name, array in self.target_weights().items()}
        require_map(target, f"{where}['target']", list(expected))
        extra = sorted(set(target) - set(expected))
        if extra:
            raise StateError(f"{where}['target']", f"has parameters the module lacks: {extra[:4]}")
        for name, shape in expected.items():
            require_float_array(target[name], f"{where}['target'][{name!r}]", shape=shape)
        require_number(state["kl_coeff"], f"{where}['kl_coeff']", minimum=0.0)
        require_int(state["last_target_update_ts"], f"{where}['last_target_update_ts']")
        require_int(state["num_env_steps_trained"], f"{where}['num_env_steps_trained']")

    def set_extra_state(self, state: dict) -> None:
        self.set_target_weights(state["target"])
        self.kl_coeff = float(state["kl_coeff"])
        self.last_target_update_ts = int(state["last_target_update_ts"])
        self.num_env_steps_trained = int(state["num_env_steps_trained"])


def _numpy_tree(value: Any) -> Any:
    """A column (nested dicts and tuples of arrays or torch tensors) as numpy."""
    if isinstance(value, dict):
        return {key: _numpy_tree(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_numpy_tree(item) for item in value)
    return np.asarray(from_torch(value)[0])


#: The columns `trajectory_batch_from_columns` needs, and all it reads into a
#: `TrajectoryBatch`'s own fields (with the optional `loss_mask`).
_REQUIRED_COLUMNS = ("obs", "actions", "rewards", "terminateds", "action_logp")
_READ_COLUMNS = frozenset({*_REQUIRED_COLUMNS, "loss_mask"})


def _extra_columns(columns: Any, rows: int, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The batch's other columns, as RLlib's loss gets the whole batch (a user's loss reads
    its module's "my_value"): each numeric or boolean column of one row per batch row, its
    steps' rows (`steps`). Left out: the columns the `TrajectoryBatch` has fields for, the
    action draw's (`IN_TRAJECTORY_BATCH`, as from episodes), nested ones (a state tree) and
    others (infos, ids, ragged lists)."""
    extras = {}
    for key, value in columns.items():
        if key in _READ_COLUMNS or key in IN_TRAJECTORY_BATCH:
            continue
        try:
            array = _numpy_tree(value)
        except (ValueError, TypeError):  # (rows numpy cannot stack: a ragged list)
            continue
        if (
            isinstance(array, np.ndarray)
            and array.dtype.kind in "biuf"
            and array.ndim > 0
            and len(array) == rows
        ):
            extras[str(key)] = array[steps]
    return extras


def trajectory_batch_from_columns(
    columns: Any, fragment_length: int, preprocess: Any, discrete_actions: bool = False
) -> TrajectoryBatch:
    """The `TrajectoryBatch` of RLlib's column batch of APPO/IMPALA (what
    `Learner.update(batch=...)` takes): rows in segments of `fragment_length` (RLlib's
    `rollout_fragment_length`, the time axis its loss makes of the rows), `obs`, `actions`,
    `rewards`, `terminateds`, `action_logp` and, optionally, `loss_mask` (False on the rows
    that only carry an observation to bootstrap from, RLlib's "+1 timestep"; default: all
    steps). Torch tensors are taken as numpy; `discrete_actions`: the actions are indices.
    The batch's other columns (a user module's "my_value") are its extra model outputs
    (`_extra_columns`), which the torch losses get laid out as the observations.

    As in RLlib's loss, a step's next value is the next row's (at a segment's end the next
    segment's first row; after the last row the first row's, a value RLlib's loss takes
    arbitrarily there), zero after termination; the V-trace recursion runs within a segment
    and stops at termination and before a bootstrap row."""
    for column in _REQUIRED_COLUMNS:
        if column not in columns:
            raise ValueError(
                f"APPO's update(batch=...): the batch has no {column!r} column (columns: "
                f"{sorted(map(str, columns))}); it needs obs, actions, rewards, terminateds, "
                "action_logp and, optionally, loss_mask"
            )
    rewards = np.asarray(_numpy_tree(columns["rewards"]), dtype=np.float64).reshape(-1)
    rows = len(rewards)
    if rows == 0 or rows % fragment_length:
        raise ValueError(
            f"APPO's update(batch=...): {rows} rows do not split into segments of "
            f"rollout_fragment_length={fragment_length} (RLlib's time axis of the loss)"
        )
    mask = columns.get("loss_mask")
    is_step = (
        np.ones(rows, dtype=bool)
        if mask is None
        else np.asarray(_numpy_tree(mask)).reshape(-1).astype(bool)
    )
    terminated = np.asarray(_numpy_tree(columns["terminateds"])).reshape(-1).astype(bool)
    index = np.arange(rows)
    next_is_step = np.append(is_step[1:], False)
    segment_end = (index + 1) % fragment_length == 0
    chunk_end = (terminated | segment_end | ~next_is_step)[is_step]
    obs_rows = index
    if is_step[-1]:  # the last step's next observation: the first row's (see above)
        obs_rows = np.append(index, 0)
        is_step = np.append(is_step, False)
    actions = np.asarray(_numpy_tree(columns["actions"]))[is_step[:rows]]
    if discrete_actions:  # RLlib's tests give Discrete actions as floats too
        actions = actions.astype(np.int64)
    return TrajectoryBatch(
        obs=preprocess(tree_rows(_numpy_tree(columns["obs"]), obs_rows)),
        is_step=is_step,
        actions=actions,
        rewards=rewards[is_step[:rows]],
        behaviour_logp=np.asarray(_numpy_tree(columns["action_logp"])).reshape(-1)[is_step[:rows]],
        terminated=terminated[is_step[:rows]],
        chunk_end=chunk_end,
        extra_model_outputs=_extra_columns(columns, rows, is_step[:rows]),
    )


def module_columns(batch: Any, module_id: str) -> Any:
    """The columns of module `module_id` in a batch given to `update(batch=...)`: a
    `MultiAgentBatch` (`policy_batches`), a dict by module id, or the columns themselves."""
    per_module = getattr(batch, "policy_batches", None)
    if per_module is None and isinstance(batch, dict) and "obs" not in batch:
        per_module = batch
    if per_module is None:
        return batch
    if set(per_module) != {module_id}:
        raise ValueError(
            f"update(batch=...): this learner trains module {module_id!r} only; the batch "
            f"holds modules {sorted(map(str, per_module))}"
        )
    return per_module[module_id]


def rllib_update_inputs(
    learner: Any,
    episodes: Any,
    batch: Any,
    timesteps: dict[str, Any] | None,
    num_env_steps_sampled_lifetime: int | None,
) -> tuple[Any, int | None, int | None]:
    """What an APPO learner's (numpy or torch) `update` trains on: `episodes`, or RLlib's
    column `batch=` made into a `TrajectoryBatch`, one of them; the lifetime step count,
    given or read from RLlib's `timesteps`; and the env steps trained in all that RLlib's
    `timesteps` give (None without them: the target network's clock counts for itself)."""
    if (episodes is None) == (batch is None):
        raise ValueError(
            f"{type(learner).__name__}.update(): give the episodes or batch=, one of them"
        )
    if batch is not None:
        episodes = trajectory_batch_from_columns(
            module_columns(batch, DEFAULT_MODULE_ID),
            int(learner.config.get_rollout_fragment_length()),
            learner.module.spaces.preprocess,
            discrete_actions=learner.module.spaces.action_discrete_n is not None,
        )
    trained_lifetime = None
    if timesteps:
        if num_env_steps_sampled_lifetime is None:
            lifetime = timesteps.get("num_env_steps_sampled_lifetime")
            num_env_steps_sampled_lifetime = None if lifetime is None else int(lifetime)
        trained = timesteps.get("num_env_steps_trained_lifetime")
        trained_lifetime = None if trained is None else int(trained)
    return episodes, num_env_steps_sampled_lifetime, trained_lifetime


class APPOLearner(APPOTargetState, IMPALALearner):
    """See the module docstring. Its state adds the target network's weights, the KL
    coefficient and the env steps trained at the last target update (`APPOTargetState`)."""

    config: APPOConfig
    loss_name = "APPO"

    def __init__(self, config: APPOConfig, spaces: SpaceInfo | None, module: Any = None):
        super().__init__(config, spaces, module)
        # A copy of the module: a spec's model_config (a multi-agent module's own) may differ
        # from the config's, and the target must have the module's layers.
        self.target = copy.deepcopy(self.module)
        self.start_target_state()

    def target_weights(self) -> dict[str, np.ndarray]:
        return self.target.get_weights()

    def set_target_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.target.set_weights(weights)

    def module_weights(self) -> dict[str, np.ndarray]:
        return self.module.get_weights()

    def loss_and_grads(self, batch: TrajectoryBatch) -> dict[str, float]:
        """APPO's loss on `batch` (loss.py), its gradient left in the module's gradient
        buffer; returns RLlib's statistics."""
        old_inputs = self.target.dist_inputs(batch.obs)[batch.is_step]
        terms = self.policy_terms(batch, old_inputs)
        old_logp = self.module.dist.loss_grads(old_inputs, batch.actions, old_inputs)[0]
        coeffs = {"entropy_coeff": self.entropy_coeff.value, "kl_coeff": self.kl_coeff}
        loss = numpy_loss(
            dist=terms.dist,
            old_logp=old_logp,
            behaviour_logp=batch.behaviour_logp,
            values=terms.values,
            vtrace_targets=lambda target_logp: self.vtrace(batch, terms, target_logp),
            config=self.config,
            **coeffs,
        )
        d_dist_inputs, d_values = numpy_loss_gradients(loss, terms.dist, self.config, **coeffs)
        self.backward(batch, terms, d_dist_inputs, d_values)
        return loss.stats

    def update(
        self,
        episodes: list[Any] | TrajectoryBatch | None = None,
        *,
        batch: Any = None,
        timesteps: dict[str, Any] | None = None,
        num_env_steps_sampled_lifetime: int | None = None,
        minibatch_size: int | None = None,
        num_minibatches: int | None = None,
        num_env_steps_new: int | None = None,
    ) -> dict:
        """IMPALA's update with APPO's loss (a step per minibatch, if any), then the KL
        coefficient (from the last step's KL) and the target network (see the module
        docstring; `num_env_steps_new`: the env steps this update adds to the target's clock).
        `batch=` takes RLlib's column batch instead of episodes (a `MultiAgentBatch` of this
        learner's module, or its columns: see `trajectory_batch_from_columns`), with RLlib's
        `timesteps` (its `num_env_steps_sampled_lifetime` drives the schedules, its
        `num_env_steps_trained_lifetime` the target network)."""
        episodes, num_env_steps_sampled_lifetime, trained_lifetime = rllib_update_inputs(
            self, episodes, batch, timesteps, num_env_steps_sampled_lifetime
        )
        stats = super().update(
            episodes,
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
            minibatch_size=minibatch_size,
            num_minibatches=num_minibatches,
        )
        self.after_update(stats, num_env_steps_new, trained_lifetime)
        return stats
