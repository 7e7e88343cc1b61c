"""RLlib 2.60's `DefaultIQLTorchRLModule`: SAC's default torch module plus a state-value
network (`vf_encoder`, `vf`: an encoder like the policy's and a head to one value; RLlib's
`ValueFunctionAPI`), whose training pass gives what IQL's loss reads:

    qf_preds, qf_twin_preds   the critics' Q(s, a), a the recorded action
    action_dist_inputs        the policy's distribution inputs at s
    qf_target_preds           min over the target critics of Q_target(s, a)
    vf_preds                  V(s)
    vf_preds_next             V(s')

(RLlib's gives SAC's training outputs besides, which its IQL loss does not read.)

Box actions only, as RLlib's.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from trainer.algorithms.iql.loss import QF_TARGET_PREDS, VF_PREDS_NEXT
from trainer.algorithms.sac.numpy_inference import NumpySACInference
from trainer.algorithms.sac.torch_module import QF_PREDS, QF_TWIN_PREDS, DefaultSACTorchRLModule
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
        """What IQL's loss reads: the critics' Q(s, a) (`qf_preds`, `qf_twin_preds`), the
        policy's distribution inputs at s, the target critics' minimum, V(s) and V(s').
        RLlib's module runs SAC's whole training pass first, whose other outputs (the
        resampled actions' Q-values and log-probabilities, the target critics at the next
        observations' drawn actions) its IQL loss never reads: four of the critics' passes
        over the batch, left out here."""
        if self.inference_only:
            return super()._forward_train(batch, **kwargs)  # (SAC's refusal)
        recorded = {Columns.OBS: batch[Columns.OBS], Columns.ACTIONS: batch[Columns.ACTIONS]}
        output = {QF_PREDS: self._qf_forward_train_helper(recorded, self.qf_encoder, self.qf)}
        if self.twin_q:
            output[QF_TWIN_PREDS] = self._qf_forward_train_helper(
                recorded, self.qf_twin_encoder, self.qf_twin
            )
        output[Columns.ACTION_DIST_INPUTS] = self.pi(self.pi_encoder(self._obs(batch[Columns.OBS])))
        with torch.no_grad():
            output[QF_TARGET_PREDS] = self.forward_target(recorded)[QF_PREDS]
        output[Columns.VF_PREDS] = self.compute_values(recorded)
        output[VF_PREDS_NEXT] = self.compute_values({Columns.OBS: batch[Columns.NEXT_OBS]})
        return output


__all__ = ["QF_TARGET_PREDS", "VF_PREDS_NEXT", "DefaultIQLTorchRLModule"]
