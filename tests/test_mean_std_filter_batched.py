"""MeanStdFilter filters a vector step's rows at once (`RunningStat.push_rows`: prefix sums of the
rows' deviations from a shift), with RLlib's semantics: each row is normalized by the statistics
after its own push, the rows taken in `order`, the pushes going into the normalizing statistics
and the since-last-sync buffer. The statistics are Welford's one-at-a-time updates to float64
rounding (as exact as Welford's where its rounding shows), the filtered rows to float32 rounding,
and the same bits however the rows come in batches (one at a time, a vector step, a whole run;
Python floats or numpy). RLlib's own filters, fed the same stream one row at a time, agree.
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from trainer.connectors import env_to_module
from trainer.connectors.env_to_module import MeanStdFilter, RunningStat
from trainer.env.episode import SingleAgentEpisode

try:  # (Ray's import takes seconds: here, with the module, not in the first test using it)
    import ray.rllib.utils.filter  # noqa: F401
except ImportError:
    pass

CLIP = 10.0


def _piece(shape: tuple[int, ...], **kwargs) -> MeanStdFilter:
    return MeanStdFilter(gym.spaces.Box(-np.inf, np.inf, shape, np.float32), None, **kwargs)


class Welford:
    """RLlib's RunningStat and MeanStdFilter on one row at a time (float64 statistics)."""

    def __init__(self, shape: tuple[int, ...]):
        self.n, self.mean, self.m2 = 0, np.zeros(shape), np.zeros(shape)

    def __call__(self, x: np.ndarray, clip: float | None = CLIP) -> np.ndarray:
        x = np.asarray(x, np.float64)
        self.n += 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.n
        self.m2 = self.m2 + delta * (x - self.mean)
        std = np.sqrt(np.maximum(self.m2 / (self.n - 1), 0.0)) if self.n > 1 else 0.0 * x
        out = (x - self.mean) / (std + 1e-6)
        return (out if clip is None else np.clip(out, -clip, clip)).astype(np.float32)


