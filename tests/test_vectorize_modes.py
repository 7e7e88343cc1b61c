"""`env_runners(gym_env_vectorize_mode=...)`: "sync", "async" (gymnasium's AsyncVectorEnv)
and "vector_entry_point" (one numpy-vectorized env), through the public API with real worker
processes: training, curriculum (tasks per sub-env), sub-env recovery, checkpoints, and the
errors where a mode cannot do what is asked."""

import os
import time

import gymnasium as gym
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from helpers import LevelEnv, level_return, small_ppo

from trainer import Algorithm, AlgorithmConfig, register_env
from trainer.algorithms.algorithm_config import ConfigError
from trainer.env.env_runner import SingleAgentEnvRunner
from trainer.env.vectorize import SUB_ENV_FAILURE_KEY


def runner_info(algo, func):
    return algo.env_runner_group.foreach_env_runner(func, local_env_runner=False)


@pytest.mark.parametrize("mode", ["async", "vector_entry_point", gym.VectorizeMode.ASYNC])
def test_training_with_workers_in_each_mode(mode):
    config = small_ppo(2).env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode=mode)
    with config.build() as algo:
        kinds = runner_info(algo, lambda r: type(r.env).__mro__)
        expected = CartPoleVectorEnv if mode == "vector_entry_point" else gym.vector.AsyncVectorEnv
        assert all(expected in mro for mro in kinds)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 200
        assert result["env_runners"]["num_episodes"] > 0


def test_async_sub_envs_step_in_their_own_processes():
    config = (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode="async")
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        pids = runner.foreach_env(lambda env: os.getpid())
        assert len(set(pids)) == 3 and os.getpid() not in pids
        # The function travels to the sub-envs' processes: it may not capture the runner.
        with pytest.raises(
            TypeError, match="runs in each sub-env's child process and travels there by cloudpickle"
        ):
            runner.foreach_env(lambda env: (env, runner))
        assert len(runner.sample(num_timesteps=30, random_actions=True)) >= 3
    finally:
        runner.stop()


@pytest.mark.slow
def test_env_task_fn_sets_each_async_sub_env_its_own_task():
    def task_fn(train_results, task_settable_env, env_ctx):
        assert isinstance(task_settable_env, LevelEnv)
        return (
            train_results["training_iteration"] * 100
            + env_ctx.worker_index * 10
            + env_ctx.vector_index
        )

    config = (
        small_ppo(2)
        .environment(LevelEnv, env_task_fn=task_fn)
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="async")
    )
    with config.build() as algo:
        assert runner_info(algo, lambda r: r.get_tasks()) == [[0, 0], [0, 0]]
        algo.train()
        assert runner_info(algo, lambda r: r.get_tasks()) == [[110, 111], [120, 121]]
        # foreach_env reaches the sub-envs in their child processes too.
        algo.env_runner_group.foreach_env_runner(
            lambda r: r.foreach_env(lambda env: env.set_task(3))
        )
        assert runner_info(algo, lambda r: r.get_tasks()) == [[3, 3], [3, 3]]


@pytest.mark.slow
def test_async_checkpoint_keeps_tasks(tmp_path):
    config = (
        small_ppo(2)
        .environment(LevelEnv)
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="async")
        .reporting(metrics_num_episodes_for_smoothing=1)
    )
    with config.build() as algo:
        algo.env_runner_group.foreach_env_runner(
            lambda er: (lambda task: er.foreach_env(lambda env: env.set_task(task)))(
                er.worker_index * 4
            ),
            local_env_runner=False,
        )
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
    with Algorithm.from_checkpoint(path) as restored:
        assert runner_info(restored, lambda r: r.get_tasks()) == [[4, 4], [8, 8]]
        assert runner_info(restored, lambda r: r.vectorize_mode) == ["async", "async"]
        result = restored.train()
        low, high = sorted((level_return(4), level_return(8)))
        assert low - 1e-9 <= result["env_runners"]["episode_return_mean"] <= high + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "vector_entry_point"])
