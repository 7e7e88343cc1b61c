"""`DreamerV3TorchRLModule`: DreamerV3's default module, in RLlib 2.60's layout (the same
submodules, parameter names and shapes as RLlib's `DreamerV3TorchRLModule` for a model size and
spaces, so that state dicts can be exchanged).

    encoder            MLP of the (symlog'ed) observation                      (x_t)
    world_model        the RSSM and its heads (Hafner et al. 2023, eq. 3):
      sequence_model     h_t = f(h_{t-1}, z_{t-1}, a_{t-1})   (pre-GRU MLP, DreamerV3GRU)
      posterior_mlp, posterior_representation_layer
                         z_t ~ q(z_t | h_t, x_t)              (the "encoder" of the paper)
      dynamics_predictor z^_t ~ p(z^_t | h_t)                  (the prior)
      reward_predictor   r^_t ~ p(r^_t | h_t, z_t)   255 two-hot symlog buckets
      continue_predictor c^_t ~ p(c^_t | h_t, z_t)   Bernoulli
      decoder            x^_t ~ p(x^_t | h_t, z_t)   (its mean, symlog space)
      initial_h          the learned start of h (tanh'ed)
    actor              pi(a_t | s_t), s_t = (h_t, z_t)
    critic             v(s_t) (255 two-hot symlog buckets) and its EMA copy
    dreamer_model      world_model, actor and critic together (and `dream_trajectory`)
    decoder            the world model's decoder (RLlib registers it at the top too)

Each hidden layer is Linear (no bias) -> LayerNorm(eps=1e-3) -> SiLU, with Hafner's normal
initializer; the sizes come from `MODEL_SIZES[model_config["model_size"]]`. Stochastic states z
are `z_categoricals` one-hot vectors of `z_classes` classes each, drawn from softmax
probabilities mixed with 1% uniform, with straight-through gradients.

Acting: the module is stateful (`get_initial_state()`: `h`, `z` and `is_first`), so the
EnvRunners carry each sub-env's state and hand the previous action in (`uses_prev_actions`);
where `is_first` is 1 (an episode's first step, or RLlib's `batch["is_first"]`), the learned
initial state and a zero action are used instead. One step: h_t from the sequence model, z_t
from the posterior, and the actor's distribution inputs (`Columns.ACTION_DIST_INPUTS`: logits
of a Categorical for Discrete actions, mean and log-std of a diagonal Gaussian for Box actions),
which the EnvRunner draws from (its mode without exploration). An inference-only copy (the
EnvRunners') holds the encoder, the RSSM and the actor only.

Vector observations (1-D Box; Discrete observations arrive one-hot) and 64x64 images (RLlib's
CNN encoder and decoder), with Discrete or Box actions.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any, NamedTuple, cast

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from trainer.algorithms.dreamerv3.config import MODEL_SIZES, ModelSize
from trainer.capabilities import OBSERVATION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import InferenceOnlyAPI
from trainer.core.model_configs import ENCODER_OUT, CNNEncoderConfig, CNNTransposeHeadConfig
from trainer.errors import UnsupportedValue
from trainer.torch_rl import draws
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.torch_rl.torch_utils import inverse_symlog, symlog

#: RLlib's name of the one-hot actions column.
ACTIONS_ONE_HOT = "actions_one_hot"
#: The is-first flag (RLlib's batch column; here also part of the carried state).
IS_FIRST = "is_first"
#: Two-hot buckets of the reward predictor and the critic, over symlog values in [-20, 20].
NUM_BUCKETS = 255
LOWER_BOUND = -20.0
UPPER_BOUND = 20.0
#: The uniform share mixed into the categorical probabilities (z states, discrete actions).
UNIMIX = 0.01
#: The critic's EMA copy: ema <- decay * ema + (1 - decay) * critic after each update.
CRITIC_EMA_DECAY = 0.98
#: The Box actor's standard deviation range.
MIN_STD = 0.1
MAX_STD = 1.0


def dreamerv3_normal_initializer(weight: torch.Tensor) -> None:
    """Hafner's initializer: normal with std sqrt(1 / mean(fan_in, fan_out)) / 0.8796...,
    clamped to [-2, 2] (a truncated-normal correction)."""
    fan_out, fan_in = weight.shape[0], weight.shape[1]
    std = float(np.sqrt(1.0 / np.mean([fan_in, fan_out])) / 0.87962566103423978)
    with torch.no_grad():
        weight.normal_(0, std)
        weight.clamp_(-2, 2)


def sizes_of(model_size: str) -> ModelSize:
    """The row of `MODEL_SIZES` for `model_size` (ValueError naming the allowed ones)."""
    if model_size not in MODEL_SIZES:
        raise ValueError(
            f"model_size={model_size!r}: must be one of {list(MODEL_SIZES)} (RLlib's table)"
        )
    return MODEL_SIZES[model_size]


def action_dim(action_space: gym.Space) -> int:
    """The width of an action as the world model sees it (one-hot for Discrete)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    return int(np.prod(cast(Any, action_space).shape))


def _flat(z: torch.Tensor) -> torch.Tensor:
    return z.reshape(z.shape[0], -1)


