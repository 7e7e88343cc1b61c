"""RLlib 2.60's classes, measured whole: every member RLlib defines on a class of its new API
stack (public and protected, read from the installed wheel into
`trainer/util/rllib_2_60_members.json`) is on this project's counterpart, of a compatible kind
and signature, and found without a refusal at lookup; or it stands in the gap table
(`trainer.compat.rllib_member_gaps`) with why. A member RLlib has that cannot work here is a
method that raises a typed `UnsupportedCall` when called (`trainer.util.rllib_members.refuse`).

    python -m trainer.compat.rllib_members_check          # counts, and findings not in the table
"""

from __future__ import annotations

import inspect

import pytest

from trainer.compat import rllib_members_check as check
from trainer.compat.rllib_member_gaps import GAPS
from trainer.compat.rllib_members_record import main
from trainer.errors import UnsupportedCall
from trainer.util.rllib_members import (
    METHOD,
    RLlibMember,
    is_refusal,
    parse_member,
    refuse,
    rllib_members,
)


@pytest.fixture(scope="module")
def measurement() -> check.Measurement:
    return check.measure()


@pytest.mark.slow
@pytest.mark.ray
def test_the_record_is_the_installed_wheels() -> None:
    pytest.importorskip("ray", reason="reads the Ray 2.60 wheel's source (the test extra)")
    assert main(["--check"]) == 0, "run: python -m trainer.compat.rllib_members_record"


def test_the_record_holds_rllibs_new_stack_classes() -> None:
    record = rllib_members()
    assert record.ray_version == "2.60.0"
    classes = set(record.classes())
    assert len(classes) > 450
    for name in (
        "ray.rllib.core.learner.learner.Learner",
        "ray.rllib.algorithms.algorithm.Algorithm",
        "ray.rllib.env.single_agent_env_runner.SingleAgentEnvRunner",
        "ray.rllib.core.rl_module.rl_module.RLModule",
    ):
        assert name in classes, name
    assert not any(c.startswith(("ray.rllib.policy.", "ray.rllib.evaluation.")) for c in classes)
    assert "ray.rllib.policy.policy.Policy" in record.old_stack
    # Bases outside RLlib are recorded for what they give their subclasses.
    assert "ray.tune.trainable.trainable.Trainable" in record.mro(
        "ray.rllib.algorithms.ppo.ppo.PPO"
    )
    algorithm = record.members("ray.rllib.algorithms.ppo.ppo.PPO")
    assert algorithm["_create_local_replay_buffer_if_necessary"].owner.endswith(".Algorithm")
    assert algorithm["train"].owner == "ray.tune.trainable.trainable.Trainable"
    build = record.members("ray.rllib.core.learner.learner.Learner")["build"]
    assert build.kind == METHOD and build.parameters == ()
    assert build.hook  # RLlib marks it @OverrideToImplementCustomLogic_CallToSuperRecommended


def test_every_member_is_here_or_in_the_gap_table(measurement: check.Measurement) -> None:
    assert measurement.classes > 200
    open_findings = sorted(
        {f.line() for f in measurement.findings if check.gap_reason(f.key) is None}
    )
    assert not open_findings, (
        f"{len(open_findings)} members of RLlib's classes missing or different here and in "
        "neither trainer/compat/rllib_member_gaps.py nor the deliberate-differences table:\n"
        + "\n".join(open_findings[:80])
    )


def test_the_gap_table_names_only_gaps(measurement: check.Measurement) -> None:
    """A row whose member is now here (and fits) goes: the table only shrinks honestly."""
    found = {f.key for f in measurement.findings}
    stale = sorted(set(GAPS) - found)
    assert not stale, "no longer a gap (remove the row):\n" + "\n".join(stale)
    assert all(why.strip() for why in GAPS.values())


#: The protected hooks users' scripts override (`@override(Learner) def build`, ...), each
#: called here where RLlib calls it (tests/test_rllib_protected_hooks.py shows the calls).
USER_HOOKS = (
    ("ray.rllib.algorithms.ppo.torch.ppo_torch_learner.PPOTorchLearner", "build"),
    ("ray.rllib.algorithms.ppo.torch.ppo_torch_learner.PPOTorchLearner", "_update"),
    ("ray.rllib.algorithms.ppo.torch.ppo_torch_learner.PPOTorchLearner", "_get_optimizer_lr"),
    ("ray.rllib.algorithms.sac.sac.SAC", "setup"),
    ("ray.rllib.algorithms.sac.sac.SAC", "_create_local_replay_buffer_if_necessary"),
    ("ray.rllib.algorithms.ppo.ppo.PPO", "_run_one_training_iteration"),
    ("ray.rllib.env.single_agent_env_runner.SingleAgentEnvRunner", "_sample"),
    ("ray.rllib.env.multi_agent_env_runner.MultiAgentEnvRunner", "_sample"),
)


