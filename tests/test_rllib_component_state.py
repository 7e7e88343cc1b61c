"""RLlib's Checkpointable component layout on learners, learner groups, algorithms and EnvRunners,
as users' runtimes drive them: `get_state(components=..., not_components=...)` answers in RLlib's
layout (`{"learner": {"rl_module": {module_id: ...}, ...}}`) and `set_state` takes it back; an
EnvRunner takes RLlib's `weights_seq_no` and records it per step; a replay learner takes RLlib's
`update(batch=MultiAgentBatch, timesteps=...)`; RLlib's no-op callback events exist."""

from __future__ import annotations

import pickle
import platform
from typing import Any

import numpy as np
import pytest

from trainer import PPOConfig
from trainer.callbacks import RLlibCallback
from trainer.compat.old_callbacks import warn_never_called
from trainer.env.episode import EpisodeView
from trainer.util.deprecation import _warned

torch = pytest.importorskip("torch")


def _ppo(num_env_runners: int = 0) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def _runner_weights(algo: Any) -> dict[str, np.ndarray]:
    (weights,) = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.get_state(components="rl_module")["rl_module"],
        local_env_runner=False,
    )
    return weights


def test_learner_group_state_comes_in_rllib_layout_and_goes_back_to_the_runners() -> None:
    algo = _ppo(num_env_runners=1).build()
    try:
        group = algo.learner_group
        state = group.get_state(components="learner/rl_module")
        assert set(state) == {"learner"}
        learner_state = state["learner"]
        assert {"rl_module", "should_module_be_updated", "weights_seq_no"} == set(learner_state)
        (module_id,) = learner_state["rl_module"]
        assert module_id == "default_policy"
        weights = learner_state["rl_module"][module_id]
        assert all(isinstance(value, np.ndarray) for value in weights.values())

        # Only what was asked: RLlib's component paths select and leave out.
        assert "optimizer" in group.get_state()["learner"]
        assert "optimizer" not in group.get_state(not_components="learner/optimizer")["learner"]
        assert group.get_state(not_components="learner") == {}

        # Set in RLlib's layout: the learner's module changes, and so do the EnvRunners'.
        changed = {name: np.full_like(value, 0.25) for name, value in weights.items()}
        group.set_state({"learner": {"rl_module": {module_id: changed}}})
        now = group.get_state(components="learner/rl_module")["learner"]["rl_module"][module_id]
        for name, value in changed.items():
            np.testing.assert_array_equal(now[name], value)
        on_runner = _runner_weights(algo)
        some_name = next(name for name in on_runner if name in changed)
        np.testing.assert_array_equal(on_runner[some_name], changed[some_name])

        # A whole state without the metrics logger goes back as it came (optimizer included).
        algo.train()
        snapshot = group.get_state(not_components="learner/metrics_logger")
        algo.train()
        group.set_state(snapshot)
        again = group.get_state(not_components="learner/metrics_logger")
        for name, value in snapshot["learner"]["rl_module"][module_id].items():
            np.testing.assert_array_equal(again["learner"]["rl_module"][module_id][name], value)
    finally:
        algo.stop()


def test_algorithm_state_takes_rllibs_learner_group_component() -> None:
    algo = _ppo().build()
    try:
        state = algo.get_state(components="learner_group/learner/rl_module")
        weights = state["learner_group"]["learner"]["rl_module"]["default_policy"]
        zeros = {name: np.zeros_like(value) for name, value in weights.items()}
        algo.set_state({"learner_group": {"learner": {"rl_module": {"default_policy": zeros}}}})
        module_state = algo.get_module().get_state()
        assert all(not np.any(module_state[name]) for name in zeros if name in module_state)
        # This project's own layout is unchanged without RLlib's component arguments.
        assert "module" in algo.learner.get_state()
        assert "learner_group" not in algo.get_state()
    finally:
        algo.stop()


def _step_seen(episode: Any, **kwargs: Any) -> None:
    """An `on_episode_step` callback reading one value (the episodes are live objects)."""
    episode.get_rewards(-1)


