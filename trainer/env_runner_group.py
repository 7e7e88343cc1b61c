"""`EnvRunnerGroup`: starts the EnvRunner worker processes, feeds them requests, gathers results.

With `num_env_runners=0` the group holds one local EnvRunner that samples in the main process.
With N > 0 it starts N worker processes (indices 1..N) in parallel and keeps a local EnvRunner
without env (index 0), as RLlib does, so `foreach_env_runner(..., local_env_runner=True)` answers
from the main process too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

import cloudpickle

from trainer.env_runner import EnvRunner
from trainer.envs import EnvCreator
from trainer.episode import SingleAgentEpisode
from trainer.errors import EnvRunnerCrashed
from trainer.remote import RemoteEnvRunner

#: Longest wait for a worker process to start (import, build its env, answer).
STARTUP_TIMEOUT_S = 120.0
#: Evaluation runners run at lower CPU priority: in parallel evaluation they take the cycles the
#: training processes leave idle instead of slowing training (measured in bench/evaluation.py).
EVALUATION_NICENESS = 10


class EnvRunnerGroup:
    def __init__(self, config: Any, env_creator: EnvCreator):
        self.config = config
        self._env_creator = env_creator
        self._remote: dict[int, RemoteEnvRunner] = {}
        self._stopped = False
        num = config.num_env_runners
        if num == 0:
            self.local_env_runner = EnvRunner(config, env_creator, worker_index=0, num_workers=0)
            self.spaces = self.local_env_runner.spaces
            return
        try:
            # Start every process first, then hand each its spec: they boot in parallel.
            nice = EVALUATION_NICENESS if config.in_evaluation else 0
            for index in range(1, num + 1):
                self._remote[index] = RemoteEnvRunner(index, nice=nice)
            for index, runner in self._remote.items():
                runner.send_init({"config": config, "env_creator": env_creator,
                                  "worker_index": index, "num_workers": num})
            replies = {index: runner.result(STARTUP_TIMEOUT_S)
                       for index, runner in self._remote.items()}
        except BaseException:
            self.stop()
            raise
        self.spaces = replies[1]["spaces"]
        self.local_env_runner = EnvRunner(config, env_creator, worker_index=0, num_workers=num,
                                          create_env=False, spaces=self.spaces)

    # -- who is there ------------------------------------------------------------------------
    def healthy_env_runner_ids(self) -> list[int]:
        return [i for i, r in self._remote.items() if r.healthy and r.is_alive()]

    def collect_exited(self) -> list[EnvRunnerCrashed]:
        """Runners whose process exited while idle (killed, crashed) since the last look:
        marked unhealthy and returned as failures, so they are reported, not silently skipped."""
        failures = []
        for index, runner in self._remote.items():
            if runner.healthy and not runner.is_alive():
                failures.append(EnvRunnerCrashed(index, None, runner.process.returncode))
                runner.kill()
        return failures

    def num_healthy_remote_workers(self) -> int:
        return len(self.healthy_env_runner_ids())

    def num_remote_workers(self) -> int:
        return len(self._remote)

    def num_remote_worker_restarts(self) -> int:
        return 0

    def remote_pids(self) -> dict[int, int]:
        return {i: r.pid for i, r in self._remote.items()}

    @property
    def num_env_runners(self) -> int:
        return len(self._remote)

    # -- running code on the runners ---------------------------------------------------------
    def _timeout(self, timeout_seconds: float | None) -> float:
        return timeout_seconds if timeout_seconds is not None else max(
            self.config.sample_timeout_s, 60.0)

    def foreach_env_runner(self, func: Callable | str, *, local_env_runner: bool = True,
                           remote_worker_ids: list[int] | None = None,
                           timeout_seconds: float | None = None,
                           kwargs: dict | None = None) -> list:
        """Calls `func(env_runner, **kwargs)` (or the EnvRunner method named `func`) on the local
        runner (first, if `local_env_runner`) and on every healthy remote runner (or those in
        `remote_worker_ids`), in index order; returns the results. Remote calls run in parallel,
        in the worker processes: `func` travels with cloudpickle, so lambdas work."""
        kwargs = kwargs or {}
        results = []
        if local_env_runner and (self.local_env_runner is not None):
            target = getattr(self.local_env_runner, func) if isinstance(func, str) else None
            results.append(target(**kwargs) if target else func(self.local_env_runner, **kwargs))
        ids = self.healthy_env_runner_ids() if remote_worker_ids is None else list(
            remote_worker_ids)
        if not ids:
            return results
        func_bytes = None if isinstance(func, str) else cloudpickle.dumps(func)
        for i in ids:
            if isinstance(func, str):
                self._remote[i].call_async(func, **kwargs)
            else:
                self._remote[i].apply_async(func_bytes, **kwargs)
        deadline = time.monotonic() + self._timeout(timeout_seconds)
        for i in ids:
            results.append(self._remote[i].result(max(deadline - time.monotonic(), 0.01)))
        return results

    foreach_worker = foreach_env_runner

    def sync_weights(self, weights: dict, global_timestep: int | None = None) -> None:
        """Sends `weights` (and the env steps sampled so far, for exploration schedules) to every
        runner. Remote runners apply them before their next request; a failure to apply surfaces
        with that request's reply."""
        if self.local_env_runner is not None:
            self.local_env_runner.set_weights(weights, global_timestep)
        if not self._remote:
            return
        message = bytes(ForkingPickler.dumps(
            ("call", "set_weights", {"weights": weights, "global_timestep": global_timestep})))
        for i in self.healthy_env_runner_ids():
            self._remote[i].send_pickled("set_weights", message)

    def get_runner_states(self, timeout_seconds: float | None = None) -> dict[int, dict]:
        """Worker index -> `EnvRunner.get_state()` without weights (the learner holds them), for
        the local runner (0) and every healthy remote runner."""
        ids = self.healthy_env_runner_ids()
        states = self.foreach_env_runner("get_state", remote_worker_ids=ids,
                                         timeout_seconds=timeout_seconds,
                                         kwargs={"include_weights": False})
        return dict(zip([0, *ids], states, strict=True))

    def set_runner_states(self, states: dict[int, dict],
                          timeout_seconds: float | None = None) -> None:
        """Gives each runner its state from `states` (keyed by worker index); runners without an
        entry keep theirs."""
        if 0 in states and self.local_env_runner is not None:
            self.local_env_runner.set_state(states[0])
        ids = [i for i in self.healthy_env_runner_ids() if i in states]
        for i in ids:
            self._remote[i].call_async("set_state", state=states[i])
        deadline = time.monotonic() + self._timeout(timeout_seconds)
        for i in ids:
            self._remote[i].result(max(deadline - time.monotonic(), 0.01))

    def sample(self, *, min_env_steps: int, explore: bool | None = None
               ) -> tuple[list[SingleAgentEpisode], list]:
        """Samples from every runner (in parallel) until at least `min_env_steps` env steps were
        collected; returns the episodes and each call's metrics delta."""
        episodes: list[SingleAgentEpisode] = []
        deltas: list = []
        steps = 0
        while steps < min_env_steps:
            if not self._remote:
                batch = self.local_env_runner.sample(explore=explore)
                replies = [(batch, self.local_env_runner.get_metrics())]
            else:
                ids = self.healthy_env_runner_ids()
                if not ids:
                    raise RuntimeError("no healthy EnvRunner is left to sample from")
                for i in ids:
                    self._remote[i].call_async("sample_with_metrics", explore=explore)
                deadline = time.monotonic() + self.config.sample_timeout_s
                replies = [self._remote[i].result(max(deadline - time.monotonic(), 0.01))
                           for i in ids]
            for batch, delta in replies:
                episodes.extend(batch)
                deltas.append(delta)
                steps += sum(len(ep) for ep in batch)
        return episodes, deltas

    def remote_runner(self, index: int) -> RemoteEnvRunner:
        return self._remote[index]

    # -- shutdown ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ends every worker process (politely, then by force) and closes the local env."""
        if self._stopped:
            return
        self._stopped = True
        for runner in self._remote.values():
            runner.stop()
        if getattr(self, "local_env_runner", None) is not None:
            self.local_env_runner.stop()
