"""RLlib's `EnvRunnerGroup(config=...)` and its async calls, on real worker processes:
`foreach_env_runner_async`, `fetch_ready_async_reqs` (tags, timeouts, values), the in-flight
count and limit, `foreach_env_runner_async_fetch_ready`, synchronous calls in between, and
failures handled per the fault-tolerance settings."""

import os
import time

import pytest

from trainer import PPOConfig, named_objects
from trainer.core.rl_module import RLModule
from trainer.errors import EnvRunnerError
from trainer.named_objects import ObjectRef
from trainer.runners.env_runner_group import EnvRunnerGroup


def group_config(**fault_tolerance):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2, sample_timeout_s=20.0)
        .fault_tolerance(**fault_tolerance)
    )


@pytest.fixture
def group():
    group = EnvRunnerGroup(config=group_config())
    yield group
    group.stop()


@pytest.mark.slow
def test_built_from_a_config_as_in_rllib():
    group = EnvRunnerGroup(
        config=group_config(), local_env_runner=True, logdir=None, tune_trial_id=None, pg_offset=0
    )
    try:
        assert group.num_remote_env_runners() == group.num_remote_workers() == 2
        assert group.num_healthy_remote_env_runners() == 2
        assert group.num_healthy_env_runners() == 3  # the local runner counts
        assert group.local_env_runner.worker_index == 0
        pids = group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)
        assert len(set(pids)) == 2 and os.getpid() not in pids
    finally:
        group.stop()
    # A config dict, and num_env_runners overriding the config's.
    group = EnvRunnerGroup(config={"env": "CartPole-v1", "num_env_runners": 2}, num_env_runners=1)
    try:
        assert group.num_remote_env_runners() == 1
        assert group.foreach_env_runner(lambda r: r.worker_index) == [0, 1]
    finally:
        group.stop()
    with pytest.raises(
        ValueError,
        match=r"EnvRunnerGroup\(config=...\): the config has no "
        r"env",
    ):
        EnvRunnerGroup(config=PPOConfig())
    # RLlib's testing switch: no runner at all (and no env needed).
    empty = EnvRunnerGroup(config=PPOConfig(), _setup=False)
    assert empty.local_env_runner is None and empty.num_remote_env_runners() == 0
    assert empty.num_healthy_env_runners() == 0
    empty.stop()


@pytest.mark.slow
def test_every_runners_module_is_an_rl_module(group):
    """RLlib's check of `foreach_env_runner(lambda w: w.module)`: the default numpy module is an
    RLModule, in this process and in the workers (where the check runs)."""
    modules = group.foreach_env_runner(lambda r: r.module)
    assert len(modules) == 3 and all(isinstance(m, RLModule) for m in modules)
    assert group.foreach_env_runner(lambda r: isinstance(r.module, RLModule)) == [True] * 3


@pytest.mark.slow
def test_async_calls_come_back_by_tag(group):
    assert group.foreach_env_runner_async(lambda r: r.worker_index * 10, tag="a") == 2
    # One request in flight per runner (max_requests_in_flight_per_env_runner=1).
    assert group.foreach_env_runner_async(lambda r: -1, tag="a") == 0
    assert group.num_in_flight_async_reqs() == group.num_in_flight_async_reqs("a") == 2
    assert sorted(group.fetch_ready_async_reqs(tags="a", timeout_seconds=20.0)) == [
        (1, 10),
        (2, 20),
    ]
    assert group.num_in_flight_async_reqs() == 0
    assert group.fetch_ready_async_reqs(timeout_seconds=0.0) == []
    # A method name, kwargs, and another tag left for a later fetch.
    assert group.foreach_env_runner_async("ping", tag="b") == 2
    assert group.fetch_ready_async_reqs(tags=["a"], timeout_seconds=1.0) == []
    assert sorted(group.fetch_ready_async_reqs(tags=("b",), timeout_seconds=20.0)) == [
        (1, "pong"),
        (2, "pong"),
    ]
    assert (
        group.foreach_env_runner_async(
            lambda r, x: x + r.worker_index, kwargs={"x": 5}, remote_worker_ids=[2]
        )
        == 1
    )
    assert group.fetch_ready_async_reqs(timeout_seconds=20.0) == [(2, 7)]
    # RLlib's return_obj_refs=True: (index, reference), each read with get().
    group.foreach_env_runner_async(lambda r: r.worker_index * 3)
    fetched = sorted(group.fetch_ready_async_reqs(timeout_seconds=20.0, return_obj_refs=True))
    assert [index for index, _ in fetched] == [1, 2]
    assert all(isinstance(ref, ObjectRef) for _, ref in fetched)
    assert named_objects.get([ref for _, ref in fetched]) == [3, 6]


@pytest.mark.slow
def test_a_fetch_waits_at_most_its_timeout_and_leaves_slow_requests_in_flight(group):
    group.foreach_env_runner_async(lambda r: (time.sleep(3.0), r.worker_index)[1])
    started = time.monotonic()
    assert group.fetch_ready_async_reqs(timeout_seconds=0.3) == []
    assert time.monotonic() - started < 2.0
    assert group.num_in_flight_async_reqs() == 2
    assert sorted(group.fetch_ready_async_reqs(timeout_seconds=20.0)) == [(1, 1), (2, 2)]
    assert group.num_remote_worker_restarts() == 0


