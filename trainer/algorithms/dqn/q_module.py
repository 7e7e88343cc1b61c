"""`QModule`: DQN's Q-network, Q(s, .) for a Discrete action space.

An MLP encoder (`fcnet_hiddens`, `fcnet_activation`) feeds either one Q head or, with
`dueling=True`, an advantage stream A(s, .) and a value stream V(s) combined as
Q = V + A - mean(A) (Wang et al. 2016). The heads have `head_fcnet_hiddens` hidden layers.
Its `dist_inputs` are the Q-values, read by the exploration as a categorical's inputs (greedy =
argmax Q).

With `num_atoms` > 1 (distributional Q-learning, Bellemare et al. 2017, as RLlib 2.60's
`DefaultDQNTorchRLModule`), the Q head (or the advantage head) has `num_actions * num_atoms`
outputs: logits of shape (B, num_actions, num_atoms) over the support
z = linspace(v_min, v_max, num_atoms), probabilities softmax(logits) over the atoms, and
Q(s, a) = sum_i z_i * p_i(s, a). With `dueling`, as RLlib's module: the advantage logits
centred over the atoms plus V(s) broadcast over actions and atoms (a constant per row, so the
softmax, and with it the Q-values, do not depend on the value stream).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.core.apis import QNetAPI
from trainer.core.models import (
    FlatParameterModule,
    SpaceInfo,
    activated,
    activated_backward,
    activated_train,
    check_model_config,
    encoder_mlp,
    head_mlp,
    refuse_torch_only_keys,
)
from trainer.core.nn import MLP, Categorical


class QModule(FlatParameterModule, QNetAPI):
    dist = Categorical
    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.dqn.export:describe_numpy"

    def __init__(
        self,
        spaces: SpaceInfo,
        model_config: dict,
        *,
        dueling: bool = True,
        num_atoms: int = 1,
        v_min: float = -10.0,
        v_max: float = 10.0,
        seed: int | None = None,
    ):
        check_support(num_atoms, v_min, v_max, type(self).__name__)
        spaces.require_flat_obs(type(self).__name__)
        if spaces.action_discrete_n is None:
            raise ValueError(
                f"DQN needs a Discrete action space; this env's actions are {spaces.action_space()}"
            )
        self.spaces = spaces
        self.model_config = check_model_config(model_config, numpy=True)
        refuse_torch_only_keys(self.model_config, f"{type(self).__name__} model_config")
        self.dueling = dueling
        self.num_atoms = int(num_atoms)
        self.v_min, self.v_max = float(v_min), float(v_max)
        #: The support z of the Q-value distribution (num_atoms > 1), float32 as RLlib's.
        self.atoms = support(self.num_atoms, self.v_min, self.v_max)
        n_actions = spaces.action_discrete_n
        self.num_actions = n_actions
        config = self.model_config
        hiddens = config["fcnet_hiddens"]
        rng = np.random.default_rng(seed)
        self.encoder = encoder_mlp(spaces.obs_dim, config, rng) if hiddens else None
        features = hiddens[-1] if hiddens else spaces.obs_dim
        # Dueling: the advantage and value heads; else the one Q head.
        self.advantage: MLP | None = None
        self.value: MLP | None = None
        self.q: MLP | None = None
        outputs = n_actions * self.num_atoms
        if dueling:
            self.advantage = head_mlp(features, outputs, config, rng)
            self.value = head_mlp(features, 1, config, rng)
        else:
            self.q = head_mlp(features, outputs, config, rng)
        self._flatten_parameters()

    @classmethod
    def from_rl_module_spec(cls, spec: Any, seed: int | None = None) -> QModule:
        """The Q-network an `RLModuleSpec` describes; `model_config["dueling"]` (default True,
        DQN's) picks the dueling heads and `num_atoms`, `v_min`, `v_max` (defaults 1, -10, 10)
        the distributional head, as in RLlib's DQN module."""
        model_config = spec._get_model_config()
        dueling = model_config.pop("dueling", True)
        support_settings = {
            key: model_config.pop(key, default) for key, default in SUPPORT_DEFAULTS.items()
        }
        module = cls(
            SpaceInfo.from_spaces(spec.observation_space, spec.action_space),
            model_config,
            dueling=bool(dueling),
            **support_settings,
            seed=seed,
        )
        module._remember_spaces(spec.observation_space, spec.action_space)
        return module

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        args, kwargs = super().get_ctor_args_and_kwargs()
        kwargs["model_config"] = {**kwargs["model_config"], **self.dqn_model_config()}
        return args, kwargs

    def dqn_model_config(self) -> dict[str, Any]:
        """DQN's settings this module was built with, as RLlib's `DQNConfig` adds them to the
        module's model config: `dueling`, and with `num_atoms` > 1 `num_atoms`, `v_min` and
        `v_max` (left out at 1, where they change nothing)."""
        settings: dict[str, Any] = {"dueling": self.dueling}
        if self.num_atoms > 1:
            settings.update(num_atoms=self.num_atoms, v_min=self.v_min, v_max=self.v_max)
        return settings

    def _named_nets(self) -> list[tuple[str, MLP | None]]:
        return [
            ("encoder", self.encoder),
            ("advantage", self.advantage),
            ("value", self.value),
            ("q", self.q),
        ]

    def _dueling_heads(self) -> tuple[MLP, MLP]:
        """The advantage and value heads of a dueling module."""
        if self.advantage is None or self.value is None:
            raise RuntimeError("QModule: this module has one Q head, not dueling heads")
        return self.advantage, self.value

    # -- inference ---------------------------------------------------------------------------
    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        """RLlib's `QNetAPI`: the Q-values of `batch["obs"]` under `"qf_preds"`; with
        `num_atoms` > 1 also RLlib's `"atoms"` (the support), `"qf_logits"` and `"qf_probs"`
        (B, num_actions, num_atoms)."""
        obs = self.spaces.preprocess(batch["obs"])
        if self.num_atoms == 1:
            return {"qf_preds": self.dist_inputs(obs)}
        logits = self.q_logits(obs)
        probs, q_values = self.distribution(logits)
        return {"qf_preds": q_values, "atoms": self.atoms, "qf_logits": logits, "qf_probs": probs}

    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Q-values, shape (batch, num_actions), of preprocessed observations (with
        `num_atoms` > 1 the expected values of the Q-value distributions)."""
        if self.num_atoms > 1:
            return self.distribution(self.q_logits(obs))[1]
        features = activated(self.encoder, obs) if self.encoder is not None else obs
        if self.q is not None:
            return self.q.forward(features)
        advantage_head, value_head = self._dueling_heads()
        advantages = advantage_head.forward(features)
        return value_head.forward(features) + advantages - _row_mean(advantages)

    q_values = dist_inputs

    def q_logits(self, obs: np.ndarray) -> np.ndarray:
        """The Q-value distributions' logits, shape (batch, num_actions, num_atoms), of
        preprocessed observations (`num_atoms` > 1)."""
        features = activated(self.encoder, obs) if self.encoder is not None else obs
        if self.q is not None:
            return self._atom_rows(self.q.forward(features))
        advantage_head, value_head = self._dueling_heads()
        return self._dueling_logits(
            self._atom_rows(advantage_head.forward(features)), value_head.forward(features)
        )

    def distribution(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The probabilities (softmax over the atoms) of the logits `(B, num_actions,
        num_atoms)` and the Q-values `(B, num_actions)`, their expectations over the
        support."""
        probs = softmax(logits)
        return probs, expectation(probs, self.atoms)

    def _atom_rows(self, head_out: np.ndarray) -> np.ndarray:
        """A head's outputs `(B, num_actions * num_atoms)` as `(B, num_actions, num_atoms)`
        (RLlib's reshape: each action's atoms are consecutive outputs)."""
        return head_out.reshape(len(head_out), self.num_actions, self.num_atoms)

    @staticmethod
    def _dueling_logits(advantages: np.ndarray, values: np.ndarray) -> np.ndarray:
        """RLlib's dueling distributional logits: the advantage logits centred over the atoms,
        plus V(s) broadcast over actions and atoms."""
        centred = (
            advantages - np.add.reduce(advantages, axis=-1, keepdims=True) / (advantages.shape[-1])
        )
        return centred + values[:, :, None]

    # -- training ----------------------------------------------------------------------------
    def forward_train(self, obs: np.ndarray) -> tuple[np.ndarray, tuple[Any, Any]]:
        """Q-values with the caches `backward` needs; with `num_atoms` > 1 the logits
        `(B, num_actions, num_atoms)` instead (`distribution` gives the Q-values)."""
        if self.encoder is not None:
            features, encoder_cache = activated_train(self.encoder, obs)
        else:
            features, encoder_cache = obs, None
        if self.num_atoms > 1:
            return self._logits_train(features, encoder_cache)
        if self.q is not None:
            q_values, head_cache = self.q.forward_train(features)
            return q_values, (encoder_cache, head_cache)
        advantage_head, value_head = self._dueling_heads()
        advantages, advantage_cache = advantage_head.forward_train(features)
        values, value_cache = value_head.forward_train(features)
        q_values = values + advantages - _row_mean(advantages)
        return q_values, (encoder_cache, (advantage_cache, value_cache))

    def _logits_train(
        self, features: np.ndarray, encoder_cache: Any
    ) -> tuple[np.ndarray, tuple[Any, Any]]:
        if self.q is not None:
            out, head_cache = self.q.forward_train(features)
            return self._atom_rows(out), (encoder_cache, head_cache)
        advantage_head, value_head = self._dueling_heads()
        advantages, advantage_cache = advantage_head.forward_train(features)
        values, value_cache = value_head.forward_train(features)
        logits = self._dueling_logits(self._atom_rows(advantages), values)
        return logits, (encoder_cache, (advantage_cache, value_cache))

    def backward(self, cache: tuple[Any, Any], d_q_values: np.ndarray) -> list[np.ndarray]:
        """Gradients of all parameters (in `parameters()` order) given dLoss/dQ (with
        `num_atoms` > 1: dLoss/dlogits, `(B, num_actions, num_atoms)`): views of
        `gradient_buffer()`, overwritten by the next call."""
        if self.num_atoms > 1:
            return self._backward_logits(cache, d_q_values)
        encoder_cache, head_cache = cache
        _, views, grads = self._gradient_views()
        has_encoder = self.encoder is not None
        if self.q is not None:
            _, d_features = self.q.backward(
                head_cache, d_q_values, grads["q"], input_grad=has_encoder
            )
        else:
            advantage_head, value_head = self._dueling_heads()
            advantage_cache, value_cache = head_cache
            # Q_j = V + A_j - mean_k A_k  =>  dA_k = dQ_k - mean_j dQ_j,  dV = sum_j dQ_j.
            d_advantages = d_q_values - _row_mean(d_q_values)
            d_values = np.add.reduce(d_q_values, axis=1, keepdims=True)
            _, d_features = advantage_head.backward(
                advantage_cache, d_advantages, grads["advantage"], input_grad=has_encoder
            )
            _, d_features_v = value_head.backward(
                value_cache, d_values, grads["value"], input_grad=has_encoder
            )
            if d_features is not None and d_features_v is not None:  # with an encoder
                d_features += d_features_v
        if self.encoder is not None and d_features is not None:
            activated_backward(self.encoder, encoder_cache, d_features, grads["encoder"])
        return views

    def _backward_logits(self, cache: tuple[Any, Any], d_logits: np.ndarray) -> list[np.ndarray]:
        encoder_cache, head_cache = cache
        _, views, grads = self._gradient_views()
        has_encoder = self.encoder is not None
        rows = len(d_logits)
        if self.q is not None:
            _, d_features = self.q.backward(
                head_cache, d_logits.reshape(rows, -1), grads["q"], input_grad=has_encoder
            )
        else:
            advantage_head, value_head = self._dueling_heads()
            advantage_cache, value_cache = head_cache
            # logits = A - mean_atoms(A) + V  =>  dA = dlogits - mean_atoms(dlogits),
            # dV = the sum of dlogits over actions and atoms.
            d_advantages = (
                d_logits - np.add.reduce(d_logits, axis=-1, keepdims=True) / (d_logits.shape[-1])
            )
            d_values = np.add.reduce(d_logits.reshape(rows, -1), axis=1, keepdims=True)
            _, d_features = advantage_head.backward(
                advantage_cache,
                d_advantages.reshape(rows, -1),
                grads["advantage"],
                input_grad=has_encoder,
            )
            _, d_features_v = value_head.backward(
                value_cache, d_values, grads["value"], input_grad=has_encoder
            )
            if d_features is not None and d_features_v is not None:  # with an encoder
                d_features += d_features_v
        if self.encoder is not None and d_features is not None:
            activated_backward(self.encoder, encoder_cache, d_features, grads["encoder"])
        return views


#: DQN's distributional settings and their defaults (RLlib's `DQNConfig`'s).
SUPPORT_DEFAULTS: dict[str, Any] = {"num_atoms": 1, "v_min": -10.0, "v_max": 10.0}


def check_support(num_atoms: Any, v_min: Any, v_max: Any, where: str) -> None:
    """A ValueError naming the setting unless `num_atoms` is an int >= 1 and, with
    `num_atoms` > 1, `v_min` < `v_max` are finite numbers."""
    if isinstance(num_atoms, bool) or not isinstance(num_atoms, (int, np.integer)):
        raise ValueError(f"{where}: num_atoms={num_atoms!r} must be an int >= 1")
    if num_atoms < 1:
        raise ValueError(f"{where}: num_atoms={num_atoms!r} must be an int >= 1")
    for name, value in (("v_min", v_min), ("v_max", v_max)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.integer, np.floating))
            or not np.isfinite(value)
        ):
            raise ValueError(f"{where}: {name}={value!r} must be a finite number")
    if num_atoms > 1 and not v_min < v_max:
        raise ValueError(
            f"{where}: v_min={v_min!r}, v_max={v_max!r}: v_min must be < v_max (the support "
            "of the Q-value distribution runs from v_min to v_max)"
        )


