"""EnvRunners in worker processes: env forms, seeding, group operations, timeouts, stop."""

import os
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from trainer import EnvRunnerTimeout, register_env
from trainer.testing import env_runner_pids as live_worker_pids


class CorridorEnv(gym.Env):
    """Walk right `length` cells; env_config sets the length."""

    def __init__(self, config=None):
        config = config or {}
        self.length = config.get("length", 5)
        self.worker_index = getattr(config, "worker_index", None)
        self.vector_index = getattr(config, "vector_index", None)
        self.observation_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.pos = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return np.array([self.pos], np.float32), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos >= self.length
        return np.array([self.pos], np.float32), (1.0 if done else -0.1), done, False, {}


def env_facts(runner):
    return runner.foreach_env(lambda env: (env.length, env.worker_index, env.vector_index))


@pytest.mark.slow
@pytest.mark.parametrize("form", ["class", "callable", "registered", "gym_registered"])
def test_env_forms_reach_worker_processes_with_env_config_and_context(form):
    if form == "class":
        env = CorridorEnv
    elif form == "callable":
        env = lambda cfg: CorridorEnv(cfg)  # noqa: E731
    elif form == "registered":
        register_env("corridor-test", lambda cfg: CorridorEnv(cfg))
        env = "corridor-test"
    else:
        # Registered with gymnasium in this process only: the worker must learn it too.
        gym.register("CorridorTest-v0", entry_point=lambda **kw: CorridorEnv(kw))
        env = "CorridorTest-v0"
    config = (
        small_ppo(2)
        .environment(env, env_config={"length": 7})
        .env_runners(num_envs_per_env_runner=2)
    )
    algo = config.build()
    try:
        facts = algo.env_runner_group.foreach_env_runner(env_facts, local_env_runner=False)
        result = algo.train()
    finally:
        algo.stop()
    if form == "gym_registered":  # gym.make passes env_config as kwargs: no worker context
        assert facts == [[(7, None, None)] * 2] * 2
    else:
        assert facts == [[(7, 1, 0), (7, 1, 1)], [(7, 2, 0), (7, 2, 1)]]
    assert result["env_runners"]["num_env_steps_sampled"] >= 200


@pytest.mark.slow
def test_group_operations_foreach_healthy_ids_method_names_and_stop():
    algo = small_ppo(2).build()
    group = algo.env_runner_group
    assert group.healthy_env_runner_ids() == [1, 2]
    assert group.num_healthy_remote_workers() == 2
    assert group.foreach_env_runner(lambda r: r.worker_index) == [0, 1, 2]
    assert group.foreach_env_runner(
        lambda r: r.worker_index, local_env_runner=False, remote_worker_ids=[2]
    ) == [2]
    assert group.foreach_env_runner("ping") == ["pong"] * 3
    # The local runner has no env when worker processes sample.
    envs = group.foreach_env_runner(lambda r: r.foreach_env(lambda e: type(e).__name__))
    assert envs == [[], ["CartPoleEnv"], ["CartPoleEnv"]]
    # Older spelling.
    assert algo.workers.foreach_worker(lambda ev: ev.num_workers) == [2, 2, 2]
    pids = list(group.remote_pids().values())
    assert sorted(live_worker_pids()) == sorted(pids)
    algo.stop()
    assert live_worker_pids() == []
    algo.stop()  # idempotent
    with pytest.raises(RuntimeError, match="stopped"):
        algo.train()


@pytest.mark.slow
def test_weights_reach_every_runner_after_each_update():
    algo = small_ppo(2).build()
    try:
        algo.train()
        learner_weights = algo.get_weights()
        runner_weights = algo.env_runner_group.foreach_env_runner(lambda r: r.get_weights())
        for weights in runner_weights:
            for name, value in learner_weights.items():
                np.testing.assert_array_equal(weights[name], value)
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_call_that_does_not_answer_in_time_kills_the_runner():
    algo = small_ppo(2).fault_tolerance(restart_failed_env_runners=False).build()
    try:
        with pytest.raises(EnvRunnerTimeout, match="EnvRunner 1 did not answer"):
            algo.env_runner_group.foreach_env_runner(
                lambda r: time.sleep(30),
                local_env_runner=False,
                remote_worker_ids=[1],
                timeout_seconds=0.5,
            )
        assert algo.env_runner_group.healthy_env_runner_ids() == [2]
        assert len(live_worker_pids()) == 1
    finally:
        algo.stop()


@pytest.mark.slow
def test_context_manager_and_garbage_collection_end_the_workers():
    with small_ppo(2).build() as algo:
        algo.train()
        assert len(live_worker_pids()) == 2
    assert live_worker_pids() == []
    algo = small_ppo(1).build()
    assert len(live_worker_pids()) == 1
    del algo
    import gc

    gc.collect()
    deadline = time.monotonic() + 30  # returns as soon as they are gone
    while live_worker_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_worker_pids() == []


