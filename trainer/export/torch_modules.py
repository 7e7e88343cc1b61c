"""The torch modules' side of the export: a torch module is described by the function its
class names (`export_describer`, each default module's in its algorithm's folder, built from
`trainer.torch_rl.export_layers`), its parameters read on the CPU. Imported only for torch
modules, so an export of a numpy module never imports torch."""

from __future__ import annotations

from torch import nn

from trainer.core.policy_description import PolicyDescription
from trainer.export.describers import Describer
from trainer.torch_rl.export_layers import NOT_A_DEFAULT_MODULE, refuse


def describe_torch_module(
    module: nn.Module, describer: Describer | None, description: PolicyDescription
) -> None:
    """Fills `description` with the networks of `module`, a default torch module, by
    `describer` (its class's); an ExportError for any other module (a subclass, a user's, a
    CNN encoder, LSTM inputs of previous actions)."""
    if any(p.device.type != "cpu" for p in module.parameters()):
        module = module.to("cpu")
    if describer is None:
        raise refuse(module, NOT_A_DEFAULT_MODULE)
    describer(module, description)
