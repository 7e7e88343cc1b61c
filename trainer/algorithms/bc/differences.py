"""BC's own rows of the deliberate-differences table (`trainer.compat.differences`); BC shares
MARWIL's others."""

from __future__ import annotations

from trainer.algorithms.registry import BEHAVIOUR, Difference

#: BC's own deliberate differences.
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "BC's default torch module",
        "DefaultPPOTorchRLModule (a policy and a value network; BC trains the policy only)",
        "RLlib's BC has its own DefaultBCTorchRLModule without a value head; the policy "
        "networks are alike",
        BEHAVIOUR,
    ),
)
