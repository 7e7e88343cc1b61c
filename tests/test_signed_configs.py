"""Signed pickled configs: a checkpoint's class_and_config.pkl carries an HMAC made with the
user's key, so `Algorithm.from_checkpoint(path)` loads the user's own checkpoints whose config
holds a class defined in `__main__` or a lambda (as RLlib does), refuses one signed with another
key (or unsigned) naming `python -m trainer trust PATH`, and loads it once trusted. The key file
is created on first use, private, and refused when others can read it."""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainer.algorithms.algorithm import Algorithm
from trainer.checkpoints import CheckpointError
from trainer.checkpoints.signing import (
    CONFIG_DIR_ENV,
    KEY_FILE_ENV,
    KeyFileError,
    check_signature,
    key_file_path,
    load_key,
    sign,
)

REPOSITORY = str(Path(__file__).resolve().parents[1])

#: A user's script: saves a checkpoint of PPO whose callbacks class is defined in __main__ and
#: whose on_train_result is a lambda; run again with `load`, reads it back without a config.
SCRIPT = textwrap.dedent(
    """
    import sys

    from trainer.algorithms.algorithm import Algorithm
    from trainer.algorithms.ppo import PPOConfig
    from trainer.callbacks import RLlibCallback


    class CountIterations(RLlibCallback):
        def on_train_result(self, *, algorithm, result, **kwargs):
            result["counted_by_main"] = True


    mode, path = sys.argv[1], sys.argv[2]
    if mode == "save":
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0)
            .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [8]})
            .callbacks(CountIterations, on_train_result=lambda **kw: None)
        )
        with config.build() as algo:
            algo.train()
            algo.save_to_path(path)
    else:
        with Algorithm.from_checkpoint(path) as algo:
            result = algo.train()
            print("loaded", type(algo.callbacks[0]).__name__, result["training_iteration"],
                  result["counted_by_main"])
    """
)


def _run(*args, key_file, cwd, script=None):
    env = {**os.environ, KEY_FILE_ENV: str(key_file), "PYTHONPATH": REPOSITORY}
    command = [sys.executable, str(script), *args] if script else [sys.executable, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_own_main_module_config_loads_another_keys_needs_trust(tmp_path, monkeypatch):
    script = tmp_path / "my_script.py"
    script.write_text(SCRIPT)
    path = tmp_path / "checkpoint"
    key_a, key_b = tmp_path / "a" / "checkpoint.key", tmp_path / "b" / "checkpoint.key"
    saved = _run("save", str(path), key_file=key_a, cwd=tmp_path, script=script)
    assert saved.returncode == 0, saved.stderr
    assert stat.S_IMODE(key_a.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_a.parent.stat().st_mode) == 0o700
    # A second run of the same user's script loads it, with no allow_pickle (as in RLlib).
    loaded = _run("load", str(path), key_file=key_a, cwd=tmp_path, script=script)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["loaded", "CountIterations", "2", "True"]
    # Another user (key B): refused, naming how to trust it.
    monkeypatch.setenv(KEY_FILE_ENV, str(key_b))
    with pytest.raises(CheckpointError) as error:
        Algorithm.from_checkpoint(path)
    message = str(error.value)
    assert f"python -m trainer trust {path}" in message and "allow_pickle=True" in message
    assert "signed with another key" in message and "__main__" in message
    trusted = _run("-m", "trainer", "trust", str(path), key_file=key_b, cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr
    pickle_entry = json.loads((path / "metadata.json").read_text())["files"]
    assert pickle_entry["class_and_config.pkl"]["sha256"] in trusted.stdout
    assert "class_and_config.pkl" in trusted.stdout and "PPO" in trusted.stdout
    assert "signed with another key" in trusted.stdout and "trusted: re-signed" in trusted.stdout
    with Algorithm.from_checkpoint(path) as algo:
        assert type(algo.callbacks[0]).__name__ == "CountIterations" and algo.iteration == 1
    again = _run("-m", "trainer", "trust", str(path), key_file=key_b, cwd=tmp_path)
    assert again.returncode == 0 and "already trusted" in again.stdout
    # Now key A's user is the stranger.
    monkeypatch.setenv(KEY_FILE_ENV, str(key_a))
    with pytest.raises(CheckpointError, match="signed with another key"):
        Algorithm.from_checkpoint(path)
    with Algorithm.from_checkpoint(path, allow_pickle=True) as algo:
        assert algo.iteration == 1


@pytest.mark.slow
def test_trust_refuses_a_damaged_checkpoint_and_changes_nothing(tmp_path):
    path = tmp_path / "c"
    path.mkdir()
    (path / "metadata.json").write_text("{")
    done = _run("-m", "trainer", "trust", str(path), key_file=tmp_path / "k", cwd=tmp_path)
    assert done.returncode == 1 and "metadata.json is damaged" in done.stderr
    assert (path / "metadata.json").read_text() == "{"


def test_the_key_file_is_created_private_and_found_by_the_settings(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    assert key_file_path() == str(tmp_path / "config" / "checkpoint.key")
    key = load_key()
    assert len(key) == 32 and load_key() == key
    assert stat.S_IMODE(os.stat(key_file_path()).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "config").st_mode) == 0o700
    assert os.listdir(tmp_path / "config") == ["checkpoint.key"]  # no temporary left
    monkeypatch.delenv(CONFIG_DIR_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert key_file_path() == str(tmp_path / "xdg" / "localrl" / "checkpoint.key")
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "mine.key"))
    assert key_file_path() == str(tmp_path / "mine.key")


def test_a_key_file_others_can_read_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "k" / "checkpoint.key"))
    load_key()
    os.chmod(key_file_path(), 0o644)
    with pytest.raises(KeyFileError) as error:
        load_key()
    message = str(error.value)
    assert key_file_path() in message and "mode 0644" in message
    assert f"chmod 600 {key_file_path()}" in message
    (tmp_path / "k" / "checkpoint.key").write_text("not hex")
    os.chmod(key_file_path(), 0o600)
    with pytest.raises(KeyFileError, match="does not hold 32 bytes as hex"):
        load_key()


