"""Checkpoints crafted by someone else: file names that lead outside the directory, FIFOs and
devices, malformed and inconsistent states. Each ends in `CheckpointError` (never a hang, a
`MemoryError` or another exception type) and leaves the algorithm's whole state bit-identical,
runner states included."""

import json
import os
import shutil
import threading

import numpy as np
import pytest
from checkpoints.codec import ARRAY_TAG, pack, unpack
from checkpoints.writer import file_digest
from helpers import small_ppo

from checkpoints import CheckpointError
from trainer.algorithms.algorithm import Algorithm
from trainer.checkpoints.json_files import sealed_json
from trainer.testing import assert_no_env_runner_processes


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint of PPO with one remote runner after 2 iterations, to copy and craft."""
    path = tmp_path_factory.mktemp("saved") / "ppo"
    with small_ppo(1).debugging(seed=0).build() as algo:
        algo.train()
        algo.train()
        algo.save_to_path(path)
    return path


@pytest.fixture(autouse=True)
def no_env_runner_orphans():
    """The shared algorithm below lives across this module's tests: its workers are checked
    once, when the module ends (`_module_leaves_no_orphans`)."""
    yield


@pytest.fixture(scope="module", autouse=True)
def _module_leaves_no_orphans():
    yield
    import gc

    gc.collect()
    assert_no_env_runner_processes()


@pytest.fixture(scope="module")
def algo():
    """One algorithm (another seed, 1 iteration) that every crafted checkpoint is tried on."""
    with small_ppo(1).debugging(seed=3).build() as algorithm:
        algorithm.train()
        yield algorithm


def _metadata(path):
    return json.loads((path / "metadata.json").read_text())


def _write_metadata(path, metadata):
    """Writes metadata.json sealed (its self_sha256 agrees): a deliberate forgery."""
    (path / "metadata.json").write_bytes(sealed_json(metadata))


def _declare(path, name, data):
    """Lists `name` in metadata.json with the size and digest of `data`."""
    metadata = _metadata(path)
    metadata["files"][name] = {"size": len(data), "sha256": file_digest(data)}
    _write_metadata(path, metadata)


def _rename_entry(path, old, new):
    metadata = _metadata(path)
    metadata["files"][new] = metadata["files"].pop(old)
    _write_metadata(path, metadata)


def _replace_state(path, component, change):
    """Rewrites `component`'s msgpack file with `change(state)` (raw msgpack data: arrays are
    maps), keeping metadata.json consistent: a deliberate, well-formed forgery."""
    import ormsgpack

    name = f"{component}.msgpack"
    state = ormsgpack.unpackb((path / name).read_bytes())
    data = ormsgpack.packb(change(state))
    (path / name).write_bytes(data)
    _declare(path, name, data)


def _replace_weights(path, change):
    """Rewrites the module's weights (its module checkpoint's module_state.msgpack, raw
    msgpack data) with `change(weights)`, keeping that directory's metadata.json and the
    digest the checkpoint's metadata.json records for it consistent: a deliberate forgery."""
    import ormsgpack

    module = path / "learner_group" / "learner" / "rl_module" / "default_policy"
    weights = ormsgpack.unpackb((module / "module_state.msgpack").read_bytes())
    data = ormsgpack.packb(change(weights))
    (module / "module_state.msgpack").write_bytes(data)
    _declare(module, "module_state.msgpack", data)
    metadata = _metadata(path)
    digest = file_digest((module / "metadata.json").read_bytes())
    metadata["module_checkpoints"]["metadata_sha256"]["default_policy"] = digest
    _write_metadata(path, metadata)


def _set(state, keys, value):
    node = state
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return state


def _array_map(array):
    return {ARRAY_TAG: array.dtype.str, "shape": list(array.shape), "data": array.tobytes()}


def _deep(depth):
    value = 1.0
    for _ in range(depth):
        value = [value]
    return value


def _outside_file(path):
    outside = path.parent / "outside.msgpack"
    outside.write_bytes(pack({"secret": 1}))
    return outside


def _symlink_out(path):
    outside = _outside_file(path)
    (path / "learner.msgpack").unlink()
    os.symlink(outside, path / "learner.msgpack")
    _declare(path, "learner.msgpack", outside.read_bytes())


def _symlink_dev_zero(path):
    (path / "learner.msgpack").unlink()
    os.symlink("/dev/zero", path / "learner.msgpack")


def _fifo(path):
    (path / "learner.msgpack").unlink()
    os.mkfifo(path / "learner.msgpack")


