"""Fault injection for your own tests: envs that crash or stall, killing EnvRunner processes, and
a check that no worker process outlives a test.

```python
from trainer.testing import FaultInjectionEnv, kill_env_runner, assert_no_env_runner_processes

config = (PPOConfig()
          .environment(FaultInjectionEnv, env_config={"env": "CartPole-v1", "p_crash": 0.001})
          .env_runners(num_env_runners=2)
          .fault_tolerance(restart_failed_sub_environments=True))
with config.build() as algo:
    kill_env_runner(algo, 1)            # SIGKILL runner 1; the next train() restarts it
    algo.train()
assert_no_env_runner_processes()
```

In pytest, `from trainer.testing import no_env_runner_orphans` in a conftest.py makes every test
fail whose worker processes outlive it.
"""

from __future__ import annotations

import gc
import os
import signal as signals
import time
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.checkpoints.manager import result_value
from trainer.metrics import (
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TRAINING_ITERATION,
)
from trainer.metrics.stats import Stats
from trainer.runners.worker_forkserver import TEMPLATE_NAME


class InjectedFault(RuntimeError):
    """The exception a `FaultInjectionEnv` raises on purpose."""


class FaultInjectionEnv(gym.Env):
    """Wraps an env (`env_config["env"]`, a gymnasium id, default "CartPole-v1") and fails on
    purpose. `env_config` keys (all optional):

    - `p_crash`: probability per `step()` of raising `InjectedFault`;
    - `crash_after_n_steps`: raise at this env instance's n-th step (counted across episodes;
      a re-created env counts from 0 again);
    - `crash_on_reset`: apply the two settings above to `reset()` calls instead of steps
      (with neither set, every reset raises);
    - `crash_on_worker_indices`: only fail in the EnvRunners with these indices (default: all);
    - `p_stall` / `stall_time_s`: probability per step of sleeping `stall_time_s` seconds
      (default 10) first, to provoke timeouts;
    - `hard`: instead of raising, kill the EnvRunner's own process with SIGKILL (as a segfault
      or the OOM killer would);
    - `fault_seed`: seed of the fault decisions (default: fresh entropy per env instance).

    Other keys go to the wrapped env's constructor.
    """

    _KEYS = ("env", "p_crash", "crash_after_n_steps", "crash_on_reset",
             "crash_on_worker_indices", "p_stall", "stall_time_s", "hard", "fault_seed")

    def __init__(self, env_config: dict | None = None):
        config = dict(env_config or {})
        self.inner = gym.make(config.get("env", "CartPole-v1"),
                              **{k: v for k, v in config.items() if k not in self._KEYS})
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        self.p_crash = float(config.get("p_crash", 0.0))
        self.crash_after_n_steps = config.get("crash_after_n_steps")
        self.crash_on_reset = bool(config.get("crash_on_reset", False))
        self.p_stall = float(config.get("p_stall", 0.0))
        self.stall_time_s = float(config.get("stall_time_s", 10.0))
        self.hard = bool(config.get("hard", False))
        indices = config.get("crash_on_worker_indices")
        self.worker_index = getattr(env_config, "worker_index", 0)
        self.active = indices is None or self.worker_index in indices
        seed = config.get("fault_seed")
        self.fault_rng = np.random.default_rng(
            None if seed is None else [seed, self.worker_index,
                                       getattr(env_config, "vector_index", 0)])
        self.num_steps = 0
        self.num_resets = 0

    def _fault(self, where: str, count: int) -> None:
        if not self.active:
            return
        if self.p_stall and self.fault_rng.random() < self.p_stall:
            time.sleep(self.stall_time_s)
        due = ((self.crash_after_n_steps is not None and count == self.crash_after_n_steps)
               or (self.p_crash and self.fault_rng.random() < self.p_crash)
               or (where == "reset" and self.crash_after_n_steps is None and not self.p_crash))
        if not due:
            return
        if self.hard:
            os.kill(os.getpid(), signals.SIGKILL)
        raise InjectedFault(f"injected crash in {where}() (EnvRunner {self.worker_index}, "
                            f"{where} number {count})")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.num_resets += 1
        if self.crash_on_reset:
            self._fault("reset", self.num_resets)
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.num_steps += 1
        if not self.crash_on_reset:
            self._fault("step", self.num_steps)
        return self.inner.step(action)

    def close(self):
        self.inner.close()


def kill_env_runner(algorithm: Any, index: int, signal: int = signals.SIGKILL, *,
                    evaluation: bool = False) -> int:
    """Sends `signal` to the process of EnvRunner `index` (of the evaluation runners with
    `evaluation=True`); returns its pid. The Algorithm notices at its next request."""
    group = algorithm.eval_env_runner_group if evaluation else algorithm.env_runner_group
    if group is None or index not in group.remote_pids():
        raise ValueError(f"kill_env_runner(index={index}): no such remote EnvRunner; the "
                         f"group has {sorted(group.remote_pids()) if group else []}")
    pid = group.remote_pids()[index]
    try:
        os.kill(pid, signal)
    except ProcessLookupError:
        raise ValueError(f"kill_env_runner(index={index}): its process {pid} has already ended "
                         "(the runner is failed or being restarted)") from None
    return pid


