"""RLlib's older name of the default torch PPO module
(`ray.rllib.algorithms.ppo.torch.ppo_torch_rl_module.PPOTorchRLModule`): in RLlib 2.60 it is
`DefaultPPOTorchRLModule` itself, kept for code written against it."""

from trainer.torch_rl.default_ppo_module import DefaultPPOTorchRLModule

PPOTorchRLModule = DefaultPPOTorchRLModule

__all__ = ["PPOTorchRLModule"]
