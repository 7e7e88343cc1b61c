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
from collections.abc import Iterator
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from trainer.capabilities import OFFLINE
from trainer.errors import InjectedFault as InjectedFault
from trainer.errors import UnsupportedCall

# RLlib's example-script helpers (`ray.rllib.utils.test_utils` re-exports them too).
from trainer.example_scripts import (  # noqa: F401 - re-exported
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
    should_stop,
)
from trainer.runners.worker_forkserver import TEMPLATE_NAME

#: Where RLlib's `get_cartpole_dataset_reader` reads (relative to RLlib's source folder).
RLLIB_CARTPOLE_DATA = "offline/tests/data/cartpole/large.json"


def get_cartpole_dataset_reader(batch_size: int = 1) -> Any:
    """RLlib's test helper (`ray.rllib.utils.test_utils`), refused: it reads RLlib's recorded
    CartPole data (`offline/tests/data/cartpole/large.json` of RLlib's repository, which the
    Ray wheel does not ship) through the old API stack's `DatasetReader`, `IOContext` and
    `SampleBatch`, none of which this project has. Record data with
    `config.offline_data(output=...)` and read it with `offline_data(input_=...)` instead."""
    raise UnsupportedCall(
        f"get_cartpole_dataset_reader(batch_size={batch_size!r}) reads RLlib's recorded "
        f"CartPole data ({RLLIB_CARTPOLE_DATA} of RLlib's repository, not in the Ray wheel) "
        "as old-API-stack SampleBatches (DatasetReader, IOContext), which are not here; "
        "record your own with offline_data(output=...) and read it with "
        "offline_data(input_=...)",
        OFFLINE,
    )


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

    _KEYS = (
        "env",
        "p_crash",
        "crash_after_n_steps",
        "crash_on_reset",
        "crash_on_worker_indices",
        "p_stall",
        "stall_time_s",
        "hard",
        "fault_seed",
    )

    def __init__(self, env_config: dict | None = None):
        config = dict(env_config or {})
        self.inner = gym.make(
            config.get("env", "CartPole-v1"),
            **{k: v for k, v in config.items() if k not in self._KEYS},
        )
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
            None
            if seed is None
            else [seed, self.worker_index, getattr(env_config, "vector_index", 0)]
        )
        self.num_steps = 0
        self.num_resets = 0

    def _fault(self, where: str, count: int) -> None:
        if not self.active:
            return
        if self.p_stall and self.fault_rng.random() < self.p_stall:
            time.sleep(self.stall_time_s)
        due = (
            (self.crash_after_n_steps is not None and count == self.crash_after_n_steps)
            or (self.p_crash and self.fault_rng.random() < self.p_crash)
            or (where == "reset" and self.crash_after_n_steps is None and not self.p_crash)
        )
        if not due:
            return
        if self.hard:
            os.kill(os.getpid(), signals.SIGKILL)
        raise InjectedFault(
            f"injected crash in {where}() (EnvRunner {self.worker_index}, {where} number {count})"
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        self.num_resets += 1
        if self.crash_on_reset:
            self._fault("reset", self.num_resets)
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        self.num_steps += 1
        if not self.crash_on_reset:
            self._fault("step", self.num_steps)
        return self.inner.step(action)

    def close(self) -> None:
        self.inner.close()


def kill_env_runner(
    algorithm: Any,
    index: int,
    signal: int = signals.SIGKILL,
    *,
    evaluation: bool = False,
    wait_s: float = 0.0,
) -> int:
    """Sends `signal` to the process of EnvRunner `index` (of the evaluation runners with
    `evaluation=True`); returns its pid. The Algorithm notices at its next request. With
    `wait_s`, returns only once the process has ended (its pipes closed: a zombie or gone),
    waiting at most `wait_s` seconds (TimeoutError after); without, the process may still be
    ending when the next request goes out."""
    group = algorithm.eval_env_runner_group if evaluation else algorithm.env_runner_group
    if group is None or index not in group.remote_pids():
        raise ValueError(
            f"kill_env_runner(index={index}): no such remote EnvRunner; the "
            f"group has {sorted(group.remote_pids()) if group else []}"
        )
    pid = group.remote_pids()[index]
    try:
        os.kill(pid, signal)
    except ProcessLookupError:
        raise ValueError(
            f"kill_env_runner(index={index}): its process {pid} has already ended "
            "(the runner is failed or being restarted)"
        ) from None
    deadline = time.monotonic() + wait_s
    while wait_s and not _has_ended(pid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"kill_env_runner(index={index}): {pid} still runs after {wait_s} s")
        time.sleep(0.005)
    return pid


def _has_ended(pid: int) -> bool:
    """Whether process `pid` has ended: gone, or a zombie not yet reaped (Linux: /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


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
        if (
            int(fields[1]) == parent
            and fields[0] != "Z"
            and name != TEMPLATE_NAME
            and any(marker in cmdline for marker in _PROCESS_MARKERS)
        ):
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
    _have_pytest = False
else:
    _have_pytest = True

if _have_pytest:

    @pytest.fixture(autouse=True)
    def no_env_runner_orphans() -> Iterator[None]:
        """Autouse fixture: fails a test whose EnvRunner processes outlive it. An algorithm the
        test dropped without `stop()` counts as ended once garbage-collected (its runners end
        then), so a collection runs first where runners are still alive. (Only then: a full
        collection in a test process that imported torch and Ray Tune takes ~0.25 s, which
        over the whole suite came to minutes.)"""
        yield
        if env_runner_pids():
            gc.collect()
        assert_no_env_runner_processes()


# RLlib's test_utils checks (their own module, re-exported here where RLlib's code imports them).
from trainer.test_utils_checks import (  # noqa: E402, F401
    ModelChecker,
    check,
    check_compute_single_action,
    check_inference_w_connectors,
    check_learning_achieved,
    check_off_policyness,
    check_reproducibilty,
    check_same_batch,
    check_supported_spaces,
    check_train_results,
    check_train_results_new_api_stack,
)
