"""The EnvRunners' forward pass of DQN's default torch module, in numpy.

`DefaultDQNTorchRLModule` names `NumpyDQNInference` as its `numpy_forward_class`: for an
inference-only copy with an MLP encoder, the view
(`trainer.torch_rl.runner_view.TorchModuleView`) computes the Q-values with it, the encoder,
the `af` head and, with `dueling`, the `vf` head combined as V + A - mean(A). The default torch
learner's update in numpy (`trainer.algorithms.dqn.numpy_update`) knows the default module by
this class too. The shared machinery (when a module computes here, the weights' copies and their refresh) is
`trainer.torch_rl.numpy_inference`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.torch_rl.numpy_inference import (
    NotKnown,
    NumpyHead,
    WatchedParameters,
    numpy_mlp_encoder,
)


class NumpyDQNInference:
    """The default DQN module's Q-values (`compute_q_values`: encoder, `af`, with dueling
    `vf`) in numpy; with `num_atoms` > 1 the expected values of its distributions (the
    softmax of the logits over the atoms, weighted by the support)."""

    def __init__(self, module: Any, watched: WatchedParameters) -> None:
        if module._encode_obs is None or module._encode_obs.image:
            raise NotKnown  # a catalog subclass's encoder, or a CNN
        self.encoder = numpy_mlp_encoder(module.encoder, watched)
        self.af = NumpyHead(module.af, watched)
        self.vf = NumpyHead(module.vf, watched) if module.uses_dueling else None
        self.num_atoms = int(module.num_atoms)
        self.num_actions = int(module.action_space.n)
        if self.num_atoms > 1:  # the module's support, computed as it computes it
            z = np.arange(self.num_atoms, dtype=np.float32)
            self.atoms = module.v_min + z * (module.v_max - module.v_min) / float(
                self.num_atoms - 1
            )

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        features = self.encoder(obs)
        advantages = self.af(features)
        if self.num_atoms > 1:
            logits = advantages.reshape(len(advantages), self.num_actions, self.num_atoms)
            if self.vf is not None:  # as the module: centred over the atoms, plus V
                logits = logits - logits.mean(axis=-1, keepdims=True)
                logits = logits + self.vf(features)[:, :, None]
            exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs = exp / exp.sum(axis=-1, keepdims=True)
            return (probs * self.atoms).sum(axis=-1)
        if self.vf is None:
            return advantages
        if np.isfinite(advantages).all():
            mean = advantages.mean(axis=-1, keepdims=True)
        else:  # as the torch module: a masked action's -inf left out of the mean
            mean = np.nanmean(
                np.nan_to_num(advantages, nan=0.0, neginf=np.nan), axis=-1, keepdims=True
            )
        return advantages - mean + self.vf(features)