def test_restart_failed_sub_environments_with_workers(mode):
    # "async": each sub-env is re-created in its child process; "vector_entry_point": the
    # whole vector env (both sub-envs crash at their 25th step here).
    if mode == "async":
        env, env_config = LevelEnv, {"crash_at_step": 25}
    else:
        env, env_config = "crash-vec", {"crash_at_step": 25}
    config = (
        small_ppo(2)
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode=mode)
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    with config.build() as algo:
        if mode == "async":
            algo.env_runner_group.foreach_env_runner(
                lambda er: er.foreach_env(lambda env: env.set_task(2))
            )
        pids = algo.env_runner_group.remote_pids()
        result = algo.train()
        assert algo.env_runner_group.remote_pids() == pids  # no runner restarted
        if mode == "async":  # the re-created sub-envs are back on their task
            assert runner_info(algo, lambda r: r.get_tasks()) == [[2, 2], [2, 2]]
    tolerance = result["fault_tolerance"]
    assert tolerance["num_sub_environment_restarts"] >= 2 * 2  # 2 sub-envs in each runner
    assert tolerance["num_env_steps_lost"] > 0
    assert tolerance["num_remote_worker_restarts"] == 0
    assert result["env_runners"]["num_env_steps_sampled"] >= 200


class CrashInSubEnvOne(LevelEnv):
    """LevelEnv (10-step episodes) whose sub-env 1 raises at its `crash_at_step`-th step,
    unless re-created."""

    def __init__(self, config=None):
        super().__init__(config)
        if getattr(config, "vector_index", 0) != 1:
            self._crash_at = None


@pytest.mark.slow
def test_async_recreates_only_the_sub_env_that_raised(caplog):
    config = (
        AlgorithmConfig()
        .environment(CrashInSubEnvOne, env_config={"crash_at_step": 5})
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="async")
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        runner.set_tasks([3, 4])
        episodes = runner.sample(num_timesteps=40, random_actions=True)
        assert runner.metrics.peek("num_sub_environment_restarts_lifetime") == 1
        assert runner.metrics.peek("num_env_steps_lost_lifetime") == 4
        # Sub-env 0 was not touched: its episodes run their 10 steps; sub-env 1's dropped
        # episode is not returned, and the re-created sub-env kept its task.
        by_env = {0: [], 1: []}
        for episode in episodes:
            by_env[episode.env_index].append(episode)
        # The 4 dropped steps do not count: the call samples on to 40 kept steps (RLlib
        # starts its count over), 22 vector steps, sub-env 0's third episode 2 steps in.
        assert [len(ep) for ep in by_env[0]] == [10, 10, 2]
        assert sum(len(ep) for ep in by_env[1]) == 22 - 4
        assert sum(len(ep) for ep in episodes) == 40
        assert all(ep.t_started == 0 for ep in by_env[1])
        assert runner.get_tasks() == [3, 4]
        assert all(SUB_ENV_FAILURE_KEY not in info for ep in episodes for info in ep.get_infos())
        assert "sub-env 1 raised RuntimeError in step(): LevelEnv crashed at step 5" in caplog.text
    finally:
        runner.stop()


@pytest.mark.slow
def test_without_restart_failed_sub_environments_an_async_failure_fails_the_runner():
    config = (
        AlgorithmConfig()
        .environment(LevelEnv, env_config={"crash_at_step": 5})
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="async")
    )
    runner = SingleAgentEnvRunner(config=config)
    try:
        with pytest.raises(RuntimeError, match="LevelEnv crashed at step 5"):
            runner.sample(num_timesteps=40, random_actions=True)
    finally:
        runner.stop()


@pytest.mark.slow
def test_what_needs_sub_envs_fails_clearly_in_vector_entry_point_mode():
    config = (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="vector_entry_point")
    )
    runner = SingleAgentEnvRunner(config=config)
    with pytest.raises(
        ValueError,
        match=r"foreach_env\(\) needs the EnvRunner's sub-envs, but "
        r"with env_runners\(gym_env_vectorize_mode="
        r"'vector_entry_point'\).*allowed with "
        r"gym_env_vectorize_mode='sync' or 'async'",
    ):
        runner.foreach_env(lambda env: env)
    assert runner.get_tasks() is None
    with pytest.raises(ValueError, match="setting the sub-envs' tasks needs"):
        runner.set_tasks([1, 1])
    runner.stop()
    task_fn_config = (
        small_ppo(0)
        .environment(LevelEnv, env_task_fn=lambda r, e, c: 1)
        .env_runners(gym_env_vectorize_mode="vector_entry_point")
    )
    with pytest.raises(
        ValueError,
        match=r"environment\(env_task_fn=...\) needs the "
        r"EnvRunner's sub-envs",
    ):
        task_fn_config.build()


