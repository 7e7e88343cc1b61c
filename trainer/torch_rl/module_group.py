"""`TorchModuleGroup`: the TorchRLModules of a `MultiRLModule` as one torch module, for a
learner that trains them all at once (RLlib's learner over a whole MultiRLModule).

    MultiRLModule {"shared_encoder": enc, "p0": head0, "p1": head1}
      -> TorchModuleGroup: their parameters as one torch module ("p0._pi_head.0.weight", ...)
      -> forward_train({"p0": batch0, "p1": batch1}) is the container's own forward_train:
         a subclass that runs its modules together (a shared encoder before each policy)
         trains as it acts

A `TorchLearner` given a `MultiRLModule` trains it through this group: one backward pass over
the summed losses of the modules in the batch, each registered optimizer stepping its own
parameters (by default one Adam per module; RLlib's shared-encoder learner registers one over
all of them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from trainer.core.multi_rl_module import MultiRLModule
from trainer.torch_rl.rl_module import TorchRLModule


class TorchModuleGroup(nn.Module):
    """The TorchRLModules of `multi_rl_module` as one torch module (see the module docstring):
    each is a submodule under its module id, so parameter and state names are
    `"<module_id>.<the module's own name>"`."""

    inference_only = False
    framework = "torch"

    def __init__(self, multi_rl_module: MultiRLModule) -> None:
        super().__init__()
        if multi_rl_module.inference_only:
            raise ValueError(
                "a learner trains the full modules: the MultiRLModule is inference-only "
                "(inference_only=True)"
            )
        not_torch = {
            module_id: type(module).__name__
            for module_id, module in multi_rl_module.items()
            if not isinstance(module, TorchRLModule)
        }
        if not_torch:
            raise TypeError(
                f"a torch learner trains TorchRLModules; the MultiRLModule's modules {not_torch} "
                "are not"
            )
        #: The container itself (its forward passes run the modules).
        self.multi_rl_module = multi_rl_module
        for module_id, module in multi_rl_module.items():
            self.add_module(str(module_id), module)

    def forward_train(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        """The container's `forward_train`, every module in train mode:
        `{module_id: batch} -> {module_id: output}`."""
        self.train()
        return self.multi_rl_module.forward_train(batch, **kwargs)

    def get_state(self) -> dict[str, np.ndarray]:
        """Every module's weights as copies, by `"<module_id>.<key>"`."""
        return {
            key: value.detach().cpu().numpy().copy() for key, value in self.state_dict().items()
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads `state` (`get_state()`'s keys, arrays or tensors; all of them)."""
        tensors = {
            key: value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
            for key, value in state.items()
        }
        self.load_state_dict(tensors, strict=True)


def build_seeded(spec: Any, seed: int | None) -> MultiRLModule:
    """`spec.build()` (a MultiRLModuleSpec), its torch weights initialised from `seed` (None:
    torch's global generator as it is) without moving torch's global generator."""
    if seed is None:
        return spec.build()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return spec.build()
