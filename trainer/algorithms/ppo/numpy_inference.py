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

from trainer.torch_rl.networks import RecurrentActorCriticEncoder
from trainer.torch_rl.numpy_inference import (
    NotKnown,
    NumpyHead,
    NumpyLSTMEncoder,
    WatchedParameters,
    numpy_mlp_encoder,
)


class NumpyPPOInference:
    """The default PPO module's `_forward` (actor encoder, then `pi`) in numpy; with `use_lstm`
    (`step`), one time step of its LSTM encoders (the critic's too: its state goes on with the
    actor's, as the torch forward carries it), then `pi`."""

    def __init__(self, module: Any, watched: WatchedParameters) -> None:
        if module._rllib_encoder or module._encode_obs.image:
            raise NotKnown  # (a catalog's RLlib-kind encoder: its own torch forward)
        encoder = module.encoder
        if module._stateful:
            if (
                module._prev_action_dim
                or module._prev_reward
                or type(encoder) is not RecurrentActorCriticEncoder
            ):
                raise NotKnown
            shared = bool(encoder.shared)
            #: The actor's LSTM encoder (the shared one with `vf_share_layers`), and the
            #: critic's own (None when shared).
            self.actor_lstm = NumpyLSTMEncoder(
                encoder.encoder if shared else encoder.actor_encoder, watched
            )
            self.critic_lstm = None if shared else NumpyLSTMEncoder(encoder.critic_encoder, watched)
        else:
            self.encoder = numpy_mlp_encoder(
                encoder.encoder if encoder.shared else encoder.actor_encoder, watched
            )
        self.pi = NumpyHead(module.pi, watched)
        #: Whether it computes a recurrent module's steps (`step`), else `__call__`.
        self.recurrent = bool(module._stateful)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.pi(self.encoder(obs))

    def step(self, obs: np.ndarray, state: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        """Rows `obs` `(B, D)` and the carried state (`{"h", "c"}`, or `{"actor": ...,
        "critic": ...}` without `vf_share_layers`) -> the distribution inputs and the state
        after the step."""
        if self.critic_lstm is None:
            features, state_out = self.actor_lstm.step(obs, state)
            return self.pi(features), state_out
        features, actor_state = self.actor_lstm.step(obs, state["actor"])
        _, critic_state = self.critic_lstm.step(obs, state["critic"])
        return self.pi(features), {"actor": actor_state, "critic": critic_state}
