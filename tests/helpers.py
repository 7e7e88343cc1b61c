import fcntl
import importlib.machinery
import math
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from callbacks import RLlibCallback
from trainer import PPOConfig, TaskSettableEnv
from trainer.named_objects import get_named_object


def small_ppo(num_env_runners: int = 0, env: str = "CartPole-v1", **training) -> PPOConfig:
    """A PPO config that trains in a fraction of a second: small batch, small net, one epoch."""
    settings = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1}
    settings.update(training)
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )


def run_code(code: str, timeout: float = 300) -> list[str]:
    """The words `code` (dedented) prints, run in a fresh Python from the tests folder (so that
    it imports `helpers`); its exit status must be 0."""
    import textwrap

    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def trained_weights(config: Any, iterations: int) -> dict:
    """The weights of an algorithm built from `config` after `iterations` of `train()` (the
    algorithm stopped)."""
    algo = config.build()
    try:
        for _ in range(iterations):
            algo.train()
        return algo.get_weights()
    finally:
        algo.stop()


def continued_after_restore(make_runner: Any, first: int, then: int) -> tuple[list, list]:
    """(what a runner samples in `then` env steps after `first`; what a second runner, given
    the first one's state after those `first`, samples in `then`): two runners made by
    `make_runner()`, both stopped."""
    runner, restored = make_runner(), make_runner()
    try:
        runner.sample(num_timesteps=first)
        state = runner.get_state()
        expected = runner.sample(num_timesteps=then)
        restored.set_state(state)
        return expected, restored.sample(num_timesteps=then)
    finally:
        runner.stop()
        restored.stop()


def assert_same_weights(expected: dict, actual: dict) -> None:
    """Every weight of `expected` equals `actual`'s of the same name, bit for bit."""
    for name, values in expected.items():
        np.testing.assert_array_equal(values, actual[name], err_msg=name)