@pytest.mark.slow
def test_a_synchronous_call_in_between_keeps_the_async_results(group):
    group.foreach_env_runner_async(lambda r: (time.sleep(0.5), "late")[1], tag="slow")
    assert group.foreach_env_runner(lambda r: r.worker_index, local_env_runner=False) == [1, 2]
    group.sync_weights(group.local_env_runner.get_weights())
    # Results come in the order the runners answer (as RLlib's), not by index.
    assert sorted(group.fetch_ready_async_reqs(tags="slow")) == [(1, "late"), (2, "late")]
    # Weights broadcast before an async call are applied before it.
    weights = {k: v + 1.0 for k, v in group.local_env_runner.get_weights().items()}
    group.sync_weights(weights)
    group.foreach_env_runner_async(lambda r: sum(float(v.sum()) for v in r.get_weights().values()))
    expected = sum(float(v.sum()) for v in weights.values())
    results = group.fetch_ready_async_reqs(timeout_seconds=20.0)
    assert sorted(index for index, _ in results) == [1, 2]
    assert all(value == pytest.approx(expected, rel=1e-5) for _, value in results)


@pytest.mark.slow
def test_fetch_ready_variant_returns_earlier_results_and_sends_again(group):
    assert group.foreach_env_runner_async_fetch_ready(lambda r: r.worker_index, tag="t") == []
    time.sleep(0.5)
    results = group.foreach_env_runner_async_fetch_ready(
        lambda r: r.worker_index, tag="t", timeout_seconds=20.0, return_actor_ids=True
    )
    assert sorted(results) == [(1, 1), (2, 2)]
    assert group.num_in_flight_async_reqs("t") == 2  # sent again
    assert sorted(group.fetch_ready_async_reqs(tags="t", timeout_seconds=20.0)) == [(1, 1), (2, 2)]


def raise_in_runner_1(runner):
    if runner.worker_index == 1:
        raise RuntimeError("async call failed in runner 1")
    return runner.worker_index


@pytest.mark.slow
def test_a_failing_async_call_restarts_the_runner_by_default(group):
    group.foreach_env_runner_async(raise_in_runner_1)
    assert group.fetch_ready_async_reqs(timeout_seconds=20.0) == [(2, 2)]
    assert group.num_remote_worker_restarts() == 1
    assert group.num_healthy_remote_env_runners() == 2
    assert group.num_in_flight_async_reqs() == 0
    assert group.foreach_env_runner(lambda r: r.worker_index, local_env_runner=False) == [1, 2]


@pytest.mark.slow
def test_a_failing_async_call_raises_without_restarts():
    group = EnvRunnerGroup(config=group_config(restart_failed_env_runners=False))
    try:
        group.foreach_env_runner_async(raise_in_runner_1)
        with pytest.raises(EnvRunnerError, match="async call failed in runner 1"):
            group.fetch_ready_async_reqs(timeout_seconds=20.0)
    finally:
        group.stop()


@pytest.mark.slow
def test_ignored_failures_leave_the_runner_out_until_probed():
    group = EnvRunnerGroup(
        config=group_config(restart_failed_env_runners=False, ignore_env_runner_failures=True)
    )
    try:
        group.foreach_env_runner_async(raise_in_runner_1)
        assert group.fetch_ready_async_reqs(timeout_seconds=20.0) == [(2, 2)]
        assert group.healthy_env_runner_ids() == [2]
        assert group.foreach_env_runner_async(lambda r: r.worker_index) == 1
        assert group.fetch_ready_async_reqs(timeout_seconds=20.0) == [(2, 2)]
        # Restarts are off: probing restores nothing.
        assert group.probe_unhealthy_env_runners() == []
        group.config = group.config.copy(copy_frozen=False).fault_tolerance(
            restart_failed_env_runners=True
        )
        assert group.probe_unhealthy_env_runners(timeout_seconds=60.0) == [1]
        assert group.healthy_env_runner_ids() == [1, 2]
    finally:
        group.stop()


@pytest.mark.slow
def test_rllib_group_helpers(group):
    spaces = group.get_spaces()
    assert spaces["default_policy"][0].shape == (4,)
    assert spaces["__env_single__"][1].n == 2
    # The local runner has no env (num_env_runners > 0): an empty list first.
    assert group.foreach_env(lambda env: type(env).__name__) == [
        [],
        ["CartPoleEnv"],
        ["CartPoleEnv"],
    ]
    assert group.foreach_env_with_context(
        lambda env, ctx: (ctx.worker_index, ctx.vector_index)
    ) == [[], [(1, 0)], [(2, 0)]]
    # RLlib's return_obj_refs=True: the local runner's result is a value, the remote ones'
    # references that get() reads.
    results = group.foreach_env_runner(lambda r: r.worker_index + 1, return_obj_refs=True)
    assert results[0] == 1
    assert all(isinstance(ref, ObjectRef) for ref in results[1:])
    assert named_objects.get(results[1:]) == [2, 3]
    # RLlib's sync_weights form: from a worker, to some runners, with global_vars.
    weights = {k: v * 0 + 0.5 for k, v in group.local_env_runner.get_weights().items()}
    group.local_env_runner.set_weights(weights)
    group.sync_weights(
        from_worker_or_learner_group=group.local_env_runner,
        to_worker_indices=[2],
        global_vars={"timestep": 123},
    )
    sums = group.foreach_env_runner(
        lambda r: (
            r.global_timestep,
            round(sum(float(v.sum()) for v in r.get_weights().values()), 3),
        ),
        local_env_runner=False,
    )
    expected = round(sum(float(v.sum()) for v in weights.values()), 3)
    assert sums[1] == (123, expected) and sums[0] != (123, expected)


