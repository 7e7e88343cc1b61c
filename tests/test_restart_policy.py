"""The restart policy as pure functions: every rule in milliseconds, without processes (the
end-to-end cases stay in test_fault_tolerance*.py)."""

import pytest

from trainer.algorithms.ppo import PPOConfig
from trainer.errors import EnvRunnerCrashed
from trainer.runners.restart_policy import (
    GIVE_UP,
    RESTART,
    STREAK_REPORTED_AFTER,
    WAIT,
    Decision,
    Repeats,
    RunnerRecord,
    Settings,
    decide,
    failed_iterations_in_a_row,
    gives_up,
    iteration_bound_s,
    repeats,
    reports_streak,
    signature,
)


def iterations(failures_per_iteration, settings=Settings()):
    """Feeds `failures_per_iteration[i]` failures in iteration i, restarting as decided (a
    waiting runner restarts when the next iteration starts, as `probe_unhealthy_env_runners`
    does); returns the actions of each iteration."""
    restarts, waiting, actions = 0, False, []
    for count in failures_per_iteration:
        restarted_now = False
        if waiting and restarts < settings.max_num_env_runner_restarts:
            restarts, restarted_now, waiting = restarts + 1, True, False
        this_iteration = []
        for _ in range(count):
            if waiting:
                break  # left out: it does not fail again in this iteration
            decision = decide(RunnerRecord(restarts, restarted_now), settings)
            this_iteration.append(decision.action)
            if decision.action == RESTART:
                restarts, restarted_now = restarts + 1, True
            elif decision.action == WAIT:
                waiting = True
            else:
                actions.append(this_iteration)
                return actions
        actions.append(this_iteration)
    return actions


def test_restarts_off_gives_up_at_once():
    decision = decide(RunnerRecord(), Settings(restart_failed_env_runners=False))
    assert decision == Decision(GIVE_UP, "restart_failed_env_runners=False")


def test_the_budget_is_a_hard_limit():
    assert decide(RunnerRecord(3), Settings(max_num_env_runner_restarts=3)) == Decision(
        GIVE_UP, "it was restarted 3 times (max_num_env_runner_restarts=3)"
    )


def test_at_most_one_restart_per_iteration_then_a_wait():
    """A runner that fails every time: restarted at once, then left out until the next
    iteration, whose start restarts it (that is its one restart there)."""
    assert iterations([5, 5, 5]) == [[RESTART, WAIT], [WAIT], [WAIT]]


def test_restarts_go_on_across_iterations_up_to_the_budget():
    """RLlib's p_crash=1.0 case: restarts go on across iterations; only the budget ends them."""
    actions = iterations([5] * 10, Settings(max_num_env_runner_restarts=4))
    assert actions == [[RESTART, WAIT], [WAIT], [WAIT], [GIVE_UP]]


def test_a_flaky_runner_is_restarted_once_in_each_iteration_it_fails():
    assert iterations([1, 0, 1, 1]) == [[RESTART], [], [RESTART], [RESTART]]


def test_the_wait_says_when_it_comes_back():
    decision = decide(RunnerRecord(1, restarted_this_iteration=True), Settings())
    assert decision.action == WAIT and not decision.restart
    assert "restarted again when the next iteration starts" in decision.reason


def test_the_same_failure_is_counted_once_per_iteration_and_only_in_a_row():
    crash = signature("crashed", EnvRunnerCrashed(1, "sample", exitcode=-9))
    other = signature("exception", ValueError("bad observation at step 30"))
    record = Repeats()
    record = repeats(record, crash, 1)
    record = repeats(record, crash, 1)
    assert record.iterations == 1
    assert repeats(record, crash, 2).iterations == 2
    assert repeats(record, crash, 3).iterations == 1  # a gap: not in a row
    assert repeats(record, other, 2).iterations == 1


def test_a_signature_masks_the_numbers_that_change_between_failures():
    first = signature("exception", ValueError("bad observation at step 30 (pid 4121)"))
    second = signature("exception", ValueError("bad observation at step 31 (pid 4188)"))
    assert first == second
    assert first != signature("exception", KeyError("bad observation at step 30 (pid 4121)"))


def test_the_iteration_bound_follows_the_settings():
    config = (
        PPOConfig()
        .env_runners(num_env_runners=2, sample_timeout_s=10.0)
        .fault_tolerance(
            delay_between_env_runner_restarts_s=1.0,
            env_runner_health_probe_timeout_s=5.0,
            env_runner_restore_timeout_s=4.0,
        )
    )
    assert iteration_bound_s(config) == pytest.approx(2 * (2 * 10.0 + 1.0 + 5.0 + 4.0))


def test_iterations_that_fail_without_a_sample_make_a_streak_that_any_sample_ends():
    streak, streaks = 0, []
    for failed, sampled in [(True, 0), (True, 0), (False, 200), (True, 0), (True, 50), (True, 0)]:
        streak = failed_iterations_in_a_row(streak, failed=failed, env_steps_sampled=sampled)
        streaks.append(streak)
    assert streaks == [1, 2, 0, 1, 0, 1]
    assert failed_iterations_in_a_row(2, failed=True, env_steps_sampled=0) == 3
    assert failed_iterations_in_a_row(2, failed=True, env_steps_sampled=1) == 0
    # An iteration that sampled nothing without a failure (none can be) is no failed one.
    assert failed_iterations_in_a_row(2, failed=False, env_steps_sampled=0) == 0


def test_a_streak_gives_up_at_the_setting_and_never_without_one():
    assert not gives_up(10**6, Settings())  # the default, RLlib's: restart for ever
    assert not gives_up(2, Settings(max_consecutive_failed_iterations=3))
    assert gives_up(3, Settings(max_consecutive_failed_iterations=3))
    assert gives_up(1, Settings(max_consecutive_failed_iterations=1))
    assert not gives_up(10**6, Settings(max_consecutive_failed_iterations=None))


def test_a_streak_without_a_limit_is_reported_once():
    reported = [n for n in range(1, 100) if reports_streak(n, Settings())]
    assert reported == [STREAK_REPORTED_AFTER]
    assert not any(
        reports_streak(n, Settings(max_consecutive_failed_iterations=5)) for n in range(1, 100)
    )


def test_the_settings_come_from_the_config():
    config = PPOConfig().fault_tolerance(max_consecutive_failed_iterations=None)
    assert Settings.from_config(config).max_consecutive_failed_iterations is None
    assert Settings.from_config(PPOConfig()).max_consecutive_failed_iterations is None
