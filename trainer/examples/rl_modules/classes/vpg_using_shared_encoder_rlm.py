"""RLlib's example of a MultiRLModule whose policies share one encoder
(`ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm`). Needs the `torch` extra.

The shared encoder is itself an RLModule, held by the `VPGMultiRLModuleWithSharedEncoder` under
`SHARED_ENCODER_ID` next to the policies; the container runs the encoder on each policy's
observations and hands the embeddings (under `ENCODER_OUT`) to that policy's head.
`VPGPolicyNoSharedEncoder` is the same policy with its own encoder, for comparison.
"""

from __future__ import annotations

from typing import Any

import torch

from trainer.compat.rllib_utils import Columns
from trainer.core.multi_rl_module import MultiRLModule
from trainer.torch_rl.rl_module import TorchRLModule

#: The module id the shared encoder is held under.
SHARED_ENCODER_ID = "shared_encoder"
#: The batch key of an encoder's output (RLlib's `ray.rllib.core.models.base.ENCODER_OUT`).
ENCODER_OUT = "encoder_out"


class VPGPolicyAfterSharedEncoder(TorchRLModule):
    """A policy head over the shared encoder's embeddings: `model_config["embedding_dim"]` in,
    one `model_config["hidden_dim"]`-wide ReLU layer, a Discrete action's logits out."""

    def setup(self) -> None:
        super().setup()
        embedding_dim = self.model_config["embedding_dim"]
        hidden_dim = self.model_config["hidden_dim"]
        self._pi_head = torch.nn.Sequential(
            torch.nn.Linear(embedding_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, self.action_space.n),
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self._pi_head(batch[ENCODER_OUT])}


class VPGMultiRLModuleWithSharedEncoder(MultiRLModule):
    """A MultiRLModule holding the shared encoder (`SHARED_ENCODER_ID`) and at least one policy:
    each policy's batch first goes through the encoder."""

    def setup(self) -> None:
        super().setup()
        if SHARED_ENCODER_ID not in self._rl_modules or len(self._rl_modules) < 2:
            raise ValueError(
                f"{type(self).__name__} needs a module under {SHARED_ENCODER_ID!r} (the shared "
                f"encoder) and at least one policy module; it got {sorted(self._rl_modules)}"
            )
        self.encoder = self._rl_modules[SHARED_ENCODER_ID]

    def _run(self, batch: dict[Any, Any], forward_name: str, **kwargs: Any) -> dict[Any, Any]:
        outputs = {}
        for policy_id, policy_batch in batch.items():
            policy_batch[ENCODER_OUT] = self.encoder._forward(policy_batch)[ENCODER_OUT]
            forward = getattr(self._rl_modules[policy_id], forward_name)
            outputs[policy_id] = forward(policy_batch, **kwargs)
        return outputs

    def _forward_inference(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return self._run(batch, "_forward_inference", **kwargs)

    def _forward_exploration(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return self._run(batch, "_forward_exploration", **kwargs)

    def _forward_train(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return self._run(batch, "_forward_train", **kwargs)


class SharedEncoder(TorchRLModule):
    """The shared encoder: one linear layer from the (1-D) observation to
    `model_config["embedding_dim"]` features, returned under `ENCODER_OUT`."""

    def setup(self) -> None:
        super().setup()
        input_dim = self.observation_space.shape[0]
        embedding_dim = self.model_config["embedding_dim"]
        self._net = torch.nn.Sequential(torch.nn.Linear(input_dim, embedding_dim))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {ENCODER_OUT: self._net(batch[Columns.OBS])}


class VPGIndividualEncoder(torch.nn.Module):
    """A policy's own encoder, built like `SharedEncoder` (for comparing the two setups)."""

    def __init__(self, observation_space: Any, embedding_dim: int) -> None:
        super().__init__()
        input_dim = observation_space.shape[0]
        self._net = torch.nn.Sequential(torch.nn.Linear(input_dim, embedding_dim))

    def forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {ENCODER_OUT: self._net(batch[Columns.OBS])}


class VPGPolicyNoSharedEncoder(TorchRLModule):
    """`VPGPolicyAfterSharedEncoder` with its own encoder (used when the batch has no
    `ENCODER_OUT` yet)."""

    def setup(self) -> None:
        super().setup()
        embedding_dim = self.model_config["embedding_dim"]
        hidden_dim = self.model_config["hidden_dim"]
        self._pi_head = torch.nn.Sequential(
            torch.nn.Linear(embedding_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, self.action_space.n),
        )
        self.encoder = VPGIndividualEncoder(self.observation_space, embedding_dim)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if ENCODER_OUT not in batch:
            batch = self.encoder(batch)
        return {Columns.ACTION_DIST_INPUTS: self._pi_head(batch[ENCODER_OUT])}