def test_the_hooks_users_override_are_here(measurement: check.Measurement) -> None:
    for rllib_class, name in USER_HOOKS:
        member = rllib_members().members(rllib_class)[name]
        problems = [
            f.line()
            for f in measurement.findings
            if f.rllib_class == rllib_class and f.key == member.key
        ]
        assert not problems, problems
        assert not is_refusal(inspect.getattr_static(check.counterpart(rllib_class), name))


@pytest.mark.slow
@pytest.mark.ray
def test_the_protected_members_rllibs_examples_and_tests_override_are_here(
    measurement: check.Measurement,
) -> None:
    pytest.importorskip("ray", reason="reads the Ray 2.60 wheel's source (the test extra)")
    overridden = check.protected_overrides()
    assert {"RLModule._forward", "RLModule._forward_train"} <= set(overridden)
    missing = sorted({f.line() for f in measurement.findings if f.key in overridden})
    assert not missing, "\n".join(missing)


def test_every_refusal_raises_a_typed_error_when_called(measurement: check.Measurement) -> None:
    """The members that cannot work here are there, and refuse when called, not before."""
    refusals = 0
    for rllib_class in rllib_members().classes():
        here = check.counterpart(rllib_class)
        if not isinstance(here, type) or check.finder.is_placeholder(here):
            continue
        for name in rllib_members().members(rllib_class):
            found = inspect.getattr_static(here, name, None)
            function = getattr(found, "__func__", found)
            if not is_refusal(function):
                continue
            refusals += 1
            with pytest.raises(UnsupportedCall, match=name):
                function()
    assert refusals > 20


def test_the_check_sees_what_is_missing_or_does_not_fit() -> None:
    """The checker is not blind: a class missing a member, with one of another kind, or with
    a signature RLlib's callers cannot call is a finding."""

    class Here:
        def renamed(self, other: int) -> None: ...

        def required(self, a: int, b: int, *, c: int) -> None: ...

        @property
        def prop(self) -> int:
            return 1

        @classmethod
        def on_class(cls, a: int = 0) -> None: ...

        def on_instance(self) -> None: ...

    def member(name: str, text: str) -> RLlibMember:
        return parse_member(name, "ray.rllib.x.Here", text)

    def problem(name: str, text: str) -> str | None:
        result = check.check_member(Here, member(name, text), set())
        return None if result is None else result[0]

    assert problem("absent", "m()") == check.MISSING
    assert problem("renamed", "m(value)") == check.SIGNATURE
    assert problem("required", "m(a, b=)") == check.SIGNATURE
    assert problem("required", "m(a, b, *, c)") is None
    assert problem("prop", "m()") == check.KIND
    assert problem("on_instance", "c()") == check.KIND
    assert problem("on_class", "c(a=)") is None
    assert problem("on_class", "s(a=)") is None


def test_a_refusal_has_rllibs_signature_and_refuses_only_when_called() -> None:
    @refuse("ray.rllib.algorithms.algorithm.Algorithm", "a capability", "a reason", "get_policy")
    class Here:
        pass

    assert is_refusal(Here.get_policy)
    parameters = list(inspect.signature(Here.get_policy).parameters)
    assert parameters == ["self", "policy_id"]
    with pytest.raises(UnsupportedCall, match=r"Algorithm\.get_policy.*a reason") as raised:
        Here().get_policy()
    assert raised.value.capability == "a capability"
    with pytest.raises(KeyError, match="no_such_member"):
        refuse("ray.rllib.algorithms.algorithm.Algorithm", "c", "w", "no_such_member")

    class Working:
        def get_policy(self) -> None: ...

    with pytest.raises(TypeError, match="has get_policy already"):
        refuse("ray.rllib.algorithms.algorithm.Algorithm", "c", "w", "get_policy")(Working)
