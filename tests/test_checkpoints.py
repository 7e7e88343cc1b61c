"""Checkpoints through the public API: exact resume in a fresh process, on_checkpoint_loaded,
every kind of bad checkpoint, interrupted and killed saves, plain-msgpack state, the manager,
and `python -m checkpoints inspect`."""

import json
import logging
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import checkpoints.writer
import gymnasium as gym
import numpy as np
import ormsgpack
import pytest
from checkpoints.codec import pack, unpack
from checkpoints.writer import file_digest
from helpers import UnpicklingMarker, small_ppo

from callbacks import RLlibCallback
from checkpoints import CheckpointError, CheckpointManager, backup_path, open_checkpoint
from trainer import DQNConfig, PPOConfig
from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.ppo import PPO
from trainer.checkpoints.json_files import sealed_json

#: Episode durations and throughputs are wall-clock measures; every other env_runners metric
#: must match exactly.
_CLOCK_KEYS = ("episode_duration_sec_mean", "num_env_steps_sampled_lifetime_throughput")


def _env_runner_metrics(result: dict) -> dict:
    return {k: v for k, v in result["env_runners"].items() if k not in _CLOCK_KEYS}


def _exact_config(num_env_runners: int) -> PPOConfig:
    return (
        small_ppo(num_env_runners, train_batch_size=300, num_epochs=2)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=75)
        .debugging(seed=11)
    )


_RESUME_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from trainer.algorithms.algorithm import Algorithm

    path, out = sys.argv[1], sys.argv[2]
    algo = Algorithm.from_checkpoint(path)
    results = [algo.train() for _ in range(3)]
    np.savez(out + ".npz", **algo.get_weights())
    with open(out + ".json", "w") as f:
        json.dump([{k: v for k, v in r["env_runners"].items()
                    if k not in ("episode_duration_sec_mean",
                                 "num_env_steps_sampled_lifetime_throughput")}
               for r in results], f)
    algo.stop()
