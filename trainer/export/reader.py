"""Reads a policy exported by localrl's numpy export (`python -m trainer export CHECKPOINT
--format numpy`) and acts with it, with numpy alone. This file is copied into each export
folder as `policy_reader.py`, next to `policy.json` (the network) and `weights.npz`:

    from policy_reader import load
    policy = load("exported_numpy")
    action = policy.greedy_action(obs)            # one observation -> the env's action
    out = policy.forward(obs_batch)               # {"action_dist_inputs", "greedy_action"}

A recurrent policy (`policy.recurrent`) takes and returns its state:
`action, state = policy.greedy_action(obs, state)` (None: the initial state, at an episode's
start); `forward(obs_batch, state)` adds "state_out".
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

SPEC_FILE = "policy.json"
WEIGHTS_FILE = "weights.npz"


def _activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(x)
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if name == "silu":
        return x / (1.0 + np.exp(-x))
    if name == "elu":
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))
    if name == "linear":
        return x
    raise ValueError(f"unknown activation {name!r}")


def _bounds(values: list) -> np.ndarray:
    return np.array([float(v) for v in values], dtype=np.float64)  # "inf" -> inf


class Policy:
    """The exported policy: `spec` (policy.json) and its `weights` (weights.npz)."""

    def __init__(self, spec: dict[str, Any], weights: dict[str, np.ndarray]):
        self.spec, self.weights = spec, weights
        self.observation_space = spec["observation_space"]
        self.action_space = spec["action_space"]
        self.recurrent = spec["lstm"] is not None

    def _mlp(self, layers: list[dict], x: np.ndarray) -> np.ndarray:
        for layer in layers:
            x = _activate(
                layer["activation"], x @ self.weights[layer["weight"]] + self.weights[layer["bias"]]
            )
        return x

    def initial_state(self, batch_size: int = 1) -> dict[str, np.ndarray]:
        """The LSTM's state at an episode's start: zeros `(batch_size, cell_size)`."""
        size = self.spec["lstm"]["cell_size"]
        return {
            "h": np.zeros((batch_size, size), np.float32),
            "c": np.zeros((batch_size, size), np.float32),
        }

    def forward(self, obs: Any, state: dict | None = None) -> dict[str, Any]:
        """A batch of observations -> the action distribution's inputs, the greedy actions and,
        for a recurrent policy, the state out."""
        spec, w = self.spec, self.weights
        x = np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)
        if spec["filter"] is not None:  # the MeanStdFilter's constants
            f = spec["filter"]
            x = (x - w[f["mean"]]) / w[f["scale"]]
            if f["clip"] is not None:
                x = np.clip(x, -f["clip"], f["clip"])
        x = self._mlp(spec["encoder"], x)
        out: dict[str, Any] = {}
        if spec["lstm"] is not None:  # one LSTM step, torch's gate order i, f, g, o
            lstm = spec["lstm"]
            state = state if state is not None else self.initial_state(len(x))
            gates = x @ w[lstm["weight_ih"]] + state["h"] @ w[lstm["weight_hh"]] + w[lstm["bias"]]
            i, f, g, o = np.split(gates, 4, axis=-1)
            c = _activate("sigmoid", f) * state["c"] + _activate("sigmoid", i) * np.tanh(g)
            x = _activate("sigmoid", o) * np.tanh(c)
            out["state_out"] = {"h": x, "c": c}
        heads = spec["heads"]
        if "advantage" in heads:  # dueling Q: V + A - mean(A)
            advantages = self._mlp(heads["advantage"], x)
            inputs = (
                self._mlp(heads["value"], x) + advantages - advantages.mean(axis=-1, keepdims=True)
            )
        else:
            inputs = self._mlp(heads.get("pi", heads.get("q")), x)
        if spec["log_std"] is not None:
            log_std = spec["log_std"]
            if log_std["free"] is not None:
                free = np.broadcast_to(w[log_std["free"]], inputs.shape)
                inputs = np.concatenate([inputs, free], axis=-1)
            if log_std["clip"] is not None:
                n = inputs.shape[-1] // 2
                inputs[:, n:] = np.clip(inputs[:, n:], -log_std["clip"], log_std["clip"])
        out["action_dist_inputs"] = inputs
        out["greedy_action"] = self._greedy(inputs)
        return out

    def _greedy(self, inputs: np.ndarray) -> np.ndarray:
        """The greedy actions as the env takes them."""
        greedy, space = self.spec["greedy"], self.action_space
        if greedy["kind"] == "argmax":
            return np.argmax(inputs, axis=-1)
        actions = inputs[:, : inputs.shape[-1] // 2]
        if greedy["kind"] == "tanh_mean":
            actions = np.clip(np.tanh(actions), -1.0, 1.0)
        low, high = _bounds(space["low"]), _bounds(space["high"])
        if greedy["normalize"] and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
            actions = low + (np.clip(actions, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
        elif greedy["clip"]:
            actions = np.clip(actions, low, high)
        return actions.astype(space["dtype"]).reshape(len(inputs), *space["shape"])

    def dist_inputs(self, obs: Any, state: dict | None = None) -> np.ndarray:
        """The action distribution's inputs for a batch of observations."""
        return self.forward(obs, state)["action_dist_inputs"]

    def greedy_action(self, obs: Any, state: dict | None = None) -> Any:
        """One observation's greedy action (an int for Discrete); a recurrent policy returns
        `(action, state out)`."""
        out = self.forward(np.asarray(obs)[None], state)
        action = out["greedy_action"][0]
        action = int(action) if self.action_space["type"] == "Discrete" else action
        return (action, out["state_out"]) if self.recurrent else action


def load(folder: str) -> Policy:
    """The policy exported into `folder`."""
    with open(os.path.join(folder, SPEC_FILE)) as handle:
        spec = json.load(handle)
    with np.load(os.path.join(folder, WEIGHTS_FILE)) as weights:
        return Policy(spec, {key: weights[key] for key in weights.files})