def support(num_atoms: int, v_min: float, v_max: float) -> np.ndarray:
    """The support z of `num_atoms` atoms from `v_min` to `v_max`, float32, computed as
    RLlib's module computes it (`v_min + arange(num_atoms) * (v_max - v_min) / (num_atoms -
    1)`); one atom: `[0.0]` (unused)."""
    if num_atoms == 1:
        return np.zeros(1, np.float32)
    z = np.arange(num_atoms, dtype=np.float32)
    return v_min + z * (v_max - v_min) / float(num_atoms - 1)


def softmax(logits: np.ndarray) -> np.ndarray:
    """The softmax over the last axis."""
    shifted = logits - np.maximum.reduce(logits, axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.add.reduce(exp, axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """The log-softmax over the last axis."""
    shifted = logits - np.maximum.reduce(logits, axis=-1, keepdims=True)
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=-1, keepdims=True))


def expectation(probs: np.ndarray, atoms: np.ndarray) -> np.ndarray:
    """The expected values `sum_i z_i * p_i` of the distributions `probs` (..., num_atoms)."""
    return np.add.reduce(probs * atoms, axis=-1)


def _row_mean(x: np.ndarray) -> np.ndarray:
    """Each row's mean, kept as a column: `x.mean(axis=1, keepdims=True)`'s values (the row's
    sum divided by its length, rounded once to x's dtype) without np.mean's Python wrapper
    calls (three of these per 32-row DQN update)."""
    return np.add.reduce(x, axis=1, keepdims=True) / x.shape[1]
