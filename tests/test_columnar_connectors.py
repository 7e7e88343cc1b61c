"""Env-to-module connectors run inside the columnar sampling loop.

With a connector pipeline the EnvRunner still records by column (`EnvRunner._sample_columnar`):
each vector step's observations go through the pipeline, as rows for pieces that read only the
latest observation (`MeanStdFilter.transform_rows`) or as `LatestStepView`s of the columns for
the others. The per-step loop (`tests/step_loop_reference.py`, `use_step_loop`) runs the
same pieces over episode objects; both must give the same episodes (value for value, dtype
for dtype), metrics and connector state.
"""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from tests.step_loop_reference import count_rollouts, sample_both_ways
from tests.test_columnar_sampling import _assert_same_episodes, _config, _InfoEnv, _metric
from trainer.connectors.connector_v2 import ConnectorV2
from trainer.connectors.env_to_module import (
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    PrevActionsPrevRewards,
)
from trainer.runners.env_to_module_rows import LatestStepView
from trainer.runners.step_columns import StepColumns


class _EpisodeReader(ConnectorV2):
    """Reads an episode's history (its length, last action and reward, its earlier
    observation) and keeps a count in its connector data."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            seen = episode.connector_data.get("seen", 0) + 1
            episode.connector_data["seen"] = seen
            last = episode.get_observations(-1)
            if len(episode):
                extra = float(episode.get_actions(-1)) + float(episode.get_rewards(-1))
                extra += float(np.sum(episode.get_observations(-2)))
            else:
                extra = 0.0
            episode.set_observations(new_data=last + np.float32(extra + seen), at_indices=-1)
        return batch


PIPELINES = {
    "mean_std": lambda env: MeanStdFilter(clip_by_value=3.0),
    "frames": lambda env: [FrameStackingEnvToModule(num_frames=3), MeanStdFilter()],
    "prev_actions": lambda env: [PrevActionsPrevRewards(n_prev_rewards=2), FlattenObservations()],
    "reader": lambda env: [MeanStdFilter(), _EpisodeReader()],
}


def _sample(config, columnar, calls, **sample_kwargs):
    return sample_both_ways(config, columnar, calls, **sample_kwargs)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("num_envs", [1, 4])
def test_connectors_record_by_column_what_the_per_step_loop_records(pipeline, num_envs):
    ended = []
    config = _config(
        _InfoEnv, num_envs, callbacks={"on_episode_end": lambda episode, **kw: ended.append(1)}
    ).env_runners(env_to_module_connector=PIPELINES[pipeline])
    slow, slow_metrics, slow_state = _sample(config, False, 4, num_timesteps=37)
    fast, fast_metrics, fast_state = _sample(config, True, 4, num_timesteps=37)
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
        for a, b in zip(slow_call, fast_call, strict=True):
            assert a.connector_data.keys() == b.connector_data.keys()
    assert ended and len(ended) % 2 == 0
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert repr(slow_state) == repr(fast_state)


def test_a_mean_std_filter_run_records_by_column_with_episode_objects_at_start():
    events = []
    callbacks = {
        "on_episode_start": lambda episode, **kw: events.append(
            np.asarray(episode.get_observations(-1)).tolist()
        )
    }
    config = _config(_InfoEnv, 3, callbacks=callbacks).env_runners(
        env_to_module_connector=PIPELINES["mean_std"]
    )
    slow, _, slow_state = _sample(config, False, 3, num_timesteps=25)
    half = len(events)
    fast, _, fast_state = _sample(config, True, 3, num_timesteps=25)
    assert events[:half] == events[half:]  # each start saw the filtered reset observation
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    assert repr(slow_state) == repr(fast_state)


def _reference_normalize(stat: dict, x: np.ndarray, update: bool, clip: float) -> np.ndarray:
    """RLlib's MeanStdFilter on one observation, with numpy per observation."""
    x = np.asarray(x, dtype=np.float64)
    if update:
        stat["n"] += 1
        delta = x - stat["mean"]
        stat["mean"] = stat["mean"] + delta / stat["n"]
        stat["m2"] = stat["m2"] + delta * (x - stat["mean"])
    n = stat["n"]
    std = np.sqrt(np.maximum(stat["m2"] / (n - 1), 0.0)) if n > 1 else np.zeros_like(x)
    return np.clip((x - stat["mean"]) / (std + 1e-6), -clip, clip).astype(np.float32)


@pytest.mark.parametrize("shape", [(3,), (9, 9)])  # filtered as Python floats, and by numpy
def test_mean_std_filter_rows_match_one_observation_at_a_time(shape):
    """The batched statistics (prefix sums, `RunningStat.push_rows`) are Welford's to float64
    rounding, the filtered rows to float32 rounding (tests/test_mean_std_filter_batched.py)."""
    rng = np.random.default_rng(0)
    space = gym.spaces.Box(-np.inf, np.inf, shape, np.float32)
    piece = MeanStdFilter(space, None, clip_by_value=4.0)
    stats = {"n": 0, "mean": np.zeros(shape), "m2": np.zeros(shape)}
    buffer = dict(stats)
    for batch in range(60):
        x = (rng.normal(size=(1 + batch % 5, *shape)) * 30 + 4).astype(np.float32)
        update = batch % 7 != 3
        expected = np.stack([_reference_normalize(stats, row, update, 4.0) for row in x])
        if update:
            for row in x:
                _reference_normalize(buffer, row, True, 4.0)
        np.testing.assert_allclose(piece.normalize_rows(x, update=update), expected, rtol=1e-6)
    state = piece.get_state()
    assert state["buffer"]["n"] == buffer["n"]
    for key in ("mean", "m2"):
        np.testing.assert_allclose(state["buffer"][key], buffer[key], rtol=1e-12)


