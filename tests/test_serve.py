"""`python -m trainer serve CHECKPOINT`: a trained PPO's checkpoint served over HTTP in a real
server process; its actions for a batch of observations are the in-process algorithm's greedy
actions, bad requests get a 400 naming the problem while the server goes on, and SIGTERM ends
it with status 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import gymnasium as gym
import pytest
from helpers import small_ppo

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    algo = small_ppo().debugging(seed=0).build()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path_factory.mktemp("serve") / "ckpt"))
        env = gym.make("CartPole-v1")
        observations = [env.reset(seed=seed)[0] for seed in range(8)]
        greedy = [int(algo.compute_single_action(o, explore=False)) for o in observations]
    finally:
        algo.stop()
    return path, observations, greedy


def _post(url: str, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url + "/v1/actions", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_served_checkpoint_answers_batches_with_the_policys_actions(checkpoint):
    path, observations, greedy = checkpoint
    server = subprocess.Popen(
        [sys.executable, "-m", "trainer", "serve", path, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith(f"serving {path} on http://127.0.0.1:"), (
            line + server.stderr.read() if server.poll() is not None else line
        )
        url = line.split(" on ")[1].strip()
        with urllib.request.urlopen(url + "/v1/health", timeout=30) as reply:
            assert json.loads(reply.read())["policies"] == ["default_policy"]
        status, body = _post(url, {"observations": [o.tolist() for o in observations]})
        assert status == 200 and body["actions"] == greedy
        status, body = _post(url, {"observation": observations[3].tolist()})
        assert status == 200 and body["action"] == greedy[3]
        # Bad requests: a 400 saying what is wrong, and the server goes on.
        status, body = _post(url, {"observations": [[0.0, 1.0]]})
        assert status == 400 and "observation 0 is not in the observation space" in body["error"]
        assert "(shape (4,))" in body["error"]
        status, body = _post(url, b"{not json")
        assert status == 400 and "not JSON" in body["error"]
        status, body = _post(url, {"observation": [0, 0, 0, 0], "policy_id": "p9"})
        assert status == 400 and "'p9' is not a policy" in body["error"]
        status, body = _post(url, {"observations": [o.tolist() for o in observations[:2]]})
        assert status == 200 and body["actions"] == greedy[:2]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def _serve(path: str) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "trainer", "serve", path, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    line = server.stdout.readline()
    if not line.startswith("serving "):
        server.kill()
        raise AssertionError(line + server.stderr.read())
    return server, line.split(" on ")[1].strip()


@pytest.mark.parametrize("export_format", ["onnx", "numpy"])
def test_a_served_policy_export_answers_greedily(checkpoint, tmp_path, export_format):
    """An ONNX graph (run in onnxruntime) and the numpy export serve the checkpoint's greedy
    actions; asking an export to explore is a 400."""
    path, observations, greedy = checkpoint
    export = tmp_path / export_format
    subprocess.run(
        [sys.executable, "-m", "trainer", "export", path, "--format", export_format]
        + ["--output", str(export)],
        check=True,
        capture_output=True,
        timeout=120,
        cwd=REPO,
    )
    target = str(export / "model.onnx") if export_format == "onnx" else str(export)
    server, url = _serve(target)
    try:
        status, body = _post(url, {"observations": [o.tolist() for o in observations]})
        assert status == 200 and body["actions"] == greedy
        status, body = _post(url, {"observation": observations[0].tolist(), "explore": True})
        assert status == 400 and "acts greedily" in body["error"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def test_serve_refuses_a_bad_port_and_a_missing_checkpoint(tmp_path):
    for port, refusal in (("70000", "argument --port: 70000"), ("0", "argument checkpoint")):
        done = subprocess.run(
            [sys.executable, "-m", "trainer", "serve", str(tmp_path / "nothing"), "--port", port],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert done.returncode == 2 and refusal in done.stderr
