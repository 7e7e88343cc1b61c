"""`python -m trainer ARGS` run in the test process, through `trainer.cli.main(argv)`.

A fresh `python -m trainer` costs about 0.7 s of imports (1.5 s more with torch) before it does
anything; about 100 tests paid it. `run_cli` runs the same `main(argv)` in this process and
returns what `subprocess.run(..., capture_output=True, text=True)` returned: a
`subprocess.CompletedProcess` with the exit status, stdout and stderr.

What a fresh process would have, and what is put back afterwards (the CLI, and the scripts
`python -m trainer run` executes, change it; a later test must not see those changes):

- stdout and stderr, captured at the file-descriptor level (fds 1 and 2 onto temporary files,
  `sys.stdout`/`sys.stderr` writing to them): `print`, logging handlers, warnings, tracebacks,
  and the output of the EnvRunner worker processes, which write to the descriptors they are
  passed (`trainer.runners.worker_forkserver`), not to Python's `sys.stdout`. Decoded as
  `text=True` decodes (the locale's encoding, universal newlines), but a lone carriage return
  is kept (so a check that plain output has none can fail).
- the exit status as Python computes it: `main`'s return value or `SystemExit`'s code (argparse
  errors: 2), an uncaught exception's traceback on stderr and 1, an uncaught KeyboardInterrupt's
  traceback and -SIGINT (Python ends itself with SIGINT then).
- the working directory (`cwd`), the environment (`env`, as subprocess.run's `env` replaces the
  environment), `sys.argv` (`python -m trainer` has trainer/__main__.py first: the usage lines'
  program name), `sys.path` (the working directory first, as `-m` puts it);
- signal handlers (`train` turns SIGINT/SIGTERM into stop requests, `evaluate` and `record` make
  SIGTERM raise KeyboardInterrupt for good, EnvRunner deadlines use SIGALRM);
- logging: a fresh process's root logger (level WARNING, no handlers: pytest's capture handlers
  would swallow what Python's last-resort handler prints to stderr), then every logger's level,
  handlers and propagation as they were (`--log-level` sets the library's);
- warnings: a fresh process's filters and printing to stderr (pytest's records them instead);
- numpy's print options, the BLAS thread pools (threadpoolctl) and torch's thread count;
- the launcher's import hook (`trainer.launcher.install`, which `run` leaves installed) with the
  `ray.*` stand-in modules it made, and the modules imported from the run's working directory
  or a folder the run put on `sys.path` (a script's own modules, a config's callbacks: another
  test's file of the same name must be imported afresh);
- the library's warn-once records (`ONCE_CACHES`), so that each run warns as a fresh one does.

Not replaced: `PYTHONPATH` in `env` reaches child processes only, not this interpreter's imports;
modules stay imported (torch, extras); atexit handlers do not run. A test that depends on those
(blocked imports, import side effects, startup time), on signals sent to the process, or on its
exit path stays a subprocess.
"""

from __future__ import annotations

import _thread
import contextlib
import copy
import faulthandler
import importlib
import locale
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import numpy as np
import threadpoolctl

import trainer
from trainer import launcher
from trainer.cli import main

#: `sys.argv[0]` of `python -m trainer`.
MAIN_FILE = os.path.join(os.path.dirname(os.path.abspath(trainer.__file__)), "__main__.py")
#: Module-level warn-once records of the library (module, attribute): copied before a run and
#: put back after it.
ONCE_CACHES = (
    ("trainer.util.deprecation", "_warned"),
    ("trainer.metrics.metrics_logger", "_warned"),
    ("trainer.compat.moved_modules", "_warned"),
    ("trainer.tune.trainable", "_CAP_WARNED"),
)
#: numpy's BLAS thread pools (threadpoolctl's view of the libraries loaded now).
BLAS_POOLS = threadpoolctl.ThreadpoolController()
#: How often a run past its timeout is interrupted again (the first SIGINT only asks `train` to
#: finish its iteration).
INTERRUPT_EVERY_S = 1.0


