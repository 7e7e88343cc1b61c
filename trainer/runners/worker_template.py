"""The worker template process: `python -m trainer.runners.worker_template PARENT_PID KERNEL
FD BLAS_THREADS [EXTRA]`. It imports what every EnvRunner worker needs (`PRELOAD`) and the
modules of the JSON list EXTRA (torch, when the main process starts it ahead of a torch
config's workers), then forks a worker for each request of the main process on the socket
FD, until that socket closes or the main process dies. The design, the requests and the
guarantees: `trainer.runners.worker_forkserver`.

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
import time
import traceback
from typing import Any

from trainer.runners.worker_forkserver import (
    ADOPTION_TIMEOUT_S,
    FORK_BATCH_MAX,
    FORK_TIMEOUT_S,
    MESSAGE_MAX,
    PARENT_CHECK_S,
    PRELOAD,
    TEMPLATE_NAME,
    import_in_order,
)
from trainer.util.child_process import (
    PARENT_GONE_EXIT_CODE,
    die_with_parent,
    process_name,
    set_process_name,
    start_child,
    wait_until_adopted,
)
from trainer.util.imports import collector_paused


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


#: What each forked child runs: the worker module, by name, as the template imports it with the
#: rest of `PRELOAD` (where start-up errors are reported to the main process).
WORKER_MODULE = "trainer.runners.worker"


def _apply_blas_threads(user_threads: dict[str, str]) -> None:
    """Gives a forked worker the BLAS threads the user asked for (the template has one)."""
    if not user_threads:
        return
    os.environ.update(user_threads)
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    blas = next(
        (
            user_threads[var]
            for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
            if var in user_threads
        ),
        None,
    )
    try:
        if blas is not None:
            controller.limit(limits=int(blas), user_api="blas")
        if "OMP_NUM_THREADS" in user_threads:
            controller.limit(limits=int(user_threads["OMP_NUM_THREADS"]), user_api="openmp")
    except ValueError:
        pass  # not a number: numpy ignores such a value too


def _become_worker(
    sock: socket.socket,
    parent_pid: int,
    index: int,
    std_targets: list[int],
    fds: list[int],
    others: list[int],
    worker_name: str,
    user_threads: dict[str, str],
) -> None:
    """The forked worker of EnvRunner `index`, on `fds` (its socket end, its stack pipe, the
    main process's stdout/stderr for `std_targets`): never returns into the template's loop
    (its own exit). `others` are the descriptors of the workers forked with it."""
    code = 0
    try:
        sock.close()  # the template's socket is the template's: its end must not linger here
        for fd in others:
            # Another worker's socket end held here would keep the main process from seeing
            # that worker's end (its reads would wait for this process instead).
            os.close(fd)
        if not wait_until_adopted(parent_pid, ADOPTION_TIMEOUT_S):
            os._exit(PARENT_GONE_EXIT_CODE)
        # Re-parented to the main process: the kernel's signal now follows it, not the
        # template.
        die_with_parent(parent_pid, kernel_signal=True)
        conn_fd, stack_fd, *std = fds
        for target, fd in zip(std_targets, std, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        set_process_name(worker_name)
        # The forked memory holds the template's numpy global seed (a spawned worker draws
        # one of its own); Python's `random` reseeds itself after a fork. A 32-bit seed from
        # the OS: `seed()` without one took 0.9 ms of the worker's start-up, this 0.2 ms.
        import numpy

        numpy.random.seed(int.from_bytes(os.urandom(4), "little"))
        _apply_blas_threads(user_threads)
        importlib.import_module(WORKER_MODULE).run(conn_fd, stack_fd, index, parent_pid)
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


def _fork_workers(
    sock: socket.socket,
    parent_pid: int,
    request: dict,
    fds: list[int],
    worker_name: str,
    user_threads: dict[str, str],
) -> list[int]:
    """Forks a worker per index of `request` through one intermediate process (see the
    module docstring); their pids."""
    with collector_paused():
        for module in request.get("preload", ()):
            # What these workers import beyond `PRELOAD` (torch, for a torch module's
            # EnvRunners), imported once here instead of in each worker and each restart.
            importlib.import_module(module)
    threads = _thread_count()
    if threads != 1:
        raise RuntimeError(f"it runs {threads} threads: forking it is not safe")
    indices = [int(index) for index in request["indices"]]
    worker_fds, std = fds[: 2 * len(indices)], fds[2 * len(indices) :]
    if len(worker_fds) != 2 * len(indices) or len(std) != len(request["std"]):
        raise RuntimeError(
            f"{len(fds)} descriptors for {len(indices)} workers and "
            f"{len(request['std'])} standard streams"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    intermediate = os.fork()
    if intermediate == 0:
        code = 0
        try:
            os.close(read_end)
            pids = []
            for k, index in enumerate(indices):
                own = worker_fds[2 * k : 2 * k + 2]
                worker = os.fork()
                if worker == 0:
                    os.close(write_end)
                    others = [fd for fd in worker_fds if fd not in own]
                    _become_worker(
                        sock,
                        parent_pid,
                        index,
                        request["std"],
                        [*own, *std],
                        others,
                        worker_name,
                        user_threads,
                    )
                pids.append(worker)
            os.write(write_end, json.dumps(pids).encode())
        except BaseException:  # noqa: BLE001 - reported to the template by the empty pipe
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        data = _read_until_closed(read_end, FORK_TIMEOUT_S)
    finally:
        os.close(read_end)
        os.waitpid(intermediate, 0)  # it exits right after writing: the workers are adopted
    pids = json.loads(data) if data else []
    if len(pids) != len(indices):
        raise RuntimeError("the intermediate process could not fork the workers")
    return pids


def _read_until_closed(fd: int, timeout_s: float) -> bytes:
    """What is written to pipe `fd` until its write end closes, or what came within
    `timeout_s`."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _serve(
    sock: socket.socket, parent_pid: int, worker_name: str, user_threads: dict[str, str]
) -> None:
    while True:
        ready, _, _ = select.select([sock], [], [], PARENT_CHECK_S)
        if os.getppid() != parent_pid:
            os._exit(PARENT_GONE_EXIT_CODE)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MESSAGE_MAX, 2 * FORK_BATCH_MAX + 2)
        except OSError:
            return
        if not data:
            return  # the main process closed its end: no more workers
        reply: dict[str, Any]
        try:
            reply = {
                "pids": _fork_workers(
                    sock, parent_pid, json.loads(data), fds, worker_name, user_threads
                )
            }
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
    fd, threads, *extra = start_child(argv, watch_thread=False)
    parent_pid = int(argv[1])
    sock = socket.socket(fileno=int(fd))
    worker_name = process_name()
    try:
        with collector_paused():
            for module in PRELOAD:
                importlib.import_module(module)
        # (torch, for a torch config's EnvRunners)
        preloaded = import_in_order(json.loads(extra[0]) if extra else [])
        # What was imported lives as long as the workers: out of the cyclic collector's reach
        # in each of them (and their pages stay shared with the template).
        gc.freeze()
        count = _thread_count()
        if count != 1:
            raise RuntimeError(f"it runs {count} threads after its imports: forking it is not safe")
    except Exception as error:  # noqa: BLE001 - reported: the main process spawns workers
        _tell_parent(sock, {"error": f"{type(error).__name__}: {error}"})
        return
    set_process_name(TEMPLATE_NAME)
    if _tell_parent(sock, {"ready": True, "preloaded": preloaded}):
        _serve(sock, parent_pid, worker_name, json.loads(threads))


def _tell_parent(sock: socket.socket, message: dict) -> bool:
    """Sends `message`; False when the main process has gone already (it stopped, e.g. on a
    config error, while the template imported): the template then ends without a trace."""
    try:
        sock.send(json.dumps(message).encode())
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


if __name__ == "__main__":
    main(sys.argv)
