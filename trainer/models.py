"""The RL module: policy (and value) networks for one pair of spaces, as `model_config` describes.

The same class runs inside every EnvRunner (inference only: `dist_inputs`, which the exploration
turns into actions) and in the learner (training passes and gradients). Weights travel as a dict of named float32 arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from trainer.checks import is_int
from trainer.nn import (
    ACTIVATIONS,
    MLP,
    Categorical,
    DiagGaussian,
    activate,
    activate_grad,
    flatten,
)

#: `model_config` keys this module understands, with RLlib's defaults (`DefaultModelConfig`).
MODEL_DEFAULTS: dict = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "vf_share_layers": False,
    "free_log_std": False,
    # Hidden layers of the heads after the encoder (DQN's advantage and value streams).
    "head_fcnet_hiddens": [],
    "head_fcnet_activation": "relu",
}


def check_model_config(model_config: dict, setting: str = "model_config") -> dict:
    """Validates a model config and returns it merged over the defaults."""
    if not isinstance(model_config, dict):
        raise ValueError(f"{setting}={model_config!r}: must be a dict with keys from "
                         f"{sorted(MODEL_DEFAULTS)}")
    unknown = sorted(set(model_config) - set(MODEL_DEFAULTS))
    if unknown:
        raise ValueError(
            f"{setting}: unknown key(s) {unknown}; the numpy models support {sorted(MODEL_DEFAULTS)}"
        )
    merged = {**MODEL_DEFAULTS, **model_config}
    for prefix in ("fcnet", "head_fcnet"):
        hiddens = merged[f"{prefix}_hiddens"]
        if not (isinstance(hiddens, (list, tuple)) and all(
                is_int(h) and h > 0 for h in hiddens)):
            raise ValueError(f"{setting}['{prefix}_hiddens']={hiddens!r}: must be a list of "
                             "positive ints (empty for no hidden layer)")
        merged[f"{prefix}_hiddens"] = list(hiddens)
        if merged[f"{prefix}_activation"] not in ACTIVATIONS:
            raise ValueError(f"{setting}['{prefix}_activation']="
                             f"{merged[f'{prefix}_activation']!r}: allowed values are "
                             f"{list(ACTIVATIONS)}")
    for flag in ("vf_share_layers", "free_log_std"):
        if not isinstance(merged[flag], bool):
            raise ValueError(f"{setting}[{flag!r}]={merged[flag]!r}: must be True or False")
    return merged


@dataclass(frozen=True)
class SpaceInfo:
    """What the networks need to know about the env's spaces."""

    obs_dim: int
    obs_discrete_n: int | None  # Discrete observations are one-hot encoded
    action_discrete_n: int | None
    action_dim: int  # 1 for Discrete
    action_low: np.ndarray | None
    action_high: np.ndarray | None

    @classmethod
    def from_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> SpaceInfo:
        if isinstance(observation_space, gym.spaces.Box):
            obs_dim, obs_n = int(np.prod(observation_space.shape)), None
        elif isinstance(observation_space, gym.spaces.Discrete):
            obs_dim, obs_n = int(observation_space.n), int(observation_space.n)
        else:
            raise ValueError(
                f"observation space {observation_space} is not supported: the numpy models take "
                "Box and Discrete observations (flatten other spaces with a gymnasium wrapper)"
            )
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(obs_dim, obs_n, int(action_space.n), 1, None, None)
        if isinstance(action_space, gym.spaces.Box):
            return cls(obs_dim, obs_n, None, int(np.prod(action_space.shape)),
                       action_space.low.astype(np.float32).ravel(),
                       action_space.high.astype(np.float32).ravel())
        raise ValueError(f"action space {action_space} is not supported: Discrete and Box are")

    def action_space(self) -> gym.Space:
        """The env's action space, rebuilt from what is recorded here."""
        if self.action_discrete_n is not None:
            return gym.spaces.Discrete(self.action_discrete_n)
        return gym.spaces.Box(self.action_low, self.action_high, dtype=np.float32)

    def preprocess(self, observations) -> np.ndarray:
        """A batch of raw observations as a float32 matrix (one-hot for Discrete)."""
        obs = np.asarray(observations)
        if self.obs_discrete_n is not None:
            return np.eye(self.obs_discrete_n, dtype=np.float32)[obs.astype(np.int64).ravel()]
        return obs.reshape(obs.shape[0], self.obs_dim).astype(np.float32, copy=False)


