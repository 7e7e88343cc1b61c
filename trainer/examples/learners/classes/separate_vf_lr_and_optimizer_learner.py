"""RLlib's `PPOTorchLearnerWithSeparateVfOptimizer`
(`ray.rllib.examples.learners.classes.separate_vf_lr_and_optimizer_learner`): PPO with one
optimizer for the policy and one for the value function. Needs the `torch` extra."""

from __future__ import annotations

from typing import Any

import torch

from trainer.algorithms.ppo.torch_learner import PPOTorchLearner


class PPOTorchLearnerWithSeparateVfOptimizer(PPOTorchLearner):
    """PPO's torch learner with two Adam optimizers: `optim_for_pi` over the actor encoder and
    the policy head (at the config's `lr`), `optim_for_vf` over the critic encoder and the value
    head (at `learner_config_dict["lr_vf"]`, else `lr`). PPO's loss stays as it is: with no
    layer shared, each part of it only reaches its own optimizer's parameters. The module must
    be the default PPO module without `vf_share_layers`."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        config = config or self.config
        # RLlib's `self.module[module_id]`: this learner's one module is `self.rl_module`.
        module = self.rl_module
        assert (
            hasattr(module, "pi")
            and hasattr(module, "vf")
            and hasattr(module, "encoder")
            and hasattr(module.encoder, "actor_encoder")
            and hasattr(module.encoder, "critic_encoder")
        ), "the module needs separate actor and critic networks (pi, vf, encoder.*_encoder)"
        assert config.model_config["vf_share_layers"] is False

        pi_params = self.get_parameters(module.encoder.actor_encoder) + self.get_parameters(
            module.pi
        )
        self.register_optimizer(
            module_id=module_id,
            optimizer_name="optim_for_pi",
            optimizer=torch.optim.Adam(params=pi_params),
            params=pi_params,
            lr_or_lr_schedule=config.lr,
        )
        vf_params = self.get_parameters(module.encoder.critic_encoder) + self.get_parameters(
            module.vf
        )
        self.register_optimizer(
            module_id=module_id,
            optimizer_name="optim_for_vf",
            optimizer=torch.optim.Adam(params=vf_params),
            params=vf_params,
            lr_or_lr_schedule=config.learner_config_dict.get("lr_vf", config.lr),
        )
