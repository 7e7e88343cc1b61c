"""The EnvRunner worker process:
`python -m trainer.runners.worker FD PARENT_PID STACK_FD KERNEL_SIGNAL`.

It is started by `trainer.runners.process_runner.RemoteEnvRunner` with one end of a socket pair (a
`multiprocessing.connection.Connection`) and serves requests in a loop, one at a time, answering
each with exactly one reply:

    request                              reply
    ("init", sys_path, payload, index)   ("ok", {"pid", "spaces", "tasks"})
        payload: cloudpickled {config, env_creator, worker_index, num_workers, spaces,
        recreated, named_objects}
    ("call", method, kwargs)             ("ok", runner.method(**kwargs))
    ("apply", func_bytes, kwargs)        ("ok", cloudpickle.loads(func_bytes)(runner, **kwargs))
    ("stop",)                            ("ok", None), then the process exits

A reply may carry a third element: the deprecation warnings (RLlib's older API forms) first seen
in this process, for the main process to log once (see `callbacks.old_api`).
Any exception is answered with ("error", exception): a `CallbackError` as is, anything else as an
`EnvRunnerError` carrying the original traceback. The process ends when its connection closes
(the main process is gone), on "stop", or when its parent process dies (`trainer.util.child_process`:
the kernel's parent-death signal when KERNEL_SIGNAL is 1, and a watchdog thread), so it never
outlives the training process. On SIGUSR1 it writes every thread's stack to STACK_FD (the main
process asks before it kills a runner that stopped answering). It ignores SIGINT: Ctrl-C is the
main process's to handle. Its stdout and stderr are line-buffered, so what callbacks print arrives whole and in time.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import traceback

from trainer.util.child_process import die_with_parent


def _error_reply(worker_index: int, method: str, error: BaseException, runner=None):
    from trainer.callbacks import CallbackError
    from trainer.errors import EnvRunnerError
    from trainer.util.pickling import UnpicklingFailed

    if isinstance(error, CallbackError):
        return ("error", error)
    if isinstance(error, UnpicklingFailed):  # a callback the worker cannot unpickle
        return ("error", CallbackError("(unpickling in the EnvRunner)", error.label,
                                       type(error.error).__name__, str(error.error),
                                       traceback.format_exc(), worker_index))
    return ("error", EnvRunnerError(worker_index, method, type(error).__name__, str(error),
                                    traceback.format_exc(),
                                    getattr(runner, "num_env_steps_stepped", None)))


def _configure_logging(level: str, worker_index: int) -> None:
    """Log records at the config's `log_level` to stderr, marked with the runner's index."""
    import logging

    from trainer.util.log import log_formatter, set_library_log_level

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(log_formatter(f"EnvRunner {worker_index}"))
    logging.getLogger().handlers[:] = [handler]
    set_library_log_level(level)


def serve(conn) -> None:
    import cloudpickle

    from trainer.compat import old_callbacks as old_api

    old_api.collect_in_this_process()
    named_objects = None  # imported with the trainer at "init"
    runner = None
    worker_index = -1
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the main process closed the connection: nothing left to serve
        kind = message[0]
        method = kind
        try:
            if kind == "init":
                _, sys_path, payload, worker_index = message
                for entry in sys_path:
                    if entry not in sys.path:
                        sys.path.append(entry)
                spec = cloudpickle.loads(payload)
                worker_index = spec["worker_index"]
                from trainer import named_objects
                from trainer.env.env_runner import EnvRunner

                named_objects.configure_client(spec.get("named_objects"))
                _configure_logging(spec["config"].log_level, worker_index)
                runner_cls = spec["config"].env_runner_cls or EnvRunner
                runner = runner_cls(spec["config"], spec["env_creator"],
                                   worker_index=worker_index, num_workers=spec["num_workers"],
                                   spaces=spec.get("spaces"),
                                   recreated=spec.get("recreated", False),
                                   env_spaces=spec.get("env_spaces"))
                reply = ("ok", {"pid": os.getpid(), "spaces": runner.spaces,
                                "env_spaces": runner.env_spaces,
                                "tasks": runner.get_tasks()})
            elif kind == "call":
                _, method, kwargs = message
                reply = ("ok", getattr(runner, method)(**kwargs))
            elif kind == "apply":
                _, func_bytes, kwargs = message
                method = "foreach_env_runner"
                reply = ("ok", cloudpickle.loads(func_bytes)(runner, **kwargs))
            elif kind == "stop":
                if runner is not None:
                    runner.stop()
                conn.send(("ok", None))
                return
            else:
                raise ValueError(f"unknown request {kind!r}")
        except Exception as error:
            reply = _error_reply(worker_index, method, error, runner)
        if named_objects is not None:
            try:
                named_objects.flush()  # the main process must see this request's calls
            except named_objects.NamedObjectError as error:  # the server is gone
                reply = _error_reply(worker_index, method, error, runner)
        warnings = old_api.drain()
        if warnings:
            reply = (*reply, warnings)
        try:
            conn.send(reply)
        except (EOFError, OSError, BrokenPipeError):
            return
        except Exception as error:  # the result itself could not be pickled
            conn.send(_error_reply(worker_index, method, error))


def main(argv: list[str]) -> None:
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Several workers share the terminal (or pipe): line buffering makes each printed line one
    # write (also under PYTHONUNBUFFERED, which writes text and newline separately), so lines
    # from different runners never split each other, and they show up promptly.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass
    fd, parent_pid, stack_fd, kernel_signal = (int(arg) for arg in argv[1:5])
    die_with_parent(parent_pid, bool(kernel_signal))
    # On SIGUSR1, every thread's stack goes to the main process (what a stalled runner was
    # doing when it was given up). faulthandler writes from C: it works while Python code is
    # stuck holding the GIL.
    faulthandler.register(signal.SIGUSR1, file=stack_fd, all_threads=True)
    serve(Connection(fd))


if __name__ == "__main__":
    main(sys.argv)
