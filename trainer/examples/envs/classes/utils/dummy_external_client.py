"""RLlib's dummy external client: a CartPole "simulator" that connects to an
`EnvRunnerServerForExternalInference` over TCP (RLlink), runs the policy itself and sends its
episodes in bulk, waiting for new weights after each batch (on-policy).

`_dummy_external_client(port)` is what RLlib's `env_connecting_to_rllib_w_tcp_client.py` starts
in a thread. It ends when the server closes the connection (training is over) and gives up
connecting after `connect_timeout_s`.
"""

from __future__ import annotations

import pickle
import socket
import time
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.env.episode import SingleAgentEpisode
from trainer.env.external.rllink import RLlink, get_rllink_message, send_rllink_message


def _connect(port: int, host: str, connect_timeout_s: float) -> socket.socket:
    deadline = time.monotonic() + connect_timeout_s
    while True:
        try:
            return socket.create_connection((host, port), timeout=5.0)
        except OSError:
            if time.monotonic() > deadline:
                raise ConnectionError(
                    f"no RLlink server on {host}:{port} within {connect_timeout_s:g} s"
                ) from None
            time.sleep(0.5)


def _expect(sock_: socket.socket, kind: RLlink) -> dict:
    got, body = get_rllink_message(sock_)
    if got is not kind:
        raise ConnectionError(f"expected {kind.name} from the server, got {got.name}")
    return body


def _logits(module: Any, obs: np.ndarray) -> np.ndarray:
    batch = {"obs": np.asarray([obs], np.float32)}
    if getattr(module, "framework", None) == "torch":
        import torch

        with torch.no_grad():
            out = module.forward_exploration({"obs": torch.as_tensor(batch["obs"])})
        return out["action_dist_inputs"][0].numpy()
    return np.asarray(module.forward_exploration(batch)["action_dist_inputs"][0])


def _dummy_external_client(
    port: int = 5556,
    *,
    host: str = "localhost",
    connect_timeout_s: float = 120.0,
    max_env_steps: int | None = None,
    seed: int | None = None,
) -> None:
    """Runs CartPole against the server on `port` (see the module doc). `max_env_steps` ends
    it after that many steps (a client that dies mid-episode, for tests)."""
    sock_ = _connect(port, host, connect_timeout_s)
    sock_.settimeout(None)
    try:
        _run(sock_, max_env_steps, seed)
    except ConnectionError as error:
        print(f"dummy external client on port {port}: the server closed ({error})")
    finally:
        sock_.close()


def _run(sock_: socket.socket, max_env_steps: int | None, seed: int | None) -> None:
    send_rllink_message(sock_, {"type": RLlink.PING.name})
    _expect(sock_, RLlink.PONG)
    send_rllink_message(sock_, {"type": RLlink.GET_CONFIG.name})
    config = pickle.loads(_expect(sock_, RLlink.SET_CONFIG)["config"])
    module = config.get_rl_module_spec().build()
    send_rllink_message(sock_, {"type": RLlink.GET_STATE.name})
    module.set_state(_expect(sock_, RLlink.SET_STATE)["state"]["rl_module"])
    env_steps_per_sample = config.get_rollout_fragment_length()

    rng = np.random.default_rng(seed)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    episode = SingleAgentEpisode(observations=[obs])
    episodes = [episode]
    steps = 0
    while max_env_steps is None or steps < max_env_steps:
        logits = _logits(module, obs)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        action = int(rng.choice(len(probs), p=probs))
        obs, reward, terminated, truncated, _ = env.step(action)
        steps += 1
        episode.add_env_step(
            obs,
            action,
            float(reward),
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={
                "action_dist_inputs": logits,
                "action_logp": float(np.log(probs[action])),
            },
        )
        if sum(map(len, episodes)) == env_steps_per_sample:
            send_rllink_message(
                sock_,
                {
                    "type": RLlink.EPISODES_AND_GET_STATE.name,
                    "episodes": [e.get_state() for e in episodes],
                    "timesteps": env_steps_per_sample,
                },
            )
            module.set_state(_expect(sock_, RLlink.SET_STATE)["state"]["rl_module"])
            episodes = []
            if not episode.is_done:
                episode = episode.cut()
                episodes.append(episode)
        if episode.is_done:
            obs, _ = env.reset()
            episode = SingleAgentEpisode(observations=[obs])
            episodes.append(episode)
