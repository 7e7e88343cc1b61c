"""RLlib's testing learner and config (`ray.rllib.core.testing.testing_learner`): the config its
Learner tests build learners from, and the learner base that reports each module's mean weight.

`BaseTestingAlgorithmConfig` is a torch config (RLlib's default framework; this project's is
numpy): `build_learner(env=...)` gives a `BCTorchLearner` over a MultiRLModule of one
`DiscreteBCTorchModule` (`fcnet_hiddens=[32]`). Needs the `torch` extra to build a learner.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.capabilities import TORCH
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec
from trainer.core.testing.base_learner import BaseTestingLearner
from trainer.errors import UnsupportedValue
from trainer.torch_rl import require_torch

#: The classes of the torch testing modules (named by path: they import torch).
BC_LEARNER = "trainer.core.testing.torch.bc_learner"
BC_MODULE = "trainer.core.testing.torch.bc_module"


class BaseTestingAlgorithmConfig(AlgorithmConfig):
    """RLlib's testing config: torch by default, `BCTorchLearner` over `DiscreteBCTorchModule`
    (one hidden layer of 32 units); `report_mean_weights` makes the learner log each module's
    mean weight after every update."""

    #: A test setting to activate metrics on mean weights (RLlib's class attribute).
    report_mean_weights: bool = True
    _DEFAULT_OVERRIDES = {"framework_str": "torch"}

    def get_default_learner_class(self) -> type:
        if self.framework_str == "torch":
            require_torch(f"{type(self).__name__}.get_default_learner_class()")
            from trainer.core.testing.torch.bc_learner import BCTorchLearner

            return BCTorchLearner
        raise UnsupportedValue(
            f"{type(self).__name__}: unsupported framework {self.framework_str!r}: RLlib's "
            "testing learner is torch's (framework('torch'))",
            TORCH,
        )

    def get_default_rl_module_spec(self) -> Any:
        if self.framework_str != "torch":
            raise UnsupportedValue(
                f"{type(self).__name__}: unsupported framework {self.framework_str!r}: RLlib's "
                "testing module is torch's (framework('torch'))",
                "torch",
            )
        require_torch(f"{type(self).__name__}.get_default_rl_module_spec()")
        from trainer.core.testing.torch.bc_module import DiscreteBCTorchModule

        spec = RLModuleSpec(
            module_class=DiscreteBCTorchModule, model_config={"fcnet_hiddens": [32]}
        )
        if self.is_multi_agent:
            return MultiRLModuleSpec(
                multi_rl_module_class=MultiRLModule, rl_module_specs={DEFAULT_MODULE_ID: spec}
            )
        return spec


__all__ = ["BaseTestingAlgorithmConfig", "BaseTestingLearner"]