def _exact(stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact mean and m2 of `stream`'s columns (rounded once to float64)."""
    means, m2s = [], []
    for column in stream.reshape(len(stream), -1).T:
        values = [Fraction(float(v)) for v in column]
        mean = sum(values) / len(values)
        means.append(float(mean))
        m2s.append(float(sum((v - mean) ** 2 for v in values)))
    return np.array(means), np.array(m2s)


def _state_bytes(piece: MeanStdFilter) -> bytes:
    state = piece.get_state()
    return b"".join(
        np.asarray(state[part][key]).tobytes() for part in state for key in ("n", "mean", "m2")
    )


@pytest.mark.parametrize("shape", [(4,), (2, 3), (17,)])  # Python floats and numpy
def test_a_batch_is_welfords_pushes_one_row_after_the_other(shape):
    rng = np.random.default_rng(0)
    piece, reference = _piece(shape), Welford(shape)
    for step in range(120):
        loc, scale = [(0.0, 1.0), (4.0, 30.0), (-20.0, 0.5)][step % 3]
        rows = rng.normal(loc, scale, (1 + step % 9, *shape)).astype(np.float32)
        expected = np.stack([reference(row) for row in rows])
        np.testing.assert_allclose(piece.normalize_rows(rows, update=True), expected, rtol=1e-5)
    _, buffer, stats = piece._statistics()
    for stat in (buffer, stats):
        assert stat.n == reference.n
        np.testing.assert_allclose(stat.mean, reference.mean, rtol=1e-12)
        np.testing.assert_allclose(stat.m2, reference.m2, rtol=1e-12)


def test_a_long_run_keeps_welfords_statistics():
    rng = np.random.default_rng(1)
    stream = rng.normal(3.0, 2.0, (24_000, 4))
    stat, reference = RunningStat((4,)), Welford((4,))
    for start in range(0, len(stream), 8):
        stat.push_rows(stream[start : start + 8])
    for row in stream:
        reference(row)
    assert stat.n == reference.n == 24_000
    np.testing.assert_allclose(stat.mean, reference.mean, rtol=1e-12)
    np.testing.assert_allclose(stat.m2, reference.m2, rtol=1e-12)
    np.testing.assert_allclose(stat.m2, ((stream - stream.mean(axis=0)) ** 2).sum(0), rtol=1e-12)


@pytest.mark.parametrize(("loc", "scale"), [(1e4, 1e-2), (-5e3, 1.0), (0.0, 1.0), (3.0, 30.0)])
def test_large_offsets_lose_no_more_than_welfords_rounding(loc, scale):
    """Against the exact statistics: Welford's m2 is off by ~1e-10 at mean 1e4, std 1e-2
    (its `x - mean` steps carry the mean's rounding); the prefix sums no more than that."""
    rng = np.random.default_rng(2)
    stream = rng.normal(loc, scale, (300, 3))
    stat, reference = RunningStat((3,)), Welford((3,))
    for start in range(0, len(stream), 8):
        stat.push_rows(stream[start : start + 8])
    for row in stream:
        reference(row)
    exact_mean, exact_m2 = _exact(stream)
    ours = np.max(np.abs(stat.m2 - exact_m2) / exact_m2)
    welfords = np.max(np.abs(reference.m2 - exact_m2) / exact_m2)
    assert ours <= max(welfords, 1e-14)
    np.testing.assert_allclose(stat.mean, exact_mean, rtol=1e-15, atol=1e-15 * (abs(loc) + scale))
    np.testing.assert_allclose(stat.m2, reference.m2, rtol=max(2 * welfords, 1e-13))


def test_the_shift_follows_the_mean_so_an_outlier_first_costs_nothing():
    """The sums' shift moves to the mean at n = 1, 2, 4, 8, ...: a first row far from all the
    others (1e6 against N(0, 1)) leaves m2 exact to float64 rounding."""
    rng = np.random.default_rng(3)
    stream = np.concatenate([[[1e6, -1e6]], rng.normal(0.0, 1.0, (3000, 2))])
    stat = RunningStat((2,))
    for start in range(0, len(stream), 7):
        stat.push_rows(stream[start : start + 7])
    exact_mean, exact_m2 = _exact(stream)
    np.testing.assert_allclose(stat.mean, exact_mean, rtol=1e-13)
    np.testing.assert_allclose(stat.m2, exact_m2, rtol=1e-13)


@pytest.mark.parametrize("shape", [(4,), (9,)])  # Python floats and numpy, then both
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"de_mean_to_zero": False, "clip_by_value": None},
        {"de_std_to_one": False, "clip_by_value": 3},
    ],
)
def test_the_same_bits_however_the_rows_come_in_batches(shape, settings, monkeypatch):
    rng = np.random.default_rng(4)
    stream = rng.normal(2.0, 5.0, (700, *shape)).astype(np.float32)
    one_at_a_time = _piece(shape, **settings)
    expected = np.stack([one_at_a_time.normalize(row, update=True) for row in stream])
    whole = _piece(shape, **settings)
    assert whole.normalize_rows(stream, update=True).tobytes() == expected.tobytes()
    monkeypatch.setattr(env_to_module, "_UNBUFFERED", (3, 200))  # the buffer pushed often
    batched = _piece(shape, **settings)
    start, outputs = 0, []
    while start < len(stream):
        size = int(rng.integers(1, 12))
        outputs.append(batched.normalize_rows(stream[start : start + size], update=True))
        if size == 5:
            batched.get_state()  # reading the statistics changes nothing
        start += size
    assert np.concatenate(outputs).tobytes() == expected.tobytes()
    assert _state_bytes(batched) == _state_bytes(whole) == _state_bytes(one_at_a_time)


def test_rows_are_taken_in_order_and_rows_left_out_come_back_as_they_came():
    rng = np.random.default_rng(5)
    for shape in [(3,), (20,)]:
        piece, reference = _piece(shape), _piece(shape)
        for _ in range(10):
            rows = rng.normal(size=(4, *shape)).astype(np.float32)
            out = piece.transform_rows(rows, order=[2, 0, 3])
            for i in (2, 0, 3):
                assert out[i].tobytes() == reference.normalize(rows[i], update=True).tobytes()
            assert out[1].tobytes() == rows[1].tobytes() and out.dtype == np.float32
        # No row in order (every sub-env idle): the rows as they came, nothing pushed.
        assert piece.transform_rows(rows, order=[]).tobytes() == rows.tobytes()
        assert _state_bytes(piece) == _state_bytes(reference)
        assert piece.get_state()["buffer"]["n"] == 30


