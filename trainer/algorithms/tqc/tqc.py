"""TQC: the `TQC` algorithm (RLlib 2.60's `ray.rllib.algorithms.tqc.TQC`; `TQCConfig`, from
`config.py`, is importable from here as from RLlib's module).

SAC's training step (the off-policy loop of `trainer.algorithms.off_policy`) with TQC's
learner: the losses are in `loss.py` (numpy) and `torch_loss.py` (torch)."""

from __future__ import annotations

from trainer.algorithms.sac.sac import SAC
from trainer.algorithms.tqc.config import TQCConfig


class TQC(SAC):
    """Truncated Quantile Critics (RLlib's `ray.rllib.algorithms.tqc.TQC`): SAC with
    distributional critics whose target drops its largest quantiles."""

    config: TQCConfig

    @classmethod
    def get_default_config(cls) -> TQCConfig:
        return TQCConfig()


__all__ = ["TQC", "TQCConfig"]