#: Command-line markers of the processes localrl starts: EnvRunners and the named-object server.
_PROCESS_MARKERS = (b"trainer.runners.worker", b"trainer.named_objects.server")


def env_runner_pids(parent_pid: int | None = None) -> list[int]:
    """PIDs of live EnvRunner worker processes (and of the named-object server, see
    `trainer.named_objects`) whose parent is `parent_pid` (default: this process). Linux:
    reads /proc."""
    parent = os.getpid() if parent_pid is None else parent_pid
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        # The parenthesised process name, then the state and the parent pid. The worker
        # template shares its command line with the workers forked from it (see
        # `trainer.runners.worker_forkserver`) and is no EnvRunner: its name tells it apart.
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        fields = rest.split()
        if int(fields[1]) == parent and fields[0] != "Z" and name != TEMPLATE_NAME and any(
                marker in cmdline for marker in _PROCESS_MARKERS):
            pids.append(int(entry))
    return pids


def assert_no_env_runner_processes(timeout_s: float = 5.0, parent_pid: int | None = None) -> None:
    """Waits up to `timeout_s` for the EnvRunner processes of `parent_pid` (default: this
    process) to end; raises AssertionError naming those still alive."""
    deadline = time.monotonic() + timeout_s
    alive = env_runner_pids(parent_pid)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = env_runner_pids(parent_pid)
    assert not alive, f"EnvRunner processes outlived their algorithm: pids {alive}"


try:
    import pytest
except ImportError:  # pytest is only needed for the fixture
    pytest = None

if pytest is not None:
    @pytest.fixture(autouse=True)
    def no_env_runner_orphans():
        """Autouse fixture: fails a test whose EnvRunner processes outlive it. An algorithm the
        test dropped without `stop()` counts as ended once garbage-collected (its runners end
        then), so a collection runs first."""
        yield
        gc.collect()
        assert_no_env_runner_processes()


# -- RLlib's example-script helpers (`ray.rllib.utils.test_utils`) ------------------------------
def add_rllib_example_script_args(parser: Any = None, default_reward: float = 100.0,
                                  default_timesteps: int = 100_000,
                                  default_iters: int = 200) -> Any:
    """RLlib's command line for its example scripts: an `argparse.ArgumentParser` (or `parser`,
    extended) with `--algo`, `--env`, `--num-env-runners`, `--num-envs-per-env-runner`,
    `--num-agents`, the `--evaluation-*` options, `--stop-reward/-timesteps/-iters`,
    `--as-test`, `--no-tune` and the options that mean nothing on one machine (`--framework`,
    `--num-learners`, `--num-gpus-per-learner`, `--num-cpus`, `--local-mode`, `--wandb-*`, ...;
    accepted so RLlib's command lines work, and reported by the config's warnings)."""
    import argparse

    parser = parser or argparse.ArgumentParser()
    add = parser.add_argument
    add("--algo", type=str, default="PPO", help="the algorithm (PPO or DQN)")
    add("--enable-new-api-stack", action="store_true", help="always on here")
    add("--framework", choices=["torch", "tf2"], default="torch", help="no effect here (numpy)")
    add("--env", type=str, default=None, help="the env (a gymnasium id or registered name)")
    add("--num-env-runners", type=int, default=None)
    add("--num-envs-per-env-runner", type=int, default=None)
    add("--num-agents", type=int, default=0, help="multi-agent envs do not run here")
    add("--evaluation-num-env-runners", type=int, default=0)
    add("--evaluation-interval", type=int, default=0)
    add("--evaluation-duration", type=lambda v: v if v == "auto" else int(v), default=10)
    add("--evaluation-duration-unit", type=str, default="episodes",
        choices=["episodes", "timesteps"])
    add("--evaluation-parallel-to-training", action="store_true")
    add("--output", type=str, default=None, help="no effect here (no offline output)")
    add("--log-level", type=str, default=None,
        choices=["INFO", "DEBUG", "WARN", "ERROR"])
    add("--no-tune", action="store_true", help="always: a plain train() loop runs here")
    add("--num-samples", type=int, default=1)
    add("--max-concurrent-trials", type=int, default=None)
    add("--verbose", type=int, default=2)
    add("--checkpoint-freq", type=int, default=0)
    add("--checkpoint-at-end", action="store_true")
    add("--wandb-key", type=str, default=None)
    add("--wandb-project", type=str, default=None)
    add("--wandb-run-name", type=str, default=None)
    add("--stop-reward", type=float, default=default_reward)
    add("--stop-iters", type=int, default=default_iters)
    add("--stop-timesteps", type=int, default=default_timesteps)
    add("--as-test", action="store_true")
    add("--as-release-test", action="store_true")
    add("--num-learners", type=int, default=None)
    add("--num-cpus-per-learner", type=int, default=None)
    add("--num-gpus-per-learner", type=float, default=None)
    add("--num-aggregator-actors-per-learner", type=int, default=None)
    add("--num-cpus", type=int, default=0)
    add("--local-mode", action="store_true")
    add("--num-gpus", type=int, default=None)
    return parser


