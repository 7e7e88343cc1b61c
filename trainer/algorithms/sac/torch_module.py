"""SAC's default torch module (RLlib's `DefaultSACTorchRLModule`): a squashed-Gaussian (Box) or
categorical (Discrete) policy and one or two soft Q-functions built from `model_config`, with
the target Q-functions SAC's learner bootstraps from.

The layout is RLlib's SACCatalog's and the numpy `SACModule`'s for the same model config:

    [obs] -> pi_encoder -> pi -> action_dist_inputs    ([mean, log_std] for Box actions, the
                                                         log-std clamped to [-5, 2] by the
                                                         distribution; logits for Discrete)
    Box actions:      {obs, actions} -> qf_encoder -> qf -> Q(s, a)
    Discrete actions: obs -> qf_encoder -> qf -> Q(s, .)

- `pi_encoder`: `fcnet_hiddens` layers of `fcnet_activation`, the last one activated too (an
  image observation, a 3-D Box, gets RLlib's CNN encoder); `pi`: `head_fcnet_hiddens` layers
  of `head_fcnet_activation` and a linear output (no log-std clipping in the head: the
  squashed Gaussian clamps).
- `qf_encoder` for Box actions: RLlib's multi-stream encoder (`TorchMultiStreamEncoder`):
  `base_encoders["obs"]` (the `fcnet_*` encoder) and `base_encoders["actions"]`
  (`fcnet_hiddens[:-1]` layers, then one to the latent size `fcnet_hiddens[-1]`, all
  activated), their outputs concatenated actions first (RLlib's sorted stream names) into E;
  `fusion_layers` (`fusionnet_hiddens` of `fusionnet_activation`, each after the first fed
  `[h, E]`) and `output_layer` (fed `[h, E]`, or E without fusion layers; activated) to the
  latent size. For Discrete actions the `fcnet_*` encoder. `qf`: the head layers and one
  output (Box) or one per action (Discrete).
- `twin_q` (the model config key SACConfig adds, RLlib's): a second critic,
  `qf_twin_encoder` / `qf_twin`.
- `target_qf_encoder`, `target_qf` (and `target_qf_twin_encoder`, `target_qf_twin`): frozen
  copies the learner moves towards the critics (`get_target_network_pairs`). An
  inference-only copy (the EnvRunners') holds the policy only.

Weights start as the numpy modules' layers (orthogonal, zero biases) unless the
`*_initializer` keys name others; with a seed (`build_torch_module(..., seed=)`) this class
starts from the numpy `SACModule`'s weights for that seed (`start_as_numpy_module`), so a
seeded run starts from the same weights on either framework.

Where this module follows the project rather than RLlib's letter: `compute_q_values` and
`forward_target` return `{"qf_preds": ...}` (the `QNetAPI` of this project's modules, numpy
and torch); the Discrete log-probabilities are `log_softmax(logits)` (RLlib's
`softmax(logits).log()` is -inf, and the policy loss NaN, where a probability underflows);
`fcnet_hiddens=[]` is refused (as by the numpy module: it leaves SAC's critics without a
latent size); `free_log_std=True` is refused (RLlib's catalog raises too: the squashed
Gaussian is not a diagonal Gaussian).

The EnvRunners act through `TorchModuleView` with the numpy module's distributions
(`numpy_action_dists`): `SquashedGaussian` (tanh of a Gaussian draw; `explore=False`: tanh of
the mean) and `Categorical`, drawn with the runner's seeded numpy generator, and compute the
policy's outputs in numpy (`trainer.algorithms.sac.numpy_inference.NumpySACInference`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

# (RLlib's output keys, `ray.rllib.algorithms.sac.sac_learner`'s: `loss.py`'s)
from trainer.algorithms.sac.loss import (
    ACTION_DIST_INPUTS_NEXT,
    ACTION_LOG_PROBS,
    ACTION_LOG_PROBS_NEXT,
    ACTION_PROBS,
    ACTION_PROBS_NEXT,
    LOGP_NEXT_RESAMPLED,
    LOGP_RESAMPLED,
    Q_CURR,
    QF_PREDS,
    QF_TARGET_NEXT,
    QF_TWIN_PREDS,
)
from trainer.algorithms.sac.numpy_inference import NumpySACInference
from trainer.algorithms.sac.sac_module import SACModule, SquashedGaussian
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI
from trainer.core.models import SpaceInfo, check_model_config, mlp_names
from trainer.core.nn import Categorical
from trainer.errors import UnsupportedValue
from trainer.torch_rl.distributions import TorchCategorical, TorchSquashedGaussian
from trainer.torch_rl.networks import (  # (the activations and gains of TorchMLP's layers)
    _RELU_LIKE,
    TORCH_ACTIVATIONS,
    LayerInit,
    MLPEncoder,
    MLPHead,
    ObservationEncoding,
    encoder_factory,
)
from trainer.torch_rl.numpy_twin import linear_names
from trainer.torch_rl.rl_module import TorchRLModule

#: The key SACConfig adds to the module's model config (`_model_config_auto_includes`).
SAC_MODEL_KEYS: dict[str, Any] = {"twin_q": True}

#: The streams of the Box-action Q encoder, in RLlib's (sorted) order: their features are
#: concatenated so.
STREAMS = ("actions", "obs")


def _activation_layer(name: str) -> nn.Module:
    """The torch activation layer RLlib's activation `name` selects (`TorchMLP`'s;
    nn.Identity for "linear")."""
    layer = TORCH_ACTIVATIONS[name]
    return layer() if layer is not None else nn.Identity()


class MultiStreamEncoder(nn.Module):
    """RLlib's `TorchMultiStreamEncoder` as SAC's catalog builds it for Box actions: each
    stream (`base_encoders[name]`, an encoder with an `output_dim`) encodes its input, the
    features are concatenated (streams in sorted order) into E, then `h = act(W0 E + b0)`,
    each further fusion layer `h = act(Wi [h, E] + bi)`, and the output layer
    `act(W [h, E] + b)` (E alone without fusion layers). `forward({stream: tensor})`."""

    def __init__(
        self,
        base_encoders: dict[str, nn.Module],
        hiddens: list[int],
        output_dim: int,
        activation: str,
        init: LayerInit,
    ) -> None:
        super().__init__()
        self.base_encoders = nn.ModuleDict(dict(sorted(base_encoders.items())))
        self.embed_dim = sum(int(encoder.output_dim) for encoder in base_encoders.values())
        gain = math.sqrt(2.0) if activation in _RELU_LIKE else 1.0
        layers = []
        previous = 0
        for i, size in enumerate(hiddens):
            layer = nn.Linear(self.embed_dim if i == 0 else previous + self.embed_dim, size)
            init.apply(layer, gain)
            layers.append(layer)
            previous = size
        self.fusion_layers = nn.ModuleList(layers)
        self.output_layer = nn.Linear(previous + self.embed_dim, output_dim)
        init.apply(self.output_layer, gain)
        self.activation = _activation_layer(activation)
        self.output_dim = output_dim

    def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        embeds = torch.cat(
            [encoder(inputs[name]) for name, encoder in self.base_encoders.items()], dim=-1
        )
        out = embeds
        for i, layer in enumerate(self.fusion_layers):
            out = self.activation(layer(embeds if i == 0 else torch.cat([out, embeds], dim=-1)))
        if len(self.fusion_layers):
            out = torch.cat([out, embeds], dim=-1)
        return self.activation(self.output_layer(out))


def torch_names_of_numpy_parameters(module: DefaultSACTorchRLModule) -> dict[str, str]:
    """{numpy `SACModule` parameter name: torch parameter name} for the default torch SAC
    module `module` (not inference-only): `pi_encoder.{i}`, `pi.{i}`, and per critic
    (`qf`, `qf_twin`) `{q}_encoder.actions.{i}` / `.obs.{i}` / `.fusion.{i}` (fusion layers,
    then the output layer) for Box actions, `{q}_encoder.{i}` for Discrete, and `{q}.{i}`."""
    names = mlp_names("pi_encoder", linear_names(module.pi_encoder, "pi_encoder"))
    names.update(mlp_names("pi", linear_names(module.pi, "pi")))
    for q_encoder, q, encoder, head in module.critic_modules():
        if isinstance(encoder, MultiStreamEncoder):
            for stream in STREAMS:
                prefix = f"{q_encoder}.base_encoders.{stream}"
                part = encoder.base_encoders[stream]
                names.update(mlp_names(f"{q_encoder}.{stream}", linear_names(part, prefix)))
            fusion = [f"{q_encoder}.fusion_layers.{i}" for i in range(len(encoder.fusion_layers))]
            fusion.append(f"{q_encoder}.output_layer")
            names.update(mlp_names(f"{q_encoder}.fusion", fusion))
        else:
            names.update(mlp_names(q_encoder, linear_names(encoder, q_encoder)))
        names.update(mlp_names(q, linear_names(head, q)))
    return names


class DefaultSACTorchRLModule(TorchRLModule, InferenceOnlyAPI, TargetNetworkAPI, QNetAPI):
    """RLlib's default SAC torch module (see the module docstring): `_forward` returns the
    policy's `Columns.ACTION_DIST_INPUTS`; `_forward_train` RLlib's SAC outputs for a batch
    with `obs`, `next_obs` and `actions`; `compute_q_values(batch)` the minimum over the
    critics (`{"qf_preds": (B,)}` for Box actions, `(B, num_actions)` for Discrete),
    `forward_target(batch)` the same from the target critics."""

    #: The EnvRunners' forward pass of this class (not of a subclass) in numpy
    #: (`trainer.algorithms.sac.numpy_inference`).
    numpy_forward_class = NumpySACInference
    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.sac.torch_export:describe_torch"
    #: The numpy distributions the EnvRunners act with for this module's distribution
    #: classes (`TorchModuleView`): the numpy SACModule's, so either framework samples alike.
    numpy_action_dists: ClassVar[dict[type, Any]] = {
        TorchSquashedGaussian: SquashedGaussian,
        TorchCategorical: Categorical,
    }

    #: The algorithm's keys of the model config (the config's auto-includes), with their
    #: defaults: taken out before the network settings are checked.
    own_model_keys: ClassVar[dict[str, Any]] = SAC_MODEL_KEYS

    def setup(self) -> None:
        where = type(self).__name__
        if self.observation_space is None or self.action_space is None:
            raise ValueError(
                f"{where}: observation_space and action_space are required (got "
                f"{self.observation_space}, {self.action_space})"
            )
        if isinstance(self.action_space, gym.spaces.Box):
            self.action_dist_cls = TorchSquashedGaussian
        elif isinstance(self.action_space, gym.spaces.Discrete):
            self.action_dist_cls = TorchCategorical
        else:
            raise UnsupportedValue(
                f"{where}: action_space={self.action_space} is not supported: SAC takes Box "
                "(a squashed Gaussian) and Discrete (categorical) actions",
                ACTION_SPACES,
            )
        if dataclasses.is_dataclass(self.model_config) and not isinstance(self.model_config, type):
            self.model_config = dataclasses.asdict(self.model_config)
        given = dict(self.model_config or {})
        sac_settings = {
            key: given.pop(key, default) for key, default in self.own_model_keys.items()
        }
        #: The algorithm's own model-config keys' values (`own_model_keys`).
        self.own_model_settings = sac_settings
        config = check_model_config(given, setting=f"{where} model_config")
        #: The checked model config, SAC's settings taken out (the numpy SACModule's).
        self._config = config
        if config["use_lstm"]:
            raise UnsupportedValue(
                f"{where}: model_config['use_lstm']=True: SAC has no recurrent modules (nor "
                "has RLlib's)",
                "recurrent SAC modules",
            )
        if config["free_log_std"]:
            raise ValueError(
                f"{where}: model_config['free_log_std']=True: only for a diagonal Gaussian "
                "policy; SAC's is a squashed Gaussian (RLlib's catalog refuses it too)"
            )
        if not config["fcnet_hiddens"]:
            raise ValueError(
                f"{where}: model_config['fcnet_hiddens']=[] leaves SAC's encoders without a "
                "latent size (RLlib's SAC builds its Q encoder to fcnet_hiddens[-1]); give at "
                "least one layer"
            )
        self.twin_q = bool(sac_settings["twin_q"])
        self.continuous = isinstance(self.action_space, gym.spaces.Box)
        self._encode_obs = ObservationEncoding(self.observation_space, where)
        self._make_encoder = encoder_factory(self.observation_space, self._encode_obs.dim, config)
        self.pi_encoder = self._make_encoder()
        latent = int(self.pi_encoder.output_dim)
        space: Any = self.action_space
        self._num_actions = int(np.prod(space.shape)) if self.continuous else int(space.n)
        self.pi = MLPHead(
            latent, self.action_dist_cls.required_input_dim(self.action_space), config
        )
        if self.inference_only:
            return  # (RLlib's: the EnvRunners' copy holds the policy only)
        self._build_critics(latent)
        # The learner's module holds its target networks from the start (as DQN's): its
        # state, and so its checkpoints, always have the same keys.
        self.make_target_networks()

    def _build_critics(self, latent: int) -> None:
        """The critics (RLlib's `qf_encoder`, `qf` and with twin_q `qf_twin_encoder`,
        `qf_twin`), for the policy encoder's `latent` size."""
        self.qf_encoder, self.qf = self._critic(latent)
        if self.twin_q:
            self.qf_twin_encoder, self.qf_twin = self._critic(latent)

    #: The outputs of a critic's head for Box actions (SAC's: Q(s, a)).
    critic_outputs = 1

    def _critic_head_config(self) -> dict:
        """The model config a Box-action critic's head is built with (SAC's: the module's)."""
        return self._config

    def critic_modules(self) -> list[tuple[str, str, nn.Module, nn.Module]]:
        """Each critic's encoder and head, with their names in the module's state (the numpy
        SACModule's names of the same networks)."""
        critics = [("qf_encoder", "qf", self.qf_encoder, self.qf)]
        if self.twin_q:
            critics.append(("qf_twin_encoder", "qf_twin", self.qf_twin_encoder, self.qf_twin))
        return critics

    def _critic(self, latent: int) -> tuple[nn.Module, nn.Module]:
        """A Q network's encoder and head (see the module docstring)."""
        config = self._config
        if not self.continuous:
            return self._make_encoder(), MLPHead(latent, self._num_actions, config)
        # The action stream: fcnet_hiddens[:-1], then the latent size, activated; RLlib's
        # config names no initializers for it (the numpy module's default ones).
        action_config = {
            **config,
            "fcnet_hiddens": [*config["fcnet_hiddens"][:-1], latent],
            "fcnet_kernel_initializer": None,
            "fcnet_kernel_initializer_kwargs": None,
            "fcnet_bias_initializer": None,
            "fcnet_bias_initializer_kwargs": None,
        }
        encoder = MultiStreamEncoder(
            {"actions": MLPEncoder(self._num_actions, action_config), "obs": self._make_encoder()},
            config["fusionnet_hiddens"],
            latent,
            config["fusionnet_activation"],
            LayerInit(config, "fusionnet"),
        )
        return encoder, MLPHead(latent, self.critic_outputs, self._critic_head_config())

    def start_as_numpy_module(self, seed: int) -> None:
        """Takes the initial weights of the numpy `SACModule` with this model config, `twin_q`
        and `seed` (the same networks, `torch_names_of_numpy_parameters`), target networks
        included, so a seeded run starts from the same weights on either framework; keeps its
        own where the numpy module has no such networks (a CNN encoder)."""
        try:
            numpy_module = self._numpy_module(seed)
        except (ValueError, TypeError, KeyError):
            return
        weights = numpy_module.get_weights()
        params = dict(self.named_parameters())
        names = torch_names_of_numpy_parameters(self)
        # Torch's layout: weight matrices transposed.
        values = {
            name: weights[key].T if key.endswith(".weight") else weights[key]
            for key, name in names.items()
            if key in weights
        }
        if len(values) != len(weights) or any(
            tuple(params[name].shape) != value.shape for name, value in values.items()
        ):
            return
        with torch.no_grad():
            for name, value in values.items():
                params[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
        self.make_target_networks()

    def _numpy_module(self, seed: int) -> SACModule:
        """The numpy module of the same networks, built for `seed`."""
        return SACModule(
            SpaceInfo.from_spaces(self.observation_space, self.action_space),
            self._config,
            twin_q=self.twin_q,
            seed=seed,
        )

    # -- InferenceOnlyAPI / TargetNetworkAPI ---------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        attributes = ["qf", "target_qf", "qf_encoder", "target_qf_encoder"]
        if self.twin_q:
            attributes += ["qf_twin", "target_qf_twin", "qf_twin_encoder", "target_qf_twin_encoder"]
        return attributes

    def _main_networks(self) -> dict[str, nn.Module]:
        networks = {"qf_encoder": self.qf_encoder, "qf": self.qf}
        if self.twin_q:
            networks.update({"qf_twin_encoder": self.qf_twin_encoder, "qf_twin": self.qf_twin})
        return networks

    def make_target_networks(self) -> None:
        """The target critics as copies of the critics (again: their weights become the
        critics', the modules stay, so the state keeps its keys)."""
        for name, main in self._main_networks().items():
            target = getattr(self, f"target_{name}", None)
            if target is None:
                target = copy.deepcopy(main)
                target.requires_grad_(False)
                setattr(self, f"target_{name}", target)
            else:
                target.load_state_dict(main.state_dict())

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module has no target networks"
            )
        return [
            (main, getattr(self, f"target_{name}")) for name, main in self._main_networks().items()
        ]

    def forward_target(self, batch: dict[str, Any], squeeze: bool = True) -> dict[str, Any]:
        """The target critics' Q-values (the minimum of the two with `twin_q`) of `batch`'s
        `obs` (and `actions`, Box) under `"qf_preds"`."""
        q_values = self._qf_forward_train_helper(
            batch, self.target_qf_encoder, self.target_qf, squeeze=squeeze
        )
        if self.twin_q:
            q_values = torch.min(
                q_values,
                self._qf_forward_train_helper(
                    batch, self.target_qf_twin_encoder, self.target_qf_twin, squeeze=squeeze
                ),
            )
        return {QF_PREDS: q_values}

    # -- QNetAPI -------------------------------------------------------------------------------
    def compute_q_values(self, batch: dict[str, Any], squeeze: bool = True) -> dict[str, Any]:
        """The critics' Q-values (the minimum of the two with `twin_q`) of `batch`'s `obs`
        (and `actions`, Box) under `"qf_preds"`: `(B,)` for Box actions, `(B, num_actions)`
        for Discrete."""
        q_values = self._qf_forward_train_helper(batch, self.qf_encoder, self.qf, squeeze=squeeze)
        if self.twin_q:
            q_values = torch.min(
                q_values,
                self._qf_forward_train_helper(
                    batch, self.qf_twin_encoder, self.qf_twin, squeeze=squeeze
                ),
            )
        return {QF_PREDS: q_values}

    def _obs(self, obs: Any) -> torch.Tensor:
        return self._encode_obs(obs, like=self.pi.net.mlp[0].weight)

    def _qf_forward_train_helper(
        self, batch: dict[str, Any], encoder: nn.Module, head: nn.Module, squeeze: bool = True
    ) -> torch.Tensor:
        """One critic's Q-values (RLlib's helper): `encoder` over `batch`'s `obs` (and its
        `actions` for Box actions), then `head`; the last axis squeezed for Box actions."""
        obs = self._obs(batch[Columns.OBS])
        if not self.continuous:
            return head(encoder(obs))
        actions = torch.as_tensor(batch[Columns.ACTIONS], device=obs.device).to(obs.dtype)
        q_values = head(encoder({"obs": obs, "actions": actions.reshape(len(obs), -1)}))
        return q_values.squeeze(-1) if squeeze else q_values

    # -- forward passes ------------------------------------------------------------------------
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The policy's action-distribution inputs (exploration and inference alike: the
        EnvRunners' distribution draws, or takes the mode)."""
        return {Columns.ACTION_DIST_INPUTS: self.pi(self.pi_encoder(self._obs(batch[Columns.OBS])))}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module cannot train (build it "
                "with inference_only=False)"
            )
        if self.continuous:
            return self._forward_train_continuous(batch)
        return self._forward_train_discrete(batch)

    def _policy_outputs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy's outputs for `obs` and `next_obs`, in one pass over both."""
        obs, next_obs = self._obs(batch[Columns.OBS]), self._obs(batch[Columns.NEXT_OBS])
        both = self.pi(self.pi_encoder(torch.cat([obs, next_obs])))
        return both[: len(obs)], both[len(obs) :]

    def _forward_train_continuous(self, batch: dict[str, Any]) -> dict[str, Any]:
        output: dict[str, Any] = {}
        batch_curr = {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: batch[Columns.ACTIONS]}
        output[QF_PREDS] = self._qf_forward_train_helper(batch_curr, self.qf_encoder, self.qf)
        if self.twin_q:
            output[QF_TWIN_PREDS] = self._qf_forward_train_helper(
                batch_curr, self.qf_twin_encoder, self.qf_twin
            )
        action_logits, action_logits_next = self._policy_outputs(batch)
        output[Columns.ACTION_DIST_INPUTS] = action_logits
        output[ACTION_DIST_INPUTS_NEXT] = action_logits_next
        dist_class = self.get_train_action_dist_cls()
        # The current state's actions reparameterized (the policy loss differentiates through
        # them); the next state's drawn without a gradient (the critics' targets).
        actions_resampled, output[LOGP_RESAMPLED] = dist_class.from_logits(
            action_logits
        ).rsample_and_logp()
        actions_next, logp_next = dist_class.from_logits(action_logits_next).sample_and_logp()
        output[LOGP_NEXT_RESAMPLED] = logp_next.detach()
        # Q of the resampled actions with the critics' parameters frozen: the policy's
        # gradient flows through the actions, none reaches the critics (RLlib's
        # "straight-through" pass).
        critic_params = [
            param
            for name in ("qf_encoder", "qf", "qf_twin_encoder", "qf_twin")
            if hasattr(self, name)
            for param in getattr(self, name).parameters()
        ]
        for param in critic_params:
            param.requires_grad_(False)
        try:
            output[Q_CURR] = self.compute_q_values(
                {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions_resampled}
            )[QF_PREDS]
        finally:
            for param in critic_params:
                param.requires_grad_(True)
        output[QF_TARGET_NEXT] = self.forward_target(
            {Columns.OBS: batch[Columns.NEXT_OBS], Columns.ACTIONS: actions_next.detach()}
        )[QF_PREDS].detach()
        return output

    def _forward_train_discrete(self, batch: dict[str, Any]) -> dict[str, Any]:
        output: dict[str, Any] = {}
        batch_curr = {Columns.OBS: batch[Columns.OBS]}
        action_logits, action_logits_next = self._policy_outputs(batch)
        log_probs_next = torch.log_softmax(action_logits_next, dim=-1)
        output[ACTION_PROBS_NEXT] = log_probs_next.exp()
        output[ACTION_LOG_PROBS_NEXT] = log_probs_next
        output[QF_TARGET_NEXT] = self.forward_target(
            {Columns.OBS: batch[Columns.NEXT_OBS]}, squeeze=False
        )[QF_PREDS].detach()
        output[QF_PREDS] = self._qf_forward_train_helper(
            batch_curr, self.qf_encoder, self.qf, squeeze=False
        )
        if self.twin_q:
            output[QF_TWIN_PREDS] = self._qf_forward_train_helper(
                batch_curr, self.qf_twin_encoder, self.qf_twin, squeeze=False
            )
        log_probs = torch.log_softmax(action_logits, dim=-1)
        output[ACTION_PROBS] = log_probs.exp()
        output[ACTION_LOG_PROBS] = log_probs
        return output


__all__ = [
    "ACTION_DIST_INPUTS_NEXT",
    "ACTION_LOG_PROBS",
    "ACTION_LOG_PROBS_NEXT",
    "ACTION_PROBS",
    "ACTION_PROBS_NEXT",
    "LOGP_NEXT_RESAMPLED",
    "LOGP_RESAMPLED",
    "QF_PREDS",
    "QF_TARGET_NEXT",
    "QF_TWIN_PREDS",
    "Q_CURR",
    "SAC_MODEL_KEYS",
    "DefaultSACTorchRLModule",
    "MultiStreamEncoder",
    "torch_names_of_numpy_parameters",
]
