"""An `on_episode_step` callback reads episodes by column what the per-step loop gives it.

With an `on_episode_step` callback the EnvRunner still records by column
(`EnvRunner._sample_columnar`): every episode has its object from its start, a `LiveEpisode`
that reads its rows as the per-step loop's object holds each step (the env-to-module
pipeline's output: its pass runs before the step events, as RLlib 2.60's), and the events fire
in sub-env order.
The per-step loop (`tests/step_loop_reference.py`) is the reference; both must
give the callbacks the same episodes at each event and return the same episodes, metrics and
connector state.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.step_loop_reference import sample_both_ways
from tests.test_columnar_connectors import PIPELINES
from tests.test_columnar_sampling import _assert_same_episodes, _config, _InfoEnv, _metric


def _callbacks(events: list) -> dict:
    """Callbacks that note what each event's episode holds, keep a count in its custom data
    and temporary data per step, and check that one object runs from start to end."""

    started: dict[int, object] = {}

    def on_episode_start(episode, env_index, **kw):
        started[env_index] = episode
        obs = np.asarray(episode.get_observations(-1)).round(5).tolist()
        events.append(("start", env_index, len(episode), obs))

    def on_episode_step(episode, env_index, metrics_logger, **kw):
        steps = episode.custom_data.get("steps", 0) + 1
        episode.custom_data["steps"] = steps
        episode.add_temporary_timestep_data("reward", float(episode.get_rewards(-1)))
        obs = np.asarray(episode.get_observations(-1)).round(5).tolist()
        info = dict(episode.get_infos(-1))
        events.append(("step", env_index, len(episode), episode.t, obs, info))
        metrics_logger.log_value("step_obs", float(np.sum(obs)))

    def on_episode_end(episode, env_index, **kw):
        rewards = episode.get_temporary_timestep_data("reward")
        same = started.pop(env_index, episode) is episode
        events.append(("end", env_index, len(episode), round(float(np.sum(rewards)), 6), same))

    return {
        "on_episode_start": on_episode_start,
        "on_episode_step": on_episode_step,
        "on_episode_end": on_episode_end,
    }


def _sample(config, columnar, calls, **sample_kwargs):
    return sample_both_ways(config, columnar, calls, **sample_kwargs)


MODES = {
    "timesteps": ({}, {"num_timesteps": 37}),
    "num_episodes": ({}, {"num_episodes": 7}),
    "complete_episodes": ({"batch_mode": "complete_episodes"}, {}),
    "random_actions": ({}, {"num_timesteps": 30, "random_actions": True}),
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("pipeline", [None, "mean_std", "reader"])
@pytest.mark.parametrize("num_envs", [1, 4])
def test_step_callbacks_read_by_column_what_the_per_step_loop_gives_them(mode, pipeline, num_envs):
    settings, sample_kwargs = MODES[mode]
    events: list = []
    config = _config(_InfoEnv, num_envs, callbacks=_callbacks(events)).env_runners(
        env_to_module_connector=None if pipeline is None else PIPELINES[pipeline], **settings
    )
    slow, slow_metrics, slow_state = _sample(config, False, 3, **sample_kwargs)
    half = len(events)
    fast, fast_metrics, fast_state = _sample(config, True, 3, **sample_kwargs)
    assert half and events[:half] == events[half:]
    # (An episode that began in this call ends with the object its start read.)
    assert any(event[-1] for event in events if event[0] == "end")
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime", "step_obs"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert repr(slow_state) == repr(fast_state)


def test_step_callbacks_read_a_vector_env_by_column():
    events: list = []
    config = _config("CartPole-v1", 6, "vector_entry_point", callbacks=_callbacks(events))
    slow, slow_metrics, _ = _sample(config, False, 3, num_timesteps=60)
    half = len(events)
    fast, fast_metrics, _ = _sample(config, True, 3, num_timesteps=60)
    assert events[:half] == events[half:]
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    assert _metric(slow_metrics, "step_obs") == _metric(fast_metrics, "step_obs")


@pytest.mark.parametrize("columnar", [False, True])
@pytest.mark.parametrize("pipeline", ["mean_std", "reader"])
def test_a_step_callback_reads_the_observation_the_pipeline_wrote(pipeline, columnar):
    """RLlib 2.60's EnvRunner runs the env-to-module pass before the step events: a step
    callback reads the observation the module gets, which the returned episode holds."""
    seen: dict = {}

    def on_episode_step(episode, **kw):
        seen[(episode.id_, episode.t)] = np.asarray(episode.get_observations(-1)).copy()

    config = _config(_InfoEnv, 2, callbacks={"on_episode_step": on_episode_step}).env_runners(
        env_to_module_connector=PIPELINES[pipeline]
    )
    calls, _, _ = _sample(config, columnar, 2, num_timesteps=30)
    compared = 0
    for call in calls:
        for episode in call:
            for index in range(1, len(episode) + 1):
                key = (episode.id_, episode.t_started + index)
                if key in seen:
                    np.testing.assert_array_equal(seen[key], episode.get_observations(index))
                    compared += 1
    assert compared >= 50
