"""RLlib's API annotations (`ray.rllib.utils.annotations`) with RLlib 2.60's semantics: each
decorator gives back the decorated object itself, so `@override(Parent)` stacks with
`classmethod`, `staticmethod` and `property`; `override` refuses only a name the parent lacks;
`is_overridden` answers for the methods marked `OverrideToImplementCustomLogic`."""

from __future__ import annotations

import pytest


@pytest.mark.slow
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


def test_deprecated_warns_once_or_raises_each_time_for_classes_and_functions(hook, caplog):
    from ray._common.deprecation import DEPRECATED_VALUE, Deprecated, deprecation_warning
    from ray.rllib.utils.annotations import Deprecated as FromAnnotations

    assert FromAnnotations is Deprecated and DEPRECATED_VALUE == -1

    @Deprecated(new="new_function", error=False)
    def old_function(x: int) -> int:
        return x + 1

    @Deprecated(old="OldClass", help="Use NewClass.", error=False)
    class OldClass:
        def __init__(self, value: int):
            self.value = value

    with caplog.at_level("WARNING"):
        assert old_function(1) == 2 and old_function(2) == 3
        assert OldClass(5).value == 5 and OldClass(6).value == 6
    warnings = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert warnings == [
        "DeprecationWarning: `old_function` has been deprecated. Use `new_function` instead. "
        "This will raise an error in the future!",
        "DeprecationWarning: `OldClass` has been deprecated. Use NewClass. "
        "This will raise an error in the future!",
    ]
    assert old_function.__name__ == "old_function"

    @Deprecated(new="B.fresh", error=True)
    def gone() -> None: ...

    for _ in range(2):
        with pytest.raises(ValueError, match="`gone` has been deprecated. Use `B.fresh`"):
            gone()
    with pytest.raises(KeyError, match="`x` has been deprecated"):
        deprecation_warning("x", error=KeyError)


def test_rays_own_stability_annotations_give_back_the_object(hook):
    from ray.util.annotations import Deprecated as RayDeprecated
    from ray.util.annotations import DeveloperAPI, PublicAPI, RayDeprecationWarning

    @PublicAPI(stability="beta")
    class Beta:
        pass

    @DeveloperAPI
    def helper() -> int:
        return 4

    assert isinstance(Beta(), Beta) and helper() == 4
    assert PublicAPI(helper) is helper and DeveloperAPI()(helper) is helper
    with pytest.raises(ValueError, match="stability='gamma'"):
        PublicAPI(stability="gamma")

    @RayDeprecated(message="Use helper.", warning=True)
    def old() -> int:
        return 5

    with pytest.warns(RayDeprecationWarning, match="Use helper."):
        assert old() == 5
    assert RayDeprecated(helper) is helper
