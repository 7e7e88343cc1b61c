"""PPO's default torch module (RLlib's `DefaultPPOTorchRLModule`): an actor-critic MLP built from
`model_config`, the network `framework("torch")` trains.

The layout is RLlib's PPOCatalog's and the numpy `PolicyModule`'s for the same model config:

- `encoder`: `fcnet_hiddens` layers of `fcnet_activation` (the last layer activated too), or for
  image observations (a 3-D Box, channels-last) RLlib's CNN encoder: `conv_filters` (RLlib's
  preset for the image size when not given) of `conv_activation`, flattened
  (`trainer.torch_rl.cnn_encoder`; `fcnet_hiddens` is not used, as in RLlib). With
  `vf_share_layers` one encoder (`encoder.encoder`) feeds both heads; without, the policy and the
  value function each have one (`encoder.actor_encoder`, `encoder.critic_encoder`). An empty
  `fcnet_hiddens` means no encoder layers: the heads read the observation.
- `pi`: `head_fcnet_hiddens` layers of `head_fcnet_activation`, then a linear output of the
  action distribution's inputs: logits (Discrete) or `[means, log_stds]` (Box, a diagonal
  Gaussian; log-stds clipped to `log_std_clip_param`). With `free_log_std` the network outputs
  the means only and `pi.log_std` is a parameter of its own.
- `vf`: the same head layers with one linear output, the value.

Weights start as torch's (and RLlib's) defaults unless the `*_initializer` keys name a
`torch.nn.init` function (or give a callable, called on the weight tensor). Observations are
1-D Boxes (a 2-D Box is flattened), images (3-D Boxes) or Discrete (one-hot encoded, as the
numpy module does).

With `use_lstm` (RLlib's recurrent encoder) each encoder is an `LSTMEncoder`: RLlib's tokenizer
(the `fcnet_*` MLP, or for images RLlib's CNN, applied at each time step), then one LSTM layer of
`lstm_cell_size` units. The module is then
stateful: `get_initial_state()` is RLlib's `{"h", "c"}` (zeros of shape `(1, lstm_cell_size)`;
`{"actor": ..., "critic": ...}` without `vf_share_layers`), the forward passes take sequences
`(B, T, ...)` with `Columns.STATE_IN` (each leaf `(B, 1, cell)`) and return `Columns.STATE_OUT`,
and, as in RLlib, it is never inference-only. `lstm_use_prev_action` / `lstm_use_prev_reward`
add the previous action (one-hot for Discrete) and reward (`prev_actions`, `prev_rewards`)
to the LSTM's input (for images, after the CNN).

The value function (`vf`, and `encoder.critic_encoder` when not shared) is left out of
inference-only copies (the EnvRunners'), and `get_state(inference_only=True)` leaves its weights
out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.numpy_inference import NumpyPPOInference
from trainer.algorithms.ppo.numpy_state import numpy_ppo_state_to_torch
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.core.action_layout import is_composite_action_space
from trainer.core.apis import InferenceOnlyAPI, ValueFunctionAPI
from trainer.core.model_configs import ACTOR, CRITIC, ENCODER_OUT
from trainer.core.model_configs import ActorCriticEncoder as RLlibActorCriticEncoder
from trainer.core.models import (
    SpaceInfo,
    StateConversionError,
    check_model_config,
    default_keys_of,
)
from trainer.errors import UnsupportedValue
from trainer.torch_rl.distributions import TorchDiagGaussian, action_dist_cls_for
from trainer.torch_rl.networks import (
    PREV_ACTIONS,
    PREV_REWARDS,
    ActorCriticEncoder,
    MLPHead,
    ObservationEncoding,
    RecurrentActorCriticEncoder,
    encoder_factory,
)
from trainer.torch_rl.rl_module import TorchRLModule

#: What the module reads of its encoder (`PPOCatalog.build_actor_critic_encoder`'s), without and
#: with `use_lstm`.
_ENCODER_API = ("encode_actor", "encode_critic", "output_dim")
_RECURRENT_ENCODER_API = ("get_initial_state", "encode_critic", "output_dim")


def action_input_dim(action_space: gym.Space) -> int:
    """The width of a previous action as an LSTM input (one-hot for Discrete)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    return int(np.prod(action_space.shape or ()))


