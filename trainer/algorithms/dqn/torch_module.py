"""DQN's default torch module (RLlib's `DefaultDQNTorchRLModule`): a Q-network built from
`model_config`, with the target networks DQN's learner bootstraps from.

The module builds its parts through its catalog, as RLlib's does (`DQNCatalog`,
`trainer.algorithms.dqn.catalog`: the spec's `catalog_class`, or its defaults): a subclass's
`_get_encoder_config` / `build_encoder` / `build_af_head` / `build_vf_head` give parts of its own
(an encoder other than the default ones is called with the batch and returns
`{ENCODER_OUT: ...}`, as RLlib's encoders, so it can read Dict observations); such a module
trains in torch (the numpy twin and the EnvRunners' numpy forward mirror the default parts
only). The default layout is RLlib's DQNCatalog's and the numpy `QModule`'s for the same model
config (a test copies weights from one to the other and compares the Q-values and the learners'
steps):

- `encoder`: `fcnet_hiddens` layers of `fcnet_activation` (the last layer activated too), or for
  image observations (a 3-D Box) RLlib's CNN encoder (`conv_filters`); an empty `fcnet_hiddens`
  means no encoder layers.
- `af`: `head_fcnet_hiddens` layers of `head_fcnet_activation`, then a linear output per action:
  the Q-values, or with `dueling` (RLlib's default) the advantages A(s, .), and then
- `vf`: the same head layers with one output, the state value V(s); the Q-values are
  V + A - mean(A) (Wang et al. 2016).
- `_target_encoder`, `_target_af`, `_target_vf`: the target networks, copies of the above that
  the learner moves towards them (`get_target_network_pairs`). An inference-only copy (the
  EnvRunners') holds none of them, and their weights are not sent to the EnvRunners.

The model config carries DQN's settings as RLlib's `DQNConfig` adds them: `dueling`, `double_q`
(with it `_forward_train` also returns the online network's Q-values of the next observations)
and `num_atoms`, `v_min`, `v_max`: with `num_atoms` > 1 the Q-network is distributional, as
RLlib's: `af` has `num_actions * num_atoms` outputs, the logits `(B, num_actions, num_atoms)`
over the support z = linspace(v_min, v_max, num_atoms) (`"atoms"`), their softmax over the atoms
(`"qf_probs"`) and the Q-values sum(z * probs) (`"qf_preds"`); with `dueling`, RLlib's logits:
the advantage logits centred over the atoms plus V(s) broadcast over actions and atoms (a
constant per row, which the softmax cancels: the value stream changes no Q-value there, in
RLlib's module as here). `_forward_train` then returns RLlib's `atoms`, `qf_logits`,
`qf_probs` and `qf_target_next_probs` too. `epsilon` and the noisy-network keys (`noisy`,
`std_init`) are accepted and not read, as RLlib 2.60's module reads neither noisy key (it has no
noisy layers): exploration is the EnvRunners' (the config's `EpsilonGreedy`, as for the numpy
module), so `forward_exploration` returns the Q-values as `Columns.ACTION_DIST_INPUTS` (greedy =
argmax) where RLlib's module draws the epsilon-greedy actions itself.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.algorithms.dqn.capabilities import DQN_VARIANTS
from trainer.algorithms.dqn.catalog import DQN_MODEL_KEYS, DQNCatalog, split_model_config
from trainer.algorithms.dqn.loss import (  # RLlib's output keys, which the loss reads
    ATOMS,
    QF_LOGITS,
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_PROBS,
    QF_TARGET_NEXT_PREDS,
    QF_TARGET_NEXT_PROBS,
)
from trainer.algorithms.dqn.numpy_inference import NumpyDQNInference
from trainer.algorithms.dqn.q_module import QModule
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI
from trainer.core.model_configs import ENCODER_OUT
from trainer.core.models import SpaceInfo, mlp_names
from trainer.core.obs_tree import tree_map
from trainer.errors import UnsupportedValue
from trainer.torch_rl.cnn_encoder import CNNEncoder
from trainer.torch_rl.distributions import TorchCategorical
from trainer.torch_rl.networks import (
    MLPEncoder,
    MLPHead,
    ObservationEncoding,
    encoder_factory,
    encoder_output_dim,
)
from trainer.torch_rl.numpy_twin import linear_names
from trainer.torch_rl.rl_module import TorchRLModule

#: The default encoders (`DQNCatalog`'s default `build_encoder`): they take the encoded
#: observations as a tensor.
DEFAULT_ENCODERS = (MLPEncoder, CNNEncoder)


def default_encoder(observation_space: gym.Space, config: dict, where: str) -> nn.Module:
    """The default module's encoder for a checked model config (`DQNCatalog`'s default
    `build_encoder`): `fcnet_hiddens` layers over the encoded observations, or RLlib's CNN for
    an image."""
    encoding = ObservationEncoding(observation_space, where)
    return encoder_factory(observation_space, encoding.dim, config)()


def default_encoder_output_dim(observation_space: gym.Space, config: dict) -> int:
    """The number of features `default_encoder` outputs per observation (without building
    it)."""
    encoding = ObservationEncoding(observation_space, "DQNCatalog")
    return encoder_output_dim(observation_space, encoding.dim, config)


def default_head(latent_dim: int, output_dim: int, config: dict) -> MLPHead:
    """A default head (`DQNCatalog.build_af_head` / `build_vf_head`): `head_fcnet_hiddens`,
    then `output_dim` linear outputs."""
    return MLPHead(latent_dim, output_dim, config)


def torch_names_of_numpy_parameters(module: Any, prefix: str = "") -> dict[str, str]:
    """{numpy `QModule` parameter name: torch parameter name} for the default torch DQN
    module `module`'s main networks, or with `prefix="_target_"` its target networks (the
    numpy module's heads: `advantage` and `value` with dueling, else `q`, for torch's `af`
    and `vf`)."""
    names = mlp_names("encoder", linear_names(module.encoder.net, f"{prefix}encoder.net"))
    if module.uses_dueling:
        names.update(mlp_names("advantage", linear_names(module.af.net, f"{prefix}af.net")))
        names.update(mlp_names("value", linear_names(module.vf.net, f"{prefix}vf.net")))
    else:
        names.update(mlp_names("q", linear_names(module.af.net, f"{prefix}af.net")))
    return names


class DefaultDQNTorchRLModule(TorchRLModule, InferenceOnlyAPI, TargetNetworkAPI, QNetAPI):
    """RLlib's default DQN torch module (see the module docstring): `compute_q_values(batch)`
    returns `{"qf_preds": (B, num_actions)}`, `forward_target(batch)` the same from the target
    networks, `_forward_train` RLlib's `qf_preds`, `qf_next_preds` (with `double_q`) and
    `qf_target_next_preds` for a batch with `obs` and `next_obs`."""

    #: The EnvRunners' forward pass of this class (not of a subclass) in numpy
    #: (`trainer.algorithms.dqn.numpy_inference`).
    numpy_forward_class = NumpyDQNInference
    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.dqn.torch_export:describe_torch"

    def setup(self) -> None:
        where = type(self).__name__
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise ValueError(
                f"{where}: action_space={self.action_space} is not supported: DQN needs a "
                "Discrete action space (one Q-value per action)"
            )
        if self.observation_space is None:
            raise ValueError(f"{where}: observation_space is required")
        if dataclasses.is_dataclass(self.model_config) and not isinstance(self.model_config, type):
            self.model_config = dataclasses.asdict(self.model_config)
        dqn_settings, config = split_model_config(self.model_config, where)
        #: The checked model config, DQN's settings taken out (the numpy update's QModule is
        #: built from it).
        self._config = config
        if config["use_lstm"]:
            raise UnsupportedValue(
                f"{where}: model_config['use_lstm']=True: the default DQN module has no "
                "recurrent encoder here (RLlib's needs its R2D2-style replay of sequences)",
                DQN_VARIANTS,
            )
        self.uses_dueling = bool(dqn_settings["dueling"])
        self.uses_double_q = bool(dqn_settings["double_q"])
        self.num_atoms = int(dqn_settings["num_atoms"])
        if self.num_atoms > 1:  # as RLlib's module: the support's ends only where it has one
            self.v_min = float(dqn_settings["v_min"])
            self.v_max = float(dqn_settings["v_max"])
        self.action_dist_cls = TorchCategorical
        # As RLlib's module: the parts come from the catalog (the spec's, or DQNCatalog's
        # defaults), whose builders a DQNCatalog subclass may override.
        catalog = self.catalog
        if catalog is None:
            catalog = DQNCatalog(self.observation_space, self.action_space, self.model_config)
        self.encoder = catalog.build_encoder(framework="torch")
        #: How observations reach the encoder: encoded as a tensor for a default encoder
        #: (`ObservationEncoding`); None for another (a catalog subclass's), which is called
        #: with the batch, as RLlib calls its encoders, and returns `{ENCODER_OUT: ...}`.
        self._encode_obs: ObservationEncoding | None = None
        if isinstance(self.encoder, DEFAULT_ENCODERS):
            self._encode_obs = ObservationEncoding(self.observation_space, where)
            if catalog._latent_dims is None:
                catalog.latent_dims = (int(self.encoder.output_dim),)
        self.af = catalog.build_af_head(framework="torch")
        if self.uses_dueling:
            self.vf = catalog.build_vf_head(framework="torch")
        # The learner's module holds its target networks from the start (RLlib's learner makes
        # them when it builds): its state, and so its checkpoints, always have the same keys.
        if not self.inference_only:
            self.make_target_networks()

    def start_as_numpy_module(self, seed: int) -> None:
        """Takes the initial weights of the numpy `QModule` with this model config and `seed`
        (the same networks, `torch_names_of_numpy_parameters`), target networks included, so
        a seeded run starts from the same weights on either framework; keeps its own where
        the numpy module has no such networks (a CNN encoder, a catalog subclass's parts)."""
        if not self.has_default_parts():
            return
        try:
            numpy_module = QModule(
                SpaceInfo.from_spaces(self.observation_space, self.action_space),
                self._config,
                dueling=self.uses_dueling,
                **self.support_settings(),
                seed=seed,
            )
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

    def has_default_parts(self) -> bool:
        """Whether the encoder and heads are the default ones (not a catalog subclass's own),
        the networks the numpy `QModule` mirrors (with an MLP encoder)."""
        return (
            type(self.encoder) in DEFAULT_ENCODERS
            and type(self.af) is MLPHead
            and (not self.uses_dueling or type(self.vf) is MLPHead)
        )

    def support_settings(self) -> dict[str, Any]:
        """`num_atoms`, `v_min` and `v_max` as the numpy `QModule` takes them; none with one
        atom (the QModule's defaults, where the support changes nothing)."""
        if self.num_atoms == 1:
            return {}
        return {"num_atoms": self.num_atoms, "v_min": self.v_min, "v_max": self.v_max}

    # -- InferenceOnlyAPI / TargetNetworkAPI ---------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return ["_target_encoder", "_target_af"] + (["_target_vf"] if self.uses_dueling else [])

    def _main_networks(self) -> dict[str, nn.Module]:
        networks = {"encoder": self.encoder, "af": self.af}
        if self.uses_dueling:
            networks["vf"] = self.vf
        return networks

    def make_target_networks(self) -> None:
        """The target networks as copies of the main ones (again: their weights become the
        main networks', the modules stay, so the state keeps its keys)."""
        for name, main in self._main_networks().items():
            target = getattr(self, f"_target_{name}", None)
            if target is None:
                target = copy.deepcopy(main)
                target.requires_grad_(False)
                setattr(self, f"_target_{name}", target)
            else:
                target.load_state_dict(main.state_dict())

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module has no target networks"
            )
        return [
            (main, getattr(self, f"_target_{name}")) for name, main in self._main_networks().items()
        ]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The target networks' Q-values of `batch[Columns.OBS]` (`{"qf_preds": ...}`; with
        `num_atoms` > 1 also `"atoms"`, `"qf_logits"` and `"qf_probs"`)."""
        return self._qf_forward_helper(
            batch,
            self._target_encoder,
            self._target_af,
            self._target_vf if self.uses_dueling else None,
        )

    # -- QNetAPI -------------------------------------------------------------------------------
    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The Q-values `(B, num_actions)` of `batch[Columns.OBS]` under `"qf_preds"`; with
        `num_atoms` > 1 also RLlib's `"atoms"` (the support), `"qf_logits"` and `"qf_probs"`
        `(B, num_actions, num_atoms)`."""
        return self._qf_forward_helper(
            batch, self.encoder, self.af, self.vf if self.uses_dueling else None
        )

    def compute_advantage_distribution(self, batch: Any) -> dict[str, Any]:
        """RLlib's (num_atoms > 1): the Q (or advantage) head's outputs `batch` `(...,
        num_actions * num_atoms)` as the support (`"atoms"`), the logits `(..., num_actions,
        num_atoms)` (`"logits"`) and their softmax over the atoms (`"probs"`)."""
        z = torch.arange(0.0, self.num_atoms, dtype=torch.float32, device=batch.device)
        z = self.v_min + z * (self.v_max - self.v_min) / float(self.num_atoms - 1)
        logits = torch.reshape(
            batch, shape=(*batch.shape[:-1], int(self.action_space.n), self.num_atoms)
        )
        return {ATOMS: z, "logits": logits, "probs": nn.functional.softmax(logits, dim=-1)}

    def _qf_forward_helper(
        self,
        batch: dict[str, Any],
        encoder: nn.Module,
        af: nn.Module,
        vf: nn.Module | None,
    ) -> dict[str, Any]:
        features = self._features(batch, encoder, af)
        af_out = af(features)
        if self.num_atoms > 1:
            return self._distribution_forward(af_out, None if vf is None else vf(features))
        if vf is None:
            return {QF_PREDS: af_out}
        # As RLlib: advantages centred per row (a masked action's -inf left out of the mean),
        # not in place (the graph needs the advantages), then the value broadcast over them.
        af_mean = torch.nan_to_num(af_out, neginf=torch.nan).nanmean(dim=-1, keepdim=True)
        return {QF_PREDS: af_out - af_mean + vf(features)}

    def _features(self, batch: dict[str, Any], encoder: nn.Module, af: nn.Module) -> Any:
        """The encoder's features of `batch[Columns.OBS]`: a default encoder takes the encoded
        observations, another the batch (observations as tensors on the module's device),
        returning them under `ENCODER_OUT`."""
        # A weight of the module: the dtype and device of its inputs.
        like = next(itertools.chain(af.parameters(), encoder.parameters()))
        if self._encode_obs is not None:
            return encoder(self._encode_obs(batch[Columns.OBS], like=like))
        obs = tree_map(lambda leaf: torch.as_tensor(leaf, device=like.device), batch[Columns.OBS])
        return encoder({**batch, Columns.OBS: obs})[ENCODER_OUT]

    def _distribution_forward(self, af_out: torch.Tensor, vf_out: torch.Tensor | None) -> dict:
        """RLlib's distributional Q-values from the head's outputs (see the module
        docstring)."""
        distribution = self.compute_advantage_distribution(af_out)
        z = distribution[ATOMS]
        if vf_out is None:
            logits, probs = distribution["logits"], distribution["probs"]
        else:
            # As RLlib: the advantage logits centred over the atoms, plus V broadcast.
            af_logits = distribution["logits"]
            logits = af_logits - af_logits.mean(dim=-1, keepdim=True)
            logits = logits + vf_out.view(-1, *((1,) * (logits.dim() - 1)))
            probs = nn.functional.softmax(logits, dim=-1)
        return {
            QF_PREDS: torch.sum(z * probs, dim=-1),
            ATOMS: z,
            QF_LOGITS: logits,
            QF_PROBS: probs,
        }

    # -- forward passes ------------------------------------------------------------------------
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The Q-values as the action distribution's inputs (a categorical's logits: its
        deterministic sample is the greedy action) and the greedy actions."""
        q_values = self.compute_q_values(batch)[QF_PREDS]
        return {Columns.ACTION_DIST_INPUTS: q_values, Columns.ACTIONS: q_values.argmax(dim=-1)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module cannot train (build it "
                "with inference_only=False)"
            )
        output: dict[str, Any] = {}
        if self.uses_double_q:
            # One pass over the observations and the next observations together.
            both = _concat(batch[Columns.OBS], batch[Columns.NEXT_OBS])
            qf_outs = self.compute_q_values({Columns.OBS: both})
            output[QF_PREDS], output[QF_NEXT_PREDS] = torch.chunk(qf_outs[QF_PREDS], 2, dim=0)
        else:
            qf_outs = self.compute_q_values({Columns.OBS: batch[Columns.OBS]})
            output[QF_PREDS] = qf_outs[QF_PREDS]
        # No gradient reaches the target networks (their parameters do not require one).
        target_outs = self.forward_target({Columns.OBS: batch[Columns.NEXT_OBS]})
        output[QF_TARGET_NEXT_PREDS] = target_outs[QF_PREDS]
        if self.num_atoms > 1:
            # RLlib's: the logits and probabilities of the whole online pass (with double_q,
            # of the observations, then the next observations), the target's probabilities.
            output[ATOMS] = target_outs[ATOMS]
            output[QF_LOGITS] = qf_outs[QF_LOGITS]
            output[QF_PROBS] = qf_outs[QF_PROBS]
            output[QF_TARGET_NEXT_PROBS] = target_outs[QF_PROBS]
        return output


def _concat(obs: Any, next_obs: Any) -> Any:
    """The observations, then the next observations, as one batch (leaf by leaf for nested
    ones)."""
    if isinstance(obs, dict):
        return {key: _concat(obs[key], next_obs[key]) for key in obs}
    if isinstance(obs, tuple):
        return tuple(_concat(a, b) for a, b in zip(obs, next_obs, strict=True))
    return torch.cat([torch.as_tensor(obs), torch.as_tensor(next_obs)])


__all__ = [
    "DEFAULT_ENCODERS",
    "ATOMS",
    "DQN_MODEL_KEYS",
    "DefaultDQNTorchRLModule",
    "QF_LOGITS",
    "QF_NEXT_PREDS",
    "QF_PREDS",
    "QF_PROBS",
    "QF_TARGET_NEXT_PREDS",
    "QF_TARGET_NEXT_PROBS",
]