class FlatParameterModule:
    """Networks whose parameters all live in one flat float32 vector (`flat_params`) that the
    layers view, so the optimiser updates everything with a few vectorised operations.

    Subclasses build their MLPs, list them in `_named_nets()` (and any loose parameter arrays in
    `_loose_parameters()`, each named as the attribute that holds it), then call
    `_flatten_parameters()`.
    """

    def _named_nets(self) -> list[tuple[str, MLP | None]]:
        raise NotImplementedError

    def _loose_parameters(self) -> list[tuple[str, np.ndarray]]:
        return []

    def _flatten_parameters(self) -> None:
        self.flat_params = flatten(self.parameters()).astype(np.float32)
        offset = 0
        views = []
        for param in self.parameters():
            views.append(self.flat_params[offset:offset + param.size].reshape(param.shape))
            offset += param.size
        # Make the layers use the views (in `parameters()` order) as their parameters.
        for _, net in self._named_nets():
            if net is not None:
                net.params[:] = views[:len(net.params)]
                del views[:len(net.params)]
        for (name, _), view in zip(self._loose_parameters(), views, strict=True):
            setattr(self, name, view)

    def parameters(self) -> list[np.ndarray]:
        params = [p for _, net in self._named_nets() if net is not None for p in net.params]
        return params + [array for _, array in self._loose_parameters()]

    def parameter_names(self) -> list[str]:
        names = []
        for prefix, net in self._named_nets():
            if net is not None:
                for i in range(net.num_layers):
                    names += [f"{prefix}.{i}.weight", f"{prefix}.{i}.bias"]
        return names + [name for name, _ in self._loose_parameters()]

    def forward_inference(self, batch: dict) -> dict:
        """RLlib's RLModule forward pass on numpy inputs: `{"obs": observations}` (a batch) ->
        `{"action_dist_inputs": ...}` (logits, means and log-stds, or Q-values)."""
        return {"action_dist_inputs": self.dist_inputs(self.spaces.preprocess(batch["obs"]))}

    forward_exploration = forward_inference

    def get_weights(self) -> dict[str, np.ndarray]:
        return {n: p.copy() for n, p in zip(self.parameter_names(), self.parameters(), strict=True)}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for name, param in zip(self.parameter_names(), self.parameters(), strict=True):
            value = weights[name]
            if value.shape != param.shape:
                raise ValueError(f"weight {name!r}: shape {value.shape} does not fit {param.shape}")
            param[...] = value

    def to_env_actions(self, actions: np.ndarray, *, normalize: bool, clip: bool) -> np.ndarray:
        """Module actions as the env takes them. For Box spaces with `normalize`, the module acts
        in [-1, 1] and the action is mapped onto the bounds; with `clip`, clipped to them."""
        if self.spaces.action_discrete_n is not None:
            return actions
        low, high = self.spaces.action_low, self.spaces.action_high
        bounded = np.all(np.isfinite(low)) and np.all(np.isfinite(high))
        if normalize and bounded:
            return low + (np.clip(actions, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
        if clip:
            return np.clip(actions, low, high)
        return actions


class PolicyModule(FlatParameterModule):
    """Policy head (action-distribution inputs) and value head over an MLP encoder.

    With `vf_share_layers=False` (the default) the value function has its own MLP; with True one
    encoder feeds both heads.
    """

    def __init__(self, spaces: SpaceInfo, model_config: dict, seed: int | None = None):
        self.spaces = spaces
        self.model_config = check_model_config(model_config)
        self.dist = Categorical if spaces.action_discrete_n is not None else DiagGaussian
        n_actions = spaces.action_discrete_n or spaces.action_dim
        n_dist_inputs = self.dist.num_inputs(n_actions)
        free_log_std = self.model_config["free_log_std"] and self.dist is DiagGaussian
        hiddens = self.model_config["fcnet_hiddens"]
        activation = self.model_config["fcnet_activation"]
        rng = np.random.default_rng(seed)
        self.shared = self.model_config["vf_share_layers"]
        head_out = n_actions if free_log_std else n_dist_inputs
        if self.shared and hiddens:
            self.encoder = MLP([spaces.obs_dim] + hiddens, activation, rng)
            self.pi = MLP([hiddens[-1], head_out], "linear", rng, output_gain=0.01)
            self.vf = MLP([hiddens[-1], 1], "linear", rng, output_gain=1.0)
        else:
            self.shared = False
            self.encoder = None
            self.pi = MLP([spaces.obs_dim] + hiddens + [head_out], activation, rng, output_gain=0.01)
            self.vf = MLP([spaces.obs_dim] + hiddens + [1], activation, rng, output_gain=1.0)
        self.log_std = np.zeros(n_actions, dtype=np.float32) if free_log_std else None
        self._flatten_parameters()

    def _named_nets(self):
        return [("encoder", self.encoder), ("pi", self.pi), ("vf", self.vf)]

    def _loose_parameters(self):
        return [("log_std", self.log_std)] if self.log_std is not None else []

    # -- inference ---------------------------------------------------------------------------
    def _encode(self, x: np.ndarray) -> np.ndarray:
        return activated(self.encoder, x) if self.encoder is not None else x

    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        out = self.pi.forward(self._encode(obs))
        if self.log_std is not None:
            out = np.concatenate([out, np.broadcast_to(self.log_std, out.shape)], axis=-1)
        return out

    def values(self, obs: np.ndarray) -> np.ndarray:
        return self.vf.forward(self._encode(obs))[:, 0]

    # -- training ----------------------------------------------------------------------------
    def forward_train(self, obs: np.ndarray):
        """Distribution inputs and values with the caches `backward` needs."""
        if self.encoder is not None:
            features, enc_cache = activated_train(self.encoder, obs)
        else:
            features, enc_cache = obs, None
        pi_out, pi_cache = self.pi.forward_train(features)
        if self.log_std is not None:
            pi_out = np.concatenate([pi_out, np.broadcast_to(self.log_std, pi_out.shape)], axis=-1)
        vf_out, vf_cache = self.vf.forward_train(features)
        return pi_out, vf_out[:, 0], (enc_cache, pi_cache, vf_cache)

    def backward(self, cache, d_dist_inputs: np.ndarray, d_values: np.ndarray) -> list[np.ndarray]:
        """Gradients of all parameters (in `parameters()` order)."""
        enc_cache, pi_cache, vf_cache = cache
        d_log_std = None
        if self.log_std is not None:
            n = self.log_std.shape[0]
            d_log_std = d_dist_inputs[:, n:].sum(axis=0)
            d_dist_inputs = d_dist_inputs[:, :n]
        pi_grads, d_feat_pi = self.pi.backward(pi_cache, d_dist_inputs)
        vf_grads, d_feat_vf = self.vf.backward(vf_cache, d_values[:, None])
        grads = pi_grads + vf_grads
        if self.encoder is not None:
            enc_grads = activated_backward(self.encoder, enc_cache, d_feat_pi + d_feat_vf)
            grads = enc_grads + grads
        if d_log_std is not None:
            grads.append(d_log_std)
        return grads


# An encoder is an MLP whose output layer is followed by the activation too.
def activated(mlp: MLP, x: np.ndarray) -> np.ndarray:
    return activate(mlp.activation, mlp.forward(x))


def activated_train(mlp: MLP, x: np.ndarray):
    pre, cache = mlp.forward_train(x)
    out = activate(mlp.activation, pre)
    return out, (cache, pre, out)


def activated_backward(mlp: MLP, cache, d_out: np.ndarray) -> list[np.ndarray]:
    inner_cache, pre, out = cache
    grads, _ = mlp.backward(inner_cache, d_out * activate_grad(mlp.activation, pre, out))
    return grads
