"""The episode an `on_episode_step` callback gets is a `LiveEpisode`: RLlib's
`SingleAgentEpisode` API over the EnvRunner's step columns, which costs what the callback reads
and writes its setters into the rows the returned episodes are made of.

The per-step loop (`tests/step_loop_reference.py`, every episode object appended each step) is
the reference: a callback reading whole columns, or writing through the setters, sees and
leaves the same as there.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.step_loop_reference import sample_both_ways
from tests.test_columnar_sampling import _assert_same_episodes, _config, _InfoEnv, _metric
from trainer.env.episode import LiveEpisode, SingleAgentEpisode


def _plain(value):
    """A callback's reading as comparable plain data (arrays as rounded lists)."""
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), np.round(value, 5).tolist())
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return (type(value).__name__, value)


def test_a_step_callback_reading_one_value_makes_no_buffers():
    """Reading the latest observation, reward and info, the length and custom data costs those
    values: the episode's column buffers are never made while it runs."""
    made: list = []

    def on_episode_step(episode, **kw):
        assert isinstance(episode, SingleAgentEpisode) and not episode.is_numpy
        episode.get_observations(-1), episode.get_rewards(-1), episode.get_infos(-1)
        episode.get_actions(-1), episode.get_extra_model_outputs("action_logp", -1)
        episode.custom_data["n"] = len(episode)
        made.append(episode._made_row)

    algo = _config(_InfoEnv, 4, callbacks={"on_episode_step": on_episode_step}).build()
    try:
        episodes = algo.env_runner_group.local_env_runner.sample(num_timesteps=200)
    finally:
        algo.stop()
    assert len(made) >= 190 and set(made) == {-1}
    assert all(ep.custom_data["n"] == ep.t for ep in episodes if len(ep))


def _whole_column_callbacks(events: list) -> dict:
    """Callbacks reading whole columns (as lists, while the episode runs) and the state."""

    def on_episode_step(episode, env_index, **kw):
        events.append(
            (
                env_index,
                episode.is_numpy,
                episode.is_done,
                _plain(episode.get_observations()),
                _plain(episode.get_actions()),
                _plain(episode.get_rewards()),
                _plain(episode.get_infos()),
                _plain(episode.get_extra_model_outputs("action_logp")),
                _plain(episode.get_observations(slice(-3, None))),
                _plain(episode.get_rewards(-2, fill=0.0)),
                round(episode.get_return(), 9),
                _plain(episode.get_state()["observations"]),
            )
        )

    return {"on_episode_step": on_episode_step}


@pytest.mark.parametrize(("env", "num_envs"), [(_InfoEnv, 1), (_InfoEnv, 3), ("Pendulum-v1", 2)])
def test_a_step_callback_reading_whole_columns_sees_the_per_step_loops_episode(env, num_envs):
    """(Pendulum: Box actions and distribution inputs, rows of arrays.)"""
    events: list = []
    config = _config(env, num_envs, callbacks=_whole_column_callbacks(events))
    slow, _, _ = sample_both_ways(config, False, 3, num_timesteps=40)
    half = len(events)
    fast, _, _ = sample_both_ways(config, True, 3, num_timesteps=40)
    assert half > 100 and events[:half] == events[half:]
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)


def _writing_callbacks() -> dict:
    """Callbacks that rewrite each step's reward and observation and an earlier reward
    through the setters, and read back what they wrote."""

    def on_episode_step(episode, **kw):
        reward = episode.get_rewards(-1)
        episode.set_rewards(new_data=reward * 2.0, at_indices=-1)
        assert episode.get_rewards(-1) == reward * 2.0
        observation = np.asarray(episode.get_observations(-1))
        episode.set_observations(new_data=observation + 1.0, at_indices=-1)
        np.testing.assert_array_equal(episode.get_observations(-1), observation + 1.0)
        if len(episode) >= 3:
            episode.set_rewards(new_data=[0.5], at_indices=[0])
        episode.custom_data["logp"] = episode.get_extra_model_outputs("action_logp")

    return {"on_episode_step": on_episode_step}