""")


@pytest.mark.slow
@pytest.mark.parametrize("num_env_runners", [0, 2])
def test_resume_in_a_fresh_process_is_exact(tmp_path, num_env_runners):
    config = _exact_config(num_env_runners)
    with config.build() as straight:
        straight_results = [straight.train() for _ in range(6)]
        straight_weights = straight.get_weights()
    with config.build() as first_half:
        for _ in range(3):
            first_half.train()
        path = first_half.save_to_path(tmp_path / "checkpoint")
    script = tmp_path / "resume.py"
    script.write_text(_RESUME_SCRIPT)
    out = tmp_path / "resumed"
    subprocess.run([sys.executable, str(script), path, str(out)], check=True, timeout=120)
    resumed_weights = np.load(str(out) + ".npz")
    assert sorted(resumed_weights.files) == sorted(straight_weights)
    for name, value in straight_weights.items():
        np.testing.assert_array_equal(resumed_weights[name], value, err_msg=name)
    resumed_metrics = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed_metrics == [_env_runner_metrics(r) for r in straight_results[3:]]
    assert resumed_metrics[-1]["num_env_steps_sampled_lifetime"] >= 6 * 300


def _dqn_with_buffer_in_state() -> DQNConfig:
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .training(num_steps_sampled_before_learning_starts=50, store_buffer_in_checkpoints=True)
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=2)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_config", [lambda: _exact_config(1), _dqn_with_buffer_in_state], ids=["PPO", "DQN"]
)
def test_get_state_is_a_snapshot_that_set_state_resumes_exactly(make_config):
    # get_state() in memory, with no file between: later training must not change what it
    # returned (Adam's moments, the replay buffer's steps and priorities are updated in place).
    with make_config().build() as algo:
        algo.train()
        state = algo.get_state()
        straight = [algo.train() for _ in range(2)]
        straight_weights = algo.get_weights()
        algo.set_state(state)
        again = [algo.train() for _ in range(2)]
        for name, value in straight_weights.items():
            np.testing.assert_array_equal(algo.get_weights()[name], value, err_msg=name)
    assert [_env_runner_metrics(r) for r in again] == [_env_runner_metrics(r) for r in straight]
    assert [r["learners"] for r in again] == [r["learners"] for r in straight]


class LoadRecorder(RLlibCallback):
    def __init__(self):
        self.loaded_at_iterations = []

    def on_checkpoint_loaded(self, *, algorithm, metrics_logger, **kwargs):
        self.loaded_at_iterations.append(algorithm.iteration)


def test_on_checkpoint_loaded_fires_after_both_restore_paths_not_after_save(tmp_path):
    calls = []
    config = (
        small_ppo()
        .callbacks(
            LoadRecorder, on_checkpoint_loaded=lambda **kw: calls.append(kw["algorithm"].iteration)
        )
        .debugging(seed=0)
    )
    with config.build() as algo:
        algo.train()
        algo.train()
        path = algo.save_to_path(tmp_path / "c")
        assert algo.callbacks[0].loaded_at_iterations == [] and calls == []
        algo.train()
        algo.restore_from_path(path)
        # Fired after the state was loaded: the algorithm is back at iteration 2.
        assert algo.callbacks[0].loaded_at_iterations == [2] and calls == [2]
        assert algo.training_iteration == 2
    with PPO.from_checkpoint(path, allow_pickle=True) as restored:
        # The config came from the checkpoint's pickle (its lambda has no import path): the
        # lambda appends to a copy of `calls`.
        assert restored.callbacks[0].loaded_at_iterations == [2]
    with Algorithm.from_checkpoint(path, config=config) as restored:
        assert restored.callbacks[0].loaded_at_iterations == [2] and calls == [2, 2]


def test_older_names_save_checkpoint_and_load_checkpoint(tmp_path):
    with small_ppo().callbacks(LoadRecorder).build() as algo:
        algo.train()
        algo.save_checkpoint(tmp_path / "c")
        algo.train()
        algo.load_checkpoint(tmp_path / "c")
        assert algo.iteration == 1 and algo.callbacks[0].loaded_at_iterations == [1]


def test_save_to_path_without_a_path_uses_a_new_temporary_directory():
    with small_ppo().build() as algo:
        path = algo.save_to_path()
    try:
        assert os.path.isabs(path) and open_checkpoint(path).metadata["algorithm"] == "PPO"
    finally:
        shutil.rmtree(path)


@pytest.fixture(scope="module")
def saved_ppo(tmp_path_factory):
    """A PPO checkpoint (1 iteration) to copy and damage."""
    path = tmp_path_factory.mktemp("saved") / "ppo"
    with small_ppo().debugging(seed=0).build() as algo:
        algo.train()
        algo.save_to_path(path)
    return path


def _rewrite_metadata(path, change):
    metadata = json.loads((path / "metadata.json").read_text())
    change(metadata)
    (path / "metadata.json").write_bytes(sealed_json(metadata))


def _replace_file(path, name, data):
    """Replaces a file and makes metadata.json agree (a consistent, deliberate change)."""
    (path / name).write_bytes(data)

    def fix(metadata):
        metadata["files"][name] = {"size": len(data), "sha256": file_digest(data)}

    _rewrite_metadata(path, fix)


def _flip_middle_byte(file):
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))


_DAMAGES = {
    "missing directory": (lambda p: shutil.rmtree(p), "no such directory"),
    "a file": (lambda p: (shutil.rmtree(p), p.write_text("x")), "not a directory"),
    "no metadata": (lambda p: (p / "metadata.json").unlink(), "no metadata.json"),
    "damaged metadata": (
        lambda p: (p / "metadata.json").write_text('{"format": "loc'),
        "metadata.json is damaged",
    ),
    "foreign metadata": (
        lambda p: (p / "metadata.json").write_text('{"version": 3}'),
        "not a checkpoint of this library",
    ),
    "newer format": (
        lambda p: _rewrite_metadata(p, lambda m: m.update(format_version=99)),
        "format version 99, newer than this library reads",
    ),
    "missing file": (lambda p: (p / "learner.msgpack").unlink(), "learner.msgpack is missing"),
    "truncated file": (
        lambda p: (p / "learner.msgpack").write_bytes((p / "learner.msgpack").read_bytes()[:100]),
        "learner.msgpack is truncated",
    ),
    "altered file": (
        lambda p: _flip_middle_byte(p / "learner.msgpack"),
        "learner.msgpack was altered",
    ),
    "not msgpack": (
        lambda p: _replace_file(p, "metrics.msgpack", b"\xc1\xc1 not msgpack"),
        "metrics.msgpack is not valid msgpack",
    ),
    "component left out": (
        lambda p: (
            _rewrite_metadata(p, lambda m: m["files"].pop("learner.msgpack")),
            (p / "learner.msgpack").unlink(),
        ),
        "has no learner.msgpack",
    ),
    "state that does not fit": (
        lambda p: _replace_file(
            p,
            "learner.msgpack",
            pack({**unpack((p / "learner.msgpack").read_bytes()), "optimizer": {"m": [1.0]}}),
        ),
        "its state does not fit this algorithm",
    ),
}


@pytest.mark.parametrize("damage", sorted(_DAMAGES))
def test_every_bad_checkpoint_raises_checkpoint_error_naming_path_and_cause(
    tmp_path, saved_ppo, damage
):
    path = tmp_path / "damaged"
    shutil.copytree(saved_ppo, path)
    apply, cause = _DAMAGES[damage]
    apply(path)
    with small_ppo().debugging(seed=5).build() as algo:
        before = algo.get_weights()
        with pytest.raises(CheckpointError) as error:
            algo.restore_from_path(path)
        assert str(path) in str(error.value) and cause in str(error.value)
        # Nothing was loaded.
        for name, value in algo.get_weights().items():
            np.testing.assert_array_equal(value, before[name])
    with pytest.raises(CheckpointError, match=cause):
        Algorithm.from_checkpoint(path)


@pytest.mark.parametrize(
    "config, cause",
    [
        (
            DQNConfig().environment("CartPole-v1").rl_module(model_config={"fcnet_hiddens": [16]}),
            "a checkpoint of PPO cannot be loaded into DQN",
        ),
        (
            small_ppo().rl_module(model_config={"fcnet_hiddens": [32]}),
            "incompatible network shapes",
        ),
        (small_ppo(env="Acrobot-v1"), "incompatible spaces"),
    ],
)
def test_a_checkpoint_of_another_algorithm_or_shape_is_refused(saved_ppo, config, cause):
    with config.build() as algo:
        with pytest.raises(CheckpointError, match=cause):
            algo.restore_from_path(saved_ppo)
    with pytest.raises(CheckpointError, match=cause):
        Algorithm.from_checkpoint(saved_ppo, config=config)


def test_state_files_are_plain_msgpack(saved_ppo):
    with PPO.from_checkpoint(saved_ppo) as algo:
        weights = algo.get_weights()
    # The weights are in the module's checkpoint (RLlib's learner_group/learner/rl_module/
    # <module_id>), the optimizer state in learner.msgpack.
    module = saved_ppo / "learner_group" / "learner" / "rl_module" / "default_policy"
    assert json.loads((module / "metadata.json").read_text())["kind"] == "rl_module"
    module_state = ormsgpack.unpackb((module / "module_state.msgpack").read_bytes())
    for name, entry in module_state.items():
        array = np.frombuffer(entry["data"], dtype=entry["__ndarray__"]).reshape(entry["shape"])
        np.testing.assert_array_equal(array, weights[name])
    learner = ormsgpack.unpackb((saved_ppo / "learner.msgpack").read_bytes())
    assert "optimizer" in learner and "module" not in learner
    assert ormsgpack.unpackb((saved_ppo / "algorithm.msgpack").read_bytes())["iteration"] == 1
    metadata = json.loads((saved_ppo / "metadata.json").read_text())
    assert metadata["algorithm_class"] == "PPO" and metadata["training_iteration"] == 1
    # metadata.json checksums its files and, through each module checkpoint's metadata.json
    # (and the MultiRLModule checkpoint's), the module checkpoints.
    assert set(metadata["files"]) == {p.name for p in saved_ppo.iterdir()} - {
        "metadata.json",
        "learner_group",
        "env_runner",  # the connector pipelines, covered through their metadata.json
    }
    assert metadata["module_checkpoints"] == {
        "path": "learner_group/learner/rl_module",
        "multi_rl_module_metadata_sha256": file_digest(
            (module.parent / "metadata.json").read_bytes()
        ),
        "metadata_sha256": {"default_policy": file_digest((module / "metadata.json").read_bytes())},
    }


def test_restore_from_path_and_from_checkpoint_with_config_never_unpickle(tmp_path, saved_ppo):
    path = tmp_path / "c"
    shutil.copytree(saved_ppo, path)
    marker = tmp_path / "unpickled"
    _replace_file(path, "class_and_config.pkl", pickle.dumps(UnpicklingMarker(str(marker))))
    with small_ppo().build() as algo:
        algo.restore_from_path(path)
        assert algo.iteration == 1
    with PPO.from_checkpoint(path, config=small_ppo()) as algo:
        assert algo.iteration == 1
    # Without a config, the config comes from config.json: still nothing unpickled.
    with Algorithm.from_checkpoint(path) as algo:
        assert algo.iteration == 1 and algo.config.train_batch_size == 200
    assert not marker.exists()
    # Only the explicit opt-in reads the pickle (and this one is not a class and config).
    with pytest.raises(CheckpointError, match="cannot be unpickled"):
        Algorithm.from_checkpoint(path, allow_pickle=True)
    assert marker.exists()


def test_a_save_that_fails_between_file_writes_leaves_the_previous_checkpoint(
    tmp_path, monkeypatch
):
    path = tmp_path / "c"
    with small_ppo().build() as algo:
        algo.train()
        algo.save_to_path(path)
        algo.train()
        written = []

        def fail_on_third_file(name):
            written.append(name)
            if len(written) == 3:
                raise OSError("disk full (injected)")

        monkeypatch.setattr(checkpoints.writer, "after_file_written", fail_on_third_file)
        with pytest.raises(CheckpointError, match="disk full"):
            algo.save_to_path(path)
        monkeypatch.setattr(checkpoints.writer, "after_file_written", None)
        assert open_checkpoint(path).metadata["training_iteration"] == 1
        assert sorted(os.listdir(tmp_path)) == ["c"]  # no temporary directory left
        algo.restore_from_path(path)
        assert algo.iteration == 1


def test_a_save_over_a_checkpoint_without_atomic_exchange(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints.writer, "_RENAMEAT2", None)
    path = tmp_path / "c"
    with small_ppo().build() as algo:
        algo.train()
        algo.save_to_path(path)
        algo.train()
        algo.save_to_path(path)
    assert open_checkpoint(path).metadata["training_iteration"] == 2
    assert sorted(os.listdir(tmp_path)) == ["c"]
    # Between the fallback's two renames the previous checkpoint answers for the path.
    os.rename(path, backup_path(path))
    assert open_checkpoint(path).metadata["training_iteration"] == 2


def test_save_refuses_to_replace_a_directory_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with small_ppo().build() as algo:
        with pytest.raises(CheckpointError, match="not a checkpoint"):
            algo.save_to_path(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


_SAVE_FOREVER = textwrap.dedent("""
    import sys, time
    import checkpoints.writer
    from helpers import UnpicklingMarker, small_ppo

    path = sys.argv[1]
    algo = small_ppo().debugging(seed=0).build()
    algo.train()
    algo.save_to_path(path)
    print("saved", flush=True)
    # Slow saves down so that the kill lands inside one.
    checkpoints.writer.after_file_written = lambda name: time.sleep(0.004)
    while True:
        algo.train()
        algo.save_to_path(path)