@pytest.mark.slow
def test_workers_exit_when_the_training_process_dies(tmp_path):
    import signal
    import subprocess
    import sys

    script = tmp_path / "die.py"
    script.write_text(
        "import os, sys, time\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from helpers import small_ppo\n"
        "algo = small_ppo(2).build()\n"
        "print(' '.join(map(str, algo.env_runner_group.remote_pids().values())), flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker_pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(worker_pids) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30  # returns as soon as they are gone
    alive = worker_pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [
            p
            for p in worker_pids
            if os.path.exists(f"/proc/{p}")
            and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        ]
    assert alive == [], "worker processes outlived their SIGKILLed parent"


@pytest.mark.slow
def test_a_worker_that_fails_to_start_reports_the_env_error():
    def broken(cfg):
        raise RuntimeError("env cannot start")

    with pytest.raises(Exception, match="env cannot start") as info:
        small_ppo(2).environment(broken).build()
    assert "EnvRunner 1" in str(info.value) or "EnvRunner 2" in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("num_env_runners", [0, 2])
def test_same_seed_same_training(num_env_runners):
    def run():
        algo = small_ppo(num_env_runners).debugging(seed=11).build()
        results = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(3)]
        weights = algo.get_weights()
        algo.stop()
        return results, weights

    (r1, w1), (r2, w2) = run(), run()
    assert r1 == r2
    for name in w1:
        np.testing.assert_array_equal(w1[name], w2[name])


@pytest.mark.slow
def test_complete_episodes_mode_returns_only_finished_episodes():
    algo = small_ppo(1).env_runners(batch_mode="complete_episodes").build()
    try:
        episodes = algo.env_runner_group.foreach_env_runner(
            lambda r: [(ep.is_done, ep.t_started) for ep in r.sample()], local_env_runner=False
        )[0]
        more = algo.env_runner_group.foreach_env_runner(
            lambda r: [(ep.is_done, len(ep)) for ep in r.sample(num_episodes=3)],
            local_env_runner=False,
        )[0]
    finally:
        algo.stop()
    assert episodes and all(done and t0 == 0 for done, t0 in episodes)
    assert len(more) == 3 and all(done for done, _ in more)


def test_a_stopped_runner_says_it_has_no_env_for_calls_that_need_one():
    from trainer.runners.env_runner import EnvRunner

    runner = EnvRunner(small_ppo(0).env_runners(num_envs_per_env_runner=2))
    assert runner.foreach_sub_env(lambda env, context: context.vector_index) == [0, 1]
    runner.stop()
    assert runner.foreach_env(lambda env: env) == []  # no sub-envs to run it on
    for call in (
        lambda: runner.foreach_sub_env(lambda env, context: None),
        lambda: runner.set_tasks([1, 2]),
    ):
        with pytest.raises(RuntimeError, match=r"EnvRunner 0 has no env \(it was stopped"):
            call()
    with pytest.raises(RuntimeError, match="EnvRunner 0 has no env"):
        runner.sample(num_timesteps=10)


@pytest.mark.parametrize(
    ("mode", "vector_class"),
    [("sync", gym.vector.SyncVectorEnv), ("async", gym.vector.AsyncVectorEnv)],
)
def test_the_runners_vector_env_is_reached_as_rllib_reaches_it(mode, vector_class):
    """RLlib's `env_runner.env.env` (its vector env under its `DictInfoToList` wrapper) is the
    gymnasium vector env here too, and answers gymnasium's calls; `.unwrapped` as well."""
    from trainer.runners.env_runner import EnvRunner

    runner = EnvRunner(
        small_ppo(0).env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode=mode)
    )
    try:
        assert isinstance(runner.env.env, vector_class)
        assert runner.env.env is runner.env.unwrapped is runner.env
        assert runner.env.env.get_attr("_sutton_barto_reward") == (False, False)
        assert sum(len(e) for e in runner.sample(num_timesteps=10, random_actions=True)) >= 10
    finally:
        runner.stop()


def test_random_actions_follow_the_seed_and_still_run_the_module():
    """`sample(random_actions=True)`: the action space's draws, seeded from the runner's
    generator (the same seed draws the same actions), with the module's distribution inputs
    recorded at every step."""

    def random_actions(seed):
        algo = small_ppo(0).environment("CartPole-v1").debugging(seed=seed).build()
        try:
            episodes = algo.env_runner.sample(num_timesteps=40, random_actions=True)
        finally:
            algo.stop()
        for episode in episodes:
            inputs = episode.get_extra_model_outputs("action_dist_inputs")
            assert len(inputs) == len(episode)
        return np.concatenate([np.asarray(episode.get_actions()) for episode in episodes])

    first = random_actions(0)
    assert len(first) >= 40 and set(first.tolist()) == {0, 1}
    np.testing.assert_array_equal(random_actions(0), first)
    assert not np.array_equal(random_actions(1)[:40], first[:40])