def _reached(value: Any, target: Any) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value)) \
        and value >= target


def run_rllib_example_script_experiment(base_config: Any, args: Any = None, *,
                                        stop: dict | None = None,
                                        success_metric: dict | None = None,
                                        **kwargs: Any) -> dict:
    """RLlib's driver of its example scripts, as a plain `train()` loop (no Tune): applies the
    command line's settings to `base_config`, trains until a `stop` criterion is reached
    (keys are result paths such as "env_runners/episode_return_mean", a stop when the value
    reaches the number), prints one line per iteration and returns the last result. With
    `--as-test`, raises `ValueError` unless `success_metric` (default: the episode return
    reaching `--stop-reward`) was reached."""
    if args is None:
        args = add_rllib_example_script_args().parse_args([])
    config = base_config
    if args.env is not None and config.env is None:
        config.environment(args.env)
    if args.num_agents:
        raise ValueError(f"--num-agents={args.num_agents}: multi-agent envs do not run here")
    if args.num_env_runners is not None:
        config.env_runners(num_env_runners=args.num_env_runners)
    if args.num_envs_per_env_runner is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs_per_env_runner)
    if args.evaluation_num_env_runners or args.evaluation_interval:
        config.evaluation(
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            evaluation_interval=args.evaluation_interval,
            evaluation_duration=args.evaluation_duration,
            evaluation_duration_unit=args.evaluation_duration_unit,
            evaluation_parallel_to_training=args.evaluation_parallel_to_training)
    if stop is None:
        stop = {"env_runners/episode_return_mean": args.stop_reward,
                NUM_ENV_STEPS_SAMPLED_LIFETIME: args.stop_timesteps,
                TRAINING_ITERATION: args.stop_iters}
    if success_metric is None:
        success_metric = {"env_runners/episode_return_mean": args.stop_reward}
    algo = config.build()
    result: dict = {}
    try:
        while True:
            result = algo.train()
            progress = "  ".join(f"{key}={result_value(result, key)}" for key in stop)
            print(f"iter {result['training_iteration']}: {progress}", flush=True)
            if any(_reached(result_value(result, key), target) for key, target in stop.items()):
                break
    finally:
        algo.stop()
    if args.as_test:
        missed = {key: result_value(result, key) for key, target in success_metric.items()
                  if not _reached(result_value(result, key), target)}
        if missed:
            raise ValueError(f"the test did not reach its success metric {success_metric}: "
                             f"{missed}")
        print(f"success: {success_metric} reached")
    return result


def check(x: Any, y: Any, decimals: int = 5, atol: float | None = None,
          rtol: float | None = None, false: bool = False) -> None:
    """RLlib's test helper: asserts that `x` and `y` (numbers, arrays, or dicts, lists and tuples
    of them) are equal, floats within `atol`/`rtol` (default: `decimals` places); with
    `false=True`, asserts that they differ."""
    try:
        _check_equal(x, y, decimals, atol, rtol)
    except AssertionError:
        if false:
            return
        raise
    if false:
        raise AssertionError(f"check(false=True): {x!r} equals {y!r}")


def _check_equal(x: Any, y: Any, decimals: int, atol: float | None,
                 rtol: float | None) -> None:
    # Stats objects (a non-root MetricsLogger's reduce() results) compare by their value.
    if isinstance(x, Stats):
        x = x.peek()
    if isinstance(y, Stats):
        y = y.peek()
    if isinstance(x, dict):
        assert isinstance(y, dict) and set(x) == set(y), f"keys differ: {x!r} vs {y!r}"
        for key in x:
            _check_equal(x[key], y[key], decimals, atol, rtol)
    elif isinstance(x, (list, tuple)) and not np.isscalar(y) and not isinstance(y, np.ndarray):
        assert isinstance(y, (list, tuple)) and len(x) == len(y), f"{x!r} vs {y!r}"
        for a, b in zip(x, y, strict=True):
            _check_equal(a, b, decimals, atol, rtol)
    elif isinstance(x, (str, bool)) or x is None:
        assert x == y, f"{x!r} != {y!r}"
    elif atol is None and rtol is None:
        np.testing.assert_almost_equal(x, y, decimal=decimals)
    else:
        np.testing.assert_allclose(x, y, atol=atol or 0.0, rtol=rtol or 1e-7)