class HangingResetEnv(gym.Env):
    """Hangs in reset() (as an env waiting for a simulator that never answers)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        pass

    def reset(self, *, seed=None, options=None):
        time.sleep(3600)

    def step(self, action):
        raise AssertionError("never reached")


class LevelEnv(TaskSettableEnv):
    """A task-settable env whose difficulty shows in the returns: 10 steps per episode, each
    rewarded 1 / (1 + level), with the level read at reset (so an episode keeps its level).
    With env_config["count_steps_in"], every step increments that named object (without waiting
    with env_config["count_with_remote"])."""

    def __init__(self, config=None):
        config = config or {}
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.level = config.get("level", 0)
        self._episode_level = self.level
        self._t = 0
        self._counter_name = config.get("count_steps_in")
        self._count_with_remote = config.get("count_with_remote", False)
        # env_config["crash_at_step"]: step N raises, unless this sub-env is a re-created one.
        recreated = getattr(config, "recreated_worker", False)
        self._crash_at = None if recreated else config.get("crash_at_step")
        self._steps = 0

    def get_task(self):
        return self.level

    def set_task(self, task):
        self.level = task

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._episode_level = self.level
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._t += 1
        self._steps += 1
        if self._steps == self._crash_at:
            raise RuntimeError(f"LevelEnv crashed at step {self._steps}")
        if self._counter_name:
            counter = get_named_object(self._counter_name)
            if self._count_with_remote:
                counter.inc.remote(1)  # Ray's spelling: does not wait
            else:
                counter.inc(1)
        reward = 1.0 / (1 + self._episode_level)
        return np.full(2, self._t / 10, np.float32), reward, False, self._t >= 10, {}


def train_until(
    algo: Any, target: float, seconds: float | None = None, *, iterations: int | None = None
) -> tuple[list[float], dict]:
    """Trains `algo` until its `env_runners/episode_return_mean` reaches `target`, or `iterations`
    ran, or `seconds` passed: (the returns of every iteration, NaN where no episode ended; the
    last result). A learning check gives `iterations` alone, so that its outcome does not hang on
    how many iterations a busy machine fits in the seconds (pytest's timeout catches a hang)."""
    if seconds is None and iterations is None:
        raise ValueError("train_until: give iterations, seconds or both")
    returns: list[float] = []
    result: dict = {}
    deadline = None if seconds is None else time.monotonic() + seconds
    while (deadline is None or time.monotonic() < deadline) and (
        iterations is None or len(returns) < iterations
    ):
        result = algo.train()
        returns.append(result["env_runners"].get("episode_return_mean", math.nan))
        if returns[-1] >= target:
            break
    return returns, result


def trained_env_steps(result: dict) -> int:
    """The env steps the learner trained on so far, as an iteration's `result` reports them."""
    return result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"]


def results_until_trained(
    algo: Any,
    env_steps: int,
    *,
    at_least: int = 1,
    at_most: int,
    done: Callable[[dict], bool] | None = None,
) -> list[dict]:
    """Trains `algo` for `at_least` iterations and on until its learner has trained on
    `env_steps` env steps, at most `at_most` iterations, or until `done(result)` holds (after
    `at_least`): the results of every iteration. For IMPALA's and APPO's learner thread,
    which trains less in the same sampled env steps on a busy machine: a learning check waits
    for the training it needs, not for a count of iterations."""
    results: list[dict] = []
    trained = 0
    while len(results) < at_least or (trained < env_steps and len(results) < at_most):
        result = algo.train()
        results.append(result)
        trained = trained_env_steps(result)
        if done is not None and len(results) >= at_least and done(result):
            break
    return results


def returns_until_trained(
    algo: Any, env_steps: int, *, at_least: int = 1, at_most: int
) -> tuple[list[float], int]:
    """`results_until_trained`'s mean episode returns, and the env steps trained."""
    results = results_until_trained(algo, env_steps, at_least=at_least, at_most=at_most)
    returns = [result["env_runners"]["episode_return_mean"] for result in results]
    return returns, trained_env_steps(results[-1])


def level_return(level: int) -> float:
    return 10.0 / (1 + level)


class EpisodeReturn(RLlibCallback):
    """A callback class importable by path (`helpers:EpisodeReturn`): counts finished episodes
    in the EnvRunners' metrics."""

    def on_episode_end(self, *, metrics_logger, **kwargs):
        metrics_logger.log_value("episodes_counted", 1, reduce="sum")


class UnpicklingMarker:
    """Unpickling this creates the file `marker`: proof that something was unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


class RaisingStepEnv(gym.Env):
    """An env whose every step raises `ValueError(RaisingStepEnv.MESSAGE)`."""

    MESSAGE = "the env's own error"
    observation_space = gym.spaces.Box(-1, 1, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        raise ValueError(self.MESSAGE)


class StallOnceEnv(gym.Env):
    """CartPole whose EnvRunner 1 stalls (sleeps 600 s) at its 20th step, unless that runner
    was re-created."""

    def __init__(self, config=None):
        self.inner = gym.make("CartPole-v1")
        self.observation_space, self.action_space = (
            self.inner.observation_space,
            self.inner.action_space,
        )
        self.stalls = config.worker_index == 1 and not config.recreated_worker
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.stalls and self.steps == 20:
            import time

            time.sleep(600)
        return self.inner.step(action)


class RecordRecreated(RLlibCallback):
    """Records every `on_env_runners_recreated` as (indices, is_evaluation) in the class's
    `calls` (shared by the per-runner instances; reset it before a test)."""

    calls: list = []

    def on_env_runners_recreated(self, *, env_runner_indices, is_evaluation, **kwargs):
        RecordRecreated.calls.append((list(env_runner_indices), is_evaluation))


def blas_threads() -> list[int]:
    """The sizes of numpy's BLAS thread pools in this process."""
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def blas_threads_seen(monkeypatch, owner: type, name: str, run) -> list[list[int]]:
    """Calls `run()` with numpy's BLAS pools at 2 threads; returns the pool sizes each call of
    `owner.name` saw. The pools are back at 2 afterwards."""
    from threadpoolctl import threadpool_limits

    seen = []
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        seen.append(blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    with threadpool_limits(limits=2, user_api="blas"):
        run()
        assert blas_threads() and set(blas_threads()) == {2}
    return seen


# -- RLlib's own files, read from the installed Ray wheel ------------------------------------------
def rllib_source(relative: str, *, module_level: bool = False) -> Path:
    """A file of the installed Ray 2.60 wheel's `rllib/` (`relative` to it), found on sys.path
    only: nothing is imported, and a `ray` stand-in in sys.modules is ignored. Skips the test
    (the module with `module_level`) where the wheel is not installed."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "needs the Ray 2.60 wheel (the test extra: pip install -e '.[test]') for RLlib's files",
            allow_module_level=module_level,
        )
    return Path(next(iter(spec.submodule_search_locations))) / "rllib" / relative


def rllib_example(relative: str) -> Path:
    """A script of the installed Ray 2.60 wheel's `rllib/examples` (read from disk)."""
    return rllib_source(f"examples/{relative}")


def exec_rllib_source(path: Path, fake_modules: dict[str, dict[str, Any]], name: str) -> dict:
    """The namespace of RLlib's module at `path`, its body run with its imports served by
    stand-in modules (`fake_modules`: module name -> attributes) only while it runs:
    `sys.modules` is left as it was."""
    saved = {module_name: sys.modules.get(module_name) for module_name in fake_modules}
    try:
        for module_name, attributes in fake_modules.items():
            module = types.ModuleType(module_name)
            module.__dict__.update(attributes)
            sys.modules[module_name] = module
        namespace: dict = {"__name__": name}
        exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    finally:
        for module_name, module in saved.items():
            if module is None:
                sys.modules.pop(module_name, None)
            else:
                sys.modules[module_name] = module
    return namespace


def assert_plain_data(value: Any, where: str = "state") -> None:
    """`value` holds only what msgpack stores without pickle: dicts with plain keys, lists,
    numbers, strings, None and numpy arrays."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str | int | float | bool), f"{where}: key {key!r}"
            assert_plain_data(item, f"{where}[{key!r}]")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            assert_plain_data(item, f"{where}[{i}]")
    else:
        assert value is None or isinstance(value, str | int | float | bool | np.ndarray), (
            f"{where}: {type(value)}"
        )


#: Slots that stay in their process.
_LOCAL = {"_env_runner"}


def _slots(obj: Any) -> list[str]:
    return [name for cls in type(obj).__mro__ for name in getattr(cls, "__slots__", ())]


def assert_same_objects(a: Any, b: Any, where: str = "value") -> None:
    """Exact equality of two object trees (episodes, their states): types, slots (but those
    that stay in their process), dict order and default factories, arrays by dtype, shape and
    value, floats bit for bit (NaN equal to NaN)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{where}: {a.dtype}{a.shape} vs {b.shape}"
        )
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), f"{where}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        assert getattr(a, "default_factory", None) is getattr(b, "default_factory", None)
        for key in a:
            assert_same_objects(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_objects(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    elif _slots(a) and not isinstance(a, gym.Space):
        for name in _slots(a):
            if name not in _LOCAL:
                assert_same_objects(getattr(a, name), getattr(b, name), f"{where}.{name}")
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def run_rllib_script(script: str, *args: str, timeout: float) -> None:
    """Runs `script`, a program of real RLlib 2.60's (the test extra installs it), in a fresh
    interpreter without this project's LOCALRL_ settings; asserts that it ended by printing
    "saved". Its torch computes on one thread unless the environment sizes the pools: on a
    busy 2-core machine RLlib's small updates on two threads took up to 8 times as long
    (tests/test_rllib_checkpoints.py's script: 20 s on one thread, 24 to 50 s on two)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRL_")}
    env.setdefault("OMP_NUM_THREADS", "1")
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0 and "saved" in done.stdout, done.stderr[-3000:]


def written_once(tmp_path_factory: Any, name: str, write: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `write(folder)` once per test run: the pytest-xdist
    workers of one run share it (the first to take its lock writes it, the others wait for
    it and read it). For what costs seconds to make, such as outputs of real RLlib."""
    run_folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's folder: the run's is its parent
        run_folder = run_folder.parent
    folder = run_folder / name
    with open(run_folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
        if not (folder / ".written").is_file():
            folder.mkdir(exist_ok=True)
            write(folder)
            (folder / ".written").touch()
    return folder


def assert_steps_time_one_torch_thread_against_two(config: Any, small: Any, env: Any) -> None:
    """`config`'s torch learner (for `env`) times each minibatch step on one thread against
    two (`AdaptiveTorchThreads`, the update leaving the pool to the steps), a seeded one stays
    on one, and `small`'s keeps one thread for its whole update. Driven: with the policy held
    at two threads, an iteration's steps run on torch's pool (two threads, or one where the
    pool has one), and the pool is as it was afterwards."""
    import torch

    from trainer.core.blas import ThreadPolicy
    from trainer.torch_rl.learner import AdaptiveTorchThreads

    learner = config.build_learner(env=env)
    assert isinstance(learner.step_threads, AdaptiveTorchThreads)
    assert learner.update_threads.num_threads == 0  # (the steps choose)
    assert not learner.step_threads.seeded
    assert config.copy().debugging(seed=0).build_learner(env=env).step_threads.seeded
    small_learner = small.build_learner(env=env)
    assert small_learner.step_threads is None and small_learner.update_threads.num_threads == 1
    before = torch.get_num_threads()
    algo = config.build()
    try:
        algo.learner.step_threads.policy = ThreadPolicy(threads=2, steps_to_probe=10**9)
        algo.train()
        assert algo.learner.step_threads.steps_at.get(min(2, before), 0) > 0
    finally:
        algo.stop()
    assert torch.get_num_threads() == before
