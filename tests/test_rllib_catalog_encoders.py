"""A user's PPOCatalog written against RLlib's model-config layer, as users' projects write
them: its own `ModelConfig` whose `build` makes a `TorchModel, Encoder` over a Dict observation
space, an `ActorCriticEncoderConfig` subclass set as `actor_critic_encoder_config` over the
catalog's `_encoder_config`, a replaced `vf_head_config`, and a `build_pi_head` of its own from
RLlib's pieces (`_check_if_diag_gaussian`, `required_input_dim(space=, model_config=)`,
`MLPHeadConfig`). The default PPO torch module trains through it; the EnvRunners take a
multi-agent env's float64 observations in a float32 Box, as RLlib's do."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="catalogs build torch networks")

from trainer import PPOConfig, RLModuleSpec  # noqa: E402
from trainer.algorithms.ppo.catalog import PPOCatalog, _check_if_diag_gaussian  # noqa: E402
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.model_configs import (  # noqa: E402
    ENCODER_OUT,
    ActorCriticEncoderConfig,
    Encoder,
    MLPHeadConfig,
    ModelConfig,
)
from trainer.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from trainer.launcher import finder  # noqa: E402
from trainer.torch_rl.model_config_networks import (  # noqa: E402
    TorchActorCriticEncoder,
    TorchModel,
)

OBS_SPACE = gym.spaces.Dict(
    {
        "self": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        "other": gym.spaces.Box(-1.0, 1.0, (5,), np.float32),
    }
)


class DictEncoder(TorchModel, Encoder):
    """Embeds each part of the Dict observation and sums the embeddings."""

    def __init__(self, config: Any, is_critic: bool) -> None:
        super().__init__(config)
        self.is_critic = is_critic
        self.embed = torch.nn.ModuleDict(
            {name: torch.nn.Linear(space.shape[0], config.dim) for name, space in OBS_SPACE.items()}
        )

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict:
        obs = input_dict[Columns.OBS]
        assert isinstance(obs, dict) and all(torch.is_tensor(v) for v in obs.values())
        return {ENCODER_OUT: torch.tanh(sum(self.embed[k](v) for k, v in obs.items()))}


class DictEncoderConfig(ModelConfig):
    def __init__(self, observation_space: Any, **kwargs: Any) -> None:
        self.observation_space = observation_space
        self.dim = kwargs["model_config_dict"]["embed_dim"]
        self.output_dims = (self.dim,)

    def build(self, framework: str, is_critic: bool = False) -> DictEncoder:
        return DictEncoder(self, is_critic)

    def output_dims(self) -> tuple:  # (a plain method: the instance attribute wins, as users do)
        return self.output_dims


class CriticAwareEncoder(TorchActorCriticEncoder):
    """Builds its critic encoder with `is_critic=True`, as users' encoders do."""

    def __init__(self, config: Any) -> None:
        TorchModel.__init__(self, config)
        Encoder.__init__(self, config)
        if config.shared:
            self.encoder = config.base_encoder_config.build(framework=self.framework)
        else:
            self.actor_encoder = config.base_encoder_config.build(framework=self.framework)
            self.critic_encoder = None
            if not config.inference_only:
                self.critic_encoder = config.base_encoder_config.build(
                    framework=self.framework, is_critic=True
                )


class CriticAwareEncoderConfig(ActorCriticEncoderConfig):
    def build(self, framework: str = "torch") -> CriticAwareEncoder:
        return CriticAwareEncoder(self)


class DictCatalog(PPOCatalog):
    def __init__(self, observation_space: Any, action_space: Any, model_config_dict: dict):
        super().__init__(observation_space, action_space, model_config_dict)
        self.actor_critic_encoder_config = CriticAwareEncoderConfig(
            base_encoder_config=self._encoder_config,
            shared=self._model_config_dict["vf_share_layers"],
        )
        self.vf_head_config = MLPHeadConfig(
            input_dims=self.latent_dims,
            hidden_layer_dims=[8],
            hidden_layer_activation="relu",
            output_layer_activation="linear",
            output_layer_dim=1,
        )

    @classmethod
    def _get_encoder_config(cls, observation_space: Any, **kwargs: Any) -> DictEncoderConfig:
        return DictEncoderConfig(observation_space, **kwargs)

    def build_pi_head(self, framework: str) -> Any:
        dist_cls = self.get_action_dist_cls(framework=framework)
        is_gaussian = _check_if_diag_gaussian(dist_cls, framework, no_error=True)
        self.pi_head_config = MLPHeadConfig(
            input_dims=self.latent_dims,
            hidden_layer_dims=self.pi_and_vf_head_hiddens,
            hidden_layer_activation=self.pi_and_vf_head_activation,
            output_layer_dim=dist_cls.required_input_dim(
                space=self.action_space, model_config=self._model_config_dict
            ),
            output_layer_activation="linear",
            clip_log_std=is_gaussian,
        )
        return self.pi_head_config.build(framework=framework)


class DictObsEnv(MultiAgentEnv):
    """One agent; float64 observations in a float32 Box (as many users' envs return them)."""

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.agents = self.possible_agents = ["a"]
        self.observation_spaces = {"a": OBS_SPACE}
        self.action_spaces = {"a": gym.spaces.Discrete(2)}
        self._t = 0

    def _obs(self) -> dict:
        rng = np.random.default_rng(self._t)
        return {"a": {k: rng.uniform(-1, 1, s.shape) for k, s in OBS_SPACE.items()}}

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple:
        self._t = 0
        return self._obs(), {}

    def step(self, actions: dict) -> tuple:
        self._t += 1
        done = self._t >= 20
        return (
            self._obs(),
            {"a": float(actions["a"])},
            {"a": done, "__all__": done},
            {"a": False, "__all__": False},
            {},
        )


def test_a_catalog_of_rllibs_model_config_kind_trains_the_default_ppo_module() -> None:
    config = (
        PPOConfig()
        .environment(DictObsEnv)
        .framework("torch")
        .env_runners(num_env_runners=1)
        .multi_agent(policies=["p"], policy_mapping_fn=lambda agent_id, episode, **kw: "p")
        .training(train_batch_size=80, minibatch_size=40, num_epochs=1)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=DefaultPPOTorchRLModule,
                catalog_class=DictCatalog,
                model_config={
                    "embed_dim": 6,
                    "head_fcnet_hiddens": (4,),
                    "vf_share_layers": False,
                },
            )
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        learner_module = algo.learner.learners["p"].module["p"]
        assert isinstance(learner_module.encoder, CriticAwareEncoder)
        assert learner_module.encoder.critic_encoder.is_critic
        assert learner_module.catalog.latent_dims == (6,)
        assert learner_module.vf.config.hidden_layer_dims == [8]
        before = {k: v.clone() for k, v in learner_module.state_dict().items()}
        result = algo.train()
        assert np.isfinite(result["learners"]["p"]["vf_loss"])
        after = learner_module.state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in before)
    finally:
        algo.stop()


def test_rllibs_model_config_modules_are_served_under_the_launcher() -> None:
    for module, name in (
        ("ray.rllib.core.models.torch.encoder", "TorchActorCriticEncoder"),
        ("ray.rllib.core.models.torch.base", "TorchModel"),
        ("ray.rllib.core.models.configs", "ActorCriticEncoderConfig"),
        ("ray.rllib.core.models.base", "ActorCriticEncoder"),
        ("ray.rllib.algorithms.ppo.ppo_catalog", "_check_if_diag_gaussian"),
    ):
        assert finder.resolve_rllib_name(module, name) is not None, (module, name)
