"""The EnvRunners' forward pass of SAC's default torch module, in numpy.

`DefaultSACTorchRLModule` (and CQL's and IQL's default modules, which are SAC's) names
`NumpySACInference` as its `numpy_forward_class`: for an inference-only copy with an MLP
encoder, the view (`trainer.torch_rl.runner_view.TorchModuleView`) computes the
action-distribution inputs with it, the `pi_encoder`, then the `pi` head. The shared machinery
(when a module computes here, the weights' copies and their refresh) is
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


class NumpySACInference:
    """The default SAC module's `_forward` (`pi_encoder`, then `pi`) in numpy."""

    def __init__(self, module: Any, watched: WatchedParameters) -> None:
        if module._encode_obs.image:
            raise NotKnown
        self.encoder = numpy_mlp_encoder(module.pi_encoder, watched)
        self.pi = NumpyHead(module.pi, watched)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.pi(self.encoder(obs))
