import math
import pickle

import numpy as np
import pytest

from trainer import MetricsLogger, SingleAgentEpisode
from trainer.env.episode_list import EpisodeList
from trainer.metrics import DEFAULT_STATS_CLS_LOOKUP
from trainer.metrics.stats import LifetimeSumStats, MeanStats, Stats
from trainer.util.state_checks import StateError


def test_mean_defaults_to_ema_with_coefficient_0_01():
    logger = MetricsLogger(root=True)
    logger.log_value("x", 10.0)
    logger.log_value("x", 20.0)
    assert logger.peek("x") == pytest.approx(0.99 * 10.0 + 0.01 * 20.0)


def test_reduce_kinds_and_what_starts_over_at_each_reduce():
    logger = MetricsLogger(root=True)
    for v in [1, 2, 3, 4, 5]:
        logger.log_value("win", v, window=3)  # no reduce, a window: "mean"
        logger.log_value("lo", v, reduce="min", window=2)
        logger.log_value("hi", v, reduce="max")
        logger.log_value("total", v, reduce="lifetime_sum")
        logger.log_value("per_iter", v, reduce="sum")
        logger.log_value("all", v, reduce="item_series")
    assert isinstance(logger.stats["win"], MeanStats)
    first = logger.reduce(compile=True)
    assert first == {
        "win": 4.0,
        "lo": 4,
        "hi": 5,
        "total": 15,
        "per_iter": 15,
        "all": [1, 2, 3, 4, 5],
    }
    logger.log_value("total", 1, reduce="lifetime_sum")
    second = logger.reduce(compile=True)
    # Only the root's lifetime sum lives on; windows, sums and series start over (RLlib 2.60).
    assert second["total"] == 16 and second["all"] == []
    assert all(math.isnan(second[key]) for key in ("win", "lo", "hi", "per_iter"))


def test_torch_scalars_are_logged_as_numbers():
    """A torch Learner's loss (a one-element tensor) logs as RLlib takes it, with every numeric
    reduce; what is read back is a plain number. A tensor of several numbers is no number."""
    torch = pytest.importorskip("torch")
    logger = MetricsLogger(root=True)
    logger.log_value("loss", torch.tensor(0.1))
    logger.log_value("loss", torch.tensor(0.2, requires_grad=True) * 1.0)
    for reduce in ("mean", "min", "max", "sum", "lifetime_sum", "percentiles"):
        logger.log_value(reduce, torch.tensor([2.0]), reduce=reduce, window=None)
        logger.log_value(reduce, torch.tensor(4, dtype=torch.int64), reduce=reduce)
    assert logger.peek("loss") == pytest.approx(0.99 * 0.1 + 0.01 * 0.2)
    assert type(logger.peek("loss")) is float
    assert logger.peek("mean") == 3.0 and logger.peek("min") == 2.0
    assert logger.peek("max") == 4.0 and logger.peek("sum") == 6.0
    assert logger.peek("lifetime_sum") == 6.0
    assert logger.peek("percentiles")[50] == pytest.approx(3.0)
    with pytest.raises(ValueError, match="is not a number"):
        logger.log_value("loss", torch.ones(2))


def test_nested_keys_log_dict_and_peek_subtrees():
    logger = MetricsLogger(root=True)
    logger.log_dict({"a": {"b": 1.0, "c": 2.0}}, key="top", window=1)
    logger.log_value(("top", "d"), 3.0, window=1)
    assert logger.peek(("top", "a")) == {"b": 1.0, "c": 2.0}
    assert logger.reduce(compile=True) == {"top": {"a": {"b": 1.0, "c": 2.0}, "d": 3.0}}
    assert logger.peek("missing", default=0) == 0
    with pytest.raises(KeyError):
        logger.peek("missing")  # default=None means "raise", as in RLlib
    with pytest.raises(ValueError, match="already holds a value"):
        logger.log_value(("top", "d", "e"), 1.0)


def test_log_time_and_bad_settings():
    logger = MetricsLogger()
    with logger.log_time("t", reduce="mean", window=1):
        pass
    assert 0 <= logger.peek("t") < 1
    with pytest.raises(ValueError, match="could not be found in stats_cls_lookup"):
        logger.log_value("y", 1, reduce="median")
    with pytest.raises(ValueError, match="ema_coeff is not supported for mean"):
        logger.log_value("y", 1, window=3, ema_coeff=0.1)
    with pytest.raises(ValueError, match="window is not supported for ema"):
        logger.log_value("y", 1, reduce="ema", window=3)
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        logger.log_value("y", 1, window=0)
    with pytest.raises(ValueError, match="only supported for reduce='percentiles'"):
        logger.log_value("y", 1, reduce="mean", window=3, percentiles=[50])
    with pytest.raises(ValueError, match="not a number"):
        logger.log_value("z", 1.0)
        logger.log_value("z", [1.0, 2.0])
    with pytest.raises(ValueError, match="MeanStats does not take these settings"):
        logger.log_value("w", 1.0, reduce="mean", colour="blue")
    with pytest.raises(ValueError, match="set_value.*deprecated"):
        logger.set_value("v", 1)


