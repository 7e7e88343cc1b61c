"""A checkpoint is verified whole before anything is loaded: a bit flip or a truncation of any
of its files (metadata.json, config.json, the pickle, every state file, the module checkpoints'
files) is a `CheckpointError` naming that file, from `restore_from_path` and `from_checkpoint`
alike, and a failed restore changes nothing. Hostile JSON (nested 100,000 deep, huge, not UTF-8,
fields of the wrong type) is a `CheckpointError` too, never another exception."""

import json
import os
import shutil

import pytest
from helpers import small_ppo

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.checkpointing import open_algorithm_checkpoint
from trainer.checkpoints import CheckpointError, open_checkpoint
from trainer.checkpoints.json_files import (
    MAX_JSON_DEPTH,
    SEAL_KEY,
    check_seal,
    json_depth,
    parse_json,
    sealed_json,
)
from trainer.checkpoints.writer import file_digest


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A PPO CartPole checkpoint (no remote runners, 1 iteration) to copy and damage."""
    path = tmp_path_factory.mktemp("integrity") / "ppo"
    with small_ppo().debugging(seed=0).build() as algo:
        algo.train()
        algo.save_to_path(path)
    return path


@pytest.fixture(scope="module")
def algo():
    """The algorithm every damaged checkpoint is restored into (another seed)."""
    with small_ppo().debugging(seed=3).build() as algorithm:
        yield algorithm


@pytest.fixture(autouse=True)
def no_env_runner_orphans():
    """The shared algorithm lives across this module's tests (no remote runners to check)."""
    yield


def _all_files(root):
    """Every file of the checkpoint tree, as paths relative to it."""
    return sorted(
        os.path.relpath(os.path.join(directory, name), root)
        for directory, _, names in os.walk(root)
        for name in names
    )


def _flip_bit(file):
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x04
    file.write_bytes(bytes(data))


def _truncate(file):
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _same_weights(a, b):
    return all((a[name] == b[name]).all() for name in a) and set(a) == set(b)


def _write_sealed(path, metadata):
    (path / "metadata.json").write_bytes(sealed_json(metadata))


def test_every_file_of_a_checkpoint_is_listed_or_covered(saved):
    """metadata.json lists each top-level file; the module checkpoints are covered through the
    SHA-256 of their metadata.json, each of which lists its own files."""
    metadata = json.loads((saved / "metadata.json").read_text())
    modules = metadata["module_checkpoints"]
    top = {name for name in _all_files(saved) if os.sep not in name}
    assert set(metadata["files"]) == top - {"metadata.json"}
    assert {"config.json", "class_and_config.pkl"} <= set(metadata["files"])
    multi = saved / modules["path"]
    assert modules["multi_rl_module_metadata_sha256"] == file_digest(
        (multi / "metadata.json").read_bytes()
    )
    for module_id, digest in modules["metadata_sha256"].items():
        module_metadata = (multi / module_id / "metadata.json").read_bytes()
        assert digest == file_digest(module_metadata)
        assert set(json.loads(module_metadata)["files"]) == set(os.listdir(multi / module_id)) - {
            "metadata.json"
        }
    connectors = metadata["connector_checkpoints"]
    assert set(connectors) == {
        "env_runner/env_to_module_connector",
        "env_runner/module_to_env_connector",
    }
    for relative, digest in connectors.items():
        connector_metadata = (saved / relative / "metadata.json").read_bytes()
        assert digest == file_digest(connector_metadata)
        state = (saved / relative / "state.msgpack").read_bytes()
        assert json.loads(connector_metadata)["state_sha256"] == file_digest(state)
    assert check_seal(str(saved), "metadata.json", (saved / "metadata.json").read_bytes())


