"""The EnvRunner worker process: forked from the worker template
(`trainer.runners.worker_forkserver`), or where that is not available started as
`python -m trainer.runners.worker PARENT_PID KERNEL FD STACK_FD INDEX`.

It is started by `trainer.runners.process_runner.ProcessRunner` with one end of a socket pair (a
`multiprocessing.connection.Connection`) and serves the requests of `trainer.runners.protocol`
in a loop, one at a time, answering each with exactly one `Reply`: `Init` builds the EnvRunner,
`Call` and `Apply` run code on it, `Stop` closes it and ends the process.

Errors: a `CallbackError` travels as is (a user callback raised); a callback the worker cannot
unpickle becomes a `CallbackError` naming it; anything else becomes an `EnvRunnerError` with the
original traceback and the env steps stepped so far. The original exception goes along
(`protocol.error_reply`), so the main process raises it with its type kept.

The process ends when its connection closes (the main process is gone), on `Stop`, or when its
parent process dies (`trainer.util.child_process`), so it never outlives the training process.
On SIGUSR1 it writes every thread's stack to STACK_FD (the main process asks before it kills a
runner that stopped answering).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import os
import pickle
import signal
import sys
import traceback
from typing import TYPE_CHECKING, Any

from trainer import named_objects
from trainer.callbacks import CallbackError
from trainer.core.nn import weights_set_later
from trainer.errors import EnvRunnerError
from trainer.runners import protocol
from trainer.runners.env_runner import config_handed_over
from trainer.runners.runner_class import env_runner_class
from trainer.util import deprecation
from trainer.util.child_process import add_import_paths, start_child
from trainer.util.log import log_formatter, set_library_log_level
from trainer.util.pickling import UnpicklingFailed

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


def _failure(
    worker_index: int, label: str, error: BaseException, runner: Any
) -> tuple[BaseException, BaseException | None]:
    """The error to send for `error` raised while serving `label`, and its original."""
    if isinstance(error, CallbackError):
        return error, error.__cause__
    if isinstance(error, UnpicklingFailed):  # a callback the worker cannot unpickle
        return CallbackError(
            "(unpickling in the EnvRunner)",
            error.label,
            type(error.error).__name__,
            str(error.error),
            traceback.format_exc(),
            worker_index,
        ), error.error
    return EnvRunnerError(
        worker_index,
        label,
        type(error).__name__,
        str(error),
        traceback.format_exc(),
        getattr(runner, "num_env_steps_stepped", None),
    ), error


def _configure_logging(level: str, worker_index: int) -> None:
    """Log records at the config's `log_level` to stderr, marked with the runner's index."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(log_formatter(f"EnvRunner {worker_index}"))
    logging.getLogger().handlers[:] = [handler]
    set_library_log_level(level)


def _build_runner(request: protocol.Init) -> Any:
    """The EnvRunner of an `Init` request (see `protocol`)."""
    import cloudpickle

    add_import_paths(request.sys_path)
    spec = cloudpickle.loads(request.payload)
    named_objects.configure_client(spec.get("named_objects"))
    _configure_logging(spec["config"].log_level, spec["worker_index"])
    runner_cls = env_runner_class(spec["config"])
    # The learner's weights reach this runner before its first request: its networks skip
    # their random initialisation (see `EnvRunnerGroup`'s `weights_synced_at_start`).
    with (
        weights_set_later() if spec.get("weights_set_later") else contextlib.nullcontext(),
        config_handed_over(),
    ):
        return runner_cls(
            spec["config"],
            spec["env_creator"],
            worker_index=spec["worker_index"],
            num_workers=spec["num_workers"],
            spaces=spec.get("spaces"),
            recreated=spec.get("recreated", False),
            env_spaces=spec.get("env_spaces"),
            tune_trial_id=spec.get("tune_trial_id"),
        )