def test_parallel_runners_merge_with_rllibs_numbers():
    # Each runner sends the reduction of its window; the receiver reduces what came in.
    main = MetricsLogger(root=True)
    runners = [MetricsLogger(), MetricsLogger()]
    for runner, returns in zip(
        runners, ([100.0, 200.0, 300.0, 400.0], [150.0, 250.0, 350.0, 450.0]), strict=True
    ):
        for value in returns:
            runner.log_value("mean_ret", value, window=3)
    main.aggregate([r.reduce() for r in runners], key="env_runners")
    assert list(main.stats["env_runners"]["mean_ret"].values) == [300.0, 350.0]
    assert main.peek(("env_runners", "mean_ret")) == 325.0
    windowed = MetricsLogger(root=True)
    first, second = MetricsLogger(), MetricsLogger()
    for value in (50, 25, 10, 5):
        first.log_value("some_stat", value, reduce="sum", window=3)
    for value in (75, 100):
        second.log_value("some_stat", value, reduce="sum", window=3)
    windowed.aggregate([first.reduce(), second.reduce()])
    assert windowed.peek("some_stat") == 40 + 175
    with pytest.raises(ValueError, match="created by direct logging"):
        windowed.log_value("direct", 1.0)
        windowed.aggregate([{"direct": first.reduce()["some_stat"]}])


def test_lifetime_sums_count_each_runners_growth_once_across_aggregations():
    main = MetricsLogger(root=True)
    runners = [MetricsLogger(), MetricsLogger()]
    for rounds in range(3):
        for i, runner in enumerate(runners):
            runner.log_value("steps", 10 * (i + 1), reduce="lifetime_sum")
            runner.log_value("episodes", 1, reduce="sum")
        main.aggregate([r.reduce() for r in runners], key="env_runners")
        assert main.peek(("env_runners", "steps")) == 30 * (rounds + 1)
    # Integers stay integers (results print and compare as counts).
    assert isinstance(main.peek(("env_runners", "steps")), int)
    assert main.reduce(compile=True)["env_runners"]["episodes"] == 6
    # A runner that is replaced starts from zero: nothing is lost or doubled.
    runners[1] = MetricsLogger()
    runners[1].log_value("steps", 5, reduce="lifetime_sum")
    main.aggregate([r.reduce() for r in runners], key="env_runners")
    assert main.peek(("env_runners", "steps")) == 90 + 5  # runner 0 reported no growth


def test_state_round_trip_and_earlier_formats():
    logger = MetricsLogger(root=True)
    for v in range(10):
        logger.log_value("a", v, window=3)
        logger.log_value("b", v)
        logger.log_value("c", v, reduce="lifetime_sum")
    clone = MetricsLogger(root=True)
    clone.set_state(logger.get_state())
    assert clone.reduce(compile=True) == logger.reduce(compile=True)
    # A state of the earlier single Stats class (RLlib's legacy_stats) converts as RLlib's.
    earlier = {
        "stats": {
            "steps": Stats([4, 5], reduce="sum").get_state(),
            "loss": Stats([1.0, 3.0], reduce="mean", window=5).get_state(),
            "hist": Stats([[1, 2]], reduce=None, window=10).get_state(),
        }
    }
    restored = MetricsLogger(root=True)
    restored.set_state(earlier)
    assert isinstance(restored.stats["steps"], LifetimeSumStats)
    assert restored.peek("steps") == 9 and restored.peek("loss") == 2.0
    assert restored.peek("hist") == [[1, 2]]


def test_custom_stats_class_through_the_lookup():
    class MedianStats(MeanStats):
        stats_cls_identifier = "median"

        def _np_reduce_fn(self, values):
            return np.nanmedian(values)

    lookup = {**DEFAULT_STATS_CLS_LOOKUP, "median": MedianStats}
    runner = MetricsLogger(stats_cls_lookup=lookup)
    for value in (1.0, 2.0, 10.0):
        runner.log_value("m", value, reduce="median")
    main = MetricsLogger(root=True, stats_cls_lookup=lookup)
    main.aggregate([runner.reduce()])
    assert main.peek("m") == 2.0
    state = main.get_state()
    with pytest.raises(StateError, match="'median' is not in stats_cls_lookup"):
        MetricsLogger.check_state(state)
    MetricsLogger.check_state(state, stats_cls_lookup=lookup)
    with pytest.raises(ValueError, match="must map a str to a subclass"):
        MetricsLogger(stats_cls_lookup={"median": dict})


