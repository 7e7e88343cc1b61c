"""RLlib's API annotations (`ray.rllib.utils.annotations`) with RLlib 2.60's semantics: each
decorator gives back the decorated object itself, so `@override(Parent)` stacks with
`classmethod`, `staticmethod` and `property`; `override` refuses only a name the parent lacks;
`is_overridden` answers for the methods marked `OverrideToImplementCustomLogic`."""

from __future__ import annotations

import pytest


def test_a_custom_algorithm_written_as_rllibs_docs_write_it_builds_and_trains(hook):
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.ppo import PPO, PPOConfig
    from ray.rllib.utils.annotations import override

    class MyPPO(PPO):
        @classmethod
        @override(Algorithm)
        def get_default_config(cls) -> PPOConfig:
            return PPOConfig(algo_class=cls).training(lr=0.0007)

        @override(PPO)
        def training_step(self) -> None:
            self.steps_seen = getattr(self, "steps_seen", 0) + 1
            return super().training_step()

    config = MyPPO.get_default_config()
    assert isinstance(config, PPOConfig) and config.algo_class is MyPPO and config.lr == 0.0007
    config = (
        config.environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    )
    algo = config.build()
    try:
        assert type(algo) is MyPPO
        result = algo.train()
        assert algo.steps_seen == 1 and result["training_iteration"] == 1
    finally:
        algo.stop()


def test_override_gives_back_the_object_and_stacks_either_way_round(hook):
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.utils.annotations import override

    def forward_inference(self, batch, **kwargs):
        return batch

    assert override(RLModule)(forward_inference) is forward_inference

    class Base:
        def method(self) -> str:
            return "base"

        @staticmethod
        def helper() -> int:
            return 1

        @classmethod
        def make(cls) -> str:
            return "base"

        @property
        def size(self) -> int:
            return 1

    class Child(Base):
        @override(Base)
        @staticmethod
        def helper() -> int:
            return 2

        @override(Base)
        @classmethod
        def make(cls) -> str:
            return cls.__name__

        @property
        @override(Base)
        def size(self) -> int:
            return 3

        @override(Base)
        @property
        def method(self) -> str:  # a property over a method: RLlib checks only the name
            return "child"

    assert Child.helper() == 2 and Child.make() == "Child"
    assert Child().size == 3 and Child().method == "child"
    assert isinstance(vars(Child)["helper"], staticmethod)


def test_override_refuses_only_a_name_the_parent_lacks(hook):
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.utils.annotations import override

    with pytest.raises(NameError, match="Algorithm has no method 'trian'"):

        class Typo(Algorithm):
            @override(Algorithm)
            def trian(self) -> None: ...

    class Unrelated:  # RLlib does not check the subclass relation either
        @override(Algorithm)
        def train(self) -> str:
            return "unrelated"

    assert Unrelated().train() == "unrelated"
    with pytest.raises(TypeError, match="decorates a function"):
        override(Algorithm)(42)


def test_stability_annotations_give_back_the_object_and_is_overridden_reads_the_mark(hook):
    from ray.rllib.utils.annotations import (
        DeveloperAPI,
        ExperimentalAPI,
        OldAPIStack,
        OverrideToImplementCustomLogic,
        OverrideToImplementCustomLogic_CallToSuperRecommended,
        PublicAPI,
        is_overridden,
    )

    for mark in (PublicAPI, DeveloperAPI, ExperimentalAPI, OldAPIStack):

        @mark
        class Marked:
            pass

        assert isinstance(Marked, type) and mark(len) is len

    class Base:
        @OverrideToImplementCustomLogic
        def loss(self) -> str:
            return "base"

        @OverrideToImplementCustomLogic_CallToSuperRecommended
        def setup(self) -> str:
            return "base"

        def plain(self) -> None: ...

    class Child(Base):
        def loss(self) -> str:
            return "child"

    assert Base().loss() == "base" and Base().setup() == "base"
    assert not is_overridden(Base().loss) and not is_overridden(Child().setup)
    assert is_overridden(Child().loss)
    assert is_overridden(Base().plain)  # unmarked: True, as in RLlib