@pytest.mark.parametrize("damage", [_flip_bit, _truncate], ids=["bit flip", "truncation"])
def test_damage_to_any_file_is_refused_naming_it_and_changes_nothing(tmp_path, saved, algo, damage):
    before = algo.get_weights()
    iteration = algo.iteration
    for relative in _all_files(saved):
        path = tmp_path / relative.replace(os.sep, "_")
        shutil.copytree(saved, path)
        damage(path / relative)
        name = os.path.basename(relative)
        folder = os.path.dirname(relative)
        for load in (
            lambda path=path: algo.restore_from_path(path),
            lambda path=path: Algorithm.from_checkpoint(path),
            lambda path=path: Algorithm.from_checkpoint(path, config=small_ppo()),
        ):
            with pytest.raises(CheckpointError) as error:
                load()
            message = str(error.value)
            assert name in message and folder in message, (relative, message)
        assert _same_weights(algo.get_weights(), before) and algo.iteration == iteration
        shutil.rmtree(path)


@pytest.mark.slow
def test_every_single_byte_change_of_metadata_json_is_refused(tmp_path, saved):
    """metadata.json is sealed with its own SHA-256: a flip of any bit of any byte (one bit per
    byte, cycling through the 8) is caught before its contents are used."""
    path = tmp_path / "c"
    shutil.copytree(saved, path)
    original = (path / "metadata.json").read_bytes()
    for index in range(len(original)):
        data = bytearray(original)
        data[index] ^= 1 << (index % 8)
        (path / "metadata.json").write_bytes(bytes(data))
        with pytest.raises(CheckpointError, match="metadata.json"):
            open_checkpoint(path)
    (path / "metadata.json").write_bytes(original)
    assert open_checkpoint(path).metadata["algorithm"] == "PPO"


def _nested(depth):
    return "[" * depth + "]" * depth


def test_json_nested_100000_deep_is_refused_before_parsing(tmp_path, saved, algo):
    before = algo.get_weights()
    path = tmp_path / "deep_metadata"
    shutil.copytree(saved, path)
    metadata = json.loads((path / "metadata.json").read_text())
    text = sealed_json({**metadata, "spaces": "PLACEHOLDER"})
    (path / "metadata.json").write_bytes(text.replace(b'"PLACEHOLDER"', _nested(100_000).encode()))
    for load in (lambda: algo.restore_from_path(path), lambda: Algorithm.from_checkpoint(path)):
        with pytest.raises(CheckpointError, match="metadata.json is damaged"):
            load()
    # config.json, consistently declared (a forgery) and unsigned, so it is read.
    path = tmp_path / "deep_config"
    shutil.copytree(saved, path)
    data = b'{"settings": ' + _nested(100_000).encode() + b"}"
    (path / "config.json").write_bytes(data)
    metadata = json.loads((path / "metadata.json").read_text())
    metadata["files"]["config.json"] = {"size": len(data), "sha256": file_digest(data)}
    del metadata["config_signature"]
    _write_sealed(path, metadata)
    with pytest.raises(CheckpointError, match="config.json is damaged: nested 100001 levels"):
        Algorithm.from_checkpoint(path)
    assert _same_weights(algo.get_weights(), before)


def test_json_bounds_are_checked_on_the_bytes():
    assert json_depth(b'{"a": [1, {"b": "[[[[{{{"}]}') == 3
    assert json_depth(b'"\\"[[[["') == 0
    assert json_depth(_nested(MAX_JSON_DEPTH).encode()) == MAX_JSON_DEPTH
    assert parse_json("c", "x.json", _nested(MAX_JSON_DEPTH).encode()) is not None
    for data, cause in (
        (_nested(MAX_JSON_DEPTH + 1).encode(), "nested 101 levels deep"),
        (b"\xff\xfe{", "not JSON"),
        (b'{"a": 1', "not JSON"),
        (b"[" + b"1," * 1000 + b"1]", "larger than 1000 bytes"),
    ):
        with pytest.raises(CheckpointError, match=cause) as error:
            parse_json("c", "x.json", data, max_bytes=1000)
        assert "x.json" in str(error.value)


#: Values of the wrong type for any field.
_WRONG = [None, 0, -1, True, 1.5, "x", [], [1], {}, {"a": None}]


