"""`QModule`: DQN's Q-network, Q(s, .) for a Discrete action space.

An MLP encoder (`fcnet_hiddens`, `fcnet_activation`) feeds either one Q head or, with
`dueling=True`, an advantage stream A(s, .) and a value stream V(s) combined as
Q = V + A - mean(A) (Wang et al. 2016). The heads have `head_fcnet_hiddens` hidden layers.
Its `dist_inputs` are the Q-values, read by the exploration as a categorical's inputs (greedy =
argmax Q).
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
        seed: int | None = None,
    ):
        spaces.require_flat_obs(type(self).__name__)
        if spaces.action_discrete_n is None:
            raise ValueError(
                f"DQN needs a Discrete action space; this env's actions are {spaces.action_space()}"
            )
        self.spaces = spaces
        self.model_config = check_model_config(model_config, numpy=True)
        refuse_torch_only_keys(self.model_config, f"{type(self).__name__} model_config")
        self.dueling = dueling
        n_actions = spaces.action_discrete_n
        config = self.model_config
        hiddens = config["fcnet_hiddens"]
        rng = np.random.default_rng(seed)
        self.encoder = encoder_mlp(spaces.obs_dim, config, rng) if hiddens else None
        features = hiddens[-1] if hiddens else spaces.obs_dim
        # Dueling: the advantage and value heads; else the one Q head.
        self.advantage: MLP | None = None
        self.value: MLP | None = None
        self.q: MLP | None = None
        if dueling:
            self.advantage = head_mlp(features, n_actions, config, rng)
            self.value = head_mlp(features, 1, config, rng)
        else:
            self.q = head_mlp(features, n_actions, config, rng)
        self._flatten_parameters()

    @classmethod
    def from_rl_module_spec(cls, spec: Any, seed: int | None = None) -> QModule:
        """The Q-network an `RLModuleSpec` describes; `model_config["dueling"]` (default True,
        DQN's) picks the dueling heads, as in RLlib's DQN module."""
        model_config = spec._get_model_config()
        dueling = model_config.pop("dueling", True)
        module = cls(
            SpaceInfo.from_spaces(spec.observation_space, spec.action_space),
            model_config,
            dueling=bool(dueling),
            seed=seed,
        )
        module._remember_spaces(spec.observation_space, spec.action_space)
        return module

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        args, kwargs = super().get_ctor_args_and_kwargs()
        kwargs["model_config"] = {**kwargs["model_config"], "dueling": self.dueling}
        return args, kwargs

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
        """RLlib's `QNetAPI`: the Q-values of `batch["obs"]` under `"qf_preds"`."""
        return {"qf_preds": self.dist_inputs(self.spaces.preprocess(batch["obs"]))}

    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Q-values, shape (batch, num_actions), of preprocessed observations."""
        features = activated(self.encoder, obs) if self.encoder is not None else obs
        if self.q is not None:
            return self.q.forward(features)
        advantage_head, value_head = self._dueling_heads()
        advantages = advantage_head.forward(features)
        return value_head.forward(features) + advantages - _row_mean(advantages)

    q_values = dist_inputs

    # -- training ----------------------------------------------------------------------------
    def forward_train(self, obs: np.ndarray) -> tuple[np.ndarray, tuple[Any, Any]]:
        """Q-values with the caches `backward` needs."""
        if self.encoder is not None:
            features, encoder_cache = activated_train(self.encoder, obs)
        else:
            features, encoder_cache = obs, None
        if self.q is not None:
            q_values, head_cache = self.q.forward_train(features)
            return q_values, (encoder_cache, head_cache)
        advantage_head, value_head = self._dueling_heads()
        advantages, advantage_cache = advantage_head.forward_train(features)
        values, value_cache = value_head.forward_train(features)
        q_values = values + advantages - _row_mean(advantages)
        return q_values, (encoder_cache, (advantage_cache, value_cache))

    def backward(self, cache: tuple[Any, Any], d_q_values: np.ndarray) -> list[np.ndarray]:
        """Gradients of all parameters (in `parameters()` order) given dLoss/dQ: views of
        `gradient_buffer()`, overwritten by the next call."""
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


def _row_mean(x: np.ndarray) -> np.ndarray:
    """Each row's mean, kept as a column: `x.mean(axis=1, keepdims=True)`'s values (the row's
    sum divided by its length, rounded once to x's dtype) without np.mean's Python wrapper
    calls (three of these per 32-row DQN update)."""
    return np.add.reduce(x, axis=1, keepdims=True) / x.shape[1]