def default_actor_critic_encoder(
    observation_space: gym.Space, action_space: gym.Space, config: dict, where: str
) -> ActorCriticEncoder | RecurrentActorCriticEncoder:
    """The default module's encoder for a checked model config: `fcnet_hiddens` MLPs (or
    RLlib's CNN for images), one shared or one each for the policy and the value function;
    with `use_lstm` an LSTM encoder over the observations (and the previous action and reward
    when asked for)."""
    encoding = ObservationEncoding(observation_space, where)
    if config["use_lstm"]:
        prev_action_dim = action_input_dim(action_space) if config["lstm_use_prev_action"] else 0
        extra_dim = prev_action_dim + int(bool(config["lstm_use_prev_reward"]))
        if encoding.image:
            # RLlib's tokenizer for images: its CNN, whose features the LSTM reads.
            height, width, channels = encoding.shape
            return RecurrentActorCriticEncoder(
                encoding.dim, config, image_shape=(height, width, channels), extra_dim=extra_dim
            )
        return RecurrentActorCriticEncoder(encoding.dim + extra_dim, config)
    return ActorCriticEncoder(
        encoding.dim, config, encoder_factory(observation_space, encoding.dim, config)
    )


def default_pi_head(action_space: gym.Space, config: dict, latent_dim: int) -> MLPHead:
    """The default policy head: `head_fcnet_hiddens`, then the inputs of the action space's
    distribution (a Gaussian's log-stds clipped, or a parameter with `free_log_std`)."""
    dist_cls = action_dist_cls_for(action_space, "action_space")
    return MLPHead(
        latent_dim,
        dist_cls.required_input_dim(action_space),
        config,
        clip_log_std=dist_cls is TorchDiagGaussian,
        free_log_std=config["free_log_std"],
        log_std_clip_param=float(config.get("log_std_clip_param", 20.0)),
        # Small initial outputs (as the numpy module's policy head): actions start near the
        # distribution's centre and the entropy near its maximum.
        output_gain=0.01,
    )


def default_vf_head(config: dict, latent_dim: int) -> MLPHead:
    """The default value head: `head_fcnet_hiddens`, then one linear output."""
    return MLPHead(latent_dim, 1, config)


