"""The EnvRunners' forward pass of PPO's default torch module, in numpy.

`DefaultPPOTorchRLModule` names `NumpyPPOInference` as its `numpy_forward_class`: for an
inference-only copy without `use_lstm` and with an MLP encoder, the view
(`trainer.torch_rl.runner_view.TorchModuleView`) computes the action-distribution inputs with
it, the actor encoder's `fcnet_*` layers, then the `pi` head (with `clip_log_std` /
`free_log_std` as the head has them). The default torch learner's update in numpy
(`trainer.algorithms.ppo.numpy_update`) knows the default module by this class too. The shared
machinery (when a module computes here, the
weights' copies and their refresh) is `trainer.torch_rl.numpy_inference`.
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


class NumpyPPOInference:
    """The default PPO module's `_forward` (actor encoder, then `pi`) in numpy."""

    def __init__(self, module: Any, watched: WatchedParameters) -> None:
        if module._stateful or module._rllib_encoder or module._encode_obs.image:
            raise NotKnown  # (a catalog's RLlib-kind encoder: its own torch forward)
        encoder = module.encoder
        self.encoder = numpy_mlp_encoder(
            encoder.encoder if encoder.shared else encoder.actor_encoder, watched
        )
        self.pi = NumpyHead(module.pi, watched)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.pi(self.encoder(obs))