class RunnerServer:
    """One remote EnvRunner's side of the protocol, whatever carries the messages (this
    module's socket loop, or a Ray actor): `answer(request)` runs one request and returns its
    `Reply`, never raising. `stopped` turns True after `Stop`."""

    def __init__(self, worker_index: int, *, main_pid: int | None = None):
        self.worker_index = worker_index
        #: The training process: a server running in another one has its process to itself
        #: (a worker process, a Ray actor) and freezes its startup objects (see `answer`).
        self.main_pid = main_pid
        if self.in_own_process:
            # Its deprecation warnings go to the main process with the replies. A server in
            # the training process (a thread, Ray's local mode) leaves that process's
            # warnings to be logged there as they come.
            deprecation.collect_in_this_process()
        self.runner: Any = None
        self.stopped = False
        self._named_objects: Any = None  # the client, once Init configured it

    @property
    def in_own_process(self) -> bool:
        """Whether this server runs in a process of its own (not the training process)."""
        return self.main_pid is not None and os.getpid() != self.main_pid

    def answer(self, request: Any) -> protocol.Reply:
        import cloudpickle

        runner = self.runner
        try:
            if isinstance(request, protocol.Call):
                reply = protocol.Reply(
                    request.request_id, getattr(runner, request.method)(**request.kwargs)
                )
            elif isinstance(request, protocol.Apply):
                func = cloudpickle.loads(request.func_bytes)
                reply = protocol.Reply(request.request_id, func(runner, **request.kwargs))
            elif isinstance(request, protocol.Init):
                runner = self.runner = _build_runner(request)
                if self.in_own_process:
                    # What startup made (modules, the env, the networks) lives as long as the
                    # process: out of the cyclic collector's reach, its full collections during
                    # sampling scan only what sampling made (one over a fresh worker's ~40k
                    # startup objects took 15 ms, 4% of a 10k-step sample of CartPole). Not in
                    # the training process (a server on a thread, Ray's local mode).
                    gc.freeze()
                self._named_objects = named_objects
                reply = protocol.Reply(
                    request.request_id,
                    {
                        "pid": os.getpid(),
                        "spaces": runner.spaces,
                        "env_spaces": runner.env_spaces,
                        "tasks": runner.get_tasks(),
                    },
                )
            elif isinstance(request, protocol.Stop):
                self.stopped = True
                if runner is not None:
                    runner.stop()
                return protocol.Reply(request.request_id)
            else:
                raise TypeError(f"not a request of trainer.runners.protocol: {request!r}")
        except Exception as error:  # noqa: BLE001 - every failure is answered, never raised
            reply = self.failed(request, error)
        if self._named_objects is not None:
            try:
                self._named_objects.flush()  # the main process must see this request's calls
            except self._named_objects.NamedObjectError as error:  # the server is gone
                reply = self.failed(request, error)
        warnings = deprecation.drain()
        if warnings:
            reply = reply._replace(warnings=tuple(warnings))
        return reply

    def failed(self, request: Any, error: BaseException) -> protocol.Reply:
        """The reply for `request` when it raised `error` (or its reply could not be sent)."""
        return protocol.error_reply(
            getattr(request, "request_id", 0),
            *_failure(self.worker_index, _label(request), error, self.runner),
        )


def serve(conn: Connection, worker_index: int, main_pid: int | None = None) -> None:
    """Answers the requests arriving on `conn`, one at a time, until `Stop` or until the main
    process (`main_pid`) closes the connection."""
    server = RunnerServer(worker_index, main_pid=main_pid)
    while not server.stopped:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return  # the main process closed the connection: nothing left to serve
        reply = server.answer(request)
        try:
            # A plain pickle, not the connection's ForkingPickler: with torch imported, that
            # one sends a tensor (a torch module a `foreach_env_runner` function returns) as a
            # handle to shared memory, fetched back through multiprocessing's resource sharer,
            # which this worker's key is not (AuthenticationError in the main process).
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - the result itself could not be pickled
            payload = pickle.dumps(server.failed(request, error), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(payload)
        except (EOFError, OSError, BrokenPipeError):
            return


def _label(request: Any) -> str:
    return getattr(request, "label", "request")


def run(fd: int, stack_fd: int, worker_index: int, main_pid: int) -> None:
    """Serves the main process `main_pid` on the connection of file descriptor `fd` (in a
    process of its own, spawned or forked: see `trainer.runners.worker_forkserver`)."""
    from multiprocessing.connection import Connection

    # On SIGUSR1, every thread's stack goes to the main process (what a stalled runner was
    # doing when it was given up). faulthandler writes from C: it works while Python code is
    # stuck holding the GIL.
    faulthandler.register(signal.SIGUSR1, file=stack_fd, all_threads=True)
    serve(Connection(fd), worker_index, main_pid=main_pid)


def main(argv: list[str]) -> None:
    fd, stack_fd, worker_index = (int(arg) for arg in start_child(argv))
    run(fd, stack_fd, worker_index, os.getppid())


if __name__ == "__main__":
    main(sys.argv)
