"""Hostile and broken inputs (issue 17), measured:

1. SIGKILLs during saves: a child process saves a PPO checkpoint (2 EnvRunners) to one path in
   a loop; it is killed at a random moment (0 to 0.4 s in), then the checkpoint at that path is
   opened and restored into a running algorithm. Counts damaged checkpoints (target: 0 of 100).
2. Crafted checkpoints: every case of tests/test_hostile_checkpoints.py (path escapes, FIFO,
   device, malformed and inconsistent states) is restored into one algorithm; each must end in
   `CheckpointError`, leave `get_state()` bit-identical, and take under 1 s. Baseline in the same
   run: restoring the untouched checkpoint (ratio = slowest refusal / a good restore).
3. A silent client: 3 connections to the named-object server that never say anything; the
   latency of an authorised call is measured with and without them (ratio), and must stay under
   the handshake deadline.

Run: python bench/hostile.py [--kills 100]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

_SAVER = textwrap.dedent("""
    import sys
    from trainer import PPOConfig
    config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
              .training(train_batch_size=400, minibatch_size=200, num_epochs=1))
    algo = config.build()
    algo.train()
    print("ready", flush=True)
    while True:
        algo.train()
        algo.save_to_path(sys.argv[1])
""")


def _small_config():
    from trainer import PPOConfig

    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(train_batch_size=400, minibatch_size=200, num_epochs=1)
    )


def sigkills_during_saves(kills: int, directory: str) -> None:
    from checkpoints import CheckpointError

    path = os.path.join(directory, "checkpoint")
    script = os.path.join(directory, "saver.py")
    with open(script, "w") as handle:
        handle.write(_SAVER)
    damaged, checked, rng = 0, 0, random.Random(0)
    with _small_config().build() as reader:
        for _ in range(kills):
            saver = subprocess.Popen(
                [sys.executable, script, path], stdout=subprocess.PIPE, text=True
            )
            saver.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.4))
            saver.send_signal(signal.SIGKILL)
            saver.wait(timeout=10)
            if not os.path.exists(path) and not os.path.exists(
                os.path.join(directory, ".checkpoint.previous")
            ):
                continue  # killed before its first save completed: nothing to check yet
            checked += 1
            try:
                reader.restore_from_path(path)
            except CheckpointError as error:
                damaged += 1
                print(f"  damaged: {error}")
    print(f"SIGKILL during save: {kills} kills, {checked} checkpoints checked, {damaged} damaged")


def crafted_checkpoints(directory: str) -> None:
    import test_hostile_checkpoints as cases
    from checkpoints.codec import pack

    from checkpoints import CheckpointError

    with _small_config().build() as algo:
        algo.train()
        saved = os.path.join(directory, "saved")
        algo.save_to_path(saved)
        algo.train()
        good = []
        for _ in range(5):
            started = time.perf_counter()
            algo.restore_from_path(saved)
            good.append(time.perf_counter() - started)
        times, failures = {}, []
        for name, (craft, cause) in sorted(cases.CRAFTED.items()):
            path = os.path.join(directory, "crafted")
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(saved, path, symlinks=True)
            craft(Path(path))
            before = pack(algo.get_state())
            started = time.perf_counter()
            try:
                algo.restore_from_path(path)
                failures.append(f"{name}: no error")
            except CheckpointError as error:
                if cause not in str(error):
                    failures.append(f"{name}: {error}")
            times[name] = time.perf_counter() - started
            if pack(algo.get_state()) != before:
                failures.append(f"{name}: the state changed")
    slowest = max(times, key=times.get)
    print(
        f"crafted checkpoints: {len(times)} cases, {len(failures)} not refused cleanly "
        f"{failures}; slowest {slowest!r} {1000 * times[slowest]:.1f} ms "
        f"(all under 1 s: {max(times.values()) < 1.0})"
    )
    print(
        f"ratio (slowest refusal / good restore {1000 * statistics.median(good):.1f} ms): "
        f"{times[slowest] / statistics.median(good):.2f}"
    )


def silent_client() -> None:
    from trainer import create_named_object
    from trainer.named_objects import HANDSHAKE_TIMEOUT_S, client_settings, shutdown_named_objects

    class Counter:
        def __init__(self):
            self.n = 0

        def inc(self):
            self.n += 1
            return self.n

    counter = create_named_object("bench-counter", Counter)

    def latency_ms(rounds: int = 200) -> float:
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            counter.inc()
            samples.append(time.perf_counter() - started)
        return 1000 * statistics.median(samples)

    def fresh_connection_ms() -> float:
        from trainer.named_objects import connect

        started = time.perf_counter()
        connect(client_settings()["address"], client_settings()["authkey"]).close()
        return 1000 * (time.perf_counter() - started)

    alone, connect_alone = latency_ms(), fresh_connection_ms()
    silent = []
    for _ in range(3):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(client_settings()["address"])
        silent.append(sock)
    crowded, connect_crowded = latency_ms(), fresh_connection_ms()
    for sock in silent:
        sock.close()
    shutdown_named_objects()
    print(
        f"silent clients: call {alone:.3f} ms alone, {crowded:.3f} ms beside 3 silent "
        f"clients; a new authenticated connection {connect_alone:.1f} ms alone, "
        f"{connect_crowded:.1f} ms beside them (deadline {HANDSHAKE_TIMEOUT_S:g} s)"
    )
    print(
        f"ratio (new connection beside silent clients / alone): "
        f"{connect_crowded / connect_alone:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        crafted_checkpoints(directory)
        silent_client()
        sigkills_during_saves(args.kills, directory)


if __name__ == "__main__":
    main()
