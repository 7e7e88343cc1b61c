"""An EnvRunner whose env is an external simulator that connects over TCP and speaks RLlib's
RLlink protocol (`trainer.env.external.rllink`): RLlib's `EnvRunnerServerForExternalInference`.

The simulator (the client) runs the env and the policy itself: it asks for the config and the
weights, steps its env, and sends its episodes in bulk. This runner has no env: it listens on
`env_config["port"] + worker_index` (host `env_config.get("host", "localhost")`), accepts one
client at a time, and its `sample()` returns the episodes the client sent.

Data flow::

    client --PING--> listener thread --PONG--> client
    client --GET_CONFIG / GET_STATE--> listener --SET_CONFIG / SET_STATE--> client
    client --EPISODES[_AND_GET_STATE]--> listener --queue--> sample() --> learner
    learner --set_weights()--> runner --SET_STATE--> client   (on-policy: the client waits)

States of the connection (`_ConnectionState`): LISTENING (no client yet), CONNECTED, LOST (the
client went away or broke the protocol; the port stays closed until the runner is re-made),
STOPPED.

Failures: a lost client is this runner's failure. `sample()` returns what the client sent
before it went, then raises `ClientLost` (a `ConnectionError`), and the group's fault tolerance
handles it like any runner failure: with `restart_failed_env_runners` the runner is made anew
and listens on the same port for the client to come back. Only the episode the client had not
sent yet is lost. `sample()` waits at most `sample_timeout_s` for a client's episodes.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import socket
import threading
import time
from collections import defaultdict
from enum import Enum
from typing import Any

import cloudpickle
import numpy as np

from trainer.core.models import RL_MODULE_STATE
from trainer.env.episode import SingleAgentEpisode
from trainer.env.external.rllink import RLlink, get_rllink_message, send_rllink_message
from trainer.metrics import WEIGHTS_SEQ_NO
from trainer.runners.env_runner import EnvRunner

logger = logging.getLogger(__name__)

#: How often the listener wakes to see whether the runner stopped.
_POLL_S = 0.2


class ClientLost(ConnectionError):
    """The external client went away (or broke the protocol) before this `sample()` call got
    its episodes."""


class _ConnectionState(Enum):
    LISTENING = "listening"
    CONNECTED = "connected"
    LOST = "lost"
    STOPPED = "stopped"


class EnvRunnerServerForExternalInference(EnvRunner):
    """An EnvRunner serving one external client over TCP (see the module doc). Needs the
    config's `observation_space` and `action_space` (there is no env to read them from)."""

    def __init__(self, config: Any, env_creator: Any = None, **kwargs: Any):
        kwargs["create_env"] = False
        super().__init__(config, env_creator, **kwargs)
        if self.spaces is None:
            raise ValueError(
                "EnvRunnerServerForExternalInference needs the spaces: set "
                "config.environment(observation_space=..., action_space=...)"
            )
        env_config = self.config.env_config or {}
        self.host: str = str(env_config.get("host", "localhost"))
        self.port: int = int(env_config.get("port", 5555)) + self.worker_index
        self._weights_seq_no = 0
        self._lock = threading.Condition()
        self._send_lock = threading.Lock()
        self._queue: list[SingleAgentEpisode] = []
        self._state = _ConnectionState.LISTENING
        self._lost_reason = ""
        #: The client sent EPISODES_AND_GET_STATE and waits for the next weights.
        self._blocked_on_state = False
        #: (return, length, duration) of the chunks already returned of episodes under way.
        self._earlier_chunks: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0])
        self.client_socket: socket.socket | None = None
        self.address: Any = None
        self.server_socket: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.server_socket.bind((self.host, self.port))
        except OSError as error:
            self.server_socket.close()
            raise OSError(
                f"EnvRunner {self.worker_index} cannot listen on {self.host}:{self.port} "
                f"(env_config['port'] {self.port - self.worker_index} + its index): {error}"
            ) from None
        self.server_socket.listen(1)
        self.server_socket.settimeout(_POLL_S)
        self.thread = threading.Thread(
            target=self._client_message_listener, name=f"rllink-{self.port}", daemon=True
        )
        self.thread.start()

    # -- the listener thread --------------------------------------------------------------
    def _client_message_listener(self) -> None:
        try:
            if not self._accept():
                return
            while self._state is _ConnectionState.CONNECTED:
                if self._blocked_on_state:
                    time.sleep(0.005)
                    continue
                self._answer(*get_rllink_message(self._client()))
        except (ConnectionError, OSError) as error:
            self._lose(str(error))
        except Exception as error:  # noqa: BLE001 - a bad message ends the connection, said so
            self._lose(f"{type(error).__name__}: {error}")

    def _accept(self) -> bool:
        """Waits for the client; False once the runner stops first."""
        logger.info("EnvRunner %d waiting for a client on port %d", self.worker_index, self.port)
        server = self.server_socket
        while self._state is _ConnectionState.LISTENING and server is not None:
            try:
                client, self.address = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return False
            client.settimeout(None)
            with self._lock:
                if self._state is not _ConnectionState.LISTENING:
                    client.close()
                    return False
                self.client_socket = client
                self._state = _ConnectionState.CONNECTED
            logger.info("EnvRunner %d connected to client %s", self.worker_index, self.address)
            return True
        return False

    def _client(self) -> socket.socket:
        client = self.client_socket
        if client is None:
            raise ConnectionError("no client")
        return client

    def _answer(self, kind: RLlink, body: dict) -> None:
        if kind is RLlink.PING:
            self._send({"type": RLlink.PONG.name})
        elif kind in (RLlink.EPISODES, RLlink.EPISODES_AND_GET_STATE):
            episodes = [self._episode(state) for state in body.get("episodes") or []]
            with self._lock:
                if kind is RLlink.EPISODES_AND_GET_STATE:
                    self._blocked_on_state = True
                self._queue.extend(episodes)
                self._lock.notify_all()
        elif kind is RLlink.GET_STATE:
            self._send_state()
        elif kind is RLlink.GET_CONFIG:
            self._send({"type": RLlink.SET_CONFIG.name, "config": _pickled(self.config)})
        else:
            raise ConnectionError(
                f"RLlink message {kind.name} is not served (the new API stack's server answers "
                "PING, GET_CONFIG, GET_STATE, EPISODES and EPISODES_AND_GET_STATE)"
            )

    def _episode(self, state: Any) -> SingleAgentEpisode:
        """An episode the client sent: RLlib's `SingleAgentEpisode.get_state()` or this
        project's."""
        if not isinstance(state, dict):
            raise ConnectionError(f"an episode's state must be a map, got {type(state).__name__}")
        episode = SingleAgentEpisode.from_state(
            state if "env_index" in state else _from_rllib_state(state)
        )
        spaces = self.spaces
        assert spaces is not None, "__init__ checked the spaces"
        episode.observation_space = spaces.observation_space()
        episode.action_space = spaces.action_space()
        return episode.to_numpy()

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self._state is _ConnectionState.CONNECTED:
                self._state = _ConnectionState.LOST
                self._lost_reason = reason
                logger.warning(
                    "EnvRunner %d lost its client on port %d: %s",
                    self.worker_index,
                    self.port,
                    reason,
                )
            self._blocked_on_state = False
            self._lock.notify_all()
        self._close_sockets()

    def _send(self, message: dict) -> None:
        with self._send_lock:
            send_rllink_message(self._client(), message)

    def _send_state(self) -> None:
        self._send({"type": RLlink.SET_STATE.name, "state": self._module_state()})

    def _module_state(self) -> dict:
        weights = {
            key: value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
            for key, value in self.module.get_state().items()
        }
        return {RL_MODULE_STATE: weights, WEIGHTS_SEQ_NO: self._weights_seq_no}

    # -- the EnvRunner API ----------------------------------------------------------------
    def sample(self, **kwargs: Any) -> list[SingleAgentEpisode]:
        """The episodes the client has sent since the last call: waits (at most
        `sample_timeout_s`) until there are some. Raises `ClientLost` once the client is gone
        and its episodes are returned, `TimeoutError` when no client sends in time."""
        timeout = float(self.config.sample_timeout_s or 60.0)
        deadline = time.monotonic() + max(1.0, timeout - 2.0)
        with self._lock:
            while not self._queue:
                if self._state is _ConnectionState.LOST:
                    raise ClientLost(
                        f"the external client of EnvRunner {self.worker_index} (port "
                        f"{self.port}) is gone: {self._lost_reason}; the episode it had not sent "
                        "is lost"
                    )
                if self._state is _ConnectionState.STOPPED:
                    raise RuntimeError(f"EnvRunner {self.worker_index} is stopped")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"no episodes from an external client on {self.host}:{self.port} within "
                        f"{timeout:g} s (sample_timeout_s; connection {self._state.value})"
                    )
                self._lock.wait(min(left, 1.0))
            episodes, self._queue = self._queue, []
        self._log_episodes(episodes)
        return episodes

    def _log_episodes(self, episodes: list[SingleAgentEpisode]) -> None:
        steps = done = 0
        for episode in episodes:
            steps += len(episode)
            earlier = self._earlier_chunks[episode.id_]
            earlier[0] += float(episode.get_return())
            earlier[1] += len(episode)
            earlier[2] += float(episode.get_duration_s())
            if episode.is_done:
                done += 1
                ret, length, duration = self._earlier_chunks.pop(episode.id_)
                self._ended_episodes.append((ret, int(length), duration))
        self.num_env_steps_stepped += steps
        self._log_sample_metrics(steps, done)

    def set_weights(
        self, weights: Any, global_timestep: Any = None, connector_state: Any = None
    ) -> None:
        super().set_weights(weights, global_timestep, connector_state)
        self._weights_seq_no += 1
        self._release_client()

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        if RL_MODULE_STATE in state:
            self._weights_seq_no += 1
            self._release_client()

    def _release_client(self) -> None:
        """Sends the new weights to a client waiting for them (on-policy sampling)."""
        if self._blocked_on_state and self._state is _ConnectionState.CONNECTED:
            try:
                self._send_state()
            except ConnectionError as error:
                self._lose(str(error))
            finally:
                self._blocked_on_state = False

    def get_spaces(self) -> dict:
        spaces = super().get_spaces()
        spaces["__env__"] = spaces[next(iter(spaces))]
        return spaces

    def assert_healthy(self) -> None:
        """Raises `AssertionError` once the runner stopped listening (RLlib's check)."""
        if self.server_socket is None and self._state is not _ConnectionState.CONNECTED:
            raise AssertionError(f"EnvRunner {self.worker_index} is not listening")

    def stop(self) -> None:
        """Closes the client's and the server's sockets; the listener thread ends."""
        with self._lock:
            self._state = _ConnectionState.STOPPED
            self._lock.notify_all()
        self._close_sockets()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout=2 * _POLL_S + 1.0)

    def _close_sockets(self) -> None:
        for name in ("client_socket", "server_socket"):
            sock = getattr(self, name)
            setattr(self, name, None)
            if sock is not None:
                # (OSError: not connected, a listening socket, or already gone.)
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