def draw_one_hot(probs: torch.Tensor, rllib_draws: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(a one-hot draw from each categorical of `probs` (..., K), its class indices (...)).

    One uniform per categorical against the cumulative probabilities (the inverse CDF): 1.1 ms
    for the 32,768 categoricals of one dreamed step of the XS model, where torch's
    `OneHotCategorical.sample` (RLlib's; `torch.multinomial`) takes 16.6 ms. `rllib_draws`:
    RLlib's draws instead (the same draws as RLlib's module for a torch seed)."""
    if rllib_draws:
        one_hot = torch.distributions.OneHotCategorical(
            logits=torch.log(probs), validate_args=False
        ).sample()
        return one_hot, one_hot.argmax(dim=-1)
    uniform = draws.uniform(probs.shape[:-1] + (1,), probs.dtype, probs.device)
    index = (probs.cumsum(dim=-1) < uniform).sum(dim=-1).clamp_(max=probs.shape[-1] - 1)
    return torch.zeros_like(probs).scatter_(-1, index.unsqueeze(-1), 1.0), index


class OneHotZ(NamedTuple):
    """A batch of z states (N, num_categoricals, num_classes) that are one-hot (draws, with
    or without straight-through gradients) and their class indices (N, num_categoricals)."""

    z: torch.Tensor
    index: torch.Tensor


class _OneHotProduct(torch.autograd.Function):
    """z_flat @ weight.T for a one-hot z_flat (N, C*K) given by its flat indices (N, C): the sum
    of C of weight's columns per row (`embedding_bag`), not a dense product. The XS model's
    heads over a dream's 16,384 states: 2.5 ms instead of 45 ms. Backward: z's gradient is the
    dense product (straight-through z carries one), the weight's C index-adds."""

    @staticmethod
    def forward(
        ctx: Any, z_flat: torch.Tensor, weight: torch.Tensor, flat_index: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(weight, flat_index)
        return F.embedding_bag(flat_index, weight.t().contiguous(), mode="sum")

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[Any, ...]:
        weight, flat_index = ctx.saved_tensors
        grad_z = grad_weight = None
        if ctx.needs_input_grad[0]:
            grad_z = grad_out @ weight
        if ctx.needs_input_grad[1]:
            grad_weight_t = grad_out.new_zeros(weight.shape[1], weight.shape[0])
            for column in flat_index.unbind(dim=1):
                grad_weight_t.index_add_(0, column, grad_out)
            grad_weight = grad_weight_t.t()
        return grad_z, grad_weight, None


#: The fewest rows whose one-hot z products `linear_over` sums from weight columns: fewer go
#: through the dense product (16 rows: 80 us dense against 150 us of sums and a weight copy).
ONE_HOT_MIN_ROWS = 256


def linear_over(linear: nn.Linear, pieces: list[torch.Tensor | OneHotZ]) -> torch.Tensor:
    """`linear(torch.cat(pieces, -1))` without the concatenation: each piece's product with its
    columns of the weight, the one-hot z states' (of `ONE_HOT_MIN_ROWS` rows or more) as sums
    of columns (`_OneHotProduct`), the dense pieces' added on in the matrix product."""
    weight = linear.weight
    out = linear.bias
    dense: list[tuple[torch.Tensor, torch.Tensor]] = []
    column = 0
    for piece in pieces:
        if isinstance(piece, OneHotZ):
            categoricals, classes = piece.z.shape[-2:]
            width = categoricals * classes
            columns = weight[:, column : column + width]
            if piece.index.shape[0] < ONE_HOT_MIN_ROWS:
                dense.append((_flat(piece.z), columns))
            else:
                offsets = torch.arange(categoricals, device=piece.index.device) * classes
                part = _OneHotProduct.apply(_flat(piece.z), columns, piece.index + offsets)
                out = part if out is None else out + part
        else:
            width = piece.shape[-1]
            dense.append((piece, weight[:, column : column + width]))
        column += width
    assert column == weight.shape[1], (column, weight.shape)
    for inputs, columns in dense:
        out = F.linear(inputs, columns) if out is None else torch.addmm(out, inputs, columns.t())
    assert out is not None
    return out


def _state_pieces(
    h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None
) -> list[torch.Tensor | OneHotZ]:
    """[h, z] as `linear_over`'s pieces: z by its indices where they are given."""
    return [h, _flat(z) if z_index is None else OneHotZ(z, z_index)]


class DreamerV3MLP(nn.Module):
    """RLlib's DreamerV3 MLP (its class `MLP`): `num_dense_layers` x (Linear without bias,
    LayerNorm, SiLU) and an optional linear output layer (`_net`)."""

    def __init__(
        self,
        *,
        input_size: int,
        model_size: str = "XS",
        num_dense_layers: int | None = None,
        dense_hidden_units: int | None = None,
        output_layer_size: int | None = None,
    ):
        super().__init__()
        sizes = sizes_of(model_size)
        layers_count = sizes.dense_layers if num_dense_layers is None else num_dense_layers
        units = sizes.dense_units if dense_hidden_units is None else dense_hidden_units
        layers: list[nn.Module] = []
        self.output_size: tuple[int, ...] | None = None
        for _ in range(layers_count):
            linear = nn.Linear(input_size, units, bias=False)
            dreamerv3_normal_initializer(linear.weight)
            layers += [linear, nn.LayerNorm(units, eps=0.001), nn.SiLU()]
            input_size = units
            self.output_size = (units,)
        if output_layer_size:
            linear = nn.Linear(input_size, output_layer_size, bias=True)
            dreamerv3_normal_initializer(linear.weight)
            nn.init.zeros_(linear.bias)
            layers.append(linear)
            self.output_size = (output_layer_size,)
        self._net = nn.Sequential(*layers)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self._net(inputs)

    def forward_pieces(self, pieces: list[torch.Tensor | OneHotZ]) -> torch.Tensor:
        """`forward(torch.cat(pieces, -1))`, its first layer by `linear_over`."""
        x = linear_over(cast(nn.Linear, self._net[0]), pieces)
        for layer in itertools.islice(self._net, 1, None):
            x = layer(x)
        return x

    def forward_state(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> torch.Tensor:
        """`forward(torch.cat([h, z flat], -1))`, z by its indices where they are given."""
        if z_index is None:
            return self._net(torch.cat([h, _flat(z)], dim=-1))
        return self.forward_pieces(_state_pieces(h, z, z_index))


class RepresentationLayer(nn.Module):
    """Logits of `num_categoricals` x `num_classes` -> a one-hot draw z with straight-through
    gradients (z = draw + probs - sg(probs)), probabilities mixed with 1% uniform."""

    def __init__(self, *, input_size: int, model_size: str = "XS"):
        super().__init__()
        sizes = sizes_of(model_size)
        self.num_categoricals = sizes.z_categoricals
        self.num_classes_per_categorical = sizes.z_classes
        self.z_generating_layer = nn.Linear(
            input_size, self.num_categoricals * self.num_classes_per_categorical, bias=True
        )
        dreamerv3_normal_initializer(self.z_generating_layer.weight)

    def z_probs(self, inputs: torch.Tensor) -> torch.Tensor:
        """The mixed probabilities, (B, num_categoricals, num_classes)."""
        logits = self.z_generating_layer(inputs).reshape(
            -1, self.num_categoricals, self.num_classes_per_categorical
        )
        probs = F.softmax(logits, dim=-1)
        return (1.0 - UNIMIX) * probs + UNIMIX / self.num_classes_per_categorical

    #: Draw as RLlib does (`draw_one_hot`); set by `DreamerV3TorchRLModule.use_rllib_draws`.
    rllib_draws = False

    def forward(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, its probabilities): z drawn from the categoricals, straight-through."""
        z, probs, _ = self.draw(inputs)
        return z, probs

    def draw(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(z, its probabilities, its class indices): `forward`'s and the indices of the
        draw (z's one-hot positions)."""
        probs = self.z_probs(inputs)
        draw, index = draw_one_hot(probs, self.rllib_draws)
        return draw.detach() + probs - probs.detach(), probs, index


class DreamerV3GRU(nn.Module):
    """Hafner's GRU: one Linear over [h, x] (no bias) with LayerNorm, gates reset, candidate,
    update (the update gate biased by -1)."""

    def __init__(self, input_size: int, cell_size: int):
        super().__init__()
        self.cell_size = cell_size
        self.output_size = 3 * cell_size
        self.linear = nn.Linear(input_size + cell_size, self.output_size, bias=False)
        dreamerv3_normal_initializer(self.linear.weight)
        self.layer_norm = nn.LayerNorm(self.output_size, eps=0.001)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        parts = self.layer_norm(self.linear(torch.cat([h, x], dim=-1)))
        reset, candidate, update = torch.split(parts, self.cell_size, dim=-1)
        candidate = torch.tanh(torch.sigmoid(reset) * candidate)
        update = torch.sigmoid(update - 1)
        return update * candidate + (1 - update) * h


class SequenceModel(nn.Module):
    """h_t = GRU(MLP([z_{t-1}, a_{t-1}]), h_{t-1})."""

    def __init__(self, *, input_size: int, model_size: str, gru_units: int):
        super().__init__()
        self.pre_gru_layer = DreamerV3MLP(
            input_size=input_size, num_dense_layers=1, model_size=model_size
        )
        self.gru_unit = DreamerV3GRU(sizes_of(model_size).dense_units, gru_units)

    def forward(
        self,
        a: torch.Tensor,
        h: torch.Tensor,
        z: torch.Tensor,
        z_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """h_t; z by its indices where they are given (`linear_over`)."""
        if z_index is None:
            x = self.pre_gru_layer(torch.cat([_flat(z), a], dim=-1))
        else:
            x = self.pre_gru_layer.forward_pieces([OneHotZ(z, z_index), a])
        return self.gru_unit(x, h)


class DynamicsPredictor(nn.Module):
    """The prior: z^_t from h_t (an MLP of one layer and a representation layer)."""

    def __init__(self, *, input_size: int, model_size: str):
        super().__init__()
        self.mlp = DreamerV3MLP(input_size=input_size, num_dense_layers=1, model_size=model_size)
        self.representation_layer = RepresentationLayer(
            input_size=sizes_of(model_size).dense_units, model_size=model_size
        )

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.representation_layer(self.mlp(h))

    def draw(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(z^, its probabilities, its class indices)."""
        return self.representation_layer.draw(self.mlp(h))

    def z_probs(self, h: torch.Tensor) -> torch.Tensor:
        return self.representation_layer.z_probs(self.mlp(h))


class RewardPredictorLayer(nn.Module):
    """Logits over `NUM_BUCKETS` evenly spaced symlog values in [-20, 20] (zero-initialised);
    the prediction is their probability-weighted mean (symlog space)."""

    def __init__(self, *, input_size: int):
        super().__init__()
        self.num_buckets = NUM_BUCKETS
        self.lower_bound = LOWER_BOUND
        self.upper_bound = UPPER_BOUND
        self.reward_buckets_layer = nn.Linear(input_size, NUM_BUCKETS, bias=True)
        nn.init.zeros_(self.reward_buckets_layer.weight)
        nn.init.zeros_(self.reward_buckets_layer.bias)

    def forward(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the expected symlog value, the logits)."""
        logits = self.reward_buckets_layer(inputs)
        outcomes = torch.linspace(
            LOWER_BOUND, UPPER_BOUND, NUM_BUCKETS, device=logits.device, dtype=logits.dtype
        )
        return torch.sum(F.softmax(logits, dim=-1) * outcomes, dim=-1), logits


class RewardPredictor(nn.Module):
    def __init__(self, *, input_size: int, model_size: str):
        super().__init__()
        self.mlp = DreamerV3MLP(input_size=input_size, model_size=model_size)
        self.reward_layer = RewardPredictorLayer(input_size=sizes_of(model_size).dense_units)

    def forward(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the expected symlog reward, the bucket logits)."""
        return self.reward_layer(self.mlp.forward_state(h, z, z_index))


class ContinuePredictor(nn.Module):
    def __init__(self, *, input_size: int, model_size: str):
        super().__init__()
        self.mlp = DreamerV3MLP(input_size=input_size, model_size=model_size, output_layer_size=1)

    def forward(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The Bernoulli logits of "the episode continues"."""
        return self.mlp.forward_state(h, z, z_index).squeeze(-1)


class VectorDecoder(nn.Module):
    def __init__(self, *, input_size: int, model_size: str, observation_size: int):
        super().__init__()
        self.mlp = DreamerV3MLP(
            input_size=input_size, model_size=model_size, output_layer_size=observation_size
        )

    def forward(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The mean of the (unit-variance Gaussian) observation, symlog space."""
        return self.mlp.forward_state(h, z, z_index)


#: The image size RLlib's CNN encoder and decoder are built for (`CNNAtari`).
IMAGE_SIZE = 64


def _normal_initializer(weight: torch.Tensor, *_: Any, **__: Any) -> None:
    dreamerv3_normal_initializer(weight)


class CNNAtari(nn.Module):
    """RLlib's image encoder: 64x64 images (channels last, 1 or 3 of them) through
    4 convolutions (4x4, stride 2, "same" padding, no bias, LayerNorm over the channels, SiLU)
    of 1, 2, 4 and 8 times the model size's `cnn_multiplier` filters, flattened (`cnn_stack`:
    RLlib's `CNNEncoderConfig` network, its layout)."""

    def __init__(self, *, model_size: str, gray_scaled: bool):
        super().__init__()
        multiplier = sizes_of(model_size).cnn_multiplier
        config = CNNEncoderConfig(
            input_dims=[IMAGE_SIZE, IMAGE_SIZE, 1 if gray_scaled else 3],
            cnn_filter_specifiers=[[k * multiplier, 4, 2] for k in (1, 2, 4, 8)],
            cnn_use_bias=False,
            cnn_use_layernorm=True,
            cnn_activation="silu",
            cnn_kernel_initializer=_normal_initializer,
            flatten_at_end=True,
        )
        self.cnn_stack = config.build(framework="torch")
        self.output_size = config.output_dims

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.cnn_stack({Columns.OBS: inputs})[ENCODER_OUT]


class ConvTransposeAtari(nn.Module):
    """RLlib's image decoder: [h, z] through a dense layer to 4x4 images of 8 times
    `cnn_multiplier` channels, then 4 transposed convolutions (4x4, stride 2; LayerNorm and
    SiLU but after the last) to 64x64 with 1 or 3 channels, flattened: the mean of the
    observation (`_transpose_2d_head`: RLlib's `CNNTransposeHeadConfig` network)."""

    def __init__(self, *, input_size: int, model_size: str, gray_scaled: bool):
        super().__init__()
        multiplier = sizes_of(model_size).cnn_multiplier
        config = CNNTransposeHeadConfig(
            input_dims=[input_size],
            initial_image_dims=(4, 4, 8 * multiplier),
            initial_dense_weights_initializer=_normal_initializer,
            cnn_transpose_filter_specifiers=[
                [4 * multiplier, 4, 2],
                [2 * multiplier, 4, 2],
                [1 * multiplier, 4, 2],
                [1 if gray_scaled else 3, 4, 2],
            ],
            cnn_transpose_use_bias=False,
            cnn_transpose_use_layernorm=True,
            cnn_transpose_activation="silu",
            cnn_transpose_kernel_initializer=_normal_initializer,
        )
        self._transpose_2d_head = config.build(framework="torch")

    def forward(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The mean of the image, flattened (B, 64 * 64 * channels)."""
        out = self._transpose_2d_head(torch.cat([h, _flat(z)], dim=-1))
        return out.reshape(z.shape[0], -1)


def is_image_space(space: gym.Space) -> bool:
    """RLlib's `is_img_space`: a Box of rank 2 or 3 (2 refused: RLlib's catalog refuses it)."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) in (2, 3)


class WorldModel(nn.Module):
    """The RSSM, its heads and the encoder and decoder (see the module docstring)."""

    def __init__(
        self,
        *,
        model_size: str,
        action_space: gym.Space,
        encoder: DreamerV3MLP | CNNAtari,
        decoder: VectorDecoder | ConvTransposeAtari,
        symlog_obs: bool,
        observation_shape: tuple[int, ...] | None = None,
    ):
        super().__init__()
        sizes = sizes_of(model_size)
        self.model_size = model_size
        self.symlog_obs = symlog_obs
        #: One observation's shape as the encoder takes it (a vector's flat, an image's own).
        self.observation_shape = observation_shape
        self.encoder = encoder
        self.num_gru_units = sizes.gru_units
        encoder_size = cast(tuple, encoder.output_size)[0]
        self.posterior_mlp = DreamerV3MLP(
            input_size=self.num_gru_units + encoder_size, model_size=model_size, num_dense_layers=1
        )
        self.posterior_representation_layer = RepresentationLayer(
            input_size=sizes.dense_units, model_size=model_size
        )
        z_flat = sizes.z_categoricals * sizes.z_classes
        h_plus_z_flat = self.num_gru_units + z_flat
        self.dynamics_predictor = DynamicsPredictor(
            input_size=self.num_gru_units, model_size=model_size
        )
        self.initial_h = nn.Parameter(torch.zeros(self.num_gru_units), requires_grad=True)
        self.sequence_model = SequenceModel(
            input_size=z_flat + action_dim(action_space),
            model_size=model_size,
            gru_units=self.num_gru_units,
        )
        self.reward_predictor = RewardPredictor(input_size=h_plus_z_flat, model_size=model_size)
        self.continue_predictor = ContinuePredictor(input_size=h_plus_z_flat, model_size=model_size)
        self.decoder = decoder

    def initial_state(
        self, batch_size: int, *, as_rllib: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(h_0, z_0) for `batch_size` rows: tanh(initial_h), and the prior's mode given it
        (one-hot argmax, not a draw). `as_rllib` with RLlib's draws (`draw_one_hot`): through
        the prior's draw, whose sample is not used (RLlib's order of draws, so that a seed
        draws RLlib's z states)."""
        h = torch.tanh(self.initial_h).unsqueeze(0)
        if as_rllib and self.dynamics_predictor.representation_layer.rllib_draws:
            _, probs = self.dynamics_predictor(h)
        else:
            probs = self.dynamics_predictor.z_probs(h)
        z = F.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(h.dtype)
        return h.expand(batch_size, -1), z.expand(batch_size, -1, -1)

    def _as_encoder_input(self, observations: torch.Tensor, rows: int) -> torch.Tensor:
        """`rows` observations in the module's dtype, each flat (vectors) or in its own shape
        (images)."""
        shape = (-1,) if self.observation_shape is None else self.observation_shape
        return observations.reshape((rows, *shape)).to(self.initial_h.dtype)

    def encode(self, observations: torch.Tensor) -> torch.Tensor:
        """The encoder's output for observations (B, ...) (symlog'ed first with symlog_obs)."""
        observations = self._as_encoder_input(observations, observations.shape[0])
        if self.symlog_obs:
            observations = symlog(observations)
        return self.encoder(observations)

    def posterior(
        self, encoded: torch.Tensor, h: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(z_t, its probabilities) given the encoded observation and h_t."""
        z, probs, _ = self.posterior_draw(encoded, h)
        return z, probs

    def posterior_draw(
        self, encoded: torch.Tensor, h: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(z_t, its probabilities, its class indices) given the encoded observation and h_t."""
        return self.posterior_representation_layer.draw(
            self.posterior_mlp(torch.cat([encoded, h], dim=-1))
        )

    def observe_step(
        self,
        observations: torch.Tensor,
        h: torch.Tensor,
        z: torch.Tensor,
        a: torch.Tensor,
        is_first: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of acting: (h_t, z_t) from the previous (h, z, a) and x_t; rows with
        `is_first` start from the initial state and a zero action."""
        keep = (1.0 - is_first.float()).unsqueeze(-1)
        h0, z0 = self.initial_state(h.shape[0], as_rllib=True)
        h = h * keep + h0 * (1.0 - keep)
        z = z * keep.unsqueeze(-1) + z0 * (1.0 - keep).unsqueeze(-1)
        h = self.sequence_model(a=a * keep, h=h, z=z)
        z, _ = self.posterior(self.encode(observations), h)
        return h, z

    def forward_train(
        self, observations: torch.Tensor, actions: torch.Tensor, is_first: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The posterior roll over (B, T) sequences (actions one-hot for Discrete) and the
        heads' predictions, under RLlib's keys (`..._BxT`: B and T folded), and the posterior
        z states' class indices (`z_posterior_index_BxT`, for `dream_trajectory`)."""
        B, T = observations.shape[:2]
        obs_BxT = self._as_encoder_input(observations, B * T)
        if self.symlog_obs:
            obs_BxT = symlog(obs_BxT)
        encoded = self.encoder(obs_BxT).reshape(B, T, -1)
        rllib_draws = self.dynamics_predictor.representation_layer.rllib_draws
        h0, z0 = self.initial_state(B, as_rllib=True)
        z0_index = z0.argmax(dim=-1)
        h, z, z_index = h0, z0, z0_index
        is_first = is_first.float()
        h_list, z_list, index_list, posterior_probs, prior_probs = [], [], [], [], []
        for t in range(T):
            keep = (1.0 - is_first[:, t]).unsqueeze(-1)
            h = h * keep + h0 * (1.0 - keep)
            z = z * keep.unsqueeze(-1) + z0 * (1.0 - keep).unsqueeze(-1)
            z_index = torch.where(keep > 0.5, z_index, z0_index)
            # (RLlib's index t - 1 wraps at t = 0, where is_first is always 1: masked out.)
            a = actions[:, t - 1] * keep
            h = self.sequence_model(a=a, h=h, z=z, z_index=z_index)
            z, z_probs, z_index = self.posterior_draw(encoded[:, t], h)
            h_list.append(h)
            z_list.append(z)
            index_list.append(z_index)
            posterior_probs.append(z_probs)
            if rllib_draws:
                _, z_prior_probs = self.dynamics_predictor(h)  # (drawn, as RLlib's, not used)
            else:
                z_prior_probs = self.dynamics_predictor.z_probs(h)
            prior_probs.append(z_prior_probs)
        h_BxT = torch.stack(h_list, dim=1).reshape(B * T, -1)
        z_BxT = torch.stack(z_list, dim=1).reshape((B * T,) + z.shape[1:])
        index_BxT = torch.stack(index_list, dim=1).reshape(B * T, -1)
        rewards, reward_logits = self.reward_predictor(h_BxT, z_BxT, index_BxT)
        continue_logits = self.continue_predictor(h_BxT, z_BxT, index_BxT)
        return {
            "sampled_obs_symlog_BxT": obs_BxT,
            "obs_distribution_means_BxT": self.decoder(h_BxT, z_BxT, index_BxT),
            "reward_logits_BxT": reward_logits,
            "rewards_BxT": rewards,
            "continue_logits_BxT": continue_logits,
            "h_states_BxT": h_BxT,
            "z_posterior_states_BxT": z_BxT,
            "z_posterior_index_BxT": index_BxT,
            "z_posterior_probs_BxT": torch.stack(posterior_probs, dim=1).reshape(
                (B * T,) + z.shape[1:]
            ),
            "z_prior_probs_BxT": torch.stack(prior_probs, dim=1).reshape((B * T,) + z.shape[1:]),
        }


class ActorNetwork(nn.Module):
    """pi(a | h, z): an MLP of the action logits (Discrete: softmax mixed with 1% uniform), or
    of the mean (tanh) and a second of the std (in [0.1, 1]) for Box actions; with the EMAs of
    the returns' 5th and 95th percentiles (`ema_value_target_pct5`, `..._pct95`, NaN until the
    first update)."""

    def __init__(self, *, input_size: int, model_size: str, action_space: gym.Space):
        super().__init__()
        self.action_space = action_space
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.ema_value_target_pct5 = nn.Parameter(torch.tensor(float("nan")), requires_grad=False)
        self.ema_value_target_pct95 = nn.Parameter(torch.tensor(float("nan")), requires_grad=False)
        size = action_dim(action_space)
        self.mlp = DreamerV3MLP(
            input_size=input_size, model_size=model_size, output_layer_size=size
        )
        if not self.discrete:
            self.std_mlp = DreamerV3MLP(
                input_size=input_size, model_size=model_size, output_layer_size=size
            )

    #: Draw as RLlib does (`draw_one_hot`); set by `DreamerV3TorchRLModule.use_rllib_draws`.
    rllib_draws = False

    def distribution_parameters(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> torch.Tensor:
        """RLlib's distribution parameters: the mixed log-probabilities (Discrete), or the mean
        and std side by side (Box). z by its indices where they are given."""
        logits = self.mlp.forward_state(h, z, z_index)
        if self.discrete:
            probs = F.softmax(logits, dim=-1)
            return torch.log((1.0 - UNIMIX) * probs + UNIMIX / logits.shape[-1])
        std_logits = self.std_mlp.forward_state(h, z, z_index)
        std = (MAX_STD - MIN_STD) * torch.sigmoid(std_logits + 2.0) + MIN_STD
        return torch.cat([torch.tanh(logits), std], dim=-1)

    def distribution(self, parameters: torch.Tensor) -> torch.distributions.Distribution:
        """OneHotCategorical (Discrete) or an independent Normal (Box) of the parameters."""
        if self.discrete:
            return torch.distributions.OneHotCategorical(logits=parameters, validate_args=False)
        loc, scale = torch.chunk(parameters, 2, dim=-1)
        return torch.distributions.Independent(
            torch.distributions.Normal(loc, scale, validate_args=False), 1, validate_args=False
        )

    def forward(
        self, h: torch.Tensor, z: torch.Tensor, z_index: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(an action drawn, its distribution parameters): one-hot with straight-through
        gradients (Discrete), reparameterized (Box)."""
        parameters = self.distribution_parameters(h, z, z_index)
        if self.discrete:
            probs = torch.exp(parameters)
            if self.rllib_draws:
                draw = self.distribution(parameters.detach()).sample()
            else:
                draw, _ = draw_one_hot(probs.detach(), rllib_draws=False)
            return draw + probs - probs.detach(), parameters
        return draws.draw(self.distribution(parameters), reparameterized=True), parameters

    def dist_inputs(self, parameters: torch.Tensor) -> torch.Tensor:
        """The parameters as the EnvRunners' distributions take them: logits (TorchCategorical),
        or mean and log-std (TorchDiagGaussian)."""
        if self.discrete:
            return parameters
        loc, scale = torch.chunk(parameters, 2, dim=-1)
        return torch.cat([loc, torch.log(scale)], dim=-1)


class CriticNetwork(nn.Module):
    """v(h, z) over two-hot symlog buckets, and its EMA copy (`mlp_ema`, `return_layer_ema`:
    not trained, moved towards the critic after each update; the critic loss's regularizer)."""

    def __init__(self, *, input_size: int, model_size: str):
        super().__init__()
        units = sizes_of(model_size).dense_units
        self.ema_decay = CRITIC_EMA_DECAY
        self.mlp = DreamerV3MLP(input_size=input_size, model_size=model_size)
        self.return_layer = RewardPredictorLayer(input_size=units)
        self.mlp_ema = DreamerV3MLP(input_size=input_size, model_size=model_size)
        self.return_layer_ema = RewardPredictorLayer(input_size=units)

    def forward(
        self,
        h: torch.Tensor,
        z: torch.Tensor,
        use_ema: bool = False,
        z_index: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the expected symlog value, the bucket logits), of the critic or its EMA copy; z by
        its indices where they are given."""
        if use_ema:
            return self.return_layer_ema(self.mlp_ema.forward_state(h, z, z_index))
        return self.return_layer(self.mlp.forward_state(h, z, z_index))

    def _pairs(self) -> list[tuple[nn.Parameter, nn.Parameter]]:
        return [
            *zip(self.mlp_ema.parameters(), self.mlp.parameters(), strict=True),
            *zip(self.return_layer_ema.parameters(), self.return_layer.parameters(), strict=True),
        ]

    def init_ema(self) -> None:
        """The EMA copy set to the critic's weights, and frozen."""
        for ema, param in self._pairs():
            ema.data.copy_(param.data)
            ema.requires_grad = False

    def update_ema(self) -> None:
        """ema <- ema_decay * ema + (1 - ema_decay) * critic."""
        with torch.no_grad():
            for ema, param in self._pairs():
                ema.mul_(self.ema_decay).add_((1.0 - self.ema_decay) * param)


class DreamerModel(nn.Module):
    """The world model, actor and critic together; `dream_trajectory` imagines H steps."""

    def __init__(self, *, world_model: WorldModel, actor: ActorNetwork, critic: CriticNetwork):
        super().__init__()
        self.world_model = world_model
        self.actor = actor
        self.critic = critic

    def dream_trajectory(
        self,
        start_h: torch.Tensor,
        start_z: torch.Tensor,
        start_is_terminated: torch.Tensor,
        timesteps_H: int,
        gamma: float,
        start_z_index: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """H imagined steps from every start state (BxT rows), time-major (H + 1, BxT):
        actions from the actor, h from the sequence model, z^ from the prior, rewards and
        continues from their predictors (the first continue is 1 - the start's
        is_terminated), values from the critic (with gradients into the actor through the
        dynamics, for Box actions), the EMA critic's values, and the loss weights
        cumprod(gamma * c) / gamma. The world model's weights get no gradient from here.
        RLlib's keys.

        The start z states are one-hot (the posterior's draws); `start_z_index`: their class
        indices (else their argmax). Every product with a z state is a sum of weight columns
        (`linear_over`), not a dense product over its num_categoricals x num_classes width."""
        world_model, actor, critic = self.world_model, self.actor, self.critic
        h, z = start_h.detach(), start_z.detach()
        z_index = start_z.argmax(dim=-1) if start_z_index is None else start_z_index
        h_list, z_list, index_list = [h], [z], [z_index]
        a, parameters = actor(h, z, z_index)
        a_list, parameter_list = [a], [parameters]
        # Only the Box actor's loss differentiates through the dynamics; for Discrete actions
        # (REINFORCE on stopped advantages) the world model's steps build no graph.
        through_dynamics = not actor.discrete
        world_model_steps = contextlib.nullcontext() if through_dynamics else torch.no_grad()
        frozen = [p for p in world_model.parameters() if p.requires_grad]
        for param in frozen:
            param.requires_grad_(False)
        try:
            for _ in range(timesteps_H):
                with world_model_steps:
                    h = world_model.sequence_model(a=a, h=h, z=z, z_index=z_index)
                    z, _, z_index = world_model.dynamics_predictor.draw(h)
                h_list.append(h)
                z_list.append(z)
                index_list.append(z_index)
                a, parameters = actor(h.detach(), z.detach(), z_index)
                a_list.append(a)
                parameter_list.append(parameters)
            h_H_B = torch.stack(h_list, dim=0)
            z_H_B = torch.stack(z_list, dim=0)
            h_HxB = h_H_B.reshape(-1, h_H_B.shape[-1])
            z_HxB = z_H_B.reshape((-1,) + z_H_B.shape[2:])
            index_HxB = torch.stack(index_list, dim=0).reshape(h_HxB.shape[0], -1)
            with world_model_steps:
                rewards_symlog, _ = world_model.reward_predictor(h_HxB, z_HxB, index_HxB)
                continues = (
                    torch.sigmoid(world_model.continue_predictor(h_HxB, z_HxB, index_HxB)) > 0.5
                ).to(h_HxB.dtype)
        finally:
            for param in frozen:
                param.requires_grad_(True)
        steps = timesteps_H + 1
        continues_H_B = continues.reshape(steps, -1)
        continues_H_B = torch.cat(
            [1.0 - start_is_terminated.to(h_HxB.dtype).unsqueeze(0), continues_H_B[1:]], dim=0
        )
        # One pass of the critic serves both RLlib's (the logits of its loss, and the values
        # of the lambda-returns): each optimizer differentiates its own loss with respect to
        # its own parameters only, so the critic's loss reaches no actor and the actor's loss
        # (through the values, Box actions) no critic weight.
        values_symlog, value_logits = critic(h_HxB, z_HxB, z_index=index_HxB)
        with torch.no_grad():
            values_symlog_ema, _ = critic(
                h_HxB.detach(), z_HxB.detach(), use_ema=True, z_index=index_HxB
            )
        out = {
            "h_states_t0_to_H_BxT": h_H_B,
            "z_states_prior_t0_to_H_BxT": z_H_B,
            "rewards_dreamed_t0_to_H_BxT": inverse_symlog(rewards_symlog).reshape(steps, -1),
            "continues_dreamed_t0_to_H_BxT": continues_H_B,
            "actions_dreamed_t0_to_H_BxT": torch.stack(a_list, dim=0),
            "actions_dreamed_dist_params_t0_to_H_BxT": torch.stack(parameter_list, dim=0),
            "values_dreamed_t0_to_H_BxT": inverse_symlog(values_symlog).reshape(steps, -1),
            "values_symlog_dreamed_logits_t0_to_HxBxT_wm_detached": value_logits,
            "v_symlog_dreamed_ema_t0_to_H_BxT": values_symlog_ema.reshape(steps, -1),
            "dream_loss_weights_t0_to_H_BxT": torch.cumprod(gamma * continues_H_B, dim=0) / gamma,
        }
        if actor.discrete:
            out["actions_ints_dreamed_t0_to_H_B"] = torch.argmax(
                out["actions_dreamed_t0_to_H_BxT"], -1
            )
        return out


#: The actor's return-percentile EMAs: NaN until the first update (RLlib's "not set yet").
PERCENTILE_EMAS = ("ema_value_target_pct5", "ema_value_target_pct95")


def unset_emas_as_zero(state: dict[str, Any]) -> dict[str, Any]:
    """`state` with the percentile EMAs that are still unset (NaN) read as 0.0, for the checks
    of finite weights (the state itself keeps them NaN)."""
    return {
        key: np.zeros_like(value)
        if key.rpartition(".")[2] in PERCENTILE_EMAS
        and isinstance(value, np.ndarray)
        and np.isnan(value).all()
        else value
        for key, value in state.items()
    }


def symlog_obs_for(observation_space: gym.Space, setting: Any) -> bool:
    """RLlib's `do_symlog_obs`: "auto" symlogs unless the observations are images."""
    is_image = len(cast(Any, observation_space).shape or ()) in (2, 3)
    return (not is_image) if setting == "auto" else bool(setting)


class DreamerV3TorchRLModule(TorchRLModule, InferenceOnlyAPI):
    """DreamerV3's module (see the module docstring)."""

    #: The EnvRunners hand each step's previous action in (`prev_actions`).
    uses_prev_actions = True
    #: Its acting forward draws z: the EnvRunners seed each forward from their own generator.
    draws_in_forward = True

    def setup(self) -> None:
        observation_space = self.observation_space
        action_space = self.action_space
        if isinstance(observation_space, gym.spaces.Discrete):
            # (the EnvRunners and the learner feed them one-hot)
            observation_space = gym.spaces.Box(0.0, 1.0, (int(observation_space.n),), np.float32)
        shape: tuple[int, ...] = tuple(cast(Any, observation_space).shape or ())
        image = is_image_space(observation_space)
        takes = (
            f"DreamerV3TorchRLModule: observation space {observation_space}: DreamerV3 "
            "takes vector observations (a 1-D Box; Discrete ones arrive one-hot) or "
            f"{IMAGE_SIZE}x{IMAGE_SIZE} images (a Box of shape ({IMAGE_SIZE}, {IMAGE_SIZE}, "
            "channels), RLlib's CNN encoder's input"
        )
        if not isinstance(observation_space, gym.spaces.Box):
            raise UnsupportedValue(takes, OBSERVATION_SPACES)
        if not (len(shape) == 1 or (len(shape) == 3 and shape[:2] == (IMAGE_SIZE, IMAGE_SIZE))):
            # RLlib 2.60's DreamerV3 raises a ValueError here too: not a capability it has.
            raise ValueError(
                f"{takes}. RLlib's refuses other shapes as well: resize Atari frames with "
                f"wrap_atari_for_new_api_stack(env, dim={IMAGE_SIZE}), and give a gray image "
                "a channel axis"
            )
        if image and shape[-1] not in (1, 3):
            raise UnsupportedValue(
                f"DreamerV3TorchRLModule: observation space {observation_space}: images have 1 "
                "(gray) or 3 (RGB) channels here, as RLlib's CNN decoder makes them",
                OBSERVATION_SPACES,
            )
        if not isinstance(action_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise ValueError(
                f"DreamerV3TorchRLModule: action space {action_space}: DreamerV3 acts in a "
                "Discrete or Box action space"
            )
        model_config = self.model_config if isinstance(self.model_config, dict) else {}
        model_size = model_config.get("model_size", "XS")
        sizes = sizes_of(model_size)
        h_plus_z = sizes.gru_units + sizes.z_categoricals * sizes.z_classes
        self.encoder: DreamerV3MLP | CNNAtari
        self.decoder: VectorDecoder | ConvTransposeAtari
        if image:
            gray = shape[-1] == 1
            self.encoder = CNNAtari(model_size=model_size, gray_scaled=gray)
            self.decoder = ConvTransposeAtari(
                input_size=h_plus_z, model_size=model_size, gray_scaled=gray
            )
        else:
            self.encoder = DreamerV3MLP(input_size=int(np.prod(shape)), model_size=model_size)
            self.decoder = VectorDecoder(
                input_size=h_plus_z, model_size=model_size, observation_size=int(shape[0])
            )
        self.world_model = WorldModel(
            model_size=model_size,
            action_space=action_space,
            encoder=self.encoder,
            decoder=self.decoder,
            symlog_obs=symlog_obs_for(observation_space, model_config.get("symlog_obs", "auto")),
            observation_shape=shape if image else None,
        )
        self.actor = ActorNetwork(
            input_size=h_plus_z, model_size=model_size, action_space=action_space
        )
        self.critic = CriticNetwork(input_size=h_plus_z, model_size=model_size)
        self.dreamer_model = DreamerModel(
            world_model=self.world_model, actor=self.actor, critic=self.critic
        )
        self.critic.init_ema()
        self.action_dim = action_dim(action_space)

    def use_rllib_draws(self, rllib_draws: bool = True) -> None:
        """Draw z states and dreamed actions as RLlib's module does (torch's
        `OneHotCategorical`, in RLlib's order, with its unused draws): the same draws as
        RLlib's for a torch seed, about 15 times slower per draw. Off by default: one uniform
        per categorical (`draw_one_hot`)."""
        for part in self.modules():
            if isinstance(part, (RepresentationLayer, ActorNetwork)):
                part.rllib_draws = rllib_draws

    def get_non_inference_attributes(self) -> list[str]:
        """The EnvRunners' copy holds the encoder (in the world model), the RSSM and the
        actor."""
        return [
            "encoder",
            "decoder",
            "world_model.decoder",
            "world_model.reward_predictor",
            "world_model.continue_predictor",
            "critic",
            "dreamer_model",
        ]

    def check_weights(
        self, weights: Any, where: str = "weights", *, own: dict[str, Any] | None = None
    ) -> None:
        """The TorchRLModule's check, the unset (NaN) percentile EMAs allowed."""
        if isinstance(weights, dict):
            weights = unset_emas_as_zero(weights)
        super().check_weights(weights, where, own=own)

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        """h_0 = tanh(initial_h), z_0 = the prior's mode given it, and `is_first` = 1 (where
        it is 1, the module starts from the initial state as it is when the step runs)."""
        with torch.no_grad():
            h, z = self.world_model.initial_state(1)
        return {"h": h[0].clone(), "z": z[0].clone(), IS_FIRST: torch.tensor(1.0)}

    # -- acting ----------------------------------------------------------------------------------
    def _previous_actions(self, batch: dict[str, Any], rows: int) -> torch.Tensor:
        """The previous actions (B, action_dim) (one-hot for Discrete): the batch's
        `prev_actions` (the EnvRunners'), else the state's `a` (RLlib's), else zeros."""
        previous = batch.get("prev_actions")
        if previous is None:
            state_a = batch[Columns.STATE_IN].get("a")
            if state_a is not None:
                return state_a.reshape(rows, -1).float()
            return torch.zeros(rows, self.action_dim)
        previous = previous.reshape(rows, -1)
        if self.actor.discrete:
            return F.one_hot(previous[:, 0].long(), self.action_dim).float()
        return previous.float()

    def _act(self, batch: dict[str, Any], explore: bool) -> dict[str, Any]:
        observations = batch[Columns.OBS]
        rows = observations.shape[0]
        state = batch[Columns.STATE_IN]
        is_first = batch.get(IS_FIRST, state.get(IS_FIRST))
        if is_first is None:
            is_first = torch.zeros(rows)
        h, z = self.world_model.observe_step(
            observations,
            state["h"].reshape(rows, -1).float(),
            state["z"].reshape((rows,) + tuple(state["z"].shape[-2:])).float(),
            self._previous_actions(batch, rows),
            is_first.reshape(rows),
        )
        parameters = self.actor.distribution_parameters(h, z)
        dist_inputs = self.actor.dist_inputs(parameters)
        # (B, [1,] ...): an image in its own shape or flat (the EnvRunners flatten it)
        image_shape = self.world_model.observation_shape
        if image_shape is not None and tuple(observations.shape[-len(image_shape) :]) == tuple(
            image_shape
        ):
            time_rank = observations.dim() > 1 + len(image_shape)
        else:
            time_rank = observations.dim() > 2
        return {
            Columns.ACTION_DIST_INPUTS: dist_inputs.unsqueeze(1) if time_rank else dist_inputs,
            Columns.STATE_OUT: {"h": h, "z": z, IS_FIRST: torch.zeros(rows)},
        }

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._act(batch, explore=False)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._act(batch, explore=True)

    # -- training --------------------------------------------------------------------------------
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The world model's training pass over the batch's (B, T) observations, actions
        (Discrete ones one-hot here) and `is_first` flags (RLlib's keys)."""
        actions = batch[Columns.ACTIONS]
        if self.actor.discrete and actions.dim() == 2:
            actions = F.one_hot(actions.long(), self.action_dim)
        return self.world_model.forward_train(batch[Columns.OBS], actions.float(), batch[IS_FIRST])


__all__ = [
    "ACTIONS_ONE_HOT",
    "ActorNetwork",
    "CriticNetwork",
    "DreamerModel",
    "DreamerV3TorchRLModule",
    "WorldModel",
]
