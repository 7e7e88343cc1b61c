"""Evaluation through the public API: schedule, durations, parallel mode, overrides, custom
function, callbacks, the in_evaluation flag and failing evaluation runners."""

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import RLlibCallback
from trainer import ConfigError, PPOConfig


class FlagEnv(gym.Env):
    """CartPole-like spaces; remembers env_config["flag"] so callbacks can report it."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, env_config):
        self.flag = env_config.get("flag", 0)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(4, 0.1, np.float32), 1.0, self.t >= 5, False, {}


class Report(RLlibCallback):
    """Logs, per EnvRunner, what the tests check: the runner's role, its env's flag, whether the
    actions were greedy, the weights it acted with, and its episode count."""

    def on_episode_end(self, *, episode, env_runner, metrics_logger, env, env_index, **kwargs):
        metrics_logger.log_value("in_evaluation", float(env_runner.config.in_evaluation), window=1)
        metrics_logger.log_value("flag", env.envs[env_index].unwrapped.flag, window=1)
        logits = np.asarray(episode.get_extra_model_outputs("action_dist_inputs"))
        greedy = np.mean(np.asarray(episode.get_actions()) == logits.argmax(axis=1))
        metrics_logger.log_value("greedy_fraction", greedy, reduce="min", clear_on_reduce=True)
        metrics_logger.log_value(
            "weights_sum", float(env_runner.module.flat_params.sum(dtype=np.float64)), window=1
        )
        metrics_logger.log_value(
            f"episodes_of_runner_{env_runner.worker_index}", 1, reduce="sum", clear_on_reduce=True
        )


def eval_ppo(**evaluation) -> PPOConfig:
    return (
        small_ppo(1)
        .environment(FlagEnv, env_config={"flag": 0})
        .callbacks(Report)
        .training(train_batch_size=100, minibatch_size=50, lr=0.01)
        .evaluation(**evaluation)
    )


def weights_sum(algo) -> float:
    return float(algo.learner.module.flat_params.sum(dtype=np.float64))


@pytest.mark.slow
def test_schedule_overrides_flag_and_sequential_weights():
    algo = eval_ppo(
        evaluation_interval=2,
        evaluation_num_env_runners=1,
        evaluation_config=PPOConfig.overrides(explore=False, env_config={"flag": 7}),
    ).build()
    try:
        results = []
        for _ in range(4):
            results.append(algo.train())
            results[-1]["weights_after"] = weights_sum(algo)
    finally:
        algo.stop()
    assert ["evaluation" in r for r in results] == [False, True, False, True]
    for result in results:
        training = result["env_runners"]
        assert training["in_evaluation"] == 0.0 and training["flag"] == 0
        assert training["greedy_fraction"] < 1.0  # sampling: not always the likeliest action
        if "evaluation" in result:
            evaluation = result["evaluation"]["env_runners"]
            assert evaluation["in_evaluation"] == 1.0 and evaluation["flag"] == 7
            assert evaluation["greedy_fraction"] == 1.0  # explore=False reached the policy
            # train(1->2), eval(2): evaluation uses the weights this iteration produced.
            assert evaluation["weights_sum"] == pytest.approx(result["weights_after"], rel=1e-9)
            assert evaluation["num_episodes"] == 10  # the default duration


@pytest.mark.slow
@pytest.mark.parametrize(
    "unit, duration, expected",
    [
        (
            "episodes",
            7,
            {
                "episodes_of_runner_1": 3,
                "episodes_of_runner_2": 2,
                "episodes_of_runner_3": 2,
                "num_episodes": 7,
            },
        ),
        # RLlib's split: 4, 3, 3 steps (FlagEnv's episodes have 5: none ends).
        ("timesteps", 10, {"num_env_steps_sampled": 10, "num_episodes": 0}),
        # 71, 70, 70 steps: 14 episodes each.
        ("timesteps", 211, {"num_env_steps_sampled": 211, "num_episodes": 42}),
    ],
)
def test_duration_splits_over_uneven_runner_counts(unit, duration, expected):
    algo = eval_ppo(
        evaluation_num_env_runners=3, evaluation_duration=duration, evaluation_duration_unit=unit
    ).build()
    try:
        evaluation = algo.evaluate()["env_runners"]
    finally:
        algo.stop()
    for key, value in expected.items():
        assert evaluation[key] == value, key


def _leaves(tree, path=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path, tree


def _not_numbers(result):
    """The leaves of a result dict that are not plain numbers (or str / None / lists)."""
    plain = (int, float, bool, str, type(None), list, np.number, np.bool_)
    return {path: value for path, value in _leaves(result) if not isinstance(value, plain)}


@pytest.mark.slow
@pytest.mark.parametrize("evaluation_num_env_runners", [0, 1])
def test_evaluate_gives_plain_numbers_also_after_a_restore(tmp_path, evaluation_num_env_runners):
    # 0: the round runs on the training local EnvRunner; 1: on an evaluation runner.
    config = eval_ppo(
        evaluation_num_env_runners=evaluation_num_env_runners, evaluation_duration=2
    ).env_runners(num_env_runners=0)
    algo = config.build()
    try:
        algo.train()
        fresh = algo.evaluate()
        algo.save_to_path(tmp_path)
    finally:
        algo.stop()
    restored = config.build()
    try:
        restored.restore_from_path(tmp_path)
        after_restore = restored.evaluate()
    finally:
        restored.stop()
    for result in (fresh, after_restore):
        assert _not_numbers(result) == {}
        assert result["env_runners"]["episode_return_mean"] >= 5.0  # FlagEnv: 5 steps of 1.0
        assert result["env_runners"]["num_episodes"] >= 2


@pytest.mark.slow
def test_a_timestep_budget_is_split_as_rllib_splits_it_over_the_runners():
    config = small_ppo(0).evaluation(
        evaluation_num_env_runners=3,
        evaluation_duration=211,
        evaluation_duration_unit="timesteps",
    )
    with config.build() as algo:
        evaluation = algo.evaluate()["env_runners"]
    assert evaluation["num_env_steps_sampled"] == 211  # 71 + 70 + 70
    assert evaluation["num_episodes"] >= 3  # an untrained CartPole episode lasts ~20 steps
    assert np.isfinite(evaluation["episode_return_mean"])


@pytest.mark.slow
def test_parallel_evaluation_lags_one_iteration_and_auto_ends_with_training():
    algo = eval_ppo(
        evaluation_interval=1,
        evaluation_num_env_runners=1,
        evaluation_parallel_to_training=True,
        evaluation_duration="auto",
        evaluation_duration_unit="timesteps",
    ).build()
    try:
        before = weights_sum(algo)
        sums, evaluated = [], []
        for _ in range(3):
            result = algo.train()
            evaluated.append(result["evaluation"]["env_runners"])
            sums.append(weights_sum(algo))
    finally:
        algo.stop()
    # train(0->1) + eval(0), train(1->2) + eval(1), ...
    assert [e["weights_sum"] for e in evaluated] == pytest.approx([before] + sums[:-1], rel=1e-9)
    assert all(e["num_env_steps_sampled"] >= 100 for e in evaluated)


@pytest.mark.slow
@pytest.mark.parametrize("duration", ["auto", 300])
def test_parallel_evaluation_without_thread(duration):
    """RLlib's `_evaluation_parallel_to_training_wo_thread`: same lag of one iteration, no
    thread; "auto" requests grow while the runners answer before training ends."""
    import threading

    algo = (
        eval_ppo(
            evaluation_interval=1,
            evaluation_num_env_runners=2,
            evaluation_parallel_to_training=True,
            evaluation_duration=duration,
            evaluation_duration_unit="timesteps",
        )
        .debugging(_evaluation_parallel_to_training_wo_thread=True)
        .build()
    )
    try:
        before = weights_sum(algo)
        threads = threading.active_count()
        sums, evaluated = [], []
        for _ in range(3):
            result = algo.train()
            evaluated.append(result["evaluation"]["env_runners"])
            sums.append(weights_sum(algo))
        assert threading.active_count() == threads
    finally:
        algo.stop()
    assert [e["weights_sum"] for e in evaluated] == pytest.approx([before] + sums[:-1], rel=1e-9)
    steps = [e["num_env_steps_sampled"] for e in evaluated]
    if duration == "auto":
        # One request per runner: 100 steps first, then doubled or halved (never below 100).
        assert steps[0] == 2 * 100 and all(s >= 200 and s % 200 == 0 for s in steps)
    else:
        assert steps == [300, 300, 300]


@pytest.mark.slow
def test_custom_function_and_evaluate_callbacks():
    events = []

    def custom(algorithm, eval_workers):
        events.append("custom")
        indices = eval_workers.foreach_env_runner(
            lambda runner: runner.worker_index, local_env_runner=False
        )
        return {"my_score": 42, "runners": indices}

    def on_end(algorithm, metrics_logger, evaluation_metrics):
        events.append("end")
        evaluation_metrics["added_by_callback"] = True

    config = eval_ppo(
        evaluation_interval=1, evaluation_num_env_runners=2, custom_evaluation_function=custom
    ).callbacks(
        on_evaluate_start=lambda algorithm, metrics_logger: events.append("start"),
        on_evaluate_end=on_end,
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert events == ["start", "custom", "end"]
    # The custom results, the callback's key, and the evaluation group's health, which RLlib
    # 2.60 adds after every evaluation round.
    assert result["evaluation"] == {
        "my_score": 42,
        "runners": [1, 2],
        "added_by_callback": True,
        "num_healthy_workers": 2,
        "actor_manager_num_outstanding_async_reqs": 0,
        "num_remote_worker_restarts": 0,
        "num_env_runners_dropped_lifetime": 0,
    }


@pytest.mark.slow
def test_without_restarts_a_killed_evaluation_runner_is_dropped():
    algo = (
        eval_ppo(evaluation_num_env_runners=2, evaluation_duration=4)
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
        .build()
    )
    try:
        # Built with the Algorithm (evaluation_num_env_runners > 0), as RLlib's.
        assert algo.eval_env_runner_group is not None
        assert algo.evaluate()["env_runners"]["num_episodes"] == 4
        pids = algo.eval_env_runner_group.remote_pids()
        os.kill(pids[1], signal.SIGKILL)
        # Dead before the round starts: still reported as a failure, not silently skipped.
        algo.eval_env_runner_group.remote_runner(1).process.wait(timeout=10)
        evaluation = algo.evaluate()
        assert (
            evaluation["env_runner_failures"]
            and "EnvRunner 1" in evaluation["env_runner_failures"][0]
        )
        assert algo.train()["training_iteration"] == 1  # training goes on
        assert algo.evaluate()["env_runners"]["num_episodes"] == 4  # on the runner left
        os.kill(pids[2], signal.SIGKILL)
        algo.evaluate()
        assert "no healthy evaluation EnvRunner" in algo.evaluate()["skipped"]
    finally:
        algo.stop()


#: Each round of the test below: when an evaluation runner dies (its index): killed just before
#: `evaluate()` without waiting for it to end, killed as the round starts (in
#: `on_evaluate_start`, while the weights go out), or killing itself in the round.
KILL_PLANS = {
    "restarts": [("before", 1), ("start", 2), ("during", 1)],
    "no restarts": [("before", 1), ("during", 2), ("start", 3)],
}


@pytest.mark.slow
@pytest.mark.parametrize("plan", list(KILL_PLANS))
def test_an_evaluation_runner_killed_around_a_round_start_is_in_that_rounds_report(plan, tmp_path):
    """Wherever a round notices the death (the weight sync that starts it, its look for dead
    runners, its sample requests), that round's report names the runner; restarted, or left
    out, and with no runner left the round is skipped, not raised. The weights are larger than
    a socket's buffer, so a kill at the round's start mostly lands while they are written."""
    restart = plan == "restarts"
    at_start: list[int] = []
    flags = str(tmp_path)

    def kill_at_round_start(algorithm, metrics_logger, **kwargs):
        while at_start:
            os.kill(algorithm.eval_env_runner_group.remote_pids()[at_start.pop()], signal.SIGKILL)

    def kill_itself_in_the_round(env_runner, **kwargs):
        flag = os.path.join(flags, f"kill_{env_runner.worker_index}")
        if env_runner.config.in_evaluation and os.path.exists(flag):
            os.remove(flag)
            os.kill(os.getpid(), signal.SIGKILL)

    algo = (
        eval_ppo(evaluation_num_env_runners=2 if restart else 3, evaluation_duration=4)
        .rl_module(model_config={"fcnet_hiddens": [256, 256]})
        .callbacks(on_evaluate_start=kill_at_round_start, on_episode_step=kill_itself_in_the_round)
        .fault_tolerance(restart_failed_env_runners=restart, ignore_env_runner_failures=True)
        .build()
    )
    try:
        group = algo.eval_env_runner_group
        for moment, index in KILL_PLANS[plan]:
            if moment == "before":
                os.kill(group.remote_pids()[index], signal.SIGKILL)
            elif moment == "start":
                at_start.append(index)
            else:
                open(os.path.join(flags, f"kill_{index}"), "w").close()
            evaluation = algo.evaluate()
            failures = evaluation.get("env_runner_failures", [])
            assert len(failures) == 1 and f"EnvRunner {index} " in failures[0], (moment, evaluation)
            if restart:
                assert evaluation["env_runners_restarted"] == [index]
        if restart:
            assert group.healthy_env_runner_ids() == [1, 2]
            assert algo.evaluate()["env_runners"]["num_episodes"] == 4
        else:
            assert evaluation["skipped"] == "no healthy evaluation EnvRunner is left"
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "evaluation, message",
    [
        ({"evaluation_duration": "auto"}, "needs evaluation_parallel_to_training=True"),
        ({"evaluation_parallel_to_training": True}, "needs evaluation_num_env_runners >= 1"),
    ],
)
def test_inconsistent_evaluation_settings_fail_validate(evaluation, message):
    with pytest.raises(ConfigError, match=message):
        small_ppo().evaluation(**evaluation).validate()


@pytest.mark.parametrize(
    "evaluation, message",
    [
        ({"evaluation_config": {"explor": False}}, "Did you mean 'explore'"),
        ({"evaluation_config": {"lr": -1}}, r"evaluation_config=\{'lr': -1\}\): lr must be"),
        ({"evaluation_duration": 0}, 'evaluation_duration must be "auto" or an int >= 1'),
        ({"evaluation_duration_unit": "steps"}, r"one of \['episodes', 'timesteps'\]"),
    ],
)
def test_bad_evaluation_values_fail_at_the_call(evaluation, message):
    with pytest.raises(ConfigError, match=message):
        small_ppo().evaluation(**evaluation)


@pytest.mark.slow
def test_without_restarts_a_stalled_evaluation_runner_times_out_and_training_goes_on():
    def stall_in_evaluation(env_runner, **kwargs):
        if env_runner.config.in_evaluation:
            import time

            time.sleep(30)

    algo = (
        eval_ppo(
            evaluation_interval=1, evaluation_num_env_runners=1, evaluation_sample_timeout_s=0.5
        )
        .callbacks(on_episode_start=stall_in_evaluation)
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
        .build()
    )
    try:
        result = algo.train()
        assert (
            "did not answer sample_metrics_only() within 0.5 s"
            in result["evaluation"]["env_runner_failures"][0]
        )
        assert result["evaluation"]["skipped"]
        assert algo.train()["evaluation"]["skipped"].startswith("no healthy evaluation")
    finally:
        algo.stop()


@pytest.mark.slow
def test_parallel_round_leaves_cores_to_evaluation_runners_and_gives_them_back():
    """Evaluation runners run in the idle scheduling class beside the training step, at normal
    priority once train() waits on them; while a parallel round runs, the learner's BLAS pool
    leaves one core per evaluation runner, and afterwards has its size back (bench/evaluation.py
    measures why: a full pool starves the learner or the evaluation)."""
    from threadpoolctl import ThreadpoolController

    from trainer.algorithms.evaluation import learner_blas_threads

    seen_during = []

    class SeeThreads(RLlibCallback):
        def on_evaluate_start(self, *, algorithm, **kwargs):
            pids = algorithm.eval_env_runner_group.remote_pids().values()
            seen_during.append([os.sched_getscheduler(pid) for pid in pids])

    def blas_threads():
        return [
            pool.num_threads
            for pool in ThreadpoolController().select(user_api="blas").lib_controllers
        ]

    before = blas_threads()
    algo = (
        eval_ppo(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_parallel_to_training=True,
            evaluation_duration="auto",
            evaluation_duration_unit="timesteps",
        )
        .callbacks(SeeThreads)
        .build()
    )
    try:
        during = []
        original_update = algo.learner.update
        algo.learner.update = lambda episodes, **kwargs: (
            during.append(blas_threads()),
            original_update(episodes, **kwargs),
        )[1]
        algo.train()
        # train() waits on the round at its end: at normal priority, the runners are not
        # starved by other busy processes (then in the idle class again for the next round).
        pids = algo.eval_env_runner_group.remote_pids().values()
        assert [os.sched_getscheduler(pid) for pid in pids] == [os.SCHED_OTHER]
        assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in pids] == [0]
        algo.train()
    finally:
        algo.stop()
    assert seen_during == [[os.SCHED_IDLE]] * 2
    expected = min(max(before), learner_blas_threads(1))
    assert during and all(n == expected for n in during[0])
    assert blas_threads() == before


class SchedulerRecordingEnv(gym.Env):
    """CartPole-like spaces; records the scheduling class of the process that builds it, in
    env_config["folder"] (one file per process)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()
        folder = (config or {})["folder"]
        with open(os.path.join(folder, f"{os.getpid()}.txt"), "w") as file:
            file.write(str(os.sched_getscheduler(0)))

    def reset(self, *, seed=None, options=None):
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, True, False, {}


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux's scheduling classes")
def test_parallel_evaluation_runners_start_at_normal_priority_then_go_to_the_background(
    tmp_path,
):
    """build() waits for the evaluation runners to start: they start at normal priority (in
    the idle class, busy processes on the machine starved their start past its time limit)
    and go to the background only once they have started."""
    algo = (
        small_ppo(1)
        .environment(SchedulerRecordingEnv, env_config={"folder": str(tmp_path)})
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_parallel_to_training=True,
        )
        .build()
    )
    try:
        eval_pids = list(algo.eval_env_runner_group.remote_pids().values())
        assert [os.sched_getscheduler(pid) for pid in eval_pids] == [os.SCHED_IDLE]
    finally:
        algo.stop()
    built = {int(path.stem): int(path.read_text()) for path in tmp_path.glob("*.txt")}
    assert eval_pids[0] in built
    assert built[eval_pids[0]] == os.SCHED_OTHER


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux's scheduling classes")
def test_sequential_rounds_runners_run_at_normal_priority():
    """A sequential round's evaluation runners are not in the idle class: training waits for
    them, and there any other busy process on the machine would starve them."""
    algo = eval_ppo(evaluation_interval=1, evaluation_num_env_runners=1).build()
    try:
        pids = algo.eval_env_runner_group.remote_pids().values()
        assert [os.sched_getscheduler(pid) for pid in pids] == [os.SCHED_OTHER]
        assert algo.train()["evaluation"]["env_runners"]["num_episodes"] > 0
    finally:
        algo.stop()


