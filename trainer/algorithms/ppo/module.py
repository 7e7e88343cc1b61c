"""PPO's default numpy module (`PolicyModule`): the policy and value networks a PPO config
without a framework trains, built from `model_config` (its layout is the default torch module's,
`trainer.algorithms.ppo.torch_module`)."""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from trainer.core.action_layout import MultiActionDistribution
from trainer.core.apis import ValueFunctionAPI
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
    stack_layers,
)
from trainer.core.nn import MLP, Categorical, DiagGaussian
from trainer.core.torch_inputs import from_torch, to_torch


class PolicyModule(FlatParameterModule, ValueFunctionAPI):
    """Policy head (action-distribution inputs) and value head over an MLP encoder.

    With `vf_share_layers=True` (RLlib's default) one encoder feeds both heads; with False the
    value function has its own MLP.
    """

    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.ppo.export:describe_numpy"
    #: RLlib's default torch PPO module with this module's weights (`traced_twin`; the
    #: module RLlib's checkpoints of this one hold: `ALGORITHM.rllib_module_classes`).
    torch_twin = "trainer.algorithms.ppo.state_conversion:torch_twin_of"

    @classmethod
    def state_for_torch_module(
        cls, state: dict, model_config: dict, module: Any, where: str
    ) -> dict:
        """The state as the default torch PPO module's `state_dict`
        (`trainer.algorithms.ppo.numpy_state`)."""
        # The conversion reads torch modules: imported with torch, which `module` needs.
        from trainer.algorithms.ppo.numpy_state import numpy_ppo_state_to_torch

        return numpy_ppo_state_to_torch(state, model_config, module, where=where)

    def __init__(self, spaces: SpaceInfo, model_config: dict, seed: int | None = None):
        spaces.require_flat_obs(type(self).__name__)
        self.spaces = spaces
        self.model_config = check_model_config(model_config, numpy=True)
        refuse_torch_only_keys(self.model_config, f"{type(self).__name__} model_config")
        self.dist: Any
        layout = spaces.action_layout
        if layout is not None:  # Tuple, Dict, MultiDiscrete: RLlib's multi-distribution
            if self.model_config["free_log_std"]:
                raise ValueError(
                    f"model_config['free_log_std']=True: a state-independent log std is for "
                    f"Box action spaces, not {layout.space}"
                )
            self.dist = MultiActionDistribution(layout)
            n_actions, n_dist_inputs = layout.width, layout.num_inputs
        else:
            self.dist = Categorical if spaces.action_discrete_n is not None else DiagGaussian
            n_actions = spaces.action_discrete_n or spaces.action_dim
            n_dist_inputs = self.dist.num_inputs(n_actions)
        free_log_std = self.model_config["free_log_std"] and self.dist is DiagGaussian
        config = self.model_config
        hiddens, head_hiddens = config["fcnet_hiddens"], config["head_fcnet_hiddens"]
        rng = np.random.default_rng(seed)
        self.shared = config["vf_share_layers"]
        head_out = n_actions if free_log_std else n_dist_inputs
        self.encoder: MLP | None
        if self.shared and hiddens:
            # One encoder (fcnet_*) feeds a policy head and a value head (head_fcnet_*).
            self.encoder = encoder_mlp(spaces.obs_dim, config, rng)
            self.pi = head_mlp(hiddens[-1], head_out, config, rng, output_gain=0.01)
            self.vf = head_mlp(hiddens[-1], 1, config, rng, output_gain=1.0)
        else:
            # Policy and value function each have their own encoder layers and head layers.
            self.shared = False
            self.encoder = None
            layers = stack_layers(
                config, encoder_layers=len(hiddens), head_layers=len(head_hiddens) + 1
            )
            self.pi = MLP(
                [spaces.obs_dim] + hiddens + head_hiddens + [head_out],
                rng=rng,
                output_gain=0.01,
                **layers,
            )
            self.vf = MLP(
                [spaces.obs_dim] + hiddens + head_hiddens + [1], rng=rng, output_gain=1.0, **layers
            )
        self.log_std = np.zeros(n_actions, dtype=np.float32) if free_log_std else None
        self._flatten_parameters()

    @classmethod
    def from_rl_module_spec(cls, spec: Any, seed: int | None = None) -> PolicyModule:
        module = cls(
            SpaceInfo.from_spaces(spec.observation_space, spec.action_space),
            spec._get_model_config(),
            seed=seed,
        )
        module._remember_spaces(spec.observation_space, spec.action_space)
        return module

    def _named_nets(self) -> list[tuple[str, MLP | None]]:
        return [("encoder", self.encoder), ("pi", self.pi), ("vf", self.vf)]

    def _loose_parameters(self) -> list[tuple[str, np.ndarray]]:
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

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> np.ndarray:
        """RLlib's `ValueFunctionAPI`: the value of each observation in `batch["obs"]`
        (`embeddings` are not used: the value network encodes the observations itself). Given
        torch tensors, it answers with a torch tensor (as `forward_inference`)."""
        obs, torch = from_torch(batch["obs"])
        return to_torch(self.values(self.spaces.preprocess(obs)), torch)

    # -- training ----------------------------------------------------------------------------
    @overload
    def forward_train(self, obs: dict[str, Any]) -> dict[str, Any]: ...

    @overload
    def forward_train(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]: ...

    def forward_train(self, obs: Any) -> Any:
        """The numpy learners' training pass: for an observation matrix, the distribution
        inputs and values with the caches `backward` needs. For a batch dict (RLlib's
        `forward_train(batch)`), RLlib's outputs: `{"action_dist_inputs": ...}` for
        `batch["obs"]` (torch tensors in, torch tensors out, as `forward_inference`; no
        gradients: a numpy module trains through its learner)."""
        if isinstance(obs, dict):
            return self.forward_inference(obs)
        if self.encoder is not None:
            features, enc_cache = activated_train(self.encoder, obs)
        else:
            features, enc_cache = obs, None
        pi_out, pi_cache = self.pi.forward_train(features)
        if self.log_std is not None:
            pi_out = np.concatenate([pi_out, np.broadcast_to(self.log_std, pi_out.shape)], axis=-1)
        vf_out, vf_cache = self.vf.forward_train(features)
        return pi_out, vf_out[:, 0], (enc_cache, pi_cache, vf_cache)

    def backward(
        self, cache: tuple, d_dist_inputs: np.ndarray, d_values: np.ndarray
    ) -> list[np.ndarray]:
        """Gradients of all parameters (in `parameters()` order): views of `gradient_buffer()`,
        overwritten by the next call."""
        enc_cache, pi_cache, vf_cache = cache
        _, views, grads = self._gradient_views()
        if self.log_std is not None:
            n = self.log_std.shape[0]
            d_dist_inputs[:, n:].sum(axis=0, out=grads["log_std"][0])
            d_dist_inputs = d_dist_inputs[:, :n]
        shared = self.encoder is not None
        _, d_feat_pi = self.pi.backward(pi_cache, d_dist_inputs, grads["pi"], input_grad=shared)
        _, d_feat_vf = self.vf.backward(vf_cache, d_values[:, None], grads["vf"], input_grad=shared)
        # Input gradients exist exactly when there is a shared encoder.
        if self.encoder is not None and d_feat_pi is not None and d_feat_vf is not None:
            d_feat_pi += d_feat_vf
            activated_backward(self.encoder, enc_cache, d_feat_pi, grads["encoder"])
        return views
