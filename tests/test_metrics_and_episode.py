import math

import numpy as np
import pytest

from trainer import MetricsLogger, SingleAgentEpisode


def test_mean_defaults_to_ema_with_coefficient_0_01():
    logger = MetricsLogger()
    logger.log_value("x", 10.0)
    logger.log_value("x", 20.0)
    assert logger.peek("x") == pytest.approx(0.99 * 10.0 + 0.01 * 20.0)


def test_window_min_max_sum_and_clear_on_reduce():
    logger = MetricsLogger()
    for v in [1, 2, 3, 4, 5]:
        logger.log_value("win", v, window=3)
        logger.log_value("lo", v, reduce="min", window=2)
        logger.log_value("hi", v, reduce="max")
        logger.log_value("total", v, reduce="sum")
        logger.log_value("per_iter", v, reduce="sum", clear_on_reduce=True)
        logger.log_value("all", v, reduce=None, clear_on_reduce=True)
    first = logger.reduce()
    assert first == {"win": 4.0, "lo": 4, "hi": 5, "total": 15, "per_iter": 15,
                     "all": [1, 2, 3, 4, 5]}
    logger.log_value("total", 1, reduce="sum")
    second = logger.reduce()
    assert second["total"] == 16 and second["per_iter"] == 0 and second["all"] == []
    assert second["win"] == 4.0  # windows live on across reduce()


def test_nested_keys_log_dict_and_peek_subtrees():
    logger = MetricsLogger()
    logger.log_dict({"a": {"b": 1.0, "c": 2.0}}, key="top", window=1)
    logger.log_value(("top", "d"), 3.0, window=1)
    assert logger.peek(("top", "a")) == {"b": 1.0, "c": 2.0}
    assert logger.reduce() == {"top": {"a": {"b": 1.0, "c": 2.0}, "d": 3.0}}
    assert logger.peek("missing", default=None) is None
    with pytest.raises(KeyError):
        logger.peek("missing")


def test_log_time_and_bad_settings():
    logger = MetricsLogger()
    with logger.log_time("t", window=1):
        pass
    assert 0 <= logger.peek("t") < 1
    with pytest.raises(ValueError, match="reduce must be one of"):
        logger.log_value("y", 1, reduce="median")
    with pytest.raises(ValueError, match="not both"):
        logger.log_value("y", 1, window=3, ema_coeff=0.1)
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        logger.log_value("y", 1, window=0)


def test_deltas_from_several_runners_merge_like_one_stream():
    runners = [MetricsLogger(), MetricsLogger()]
    main = MetricsLogger()
    for i, runner in enumerate(runners):
        for v in range(5):
            runner.log_value("ret", 10 * i + v, window=4)
            runner.log_value("steps", 1, reduce="sum")
        main.merge_delta(runner.export_delta(clear=True), key="env_runners")
    assert main.peek(("env_runners", "steps")) == 10
    assert main.peek(("env_runners", "ret")) == np.mean([11, 12, 13, 14])
    # A second export only carries what is new.
    runners[0].log_value("steps", 1, reduce="sum")
    main.merge_delta(runners[0].export_delta(), key="env_runners")
    assert main.peek(("env_runners", "steps")) == 11


def test_state_round_trip():
    logger = MetricsLogger()
    for v in range(10):
        logger.log_value("a", v, window=3)
        logger.log_value("b", v)
    clone = MetricsLogger()
    clone.set_state(logger.get_state())
    assert clone.reduce() == logger.reduce()


def test_episode_recording_chunks_and_temporary_data():
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(2), {"start": True})
    for t in range(3):
        episode.add_env_step(np.full(2, t + 1.0), t % 2, 1.5, {"t": t},
                             extra_model_outputs={"action_logp": -0.5})
        episode.add_temporary_timestep_data("x", t)
    assert len(episode) == episode.len() == 3 and episode.t == 3
    assert episode.get_return() == 4.5
    assert episode.get_observations(-1).tolist() == [3.0, 3.0]
    assert episode.get_actions([0, 2]) == [0, 0]
    assert episode.get_infos(0) == {"start": True}
    assert episode.get_temporary_timestep_data("x") == [0, 1, 2]
    with pytest.raises(KeyError, match="no temporary timestep data under 'y'"):
        episode.get_temporary_timestep_data("y")
    episode.custom_data["k"] = 1
    successor = episode.cut()
    assert successor.id_ == episode.id_ and successor.t_started == 3 and len(successor) == 0
    assert successor.custom_data == {"k": 1}
    assert successor.get_observations(0).tolist() == [3.0, 3.0]
    episode.to_numpy()
    assert episode.is_numpy and episode.rewards.dtype == np.float32
    assert episode.get_extra_model_outputs("action_logp").shape == (3,)
    successor.add_env_step(np.zeros(2), 1, 2.0, terminated=True)
    assert successor.is_done and successor.is_terminated and not successor.is_truncated
    assert successor.get_duration_s() >= 0 and not math.isnan(successor.get_duration_s())
