"""DQN's default torch module (`DefaultDQNTorchRLModule`) as the export's description
(`trainer.core.policy_description`): its MLP encoder and its advantage head "af" as the Q
head "q", or with `dueling=True` the "advantage" and "value" ("vf") streams.
`DefaultDQNTorchRLModule.export_describer` names `describe_torch`; imported only for a torch
module (it imports torch)."""

from __future__ import annotations

from trainer.algorithms.dqn.export import refuse_distributional
from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule
from trainer.core.policy_description import (
    DISTRIBUTION,
    ENCODER,
    HEADS,
    Q_VALUES,
    PolicyDescription,
)
from trainer.torch_rl.export_layers import encoder_layers, head_layers, refuse_unless_exactly


def describe_torch(module: DefaultDQNTorchRLModule, description: PolicyDescription) -> None:
    """Fills `description` with the module's Q-network (not its target); an ExportError for a
    subclass or an encoder other than an MLP, an `UnsupportedExport` for `num_atoms` > 1."""
    refuse_unless_exactly(module, DefaultDQNTorchRLModule)
    refuse_distributional(module.num_atoms)
    spec = description.spec
    spec[ENCODER] = encoder_layers(module.encoder, "encoder", description)
    if module.uses_dueling:
        spec[HEADS] = {
            "advantage": head_layers(module.af, "af", description),
            "value": head_layers(module.vf, "vf", description),
        }
    else:
        spec[HEADS] = {"q": head_layers(module.af, "af", description)}
    spec[DISTRIBUTION] = Q_VALUES