def test_reduced_stats_travel_by_pickle():
    runner = MetricsLogger()
    runner.log_value("steps", 3, reduce="lifetime_sum", with_throughput=True)
    runner.log_value("ret", 1.5, window=10)
    reduced = pickle.loads(pickle.dumps(runner.reduce()))
    main = MetricsLogger(root=True)
    main.aggregate([reduced])
    assert main.reduce(compile=True) == {"steps": 3, "ret": 1.5}


def test_episode_recording_chunks_and_temporary_data():
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(2), {"start": True})
    for t in range(3):
        episode.add_env_step(
            np.full(2, t + 1.0), t % 2, 1.5, {"t": t}, extra_model_outputs={"action_logp": -0.5}
        )
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
    assert episode.is_numpy and episode.get_rewards().dtype == np.float64  # as RLlib batches
    assert episode.get_extra_model_outputs("action_logp").shape == (3,)
    successor.add_env_step(np.zeros(2), 1, 2.0, terminated=True)
    assert successor.is_done and successor.is_terminated and not successor.is_truncated
    assert successor.get_duration_s() >= 0 and not math.isnan(successor.get_duration_s())


def _recorded_episode(
    steps: int, *, infos: bool = False, terminated: bool = True, action=lambda t: t % 2
) -> SingleAgentEpisode:
    episode = SingleAgentEpisode(t_started=5, env_index=3)
    episode.add_env_reset(np.zeros(4, dtype=np.float32), {"reset": 1} if infos else {})
    for t in range(steps):
        episode.add_env_step(
            np.full(4, t, dtype=np.float32),
            action(t),
            float(t),
            {"t": t} if infos else {},
            terminated=terminated and t == steps - 1,
            extra_model_outputs={"action_logp": -0.1 * t, "action_dist_inputs": np.ones(2) * t},
        )
    episode.custom_data["n"] = steps
    return episode.to_numpy()


def _same_episode(a: SingleAgentEpisode, b: SingleAgentEpisode) -> None:
    assert (a.id_, a.t_started, a.env_index, len(a)) == (b.id_, b.t_started, b.env_index, len(b))
    assert (a.is_terminated, a.is_truncated, a.custom_data) == (
        b.is_terminated,
        b.is_truncated,
        b.custom_data,
    )
    for field in ("observations", "actions", "rewards"):
        x, y = getattr(a, field), getattr(b, field)
        assert x == y and np.asarray(x.data).dtype == np.asarray(y.data).dtype, field
    assert a.extra_model_outputs.keys() == b.extra_model_outputs.keys()
    for key, value in a.extra_model_outputs.items():
        assert value == b.extra_model_outputs[key], key
    assert a.infos == b.infos and a.get_duration_s() == b.get_duration_s()


def test_episode_list_pickles_compactly_and_round_trips():
    # Episodes as sample() returns them: finished ones, a chunk with infos, an empty chunk.
    episodes = EpisodeList(
        [
            _recorded_episode(3),
            _recorded_episode(1, infos=True),
            _recorded_episode(0, terminated=False),
            _recorded_episode(7),
        ]
    )
    data = pickle.dumps(episodes)
    restored = pickle.loads(data)
    assert isinstance(restored, EpisodeList) and len(restored) == 4
    for a, b in zip(episodes, restored, strict=True):
        _same_episode(a, b)
    # One array per field, not one per episode: far smaller than pickling episode by episode.
    assert len(data) < len(pickle.dumps(list(episodes)))
    restored[1].infos[0]["changed"] = True  # info dicts are not shared between episodes
    assert restored[0].infos[0] == {}


def test_episode_list_falls_back_for_episodes_that_do_not_stack():
    # Discrete actions in one episode, float vectors in another: pickled one by one.
    mixed = EpisodeList([_recorded_episode(2), _recorded_episode(2, action=lambda t: np.ones(3))])
    restored = pickle.loads(pickle.dumps(mixed))
    for a, b in zip(mixed, restored, strict=True):
        _same_episode(a, b)
    # Lists not yet converted with to_numpy() also travel as they are.
    raw = SingleAgentEpisode()
    raw.add_env_reset(0)
    raw.add_env_step(1, 0, 1.0)
    restored_raw = pickle.loads(pickle.dumps(EpisodeList([raw])))[0]
    assert restored_raw.get_observations() == [0, 1] and not restored_raw.is_numpy