def test_signatures_of_the_wrong_shape_are_not_valid(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "checkpoint.key"))
    data = b"pickle bytes"
    good = sign(data)
    assert check_signature(data, good).valid
    assert not check_signature(data + b"!", good).valid
    assert check_signature(data, None).reason == "it is unsigned"
    for wrong in (
        1,
        "x",
        [],
        {},
        {**good, "hmac": 5},
        {**good, "key_id": None},
        {**good, "scheme": "md5"},
    ):
        assert not check_signature(data, wrong).valid


def test_a_save_with_an_unusable_key_is_unsigned_and_says_so(tmp_path, monkeypatch, caplog):
    from helpers import small_ppo

    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "checkpoint.key"))
    load_key()
    os.chmod(key_file_path(), 0o640)
    config = small_ppo().callbacks(on_train_result=lambda **kw: None)
    with config.build() as algo:
        with caplog.at_level("WARNING", logger="trainer"):
            path = algo.save_to_path(tmp_path / "c")
    assert "its config is not signed" in caplog.text and "mode 0640" in caplog.text
    assert "config_signature" not in json.loads((tmp_path / "c" / "metadata.json").read_text())
    with pytest.raises(CheckpointError, match="not unpickled since it is unsigned"):
        Algorithm.from_checkpoint(path)
    from trainer.checkpoints.trust import trust_checkpoint

    with pytest.raises(KeyFileError, match=f"chmod 600 {key_file_path()}"):
        trust_checkpoint(path)
    os.chmod(key_file_path(), 0o600)
    trust_checkpoint(path)
    with Algorithm.from_checkpoint(path) as algo:
        assert algo.iteration == 0


def _key_in_a_child(key_file, queue):
    os.environ[KEY_FILE_ENV] = key_file
    queue.put(load_key().hex())


def test_processes_creating_the_key_at_once_end_with_the_same_key(tmp_path):
    import multiprocessing

    key_file = tmp_path / "fresh" / "checkpoint.key"
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [
        context.Process(target=_key_in_a_child, args=(str(key_file), queue)) for _ in range(6)
    ]
    for child in children:
        child.start()
    keys = {queue.get(timeout=30) for _ in children}
    for child in children:
        child.join(timeout=30)
    assert len(keys) == 1 and bytes.fromhex(keys.pop()) == bytes.fromhex(key_file.read_text())
    assert os.listdir(key_file.parent) == ["checkpoint.key"]
