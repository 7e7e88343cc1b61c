"""The algorithms, one folder each (`trainer.algorithms.ppo`, `trainer.algorithms.dqn`),
registered in `trainer.algorithms.registry` and imported only when asked for."""

from __future__ import annotations

from trainer.algorithms.registry import (
    ALGORITHM_NAMES,
    OTHER_RLLIB_ALGORITHM_NAMES,
    get_trainable_cls,
)

__all__ = ["ALGORITHM_NAMES", "OTHER_RLLIB_ALGORITHM_NAMES", "get_trainable_cls"]