def run_cli(
    *args: str, cwd: Any, timeout: float = 120, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`subprocess.run([python, "-m", "trainer", *args], cwd=cwd, env=env, timeout=timeout,
    capture_output=True, text=True)`, run in this process (see the module's docstring).
    Past `timeout`, the run is interrupted (SIGINT, as Ctrl-C) until it returns, and
    `subprocess.TimeoutExpired` raised with its output and every thread's stack on stderr."""
    command = [sys.executable, "-m", "trainer", *args]
    output = _Output()
    deadline = _Deadline(timeout)
    status = -signal.SIGINT  # unless `main` returns: interrupted past the deadline
    with output, _fresh_process_state(cwd, env, list(args)), deadline:
        status = _run_main(list(args))
    if deadline.expired:
        raise subprocess.TimeoutExpired(command, timeout, output.stdout, output.stderr)
    return subprocess.CompletedProcess(command, status, output.stdout, output.stderr)


def _run_main(argv: list[str]) -> int:
    """`sys.exit(main(argv))` (trainer/__main__.py) and Python's report of how it ended."""
    try:
        return _exit_status(main(argv))
    except SystemExit as exit_:
        return _exit_status(exit_.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT
    except Exception:
        traceback.print_exc()
        return 1


def _exit_status(code: object) -> int:
    """The status a process exiting with `sys.exit(code)` has."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


class _Output:
    """Captures fds 1 and 2 (and `sys.stdout`/`sys.stderr` on them) into temporary files; on
    exit, `stdout` and `stderr` hold the text."""

    stdout = ""
    stderr = ""

    def __enter__(self) -> _Output:
        sys.stdout.flush()
        sys.stderr.flush()
        self._streams = sys.stdout, sys.stderr
        self._files = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self._saved_fds = os.dup(1), os.dup(2)
        os.dup2(self._files[0].fileno(), 1)
        os.dup2(self._files[1].fileno(), 2)
        # A process's own streams on a file: stdout block-buffered, stderr line-buffered.
        encoding = locale.getpreferredencoding(False)
        self._own_streams = (
            open(1, "w", encoding=encoding, closefd=False),
            open(2, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False),
        )
        sys.stdout, sys.stderr = self._own_streams
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            for stream in self._own_streams:  # flushed: the run may have replaced sys.stdout
                stream.close()
        finally:
            sys.stdout, sys.stderr = self._streams
            for fd, saved in zip((1, 2), self._saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
        self.stdout, self.stderr = (self._read(file) for file in self._files)

    @staticmethod
    def _read(file: Any) -> str:
        """The file's text in the locale's encoding, as `subprocess.run(text=True)` decodes a
        pipe's, but for a lone carriage return, which is kept (universal newlines would make
        it a line end, and a check that plain output has none could not fail)."""
        with file:
            file.seek(0)
            text = file.read().decode(locale.getpreferredencoding(False))
        return text.replace("\r\n", "\n")


class _Deadline:
    """Past `seconds`, prints every thread's stack to stderr and interrupts the main thread
    (SIGINT) every `INTERRUPT_EVERY_S` until the block ends. An interrupt sent as the block
    ends is absorbed here, never raised in the code after it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._running = True
        self._lock = threading.Lock()
        self._done = threading.Event()

    def __enter__(self) -> _Deadline:
        self._watch = threading.Thread(target=self._interrupt_when_due, daemon=True)
        self._watch.start()
        return self

    def _interrupt_when_due(self) -> None:
        if self._done.wait(self.seconds):
            return
        self.expired = True
        faulthandler.dump_traceback(sys.stderr, all_threads=True)
        while True:
            with self._lock:
                if not self._running:
                    return
                _thread.interrupt_main()
            if self._done.wait(INTERRUPT_EVERY_S):
                return

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        while True:
            try:
                with self._lock:
                    self._running = False
                self._done.set()
                _handle_pending_signals()
                break
            except KeyboardInterrupt:  # sent before `_running` was cleared
                continue
        self._watch.join()
        # A KeyboardInterrupt out of the block after the deadline is the deadline's.
        return self.expired and kind is not None and issubclass(kind, KeyboardInterrupt)


def _handle_pending_signals() -> None:
    """A Python call: the interpreter runs the handlers of signals that arrived before it."""


@contextlib.contextmanager
def _fresh_process_state(cwd: Any, env: dict | None, argv: list[str]) -> Iterator[None]:
    """The process-wide state of `python -m trainer ARGV` in `cwd` with `env`, and this
    process's own back afterwards (see the module's docstring)."""
    saved_cwd = os.getcwd()
    saved_environ = dict(os.environ)
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_modules = set(sys.modules)
    saved_finder = launcher.installed_finder()
    saved_signals = _signal_handlers()
    saved_caches = _once_caches()
    saved_blas_threads = [pool.num_threads for pool in BLAS_POOLS.lib_controllers]
    torch = sys.modules.get("torch")
    saved_torch_threads = torch.get_num_threads() if torch is not None else None
    try:
        os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.argv = [MAIN_FILE, *argv]
        sys.path.insert(0, os.getcwd())
        with _fresh_logging(), _fresh_warnings(), np.printoptions(**np.get_printoptions()):
            yield
    finally:
        own_folders = [str(cwd), *(path for path in sys.path if path not in saved_path)]
        os.chdir(saved_cwd)
        _forget_modules(set(sys.modules) - saved_modules, own_folders, saved_path)
        if launcher.installed_finder() is not saved_finder:
            launcher.uninstall()
            if saved_finder is not None:
                launcher.install(real_ray=saved_finder.real_ray)
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for number, handler in saved_signals.items():
            if signal.getsignal(number) is not handler:
                signal.signal(number, handler)
        for (module_name, attribute), value in saved_caches.items():
            _put_back(sys.modules[module_name], attribute, value)
        for pool, num_threads in zip(BLAS_POOLS.lib_controllers, saved_blas_threads, strict=True):
            if pool.num_threads != num_threads:
                pool.set_num_threads(num_threads)
        if saved_torch_threads is not None:
            sys.modules["torch"].set_num_threads(saved_torch_threads)


def _signal_handlers() -> dict[int, Any]:
    """The Python-level handler of each signal that has one (None: set outside Python)."""
    handlers = {}
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            handler = signal.getsignal(number)
            if handler is not None:
                handlers[number] = handler
    return handlers


def _put_back(module: Any, attribute: str, value: Any) -> None:
    """Sets `module.attribute` to `value`, a set or dict in place: other modules hold the same
    object under their own names (`from trainer.util.deprecation import _warned`), and a new
    object would leave them apart."""
    current = getattr(module, attribute)
    if isinstance(current, (set, dict)) and type(current) is type(value):
        current.clear()
        current.update(value)
    else:
        setattr(module, attribute, value)


def _once_caches() -> dict[tuple[str, str], Any]:
    """Copies of the `ONCE_CACHES` of the modules imported so far."""
    caches = {}
    for module_name, attribute in ONCE_CACHES:
        module = sys.modules.get(module_name)
        if module is not None:
            caches[module_name, attribute] = copy.copy(getattr(module, attribute))
    return caches


def _forget_modules(names: set[str], folders: list[str], own_path: list[str]) -> None:
    """Removes from `sys.modules` the modules among `names` whose file lies in one of `folders`
    (the run's working directory and the folders it put on `sys.path`: a script's and a
    config's own modules). A folder that holds an entry of `own_path` (this process's
    `sys.path`: the checkout, site-packages) is none of the run's own."""
    kept = [os.path.join(os.path.realpath(path), "") for path in own_path if path]
    roots = [
        root
        for root in (os.path.join(os.path.realpath(folder), "") for folder in folders if folder)
        if not any(path.startswith(root) for path in kept)
    ]
    for name in names:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path and any(os.path.realpath(path).startswith(root) for root in roots):
            del sys.modules[name]
    importlib.invalidate_caches()


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """A fresh process's root logger (WARNING, no handlers); every logger as it was after."""
    root = logging.getLogger()
    loggers = [root] + [
        logger for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]  # fmt: skip
    saved = [
        (logger, logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for logger in loggers
    ]
    saved_disable = logging.root.manager.disable
    root.handlers = []
    root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    try:
        yield
    finally:
        for logger, level, handlers, propagate, disabled in saved:
            logger.setLevel(level)
            logger.handlers = handlers
            logger.propagate, logger.disabled = propagate, disabled
        logging.disable(saved_disable)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Python's own `warnings.showwarning`: the formatted warning on the current stderr."""
    stream = file if file is not None else sys.stderr
    with contextlib.suppress(OSError):
        stream.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _fresh_warnings() -> Iterator[None]:
    """A fresh interpreter's warning filters (no -W, no PYTHONWARNINGS), printed to stderr."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        for category in (
            DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning
        ):  # fmt: skip
            warnings.simplefilter("ignore", category, append=True)
        warnings.showwarning = _show_warning
        yield
