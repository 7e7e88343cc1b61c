"""The parts of Ray Tune (and `ray.air.constants`) that RLlib scripts use outside of Tune
itself, served under the RLlib launcher as `ray.tune`, `ray.tune.registry`, `ray.tune.result`,
`ray.air` and `ray.air.constants`: the env registry (`register_env`), `get_trainable_cls`,
`grid_search` and the result keys. Tune's experiment runner (`Tuner`, `tune.run`, search and
scheduling) is not part of this project under Ray's stand-in: its names import and fail when
used with `RLlibNotAvailable` (see `trainer.launcher.table`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from trainer.algorithms import get_trainable_cls
from trainer.capabilities import TUNE
from trainer.env.envs import ENV_CREATOR, _global_registry, register_env
from trainer.errors import UnsupportedCall

__all__ = [
    "ENV_CREATOR",
    "_global_registry",
    "get_trainable_cls",
    "grid_search",
    "grid_variants",
    "register_env",
    "register_trainable",
]

# Result keys (Tune's `ray.tune.result`, the same strings as in Ray 2.60).
DONE = "done"
TRAINING_ITERATION = "training_iteration"
TIME_THIS_ITER_S = "time_this_iter_s"
TIME_TOTAL_S = "time_total_s"
TIMESTAMP = "timestamp"
TIMESTEPS_THIS_ITER = "timesteps_this_iter"
TIMESTEPS_TOTAL = "timesteps_total"
EPISODES_THIS_ITER = "episodes_this_iter"
EPISODES_TOTAL = "episodes_total"
EPISODE_REWARD_MEAN = "episode_reward_mean"
MEAN_LOSS = "mean_loss"
MEAN_ACCURACY = "mean_accuracy"
TRIAL_ID = "trial_id"
EXPERIMENT_TAG = "experiment_tag"
HOSTNAME = "hostname"
NODE_IP = "node_ip"
PID = "pid"
SHOULD_CHECKPOINT = "should_checkpoint"
DEFAULT_METRIC = "_metric"
TRAINABLE_CLASS = "trainable_class"


def register_trainable(name: str, trainable: Any) -> None:
    """Refused: the trainables here are PPO and DQN (`get_trainable_cls`)."""
    raise UnsupportedCall(
        f"register_trainable({name!r}): custom trainables need Ray Tune (pip install "
        "'localrl[tune]', then `python -m trainer run --ray SCRIPT`); get_trainable_cls() "
        "knows PPO and DQN",
        TUNE,
    )


def grid_search(values: Iterable) -> dict[str, list]:
    """Tune's `grid_search(values)` marker, `{"grid_search": [...]}`. Tune expands it into one
    trial per value; here `grid_variants(param_space)` expands a dict of settings the same way,
    for a loop of runs. One run has one value per setting: a builder method given the marker
    itself takes it as the value (a checked setting refuses it)."""
    return {"grid_search": list(values)}


def grid_variants(param_space: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every combination of a dict's `grid_search` values, as plain dicts (nested dicts are
    expanded too)."""
    keys, choices = [], []
    for key, value in param_space.items():
        keys.append(key)
        if isinstance(value, dict) and set(value) == {"grid_search"}:
            choices.append(list(value["grid_search"]))
        elif isinstance(value, dict):
            choices.append(list(grid_variants(value)))
        else:
            choices.append([value])
    for combination in itertools.product(*choices):
        yield dict(zip(keys, combination, strict=True))