def _device_file(path):
    (path / "learner.msgpack").unlink()
    try:
        os.mknod(path / "learner.msgpack", 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero
    except PermissionError:
        # Without the right to make device nodes, a symlink inside the directory to a device
        # stands in: the reader must refuse what it resolves to, not only where it points.
        os.symlink("/dev/zero", path / "dev")
        os.symlink("dev", path / "learner.msgpack")


def _bad_name(name):
    def craft(path):
        _outside_file(path)
        _rename_entry(path, "learner.msgpack", name)

    return craft


def _huge_declared_size(path):
    metadata = _metadata(path)
    metadata["files"]["learner.msgpack"]["size"] = 1 << 40
    _write_metadata(path, metadata)


#: name -> (how to craft it, what the error must say)
CRAFTED = {
    # -- the reader stays inside the checkpoint --
    "dotdot name": (_bad_name("../outside.msgpack"), "must be plain names"),
    "absolute name": (
        lambda p: (
            _outside_file(p),
            _rename_entry(p, "learner.msgpack", str(p.parent / "outside.msgpack")),
        ),
        "must be plain names",
    ),
    "NUL in name": (_bad_name("learner.msgpack\0x"), "must be plain names"),
    "subdirectory name": (_bad_name("sub/learner.msgpack"), "must be plain names"),
    "symlink outside": (_symlink_out, "symlink leading outside the checkpoint"),
    "symlink to /dev/zero": (_symlink_dev_zero, "symlink leading outside the checkpoint"),
    "FIFO": (_fifo, "not a regular file (a FIFO)"),
    "device file": (_device_file, "not a regular file (a character device)"),
    "metadata.json a FIFO": (
        lambda p: ((p / "metadata.json").unlink(), os.mkfifo(p / "metadata.json")),
        "a FIFO",
    ),
    "declared size 1 TB": (_huge_declared_size, "learner.msgpack is truncated"),
    "metadata names another algorithm": (
        lambda p: _write_metadata(p, {**_metadata(p), "algorithm": "DQN"}),
        "a checkpoint of DQN (class PPO) cannot be loaded into PPO (a PPO)",
    ),
    # -- every malformed state --
    "shape larger than data": (
        lambda p: _replace_weights(p, lambda w: _set(w, [next(iter(w)), "shape"], [10**6, 10])),
        "needs 40000000 bytes",
    ),
    "object dtype": (
        lambda p: _replace_weights(p, lambda w: _set(w, [next(iter(w)), ARRAY_TAG], "|O")),
        "array dtype '|O'",
    ),
    "unknown dtype": (
        lambda p: _replace_weights(p, lambda w: _set(w, [next(iter(w)), ARRAY_TAG], "<q99")),
        "array dtype '<q99'",
    ),
    "array map without data": (
        lambda p: _replace_weights(
            p, lambda w: _set(w, [next(iter(w))], {ARRAY_TAG: "<f4", "shape": [2]})
        ),
        "needs exactly '__ndarray__', 'shape' and 'data'",
    ),
    "nesting too deep": (
        lambda p: _replace_state(p, "metrics", lambda s: _set(s, ["deep"], _deep(120))),
        "nested deeper than 64 levels",
    ),
    # -- inconsistent states --
    "integer weights": (
        lambda p: _replace_weights(
            p,
            lambda w: _set(
                w, [next(iter(w))], _array_map(np.zeros(w[next(iter(w))]["shape"], np.int32))
            ),
        ),
        "expected a float array",
    ),
    "NaN weights": (
        lambda p: _replace_weights(
            p,
            lambda w: _set(
                w,
                [next(iter(w))],
                _array_map(np.full(w[next(iter(w))]["shape"], np.nan, np.float32)),
            ),
        ),
        "NaN or infinite",
    ),
    "infinite optimizer moment": (
        lambda p: _replace_state(
            p,
            "learner",
            lambda s: _set(
                s,
                ["optimizer", "v"],
                _array_map(np.full(s["optimizer"]["v"]["shape"], np.inf, np.float32)),
            ),
        ),
        "NaN or infinite",
    ),
    "moments of another shape": (
        lambda p: _replace_state(
            p, "learner", lambda s: _set(s, ["optimizer", "m"], _array_map(np.ones(1, np.float32)))
        ),
        "does not match",
    ),
    "negative learning rate": (
        lambda p: _replace_state(p, "learner", lambda s: _set(s, ["optimizer", "lr"], -0.1)),
        "learner['optimizer']['lr']: must be at least 0",
    ),
    "step_count a string": (
        lambda p: _replace_state(p, "learner", lambda s: _set(s, ["optimizer", "step_count"], "7")),
        "expected an integer",
    ),
    "metric without its stats class": (
        lambda p: _replace_state(
            p,
            "metrics",
            lambda s: {
                "stats": {
                    key: {k: v for k, v in stats.items() if k != "stats_cls_identifier"}
                    for key, stats in s["stats"].items()
                }
            },
        ),
        "has no 'stats_cls_identifier'",
    ),
    "metric of an unknown stats class": (
        lambda p: _replace_state(
            p,
            "metrics",
            lambda s: _set(s, ["stats", next(iter(s["stats"])), "stats_cls_identifier"], "median"),
        ),
        "stats class 'median' is not in stats_cls_lookup",
    ),
    "non-numeric metric": (
        lambda p: _replace_state(
            p,
            "metrics",
            lambda s: _set(
                s,
                ["stats", next(k for k, v in s["stats"].items() if "values" in v), "values"],
                ["lots"],
            ),
        ),
        "a metric value must be a number",
    ),
    "bad runner state": (
        lambda p: _replace_state(p, "env_runner_1", lambda s: _set(s, ["global_timestep"], "soon")),
        "env_runner_1['global_timestep']",
    ),
    "bad runner episode": (
        lambda p: _replace_state(
            p, "env_runner_1", lambda s: _set(s, ["sampling", "episodes"], [{"id_": 3}])
        ),
        "env_runner_1['sampling']['episodes'][0]",
    ),
}


def _run_with_deadline(func, seconds=20.0):
    """Runs `func` in a thread; fails the test (not the whole run) if it hangs."""
    outcome = {}

    def target():
        try:
            outcome["value"] = func()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s (a hang)"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _state_bytes(algorithm):
    return pack(algorithm.get_state())


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_crafted_checkpoint_is_a_checkpoint_error_and_changes_nothing(
    tmp_path, saved, algo, case
):
    path = tmp_path / "crafted"
    shutil.copytree(saved, path, symlinks=True)
    craft, cause = CRAFTED[case]
    craft(path)
    before = _state_bytes(algo)
    restarts = algo.env_runner_group.num_remote_worker_restarts()
    with pytest.raises(CheckpointError) as error:
        _run_with_deadline(lambda: algo.restore_from_path(path))
    assert cause in str(error.value)
    assert _state_bytes(algo) == before
    assert algo.env_runner_group.num_remote_worker_restarts() == restarts
    with pytest.raises(
        CheckpointError,
        match=cause.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]"),
    ):
        _run_with_deadline(lambda: Algorithm.from_checkpoint(path, config=small_ppo(1)))


