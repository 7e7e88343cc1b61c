"""PPO's numpy module (`PolicyModule`) as the export's description
(`trainer.core.policy_description`): its encoder, its policy head "pi", a categorical or a
diagonal Gaussian (with its free log-std). `PolicyModule.export_describer` names
`describe_numpy`; a subclass that keeps its forward (a user's) exports alike."""

from __future__ import annotations

from trainer.algorithms.ppo.module import PolicyModule
from trainer.core.nn import Categorical, DiagGaussian
from trainer.core.policy_description import (
    CATEGORICAL,
    CLIP,
    DIAG_GAUSSIAN,
    DISTRIBUTION,
    ENCODER,
    FREE,
    HEADS,
    LOG_STD,
    ExportError,
    PolicyDescription,
    numpy_encoder_layers,
    numpy_layers,
    unexpressible,
)


def describe_numpy(module: PolicyModule, description: PolicyDescription) -> None:
    """Fills `description` with the module's networks; an ExportError for a subclass that
    overrides the forward (`dist_inputs`) or a multi-action distribution."""
    if type(module).dist_inputs is not PolicyModule.dist_inputs:
        raise ExportError(unexpressible(module))
    if module.dist not in (Categorical, DiagGaussian):
        raise ExportError(unexpressible(module, f"with action space {module.action_space}"))
    spec = description.spec
    spec[ENCODER] = numpy_encoder_layers(module.encoder, description)
    spec[HEADS] = {"pi": numpy_layers(module.pi, "pi", description, activated=False)}
    spec[DISTRIBUTION] = CATEGORICAL if module.dist is Categorical else DIAG_GAUSSIAN
    if module.log_std is not None:
        spec[LOG_STD] = {FREE: description.add("pi.log_std", module.log_std), CLIP: None}
