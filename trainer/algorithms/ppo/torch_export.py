"""PPO's default torch module (`DefaultPPOTorchRLModule`) as the export's description
(`trainer.core.policy_description`): the actor's MLP encoder, or with `use_lstm` the LSTM
encoder's tokenizer and cell, the policy head "pi" (with its free or clipped log-std), a
categorical or a diagonal Gaussian. `DefaultPPOTorchRLModule.export_describer` names
`describe_torch`; imported only for a torch module (it imports torch)."""

from __future__ import annotations

import gymnasium as gym

from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.core.policy_description import (
    CATEGORICAL,
    DIAG_GAUSSIAN,
    DISTRIBUTION,
    ENCODER,
    HEADS,
    LSTM,
    PolicyDescription,
)
from trainer.torch_rl.export_layers import (
    encoder_layers,
    head_layers,
    lstm_layers,
    refuse,
    refuse_unless_exactly,
)


def describe_torch(module: DefaultPPOTorchRLModule, description: PolicyDescription) -> None:
    """Fills `description` with the module's actor networks; an ExportError for a subclass,
    an action space other than Discrete or Box, a CNN encoder, or the previous action and
    reward as LSTM inputs."""
    refuse_unless_exactly(module, DefaultPPOTorchRLModule)
    spec = description.spec
    discrete = isinstance(module.action_space, gym.spaces.Discrete)
    if not discrete and not isinstance(module.action_space, gym.spaces.Box):
        raise refuse(module, f"with action_space={module.action_space}")
    encoder = module.encoder
    prefix = "encoder.encoder" if encoder.shared else "encoder.actor_encoder"
    actor = encoder.encoder if encoder.shared else encoder.actor_encoder
    if module._stateful:
        if module._prev_action_dim or module._prev_reward:
            raise refuse(
                module,
                "with model_config['lstm_use_prev_action'] / ['lstm_use_prev_reward']=True "
                "(the previous action and reward as LSTM inputs)",
            )
        spec[LSTM] = lstm_layers(actor, prefix, description)
    else:
        spec[ENCODER] = encoder_layers(actor, prefix, description)
    spec[HEADS] = {"pi": head_layers(module.pi, "pi", description)}
    spec[DISTRIBUTION] = CATEGORICAL if discrete else DIAG_GAUSSIAN