@pytest.mark.parametrize("num_envs", [1, 3, 4])
def test_an_episode_count_is_exact_when_several_sub_envs_end_in_the_last_step(num_envs):
    """`sample(num_episodes=n)` returns n episodes and counts n: episodes of other sub-envs that
    end in the step of the n-th are neither returned nor counted (RLlib stops at the count
    within the step). Random CartPole episodes of ~20 steps end together often."""
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
        .debugging(seed=0)
        .build()
    )
    try:
        runner = algo.env_runner
        runner.get_metrics()
        for call in range(100):
            episodes = runner.sample(num_episodes=7, random_actions=True)
            metrics = runner.get_metrics()
            assert len(episodes) == 7 and all(e.is_done for e in episodes)
            assert metrics["num_episodes"].peek() == 7, (call, metrics["num_episodes"])
    finally:
        algo.stop()


@pytest.mark.parametrize("num_envs", [1, 3, 4])
def test_an_evaluation_round_of_episodes_reports_exactly_its_duration(num_envs):
    """`evaluation_duration=7` episodes over two evaluation EnvRunner processes with several
    sub-envs each: every round reports 7 episodes."""
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=7,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=2,
            evaluation_config={"num_envs_per_env_runner": num_envs, "explore": True},
        )
        .debugging(seed=0)
        .build()
    )
    try:
        for _ in range(25):
            result = algo.evaluate()
            assert result["env_runners"]["num_episodes"] == 7, result["env_runners"]
    finally:
        algo.stop()
