"""Both backends do the same thing (issue 19, point 2): each test runs once with EnvRunners as
worker processes and once as Ray actors, on a real local Ray started for this module. A seeded
run that uses callbacks and chains, custom metrics, curriculum tasks, named objects, weight sync,
`foreach_env_runner` / `foreach_env` and sequential evaluation gives the very same results on
both; parallel evaluation ("auto" and fixed, with and without a thread) and restarts with
`on_env_runners_recreated` behave the same. Named objects are Ray named actors here (this
process is connected to the session's Ray, `ray_session` in tests/conftest.py), reached from
worker processes and actors alike."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    EpisodeReturn,
    LevelEnv,
    RecordRecreated,
    assert_same_weights,
    small_ppo,
    trained_weights,
)
from test_curriculum import TaskFromIteration
from test_evaluation import eval_ppo, weights_sum
from test_frame_stacking import cartpole_stacking
from test_named_objects import Counter

from trainer import create_named_object, get_named_object
from trainer.callbacks import RLlibCallback
from trainer.named_objects import NamedObjectError, server_running, shutdown_named_objects
from trainer.testing import kill_env_runner

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

BACKENDS = ["processes", "ray"]
#: The iterations of the seeded runs: the curriculum moves on after each one.
ITERATIONS = 2


@pytest.fixture(autouse=True)
def no_named_object_left():
    yield
    shutdown_named_objects()


class EpisodeLevel(RLlibCallback):
    """The first class of the chain: the level each episode ran on, as a custom metric."""

    def on_episode_end(self, *, episode, env, env_index, metrics_logger, **kwargs):
        metrics_logger.log_value(
            "episode_level",
            env.envs[env_index].unwrapped.get_task(),
            reduce="max",
            clear_on_reduce=True,
        )


def _deterministic(result: dict) -> dict:
    """`result` without what depends on the clock (times, throughputs)."""
    clock = ("time", "date", "throughput", "duration", "timer", "_per_s", "lifetime_s")
    out = {}
    for key, value in result.items():
        if any(word in key for word in clock):
            continue
        out[key] = _deterministic(value) if isinstance(value, dict) else value
    return out


def _run(backend: str, steps) -> dict:
    """A seeded run on `backend`; `steps` is the named object "steps", created before the build
    (it outlives the algorithm: the test's two runs share it, each counting from its reading)."""
    counted_before = steps.get()
    config = (
        # One training EnvRunner (test_a_seeded_multi_agent_run_is_the_same_on_both_backends
        # has two) and one evaluation EnvRunner: each a worker process or a Ray actor.
        small_ppo(1, train_batch_size=200, num_epochs=2)
        .environment(LevelEnv, env_config={"count_steps_in": "steps", "count_with_remote": True})
        .env_runners(backend=backend, num_envs_per_env_runner=2, rollout_fragment_length=50)
        .callbacks(
            [EpisodeLevel, EpisodeReturn, TaskFromIteration],
            on_sample_end=lambda *, metrics_logger, samples, **kw: metrics_logger.log_value(
                "samples_seen", len(samples), reduce="sum"
            ),
        )
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_duration=4,
            evaluation_duration_unit="episodes",
        )
        .debugging(seed=7)
    )
    with config.build() as algo:
        results = [_deterministic(algo.train()) for _ in range(ITERATIONS)]
        group = algo.env_runner_group
        weights = algo.get_weights()
        return {
            "results": results,
            "tasks": group.foreach_env_runner(
                lambda runner: runner.get_tasks(), local_env_runner=False
            ),
            "env_levels": group.foreach_env_runner(
                lambda runner: runner.foreach_env(lambda env: env.get_task()),
                local_env_runner=False,
            ),
            # Weight sync: every runner holds the learner's weights after train().
            "synced": [
                all(np.array_equal(w[name], weights[name]) for name in weights)
                for w in group.foreach_env_runner(lambda runner: runner.get_weights())
            ],
            "steps_counted": steps.get() - counted_before,
            "weights": {name: value.tolist() for name, value in weights.items()},
        }