def test_a_pipeline_call_over_episodes_is_the_rows_call():
    """The per-step loop calls the filter over episodes (`__call__`), the rollout loop over a
    vector step's rows in the same order (`transform_rows`): the same bits."""
    rng = np.random.default_rng(6)
    by_episodes, by_rows = _piece((4,)), _piece((4,))
    episodes = [SingleAgentEpisode() for _ in range(8)]
    for step in range(30):
        rows = rng.normal(size=(8, 4)).astype(np.float32)
        order = [5, 1] + [i for i in range(8) if i not in (5, 1)] if step % 4 == 2 else None
        for episode, row in zip(episodes, rows, strict=True):
            if step == 0:
                episode.add_env_reset(row)
            else:
                episode.add_env_step(row, 0, 0.0)
        called = [episodes[i] for i in (order or range(8))]
        by_episodes(rl_module=None, batch={}, episodes=called)
        filtered = by_rows.transform_rows(rows, order=order)
        got = np.stack([episode.get_observations(-1) for episode in episodes])
        assert got.tobytes() == filtered.tobytes()
    assert _state_bytes(by_episodes) == _state_bytes(by_rows)


def test_the_first_row_a_nan_and_no_update_follow_rllibs_rules():
    # The first push: std 0, the row de-meaned to 0; not de-meaned: divided by 1e-6, clipped.
    assert _piece((2,)).normalize(np.array([3.0, -1.0]), update=True).tolist() == [0.0, 0.0]
    raw = _piece((2,), de_mean_to_zero=False).normalize(np.array([3.0, -1.0]), update=True)
    assert raw.tolist() == [CLIP, -CLIP]
    # A NaN row: NaN out, and the statistics NaN from then on (as Welford's).
    for shape in [(2,), (40,)]:
        piece, reference = _piece(shape), Welford(shape)
        rows = np.ones((3, *shape), np.float32)
        rows[1, 0] = np.nan
        expected = np.stack([reference(row) for row in rows])
        got = piece.normalize_rows(rows, update=True)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)])
    # update=False: the rows filtered by the statistics as they are, nothing pushed.
    piece = _piece((3,), clip_by_value=None)
    piece.normalize_rows(np.array([[0.0, 1.0, 2.0], [2.0, 5.0, 2.0]]), update=True)
    before = _state_bytes(piece)
    out = piece.transform_rows(np.array([[1.0, 3.0, 2.0], [3.0, 1.0, 2.0]]), update_stats=False)
    np.testing.assert_allclose(out, [[0.0, 0.0, 0.0], [np.sqrt(2), -np.sqrt(0.5), 0.0]], rtol=1e-6)
    assert _state_bytes(piece) == before


def test_states_round_trip_exactly_and_runners_merge_exactly():
    rng = np.random.default_rng(7)
    runners = [_piece((3,)), _piece((3,))]
    for runner, loc in zip(runners, (0.0, 5.0), strict=True):
        for _ in range(20):
            runner.normalize_rows(rng.normal(loc, 1.0, (8, 3)).astype(np.float32), update=True)
    copy = _piece((3,))
    copy.set_state(runners[0].get_state())
    assert _state_bytes(copy) == _state_bytes(runners[0])
    driver = _piece((3,))
    merged = driver.merge_states([runner.get_state() for runner in runners])
    parts = [RunningStat.from_state(runner.get_state()["buffer"]) for runner in runners]
    expected = RunningStat((3,)).merged(parts[0]).merged(parts[1])
    assert merged["synced"]["n"] == expected.n == 320
    assert np.asarray(merged["synced"]["mean"]).tobytes() == expected.mean.tobytes()
    assert np.asarray(merged["synced"]["m2"]).tobytes() == expected.m2.tobytes()
    for runner in runners:  # synced: the runners start their buffers anew from the merge
        runner.set_state(merged)
        assert runner.get_state()["buffer"]["n"] == 0
        runner.normalize_rows(np.zeros((2, 3), np.float32), update=True)
        assert runner.get_state()["buffer"]["n"] == 2


def test_a_multi_agent_filter_filters_each_agents_observations_as_a_single_agent_one():
    rng = np.random.default_rng(8)
    space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    multi = MeanStdFilter(multi_agent=True)
    single = _piece((3,))
    stream = rng.normal(1.0, 3.0, (50, 3)).astype(np.float32)
    got = np.stack([multi.transform_agent_observation("a", space, row) for row in stream[:30]])
    multi.transform_agent_observation("b", space, stream[0])
    got = np.concatenate([got, multi._agent_filter("a").normalize_rows(stream[30:], update=True)])
    expected = np.concatenate(
        [single.normalize_rows(stream[:7], update=True)]
        + [single.normalize_rows(stream[i : i + 1], update=True) for i in range(7, 50)]
    )
    assert got.tobytes() == expected.tobytes()
    agents = dict(multi.get_state()["agents"])
    assert agents["a"]["buffer"]["n"] == 50 and agents["b"]["buffer"]["n"] == 1