@pytest.mark.slow
def test_add_workers_starts_synced_runners(group):
    weights = {k: v * 0 + 0.25 for k, v in group.local_env_runner.get_weights().items()}
    group.sync_weights(weights, global_timestep=77)
    group.add_workers(2, validate=True)
    assert group.healthy_env_runner_ids() == [1, 2, 3, 4]
    states = group.foreach_env_runner(
        lambda r: (
            r.worker_index,
            r.global_timestep,
            round(sum(float(v.sum()) for v in r.get_weights().values()), 3),
        ),
        local_env_runner=False,
    )
    expected = round(sum(float(v.sum()) for v in weights.values()), 3)
    assert states == [(i, 77, expected) for i in (1, 2, 3, 4)]
    episodes, metrics = group.sample(min_env_steps=400)
    assert len(metrics) >= 4
    with pytest.raises(ValueError, match="add_workers.num_workers=-1."):
        group.add_workers(-1)


@pytest.mark.slow
def test_timed_out_replies_count_as_dropped(group):
    assert group.num_env_runners_dropped_lifetime() == 0
    results = group.foreach_env_runner(
        lambda r: time.sleep(30) if r.worker_index == 2 else 1,
        local_env_runner=False,
        timeout_seconds=1.0,
    )
    assert results == [1]
    assert group.num_env_runners_dropped_lifetime() == 1
    assert group.num_remote_worker_restarts() == 1  # the silent runner was a timeout


@pytest.mark.slow
def test_sync_env_runner_states_as_rllib_calls_it(group):
    weights = {k: v * 0 + 0.75 for k, v in group.local_env_runner.get_weights().items()}
    group.sync_env_runner_states(
        config=group.config,
        env_steps_sampled=321.0,
        rl_module_state={"rl_module": {"default_policy": weights}},
        env_runner_indices_to_update=[1],
    )
    expected = round(sum(float(v.sum()) for v in weights.values()), 3)
    states = group.foreach_env_runner(
        lambda r: (
            r.global_timestep,
            round(sum(float(v.sum()) for v in r.get_weights().values()), 3),
        )
    )
    assert states[0] == (321, expected) and states[1] == (321, expected)
    assert states[2] != (321, expected)  # not among the runners to update


@pytest.mark.slow
def test_max_requests_in_flight_per_env_runner_limits_async_requests():
    config = group_config().env_runners(max_requests_in_flight_per_env_runner=2)
    group = EnvRunnerGroup(config=config)
    try:
        slow = lambda r: (time.sleep(0.3), r.worker_index)[1]  # noqa: E731
        assert [group.foreach_env_runner_async(slow, tag=t) for t in "abc"] == [2, 2, 0]
        assert group.num_in_flight_async_reqs() == 4
        results = group.fetch_ready_async_reqs(timeout_seconds=20.0)
        assert sorted(results) == [(1, 1), (1, 1), (2, 2), (2, 2)]
    finally:
        group.stop()


def test_a_train_result_reports_the_groups_figures_as_rllib_does():
    """RLlib 2.60's result keys of the EnvRunner groups: `fault_tolerance`'s
    `num_env_runners_dropped_lifetime` (a reply dropped at a call's timeout, here a runner
    silent past `timeout_seconds`), `env_runner_group`'s requests in flight and, after an
    evaluation round, the evaluation group's health under `evaluation`."""
    algo = (
        group_config(restart_failed_env_runners=True)
        .env_runners(num_env_runners=1)
        .training(train_batch_size=128, minibatch_size=64, num_epochs=1)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_duration=1,
            evaluation_duration_unit="episodes",
        )
        .build()
    )
    try:
        assert (
            algo.env_runner_group.foreach_env_runner(
                lambda r: time.sleep(30), local_env_runner=False, timeout_seconds=0.5
            )
            == []
        )
        result = algo.train()
    finally:
        algo.stop()
    assert result["fault_tolerance"]["num_env_runners_dropped_lifetime"] == 1
    assert result["env_runner_group"] == {"actor_manager_num_outstanding_async_reqs": 0}
    evaluation = result["evaluation"]
    assert evaluation["num_healthy_workers"] == 1
    assert evaluation["num_remote_worker_restarts"] == 0
    assert evaluation["num_env_runners_dropped_lifetime"] == 0
    assert evaluation["actor_manager_num_outstanding_async_reqs"] == 0
