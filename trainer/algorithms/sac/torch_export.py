"""SAC's default torch module (`DefaultSACTorchRLModule`) as the export's description
(`trainer.core.policy_description`): the policy's MLP encoder and head "pi" (the critics are
not part of acting), a tanh-squashed Gaussian for Box actions or a categorical for Discrete
ones. `DefaultSACTorchRLModule.export_describer` names `describe_torch`; imported only for a
torch module (it imports torch)."""

from __future__ import annotations

from trainer.algorithms.sac.torch_module import DefaultSACTorchRLModule
from trainer.core.policy_description import (
    CATEGORICAL,
    DISTRIBUTION,
    ENCODER,
    HEADS,
    SQUASHED_GAUSSIAN,
    PolicyDescription,
)
from trainer.torch_rl.export_layers import encoder_layers, head_layers, refuse_unless_exactly


def describe_torch(module: DefaultSACTorchRLModule, description: PolicyDescription) -> None:
    """Fills `description` with the policy's networks; an ExportError for a subclass (CQL's
    and IQL's modules, a user's) or an encoder other than an MLP."""
    refuse_unless_exactly(module, DefaultSACTorchRLModule)
    spec = description.spec
    spec[ENCODER] = encoder_layers(module.pi_encoder, "pi_encoder", description)
    spec[HEADS] = {"pi": head_layers(module.pi, "pi", description)}
    spec[DISTRIBUTION] = SQUASHED_GAUSSIAN if module.continuous else CATEGORICAL
