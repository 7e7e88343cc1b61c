"""TQC's default torch module (RLlib's `DefaultTQCTorchRLModule`): SAC's default torch module
(`trainer.algorithms.sac.torch_module`: the squashed-Gaussian policy, the Box-action Q
encoders) with `n_critics` quantile critics, each head outputting `n_quantiles` values:

    [obs] -> pi_encoder -> pi -> action_dist_inputs
    {obs, actions} -> qf_encoders[i] -> qf_heads[i] -> Z_i(s, a), n_quantiles values
    target_qf_encoders[i], target_qf_heads[i]: the target critics

The names and shapes of its parameters are RLlib's for the same model config (its state loads
in RLlib's module and RLlib's in it). `_forward_train` returns RLlib's keys: `qf_preds` (B, C,
N), `qf_curr` (the critics at the reparameterized actions, their parameters frozen),
`logp_curr`, `actions_curr`, and at s' `actions_next`, `logp_next` and the target critics'
`q_target_next` (B, C, N). `compute_q_values` and `forward_target` return `{"qf_preds": ...}`
(this project's `QNetAPI`): the mean over every quantile, and the mean of the truncated
mixture."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import torch
from torch import nn

from trainer.algorithms.sac.loss import QF_PREDS, QF_TARGET_NEXT
from trainer.algorithms.sac.torch_module import SAC_MODEL_KEYS, DefaultSACTorchRLModule
from trainer.algorithms.tqc.config import HEAD_INITIALIZER_KEYS, TQC_MODEL_KEYS, quantiles_kept
from trainer.algorithms.tqc.loss import LOGP_CURR, LOGP_NEXT, QF_CURR
from trainer.algorithms.tqc.tqc_module import TQCModule
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.core.models import SpaceInfo
from trainer.errors import UnsupportedValue

#: RLlib's output keys of the draws (`DefaultTQCTorchRLModule._forward_train`).
ACTIONS_CURR = "actions_curr"
ACTIONS_NEXT = "actions_next"


class DefaultTQCTorchRLModule(DefaultSACTorchRLModule):
    """See the module docstring."""

    own_model_keys: ClassVar[dict[str, Any]] = {**SAC_MODEL_KEYS, **TQC_MODEL_KEYS}

    def setup(self) -> None:
        if self.action_space is not None and not isinstance(self.action_space, gym.spaces.Box):
            raise UnsupportedValue(
                f"{type(self).__name__}: action_space={self.action_space} is not supported: "
                "TQC's critics take Box actions (as RLlib's TQC); SAC takes Discrete ones",
                ACTION_SPACES,
            )
        super().setup()

    @property
    def n_quantiles(self) -> int:
        return int(self.own_model_settings["n_quantiles"])

    @property
    def n_critics(self) -> int:
        return int(self.own_model_settings["n_critics"])

    @property
    def top_quantiles_to_drop_per_net(self) -> int:
        return int(self.own_model_settings["top_quantiles_to_drop_per_net"])

    @property
    def critic_outputs(self) -> int:  # type: ignore[override]  # the model config's
        return self.n_quantiles

    def _critic_head_config(self) -> dict:
        """The critics' heads take no head initializers (RLlib's TQCCatalog's)."""
        return {**self._config, **dict.fromkeys(HEAD_INITIALIZER_KEYS)}

    def _build_critics(self, latent: int) -> None:
        self.twin_q = False
        critics = [self._critic(latent) for _ in range(self.n_critics)]
        self.qf_encoders = nn.ModuleList([encoder for encoder, _ in critics])
        self.qf_heads = nn.ModuleList([head for _, head in critics])

    def critic_modules(self) -> list[tuple[str, str, nn.Module, nn.Module]]:
        return [
            (f"qf_encoders.{i}", f"qf_heads.{i}", encoder, head)
            for i, (encoder, head) in enumerate(zip(self.qf_encoders, self.qf_heads, strict=True))
        ]

    def start_as_numpy_module(self, seed: int) -> None:
        """Takes the initial weights of the numpy `TQCModule` for `seed` (SAC's way): a seeded
        run starts from the same weights on either framework."""
        super().start_as_numpy_module(seed)

    def _numpy_module(self, seed: int) -> TQCModule:
        return TQCModule(
            SpaceInfo.from_spaces(self.observation_space, self.action_space),
            self._config,
            n_quantiles=self.n_quantiles,
            n_critics=self.n_critics,
            seed=seed,
        )

    # -- InferenceOnlyAPI / TargetNetworkAPI ---------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return ["qf_encoders", "qf_heads", "target_qf_encoders", "target_qf_heads"]

    def _main_networks(self) -> dict[str, nn.Module]:
        return {"qf_encoders": self.qf_encoders, "qf_heads": self.qf_heads}

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        """Each critic's encoder and head with its target's (RLlib's pairs)."""
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module has no target networks"
            )
        pairs: list[tuple[nn.Module, nn.Module]] = []
        for i in range(self.n_critics):
            pairs.append((self.qf_encoders[i], self.target_qf_encoders[i]))
            pairs.append((self.qf_heads[i], self.target_qf_heads[i]))
        return pairs

    # -- the critics ---------------------------------------------------------------------------
    def quantiles(self, batch: dict[str, Any], *, target: bool = False) -> torch.Tensor:
        """Every critic's quantiles of `batch`'s `obs` and `actions`, (B, n_critics,
        n_quantiles); the target critics' with `target`."""
        encoders = self.target_qf_encoders if target else self.qf_encoders
        heads = self.target_qf_heads if target else self.qf_heads
        return torch.stack(
            [
                self._qf_forward_train_helper(batch, encoder, head, squeeze=False)
                for encoder, head in zip(encoders, heads, strict=True)
            ],
            dim=1,
        )

    def compute_q_values(self, batch: dict[str, Any], squeeze: bool = True) -> dict[str, Any]:
        """Q(s, a): the mean over every critic's quantiles, under `"qf_preds"`."""
        return {QF_PREDS: self.quantiles(batch).mean(dim=(1, 2))}

    def forward_target(self, batch: dict[str, Any], squeeze: bool = True) -> dict[str, Any]:
        """The target critics' Q(s, a): the mean of the truncated mixture (the smallest
        (n_quantiles - top_quantiles_to_drop_per_net) * n_critics quantiles)."""
        quantiles = self.quantiles(batch, target=True)
        kept = quantiles_kept(self.n_quantiles, self.n_critics, self.top_quantiles_to_drop_per_net)
        flat = torch.sort(quantiles.reshape(len(quantiles), -1), dim=1)[0]
        return {QF_PREDS: flat[:, :kept].mean(dim=1)}

    # -- forward passes ------------------------------------------------------------------------
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}: an inference-only module cannot train (build it "
                "with inference_only=False)"
            )
        output: dict[str, Any] = {}
        action_logits, action_logits_next = self._policy_outputs(batch)
        output[Columns.ACTION_DIST_INPUTS] = action_logits
        dist_class = self.get_train_action_dist_cls()
        # The current state's actions reparameterized (the policy loss differentiates through
        # them); the next state's drawn without a gradient (the critics' targets).
        actions_curr, output[LOGP_CURR] = dist_class.from_logits(action_logits).rsample_and_logp()
        actions_next, logp_next = dist_class.from_logits(action_logits_next).sample_and_logp()
        output[ACTIONS_CURR] = actions_curr
        output[ACTIONS_NEXT] = actions_next.detach()
        output[LOGP_NEXT] = logp_next.detach()
        output[QF_PREDS] = self.quantiles(
            {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: batch[Columns.ACTIONS]}
        )
        # The critics at the reparameterized actions with their parameters frozen: the
        # policy's gradient flows through the actions, none reaches the critics (RLlib's
        # "straight-through" pass); a parameter the user froze stays frozen.
        critic_params = [*self.qf_encoders.parameters(), *self.qf_heads.parameters()]
        trainable = [param.requires_grad for param in critic_params]
        for param in critic_params:
            param.requires_grad_(False)
        try:
            output[QF_CURR] = self.quantiles(
                {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: actions_curr}
            )
        finally:
            for param, was in zip(critic_params, trainable, strict=True):
                param.requires_grad_(was)
        with torch.no_grad():
            output[QF_TARGET_NEXT] = self.quantiles(
                {Columns.OBS: batch[Columns.NEXT_OBS], Columns.ACTIONS: actions_next},
                target=True,
            )
        return output


__all__ = ["ACTIONS_CURR", "ACTIONS_NEXT", "DefaultTQCTorchRLModule"]