def _pickled(config: Any) -> bytes:
    """The config as RLlib's SET_CONFIG carries it (pickle; cloudpickle for what pickle
    cannot, e.g. classes defined in a script)."""
    try:
        return pickle.dumps(config)
    except (pickle.PicklingError, TypeError, AttributeError):
        return cloudpickle.dumps(config)


def _from_rllib_state(state: dict) -> dict:
    """RLlib's `SingleAgentEpisode.get_state()` in this project's form (spaces are the
    runner's; infos that arrive pickled, which are never unpickled, are empty)."""
    try:
        observations = state["observations"]
        lookback = int(observations["lookback"])
        num_obs = len(observations["data"])
        infos = state.get("infos") or {}
        info_data = infos.get("data") if isinstance(infos, dict) else None
        if not isinstance(info_data, list) or len(info_data) != num_obs:
            info_data = [{} for _ in range(num_obs)]
        extra = state.get("extra_model_outputs") or {}
        return {
            "id_": state["id_"],
            "agent_id": state.get("agent_id"),
            "module_id": state.get("module_id"),
            "multi_agent_episode_id": state.get("multi_agent_episode_id"),
            "observation_space": None,
            "action_space": None,
            "t_started": int(state["t_started"]),
            "t": int(state["t"]),
            "env_index": 0,
            "observations": _column(observations),
            "actions": _column(state["actions"]),
            "rewards": _column(state["rewards"]),
            "infos": {
                "data": [info if isinstance(info, dict) else {} for info in info_data],
                "lookback": lookback,
            },
            "extra_model_outputs": {key: _column(value) for key, value in extra.items()},
            "is_terminated": bool(state["is_terminated"]),
            "is_truncated": bool(state["is_truncated"]),
            "start_time": state.get("_start_time"),
            "last_step_time": state.get("_last_step_time"),
            "custom_data": state.get("custom_data") or {},
            "temporary_timestep_data": {},
        }
    except (KeyError, TypeError, ValueError) as error:
        raise ConnectionError(
            f"an episode's state is not RLlib's SingleAgentEpisode.get_state(): {error!r}"
        ) from None


def _column(buffer: dict) -> dict:
    return {
        "data": buffer["data"],
        "lookback": int(buffer["lookback"]),
        "finalized": bool(buffer.get("finalized", False)),
    }


#: RLlib's older name (`ray.rllib.env.tcp_client_inference_env_runner`).
TcpClientInferenceEnvRunner = EnvRunnerServerForExternalInference