def test_the_untouched_checkpoint_loads(saved, algo, tmp_path):
    """The crafted cases fail for what was crafted, not for the copy: the original loads, with
    its runner state, and training goes on."""
    path = tmp_path / "copy"
    shutil.copytree(saved, path)
    with small_ppo(1).debugging(seed=3).build() as fresh:
        fresh.restore_from_path(path)
        assert fresh.iteration == 2
        runner_state = fresh.get_state()["env_runner_1"]
        assert (
            runner_state["global_timestep"]
            == unpack((path / "env_runner_1.msgpack").read_bytes())["global_timestep"]
        )
        assert fresh.train()["training_iteration"] == 3


@pytest.mark.slow
def test_a_runner_that_refuses_its_state_rolls_everything_back(tmp_path, saved):
    """A runner state that passes the driver's checks but that the runner's env refuses (here:
    a task its set_task rejects) ends in CheckpointError naming the component; the learner,
    metrics and counters already applied go back, bit for bit, and the runner keeps serving."""
    from helpers import LevelEnv  # noqa: F401 - the env class travels by import path

    class PickyLevelEnv(LevelEnv):
        def set_task(self, task):
            if task == 99:
                raise ValueError("level 99 does not exist")
            super().set_task(task)

    config = small_ppo(1).environment(PickyLevelEnv).debugging(seed=0)
    with config.build() as source:
        source.train()
        path = source.save_to_path(tmp_path / "levels")
    state = unpack((tmp_path / "levels" / "env_runner_1.msgpack").read_bytes())
    state["tasks"] = [99]
    data = pack(state)
    (tmp_path / "levels" / "env_runner_1.msgpack").write_bytes(data)
    _declare(tmp_path / "levels", "env_runner_1.msgpack", data)
    with config.debugging(seed=4).build() as target:
        target.train()
        target.train()
        before = pack(
            {k: v for k, v in target.get_state().items() if not k.startswith("env_runner_")}
        )
        with pytest.raises(CheckpointError, match="env_runner_1 could not be applied") as error:
            target.restore_from_path(path)
        assert "level 99 does not exist" in str(error.value)
        after = pack(
            {k: v for k, v in target.get_state().items() if not k.startswith("env_runner_")}
        )
        assert after == before
        assert target.iteration == 2
        assert target.train()["training_iteration"] == 3
