"""The restart policy as a pure function: every rule in milliseconds, without processes (the
end-to-end cases stay in test_fault_tolerance*.py)."""

import pytest

from trainer.runners.restart_policy import (
    NO_PROGRESS_LIMIT,
    Decision,
    Failure,
    RunnerRecord,
    Settings,
    decide,
)

DEFAULTS = Settings(env_name="CartPole-v1")


def run(failures, settings=DEFAULTS):
    """Feeds failures one after another (each restart counted); returns the decisions."""
    record, decisions = RunnerRecord(), []
    for failure in failures:
        decision = decide(failure, record, settings)
        decisions.append(decision)
        if not decision.restart:
            break
        record = RunnerRecord(
            decision.record.restarts + 1, decision.record.failures_without_progress
        )
    return decisions


def test_restarts_off_gives_up_at_once():
    (decision,) = run([Failure("crashed")], Settings(restart_failed_env_runners=False))
    assert decision == Decision(False, "restart_failed_env_runners=False", RunnerRecord())


def test_the_budget_is_a_hard_limit():
    decisions = run([Failure("crashed")] * 5, Settings(max_num_env_runner_restarts=3))
    assert [d.restart for d in decisions] == [True, True, True, False]
    assert "restarted 3 times (max_num_env_runner_restarts=3)" in decisions[-1].reason


def test_kills_never_count_toward_giving_up():
    assert all(d.restart for d in run([Failure("crashed")] * 50))


@pytest.mark.parametrize("kind", ["exception", "timeout"])
def test_failures_without_an_env_step_give_up_after_the_limit(kind):
    decisions = run([Failure(kind, env_steps=0, method="sample", timeout_s=2.0)] * 10)
    assert len(decisions) == NO_PROGRESS_LIMIT and not decisions[-1].restart
    assert "3 times in a row without stepping its env (env 'CartPole-v1')" in decisions[-1].reason


def test_callback_errors_give_up_after_the_limit_naming_the_callback_not_the_env():
    callback = "callback 'Mine.on_episode_end' raised ValueError in on_episode_end"
    decisions = run([Failure("callback", env_steps=0, callback=callback)] * 10)
    assert len(decisions) == NO_PROGRESS_LIMIT and not decisions[-1].restart
    assert decisions[-1].reason.startswith(f"its {callback} 3 times in a row")
    assert "a callback error, not an env failure" in decisions[-1].reason
    assert "broken" not in decisions[-1].reason


def test_a_failure_after_env_steps_resets_the_streak():
    flaky = [
        Failure("exception", env_steps=0),
        Failure("exception", env_steps=0),
        Failure("exception", env_steps=120),
    ] * 10
    assert all(d.restart for d in run(flaky))


def test_an_explicit_budget_keeps_restarting_exceptions_but_not_hangs():
    given = Settings(max_num_env_runner_restarts=1000, budget_given=True)
    assert all(d.restart for d in run([Failure("exception", env_steps=0)] * 20, given))
    hangs = run([Failure("timeout", method="sample", timeout_s=60, has_stack=True)] * 20, given)
    assert len(hangs) == NO_PROGRESS_LIMIT and not hangs[-1].restart
    assert "did not answer sample() within 60 s" in hangs[-1].reason
    assert hangs[-1].reason.endswith("where it hung last is above")


def test_a_crash_between_failures_neither_counts_nor_resets():
    failures = [
        Failure("exception"),
        Failure("crashed"),
        Failure("exception"),
        Failure("crashed"),
        Failure("exception"),
    ]
    decisions = run(failures)
    assert [d.restart for d in decisions] == [True, True, True, True, False]
