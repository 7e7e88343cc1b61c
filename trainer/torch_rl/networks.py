"""The torch networks the default torch modules are built of (RLlib's catalogs' encoders and
heads): MLPs with RLlib's activations and initializers (`model_config`'s `*_initializer` keys),
the MLP / CNN / LSTM encoders, an actor-critic encoder (one shared or two), MLP heads, and the
observation encoding (one-hot Discrete, flattened Boxes, images)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.capabilities import OBSERVATION_SPACES
from trainer.errors import UnsupportedValue

#: RLlib's `Columns.PREV_ACTIONS` / `Columns.PREV_REWARDS`: the previous step's action and
#: reward (zeros at an episode's start), the LSTM's extra inputs with `lstm_use_prev_action` /
#: `lstm_use_prev_reward`.
PREV_ACTIONS = "prev_actions"
PREV_REWARDS = "prev_rewards"

#: RLlib's activation names (those the numpy networks know too) -> torch modules; "linear" adds
#: no layer, as in RLlib's TorchMLP.
TORCH_ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "linear": None,
    "swish": nn.SiLU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "sigmoid": nn.Sigmoid,
}


def _initializer(value: Any) -> Any:
    """The torch initializer a (validated) model-config value names: a `torch.nn.init` function
    for a name, the callable itself otherwise, None for torch's default."""
    if value is None or callable(value):
        return value
    return getattr(nn.init, str(value).lower())


class LayerInit:
    """The kernel and bias initializers (with their kwargs) of one group of layers, read from
    the model config keys `{prefix}_kernel_initializer`, `{prefix}_bias_initializer` and their
    `_kwargs`."""

    def __init__(self, model_config: dict, prefix: str) -> None:
        self.kernel = _initializer(model_config[f"{prefix}_kernel_initializer"])
        self.kernel_kwargs = model_config[f"{prefix}_kernel_initializer_kwargs"] or {}
        self.bias = _initializer(model_config[f"{prefix}_bias_initializer"])
        self.bias_kwargs = model_config[f"{prefix}_bias_initializer_kwargs"] or {}

    def apply(self, layer: nn.Linear, default_gain: float = 1.0) -> None:
        """Initializes `layer`: with the configured initializers, else as the numpy modules'
        layers (`trainer.core.nn.MLP`): orthogonal weights of `default_gain` and zero biases."""
        with torch.no_grad():
            if self.kernel is not None:
                self.kernel(layer.weight, **self.kernel_kwargs)
            else:
                nn.init.orthogonal_(layer.weight, gain=default_gain)
            if self.bias is not None:
                self.bias(layer.bias, **self.bias_kwargs)
            else:
                nn.init.zeros_(layer.bias)


#: Activations after which a layer's default orthogonal weights get gain sqrt(2) (as the
#: numpy modules' layers).
_RELU_LIKE = {"relu", "elu", "swish", "silu"}


