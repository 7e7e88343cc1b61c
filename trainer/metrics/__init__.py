"""Metrics under RLlib's names (`ray.rllib.utils.metrics`): the result keys, the stats classes
(`trainer.metrics.stats`) and `MetricsLogger` (named stats; `.metrics_logger`).
"""

from __future__ import annotations

from trainer.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP, MetricsLogger
from trainer.metrics.stats import Stats, StatsBase, merge_stats

__all__ = ["DEFAULT_STATS_CLS_LOOKUP", "MetricsLogger", "Stats", "StatsBase",
           "add_episode_defaults", "merge_stats"]

# Result keys under RLlib's names (`ray.rllib.utils.metrics`), for code that indexes results.
TRAINING_ITERATION = "training_iteration"
ENV_RUNNER_RESULTS = "env_runners"
EVALUATION_RESULTS = "evaluation"
LEARNER_RESULTS = "learners"
FAULT_TOLERANCE_STATS = "fault_tolerance"
TIMERS = "timers"
#: The timer of a whole `train()` iteration, under `TIMERS` (RLlib's name and value).
TRAINING_ITERATION_TIMER = "training_iteration"
ALL_MODULES = "__all_modules__"
EPISODE_RETURN_MEAN = "episode_return_mean"
EPISODE_RETURN_MIN = "episode_return_min"
EPISODE_RETURN_MAX = "episode_return_max"
EPISODE_LEN_MEAN = "episode_len_mean"
EPISODE_LEN_MIN = "episode_len_min"
EPISODE_LEN_MAX = "episode_len_max"
EPISODE_DURATION_SEC_MEAN = "episode_duration_sec_mean"
NUM_EPISODES = "num_episodes"
NUM_EPISODES_LIFETIME = "num_episodes_lifetime"
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"

#: Keys under result["env_runners"] that are always present (NaN until the first episode ends).
EPISODE_RESULT_KEYS = (
    EPISODE_RETURN_MEAN, EPISODE_RETURN_MIN, EPISODE_RETURN_MAX,
    EPISODE_LEN_MEAN, EPISODE_LEN_MIN, EPISODE_LEN_MAX, EPISODE_DURATION_SEC_MEAN,
)


def add_episode_defaults(env_runners: dict) -> dict:
    """Fills in the episode keys and counters RLlib's results always have."""
    for key in EPISODE_RESULT_KEYS:
        env_runners.setdefault(key, float("nan"))
    for key in (NUM_EPISODES, NUM_ENV_STEPS_SAMPLED, NUM_ENV_STEPS_SAMPLED_LIFETIME,
                NUM_EPISODES_LIFETIME):
        env_runners.setdefault(key, 0)
    return env_runners