@pytest.mark.parametrize("step_callback", [False, True], ids=["plain", "on_episode_step"])
def test_env_runner_takes_weights_seq_no_and_records_it_per_step(step_callback: bool) -> None:
    """RLlib's SingleAgentEnvRunner: `set_state` loads weights unless older than the runner's,
    and each step of a finished episode carries the sequence number it was sampled with,
    given when its buffers are made (a finished episode nobody reads costs none), whether the
    callbacks had it while it ran or not."""
    config = _ppo()
    if step_callback:
        config = config.callbacks(on_episode_step=_step_seen)
    algo = config.build()
    try:
        runner = algo.env_runner
        weights = runner.get_state(components="rl_module")["rl_module"]
        runner.set_state({"rl_module": {"default_policy": weights}, "weights_seq_no": 3})
        episodes = runner.sample(num_episodes=2)
        # (Not made for the number: a live episode is one by column, a view.)
        views = [episode for episode in episodes if isinstance(episode, EpisodeView)]
        assert all(view._rows is None for view in views)
        assert views or not step_callback
        # (and as they arrive from a worker process: pickled by column)
        for episode in [*episodes, *pickle.loads(pickle.dumps(episodes))]:
            seq = np.asarray(episode.get_extra_model_outputs("weights_seq_no"))
            assert seq.shape == (len(episode),)
            assert set(seq.tolist()) == {3}
        # Older weights than the runner's are not loaded (RLlib's rule); newer ones are.
        zeros = {name: np.zeros_like(value) for name, value in weights.items()}
        runner.set_state({"rl_module": zeros, "weights_seq_no": 2})
        kept = runner.get_state(components="rl_module")["rl_module"]
        assert any(np.any(value) for value in kept.values())
        runner.set_state({"rl_module": zeros, "weights_seq_no": 4})
        loaded = runner.get_state(components="rl_module")["rl_module"]
        assert not any(np.any(value) for value in loaded.values())
    finally:
        algo.stop()


def test_a_replay_learner_takes_rllibs_update_call() -> None:
    from trainer.algorithms.sac import SACConfig
    from trainer.compat.sample_batch import MultiAgentBatch, SampleBatch

    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        rows = 16
        rng = np.random.default_rng(0)
        columns = {
            "obs": rng.normal(size=(rows, 3)).astype(np.float32),
            "new_obs": rng.normal(size=(rows, 3)).astype(np.float32),
            "actions": rng.uniform(-2, 2, size=(rows, 1)).astype(np.float32),
            "rewards": rng.normal(size=rows).astype(np.float32),
            "terminateds": np.zeros(rows, bool),
            "truncateds": np.zeros(rows, bool),
        }
        before = algo.learner_group.get_state(components="learner/rl_module")
        (results,) = algo.learner_group.update(
            batch=MultiAgentBatch({"default_policy": SampleBatch(columns)}, env_steps=rows),
            timesteps={"num_env_steps_sampled_lifetime": 100},
        )
        assert np.isfinite(results["default_policy"]["qf_loss"])
        assert results["__all_modules__"]["num_env_steps_trained"] == rows
        after = algo.learner_group.get_state(components="learner/rl_module")
        name = next(iter(before["learner"]["rl_module"]["default_policy"]))
        assert not np.array_equal(
            before["learner"]["rl_module"]["default_policy"][name],
            after["learner"]["rl_module"]["default_policy"][name],
        )
        learner = algo.learner
        assert dict(learner.last_update_ts_by_mid) == {"default_policy": 100}
        learner.last_update_ts_by_mid = {"default_policy": 7}
        assert learner.last_target_update_step == 7
        assert list(learner.module.keys()) == ["default_policy"]
        assert "default_policy" in learner.module
        assert learner.node == platform.node()
        with pytest.raises(NotImplementedError, match="one gradient step"):
            algo.learner_group.update(batch=columns, timesteps={}, num_epochs=2)
    finally:
        algo.stop()


def test_rllibs_never_fired_events_exist_and_an_override_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = RLlibCallback()
    for event in (
        "on_create_policy",
        "on_learn_on_batch",
        "on_postprocess_trajectory",
        "on_workers_recreated",
        "on_offline_eval_runners_recreated",
    ):
        assert callable(getattr(base, event))

    class Old(RLlibCallback):
        def on_learn_on_batch(self, *, policy: Any, train_batch: Any, result: dict, **kw: Any):
            pass

    _warned.clear()
    with caplog.at_level("WARNING", logger="trainer"):
        warn_never_called([base])
        assert "never called" not in caplog.text
        warn_never_called([Old()])
    assert "Old.on_learn_on_batch (never called here)" in caplog.text


def test_env_runner_connector_components_come_under_rllibs_names() -> None:
    from trainer.connectors import MeanStdFilter

    config = _ppo().env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    algo = config.build()
    try:
        runner = algo.env_runner
        runner.sample(num_timesteps=50)
        state = runner.get_state(components=["env_to_module_connector", "module_to_env_connector"])
        assert set(state) == {"env_to_module_connector", "module_to_env_connector"}
        assert state["env_to_module_connector"]  # the filter's statistics
        assert state["module_to_env_connector"] == {}  # (no module-to-env pieces)
        runner.sample(num_timesteps=50)
        assert runner.get_state(components="env_to_module_connector") != state
        runner.set_state({"env_to_module_connector": state["env_to_module_connector"]})
        again = runner.get_state(components="env_to_module_connector")
        assert _same_tree(again["env_to_module_connector"], state["env_to_module_connector"])
    finally:
        algo.stop()


def _same_tree(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(_same_tree(a[k], b[k]) for k in a)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def test_a_numpy_learners_module_is_indexed_by_module_id() -> None:
    algo = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0).build()
    try:
        learner = algo.learner
        assert learner.module["default_policy"] is learner.module
        with pytest.raises(TypeError, match="module id"):
            learner.module[None]
    finally:
        algo.stop()
