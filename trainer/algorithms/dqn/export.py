"""DQN's numpy module (`QModule`) as the export's description
(`trainer.core.policy_description`): its encoder and its Q head "q", or with `dueling=True`
its "advantage" and "value" streams; the Q-values' greedy rule is argmax. A distributional
module (`num_atoms` > 1) is refused (`refuse_distributional`).
`QModule.export_describer` names `describe_numpy`."""

from __future__ import annotations

from trainer.algorithms.dqn.capabilities import DISTRIBUTIONAL_EXPORT
from trainer.algorithms.dqn.q_module import QModule
from trainer.core.policy_description import (
    DISTRIBUTION,
    ENCODER,
    HEADS,
    Q_VALUES,
    ExportError,
    PolicyDescription,
    UnsupportedExport,
    numpy_encoder_layers,
    numpy_layers,
    unexpressible,
)


def refuse_distributional(num_atoms: int) -> None:
    """An `UnsupportedExport` (an ExportError and a NotSupported) for a distributional
    Q-network (`num_atoms` > 1): the formats express expected Q-values only."""
    if num_atoms > 1:
        raise UnsupportedExport(
            f"num_atoms={num_atoms}: the ONNX and numpy exports express a Q-head of one "
            "Q-value per action (num_atoms=1) only; allowed: num_atoms=1, or export this "
            "module with format='rllib' (RLlib's module checkpoint, which holds its "
            "distributional head)",
            DISTRIBUTIONAL_EXPORT,
        )


def describe_numpy(module: QModule, description: PolicyDescription) -> None:
    """Fills `description` with the module's networks; an ExportError for a subclass that
    overrides the forward (`dist_inputs`), an `UnsupportedExport` for `num_atoms` > 1."""
    if type(module).dist_inputs is not QModule.dist_inputs:
        raise ExportError(unexpressible(module))
    refuse_distributional(module.num_atoms)
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