class TorchMLP(nn.Module):
    """Linear layers, each followed by its activation (`mlp`, an `nn.Sequential`: RLlib's
    TorchMLP layout). `activations[i]` follows layer i (None or "linear": nothing); with
    `layernorms[i]` a LayerNorm comes between layer i and its activation.

    A layer without a configured initializer starts as the numpy modules' layers do
    (orthogonal weights, zero biases; gain sqrt(2) before a ReLU-like activation, 1 before
    another, `output_gain` for a linear output layer), not with torch's default: with the
    same initial weights' distribution both frameworks learn alike (PPO on Pendulum-v1 took
    up to three times the env steps from torch's default initialization)."""

    def __init__(
        self,
        dims: list[int],
        activations: list[str | None],
        inits: list[LayerInit],
        output_gain: float = 1.0,
        layernorms: list[bool] | None = None,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            linear = nn.Linear(dims[i], dims[i + 1])
            activation_name = activations[i] or "linear"
            if activation_name == "linear" and i == len(dims) - 2:
                gain = output_gain
            else:
                gain = math.sqrt(2.0) if activation_name in _RELU_LIKE else 1.0
            inits[i].apply(linear, gain)
            layers.append(linear)
            if layernorms is not None and layernorms[i]:
                # RLlib's: between the layer and its activation, TensorFlow's epsilon.
                layers.append(nn.LayerNorm(dims[i + 1], eps=0.001))
            activation = TORCH_ACTIVATIONS[activation_name]
            if activation is not None:
                layers.append(activation())
        self.mlp = nn.Sequential(*layers)
        self.output_dim = dims[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class MLPEncoder(nn.Module):
    """The `fcnet_*` layers (RLlib's TorchMLPEncoder: the network is `net`), each with a
    LayerNorm with `fcnet_use_layernorm`."""

    def __init__(self, input_dim: int, model_config: dict) -> None:
        super().__init__()
        hiddens = model_config["fcnet_hiddens"]
        self.net = TorchMLP(
            [input_dim] + hiddens,
            [model_config["fcnet_activation"]] * len(hiddens),
            [LayerInit(model_config, "fcnet")] * len(hiddens),
            layernorms=[bool(model_config.get("fcnet_use_layernorm"))] * len(hiddens),
        )
        self.output_dim = hiddens[-1] if hiddens else input_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def encoder_factory(
    observation_space: gym.Space, input_dim: int, model_config: dict
) -> Callable[[], nn.Module]:
    """What builds one encoder for `observation_space` (RLlib's catalog,
    `_get_encoder_config`): a CNN (`conv_filters`, or RLlib's preset for the image size) for an
    image (a 3-D Box), the `fcnet_*` MLP over `input_dim` features otherwise. Each encoder has
    an `output_dim`."""
    if isinstance(observation_space, gym.spaces.Box) and len(observation_space.shape) == 3:
        from trainer.torch_rl.cnn_encoder import CNNEncoder, default_conv_filters

        shape = tuple(int(d) for d in observation_space.shape)
        # The preset is looked up now, so a size without one fails when the module is built.
        filters = model_config["conv_filters"] or default_conv_filters(shape)
        cnn_config = {**model_config, "conv_filters": filters}
        return lambda: CNNEncoder((shape[0], shape[1], shape[2]), cnn_config)
    return lambda: MLPEncoder(input_dim, model_config)


def encoder_output_dim(observation_space: gym.Space, input_dim: int, model_config: dict) -> int:
    """The number of features the encoder `encoder_factory` builds outputs per observation
    (without building it): the CNN's flattened output for an image, the last of
    `fcnet_hiddens` (or `input_dim` without hidden layers) otherwise."""
    if isinstance(observation_space, gym.spaces.Box) and len(observation_space.shape) == 3:
        from trainer.torch_rl.cnn_encoder import conv_output_shape, default_conv_filters

        shape = tuple(int(d) for d in observation_space.shape)
        filters = model_config["conv_filters"] or default_conv_filters(shape)
        return int(np.prod(conv_output_shape((shape[0], shape[1], shape[2]), filters)))
    hiddens = model_config["fcnet_hiddens"]
    return int(hiddens[-1]) if hiddens else int(input_dim)


class ActorCriticEncoder(nn.Module):
    """RLlib's actor-critic encoder: one shared `encoder`, or an `actor_encoder` and a
    `critic_encoder`, each built by `make_encoder` (by default the `fcnet_*` MLP over
    `input_dim` features). `forward` returns `(actor features, critic features)`."""

    def __init__(
        self,
        input_dim: int,
        model_config: dict,
        make_encoder: Callable[[], nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if make_encoder is None:
            make_encoder = lambda: MLPEncoder(input_dim, model_config)  # noqa: E731
        self.shared = bool(model_config["vf_share_layers"])
        if self.shared:
            self.encoder = make_encoder()
            self.output_dim = int(self.encoder.output_dim)
        else:
            self.actor_encoder = make_encoder()
            self.critic_encoder = make_encoder()
            self.output_dim = int(self.actor_encoder.output_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.shared:
            features = self.encoder(x)
            return features, features
        return self.actor_encoder(x), self.critic_encoder(x)

    def encode_actor(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x) if self.shared else self.actor_encoder(x)

    def encode_critic(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x) if self.shared else self.critic_encoder(x)


class MLPHead(nn.Module):
    """A head (RLlib's TorchMLPHead, the network is `net`): `head_fcnet_*` hidden layers and a
    linear output. With `clip_log_std` the output is `[means, log_stds]` and the log-stds are
    clipped to `[-log_std_clip_param, log_std_clip_param]`; with `free_log_std` the network
    outputs the means and `log_std` is a parameter (RLlib's TorchFreeLogStdMLPHead).
    `output_gain`: the output layer's default initial weights' gain (see `TorchMLP`)."""

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        model_config: dict,
        *,
        clip_log_std: bool = False,
        free_log_std: bool = False,
        log_std_clip_param: float = 20.0,
        output_gain: float = 1.0,
    ) -> None:
        super().__init__()
        hiddens = model_config["head_fcnet_hiddens"]
        net_output = output_dim // 2 if free_log_std else output_dim
        self.net = TorchMLP(
            [input_dim] + hiddens + [net_output],
            [model_config["head_fcnet_activation"]] * len(hiddens) + [None],
            [LayerInit(model_config, "head_fcnet")] * (len(hiddens) + 1),
            output_gain=output_gain,
            # RLlib's heads: the hidden layers only.
            layernorms=[bool(model_config.get("head_fcnet_use_layernorm"))] * len(hiddens)
            + [False],
        )
        self.free_log_std = free_log_std
        if free_log_std:
            self.log_std = nn.Parameter(torch.zeros(net_output))
        self.clip_log_std = clip_log_std
        self.log_std_clip_param = float(log_std_clip_param)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        if self.free_log_std:
            log_std = self.log_std.expand(out.shape)
            if self.clip_log_std:
                log_std = log_std.clamp(-self.log_std_clip_param, self.log_std_clip_param)
            return torch.cat([out, log_std], dim=-1)
        if self.clip_log_std:
            means, log_stds = out.chunk(2, dim=-1)
            log_stds = log_stds.clamp(-self.log_std_clip_param, self.log_std_clip_param)
            return torch.cat([means, log_stds], dim=-1)
        return out


def is_image_space(space: gym.Space | None) -> bool:
    """Whether the default encoders read `space` as an image (a 3-D Box, channels-last): with
    RLlib's CNN, and with `use_lstm` with the CNN as the LSTM's tokenizer."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


class LSTMEncoder(nn.Module):
    """RLlib's TorchLSTMEncoder: a tokenizer applied at each time step (`tokenizer`), then one
    batch-first `nn.LSTM` layer of `lstm_cell_size` units (`lstm`), its weights and biases
    initialized per `lstm_*_initializer` (torch's defaults otherwise).

    The tokenizer is what RLlib's catalog builds for the observation space without the LSTM
    (`Catalog.get_tokenizer_config`): the `fcnet_*` MLP over `input_dim` features, or for
    images (`image_shape`, channels-last) RLlib's CNN (`conv_filters`, or its preset for the
    image size; `fcnet_hiddens` is not used), flattened. `extra_dim` features (the previous
    action and reward with `lstm_use_prev_action` / `lstm_use_prev_reward`) join an image's
    CNN features before the LSTM; with the MLP they are part of `input_dim`.

    `forward(x, state, extra=None)`: `x` is `(B, T, D)` (or `(B, T, *image_shape)`), `extra`
    `(B, T, extra_dim)`, `state` `{"h": (B, 1, H), "c": (B, 1, H)}` (batch first, one layer:
    RLlib's layout); returns the features `(B, T, H)` and the state after the last step, in
    the same layout."""

    def __init__(
        self,
        input_dim: int,
        model_config: dict,
        image_shape: tuple[int, int, int] | None = None,
        extra_dim: int = 0,
    ) -> None:
        super().__init__()
        self.image_shape = image_shape
        self.extra_dim = int(extra_dim) if image_shape is not None else 0
        tokenizer: nn.Module
        if image_shape is not None:
            from trainer.torch_rl.cnn_encoder import CNNEncoder, default_conv_filters

            filters = model_config["conv_filters"] or default_conv_filters(image_shape)
            tokenizer = CNNEncoder(image_shape, {**model_config, "conv_filters": filters})
        else:
            tokenizer = MLPEncoder(input_dim, model_config)
        self.tokenizer = tokenizer
        self.cell_size = int(model_config["lstm_cell_size"])
        lstm_input = int(tokenizer.output_dim) + self.extra_dim
        self.lstm = nn.LSTM(lstm_input, self.cell_size, 1, batch_first=True)
        kernel_init = _initializer(model_config["lstm_kernel_initializer"])
        kernel_kwargs = model_config["lstm_kernel_initializer_kwargs"] or {}
        bias_init = _initializer(model_config["lstm_bias_initializer"])
        bias_kwargs = model_config["lstm_bias_initializer_kwargs"] or {}
        with torch.no_grad():
            # As RLlib: the input and hidden weight matrices, then the two bias vectors.
            for weight_ih, weight_hh, bias_ih, bias_hh in self.lstm.all_weights:
                if kernel_init is not None:
                    kernel_init(weight_ih, **kernel_kwargs)
                    kernel_init(weight_hh, **kernel_kwargs)
                if bias_init is not None:
                    bias_init(bias_ih, **bias_kwargs)
                    bias_init(bias_hh, **bias_kwargs)
        self.output_dim = self.cell_size

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        """Zeros of shape `(num_layers=1, lstm_cell_size)` for "h" and "c" (RLlib's)."""
        return {"h": torch.zeros(1, self.cell_size), "c": torch.zeros(1, self.cell_size)}

    def tokens(self, x: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        """The LSTM's input `(B, T, F)`: the tokenizer over each time step of `x` (an image
        batch as `B * T` images), then `extra`."""
        if self.image_shape is None:
            return self.tokenizer(x)
        if x.dim() != 5 or tuple(x.shape[2:]) != tuple(self.image_shape):
            raise ValueError(
                f"LSTMEncoder: observations of shape {tuple(x.shape)}; expected sequences of "
                f"images (B, T, {', '.join(str(d) for d in self.image_shape)})"
            )
        batch, time = x.shape[:2]
        features = self.tokenizer(x.reshape(batch * time, *self.image_shape))
        features = features.reshape(batch, time, -1)
        if self.extra_dim:
            if extra is None:
                raise ValueError(
                    f"LSTMEncoder: {self.extra_dim} features of previous actions / rewards "
                    "expected with the images, none given"
                )
            features = torch.cat([features, extra.to(features.dtype)], dim=-1)
        return features

    def forward(
        self, x: torch.Tensor, state: dict[str, torch.Tensor], extra: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        tokens = self.tokens(x, extra)
        # States come batch first; torch's LSTM takes them layers first.
        h_in = state["h"].to(tokens.dtype).transpose(0, 1).contiguous()
        c_in = state["c"].to(tokens.dtype).transpose(0, 1).contiguous()
        out, (h_out, c_out) = self.lstm(tokens, (h_in, c_in))
        return out, {"h": h_out.transpose(0, 1), "c": c_out.transpose(0, 1)}


class RecurrentActorCriticEncoder(nn.Module):
    """RLlib's actor-critic encoder over LSTM encoders (RLlib's
    `TorchStatefulActorCriticEncoder`): with `vf_share_layers` one `encoder`, its state
    `{"h", "c"}`; without, an `actor_encoder` and a `critic_encoder`, the state
    `{"actor": {"h", "c"}, "critic": {"h", "c"}}`. `image_shape` and `extra_dim`: see
    `LSTMEncoder`."""

    def __init__(
        self,
        input_dim: int,
        model_config: dict,
        image_shape: tuple[int, int, int] | None = None,
        extra_dim: int = 0,
    ) -> None:
        super().__init__()
        self.shared = bool(model_config["vf_share_layers"])

        def make() -> LSTMEncoder:
            return LSTMEncoder(input_dim, model_config, image_shape, extra_dim)

        if self.shared:
            self.encoder = make()
        else:
            self.actor_encoder = make()
            self.critic_encoder = make()
        self.output_dim = int(model_config["lstm_cell_size"])

    def get_initial_state(self) -> dict[str, Any]:
        if self.shared:
            return self.encoder.get_initial_state()
        return {
            "actor": self.actor_encoder.get_initial_state(),
            "critic": self.critic_encoder.get_initial_state(),
        }

    def forward(
        self, x: torch.Tensor, state: dict[str, Any], extra: torch.Tensor | None = None
    ) -> tuple[Any, Any, dict]:
        """`(actor features, critic features, state out)`."""
        if self.shared:
            features, state_out = self.encoder(x, state, extra)
            return features, features, state_out
        actor, actor_state = self.actor_encoder(x, state["actor"], extra)
        critic, critic_state = self.critic_encoder(x, state["critic"], extra)
        return actor, critic, {"actor": actor_state, "critic": critic_state}

    def encode_critic(
        self, x: torch.Tensor, state: dict[str, Any], extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.shared:
            return self.encoder(x, state, extra)[0]
        return self.critic_encoder(x, state["critic"], extra)[0]


class ObservationEncoding:
    """How observations of one space become the encoder's float input: a Box is flattened over
    its own dimensions, a Discrete one-hot encoded; an image (a 3-D Box) keeps its shape
    `(B, height, width, channels)` for the CNN encoder (rows of its flattened pixels are
    reshaped to it). An image that arrives as uint8 is scaled to [-1, 1) as RLlib's Atari
    wrapper `NormalizedImageEnv` scales it (`x / 128 - 1`): frames travel from the env to the
    learner as bytes, a quarter of their float32 size, and the network computes what it
    computes on the normalized floats (RLlib's CNN takes bytes as 0-255 floats)."""

    def __init__(self, space: gym.Space, where: str) -> None:
        self.image = False
        if isinstance(space, gym.spaces.Discrete):
            self.discrete_n: int | None = int(space.n)
            self.shape: tuple[int, ...] = ()
            self.dim = int(space.n)
        elif isinstance(space, gym.spaces.Box) and len(space.shape) in (1, 2, 3):
            self.discrete_n = None
            self.shape = tuple(int(d) for d in space.shape)
            self.dim = int(np.prod(space.shape))
            self.image = len(space.shape) == 3
        else:
            raise UnsupportedValue(
                f"{where}: observation_space={space} is not supported: the default encoders "
                "take a 1-D (or 2-D, flattened) Box, an image (a 3-D Box: height, width, "
                "channels) or a Discrete space",
                OBSERVATION_SPACES,
            )

    def __call__(self, obs: Any, like: torch.Tensor) -> torch.Tensor:
        """`obs` (a tensor or an array) as the encoder's input, of the dtype and on the device
        of `like` (a weight of the first layer): numpy's float64 and integer arrays become the
        layers' floats, and a CPU batch follows a module moved to a GPU."""
        obs = torch.as_tensor(obs, device=like.device)
        if self.discrete_n is not None:
            if obs.is_floating_point() and obs.dim() >= 2 and obs.shape[-1] == self.discrete_n:
                # Rows one-hot encoded already (the EnvRunners' and learners' preprocessing,
                # `SpaceInfo.preprocess`); raw Discrete observations are integers.
                return obs.to(like.dtype)
            return nn.functional.one_hot(obs.long(), self.discrete_n).to(like.dtype)
        if self.image:
            if obs.dim() == 2 and obs.shape[-1] == self.dim:  # rows of flattened pixels
                obs = obs.reshape(obs.shape[0], *self.shape)
            if obs.dtype == torch.uint8:  # x / 128 - 1, in the one new tensor
                return obs.to(like.dtype).mul_(1.0 / 128.0).sub_(1.0)
            return obs.to(like.dtype)
        if len(self.shape) > 1:
            obs = obs.reshape(*obs.shape[: obs.dim() - len(self.shape)], self.dim)
        return obs.to(like.dtype)
