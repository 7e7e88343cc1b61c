"""RLlib's `DifferentiableAlgorithmConfig` (`ray.rllib.algorithms.algorithm_config`): the
config of a meta learner (`trainer.torch_rl.meta_learning.TorchMetaLearner`), whose
`learners(differentiable_learner_configs=[...])` names the differentiable learners of its
nested updates (`DifferentiableLearnerConfig`s)."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.config.base import NotProvided

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The meta learner's import path (it needs torch: imported where it is used).
META_LEARNER = "trainer.torch_rl.meta_learning.TorchMetaLearner"


class DifferentiableAlgorithmConfig(AlgorithmConfig):
    """An AlgorithmConfig with `differentiable_learner_configs` (default none: a meta
    learner without nested updates). RLlib's MAML example sets it, `lr`,
    `train_batch_size` and `minibatch_size`, and builds its `TorchMetaLearner` from it."""

    def __init__(self, algo_class: Any = None):
        super().__init__(algo_class=algo_class)
        #: The `DifferentiableLearnerConfig`s of the meta learner's nested updates, in order.
        self.differentiable_learner_configs: list[Any] = []

    def learners(
        self, *, differentiable_learner_configs: Any = NotProvided, **settings: Any
    ) -> Self:
        """RLlib's: `learners()`'s settings, and `differentiable_learner_configs` (a list of
        `DifferentiableLearnerConfig`s)."""
        super().learners(**settings)
        if differentiable_learner_configs is not NotProvided:
            configs = differentiable_learner_configs
            if not isinstance(configs, list) or not all(
                hasattr(entry, "learner_class") and hasattr(entry, "lr") for entry in configs
            ):
                raise ValueError(
                    "learners(differentiable_learner_configs="
                    f"{differentiable_learner_configs!r}): a list of "
                    "DifferentiableLearnerConfig instances"
                )
            self.differentiable_learner_configs = list(configs)
        return self

    def get_differentiable_learner_classes(self) -> list[Any]:
        """The classes of the meta learner's differentiable learners (of
        `get_differentiable_learner_configs()`, in order)."""
        return [entry.learner_class for entry in self.get_differentiable_learner_configs()]

    def get_differentiable_learner_configs(self) -> list[Any]:
        """The `DifferentiableLearnerConfig`s of the meta learner's nested updates (RLlib's
        hook to override: by default `differentiable_learner_configs`)."""
        return list(self.differentiable_learner_configs)

    def get_default_learner_class(self) -> Any:
        """The meta learner (RLlib's `TorchMetaLearner`), by import path."""
        return META_LEARNER
