"""What public users' RLlib scripts (bench/user_scripts.py) stopped on, each kind fixed through
the public API: an old-stack policy class built when a module of the user's is imported,
custom model-config keys of a torch module subclass that builds its own parts, RLlib's
`LambdaDefaultDict`."""

from __future__ import annotations

import pytest


def test_an_old_stack_policy_class_is_built_at_import_and_refuses_only_when_used(hook):
    """A user's package that builds an old-stack policy class at import (RLlib's
    `build_policy_class(name=...)`) still imports; the class refuses when it is used."""
    from ray.rllib.policy.policy_template import build_policy_class
    from ray.rllib.policy.tf_policy_template import build_tf_policy

    from trainer.errors import RLlibNotAvailable

    CQLDQNTorchPolicy = build_policy_class(name="CQLDQNTorchPolicy", framework="torch")
    assert CQLDQNTorchPolicy.__name__ == "CQLDQNTorchPolicy"
    assert build_tf_policy("MyTFPolicy").__name__ == "MyTFPolicy"

    class Subclass(CQLDQNTorchPolicy):  # a user's subclass of it is fine too
        pass

    with pytest.raises(RLlibNotAvailable, match="old API stack.*CQLDQNTorchPolicy()"):
        CQLDQNTorchPolicy()
    with pytest.raises(RLlibNotAvailable, match="old API stack"):
        Subclass()
    with pytest.raises(RLlibNotAvailable, match="old API stack"):
        CQLDQNTorchPolicy.with_updates(name="Other")


def test_a_torch_module_subclass_with_its_own_parts_takes_its_own_model_config_keys():
    """RLlib does not check model-config keys: a subclass of the default torch PPO module that
    builds its own parts (its own `setup`, or a catalog of the user's) reads keys of its own.
    The default module itself still refuses an unknown key."""
    pytest.importorskip("torch")
    from trainer import PPOConfig
    from trainer.algorithms.ppo.catalog import PPOCatalog
    from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
    from trainer.core.rl_module import RLModuleSpec

    class WiderCatalog(PPOCatalog):
        """Reads a key of its own: the hidden sizes come from `width`."""

        def __init__(self, observation_space, action_space, model_config_dict):
            width = model_config_dict.pop("width")
            model_config_dict["fcnet_hiddens"] = [width]
            super().__init__(observation_space, action_space, model_config_dict)

    class OwnSetup(DefaultPPOTorchRLModule):
        def setup(self):
            self.model_config = {**self.model_config, "fcnet_hiddens": [self.model_config["w"]]}
            self.model_config.pop("w")
            super().setup()

    def build(module_class, model_config, catalog_class=None):
        spec = RLModuleSpec(
            module_class=module_class, model_config=model_config, catalog_class=catalog_class
        )
        return (
            PPOConfig()
            .environment("CartPole-v1")
            .framework("torch")
            .env_runners(num_env_runners=0)
            .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
            .rl_module(rl_module_spec=spec)
            .build()
        )

    for module_class, model_config, catalog_class, hidden in (
        (DefaultPPOTorchRLModule, {"width": 12}, WiderCatalog, 12),
        (OwnSetup, {"w": 7}, None, 7),
    ):
        algo = build(module_class, model_config, catalog_class)
        try:
            algo.train()
            sizes = [p.shape for p in algo.get_module().parameters()]
            assert (hidden, 4) in [tuple(s) for s in sizes], sizes
        finally:
            algo.stop()
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['width'\]"):
        build(DefaultPPOTorchRLModule, {"width": 12})
    # A multi-agent spec is checked at the call: the same rule.
    from trainer.core.multi_rl_module import MultiRLModuleSpec

    def multi(module_class, catalog_class=None):
        spec = RLModuleSpec(
            module_class=module_class, model_config={"width": 12}, catalog_class=catalog_class
        )
        return (
            PPOConfig()
            .framework("torch")
            .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"p": spec}))
        )

    multi(OwnSetup)
    multi(DefaultPPOTorchRLModule, WiderCatalog)
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['width'\]"):
        multi(DefaultPPOTorchRLModule)


