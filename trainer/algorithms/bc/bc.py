"""BC, behaviour cloning: the `BC` algorithm, RLlib 2.60's MARWIL with `beta=0` (MARWIL's
offline training step, learners and loss), and `BCConfig` (from `config.py`; RLlib's
`ray.rllib.algorithms.bc.bc` has both)."""

from __future__ import annotations

from trainer.algorithms.bc.config import BCConfig
from trainer.algorithms.marwil.marwil import MARWIL


class BC(MARWIL):
    """RLlib's BC: MARWIL's training step and learner, on a `BCConfig` (beta = 0)."""

    config: BCConfig

    @classmethod
    def get_default_config(cls) -> BCConfig:
        return BCConfig()


__all__ = ["BC", "BCConfig"]
