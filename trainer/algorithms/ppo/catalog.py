"""RLlib's `PPOCatalog` (`ray.rllib.algorithms.ppo.ppo_catalog`): the catalog RLlib's default
PPO module builds with, accepted here on PPO's default modules (numpy and torch) as a name the
spec carries; its model builders are not available (see `trainer.core.catalog`)."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.ppo.module import PolicyModule
from trainer.core.catalog import Catalog

#: The module of the default torch module (imported only when a config asks for torch).
_TORCH_MODULE = "trainer.algorithms.ppo.torch_module"


class PPOCatalog(Catalog):
    """RLlib's `PPOCatalog` (see the module docstring)."""

    rllib_path = "ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog"
    module_names = "PPOTorchRLModule / DefaultPPOTorchRLModule, the numpy PolicyModule"

    @classmethod
    def builds(cls, module_class: Any) -> bool:
        """PPO's default module (numpy or torch), or a subclass of the torch one (which builds
        with the same networks)."""
        if module_class is PolicyModule:
            return True
        if _TORCH_MODULE in sys.modules and isinstance(module_class, type):
            return issubclass(module_class, sys.modules[_TORCH_MODULE].DefaultPPOTorchRLModule)
        return False

    def build_actor_critic_encoder(self, framework: str) -> Any:
        raise self._not_available("build_actor_critic_encoder")

    def build_pi_head(self, framework: str) -> Any:
        raise self._not_available("build_pi_head")

    def build_vf_head(self, framework: str) -> Any:
        raise self._not_available("build_vf_head")