def test_lambda_default_dict_makes_the_missing_value_from_its_key(hook):
    from ray.rllib.utils.lambda_defaultdict import LambdaDefaultDict

    made = LambdaDefaultDict(lambda key: f"policy_{key}", {"a": 1})
    assert made["a"] == 1 and made["b"] == "policy_b" and dict(made) == {"a": 1, "b": "policy_b"}
    with pytest.raises(TypeError, match="must be a callable"):
        LambdaDefaultDict(3)


def test_one_module_spec_is_every_policys_template_with_its_own_model_config_keys():
    """`rl_module(rl_module_spec=RLModuleSpec(module_class=..., model_config={own keys}))`
    with `multi_agent(policies={"shared"})`: as in RLlib, the one spec is each policy's, and
    its module gets the spec's own keys (a user's Connect Four CNN read None for them)."""
    pytest.importorskip("torch")
    from trainer import PPOConfig
    from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
    from trainer.core.rl_module import RLModuleSpec
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    class OwnKeys(DefaultPPOTorchRLModule):
        def setup(self):
            width = self.model_config["hidden_width"]  # the user's own key
            self.model_config = {
                **{k: v for k, v in self.model_config.items() if k != "hidden_width"},
                "fcnet_hiddens": [width],
            }
            super().setup()

    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(
            rl_module_spec=RLModuleSpec(module_class=OwnKeys, model_config={"hidden_width": 9})
        )
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *a, **kw: "shared")
    )
    algo = config.build()
    try:
        algo.train()
        sizes = [tuple(p.shape) for p in algo.get_module("shared").parameters()]
        assert (9, 4) in sizes, sizes
    finally:
        algo.stop()


def test_a_users_ppo_learner_written_against_rllibs_members_trains(hook):
    """A user's PPO learner as RLlib's users write it (a public league self-play project's):
    its own `build` sets `entropy_coeff_schedulers_per_module` to a `LambdaDefaultDict` of
    `Scheduler(..., framework=self.framework, device=self._device)`; its loss reads
    `self.module[module_id].unwrapped()`, `batch[Postprocessing.ADVANTAGES]` and its own
    schedulers, which the learner steps after each update."""
    pytest.importorskip("torch")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.learner.learner import Learner
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.utils.annotations import override
    from ray.rllib.utils.lambda_defaultdict import LambdaDefaultDict
    from ray.rllib.utils.schedules.scheduler import Scheduler

    class OwnBuildLearner(PPOTorchLearner):
        @override(Learner)
        def build(self) -> None:
            TorchLearner.build(self)
            self.entropy_coeff_schedulers_per_module = LambdaDefaultDict(
                lambda module_id: Scheduler(
                    fixed_value_or_schedule=[[0, 0.5], [10_000, 0.0]],
                    framework=self.framework,
                    device=self._device,
                )
            )
            self.seen = []

        @override(TorchLearner)
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            module = self.module[module_id].unwrapped()
            assert batch[Postprocessing.ADVANTAGES].shape[0] == len(fwd_out["action_dist_inputs"])
            assert hasattr(module, "encoder")
            coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
            self.seen.append(float(coeff))
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )

    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(
            learner_class=OwnBuildLearner, train_batch_size=200, minibatch_size=100, num_epochs=1
        )
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .build()
    )
    try:
        frameworks = algo.learner_group.foreach_learner(lambda learner: learner.framework)
        assert [result.get() for result in frameworks] == ["torch"]
        algo.train()
        algo.train()
        seen = algo.learner_group.foreach_learner(lambda learner: learner.seen).values()[0]
        # Two updates of two minibatches: the schedule stepped after the first update (at the
        # env steps sampled by then), as RLlib's PPOLearner steps its schedulers.
        assert seen[0] == seen[1] == 0.5 and 0.0 < seen[2] < 0.5, seen
        assert algo.get_module().encoder is not None  # the module's own parts, as in RLlib
    finally:
        algo.stop()