class DefaultPPOTorchRLModule(TorchRLModule, InferenceOnlyAPI, ValueFunctionAPI):
    """RLlib's default PPO torch module (see the module docstring): `_forward` returns
    `Columns.ACTION_DIST_INPUTS`, `_forward_train` also `Columns.EMBEDDINGS` (the value
    function's encoder features), `compute_values(batch, embeddings=None)` the values `(B,)`.

    `model_config` is a dict or a `DefaultModelConfig` with RLlib's keys, validated and
    defaulted as for the numpy modules (`trainer.core.models.check_model_config`)."""

    #: The EnvRunners' forward pass of this class (not of a subclass) in numpy
    #: (`trainer.algorithms.ppo.numpy_inference`).
    numpy_forward_class = NumpyPPOInference
    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.ppo.torch_export:describe_torch"

    reads_default_model_config_only = True
    #: Whether the encoder is one of RLlib's model-config kind (set by `setup`).
    _rllib_encoder = False

    def setup(self) -> None:
        where = f"{type(self).__name__}"
        if self.observation_space is None or self.action_space is None:
            raise ValueError(
                f"{where}: observation_space and action_space are required (got "
                f"{self.observation_space}, {self.action_space})"
            )
        if dataclasses.is_dataclass(self.model_config) and not isinstance(self.model_config, type):
            # A DefaultModelConfig: kept as the dict of all its fields (RLlib's modules hold
            # a dict; checkpoints store it as plain data).
            self.model_config = dataclasses.asdict(self.model_config)
        model_config = self.model_config or {}
        if _users_parts(self):
            model_config = default_keys_of(model_config)
        config = check_model_config(model_config, setting="model_config")
        self._config = config
        # (a catalog's own RLlib-kind encoder may read spaces the default encoding does not:
        # the refusal waits until the encoder is known)
        refusal: UnsupportedValue | None = None
        try:
            self._encode_obs = ObservationEncoding(self.observation_space, where)
        except UnsupportedValue as error:
            if self.catalog is None:
                raise
            refusal = error
            self._encode_obs = None  # type: ignore[assignment]
        # RLlib's Catalog choice: categorical, diagonal Gaussian, multi-categorical
        # (MultiDiscrete) or multi-distribution (Tuple, Dict).
        self.action_dist_cls = action_dist_cls_for(self.action_space, f"{where}: action_space")
        is_gaussian = self.action_dist_cls is TorchDiagGaussian
        if (
            config["use_lstm"]
            and config["lstm_use_prev_action"]
            and is_composite_action_space(self.action_space)
        ):
            raise UnsupportedValue(
                f"{where}: model_config['lstm_use_prev_action']=True with the composite action "
                f"space {self.action_space}: previous actions are LSTM inputs for Discrete and "
                "Box action spaces here",
                ACTION_SPACES,
            )
        if config["free_log_std"] and not is_gaussian:
            raise ValueError(
                f"model_config['free_log_std']=True: only for Box action spaces (a diagonal "
                f"Gaussian), the action space is {self.action_space}"
            )
        self._stateful = bool(config["use_lstm"])
        if self._stateful:
            # As RLlib: a recurrent module is never inference-only (the EnvRunners carry the
            # critic's state too, which the learner's sequences start from).
            self.inference_only = False
            self._prev_action_dim = (
                action_input_dim(self.action_space) if config["lstm_use_prev_action"] else 0
            )
            self._prev_reward = bool(config["lstm_use_prev_reward"])
        catalog = self.catalog
        self._rllib_encoder = False
        # An ActorCriticEncoder, or a RecurrentActorCriticEncoder with use_lstm.
        self.encoder: Any
        if catalog is None:
            self.encoder = default_actor_critic_encoder(
                self.observation_space, self.action_space, config, where
            )
            self.pi = default_pi_head(self.action_space, config, self.encoder.output_dim)
            self.vf = default_vf_head(config, self.encoder.output_dim)
            return
        # RLlib's PPOTorchRLModule builds its parts through its catalog, whose builders a
        # PPOCatalog subclass may override (the defaults build what is above).
        acc = catalog.__dict__.get("actor_critic_encoder_config")
        if self.inference_only and acc is not None and hasattr(acc, "inference_only"):
            acc.inference_only = True  # (RLlib's: an inference-only module has no critic)
        self.encoder = catalog.build_actor_critic_encoder(framework="torch")
        #: Whether the encoder is one of RLlib's model-config kind (a user's
        #: `ActorCriticEncoder`): a batch dict in, `{ENCODER_OUT: {ACTOR, CRITIC}}` out.
        self._rllib_encoder = isinstance(self.encoder, RLlibActorCriticEncoder)
        if refusal is not None and not self._rllib_encoder:
            raise refusal
        needed = _RECURRENT_ENCODER_API if self._stateful else _ENCODER_API
        missing = [name for name in needed if not hasattr(self.encoder, name)]
        if missing and self._rllib_encoder and not self._stateful:
            missing = []
        if missing:
            raise TypeError(
                f"{where}: {type(catalog).__name__}.build_actor_critic_encoder() returned a "
                f"{type(self.encoder).__name__}, which has no {', '.join(missing)}: the "
                "module's encoder here is PPOCatalog's (trainer.torch_rl.networks."
                "ActorCriticEncoder, or RecurrentActorCriticEncoder with use_lstm); override "
                "build_pi_head / build_vf_head for other heads"
            )
        if catalog._latent_dims is None and not self._rllib_encoder:
            catalog.latent_dims = (int(self.encoder.output_dim),)
        self.pi = catalog.build_pi_head(framework="torch")
        self.vf = catalog.build_vf_head(framework="torch")

    def start_as_numpy_module(self, seed: int) -> None:
        """Takes the initial weights of the numpy `PolicyModule` with this model config and
        `seed` (the same networks: `trainer.algorithms.ppo.numpy_state`), so a seeded
        run starts from the same weights on either framework; keeps its own where the numpy
        module has no such networks (an LSTM or CNN encoder, another action space)."""
        if not self.has_default_parts():
            return  # a catalog's own networks: no numpy module mirrors them

        try:
            numpy_module = PolicyModule(
                SpaceInfo.from_spaces(self.observation_space, self.action_space),
                self._config,
                seed=seed,
            )
            state = numpy_ppo_state_to_torch(numpy_module.get_weights(), self._config, self)
        except (StateConversionError, ValueError, TypeError, KeyError):
            return
        self.load_state_dict({key: torch.from_numpy(value) for key, value in state.items()})

    def _obs(self, batch: dict[str, Any]) -> torch.Tensor:
        return self._encode_obs(batch[Columns.OBS], like=self._parameter())

    def _encoder_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        """What an RLlib-kind encoder reads: the batch with its observations as tensors in the
        observation space's structure (a Dict's as a dict), as RLlib's modules get them."""
        like = self._parameter()

        def tensor(value: Any) -> Any:
            if isinstance(value, dict):
                return {key: tensor(item) for key, item in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(tensor(item) for item in value)
            value = torch.as_tensor(value, device=like.device)
            return value.to(like.dtype) if value.is_floating_point() else value

        return {**batch, Columns.OBS: tensor(batch[Columns.OBS])}

    def _rllib_encoder_outputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self.encoder(self._encoder_batch(batch))[ENCODER_OUT]

    def has_default_parts(self) -> bool:
        """Whether the encoder and heads are the default ones (not a catalog subclass's own),
        the networks the numpy module mirrors."""
        return (
            type(self.encoder) in (ActorCriticEncoder, RecurrentActorCriticEncoder)
            and type(self.pi) is MLPHead
            and type(self.vf) is MLPHead
        )

    def _parameter(self) -> torch.Tensor:
        """A parameter of the module: the dtype and device its inputs take."""
        return next(self.parameters())

    # -- recurrent (use_lstm) ------------------------------------------------------------------
    def get_initial_state(self) -> dict[str, Any]:
        """The LSTM's initial state (RLlib's layout: `{"h", "c"}` of zeros `(1, cell)`, per
        encoder `{"actor": ..., "critic": ...}` without `vf_share_layers`); `{}` without
        `use_lstm`."""
        if not self._stateful:
            return {}
        return self.encoder.get_initial_state()

    def _sequence_inputs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The LSTM encoder's inputs `(x, extra)`: `x` the encoded observations `(B, T, D)`
        followed (when asked for) by the previous actions (one-hot for Discrete) and rewards,
        `extra` None; for images `x` is the images `(B, T, H, W, C)` (the CNN tokenizes them)
        and `extra` the previous actions and rewards (or None)."""
        like = self._parameter()
        obs = self._obs(batch)
        parts = []
        if self._prev_action_dim:
            prev_actions = torch.as_tensor(batch[PREV_ACTIONS], device=like.device)
            if isinstance(self.action_space, gym.spaces.Discrete):
                parts.append(
                    nn.functional.one_hot(prev_actions.long(), self._prev_action_dim).to(like.dtype)
                )
            else:
                parts.append(
                    prev_actions.reshape(*prev_actions.shape[:2], self._prev_action_dim).to(
                        like.dtype
                    )
                )
        if self._prev_reward:
            prev_rewards = torch.as_tensor(batch[PREV_REWARDS], device=like.device)
            parts.append(prev_rewards.to(like.dtype).unsqueeze(-1))
        if self._encode_obs.image:
            return obs, (torch.cat(parts, dim=-1) if parts else None)
        return (torch.cat([obs, *parts], dim=-1) if parts else obs), None

    def _run_recurrent_encoder(self, batch: dict[str, Any]) -> tuple[Any, Any, dict]:
        """The recurrent encoder over the batch's sequences: `(actor features, critic
        features, state out)`."""
        x, extra = self._sequence_inputs(batch)
        state = self._state_in(batch)
        return self.encoder(x, state) if extra is None else self.encoder(x, state, extra)

    def _state_in(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = batch.get(Columns.STATE_IN)
        if state is None:
            raise ValueError(
                f"{type(self).__name__} (use_lstm=True): the batch has no "
                f"{Columns.STATE_IN!r}: a recurrent module needs the state of each sequence's "
                "first step (get_initial_state() at an episode's start)"
            )
        return state

    # -- InferenceOnlyAPI ----------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        """The value head, and the value function's own encoder when it has one."""
        return ["vf"] + ([] if self._config["vf_share_layers"] else ["encoder.critic_encoder"])

    # -- forward passes ------------------------------------------------------------------------
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self._stateful:
            # (B, T, ...) in, (B, T, ...) out, and the state after the last step (RLlib runs
            # the critic's encoder here too: its state goes on with the actor's).
            actor_features, _, state_out = self._run_recurrent_encoder(batch)
            return {
                Columns.ACTION_DIST_INPUTS: self.pi(actor_features),
                Columns.STATE_OUT: state_out,
            }
        if self._rllib_encoder:
            features = self._rllib_encoder_outputs(batch)[ACTOR]
        else:
            features = self.encoder.encode_actor(self._obs(batch))
        return {Columns.ACTION_DIST_INPUTS: self.pi(features)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self._stateful:
            actor_features, critic_features, state_out = self._run_recurrent_encoder(batch)
            return {
                Columns.ACTION_DIST_INPUTS: self.pi(actor_features),
                Columns.EMBEDDINGS: critic_features,
                Columns.STATE_OUT: state_out,
            }
        if self._rllib_encoder:
            outputs = self._rllib_encoder_outputs(batch)
            actor_features, critic_features = outputs[ACTOR], outputs[CRITIC]
        else:
            actor_features, critic_features = self.encoder(self._obs(batch))
        return {
            Columns.ACTION_DIST_INPUTS: self.pi(actor_features),
            Columns.EMBEDDINGS: critic_features,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """The values `(B,)` of `batch[Columns.OBS]`, from `embeddings` (what `_forward_train`
        returned under `Columns.EMBEDDINGS`) when given. With `use_lstm` the batch holds
        sequences `(B, T, ...)` and `Columns.STATE_IN`, and the values are `(B, T)`."""
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}.compute_values() on an inference-only module: it has "
                "no value function (build it with inference_only=False)"
            )
        if embeddings is None and self._stateful:
            x, extra = self._sequence_inputs(batch)
            state = self._state_in(batch)
            embeddings = (
                self.encoder.encode_critic(x, state)
                if extra is None
                else self.encoder.encode_critic(x, state, extra)
            )
        elif embeddings is None and self._rllib_encoder:
            critic = self.encoder.encoder if self.encoder.config.shared else None
            critic = critic if critic is not None else self.encoder.critic_encoder
            embeddings = critic(self._encoder_batch(batch))[ENCODER_OUT]
        elif embeddings is None:
            embeddings = self.encoder.encode_critic(self._obs(batch))
        return self.vf(embeddings).squeeze(-1)


#: RLlib's older name of this module (`ray.rllib.algorithms.ppo.torch.ppo_torch_rl_module`):
#: in RLlib 2.60 it is `DefaultPPOTorchRLModule` itself, kept for code written against it.
PPOTorchRLModule = DefaultPPOTorchRLModule


def _users_parts(module: DefaultPPOTorchRLModule) -> bool:
    """Whether a user's subclass of the module, or a user's catalog, builds some of its parts:
    those may read model-config keys of their own (RLlib checks none), so only the keys the
    default parts read are checked."""
    return not type(module).__module__.startswith("trainer.") or (
        module.catalog is not None and not type(module.catalog).__module__.startswith("trainer.")
    )
