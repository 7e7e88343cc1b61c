"""No checkpoint path unpickles a pickle the user did not sign: `Algorithm.from_checkpoint(path)`
without a config, `python -m trainer evaluate CHECKPOINT` and `python -m trainer --resume` build
the algorithm from the checkpoint's plain-data config.json (code settings re-imported by
`module:name`) unless its pickled config carries the user's signature, and a planted
class_and_config.pkl runs nothing; `allow_pickle=True` / `--trust-pickle` opt in."""

import json
import pickle
import shutil
import subprocess
import sys

import pytest
from checkpoints.writer import file_digest
from helpers import EpisodeReturn, UnpicklingMarker, small_ppo

from checkpoints import CheckpointError
from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.ppo import PPO
from trainer.checkpoints.json_files import sealed_json


def _plant_pickle(checkpoint, marker):
    """Replaces class_and_config.pkl with a pickle that creates `marker` when loaded, and makes
    metadata.json agree: a deliberate forgery, not damage."""
    data = pickle.dumps(UnpicklingMarker(str(marker)))
    (checkpoint / "class_and_config.pkl").write_bytes(data)
    metadata = json.loads((checkpoint / "metadata.json").read_text())
    metadata["files"]["class_and_config.pkl"] = {"size": len(data), "sha256": file_digest(data)}
    (checkpoint / "metadata.json").write_bytes(sealed_json(metadata))


def test_from_checkpoint_rebuilds_the_config_from_plain_data(tmp_path):
    config = (
        small_ppo(1, lr=0.002)
        .callbacks(EpisodeReturn)
        .debugging(seed=3)
        .evaluation(evaluation_interval=5, evaluation_config={"explore": False})
    )
    with config.build() as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "c")
    stored = json.loads((tmp_path / "c" / "config.json").read_text())
    assert stored["algorithm_class"] == "trainer.algorithms.ppo.ppo:PPO"
    assert stored["settings"]["callbacks_class"] == {"__import__": "helpers:EpisodeReturn"}
    assert stored["unstored"] == []
    marker = tmp_path / "unpickled"
    _plant_pickle(tmp_path / "c", marker)
    with Algorithm.from_checkpoint(path) as restored:
        assert type(restored) is PPO and restored.iteration == 1
        assert restored.config.to_dict() == config.to_dict()
        assert restored.callbacks[0].__class__ is EpisodeReturn
        assert restored.train()["training_iteration"] == 2
    assert not marker.exists()


def test_code_without_an_import_path_from_someone_else_needs_config_or_an_opt_in(tmp_path):
    """The user's own checkpoint of a config with a lambda loads (its pickle is signed with
    the user's key, see test_signed_configs.py); an unsigned one, as from another user, is
    rebuilt from config.json, which cannot hold the lambda: refused, saying what to do."""
    calls = []
    config = small_ppo().callbacks(on_train_result=lambda **kw: calls.append(1))
    with config.build() as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "c")
    with Algorithm.from_checkpoint(path) as restored:
        assert restored.iteration == 1
    metadata = json.loads((tmp_path / "c" / "metadata.json").read_text())
    del metadata["config_signature"]
    (tmp_path / "c" / "metadata.json").write_bytes(sealed_json(metadata))
    with pytest.raises(CheckpointError) as error:
        Algorithm.from_checkpoint(path)
    message = str(error.value)
    assert "config['callbacks_on']['on_train_result'][0]" in message
    assert "Pass config=" in message and "allow_pickle=True" in message
    assert f"python -m trainer trust {path}" in message and "it is unsigned" in message
    with Algorithm.from_checkpoint(path, config=config) as restored:
        assert restored.iteration == 1
    with Algorithm.from_checkpoint(path, allow_pickle=True) as restored:
        assert restored.iteration == 1


def test_a_config_json_naming_something_that_is_not_an_algorithm_is_refused(tmp_path):
    with small_ppo().build() as algo:
        path = algo.save_to_path(tmp_path / "c")
    stored = json.loads((tmp_path / "c" / "config.json").read_text())
    stored["algorithm_class"] = "os:system"
    data = json.dumps(stored).encode()
    (tmp_path / "c" / "config.json").write_bytes(data)
    metadata = json.loads((tmp_path / "c" / "metadata.json").read_text())
    metadata["files"]["config.json"] = {"size": len(data), "sha256": file_digest(data)}
    # Unsigned (as a checkpoint from someone else): its config comes from config.json.
    del metadata["config_signature"]
    (tmp_path / "c" / "metadata.json").write_bytes(sealed_json(metadata))
    with pytest.raises(CheckpointError, match="'os:system' is not a subclass of Algorithm"):
        Algorithm.from_checkpoint(path)


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "trainer", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


SMALL = [
    "--num-env-runners",
    "0",
    "--train-batch-size",
    "200",
    "--minibatch-size",
    "100",
    "--num-epochs",
    "1",
    "--hiddens",
    "8",
]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli") / "run"
    done = _cli(
        *SMALL,
        "--stop-iters",
        "2",
        "--checkpoint-frequency",
        "1",
        "--output-dir",
        str(directory),
        cwd=directory.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return directory


@pytest.mark.slow
def test_evaluate_and_resume_never_unpickle_a_planted_file(run_folder, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run_folder, run)
    marker = tmp_path / "unpickled"
    for checkpoint in run.glob("checkpoint_*"):
        _plant_pickle(checkpoint, marker)
    evaluated = _cli(
        "evaluate", str(run / "checkpoint_000002"), "--episodes", "1", "--json", cwd=tmp_path
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["num_episodes"] == 1
    resumed = _cli("--resume", "--output-dir", str(run), "--stop-iters", "3", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "at iteration 2" in resumed.stdout
    assert not marker.exists()
    # The explicit opt-in reads the pickle (this planted one is not a class and config).
    trusted = _cli("evaluate", str(run / "checkpoint_000002"), "--trust-pickle", cwd=tmp_path)
    assert trusted.returncode != 0 and "cannot be unpickled" in trusted.stderr
    assert marker.exists()
