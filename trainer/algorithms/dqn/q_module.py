"""`QModule`: DQN's Q-network, Q(s, .) for a Discrete action space.

An MLP encoder (`fcnet_hiddens`, `fcnet_activation`) feeds either one Q head or, with
`dueling=True`, an advantage stream A(s, .) and a value stream V(s) combined as
Q = V + A - mean(A) (Wang et al. 2016). The heads have `head_fcnet_hiddens` hidden layers.
Its `dist_inputs` are the Q-values, read by the exploration as a categorical's inputs (greedy =
argmax Q).
"""

from __future__ import annotations

import numpy as np

from trainer.core.models import (
    FlatParameterModule,
    SpaceInfo,
    activated,
    activated_backward,
    activated_train,
    check_model_config,
    encoder_mlp,
    head_mlp,
)
from trainer.core.nn import Categorical


class QModule(FlatParameterModule):
    dist = Categorical

    def __init__(self, spaces: SpaceInfo, model_config: dict, *, dueling: bool = True,
                 seed: int | None = None):
        if spaces.action_discrete_n is None:
            raise ValueError(f"DQN needs a Discrete action space; this env's actions are "
                             f"{spaces.action_space()}")
        self.spaces = spaces
        self.model_config = check_model_config(model_config)
        self.dueling = dueling
        n_actions = spaces.action_discrete_n
        config = self.model_config
        hiddens = config["fcnet_hiddens"]
        rng = np.random.default_rng(seed)
        self.encoder = encoder_mlp(spaces.obs_dim, config, rng) if hiddens else None
        features = hiddens[-1] if hiddens else spaces.obs_dim
        self.advantage = self.value = self.q = None
        if dueling:
            self.advantage = head_mlp(features, n_actions, config, rng)
            self.value = head_mlp(features, 1, config, rng)
        else:
            self.q = head_mlp(features, n_actions, config, rng)
        self._flatten_parameters()

    def _named_nets(self):
        return [("encoder", self.encoder), ("advantage", self.advantage), ("value", self.value),
                ("q", self.q)]

    # -- inference ---------------------------------------------------------------------------
    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Q-values, shape (batch, num_actions), of preprocessed observations."""
        features = activated(self.encoder, obs) if self.encoder is not None else obs
        if not self.dueling:
            return self.q.forward(features)
        advantages = self.advantage.forward(features)
        return self.value.forward(features) + advantages - advantages.mean(axis=1, keepdims=True)

    q_values = dist_inputs

    # -- training ----------------------------------------------------------------------------
    def forward_train(self, obs: np.ndarray):
        """Q-values with the caches `backward` needs."""
        if self.encoder is not None:
            features, encoder_cache = activated_train(self.encoder, obs)
        else:
            features, encoder_cache = obs, None
        if not self.dueling:
            q_values, head_cache = self.q.forward_train(features)
            return q_values, (encoder_cache, head_cache)
        advantages, advantage_cache = self.advantage.forward_train(features)
        values, value_cache = self.value.forward_train(features)
        q_values = values + advantages - advantages.mean(axis=1, keepdims=True)
        return q_values, (encoder_cache, (advantage_cache, value_cache))

    def backward(self, cache, d_q_values: np.ndarray) -> list[np.ndarray]:
        """Gradients of all parameters (in `parameters()` order) given dLoss/dQ: views of
        `gradient_buffer()`, overwritten by the next call."""
        encoder_cache, head_cache = cache
        _, views, grads = self._gradient_views()
        has_encoder = self.encoder is not None
        if not self.dueling:
            _, d_features = self.q.backward(head_cache, d_q_values, grads["q"],
                                            input_grad=has_encoder)
        else:
            advantage_cache, value_cache = head_cache
            # Q_j = V + A_j - mean_k A_k  =>  dA_k = dQ_k - mean_j dQ_j,  dV = sum_j dQ_j.
            d_advantages = d_q_values - d_q_values.mean(axis=1, keepdims=True)
            d_values = d_q_values.sum(axis=1, keepdims=True)
            _, d_features = self.advantage.backward(advantage_cache, d_advantages,
                                                    grads["advantage"], input_grad=has_encoder)
            _, d_features_v = self.value.backward(value_cache, d_values, grads["value"],
                                                  input_grad=has_encoder)
            if has_encoder:
                d_features += d_features_v
        if has_encoder:
            activated_backward(self.encoder, encoder_cache, d_features, grads["encoder"])
        return views