MODES = {
    "num_episodes": ({}, {"num_episodes": 7}),
    "complete_episodes": ({"batch_mode": "complete_episodes"}, {}),
    "random_actions": ({}, {"num_timesteps": 30, "random_actions": True}),
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("pipeline", [None, "mean_std", "reader"])
def test_every_sampling_mode_records_by_column(mode, pipeline):
    settings, sample_kwargs = MODES[mode]
    events = []
    callbacks = {
        "on_episode_created": lambda env_index, **kw: events.append(("created", env_index)),
        "on_episode_end": lambda episode, **kw: events.append(("end", len(episode))),
    }
    config = _config(_InfoEnv, 3, callbacks=callbacks).env_runners(
        env_to_module_connector=None if pipeline is None else PIPELINES[pipeline], **settings
    )
    slow, slow_metrics, slow_state = _sample(config, False, 3, **sample_kwargs)
    half = len(events)
    fast, fast_metrics, fast_state = _sample(config, True, 3, **sample_kwargs)
    assert events[:half] == events[half:]
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime", "num_episodes_lifetime"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert repr(slow_state) == repr(fast_state)


class _Halving(MeanStdFilter):
    """A MeanStdFilter whose subclass changes `normalize` (and so reads episodes)."""

    def normalize(self, observation, *, update):
        return super().normalize(observation, update=update) / 2


class _Offset(MeanStdFilter):
    """A MeanStdFilter whose subclass changes `__call__` (and so reads episodes)."""

    def __call__(self, *, episodes, **kwargs):
        batch = super().__call__(episodes=episodes, **kwargs)
        for episode in episodes:
            episode.set_observations(new_data=episode.get_observations(-1) + 1, at_indices=-1)
        return batch


@pytest.mark.parametrize("piece", [_Halving, _Offset])
def test_a_subclass_that_reads_episodes_gets_views(piece):
    assert MeanStdFilter().transforms_rows and not piece().transforms_rows
    config = _config(_InfoEnv, 3).env_runners(env_to_module_connector=lambda env: piece())
    slow, _, slow_state = _sample(config, False, 2, num_timesteps=20)
    fast, _, fast_state = _sample(config, True, 2, num_timesteps=20)
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    assert repr(slow_state) == repr(fast_state)


def test_a_step_view_reads_the_rows_so_far_and_rewrites_only_the_latest_observation():
    columns = StepColumns(2, 8, np.zeros((2, 3), np.float32))
    for step in (1, 2):
        columns.record(
            np.full((2, 3), step, np.float32),
            np.array([step, 0]),
            np.array([0.5 * step, 0.0]),
            np.zeros(2),
            None,
            [{}, {}],
        )
    view = LatestStepView(
        columns, 0, 0, 2, np.full(3, 9.0, np.float32), id_="e", t_started=4,
        connector_data={}, custom_data={}, terminated=False, truncated=False,
    )  # fmt: skip
    assert len(view) == 2 and view.t == 6
    assert view.get_observations(-1).tolist() == [9.0] * 3
    assert view.get_observations(-2).tolist() == [1.0] * 3  # row 1: the step before
    assert view.get_actions().tolist() == [1, 2] and view.get_rewards(-1) == 1.0
    view.set_observations(new_data=np.zeros(3), at_indices=-1)
    assert view.get_observations(-1).tolist() == [0.0] * 3
    with pytest.raises(ValueError, match="latest observation only"):
        view.set_observations(new_data=np.zeros(3), at_indices=0)


@pytest.mark.parametrize("pipeline", ["mean_std", "reader"])
@pytest.mark.parametrize("num_envs", [1, 4])
def test_a_runner_restored_mid_episode_samples_by_column_what_the_original_samples(
    pipeline, num_envs
):
    config = _config(_InfoEnv, num_envs).env_runners(env_to_module_connector=PIPELINES[pipeline])
    original = config.build()
    runner = original.env_runner_group.local_env_runner
    runner.sample(num_timesteps=37)
    state = pickle.loads(pickle.dumps(runner.get_state()))  # as a checkpoint holds it
    assert not all(state["sampling"]["awaiting_reset"])  # episodes under way
    expected = [runner.sample(num_timesteps=37) for _ in range(2)]
    expected_state = runner.get_connector_state()
    original.stop()
    restored = config.build()
    runner = restored.env_runner_group.local_env_runner
    runner.set_state(state)
    rollouts = count_rollouts(runner)
    got = [runner.sample(num_timesteps=37) for _ in range(2)]
    assert len(rollouts) == 2
    for expected_call, got_call in zip(expected, got, strict=True):
        _assert_same_episodes(expected_call, got_call)
    assert repr(runner.get_connector_state()) == repr(expected_state)
    restored.stop()
