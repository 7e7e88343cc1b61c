"""The Ray backend on a real multi-node Ray cluster on this machine (`ray.cluster_utils.Cluster`:
a head node and two worker nodes of 1 CPU each, started once for this module). Runners land on
different nodes and PPO learns; env code on every node reaches a named object; an actor killed
mid-sample, a stalled actor, and a whole worker node removed mid-training all end in restarts on
the nodes left, with the callback fired for the right indices and training going on; `stop()`
leaves no actor of the algorithm alive; a checkpoint moves between the backends with exact
resume. Data-parallel learners as Ray actors on the nodes give the weights of averaged
gradients (PPO numpy with 2 and 4 learners, torch, SAC), stay replicas (APPO, multi-agent PPO),
and a learner actor killed mid-update fails the update with nothing half-trained."""

from __future__ import annotations

import logging
import pickle
import threading
import time
import warnings

import numpy as np
import pytest
from helpers import LevelEnv, RecordRecreated, StallOnceEnv, small_ppo
from test_data_parallel_learners import (
    _config,
    _replicas_equal,
    check_appo_learners,
    check_appo_weights,
    check_averaged_gradients,
    check_multi_agent_learners,
    check_multi_agent_ppo_weights,
    check_off_policy_averaged_gradients,
    check_off_policy_torch_weights,
)
from test_named_objects import Counter

from trainer import PPOConfig, create_named_object
from trainer.algorithms.data_parallel import LearnerWorkerError
from trainer.compat.rllib_settings import IgnoredSettingWarning
from trainer.named_objects import shutdown_named_objects

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
Cluster = pytest.importorskip("ray.cluster_utils").Cluster
pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, include_dashboard=False, configure_logging=False)
    cluster.wait_for_nodes()
    shutdown_named_objects()  # named objects are decided anew: Ray named actors from now on
    yield cluster
    shutdown_named_objects()
    ray.shutdown()
    cluster.shutdown()


def node_id(runner=None) -> str:
    return ray.get_runtime_context().get_node_id()


def runner_nodes(algo) -> list[str]:
    return algo.env_runner_group.foreach_env_runner(node_id, local_env_runner=False)


def alive_nodes() -> set[str]:
    return {node["NodeID"] for node in ray.nodes() if node["Alive"]}


def cartpole(**env_runners) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(backend="ray", num_env_runners=2, **env_runners)
        .training(lr=0.0003, train_batch_size=1000, minibatch_size=128, num_epochs=6)
        .fault_tolerance(delay_between_env_runner_restarts_s=0)
        .callbacks(RecordRecreated)
        .debugging(seed=0)
    )


def test_runners_land_on_different_nodes_ppo_learns_and_env_code_reaches_named_objects(cluster):
    steps = create_named_object("steps", Counter)
    try:
        config = (
            small_ppo(2)
            .environment(LevelEnv, env_config={"count_steps_in": "steps"})
            .env_runners(backend="ray")
        )
        with config.build() as algo:
            nodes = runner_nodes(algo)
            algo.train()
        assert len(set(nodes)) == 2  # spread: the two runners on two of the three nodes
        assert steps.get() == 200  # every env step, on both nodes, counted in the driver's object
    finally:
        shutdown_named_objects()
    with cartpole().build() as algo:
        first = algo.train()["env_runners"]["episode_return_mean"]
        for _ in range(5):
            result = algo.train()
    assert result["env_runners"]["episode_return_mean"] > first + 15


def test_an_actor_killed_mid_sample_is_restarted_and_stop_leaves_no_actor(cluster):
    RecordRecreated.calls = []
    algo = (
        cartpole()
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1, evaluation_duration=2)
        .build()
    )
    try:
        algo.train()
        killed = algo.env_runner_group.remote_runner(2).actor
        killer = threading.Timer(0.05, ray.kill, [killed])
        killer.start()
        result = algo.train()  # the kill lands while runner 2 samples
        killer.join()
        result = algo.train()
        assert RecordRecreated.calls == [([2], False)]
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 1
        assert result["env_runners"]["num_env_steps_sampled"] >= 1000  # full batches go on
        assert set(runner_nodes(algo)) <= alive_nodes()
        actors = [algo.env_runner_group.remote_runner(i).actor for i in (1, 2)]
        actors.append(algo.eval_env_runner_group.remote_runner(1).actor)
    finally:
        algo.stop()
    for actor in [killed, *actors]:  # training and evaluation actors alike
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.answer.remote(None), timeout=30)


def test_a_stalled_actor_is_killed_and_restarted(cluster):
    RecordRecreated.calls = []
    config = (
        PPOConfig()
        .environment(StallOnceEnv)
        .env_runners(
            backend="ray", num_env_runners=2, rollout_fragment_length=50, sample_timeout_s=3
        )
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .callbacks(RecordRecreated)
    )
    with config.build() as algo:
        stalled = algo.env_runner_group.remote_runner(1).actor
        results = [algo.train() for _ in range(3)]
        tolerance = results[-1]["fault_tolerance"]
        assert tolerance["num_failures"]["timeout"] == 1
        assert tolerance["num_remote_worker_restarts"] == 1
        assert RecordRecreated.calls == [([1], False)]
        assert algo.env_runner_group.healthy_env_runner_ids() == [1, 2]
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(stalled.answer.remote(None), timeout=30)