def test_fields_of_the_wrong_type_are_checkpoint_errors(tmp_path, saved, algo):
    """Every top-level field of metadata.json, and each field of its entries, set to values of
    every wrong type (sealed, so they reach the loader): restore_from_path either loads or
    raises CheckpointError, never KeyError, TypeError or another exception."""
    path = tmp_path / "c"
    shutil.copytree(saved, path)
    original = json.loads((path / "metadata.json").read_text())
    places = [(key,) for key in original if key != SEAL_KEY]
    places += [("files", name) for name in original["files"]]
    places += [("files", "learner.msgpack", "size"), ("files", "learner.msgpack", "sha256")]
    places += [("module_checkpoints", key) for key in original["module_checkpoints"]]
    places += [("module_checkpoints", "metadata_sha256", "default_policy")]
    places += [("config_signature", key) for key in original["config_signature"]]
    refused = 0
    for place in places:
        for value in _WRONG:
            metadata = json.loads(json.dumps(original))
            node = metadata
            for key in place[:-1]:
                node = node[key]
            node[place[-1]] = value
            _write_sealed(path, metadata)
            try:
                algo.restore_from_path(path)
            except CheckpointError:
                refused += 1
    assert refused > len(places) * len(_WRONG) // 2


def test_a_checkpoint_of_format_version_1_loads_unsealed(tmp_path, saved, algo):
    """A checkpoint written before metadata.json was sealed (format version 1) still loads: its
    files are verified by their SHA-256; a version 2 one without its seal is refused."""
    path = tmp_path / "c"
    shutil.copytree(saved, path)
    metadata = json.loads((path / "metadata.json").read_text())
    del metadata[SEAL_KEY]
    (path / "metadata.json").write_text(json.dumps({**metadata, "format_version": 2}))
    with pytest.raises(CheckpointError, match="metadata.json is damaged: it has no self_sha256"):
        algo.restore_from_path(path)
    (path / "metadata.json").write_text(json.dumps({**metadata, "format_version": 1}))
    checkpoint = open_algorithm_checkpoint(str(path))
    assert checkpoint.metadata["format_version"] == 1 and checkpoint.module_weights
    algo.restore_from_path(path)
    assert algo.iteration == 1


@pytest.mark.parametrize(
    "place, value",
    [
        (("unstored",), True),
        (("settings",), "x"),
        (("settings", "env"), None),
        (("settings", "train_batch_size"), {"__import__": 5}),
        (("algorithm_class",), ["trainer.algorithms.ppo.ppo:PPO"]),
    ],
)
def test_a_crafted_config_json_is_a_checkpoint_error(tmp_path, saved, place, value):
    """config.json, consistently declared and unsigned (so from_checkpoint reads it), with a
    field of the wrong type: a CheckpointError, whether it fails as data or at the build."""
    path = tmp_path / "c"
    shutil.copytree(saved, path)
    config = json.loads((path / "config.json").read_text())
    node = config
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    data = json.dumps(config).encode()
    (path / "config.json").write_bytes(data)
    metadata = json.loads((path / "metadata.json").read_text())
    metadata["files"]["config.json"] = {"size": len(data), "sha256": file_digest(data)}
    del metadata["config_signature"]
    _write_sealed(path, metadata)
    with pytest.raises(CheckpointError, match=str(path)):
        Algorithm.from_checkpoint(path)


def test_a_module_checkpoint_with_a_crafted_constructor_is_a_checkpoint_error(tmp_path, saved):
    from trainer.core.rl_module import RLModule

    path = tmp_path / "c"
    shutil.copytree(saved, path)
    module = path / "learner_group" / "learner" / "rl_module" / "default_policy"
    metadata = json.loads((module / "metadata.json").read_text())
    metadata["constructor"] = {"no_such_argument": None}
    _write_sealed(module, metadata)
    with pytest.raises(CheckpointError, match="has no valid 'constructor' entry"):
        RLModule.from_checkpoint(module)
