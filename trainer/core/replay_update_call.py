"""RLlib's call of a replay learner, `learner.update(batch=MultiAgentBatch, timesteps={...})`,
on this project's DQN and SAC learners, whose own update takes one replay batch
(`update(batch, num_env_steps_sampled_lifetime=...)`, see their module docstrings).

RLlib's replay buffers give `obs`, `new_obs`, `actions`, `rewards`, `terminateds`, and
optionally `weights` (importance weights; 1 without prioritized replay) and `n_step` (the steps
each row's reward sums; the discount is `gamma ** n_step`, 1 step without the column). The
learner's own batch names the next observation `next_obs` and carries the discount itself.
Returns RLlib's results: per module the learner's statistics, under `ALL_MODULES` the rows
trained; the per-row TD errors stay with the learner (`learner.td_errors` is RLlib's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.capabilities import LEARNER_CONNECTORS, MULTI_AGENT
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.errors import UnsupportedCall
from trainer.metrics import (
    ALL_MODULES,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED,
)

#: Keywords of RLlib's `Learner.update` that mean one pass over the batch as given.
_ONE_PASS = {"num_epochs": 1, "minibatch_size": None, "shuffle_batch_per_epoch": False}


def _module_batches(batch: Any) -> dict[Any, Any]:
    """`{module_id: columns}` of a `MultiAgentBatch`, such a dict, or one module's columns."""
    policy_batches = getattr(batch, "policy_batches", None)
    if policy_batches is not None:
        return dict(policy_batches)
    if isinstance(batch, dict) and batch and all(isinstance(v, dict) for v in batch.values()):
        return dict(batch)
    return {DEFAULT_MODULE_ID: batch}


def replay_batch(columns: Any, gamma: float) -> dict[str, np.ndarray]:
    """One module's RLlib replay columns as the learner's own batch."""
    rewards = np.asarray(columns["rewards"], dtype=np.float32)
    n_step = np.asarray(columns["n_step"]) if "n_step" in columns else None
    own = {
        "obs": columns["obs"],
        "next_obs": columns["new_obs"] if "new_obs" in columns else columns["next_obs"],
        "actions": np.asarray(columns["actions"]),
        "rewards": rewards,
        "terminateds": np.asarray(columns["terminateds"]),
        "weights": np.asarray(columns["weights"], dtype=np.float32)
        if "weights" in columns
        else np.ones_like(rewards),
        "discounts": (
            np.full_like(rewards, gamma)
            if n_step is None
            else np.power(gamma, n_step.astype(np.float64)).astype(np.float32)
        ),
    }
    if n_step is not None:
        own["n_step"] = n_step
    return own


def as_given(columns: Any, gamma: float) -> Any:
    """A learner's own batch that is RLlib's columns as they are (the offline learners', which
    read recorded transitions by RLlib's names)."""
    return columns


def rllib_replay_update(
    learner: Any,
    batch: Any,
    timesteps: dict[str, Any] | None,
    *,
    own_batch: Any = replay_batch,
    **kwargs: Any,
) -> dict[str, Any]:
    """`learner.update` in RLlib's form (see the module docstring); `own_batch(columns,
    gamma)` makes the learner's own batch of one module's columns."""
    unsupported = sorted(
        key for key, value in kwargs.items() if key not in _ONE_PASS or _ONE_PASS[key] != value
    )
    if unsupported or batch is None:
        raise UnsupportedCall(
            f"{type(learner).__name__}.update({', '.join(k + '=...' for k in unsupported)}): "
            "a replay learner here takes RLlib's update(batch=MultiAgentBatch, timesteps=...) "
            "as one gradient step on the whole batch",
            LEARNER_CONNECTORS,
        )
    lifetime = int((timesteps or {}).get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))
    modules = _module_batches(batch)
    if len(modules) != 1:
        raise UnsupportedCall(
            f"{type(learner).__name__}.update(batch=...) with modules {sorted(map(str, modules))}:"
            " this learner trains one module; a multi-agent algorithm's learner takes each "
            "module's batch",
            MULTI_AGENT,
        )
    ((module_id, columns),) = modules.items()
    results = dict(
        learner.update(
            own_batch(columns, float(learner.config.gamma)),
            num_env_steps_sampled_lifetime=lifetime,
        )
    )
    td_errors = results.pop("td_error", None)
    if td_errors is not None:
        learner.td_errors = td_errors
    rows = int(len(np.asarray(columns["rewards"])))
    results[NUM_MODULE_STEPS_TRAINED] = rows
    return {module_id: results, ALL_MODULES: {NUM_ENV_STEPS_TRAINED: rows}}
