"""External simulators over TCP (RLlib's RLlink protocol): the wire format is msgpack_numpy's,
hostile bytes are refused without unpickling, and PPO trains on episodes a client process sends
to `EnvRunnerServerForExternalInference`. A client killed mid-episode is a runner failure: the
runner is restarted, a new client connects, and only the unsent episode is lost."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import gymnasium as gym
import msgpack
import msgpack_numpy
import numpy as np
import pytest

from trainer.algorithms.ppo import PPOConfig
from trainer.env.external.rllink import RLlink, get_rllink_message, pack, unpack
from trainer.runners.external_server import EnvRunnerServerForExternalInference

#: A client process: RLlib's dummy CartPole client (this project's), which after
#: `max_env_steps` steps kills itself with SIGKILL, its socket open and its last steps unsent.
_CLIENT = """
import os, signal, sys
import trainer.examples.envs.classes.utils.dummy_external_client as client
run = client._run
def run_then_die(sock, max_env_steps, seed):
    run(sock, max_env_steps, seed)
    if max_env_steps is not None:
        os.kill(os.getpid(), signal.SIGKILL)
client._run = run_then_die
steps = int(sys.argv[2])
client._dummy_external_client(int(sys.argv[1]), max_env_steps=steps or None, seed=0)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def test_messages_are_msgpack_numpy_maps():
    weights = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.int64(3)}
    data = pack({"type": RLlink.SET_STATE.name, "state": {"rl_module": weights}})
    assert data[:8] == str(len(data) - 8).zfill(8).encode()
    theirs = msgpack.unpackb(data[8:], raw=False, object_hook=msgpack_numpy.decode)
    np.testing.assert_array_equal(theirs["state"]["rl_module"]["w"], weights["w"])
    assert theirs["state"]["rl_module"]["w"].dtype == np.float32
    assert theirs["state"]["rl_module"]["n"] == 3
    # ...and what RLlib's client sends (msgpack with msgpack_numpy) reads back here.
    body = msgpack.packb(
        {"type": "EPISODES", "episodes": [{"o": np.ones((2, 4), np.float32)}], "timesteps": 2},
        default=msgpack_numpy.encode,
        use_bin_type=True,
    )
    kind, message = unpack(body)
    assert kind is RLlink.EPISODES and message["timesteps"] == 2
    np.testing.assert_array_equal(message["episodes"][0]["o"], np.ones((2, 4), np.float32))


class _Boom:
    def __reduce__(self):
        return (print, ("unpickled!",))


def test_hostile_messages_are_refused_without_unpickling(capfd):
    # msgpack_numpy pickles object arrays; such an array is read as None, never unpickled.
    body = msgpack.packb(
        {"type": "EPISODES", "x": np.array([_Boom(), None], dtype=object)},
        default=msgpack_numpy.encode,
        use_bin_type=True,
    )
    assert unpack(body)[1]["x"] is None
    assert "unpickled!" not in capfd.readouterr().out
    with pytest.raises(ConnectionError, match="unknown message type 'HACK'"):
        unpack(msgpack.packb({"type": "HACK"}))
    with pytest.raises(ConnectionError, match="no `type` field"):
        unpack(msgpack.packb([1, 2]))
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"12ab5678" + b"x" * 8)
        with pytest.raises(ConnectionError, match="is not digits"):
            get_rllink_message(right)


def _config(port: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment(
            observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
            action_space=gym.spaces.Discrete(2),
            env_config={"port": port},
        )
        .env_runners(
            env_runner_cls=EnvRunnerServerForExternalInference,
            num_env_runners=1,
            sample_timeout_s=60,
        )
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
        .debugging(seed=0)
    )


def _client(port: int, max_env_steps: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CLIENT, str(port), str(max_env_steps)])


@pytest.mark.slow
def test_ppo_trains_on_a_client_process_and_survives_its_death():
    port = _free_port()
    algo = _config(port).build()
    # The first client sends 2 batches of 100 steps, takes 50 more and is killed.
    first = _client(port + 1, 250)
    second: list[subprocess.Popen] = []

    def restart_client_when_killed():
        first.wait(120)
        second.append(_client(port + 1, 0))

    watcher = threading.Thread(target=restart_client_when_killed, daemon=True)
    watcher.start()
    try:
        weights = algo.get_module().get_state()
        lifetime = [algo.train()["env_runners"]["num_env_steps_sampled_lifetime"] for _ in range(2)]
        assert lifetime == [100, 200]
        moved = algo.get_module().get_state()
        assert any(not np.array_equal(weights[k], moved[k]) for k in weights)
        result = algo.train()  # the client dies in it; the restarted runner serves the next one
        tolerance = result["fault_tolerance"]
        assert tolerance["num_remote_worker_restarts"] >= 1
        assert any("ClientLost" in failure for failure in tolerance["failures_this_iteration"])
        for _ in range(2):
            result = algo.train()
        # Every step the clients sent counts; only the killed client's 50 unsent steps are gone.
        steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
        assert steps % 100 == 0 and steps >= 400, steps
        assert first.returncode == -9
    finally:
        algo.stop()
        watcher.join(10)
        for client in second:
            assert client.wait(30) == 0  # the server closed: the client ends on its own