def test_a_checkpoint_moves_between_backends_with_exact_resume(cluster, tmp_path):
    on_processes = (
        small_ppo(2, train_batch_size=300, num_epochs=2)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=75)
        .debugging(seed=11)
    )
    on_ray = on_processes.copy().env_runners(backend="ray")

    def metrics(result):
        return {
            k: v
            for k, v in result["env_runners"].items()  # without wall-clock times
            if k != "episode_duration_sec_mean" and "throughput" not in k
        }

    with on_processes.build() as straight:
        expected = [metrics(straight.train()) for _ in range(4)]
        expected_weights = straight.get_weights()
    for first, second in ((on_ray, on_processes), (on_processes, on_ray)):
        path = tmp_path / f"from_{first.backend}"
        with first.build() as algo:
            assert [metrics(algo.train()) for _ in range(2)] == expected[:2]
            algo.save_to_path(path)
        with second.build() as algo:
            if second.backend == "ray":
                assert len(set(runner_nodes(algo))) == 2
            algo.restore_from_path(path)
            assert [metrics(algo.train()) for _ in range(2)] == expected[2:], first.backend
            for name, value in algo.get_weights().items():
                np.testing.assert_array_equal(value, expected_weights[name], err_msg=name)


# -- data-parallel learners as Ray actors ------------------------------------------------------
@pytest.mark.parametrize(("framework", "num_learners"), [("numpy", 2), ("numpy", 4), ("torch", 2)])
def test_learner_actors_give_the_weights_of_averaged_gradients(cluster, framework, num_learners):
    check_averaged_gradients(framework, num_learners, "ray")


def test_sac_learner_actors_give_the_weights_of_averaged_gradients(cluster):
    check_off_policy_averaged_gradients("SAC", "ray")
    check_off_policy_torch_weights("SAC", "ray")


def test_appo_and_multi_agent_ppo_learner_actors_stay_replicas(cluster):
    check_appo_learners("numpy", "ray")
    check_multi_agent_learners("ray")


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_appo_learner_actors_give_the_weights_of_one_process(cluster, framework):
    check_appo_weights(framework, "ray")


def test_multi_agent_ppo_learner_actors_give_the_weights_of_one_process(cluster):
    check_multi_agent_ppo_weights("ray")


def test_learner_actors_spread_over_the_nodes_and_stop_leaves_none(cluster):
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = _config("numpy", 4, "ray").build()
    try:
        # (by value: the actors do not import this test module)
        nodes = algo.learner_group.foreach_learner(
            lambda learner: ray.get_runtime_context().get_node_id()
        ).values()
        actors = [worker.link.actor for worker in algo.learner_replicas.workers]
        assert len(nodes) == 4 and len(set(nodes[1:])) == 3  # 1 CPU each: one per node
        algo.train()
    finally:
        algo.stop()
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.answer.remote(None), timeout=30)


def test_a_learner_actor_killed_mid_update_leaves_learner_0_as_it_was(cluster):
    algo = _config("numpy", 2, "ray", num_epochs=40, minibatch_size=32).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=600)
        before = pickle.dumps(algo.learner.get_state()["module"])
        victim = algo.learner_replicas.workers[0].link.actor
        threading.Timer(0.3, ray.kill, [victim]).start()
        started = time.monotonic()
        with pytest.raises(LearnerWorkerError, match="learner 1.*died"):
            algo.update_learners(episodes, num_env_steps_sampled_lifetime=600)
        assert time.monotonic() - started < 60  # not the all-reduce's timeout
        assert pickle.dumps(algo.learner.get_state()["module"]) == before
        assert algo.learner_replicas.workers[0].link.actor != victim  # a fresh actor
        algo.train()
        _replicas_equal(algo)
    finally:
        algo.stop()


def test_a_worker_node_removed_mid_training_costs_only_its_runner(cluster, caplog):
    """Last in this module: it takes a node away (and adds a new one after)."""
    RecordRecreated.calls = []
    caplog.set_level(logging.WARNING, logger="trainer")
    # Env steps of 1 ms: an iteration's sampling (2 rounds of 250 steps) lasts well past the
    # moment the node goes, whatever the machine's speed (with CartPole's own ~10 us steps it
    # could end first, and the runner then died while idle).
    algo = (
        cartpole(rollout_fragment_length=250)
        .callbacks(on_episode_step=lambda **kwargs: time.sleep(0.001))
        .build()
    )
    try:
        algo.train()
        nodes = runner_nodes(algo)
        worker_nodes = {node.node_id: node for node in cluster.worker_nodes}
        index = 1 if nodes[0] in worker_nodes else 2
        removed = worker_nodes[nodes[index - 1]]
        remover = threading.Timer(0.05, cluster.remove_node, [removed])
        remover.start()
        result = algo.train()  # the node goes away while its runner samples
        remover.join()
        result = algo.train()
        assert RecordRecreated.calls == [([index], False)]
        assert f"EnvRunner {index} crashed during sample(): its Ray actor (pid " in caplog.text
        assert f"on node {removed.node_id}) died" in caplog.text
        tolerance = result["fault_tolerance"]
        assert (
            tolerance["num_remote_worker_restarts"] == 1
            and tolerance["num_failures"]["crashed"] == 1
        )
        assert tolerance["num_env_steps_lost"] <= 250  # at most the lost runner's fragment
        assert result["env_runners"]["num_env_steps_sampled"] >= 1000
        now = runner_nodes(algo)
        assert removed.node_id not in now and set(now) <= alive_nodes()
        assert algo.env_runner_group.healthy_env_runner_ids() == [1, 2]
    finally:
        algo.stop()
        cluster.add_node(num_cpus=1)