# -- RLlib's filters, fed the same stream -----------------------------------------------------
def _rllib(module: str) -> Any:
    """RLlib's own `module` (not this project's, which the launcher's switch serves)."""
    pytest.importorskip("ray.rllib", reason="needs Ray 2.60 with RLlib's imports (the test extra)")
    loaded = importlib.import_module(module)
    assert "/ray/rllib/" in loaded.__file__.replace("\\", "/")
    return loaded


def _vector_steps(rng: np.random.Generator) -> list[tuple[np.ndarray, list[int]]]:
    """Vector steps of 8 CartPole-like rows, each with the order the rollout loop takes them
    in (the sub-envs that reset first)."""
    steps = []
    for step in range(25):
        rows = (rng.normal(size=(8, 4)) * [1.0, 0.5, 0.1, 0.8] + [0.0, 0.1, 0.0, -0.2]).astype(
            np.float32
        )
        resetting = [i for i in range(8) if (step * 3 + i) % 11 == 0]
        steps.append((rows, resetting + [i for i in range(8) if i not in resetting]))
    return steps


def test_rllibs_filter_one_row_at_a_time_gives_the_same_rows_and_statistics():
    rllib_filters = _rllib("ray.rllib.utils.filter")
    rllib, ours = rllib_filters.MeanStdFilter((4,), clip=CLIP), _piece((4,))
    for rows, order in _vector_steps(np.random.default_rng(9)):
        expected = np.empty_like(rows)
        for i in order:
            expected[i] = rllib(rows[i], update=True)
        got = ours.transform_rows(rows, order=order)
        # RLlib's std is float32 (`RunningStat.var` casts), ours float64: float32 rounding.
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    state = ours.get_state()["buffer"]
    for stat in (rllib.running_stats, rllib.buffer):
        assert stat.num_pushes == state["n"] == 200
        np.testing.assert_allclose(state["mean"], stat.mean_array, rtol=1e-12)
        np.testing.assert_allclose(state["m2"], stat.sum_sq_diff_array, rtol=1e-12)


def test_rllibs_env_to_module_connector_gives_the_same_rows_and_statistics():
    rllib_connector = _rllib("ray.rllib.connectors.env_to_module.mean_std_filter")
    RLlibEpisode = _rllib("ray.rllib.env.single_agent_episode").SingleAgentEpisode
    space, actions = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
    rllib = rllib_connector.MeanStdFilter(clip_by_value=CLIP)
    rllib.input_observation_space = space  # (its __init__ sets the clip after the spaces)
    ours = MeanStdFilter(clip_by_value=CLIP)
    ours.input_observation_space = space
    episodes = [RLlibEpisode(observation_space=space, action_space=actions) for _ in range(8)]
    for step, (rows, order) in enumerate(_vector_steps(np.random.default_rng(10))):
        for episode, row in zip(episodes, rows, strict=True):
            if step == 0:
                episode.add_env_reset(row)
            else:
                episode.add_env_step(row, 0, 0.0)
        rllib(rl_module=None, batch={}, episodes=[episodes[i] for i in order])
        expected = np.stack([episode.get_observations(-1) for episode in episodes])
        np.testing.assert_allclose(ours.transform_rows(rows, order=order), expected, atol=1e-6)
    stat = rllib._filters[None].running_stats
    state = ours.get_state()["buffer"]
    assert stat.num_pushes == state["n"] == 200
    np.testing.assert_allclose(state["mean"], stat.mean_array, rtol=1e-12)
    np.testing.assert_allclose(state["m2"], stat.sum_sq_diff_array, rtol=1e-12)


def test_the_std_gets_rllibs_small_number_as_rllibs_filter_adds_it():
    """RLlib 2.60's filter divides by the std plus `SMALL_NUMBER` (1e-6), as this one does
    (and the exported graph folds it in)."""
    rllib = _rllib("ray.rllib.utils.filter").MeanStdFilter((1,), clip=CLIP)
    ours = _piece((1,))
    rows = np.array([[0.1], [1.1]], np.float32)
    expected = [rllib(row, update=True) for row in rows]
    assert ours.normalize_rows(rows, update=True)[1] == np.float32(0.5 / (np.sqrt(0.5) + 1e-6))
    np.testing.assert_allclose(expected[1], 0.5 / (np.sqrt(0.5) + 1e-6), rtol=1e-7)
