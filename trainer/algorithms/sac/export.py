"""SAC's numpy module (`SACModule`) as the export's description
(`trainer.core.policy_description`): the policy's encoder and head "pi" (the critics are not
part of acting), a tanh-squashed Gaussian for Box actions or a categorical for Discrete ones.
`SACModule.export_describer` names `describe_numpy`; subclasses that keep its forward (IQL's
module) export alike."""

from __future__ import annotations

from trainer.algorithms.sac.sac_module import SACModule
from trainer.core.policy_description import (
    CATEGORICAL,
    DISTRIBUTION,
    ENCODER,
    HEADS,
    SQUASHED_GAUSSIAN,
    ExportError,
    PolicyDescription,
    numpy_layers,
    unexpressible,
)


def describe_numpy(module: SACModule, description: PolicyDescription) -> None:
    """Fills `description` with the policy's networks; an ExportError for a subclass that
    overrides the forward (`dist_inputs`)."""
    if type(module).dist_inputs is not SACModule.dist_inputs:
        raise ExportError(unexpressible(module))
    spec = description.spec
    spec[ENCODER] = numpy_layers(module.pi_encoder, "pi_encoder", description, activated=True)
    spec[HEADS] = {"pi": numpy_layers(module.pi, "pi", description, activated=False)}
    spec[DISTRIBUTION] = SQUASHED_GAUSSIAN if module.continuous else CATEGORICAL
