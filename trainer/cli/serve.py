"""`python -m trainer serve CHECKPOINT`: a checkpoint's policy as an HTTP endpoint on this
machine (the one-machine way to serve a policy; RLlib's own example puts it on Ray Serve).
CHECKPOINT may also be a policy export (`python -m trainer export --format onnx|numpy`: an
.onnx file or the export folder), served greedily in onnxruntime or numpy alone.

    POST /v1/actions   {"observations": [obs, ...]}   -> {"actions": [action, ...]}
                       {"observation": obs}           -> {"action": action}
                       ("explore": true|false, "policy_id": "...": optional, per request)
    GET  /v1/health    -> {"status": "ok", "checkpoint": ..., "policies": [...]}

Observations and actions are JSON: numbers, lists (arrays), and dicts / lists for Dict and
Tuple spaces. A batch is answered in one request, in its order, with one forward pass of the
policy (a recurrent policy: each observation from its initial state). Bad input is answered 400
with the reason (which field, what was given, what the space takes); the server goes on.
Requests are served one at a time on the policy (a lock), on a thread per connection.

It prints one line, `serving CHECKPOINT on http://HOST:PORT`, once it listens (`--port 0`:
a free port, the line says which), and runs until SIGINT or SIGTERM, then exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from trainer.checkpoints import CheckpointError
from trainer.cli.evaluate import load_for_evaluation, resolve_checkpoint
from trainer.export.reader import load as load_exported_policy

#: The export's files (`trainer.export`: the ONNX graph, the numpy export's network) and the
#: ONNX metadata key of the policy's description.
ONNX_FILE, NUMPY_SPEC_FILE, DESCRIPTION = "model.onnx", "policy.json", "localrl_policy"
DEFAULT_POLICY = "default_policy"

#: The longest request body taken (bytes): a batch of large observations fits; more is 413.
MAX_BODY_BYTES = 64 * 2**20


class RequestError(ValueError):
    """A request the policy cannot answer: its reason goes back as a 400."""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "serve",
        help="serve a checkpoint's policy over HTTP (actions for observations)",
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument(
        "checkpoint",
        help="a checkpoint folder, a run folder (its best), or a policy export (.onnx, or an "
        "export folder: served greedily)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (0: a free one)")
    parser.add_argument(
        "--explore",
        action="store_true",
        help="sample actions (default: the greedy action), unless a request says otherwise",
    )
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="build the algorithm from the checkpoint's pickle file even when it is not "
        "signed with your key (only for checkpoints you trust; see evaluate --help)",
    )
    parser.set_defaults(run=run_serve)
    return parser


class ExportedPolicy:
    """A policy exported by `python -m trainer export` (an ONNX graph run in onnxruntime, or
    the numpy export's files), served greedily: it answers as `Algorithm.compute_action_batch`
    does, one forward pass per batch (a recurrent one from its initial state)."""

    def __init__(self, path: str) -> None:
        onnx_file = path if path.endswith(".onnx") else os.path.join(path, ONNX_FILE)
        if os.path.isfile(onnx_file):
            import onnxruntime

            self.kind = "onnx"
            self._session = onnxruntime.InferenceSession(onnx_file)
            spec = json.loads(self._session.get_modelmeta().custom_metadata_map[DESCRIPTION])
            self._inputs = {i.name: i for i in self._session.get_inputs()}
        else:
            self.kind = "numpy"
            self._policy = load_exported_policy(path)
            spec = self._policy.spec
        self.module_id = str(spec.get("module_id", DEFAULT_POLICY))
        self._action_space = spec["action_space"]
        self.spaces = {
            self.module_id: (_space(spec["observation_space"]), _space(self._action_space))
        }

    def compute_action_batch(self, observations: list, *, policy_id: str, explore: bool) -> list:
        if explore:
            raise RequestError(
                "'explore': an exported policy acts greedily; serve the checkpoint to explore"
            )
        batch = np.asarray(observations, dtype=np.float32)
        if self.kind == "onnx":
            feed = {"obs": batch}
            for name in ("state_in_h", "state_in_c"):
                if name in self._inputs:
                    size = int(self._inputs[name].shape[-1])
                    feed[name] = np.zeros((len(batch), size), np.float32)
            (greedy,) = self._session.run(["greedy_action"], feed)
        else:
            greedy = self._policy.forward(batch)["greedy_action"]
        if self._action_space["type"] == "Discrete":
            return [int(a) for a in greedy]
        return list(np.asarray(greedy))

    def stop(self) -> None:
        """(Nothing runs beside the policy.)"""


def _space(data: dict) -> Any:
    """A Box or Discrete space from the export's JSON."""
    import gymnasium as gym

    if data["type"] == "Discrete":
        return gym.spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
    shape = tuple(int(d) for d in data["shape"])
    low = np.asarray([float(v) for v in data["low"]], np.float32).reshape(shape)
    high = np.asarray([float(v) for v in data["high"]], np.float32).reshape(shape)
    return gym.spaces.Box(low, high, shape, dtype=np.dtype(data["dtype"]))


def is_export(path: str) -> bool:
    """Whether `path` is a policy export (an .onnx file, or a folder with the ONNX graph or
    the numpy export's files) rather than a checkpoint."""
    return path.endswith(".onnx") or any(
        os.path.isfile(os.path.join(path, name)) for name in (ONNX_FILE, NUMPY_SPEC_FILE)
    )


class PolicyServer:
    """The policies behind a lock (a checkpoint's algorithm, or an `ExportedPolicy`):
    `answer(request)` for one decoded request."""

    def __init__(self, algorithm: Any, checkpoint: str, explore: bool) -> None:
        self.algorithm = algorithm
        self.checkpoint = checkpoint
        self.explore = explore
        self._lock = threading.Lock()
        if isinstance(algorithm, ExportedPolicy):
            self.spaces = dict(algorithm.spaces)
        else:
            spaces = algorithm.env_runner_group.get_spaces()
            self.spaces = {
                policy_id: pair
                for policy_id, pair in spaces.items()
                if not policy_id.startswith("__")
            }

    def health(self) -> dict:
        return {"status": "ok", "checkpoint": self.checkpoint, "policies": sorted(self.spaces)}

    def answer(self, request: Any) -> dict:
        if not isinstance(request, dict):
            raise RequestError(
                f"the body must be a JSON object with 'observations' or 'observation', "
                f"not {type(request).__name__}"
            )
        explore = request.get("explore", self.explore)
        if not isinstance(explore, bool):
            raise RequestError(f"'explore' must be true or false, not {explore!r}")
        policy_id = request.get("policy_id", next(iter(sorted(self.spaces))))
        if policy_id not in self.spaces:
            raise RequestError(
                f"'policy_id' {policy_id!r} is not a policy of this checkpoint "
                f"(its policies: {sorted(self.spaces)})"
            )
        if ("observations" in request) == ("observation" in request):
            raise RequestError("give either 'observations' (a list) or 'observation' (one)")
        if "observation" in request:
            return {"action": self._act([request["observation"]], policy_id, explore)[0]}
        batch = request["observations"]
        if not isinstance(batch, list):
            raise RequestError(f"'observations' must be a list, not {type(batch).__name__}")
        return {"actions": self._act(batch, policy_id, explore)}

    def _act(self, observations: list, policy_id: str, explore: bool) -> list:
        obs_space = self.spaces[policy_id][0]
        decoded = []
        for index, observation in enumerate(observations):
            value = _from_json(observation, obs_space)
            if not obs_space.contains(value):
                shape = getattr(obs_space, "shape", None)
                raise RequestError(
                    f"observation {index} is not in the observation space {obs_space}"
                    + (f" (shape {tuple(shape)})" if shape is not None else "")
                )
            decoded.append(value)
        with self._lock:
            actions = self.algorithm.compute_action_batch(
                decoded, explore=explore, policy_id=policy_id
            )
        return [_to_json(action) for action in actions]


def _from_json(value: Any, space: Any) -> Any:
    """A JSON value as an element of `space` (arrays in the space's dtype)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        if not isinstance(value, dict):
            raise RequestError(f"a Dict observation must be a JSON object, not {value!r:.80}")
        return {key: _from_json(value.get(key), sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(value, list) or len(value) != len(space.spaces):
            raise RequestError(f"a Tuple observation must be a list of {len(space.spaces)} values")
        return tuple(_from_json(v, sub) for v, sub in zip(value, space.spaces, strict=True))
    if isinstance(space, gym.spaces.Discrete):
        if not isinstance(value, int) or isinstance(value, bool):
            raise RequestError(f"a Discrete observation must be an integer, not {value!r:.80}")
        return np.int64(value)
    try:
        return np.asarray(value, dtype=space.dtype)
    except (TypeError, ValueError) as error:
        raise RequestError(f"an observation must be numbers: {error}") from None


def _to_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _to_json(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_to_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def make_handler(server: PolicyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - its name
            pass  # (one line per request would drown the terminal)

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.rstrip("/") == "/v1/health":
                self._send(200, server.health())
            else:
                self._send(404, {"error": f"no {self.path}: GET /v1/health, POST /v1/actions"})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path.rstrip("/") != "/v1/actions":
                self._send(404, {"error": f"no {self.path}: POST /v1/actions"})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 < length <= MAX_BODY_BYTES:
                self._send(
                    413 if length > MAX_BODY_BYTES else 400,
                    {"error": f"a JSON body of 1 to {MAX_BODY_BYTES} bytes is needed"},
                )
                return
            try:
                request = json.loads(self.rfile.read(length))
                self._send(200, server.answer(request))
            except json.JSONDecodeError as error:
                self._send(400, {"error": f"the body is not JSON: {error}"})
            except RequestError as error:
                self._send(400, {"error": str(error)})
            except Exception as error:  # noqa: BLE001 - the policy failed: say so, go on
                self._send(500, {"error": f"{type(error).__name__}: {error}"})

    return Handler


def run_serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not 0 <= args.port <= 65535:
        parser.error(f"argument --port: {args.port}: a port is 0 (a free one) to 65535")
    path = args.checkpoint if is_export(args.checkpoint) else resolve_checkpoint(args.checkpoint)
    try:
        if is_export(path):
            algorithm = ExportedPolicy(path)
        else:
            algorithm = load_for_evaluation(path, allow_pickle=args.trust_pickle)
    except (CheckpointError, OSError, KeyError, ValueError) as error:
        parser.error(f"argument checkpoint: {error}")
    try:
        policy = PolicyServer(algorithm, path, args.explore)
        try:
            httpd = ThreadingHTTPServer((args.host, args.port), make_handler(policy))
        except OSError as error:
            parser.error(f"argument --port: cannot listen on {args.host}:{args.port}: {error}")
        httpd.daemon_threads = True

        def shut_down(signum: int, frame: Any) -> None:
            threading.Thread(target=httpd.shutdown, daemon=True).start()

        previous = {sig: signal.signal(sig, shut_down) for sig in (signal.SIGINT, signal.SIGTERM)}
        host, port = str(httpd.server_address[0]), int(httpd.server_address[1])
        print(f"serving {path} on http://{host}:{port}", flush=True)
        try:
            httpd.serve_forever(poll_interval=0.2)
        finally:
            httpd.server_close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        algorithm.stop()
    return 0
