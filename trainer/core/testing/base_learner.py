"""RLlib's testing learner base (`BaseTestingLearner`, which RLlib's
`ray.rllib.core.testing.testing_learner` defines): the piece the testing config's module
(`trainer.core.testing.testing_learner`, which re-exports it) and its torch learner
(`trainer.core.testing.torch.bc_learner`, built on it) both import."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.core.learner import Learner


class BaseTestingLearner(Learner):
    """RLlib's testing learner base: after each update, logs every module's mean weight as
    `(module_id, "mean_weight")` (with the config's `report_mean_weights`)."""

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        if getattr(self.config, "report_mean_weights", False):
            for module_id in self.module.keys():
                parameters = self.get_parameters(self.module[module_id])  # type: ignore[attr-defined]
                mean_weight = np.mean([_numpy(weight).mean() for weight in parameters])
                self.metrics.log_value(  # type: ignore[attr-defined]
                    (module_id, "mean_weight"), mean_weight, window=1
                )


def _numpy(weight: Any) -> np.ndarray:
    """A parameter as a numpy array (a torch tensor detached and copied to the CPU)."""
    detach = getattr(weight, "detach", None)
    return detach().cpu().numpy() if callable(detach) else np.asarray(weight)


__all__ = ["BaseTestingLearner"]
