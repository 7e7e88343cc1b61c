"""DQN's numpy module (`QModule`) as the export's description
(`trainer.core.policy_description`): its encoder and its Q head "q", or with `dueling=True`
its "advantage" and "value" streams; the Q-values' greedy rule is argmax.
`QModule.export_describer` names `describe_numpy`."""

from __future__ import annotations

from trainer.algorithms.dqn.q_module import QModule
from trainer.core.policy_description import (
    DISTRIBUTION,
    ENCODER,
    HEADS,
    Q_VALUES,
    ExportError,
    PolicyDescription,
    numpy_encoder_layers,
    numpy_layers,
    unexpressible,
)


def describe_numpy(module: QModule, description: PolicyDescription) -> None:
    """Fills `description` with the module's networks; an ExportError for a subclass that
    overrides the forward (`dist_inputs`)."""
    if type(module).dist_inputs is not QModule.dist_inputs:
        raise ExportError(unexpressible(module))
    spec = description.spec
    spec[ENCODER] = numpy_encoder_layers(module.encoder, description)
    if module.q is not None:
        spec[HEADS] = {"q": numpy_layers(module.q, "q", description, activated=False)}
    else:
        advantage, value = module.advantage, module.value
        assert advantage is not None and value is not None, "a dueling module's heads"
        spec[HEADS] = {
            "advantage": numpy_layers(advantage, "advantage", description, activated=False),
            "value": numpy_layers(value, "value", description, activated=False),
        }
    spec[DISTRIBUTION] = Q_VALUES
