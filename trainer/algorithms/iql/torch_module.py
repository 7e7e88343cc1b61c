"""RLlib 2.60's `DefaultIQLTorchRLModule`: SAC's default torch module plus a state-value
network (`vf_encoder`, `vf`: an encoder like the policy's and a head to one value; RLlib's
`ValueFunctionAPI`), whose training pass also gives

    qf_target_preds   min over the target critics of Q_target(s, a), a the recorded action
    vf_preds          V(s)
    vf_preds_next     V(s')

Box actions only, as RLlib's.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from trainer.algorithms.iql.loss import QF_TARGET_PREDS, VF_PREDS_NEXT
from trainer.algorithms.sac.numpy_inference import NumpySACInference
from trainer.algorithms.sac.torch_module import DefaultSACTorchRLModule
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.errors import UnsupportedValue
from trainer.torch_rl.networks import MLPHead


class DefaultIQLTorchRLModule(DefaultSACTorchRLModule):
    """See the module docstring."""

    numpy_forward_class = NumpySACInference

    def setup(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Box):
            raise UnsupportedValue(
                f"{type(self).__name__}: action_space={self.action_space}: IQL learns Box "
                "actions (only continuous action spaces are supported, as in RLlib's IQL)",
                ACTION_SPACES,
            )
        super().setup()
        if self.inference_only:
            return
        self.vf_encoder = self._make_encoder()
        self.vf = MLPHead(int(self.vf_encoder.output_dim), 1, self._config)

    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), "vf_encoder", "vf"]

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """RLlib's `ValueFunctionAPI`: V(s) of `batch`'s observations, shape (B,)."""
        if embeddings is None:
            embeddings = self.vf_encoder(self._obs(batch[Columns.OBS]))
        return self.vf(embeddings).squeeze(-1)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        output = super()._forward_train(batch, **kwargs)
        recorded = {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: batch[Columns.ACTIONS]}
        with torch.no_grad():
            output[QF_TARGET_PREDS] = self.forward_target(recorded)["qf_preds"]
        output[Columns.VF_PREDS] = self.compute_values(recorded)
        output[VF_PREDS_NEXT] = self.compute_values({Columns.OBS: batch[Columns.NEXT_OBS]})
        return output


__all__ = ["QF_TARGET_PREDS", "VF_PREDS_NEXT", "DefaultIQLTorchRLModule"]
