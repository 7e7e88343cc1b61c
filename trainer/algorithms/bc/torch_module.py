"""RLlib's BC torch module (`ray.rllib.algorithms.bc.torch.default_bc_torch_rl_module`), for
scripts that name it in an `RLModuleSpec`: PPO's default torch module
(`trainer.algorithms.ppo.torch_module`), whose encoder and policy head BC trains; its value
head, which RLlib's BC module lacks, stays as built (BC's loss does not read it). RLlib's BC
checkpoints are read into PPO's module (`trainer.algorithms.bc`'s module reads)."""

from __future__ import annotations

from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule

__all__ = ["DefaultBCTorchRLModule"]


class DefaultBCTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's `DefaultBCTorchRLModule`: PPO's torch module (see the module docstring); its
    EnvRunners' forward pass runs in torch (the numpy one is PPO's own class's)."""