""")


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05, 0.13, 0.21])
def test_sigkill_during_saves_leaves_a_loadable_checkpoint(tmp_path, delay):
    script = tmp_path / "save_forever.py"
    script.write_text(_SAVE_FOREVER)
    path = tmp_path / "c"
    env = {**os.environ, "PYTHONPATH": os.path.dirname(__file__)}
    process = subprocess.Popen(
        [sys.executable, str(script), str(path)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "saved"
        time.sleep(delay)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        process.stdout.close()
    checkpoint = open_checkpoint(path)
    iteration = checkpoint.metadata["training_iteration"]
    assert iteration >= 1
    with PPO.from_checkpoint(path) as algo:
        assert algo.iteration == iteration
        # A temporary directory left by the kill either fails to open with CheckpointError
        # (never another error) or passes every checksum: a newer checkpoint whose rename was
        # missing, or the previous one, which the atomic exchange moved out of `path` and the
        # kill kept from being deleted.
        for leftover in tmp_path.glob(".c.saving-*"):
            try:
                assert open_checkpoint(leftover).metadata["training_iteration"] >= iteration - 1
            except CheckpointError:
                pass
        # The next save removes it.
        algo.save_to_path(path)
    assert not list(tmp_path.glob(".c.saving-*"))


def test_dqn_checkpoints_the_replay_buffer_when_asked(tmp_path):
    def config(store):
        return (
            DQNConfig()
            .environment("CartPole-v1")
            .rl_module(model_config={"fcnet_hiddens": [16]})
            .training(
                num_steps_sampled_before_learning_starts=50, store_buffer_in_checkpoints=store
            )
            .reporting(min_sample_timesteps_per_iteration=100)
            .debugging(seed=2)
        )

    with config(True).build() as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "with")
        expected = algo.local_replay_buffer.sample_transitions(8, n_step=1, gamma=0.99, beta=0.4)
    assert open_checkpoint(path).has("replay_buffer")
    with Algorithm.from_checkpoint(path) as restored:
        buffer = restored.local_replay_buffer
        assert len(buffer) >= 100
        batch = buffer.sample_transitions(8, n_step=1, gamma=0.99, beta=0.4)
        for key in ("obs", "actions", "rewards", "new_obs", "weights"):
            np.testing.assert_array_equal(batch[key], expected[key])
    with config(False).build() as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "without")
    assert not open_checkpoint(path).has("replay_buffer")
    with Algorithm.from_checkpoint(path) as restored:
        assert len(restored.local_replay_buffer) == 0


@pytest.mark.slow
def test_evaluation_runners_get_weights_and_state_on_restore(tmp_path):
    config = (
        small_ppo(1)
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1, evaluation_duration=2)
        .debugging(seed=4)
    )
    with config.build() as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "c")
        saved_rng = algo.eval_env_runner_group.foreach_env_runner(
            lambda runner: runner.get_state()["rng"], local_env_runner=False
        )
        algo.train()
    assert open_checkpoint(path).has("eval_env_runner_1")
    with PPO.from_checkpoint(path) as restored:
        group = restored.eval_env_runner_group
        assert (
            group.foreach_env_runner(
                lambda runner: runner.get_state()["rng"], local_env_runner=False
            )
            == saved_rng
        )
        [weights] = group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        )
        for name, value in restored.get_weights().items():
            np.testing.assert_array_equal(weights[name], value)


class EnvWithEngine(gym.Env):
    """CartPole driven through an object the checkpoint cannot capture."""

    class Engine:
        pass

    def __init__(self, config=None):
        self.inner = gym.make("CartPole-v1")
        self.engine = self.Engine()
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed)

    def step(self, action):
        return self.inner.step(action)


def test_an_env_that_cannot_be_captured_restarts_its_episode_with_a_warning(tmp_path, caplog):
    config = small_ppo(env=EnvWithEngine).debugging(seed=0)
    with config.build() as algo:
        algo.train()
        with caplog.at_level(logging.WARNING, logger="trainer"):
            path = algo.save_to_path(tmp_path / "c")
        assert "EnvWithEngine.engine holds a" in caplog.text and "will restart" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="trainer"):
            algo.restore_from_path(path)
        assert "its episode restarts" in caplog.text
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 200


def test_checkpoint_manager_keeps_the_best_and_the_latest(tmp_path):
    config = small_ppo().checkpointing(
        checkpoint_frequency=1, num_to_keep=2, checkpoint_score_attribute="score/value"
    )
    manager = CheckpointManager.from_config(tmp_path / "run", config)
    scores = [5.0, 9.0, float("nan"), 7.0, 1.0]
    with config.build() as algo:
        for score in scores:
            result = algo.train()
            manager.on_train_result(algo, {**result, "score": {"value": score}})
        # Best two (iterations 2 and 4) plus the latest (5).
        kept = sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir())
        assert kept == ["checkpoint_000002", "checkpoint_000004", "checkpoint_000005"]
        assert manager.best().endswith("checkpoint_000002")
        assert manager.latest().endswith("checkpoint_000005")
        assert manager.on_end(algo) is None  # iteration 5 is saved already
    # A new manager reads the index back.
    again = CheckpointManager.from_config(tmp_path / "run", config)
    assert again.best() == manager.best() and again.latest() == manager.latest()


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"checkpoint_frequency": -1}, "checkpoint_frequency must be an int >= 0"),
        ({"num_to_keep": 0}, "num_to_keep must be None or an int >= 1"),
        ({"checkpoint_score_order": "best"}, "checkpoint_score_order must be one of"),
        ({"checkpoint_score_attribute": "a//b"}, "checkpoint_score_attribute must be None or"),
    ],
)
def test_bad_checkpointing_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        PPOConfig().checkpointing(**settings)


@pytest.mark.slow
def test_inspect_prints_metadata_components_and_sizes(saved_ppo, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "checkpoints", "inspect", str(saved_ppo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for expected in (
        "algorithm   PPO",
        "iteration 1",
        "env         CartPole-v1",
        "learner.msgpack",
        "learner: optimizer=",
        "modules     learner_group/learner/rl_module/<module_id> (default_policy)",
        "checksums verified",
    ):
        assert expected in done.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "checkpoints", "inspect", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "no such directory" in missing.stderr