def test_what_a_step_callback_writes_is_in_the_returned_episodes_and_metrics():
    config = _config(_InfoEnv, 3, callbacks=_writing_callbacks())
    slow, slow_metrics, _ = sample_both_ways(config, False, 3, num_timesteps=45)
    fast, fast_metrics, _ = sample_both_ways(config, True, 3, num_timesteps=45)
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    assert any(ep.get_rewards(0) == 0.5 for call in fast for ep in call if len(ep) >= 3)
    for key in ("episode_return_mean", "episode_len_mean"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key


def test_one_object_from_start_to_end_across_calls_with_its_data():
    """The object `on_episode_start` got is the one every step and the end get (within a
    call; a chunk's successor after it), and it keeps custom and temporary data."""
    seen: dict = {}
    ended: list = []

    def on_episode_start(episode, **kw):
        seen[episode.id_] = episode
        episode.custom_data["steps"] = 0

    def on_episode_step(episode, **kw):
        assert type(episode) is LiveEpisode
        if episode.id_ in seen and seen[episode.id_].t_started == episode.t_started:
            assert seen[episode.id_] is episode
        episode.custom_data["steps"] += 1
        episode.add_temporary_timestep_data("t", episode.t)

    def on_episode_end(episode, **kw):
        ended.append(
            (episode.custom_data["steps"], episode.t, episode.get_temporary_timestep_data("t"))
        )

    config = _config(
        _InfoEnv,
        2,
        callbacks={
            "on_episode_start": on_episode_start,
            "on_episode_step": on_episode_step,
            "on_episode_end": on_episode_end,
        },
    )
    algo = config.build()
    try:
        runner = algo.env_runner_group.local_env_runner
        for _ in range(6):
            runner.sample(num_timesteps=7)
    finally:
        algo.stop()
    assert len(ended) >= 4
    for steps, t, temporary in ended:
        assert steps == t and temporary == list(range(1, t + 1))


def test_an_empty_live_episode_reads_as_an_empty_episode_before_its_reset():
    """`LiveEpisode.empty` makes its columns when first read: an `on_episode_created` callback
    sees what `SingleAgentEpisode()` holds, and what it adds stays."""
    episode, plain = LiveEpisode.empty(3), SingleAgentEpisode(env_index=3)
    assert len(episode) == 0 and episode.get_observations() == plain.get_observations() == []
    assert episode.get_rewards() == [] and episode.extra_model_outputs == {}
    state, plain_state = episode.get_state(), plain.get_state()
    assert {k: v for k, v in state.items() if k != "id_"} == {
        k: v for k, v in plain_state.items() if k != "id_"
    }
    episode.add_env_reset(np.zeros(2, np.float32), {"at": "reset"})
    assert len(episode.get_observations()) == 1 and episode.get_infos(-1) == {"at": "reset"}


def test_callbacks_reading_episodes_at_creation_start_and_step_see_each_in_order():
    """`on_episode_created` reads the still-empty episode (its columns made then), the start
    and step events follow in sub-env order, and every created episode is one that steps."""
    events: list = []

    def on_episode_created(episode, env_index, **kw):
        assert len(episode) == 0 and episode.get_observations() == []
        events.append(("created", env_index, episode.id_))

    def on_episode_start(episode, env_index, **kw):
        assert len(episode.get_observations()) == 1
        events.append(("start", env_index, episode.id_))

    def on_episode_step(episode, env_index, **kw):
        events.append(("step", env_index, episode.id_))

    callbacks = {
        "on_episode_created": on_episode_created,
        "on_episode_start": on_episode_start,
        "on_episode_step": on_episode_step,
    }
    algo = _config(_InfoEnv, 3, callbacks=callbacks).build()
    try:
        algo.env_runner_group.local_env_runner.sample(num_timesteps=60)
    finally:
        algo.stop()
    created = {(i, id_) for kind, i, id_ in events if kind == "created"}
    stepped = {(i, id_) for kind, i, id_ in events if kind == "step"}
    assert stepped and stepped <= created
    for kind, i, id_ in events:  # each episode starts before it steps
        if kind == "step":
            assert events.index(("start", i, id_)) < events.index((kind, i, id_))
