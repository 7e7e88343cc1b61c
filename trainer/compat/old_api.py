"""RLlib's older API forms on the trainer side, kept working with one deprecation warning each
(`callbacks.old_api.warn_once`): config dict keys, result keys, and the old episode attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
)
from trainer.util.deprecation import warn_once

if TYPE_CHECKING:
    from trainer.env.lookback_buffer import InfiniteLookbackBuffer

#: Old config dict keys -> current setting names (for `AlgorithmConfig.from_dict`,
#: `Algorithm(config={...})` and `PPO(config={...})`; builder calls take the ones of their
#: own settings). `trainer.algorithms.config.rllib_names` applies these tables.
OLD_CONFIG_KEYS = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "evaluation_num_workers": "evaluation_num_env_runners",
    "custom_eval_function": "custom_evaluation_function",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "metrics_smoothing_episodes": "metrics_num_episodes_for_smoothing",
    "min_time_s_per_reporting": "min_time_s_per_iteration",
    "min_sample_timesteps_per_reporting": "min_sample_timesteps_per_iteration",
    "recreate_failed_workers": "restart_failed_env_runners",
    "recreate_failed_env_runners": "restart_failed_env_runners",
    "ignore_worker_failures": "ignore_env_runner_failures",
    "max_num_worker_restarts": "max_num_env_runner_restarts",
    "delay_between_worker_restarts_s": "delay_between_env_runner_restarts_s",
    "worker_health_probe_timeout_s": "env_runner_health_probe_timeout_s",
    "recreate_failed_sub_environments": "restart_failed_sub_environments",
}
#: Keys RLlib's `to_dict()` still writes under another name than the attribute: no warning.
#: (`callbacks`, another such key, is read by `AlgorithmConfig.update_from_dict` itself.)
DICT_SPELLINGS = {
    "lambda": "lambda_",
    "framework": "framework_str",
    # RLlib's attribute behind `train_batch_size_per_learner` (one learner here: the batch).
    "_train_batch_size_per_learner": "train_batch_size",
}
#: Old keys about Ray's cluster resources: they mean nothing on one machine (warned, ignored).
#: (Current names such as `num_cpus_per_env_runner` are RLlib settings without effect here, see
#: `trainer.compat.rllib_settings`.)
CLUSTER_ONLY_KEYS = (
    "num_cpus_per_worker",
    "num_gpus_per_worker",
    "num_cpus_for_driver",
    "create_env_on_driver",
)


#: Old result keys -> where the value is now (a path into the result dict).
OLD_RESULT_KEYS = {
    "episode_reward_mean": (ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN),
    "episode_reward_min": (ENV_RUNNER_RESULTS, EPISODE_RETURN_MIN),
    "episode_reward_max": (ENV_RUNNER_RESULTS, EPISODE_RETURN_MAX),
    "episode_len_mean": (ENV_RUNNER_RESULTS, EPISODE_LEN_MEAN),
    "episodes_this_iter": (ENV_RUNNER_RESULTS, NUM_EPISODES),
    "episodes_total": (ENV_RUNNER_RESULTS, NUM_EPISODES_LIFETIME),
    "timesteps_total": (NUM_ENV_STEPS_SAMPLED_LIFETIME,),
    "custom_metrics": (ENV_RUNNER_RESULTS, "custom_metrics"),
}
#: The same inside `result["env_runners"]` (RLlib's old stack had them there too).
OLD_ENV_RUNNER_KEYS = {
    old: path[1:] for old, path in OLD_RESULT_KEYS.items() if path[0] == "env_runners"
}


class ResultDict(dict):
    """A result dict that still answers RLlib's old keys (`result["episode_reward_mean"]`,
    `.get(...)`, `in`) from the current ones, with one warning per key. The old keys are not
    stored: printing, JSON and CSV show the current keys only."""

    _ALIASES: dict[str, tuple[str, ...]] = OLD_RESULT_KEYS
    _PREFIX = "result"

    def _resolve(self, key: str) -> Any:
        value: Any = self
        for part in self._ALIASES[key]:
            value = dict.__getitem__(value, part)
        where = "".join(f'["{part}"]' for part in self._ALIASES[key])
        warn_once(f'{self._PREFIX}["{key}"]', f"{self._PREFIX}{where}")
        return value

    def __missing__(self, key: Any) -> Any:
        if key in self._ALIASES:
            try:
                return self._resolve(key)
            except KeyError:
                pass
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: Any) -> bool:
        if dict.__contains__(self, key):
            return True
        if key not in self._ALIASES:
            return False
        try:
            self._resolve(key)
        except KeyError:
            return False
        return True


class EnvRunnersResultDict(ResultDict):
    _ALIASES = OLD_ENV_RUNNER_KEYS
    _PREFIX = 'result["env_runners"]'


def with_old_result_keys(result: dict) -> ResultDict:
    """`result` as a `ResultDict` (and its `env_runners` part as one too)."""
    result = ResultDict(result)
    if isinstance(result.get(ENV_RUNNER_RESULTS), dict):
        env_runners = result[ENV_RUNNER_RESULTS] = EnvRunnersResultDict(result[ENV_RUNNER_RESULTS])
        hist_stats = env_runners.get("hist_stats")
        if isinstance(hist_stats, dict):
            # Logged one list per episode (kept whole when runners merge): joined here.
            env_runners["hist_stats"] = {
                key: [v for item in values for v in (item if isinstance(item, list) else [item])]
                for key, values in hist_stats.items()
            }
    return result


class OldEpisodeAPI:
    """The old stack's `Episode` attributes on `SingleAgentEpisode`, one warning each:
    `user_data` (per-episode dict, kept across chunks), `custom_metrics` (scalars, reported as
    `result["env_runners"]["custom_metrics"]["<key>_mean|_min|_max"]`), `hist_data` (lists,
    reported as `result["env_runners"]["hist_stats"]["<key>"]`), `length` (-1 before the first step), `total_reward`,
    `episode_id`, `env_id`, `worker`, `last_observation_for()`, `last_info_for()`, `last_action_for()`,
    `last_reward_for()`. Mixed into `SingleAgentEpisode`, which holds the three dicts."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the mixin uses of `SingleAgentEpisode`
        id_: str
        t: int
        env_index: int
        _env_runner: Any
        _return_before: float
        observations: InfiniteLookbackBuffer
        infos: InfiniteLookbackBuffer
        actions: InfiniteLookbackBuffer
        rewards: InfiniteLookbackBuffer

        def _old_dicts(self) -> dict[str, dict]: ...

        def get_return(self) -> float: ...

    @property
    def user_data(self) -> dict:
        warn_once("episode.user_data", "episode.custom_data")
        return self._old_dicts()["user_data"]

    @property
    def custom_metrics(self) -> dict:
        warn_once(
            "episode.custom_metrics", "metrics_logger.log_value(key, value) in on_episode_end"
        )
        return self._old_dicts()["custom_metrics"]

    @property
    def hist_data(self) -> dict:
        warn_once(
            "episode.hist_data",
            "metrics_logger.log_value(key, value, reduce='item_series') in on_episode_end",
        )
        return self._old_dicts()["hist_data"]

    @property
    def length(self) -> int:
        """Env steps so far; -1 before the first step (created, or only reset), as the old
        stack's episodes."""
        warn_once("episode.length", "episode.t (steps so far) or len(episode) (this chunk)")
        return self.t if self.t > 0 else -1

    @property
    def env_id(self) -> int:
        warn_once("episode.env_id", "env_index (an argument of the episode events)")
        return self.env_index

    @property
    def worker(self) -> Any:
        """The EnvRunner sampling this episode (None once it left that process)."""
        warn_once("episode.worker", "env_runner (an argument of the episode events)")
        return self._env_runner

    @property
    def total_reward(self) -> float:
        warn_once("episode.total_reward", "episode.get_return() summed over the chunks")
        return self._return_before + self.get_return()

    @property
    def episode_id(self) -> str:
        warn_once("episode.episode_id", "episode.id_")
        return self.id_

    def last_observation_for(self, agent_id: Any = None) -> Any:
        warn_once("episode.last_observation_for()", "episode.get_observations(-1)")
        return self.observations[-1]

    def last_info_for(self, agent_id: Any = None) -> dict:
        warn_once("episode.last_info_for()", "episode.get_infos(-1)")
        return self.infos[-1]

    def last_action_for(self, agent_id: Any = None) -> Any:
        warn_once("episode.last_action_for()", "episode.get_actions(-1)")
        return self.actions[-1] if len(self.actions) else None

    def last_reward_for(self, agent_id: Any = None) -> float:
        warn_once("episode.last_reward_for()", "episode.get_rewards(-1)")
        return self.rewards[-1] if len(self.rewards) else 0.0