def test_vector_entry_point_errors_name_the_setting():
    # A gymnasium id without a vector entry point.
    config = (
        AlgorithmConfig()
        .environment("Pendulum-v1")
        .env_runners(gym_env_vectorize_mode="vector_entry_point")
    )
    with pytest.raises(
        ValueError,
        match=r"gym_env_vectorize_mode='vector_entry_point'\): the "
        r"gymnasium env 'Pendulum-v1' has no "
        r"vector_entry_point.*'sync' or 'async'",
    ):
        SingleAgentEnvRunner(config=config)
    # A creator that gives a single env.
    config = (
        AlgorithmConfig()
        .environment(LevelEnv)
        .env_runners(gym_env_vectorize_mode="vector_entry_point")
    )
    with pytest.raises(TypeError, match="gave LevelEnv, not a gymnasium.vector.VectorEnv"):
        SingleAgentEnvRunner(config=config)
    # A vector env in "sync" mode: the error says which mode takes it.
    config = AlgorithmConfig().environment(lambda cfg: CartPoleVectorEnv(num_envs=2))
    with pytest.raises(
        TypeError,
        match=r"returned CartPoleVectorEnv, not a gymnasium.Env \(a "
        r"vector env: set env_runners\(gym_env_vectorize_mode="
        r"'vector_entry_point'\)\)",
    ):
        SingleAgentEnvRunner(config=config)
    with pytest.raises(
        ConfigError,
        match=r"gym_env_vectorize_mode='threads'.*one of \['sync', "
        r"'async', 'vector_entry_point'\]",
    ):
        AlgorithmConfig().env_runners(gym_env_vectorize_mode="threads")


class CrashingCartPoleVectorEnv(CartPoleVectorEnv):
    """CartPole's numpy-vectorized env whose `crash_at_step`-th step raises, unless it was
    re-created."""

    def __init__(self, config):
        recreated = getattr(config, "recreated_worker", False)
        kwargs = dict(config)
        crash_at = kwargs.pop("crash_at_step", None)
        self._crash_at = None if recreated else crash_at
        super().__init__(**kwargs)
        self._steps = 0

    def step(self, action):
        self._steps += 1
        if self._steps == self._crash_at:
            raise RuntimeError("the vector env crashed")
        return super().step(action)


register_env("crash-vec", CrashingCartPoleVectorEnv)


class StallOnceEnv(LevelEnv):
    """LevelEnv whose 3rd step sleeps 600 s the first time (across processes: a marker file)."""

    def __init__(self, config=None):
        super().__init__(config)
        self._marker = config["marker"]

    def step(self, action):
        if self._steps == 2 and not os.path.exists(self._marker):
            open(self._marker, "w").close()
            time.sleep(600)
        return super().step(action)


@pytest.mark.slow
def test_a_local_async_sample_past_its_deadline_leaves_a_working_runner(tmp_path):
    from trainer.errors import EnvRunnerTimeout
    from trainer.runners.env_runner_group import EnvRunnerGroup

    config = (
        AlgorithmConfig()
        .environment(StallOnceEnv, env_config={"marker": str(tmp_path / "stalled")})
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=2,
            gym_env_vectorize_mode="async",
            sample_timeout_s=2.0,
            rollout_fragment_length=10,
        )
    )
    group = EnvRunnerGroup(config=config)
    try:
        group.local_env_runner.set_tasks([5, 6])
        started = time.monotonic()
        with pytest.raises(EnvRunnerTimeout):
            group.sample(min_env_steps=20)
        assert time.monotonic() - started < 30
        episodes, _ = group.sample(min_env_steps=20)
        assert sum(len(ep) for ep in episodes) >= 20
        assert group.local_env_runner.get_tasks() == [5, 6]
    finally:
        group.stop()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_restored_runner_continues_the_episodes_exactly(mode):
    def runner():
        config = (
            AlgorithmConfig()
            .environment("CartPole-v1")
            .debugging(seed=7)
            .env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode=mode)
        )
        return SingleAgentEnvRunner(config=config)

    def trajectories(episodes):
        return sorted(
            (
                ep.env_index,
                ep.t_started,
                ep.get_observations().round(6).tobytes(),
                tuple(ep.get_actions().tolist()),
                ep.is_done,
            )
            for ep in episodes
        )

    original = runner()
    try:
        # Sample until a state holds both: a sub-env whose episode just ended (its autoreset
        # is owed at the next step) and episodes under way.
        for _ in range(300):
            original.sample(num_timesteps=3, random_actions=True)
            state = original.get_state()
            owed = state["sampling"]["autoreset_envs"]
            if owed.any() and not owed.all():  # (all three can end in one step)
                break
        assert state["sampling"]["autoreset_envs"].any()
        assert not state["sampling"]["autoreset_envs"].all()
        expected = trajectories(original.sample(num_timesteps=60, random_actions=True))
    finally:
        original.stop()
    restored = runner()
    try:
        restored.set_state(state)
        assert trajectories(restored.sample(num_timesteps=60, random_actions=True)) == expected
    finally:
        restored.stop()
