"""What the default numpy modules share: the model config (RLlib's `DefaultModelConfig`, its
checks and defaults), the spaces (`SpaceInfo`), the encoder and head MLPs, and
`FlatParameterModule`, the base of a module whose parameters live in one flat vector. The
algorithms' default modules are in their folders (PPO's `PolicyModule`, DQN's `QModule`).

A module runs inside every EnvRunner (inference only: `dist_inputs`, which the exploration turns
into actions) and in the learner (training passes and gradients). Weights travel as a dict of
named float32 arrays.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from trainer import capabilities
from trainer.core.action_layout import ActionLayout, is_composite_action_space
from trainer.core.distributions import (
    NumpyCategorical,
    NumpyDiagGaussian,
    NumpyMultiDistribution,
)
from trainer.core.initializers import Initializer, make_initializer
from trainer.core.nn import (
    ACTIVATIONS,
    MLP,
    activate_for_backward,
    activate_layer,
    backprop_activation,
    flatten,
    weights_are_set_later,
)
from trainer.core.obs_tree import float32_leaves, is_nested_space
from trainer.core.rl_module import RLModuleAPI
from trainer.core.torch_inputs import from_torch, is_traced, outside_the_trace, to_torch
from trainer.errors import UnsupportedCall, UnsupportedValue
from trainer.util.checks import is_int
from trainer.util.state_checks import StateError, require_float_array, require_map

#: `model_config` keys the numpy networks implement, with RLlib's defaults (`DefaultModelConfig`:
#: `vf_share_layers` True, one encoder for the policy and value heads).
#: RLlib's LSTM keys and defaults (`DefaultModelConfig`): an LSTM (`lstm_cell_size` units, one
#: layer) over the `fcnet_*` encoder, trained on sequences of up to `max_seq_len` steps.
LSTM_DEFAULTS: dict = {
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    "lstm_kernel_initializer": None,
    "lstm_kernel_initializer_kwargs": None,
    "lstm_bias_initializer": None,
    "lstm_bias_initializer_kwargs": None,
}

MODEL_DEFAULTS: dict = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "fcnet_kernel_initializer": None,
    "fcnet_kernel_initializer_kwargs": None,
    "fcnet_bias_initializer": None,
    "fcnet_bias_initializer_kwargs": None,
    # A LayerNorm after each encoder layer (before its activation), and after each hidden
    # layer of PPO's heads (RLlib's keys; the torch modules build them, see `LAYERNORM_KEYS`).
    "fcnet_use_layernorm": False,
    "head_fcnet_use_layernorm": False,
    # Hidden layers of the heads after the encoder (policy and value heads; DQN's advantage and
    # value streams), and the initializers of every head layer, the output layer included.
    "head_fcnet_hiddens": [],
    "head_fcnet_activation": "relu",
    "head_fcnet_kernel_initializer": None,
    "head_fcnet_kernel_initializer_kwargs": None,
    "head_fcnet_bias_initializer": None,
    "head_fcnet_bias_initializer_kwargs": None,
    # SAC's multi-stream Q encoder: the fusion layers after the observation and action
    # encoders (RLlib's keys and defaults; the other algorithms' networks do not read them).
    "fusionnet_hiddens": [256, 256],
    "fusionnet_activation": "tanh",
    "fusionnet_kernel_initializer": None,
    "fusionnet_kernel_initializer_kwargs": None,
    "fusionnet_bias_initializer": None,
    "fusionnet_bias_initializer_kwargs": None,
    "vf_share_layers": True,
    "free_log_std": False,
    # The convolutional encoder of image observations (RLlib's keys and defaults). Only the
    # torch modules build convolutions: the numpy modules refuse any other value
    # (`refuse_torch_only_keys`), when the module is built or the config validated.
    "conv_filters": None,
    "conv_activation": "relu",
    "conv_kernel_initializer": None,
    "conv_kernel_initializer_kwargs": None,
    "conv_bias_initializer": None,
    "conv_bias_initializer_kwargs": None,
    # The recurrent encoder (RLlib's `use_lstm`): the torch modules build it; the numpy models
    # refuse `use_lstm=True` (see `check_model_config(numpy=True)`).
    **LSTM_DEFAULTS,
}

#: RLlib 2.60's old-stack `MODEL_DEFAULTS` (ray.rllib.models.catalog), key for key: served at
#: RLlib's path by `trainer.compat.old_model_defaults`. A model config may hold its keys that
#: the new stack has no use for (`OLD_STACK_ONLY_KEYS`) at these values only.
OLD_STACK_MODEL_DEFAULTS: dict[str, Any] = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "fcnet_weights_initializer": None,
    "fcnet_weights_initializer_config": None,
    "fcnet_bias_initializer": None,
    "fcnet_bias_initializer_config": None,
    "conv_filters": None,
    "conv_activation": "relu",
    "conv_kernel_initializer": None,
    "conv_kernel_initializer_config": None,
    "conv_bias_initializer": None,
    "conv_bias_initializer_config": None,
    "conv_transpose_kernel_initializer": None,
    "conv_transpose_kernel_initializer_config": None,
    "conv_transpose_bias_initializer": None,
    "conv_transpose_bias_initializer_config": None,
    "post_fcnet_hiddens": [],
    "post_fcnet_activation": "relu",
    "post_fcnet_weights_initializer": None,
    "post_fcnet_weights_initializer_config": None,
    "post_fcnet_bias_initializer": None,
    "post_fcnet_bias_initializer_config": None,
    "free_log_std": False,
    "log_std_clip_param": 20.0,
    "no_final_linear": False,
    "vf_share_layers": True,
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    "lstm_weights_initializer": None,
    "lstm_weights_initializer_config": None,
    "lstm_bias_initializer": None,
    "lstm_bias_initializer_config": None,
    "_time_major": False,
    "use_attention": False,
    "attention_num_transformer_units": 1,
    "attention_dim": 64,
    "attention_num_heads": 1,
    "attention_head_dim": 32,
    "attention_memory_inference": 50,
    "attention_memory_training": 50,
    "attention_position_wise_mlp_dim": 32,
    "attention_init_gru_gate_bias": 2.0,
    "attention_use_n_prev_actions": 0,
    "attention_use_n_prev_rewards": 0,
    "framestack": True,
    "dim": 84,
    "grayscale": False,
    "zero_mean": True,
    "custom_model": None,
    "custom_model_config": {},
    "custom_action_dist": None,
    "custom_preprocessor": None,
    "encoder_latent_dim": None,
    "always_check_shapes": False,
    "lstm_use_prev_action_reward": -1,
    "_use_default_native_models": -1,
    "_disable_preprocessor_api": False,
    "_disable_action_flattening": False,
}

#: The `model_config` keys only the torch modules use (the numpy networks are MLPs).
TORCH_ONLY_KEYS: tuple[str, ...] = (
    "conv_filters",
    "conv_activation",
    "conv_kernel_initializer",
    "conv_kernel_initializer_kwargs",
    "conv_bias_initializer",
    "conv_bias_initializer_kwargs",
)

#: The old-stack keys (`OLD_STACK_MODEL_DEFAULTS`) no network here reads (RLlib's new stack
#: ignores them too): accepted at their old-stack defaults only, so none is silently dropped.
OLD_STACK_ONLY_KEYS: dict[str, Any] = {
    key: value for key, value in OLD_STACK_MODEL_DEFAULTS.items() if key not in MODEL_DEFAULTS
}
#: The old stack's head keys (`post_fcnet_*`), which RLlib 2.60's default modules take in a
#: model config and do not read (its DefaultModelConfig's docs still point at them): taken here
#: too, with a warning naming what sizes the heads (`head_fcnet_*`).
IGNORED_OLD_STACK_KEYS = frozenset(
    key for key in OLD_STACK_ONLY_KEYS if key.startswith("post_fcnet")
)
_warned_ignored_keys: set[str] = set()

#: The LayerNorm keys: the torch modules build the LayerNorms; the numpy networks have none and
#: refuse True (`refuse_torch_only_keys`).
LAYERNORM_KEYS: tuple[str, ...] = ("fcnet_use_layernorm", "head_fcnet_use_layernorm")

#: RLlib's id of the one module.
DEFAULT_MODULE_ID = "default_policy"
#: RLlib's keys in `EnvRunner.get_spaces()` for the env's batched and single spaces.
INPUT_ENV_SPACES = "__env__"
INPUT_ENV_SINGLE_SPACES = "__env_single__"
#: The module's key in an EnvRunner's state (RLlib's COMPONENT_RL_MODULE).
RL_MODULE_STATE = "rl_module"

_WHY_DEFAULT_ONLY = {
    "log_std_clip_param": "log-stds are clipped to [-20, 2] here",
}


@dataclass
class DefaultModelConfig:
    """RLlib's `DefaultModelConfig` (`ray.rllib.core.rl_module.default_model_config`): pass it as
    `rl_module(model_config=DefaultModelConfig(...))`. Its defaults are RLlib's, which a plain
    dict gets too (`MODEL_DEFAULTS`)."""

    fcnet_hiddens: list = field(default_factory=lambda: [256, 256])
    fcnet_activation: str = "tanh"
    fcnet_kernel_initializer: Any = None
    fcnet_kernel_initializer_kwargs: dict | None = None
    fcnet_bias_initializer: Any = None
    fcnet_bias_initializer_kwargs: dict | None = None
    fcnet_use_layernorm: bool = False
    conv_filters: Any = None
    conv_activation: str = "relu"
    conv_kernel_initializer: Any = None
    conv_kernel_initializer_kwargs: dict | None = None
    conv_bias_initializer: Any = None
    conv_bias_initializer_kwargs: dict | None = None
    head_fcnet_hiddens: list = field(default_factory=list)
    head_fcnet_activation: str = "relu"
    head_fcnet_kernel_initializer: Any = None
    head_fcnet_kernel_initializer_kwargs: dict | None = None
    head_fcnet_bias_initializer: Any = None
    head_fcnet_bias_initializer_kwargs: dict | None = None
    head_fcnet_use_layernorm: bool = False
    free_log_std: bool = False
    log_std_clip_param: float = 20.0
    fusionnet_hiddens: list = field(default_factory=lambda: [256, 256])
    fusionnet_activation: str = "tanh"
    fusionnet_kernel_initializer: Any = None
    fusionnet_kernel_initializer_kwargs: dict | None = None
    fusionnet_bias_initializer: Any = None
    fusionnet_bias_initializer_kwargs: dict | None = None
    vf_share_layers: bool = True
    use_lstm: bool = False
    max_seq_len: int = 20
    lstm_cell_size: int = 256
    lstm_use_prev_action: bool = False
    lstm_use_prev_reward: bool = False
    lstm_kernel_initializer: Any = None
    lstm_kernel_initializer_kwargs: dict | None = None
    lstm_bias_initializer: Any = None
    lstm_bias_initializer_kwargs: dict | None = None


#: RLlib's `DefaultModelConfig` keys for networks that do not exist here (convolutions),
#: accepted at RLlib's default values only: any other value would be silently ignored.
DEFAULT_ONLY_KEYS: dict = {
    key: value
    for key, value in dataclasses.asdict(DefaultModelConfig()).items()
    if key not in MODEL_DEFAULTS
}


#: The most weights the hidden layers of one network may hold (8 GiB as float32): a config
#: asking for more is a typo, not a network this machine can build.
MAX_HIDDEN_WEIGHTS = 2**31


def default_keys_of(model_config: dict) -> dict:
    """The keys of `model_config` that the default models read (the others are left to a
    user's own module or catalog, which RLlib lets read keys of their own)."""
    known = set(MODEL_DEFAULTS) | set(DEFAULT_ONLY_KEYS) | set(OLD_STACK_ONLY_KEYS)
    return {key: value for key, value in model_config.items() if key in known}


def check_model_config(
    model_config: dict, setting: str = "model_config", *, numpy: bool = False
) -> dict:
    """Validates a model config (a dict or a `DefaultModelConfig`) and returns the keys the
    networks use, merged over the defaults. `numpy`: for the numpy models, which have no
    recurrent networks (`use_lstm=True` is refused, naming `framework("torch")`)."""
    if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
        model_config = dataclasses.asdict(model_config)
    if not isinstance(model_config, dict):
        raise ValueError(
            f"{setting}={model_config!r}: must be a dict (or a DefaultModelConfig) "
            f"with keys from {sorted(MODEL_DEFAULTS)}"
        )
    unknown = sorted(
        set(model_config) - set(MODEL_DEFAULTS) - set(DEFAULT_ONLY_KEYS) - set(OLD_STACK_ONLY_KEYS)
    )
    if unknown:
        raise ValueError(
            f"{setting}: unknown key(s) {unknown}; the numpy models support {sorted(MODEL_DEFAULTS)}"
        )
    for key, default in OLD_STACK_ONLY_KEYS.items():
        if key in IGNORED_OLD_STACK_KEYS and model_config.get(key, default) != default:
            if key not in _warned_ignored_keys:
                _warned_ignored_keys.add(key)
                warnings.warn(
                    f"{setting}[{key!r}]={model_config[key]!r}: an old API stack key that the "
                    "new stack's default modules do not read (RLlib 2.60 ignores it too); the "
                    "policy and value heads are sized by "
                    f"{key.replace('post_fcnet', 'head_fcnet')!r}",
                    UserWarning,
                    stacklevel=2,
                )
            continue
        if key in model_config and key not in DEFAULT_ONLY_KEYS and model_config[key] != default:
            raise ValueError(
                f"{setting}[{key!r}]={model_config[key]!r}: an old API stack key that no network "
                f"of the new stack reads; only its MODEL_DEFAULTS value {default!r} is accepted "
                f"(remove the key, or use the new stack's keys {sorted(MODEL_DEFAULTS)})"
            )
    for key, default in DEFAULT_ONLY_KEYS.items():
        if key in model_config and model_config[key] != default:
            why = _WHY_DEFAULT_ONLY.get(key) or _WHY_DEFAULT_ONLY[key.split("_")[0]]
            message = (
                f"{setting}[{key!r}]={model_config[key]!r}: only RLlib's "
                f"default {default!r} is accepted: {why}"
            )
            if key.startswith(("conv", "use_lstm", "lstm", "max_seq_len")):
                # What RLlib builds for it is a torch network (the launcher reports it so).
                raise UnsupportedValue(message, capabilities.TORCH)
            raise ValueError(message)
    merged = {**MODEL_DEFAULTS, **{k: v for k, v in model_config.items() if k in MODEL_DEFAULTS}}
    for prefix in ("fcnet", "head_fcnet", "fusionnet"):
        hiddens = merged[f"{prefix}_hiddens"]
        if not (isinstance(hiddens, (list, tuple)) and all(is_int(h) and h > 0 for h in hiddens)):
            raise ValueError(
                f"{setting}['{prefix}_hiddens']={hiddens!r}: must be a list of "
                "positive ints (empty for no hidden layer)"
            )
        pairs = zip(hiddens[:-1], hiddens[1:], strict=True)
        weights = sum(a * b for a, b in pairs) + max(hiddens, default=0)
        if weights > MAX_HIDDEN_WEIGHTS:
            # Refused here, not as a MemoryError (or a hang while swapping) when built.
            raise ValueError(
                f"{setting}['{prefix}_hiddens']={hiddens!r}: the layers would hold at least "
                f"{weights:.3g} weights, more than 2**31 ({MAX_HIDDEN_WEIGHTS * 4 / 2**30:.0f} "
                "GiB as float32); use smaller layers"
            )
        merged[f"{prefix}_hiddens"] = list(hiddens)
        if merged[f"{prefix}_activation"] is None:  # RLlib: None means linear
            merged[f"{prefix}_activation"] = "linear"
        if merged[f"{prefix}_activation"] not in ACTIVATIONS:
            raise ValueError(
                f"{setting}['{prefix}_activation']="
                f"{merged[f'{prefix}_activation']!r}: allowed values are "
                f"{list(ACTIVATIONS)} or None"
            )
        layer_initializers(merged, prefix, setting)
    for flag in ("vf_share_layers", "free_log_std", *LAYERNORM_KEYS):
        if not isinstance(merged[flag], bool):
            raise ValueError(f"{setting}[{flag!r}]={merged[flag]!r}: must be True or False")
    _check_conv_keys(merged, setting)
    check_lstm_config(merged, setting, numpy=numpy)
    return merged


def _check_conv_keys(merged: dict, setting: str) -> None:
    """Validates the `conv_*` keys (RLlib's `conv_filters` format: a list of
    `[out_channels, kernel, stride]` or `[out_channels, kernel, stride, padding]`, kernel and
    stride an int or `[height, width]`, padding "same" or "valid")."""
    filters = merged["conv_filters"]
    if isinstance(filters, (list, tuple)) and not filters:
        # RLlib reads an empty stack as "not given": its preset for the image size.
        merged["conv_filters"] = filters = None
    if filters is not None:
        allowed = (
            "a list of [out_channels, kernel, stride] or [out_channels, kernel, stride, padding] "
            "(kernel and stride: a positive int or [height, width]; padding: 'same' or 'valid'), "
            "or None for RLlib's preset for the image size"
        )
        if not isinstance(filters, (list, tuple)):
            raise ValueError(f"{setting}['conv_filters']={filters!r}: must be {allowed}")
        for spec in filters:
            if not _is_conv_spec(spec):
                raise ValueError(
                    f"{setting}['conv_filters']: the entry {spec!r} is not valid: each must be "
                    f"{allowed}"
                )
        merged["conv_filters"] = [list(spec) for spec in filters]
    if merged["conv_activation"] is None:  # RLlib: None means linear
        merged["conv_activation"] = "linear"
    if merged["conv_activation"] not in ACTIVATIONS:
        raise ValueError(
            f"{setting}['conv_activation']={merged['conv_activation']!r}: allowed values are "
            f"{list(ACTIVATIONS)} or None"
        )
    layer_initializers(merged, "conv", setting)


def _is_conv_spec(spec: Any) -> bool:
    def size(value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return len(value) == 2 and all(is_int(v) and v > 0 for v in value)
        return is_int(value) and value > 0

    return (
        isinstance(spec, (list, tuple))
        and len(spec) in (3, 4)
        and is_int(spec[0])
        and spec[0] > 0
        and size(spec[1])
        and size(spec[2])
        and (len(spec) == 3 or spec[3] in ("same", "valid"))
    )


def torch_only_request(model_config: dict) -> str | None:
    """What in a (merged) model config only the torch modules honour, as `"key=value"`:
    `use_lstm=True`, or a `conv_*` key off RLlib's default; None when the numpy networks can
    build it. A config whose framework was not chosen runs such a model on torch, as RLlib
    (whose default framework is torch) does."""
    if model_config.get("use_lstm") is True:
        return "use_lstm=True"
    for key in LAYERNORM_KEYS:
        if model_config.get(key) is True:
            return f"{key}=True"
    for key in TORCH_ONLY_KEYS:
        if key in model_config and model_config[key] != MODEL_DEFAULTS[key]:
            return f"{key}={model_config[key]!r}"
    return None


def refuse_torch_only_keys(model_config: dict, setting: str = "model_config") -> None:
    """Raises ValueError (with `capability` TORCH) for a `conv_*` key other than RLlib's
    default, or a LayerNorm key set: the numpy networks cannot convolve nor normalize layers,
    only `framework("torch")`'s modules can."""
    for key in LAYERNORM_KEYS:
        if model_config.get(key) is True:
            raise UnsupportedValue(
                f"{setting}[{key!r}]=True: LayerNorm layers are built by the torch modules "
                "only; use config.framework('torch') (the numpy networks' layers have no "
                "normalization)",
                capabilities.TORCH,
            )
    for key in TORCH_ONLY_KEYS:
        if key in model_config and model_config[key] != MODEL_DEFAULTS[key]:
            raise UnsupportedValue(
                f"{setting}[{key!r}]={model_config[key]!r}: convolutional encoders are built by "
                "the torch modules only; use config.framework('torch') (the numpy networks are "
                "MLPs: leave the conv_* keys at RLlib's defaults and flatten image observations, "
                "e.g. with gymnasium.wrappers.FlattenObservation)",
                capabilities.TORCH,
            )


def check_lstm_config(merged: dict, setting: str, *, numpy: bool) -> None:
    """Validates the LSTM keys of a merged model config. RLlib reads them only with
    `use_lstm=True` (its rock-paper-scissors examples set `max_seq_len=15` with no LSTM), so
    without it only their types are checked."""
    for flag in ("use_lstm", "lstm_use_prev_action", "lstm_use_prev_reward"):
        if not isinstance(merged[flag], bool):
            raise ValueError(f"{setting}[{flag!r}]={merged[flag]!r}: must be True or False")
    for size in ("max_seq_len", "lstm_cell_size"):
        if not (is_int(merged[size]) and merged[size] >= 1):
            raise ValueError(f"{setting}[{size!r}]={merged[size]!r}: must be an int >= 1")
    for part in ("kernel", "bias"):
        kwargs = merged[f"lstm_{part}_initializer_kwargs"]
        if kwargs is not None and not isinstance(kwargs, dict):
            raise ValueError(
                f"{setting}['lstm_{part}_initializer_kwargs']={kwargs!r}: must be a dict or None"
            )
    if merged["use_lstm"]:
        # The LSTM's initializers are torch.nn.init's (RLlib's): checked as the MLP's are.
        make_initializer(
            merged["lstm_kernel_initializer"],
            merged["lstm_kernel_initializer_kwargs"],
            where=setting,
            key="lstm_kernel_initializer",
            for_bias=False,
        )
        make_initializer(
            merged["lstm_bias_initializer"],
            merged["lstm_bias_initializer_kwargs"],
            where=setting,
            key="lstm_bias_initializer",
            for_bias=True,
        )
    if numpy and merged["use_lstm"]:
        raise UnsupportedValue(
            f"{setting}['use_lstm']=True: the numpy models have no recurrent networks; "
            'RLlib\'s LSTM encoder is built by the torch modules: use .framework("torch") '
            "(or stack frames with the FrameStackingEnvToModule connector)",
            capabilities.TORCH,
        )


def layer_initializers(
    model_config: dict, prefix: str, setting: str = "model_config"
) -> tuple[Initializer | None, ...]:
    """The `(kernel, bias)` initializers `prefix` ("fcnet" or "head_fcnet") selects; None for the
    default of each."""
    return tuple(
        make_initializer(
            model_config[f"{prefix}_{part}_initializer"],
            model_config[f"{prefix}_{part}_initializer_kwargs"],
            where=setting,
            key=f"{prefix}_{part}_initializer",
            for_bias=part == "bias",
        )
        for part in ("kernel", "bias")
    )


def encoder_mlp(input_dim: int, model_config: dict, rng: np.random.Generator) -> MLP:
    """The encoder: `fcnet_hiddens` layers of `fcnet_activation`, its output activated too (see
    `activated`), each layer initialized per `fcnet_*_initializer`."""
    hiddens = model_config["fcnet_hiddens"]
    return MLP(
        [input_dim] + hiddens,
        model_config["fcnet_activation"],
        rng,
        initializers=[layer_initializers(model_config, "fcnet")] * len(hiddens),
    )


def head_mlp(
    input_dim: int,
    output_dim: int,
    model_config: dict,
    rng: np.random.Generator,
    output_gain: float = 1.0,
) -> MLP:
    """A head after the encoder: `head_fcnet_hiddens` layers of `head_fcnet_activation`, then a
    linear output, every layer initialized per `head_fcnet_*_initializer`."""
    hiddens = model_config["head_fcnet_hiddens"]
    return MLP(
        [input_dim] + hiddens + [output_dim],
        model_config["head_fcnet_activation"],
        rng,
        output_gain=output_gain,
        initializers=[layer_initializers(model_config, "head_fcnet")] * (len(hiddens) + 1),
    )


def stack_layers(model_config: dict, *, encoder_layers: int, head_layers: int) -> dict:
    """MLP arguments for `encoder_layers` encoder layers (fcnet_*) followed by `head_layers` head
    layers (head_fcnet_*, the output layer included): activations after each hidden layer and
    one initializer pair per layer."""
    num_hidden = encoder_layers + head_layers - 1
    activations = (
        [model_config["fcnet_activation"]] * encoder_layers
        + [model_config["head_fcnet_activation"]] * head_layers
    )[:num_hidden]
    initializers = [layer_initializers(model_config, "fcnet")] * encoder_layers + [
        layer_initializers(model_config, "head_fcnet")
    ] * head_layers
    return {"activation": activations, "initializers": initializers}


@dataclass(frozen=True)
class SpaceInfo:
    """What the networks need to know about the env's spaces."""

    obs_dim: int
    obs_discrete_n: int | None  # Discrete observations are one-hot encoded
    action_discrete_n: int | None
    action_dim: int  # 1 for Discrete
    action_low: np.ndarray | None
    action_high: np.ndarray | None
    #: A Box observation's own shape (None for Discrete).
    obs_shape: tuple[int, ...] | None = None
    #: Whether `preprocess` keeps that shape, `(B, *obs_shape)`, instead of flattening it to
    #: rows of `obs_dim`: for torch modules, whose convolutions read images as the env emits
    #: them (`keeping_obs_shape()`); the numpy networks take rows.
    keep_obs_shape: bool = False
    #: A Dict / Tuple observation space (None for Box and Discrete): observations then stay
    #: nested, batched leaf by leaf (`trainer.core.obs_tree`), as torch modules take them
    #: (`from_spaces(..., nested_obs=True)`); `obs_dim` is its flattened size.
    nested_obs_space: gym.Space | None = None
    #: Images (3-D Boxes) of uint8 that `preprocess` keeps as bytes (torch modules:
    #: `from_spaces(..., nested_obs=True)`; they scale them themselves,
    #: `trainer.torch_rl.networks.ObservationEncoding`); the numpy networks get floats.
    obs_bytes: bool = False
    #: A composite action space (Tuple, Dict, MultiDiscrete; None otherwise): the module acts
    #: in flat rows of `action_dim` columns through a multi-distribution
    #: (`trainer.core.action_layout`), and the env gets nested actions.
    composite_action_space: gym.Space | None = None

    @functools.cached_property
    def action_layout(self) -> ActionLayout | None:
        """The composite action space's layout (None for Discrete and Box)."""
        space = self.composite_action_space
        return None if space is None else ActionLayout(space)

    @classmethod
    def from_spaces(
        cls, observation_space: gym.Space, action_space: gym.Space, *, nested_obs: bool = False
    ) -> SpaceInfo:
        """The spaces' record. Dict and Tuple observation spaces need `nested_obs` (torch
        modules, which get `batch["obs"]` as a dict / tuple of batched tensors); the numpy
        networks take Box and Discrete observations only."""
        obs_shape: tuple[int, ...] | None = None
        nested_space: gym.Space | None = None
        if isinstance(observation_space, gym.spaces.Box):
            obs_dim, obs_n = int(np.prod(observation_space.shape)), None
            obs_shape = tuple(int(d) for d in observation_space.shape)
        elif isinstance(observation_space, gym.spaces.Discrete):
            obs_dim, obs_n = int(observation_space.n), int(observation_space.n)
        elif nested_obs and is_nested_space(observation_space):
            obs_dim, obs_n = int(gym.spaces.flatdim(observation_space)), None
            nested_space = observation_space
        elif is_nested_space(observation_space):
            raise UnsupportedValue(
                f"observation space {observation_space} is not supported by the numpy "
                "models, which take Box and Discrete observations: flatten it with the "
                "env-to-module connector FlattenObservations (env_runners("
                "env_to_module_connector=lambda env, spaces, device: FlattenObservations())), "
                "or train a torch module (framework('torch') with an RLModuleSpec whose "
                "TorchRLModule reads the dict / tuple batch['obs'])",
                capabilities.TORCH,
            )
        else:
            raise UnsupportedValue(
                f"observation space {observation_space} is not supported: Box, Discrete, and "
                "with torch modules Dict and Tuple observations are (flatten other spaces "
                "with a gymnasium wrapper)",
                capabilities.OBSERVATION_SPACES,
            )
        info = cls._from_spaces(
            observation_space, action_space, obs_dim, obs_n, obs_shape, nested_space
        )
        if (
            nested_obs
            and isinstance(observation_space, gym.spaces.Box)
            and len(observation_space.shape) == 3
            and observation_space.dtype == np.uint8
        ):
            return dataclasses.replace(info, obs_bytes=True)
        return info

    @classmethod
    def _from_spaces(
        cls,
        observation_space: gym.Space,
        action_space: gym.Space,
        obs_dim: int,
        obs_n: int | None,
        obs_shape: tuple[int, ...] | None,
        nested_space: gym.Space | None,
    ) -> SpaceInfo:
        if is_composite_action_space(action_space):
            layout = ActionLayout(action_space)  # (raises for leaves it cannot act in)
            return cls(
                obs_dim,
                obs_n,
                None,
                layout.width,
                None,
                None,
                obs_shape,
                nested_obs_space=nested_space,
                composite_action_space=action_space,
            )
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(
                obs_dim,
                obs_n,
                int(action_space.n),
                1,
                None,
                None,
                obs_shape,
                nested_obs_space=nested_space,
            )
        if isinstance(action_space, gym.spaces.Box):
            return cls(
                obs_dim,
                obs_n,
                None,
                int(np.prod(action_space.shape)),
                action_space.low.astype(np.float32).ravel(),
                action_space.high.astype(np.float32).ravel(),
                obs_shape,
                nested_obs_space=nested_space,
            )
        raise UnsupportedValue(
            f"action space {action_space} is not supported: Discrete, Box, MultiDiscrete, "
            "and Tuple and Dict of those are",
            capabilities.ACTION_SPACES,
        )

    def require_flat_obs(self, what: str) -> None:
        """Raises ValueError if the observations are nested (a Dict / Tuple space): `what`
        (a numpy network) takes Box and Discrete observations only."""
        if self.nested_obs_space is not None:
            raise UnsupportedValue(
                f"{what}: observation space {self.nested_obs_space} is not supported by the "
                "numpy models, which take Box and Discrete observations: flatten it with the "
                "env-to-module connector FlattenObservations, or train a torch module "
                "(framework('torch'))",
                capabilities.TORCH,
            )

    def keeping_obs_shape(self) -> SpaceInfo:
        """These spaces with `preprocess` (and `observation_space`) keeping a Box
        observation's shape."""
        return dataclasses.replace(self, keep_obs_shape=True)

    def observation_space(self) -> gym.Space:
        """The module's observation space, rebuilt from what is recorded here (bounds are not
        recorded: a Box is unbounded; flat unless `keep_obs_shape`)."""
        if self.nested_obs_space is not None:
            return self.nested_obs_space
        if self.obs_discrete_n is not None:
            return gym.spaces.Discrete(self.obs_discrete_n)
        shape = self.obs_shape if self.keep_obs_shape and self.obs_shape else (self.obs_dim,)
        return gym.spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)

    def action_space(self) -> gym.Space:
        """The env's action space, rebuilt from what is recorded here."""
        if self.composite_action_space is not None:
            return self.composite_action_space
        if self.action_discrete_n is not None:
            return gym.spaces.Discrete(self.action_discrete_n)
        if self.action_low is None or self.action_high is None:  # recorded for every Box
            raise ValueError("SpaceInfo: a Box action space without recorded bounds")
        return gym.spaces.Box(self.action_low, self.action_high, dtype=np.float32)

    def preprocess(self, observations: Any) -> Any:
        """A batch of raw observations as a float32 matrix (one-hot for Discrete), or with
        `keep_obs_shape` a float32 batch of the Box's shape, `(B, *obs_shape)`; a nested
        (Dict / Tuple) batch stays nested, its float leaves as float32."""
        if (
            type(observations) is np.ndarray
            and observations.dtype == np.float32
            and observations.ndim == 2
            and observations.shape[1] == self.obs_dim
            and not (self.keep_obs_shape and self.obs_shape and len(self.obs_shape) > 1)
        ):
            return observations  # already one (a Box env's batch): the sampling hot path
        if self.nested_obs_space is not None:  # a dict / tuple of batched leaves, kept so
            return float32_leaves(observations)
        obs = np.asarray(observations)
        if self.obs_discrete_n is not None:
            return np.eye(self.obs_discrete_n, dtype=np.float32)[obs.astype(np.int64).ravel()]
        if self.keep_obs_shape and self.obs_shape is not None:
            shape = (obs.shape[0], *self.obs_shape)
            if self.obs_bytes and obs.dtype == np.uint8:
                return obs.reshape(shape)
            return obs.reshape(shape).astype(np.float32, copy=False)
        if self.obs_bytes and obs.dtype == np.uint8:
            return obs.reshape(obs.shape[0], self.obs_dim)
        return obs.reshape(obs.shape[0], self.obs_dim).astype(np.float32, copy=False)


def mlp_names(numpy_net: str, torch_linears: list[str]) -> dict[str, str]:
    """{numpy parameter name: torch parameter name} for the numpy MLP `numpy_net` whose
    layers are the torch Linear layers `torch_linears` (their dotted names) in order."""
    return {
        f"{numpy_net}.{index}.{suffix}": f"{torch_linear}.{suffix}"
        for index, torch_linear in enumerate(torch_linears)
        for suffix in ("weight", "bias")
    }


class StateConversionError(ValueError):
    """A numpy module's state cannot become a torch module's: the message says why."""


class FlatParameterModule(RLModuleAPI):
    """Networks whose parameters all live in one flat float32 vector (`flat_params`) that the
    layers view, so the optimiser updates everything with a few vectorised operations.

    It answers RLlib's RLModule questions (`RLModuleAPI`): its state is its weights, it is
    never stateful, inference-only or learner-only, and `RLModuleSpec(module_class=...)`
    builds it (`from_rl_module_spec`).

    Subclasses build their MLPs, list them in `_named_nets()` (and any loose parameter arrays in
    `_loose_parameters()`, each named as the attribute that holds it), then call
    `_flatten_parameters()`.

    Gradients have a flat buffer of their own in the same layout (`gradient_buffer()`): the
    backward passes write each parameter's gradient into its view of it, so the optimiser
    reads one vector with no gathering.
    """

    def __getitem__(self, module_id: Any) -> FlatParameterModule:
        """`learner.module[module_id]` (RLlib's learners hold a MultiRLModule indexed by module
        id): a learner's module is one module, this one."""
        if not isinstance(module_id, (str, int)):
            raise TypeError(
                f"{type(self).__name__}[{module_id!r}]: index a learner's module by module id"
            )
        return self

    @classmethod
    def state_for_torch_module(
        cls, state: dict, model_config: dict, module: Any, where: str
    ) -> dict:
        """This module's checkpointed `state` (built with `model_config`) as the torch module
        `module` takes it, when an algorithm trained on numpy continues on torch. Here the
        state as it is; a default module whose torch counterpart has the same networks
        converts it (PPO's), raising `StateConversionError` naming what differs."""
        return state

    #: The spaces the networks are built for (set by every subclass).
    spaces: SpaceInfo

    if TYPE_CHECKING:  # defined by every subclass

        def dist_inputs(self, obs: np.ndarray) -> np.ndarray: ...

    #: RLlib's flags: the same module samples and learns here.
    inference_only = False
    learner_only = False
    model_config: dict

    def _named_nets(self) -> list[tuple[str, MLP | None]]:
        raise NotImplementedError

    # -- RLlib's RLModule API ------------------------------------------------------------------
    @classmethod
    def from_rl_module_spec(cls, spec: Any, seed: int | None = None) -> FlatParameterModule:
        """The module an `RLModuleSpec` with this class describes (its spaces and model
        config; randomly initialised, from `seed` if given)."""
        raise NotImplementedError

    def _remember_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Keeps the spaces a spec gave (the ones `spaces` records lose a Box's bounds)."""
        self._given_spaces = (observation_space, action_space)

    @property
    def observation_space(self) -> gym.Space:
        given = self.__dict__.get("_given_spaces")
        return given[0] if given is not None else self.spaces.observation_space()

    @property
    def action_space(self) -> gym.Space:
        given = self.__dict__.get("_given_spaces")
        return given[1] if given is not None else self.spaces.action_space()

    def get_state(
        self,
        components: Any = None,
        *,
        not_components: Any = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The weights (`get_weights()`: parameter name -> array)."""
        return self.get_weights()

    def set_state(self, state: dict[str, Any]) -> None:
        """Sets the weights from `get_state()`'s dict."""
        self.set_weights(state)

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "inference_only": False,
            "learner_only": False,
            "model_config": dict(self.model_config),
            "catalog_class": None,
        }

    def _loose_parameters(self) -> list[tuple[str, np.ndarray]]:
        return []

    def _flatten_parameters(self) -> None:
        params = self.parameters()
        if weights_are_set_later():
            # Every value is overwritten before first use: one zero buffer, whose pages are
            # first touched when the weights arrive (no copy of the layers' zeros).
            self.flat_params = np.zeros(sum(param.size for param in params), dtype=np.float32)
        else:
            self.flat_params = flatten(params).astype(np.float32, copy=False)
        offset = 0
        views = []
        for param in params:
            views.append(self.flat_params[offset : offset + param.size].reshape(param.shape))
            offset += param.size
        # Make the layers use the views (in `parameters()` order) as their parameters.
        for _, net in self._named_nets():
            if net is not None:
                net.params[:] = views[: len(net.params)]
                del views[: len(net.params)]
        for (name, _), view in zip(self._loose_parameters(), views, strict=True):
            setattr(self, name, view)

    def gradient_buffer(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The flat gradient buffer and its per-parameter views (in `parameters()` order), of
        the parameters' dtype; made on first use, and again if that dtype changed."""
        flat, views, _ = self._gradient_views()
        return flat, views

    def _gradient_views(self) -> tuple[np.ndarray, list[np.ndarray], dict[str, Any]]:
        """(flat buffer, per-parameter views, the views by net: each net's slice under its
        attribute name, loose parameters' under their own names), cached per dtype."""
        dtype = next(net.params[0].dtype for _, net in self._named_nets() if net is not None)
        cached = getattr(self, "_gradients", None)
        if cached is not None and cached[0].dtype == dtype:
            return cached
        params = self.parameters()
        flat = np.zeros(sum(p.size for p in params), dtype=dtype)
        views, offset = [], 0
        for param in params:
            views.append(flat[offset : offset + param.size].reshape(param.shape))
            offset += param.size
        by_net, rest = {}, list(views)
        for name, net in self._named_nets():
            if net is not None:
                by_net[name] = rest[: len(net.params)]
                del rest[: len(net.params)]
        for (name, _), view in zip(self._loose_parameters(), rest, strict=True):
            by_net[name] = [view]
        self._gradients = (flat, views, by_net)
        return self._gradients

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
        `{"action_dist_inputs": ...}` (logits, means and log-stds, or Q-values).

        Given torch tensors (as RLlib's default module, a torch one, is called), it answers
        with a torch tensor: scripts written for that module (`.detach().cpu().numpy()` on the
        output) run as written. The computation is numpy's either way, but under a torch trace
        (`torch.onnx.export` of a wrapper that calls this module, as RLlib's inference example
        does): its tensors hold no numbers, and the trace records the torch twin's pass
        (`traced_twin`)."""
        if is_traced(batch["obs"]):
            return self.traced_twin().forward_inference(batch)
        obs, torch = from_torch(batch["obs"])
        return {
            "action_dist_inputs": to_torch(self.dist_inputs(self.spaces.preprocess(obs)), torch)
        }

    forward_exploration = forward_inference

    #: "module:function" that returns RLlib's default torch module of the same networks with
    #: this module's weights, whose `forward_inference` answers as this one's (what
    #: `traced_twin` builds); empty: a torch trace is refused. Read from the module's own
    #: class only: a subclass may compute otherwise, and declares its own twin or has none.
    torch_twin = ""

    def traced_twin(self) -> Any:
        """The torch module a torch trace of this module runs: RLlib's default torch module of
        the same networks, built with this module's current weights (they become the traced
        graph's constants)."""
        twin = vars(type(self)).get("torch_twin", "")
        if not twin:
            raise UnsupportedCall(
                f"{type(self).__name__}.forward_inference under a torch trace (torch.export, "
                "torch.onnx.export, torch.compile): this numpy module has no torch twin; "
                "build the module with framework('torch')",
                capability=capabilities.TORCH,
            )
        module, _, function = twin.partition(":")
        with outside_the_trace():
            return getattr(importlib.import_module(module), function)(self)

    def get_inference_action_dist_cls(self) -> type:
        """RLlib's question, answered with a numpy distribution: NumpyCategorical over the
        logits (or Q-values) of Discrete actions, NumpyDiagGaussian for Box actions, a
        NumpyMultiDistribution for a composite (Tuple, Dict, MultiDiscrete) action space."""
        layout = self.spaces.action_layout
        if layout is not None:
            return NumpyMultiDistribution.get_partial_dist_cls(layout=layout)
        return NumpyCategorical if self.spaces.action_discrete_n is not None else NumpyDiagGaussian

    def get_exploration_action_dist_cls(self) -> type:
        return self.get_inference_action_dist_cls()

    def get_train_action_dist_cls(self) -> type:
        return self.get_inference_action_dist_cls()

    def get_weights(self) -> dict[str, np.ndarray]:
        return {n: p.copy() for n, p in zip(self.parameter_names(), self.parameters(), strict=True)}

    def check_weights(self, weights: Any, where: str = "weights") -> None:
        """Raises `StateError` unless `weights` holds exactly this module's parameters, each a
        finite float array of its shape."""
        names = self.parameter_names()
        require_map(weights, where, names)
        extra = sorted(set(weights) - set(names))
        if extra:
            raise StateError(where, f"has parameters this module lacks: {extra[:4]}")
        for name, param in zip(names, self.parameters(), strict=True):
            require_float_array(weights[name], f"{where}[{name!r}]", param.shape)

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.check_weights(weights)
        for name, param in zip(self.parameter_names(), self.parameters(), strict=True):
            param[...] = weights[name]

    def to_env_actions(self, actions: np.ndarray, *, normalize: bool, clip: bool) -> np.ndarray:
        """Module actions as the env takes them (see `env_actions`)."""
        return env_actions(self.spaces, actions, normalize=normalize, clip=clip)


def env_actions(spaces: SpaceInfo, actions: np.ndarray, *, normalize: bool, clip: bool) -> Any:
    """A module's actions as the env takes them. For Box spaces with `normalize`, the module
    acts in [-1, 1] and the action is mapped onto the bounds; with `clip`, clipped to them."""
    layout = spaces.action_layout
    if layout is not None:  # flat rows -> nested actions, batched leaf by leaf
        return layout.unflatten(actions, normalize=normalize, clip=clip)
    low, high = spaces.action_low, spaces.action_high
    if spaces.action_discrete_n is not None or low is None or high is None:
        return actions  # Discrete (only Box spaces record bounds)
    bounded = np.all(np.isfinite(low)) and np.all(np.isfinite(high))
    if normalize and bounded:
        return low + (np.clip(actions, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
    if clip:
        return np.clip(actions, low, high)
    return actions


# An encoder is an MLP whose output layer is followed by the activation too.
def activated(mlp: MLP, x: np.ndarray) -> np.ndarray:
    return activate_layer(mlp.activation, mlp.forward(x))


def activated_train(mlp: MLP, x: np.ndarray) -> tuple[np.ndarray, tuple]:
    pre, cache = mlp.forward_train(x)
    out, kept_pre = activate_for_backward(mlp.activation, pre)
    return out, (cache, kept_pre, out)


def activated_backward(
    mlp: MLP, cache: tuple, d_out: np.ndarray, grads: list[np.ndarray] | None = None
) -> list[np.ndarray]:
    """The encoder's parameter gradients (into `grads` when given); `d_out` is overwritten."""
    inner_cache, pre, out = cache
    grads, _ = mlp.backward(
        inner_cache, backprop_activation(mlp.activation, d_out, pre, out), grads, input_grad=False
    )
    return grads