def test_a_seeded_run_is_the_same_on_both_backends():
    # One named actor for both runs (each Ray actor is a Ray worker process to start); the
    # `no_named_object_left` fixture ends it.
    steps = create_named_object("steps", Counter)
    on_processes, on_ray = _run("processes", steps), _run("ray", steps)
    # It ran what it says: custom metrics from the chain, curriculum, evaluation, named objects.
    last = on_processes["results"][-1]
    # The last iteration's episodes ran on the task the one before set (its number).
    assert last["env_runners"]["episode_level"] == ITERATIONS - 1
    assert last["env_runners"]["episodes_counted"] > 0 and last["env_runners"]["samples_seen"]
    assert last["evaluation"]["env_runners"]["num_episodes"] == 4
    assert on_processes["tasks"] == [[ITERATIONS] * 2] == on_processes["env_levels"]
    assert on_processes["synced"] == [True, True]
    # Training and evaluation steps.
    assert on_processes["steps_counted"] == ITERATIONS * 200 + ITERATIONS * 4 * 10
    for key in on_processes:
        assert on_ray[key] == on_processes[key], key


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("duration, thread", [("auto", True), (300, False)])
def test_parallel_evaluation_lags_one_iteration(backend, duration, thread):
    config = (
        eval_ppo(
            evaluation_interval=1,
            evaluation_num_env_runners=2,
            evaluation_parallel_to_training=True,
            evaluation_duration=duration,
            evaluation_duration_unit="timesteps",
        )
        .env_runners(backend=backend)
        .debugging(_evaluation_parallel_to_training_wo_thread=not thread)
    )
    with config.build() as algo:
        sums, evaluated = [weights_sum(algo)], []
        for _ in range(2):  # the second round is the one that could use the newer weights
            evaluated.append(algo.train()["evaluation"]["env_runners"])
            sums.append(weights_sum(algo))
    # train(0->1) + eval(0), train(1->2) + eval(1), ...: each round used the weights before.
    assert [e["weights_sum"] for e in evaluated] == pytest.approx(sums[:-1], rel=1e-9)
    steps = [e["num_env_steps_sampled"] for e in evaluated]
    assert steps == [300] * 2 if duration == 300 else all(s >= 100 for s in steps)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_runner_comes_back_with_its_task_and_the_weights(backend):
    """The process of training runner 1 and of evaluation runner 1 SIGKILLed (an actor's
    process too): each restarted once, the callback fired with its index, the restarted runner
    on its sub-envs' tasks and the current weights."""
    RecordRecreated.calls = []
    config = (
        small_ppo(2)
        .environment(LevelEnv)
        .env_runners(backend=backend, num_envs_per_env_runner=2)
        .callbacks([RecordRecreated, TaskFromIteration])
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_duration=2,
            evaluation_duration_unit="episodes",
        )
        .fault_tolerance(delay_between_env_runner_restarts_s=0)
    )
    with config.build() as algo:
        algo.train()
        kill_env_runner(algo, 1)
        kill_env_runner(algo, 1, evaluation=True)
        result = algo.train()
        result = algo.train()
        group = algo.env_runner_group
        assert sorted(RecordRecreated.calls) == [([1], False), ([1], True)]
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 1
        assert group.healthy_env_runner_ids() == [1, 2]
        assert group.foreach_env_runner(lambda r: r.get_tasks(), local_env_runner=False) == [
            [3, 3],
            [3, 3],
        ]
        weights = algo.get_weights()
        for runner_weights in group.foreach_env_runner(lambda r: r.get_weights()):
            for name, value in weights.items():
                np.testing.assert_array_equal(runner_weights[name], value, err_msg=name)


def test_named_objects_are_ray_named_actors_while_connected_to_ray():
    counter = create_named_object("counter", Counter, start=5)
    # A real Ray named actor: plain Ray reaches it by name, with its methods.
    actor = ray.get_actor("counter")
    assert ray.get(actor.inc.remote(2)) is None and counter.get() == 7
    assert "counter" in ray.util.list_named_actors()
    with pytest.raises(
        NamedObjectError,
        match=r"counter\.fail\(\) raised ArithmeticError: the "
        r"counter overflowed",
    ):
        counter.fail()
    with pytest.raises(ValueError, match=r"no named object by that name; existing: \['counter'\]"):
        get_named_object("missing")
    with pytest.raises(ValueError, match="the name is taken"):
        create_named_object("counter", Counter)
    assert create_named_object("counter", Counter, get_if_exists=True).get() == 7
    with pytest.raises(NamedObjectError, match=r"create_named_object\('broken'\).*TypeError"):
        create_named_object("broken", Counter, "no", "such", "arguments")
    # Ray's spelling through this package: the same actors.
    from trainer import named_objects as rayish

    remote_counter = rayish.remote(Counter).options(name="other").remote(1)
    refs = [remote_counter.inc.remote(1) for _ in range(100)]
    rayish.get(refs)
    assert rayish.get(rayish.get_actor("other").get.remote()) == 101
    assert server_running()
    shutdown_named_objects()  # ends the actors this process created
    assert not server_running()
    with pytest.raises(ValueError):
        ray.get_actor("counter")


def test_algorithm_stop_ends_named_actors_created_after_build():
    with small_ppo(1).env_runners(backend="ray").build():
        counter = create_named_object("late", Counter)
        counter.inc(1)
    assert not server_running()
    with pytest.raises(ValueError):
        ray.get_actor("late")


def _run_multi_agent(backend: str) -> dict:
    from multi_agent_envs import TakeTurns

    from trainer import PPOConfig

    config = (
        PPOConfig()
        .environment(TakeTurns)
        .multi_agent(
            policies={"pa", "pb"}, policy_mapping_fn=lambda agent_id, *args, **kw: f"p{agent_id}"
        )
        .env_runners(num_env_runners=2, backend=backend)
        .training(train_batch_size=120, minibatch_size=60, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=11)
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(2)]
        return {
            "returns": [r["env_runners"]["module_episode_returns_mean"] for r in results],
            "weights_sum": {
                module_id: float(sum(np.sum(w) for w in weights.values()))
                for module_id, weights in algo.get_weights().items()
            },
        }
    finally:
        algo.stop()


def test_a_seeded_multi_agent_run_is_the_same_on_both_backends():
    on_processes, on_ray = _run_multi_agent("processes"), _run_multi_agent("ray")
    assert set(on_processes["weights_sum"]) == {"pa", "pb"}
    assert on_ray == on_processes


def test_frames_stacked_in_the_learner_train_alike_on_both_backends():
    """RLlib's frame-stacking pipeline with the learner stacking: the episodes' frames and
    their lookback reach the learner from Ray actors as from worker processes."""
    config = cartpole_stacking(in_learner=True, num_env_runners=1)
    on_processes = trained_weights(config, ITERATIONS)
    on_ray = trained_weights(config.copy().env_runners(backend="ray"), ITERATIONS)
    assert_same_weights(on_processes, on_ray)
