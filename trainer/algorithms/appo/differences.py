"""APPO's rows of the deliberate-differences table (`trainer.compat.differences`): IMPALA's
shared rows (the asynchronous training step is IMPALA's)."""

from __future__ import annotations

from trainer.algorithms.impala.differences import async_differences
from trainer.algorithms.registry import Difference

#: APPO's deliberate differences (`AlgorithmEntry.differences`).
DIFFERENCES: tuple[Difference, ...] = async_differences("APPO")
