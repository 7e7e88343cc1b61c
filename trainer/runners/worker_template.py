"""The worker template process: `python -m trainer.runners.worker_template PARENT_PID KERNEL
FD BLAS_THREADS`. It imports what every EnvRunner worker needs (`PRELOAD`), then forks a worker
for each request of the main process on the socket FD, until that socket closes or the main
process dies. The design, the requests and the guarantees: `trainer.runners.worker_forkserver`.

It stays single-threaded (forking a process with other threads copies their locks in whatever
state they are): no parent-watch thread (its loop checks the parent instead), numpy imported
with one BLAS thread, and a fork refused when a thread is found anyway.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import select
import socket
import sys
import threading
import traceback
from typing import Any

from trainer.runners.worker_forkserver import (
    ADOPTION_TIMEOUT_S,
    FORK_TIMEOUT_S,
    MESSAGE_MAX,
    PARENT_CHECK_S,
    PRELOAD,
    TEMPLATE_NAME,
)
from trainer.util.child_process import (
    PARENT_GONE_EXIT_CODE,
    die_with_parent,
    process_name,
    set_process_name,
    start_child,
    wait_until_adopted,
)


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _apply_blas_threads(user_threads: dict[str, str]) -> None:
    """Gives a forked worker the BLAS threads the user asked for (the template has one)."""
    if not user_threads:
        return
    os.environ.update(user_threads)
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    blas = next((user_threads[var] for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                 "OMP_NUM_THREADS") if var in user_threads),
                None)
    try:
        if blas is not None:
            controller.limit(limits=int(blas), user_api="blas")
        if "OMP_NUM_THREADS" in user_threads:
            controller.limit(limits=int(user_threads["OMP_NUM_THREADS"]), user_api="openmp")
    except ValueError:
        pass  # not a number: numpy ignores such a value too


def _become_worker(sock: socket.socket, parent_pid: int, request: dict, fds: list[int],
                   worker_name: str, user_threads: dict[str, str]) -> None:
    """The forked worker: never returns into the template's loop (its own exit)."""
    code = 0
    try:
        sock.close()  # the template's socket is the template's: its end must not linger here
        if not wait_until_adopted(parent_pid, ADOPTION_TIMEOUT_S):
            os._exit(PARENT_GONE_EXIT_CODE)
        # Re-parented to the main process: the kernel's signal now follows it, not the
        # template.
        die_with_parent(parent_pid, kernel_signal=True)
        conn_fd, stack_fd, *std = fds
        for target, fd in zip(request["std"], std, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        set_process_name(worker_name)
        # The forked memory holds the template's numpy global seed (a spawned worker draws
        # one of its own); Python's `random` reseeds itself after a fork.
        import numpy

        numpy.random.seed()
        _apply_blas_threads(user_threads)
        from trainer.runners import worker

        worker.run(conn_fd, stack_fd, int(request["index"]), parent_pid)
    except SystemExit as error:
        code = 0 if error.code is None else error.code if isinstance(error.code, int) else 1
    except BaseException:  # noqa: BLE001 - a worker's failure is its exit code, never the template's
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # what the interpreter's exit would run
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _fork_worker(sock: socket.socket, parent_pid: int, request: dict, fds: list[int],
                 worker_name: str, user_threads: dict[str, str]) -> int:
    """Forks a worker through an intermediate process (see the module docstring); its pid."""
    threads = _thread_count()
    if threads != 1:
        raise RuntimeError(f"it runs {threads} threads: forking it is not safe")
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    intermediate = os.fork()
    if intermediate == 0:
        code = 0
        try:
            os.close(read_end)
            worker = os.fork()
            if worker == 0:
                os.close(write_end)
                _become_worker(sock, parent_pid, request, fds, worker_name, user_threads)
            os.write(write_end, str(worker).encode())
        except BaseException:  # noqa: BLE001 - reported to the template by the empty pipe
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], FORK_TIMEOUT_S)
        data = os.read(read_end, 64) if ready else b""
    finally:
        os.close(read_end)
        os.waitpid(intermediate, 0)  # it exits right after writing: the worker is adopted
    if not data:
        raise RuntimeError("the intermediate process could not fork the worker")
    return int(data)


def _serve(sock: socket.socket, parent_pid: int, worker_name: str,
           user_threads: dict[str, str]) -> None:
    while True:
        ready, _, _ = select.select([sock], [], [], PARENT_CHECK_S)
        if os.getppid() != parent_pid:
            os._exit(PARENT_GONE_EXIT_CODE)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MESSAGE_MAX, 8)
        except OSError:
            return
        if not data:
            return  # the main process closed its end: no more workers
        reply: dict[str, Any]
        try:
            reply = {"pid": _fork_worker(sock, parent_pid, json.loads(data), fds,
                                         worker_name, user_threads)}
        except Exception as error:  # noqa: BLE001 - answered, the main process spawns instead
            reply = {"error": f"{type(error).__name__}: {error}"}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            sock.send(json.dumps(reply).encode())
        except OSError:
            return


def main(argv: list[str]) -> None:
    fd, threads = start_child(argv, watch_thread=False)
    parent_pid = int(argv[1])
    sock = socket.socket(fileno=int(fd))
    worker_name = process_name()
    try:
        for module in PRELOAD:
            importlib.import_module(module)
        # What was imported lives as long as the workers: out of the cyclic collector's reach
        # in each of them (and their pages stay shared with the template).
        gc.freeze()
        count = _thread_count()
        if count != 1:
            raise RuntimeError(f"it runs {count} threads after its imports: forking it is "
                               "not safe")
    except Exception as error:  # noqa: BLE001 - reported: the main process spawns workers
        sock.send(json.dumps({"error": f"{type(error).__name__}: {error}"}).encode())
        return
    set_process_name(TEMPLATE_NAME)
    sock.send(b'{"ready": true}')
    _serve(sock, parent_pid, worker_name, json.loads(threads))


if __name__ == "__main__":
    main(sys.argv)
