"""`trainer.testing`'s ports of RLlib's test helpers (`check`, the example-script driver)."""

import numpy as np
import pytest

from trainer.testing import add_rllib_example_script_args, check


def test_check_compares_nested_values_with_tolerances():
    check(
        {"a": [1.0, np.array([2.0, 3.0])], "b": "x"}, {"a": [1.0, np.array([2.0, 3.0])], "b": "x"}
    )
    check(1.0, 1.4, atol=0.5)
    check(1.0, 2.0, false=True)
    with pytest.raises(AssertionError):
        check(1.0, 1.001)
    with pytest.raises(AssertionError):
        check({"a": 1}, {"a": 1}, false=True)
    with pytest.raises(AssertionError):
        check({"a": 1}, {"b": 1})


def test_example_script_args_parse_rllib_command_lines():
    parser = add_rllib_example_script_args(default_reward=450.0)
    args = parser.parse_args(
        [
            "--num-env-runners",
            "2",
            "--evaluation-duration",
            "auto",
            "--no-tune",
            "--framework",
            "torch",
        ]
    )
    assert args.num_env_runners == 2 and args.evaluation_duration == "auto"
    assert args.stop_reward == 450.0 and args.algo == "PPO"


# -- the example driver, through example-style scripts run as a user runs them ---------------
import json  # noqa: E402 - the driver's tests below
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: An RLlib-style example script (imports changed only): a callback reports "score" (high in
#: the first iteration only) and "task_solved" (from iteration 3 on); the stop dict and the
#: success metric come from the command line so that each test picks its rules.
SCRIPT = textwrap.dedent("""
    import json, sys
    from callbacks import RLlibCallback
    from trainer.algorithms.ppo import PPOConfig
    from trainer.testing import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    parser = add_rllib_example_script_args(default_reward=450.0, default_iters=50)
    parser.add_argument("--stop-json", type=str, default=None)
    parser.add_argument("--success-json", type=str, default=None)


    class Scores(RLlibCallback):
        def on_train_result(self, *, algorithm, result, **kwargs):
            result["score"] = 10.0 if result["training_iteration"] == 1 else 0.0
            result["task_solved"] = float(result["training_iteration"] >= 3)


    if __name__ == "__main__":
        args = parser.parse_args()
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .callbacks(Scores)
            .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [8]})
        )
        stop = json.loads(args.stop_json) if args.stop_json else None
        success = json.loads(args.success_json) if args.success_json else None
        results = run_rllib_example_script_experiment(
            config, args, stop=stop, success_metric=success)
        if isinstance(results, dict):
            print("RETURNED dict", results["training_iteration"])
        else:
            best = results.get_best_result(metric="score", mode="max", scope="all")
            print("RETURNED", type(results).__name__, len(results), results.num_errors,
                  results.num_terminated, results.errors,
                  [r.metrics["training_iteration"] for r in results],
                  best.metrics["training_iteration"],
                  results[0].checkpoint.path if results[0].checkpoint else None,
                  len(results[0].best_checkpoints))
""")


def _run_script(tmp_path, *args, env=None):
    script = tmp_path / "example.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, str(script), "--num-env-runners", "1", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )


def _returned(completed):
    assert completed.returncode == 0, completed.stderr[-3000:]
    return next(line for line in completed.stdout.splitlines() if line.startswith("RETURNED"))


@pytest.mark.slow
def test_driver_stops_on_any_stop_metric_and_returns_a_result_grid(tmp_path):
    # Tune's rule: the first stop metric reached ends the trial; "task_solved" is the script's.
    completed = _run_script(
        tmp_path,
        "--stop-json",
        json.dumps({"training_iteration": 10, "task_solved": 1.0}),
        "--num-samples",
        "2",
        "--checkpoint-freq",
        "2",
        "--checkpoint-at-end",
    )
    returned = _returned(completed)
    # Two trials of three iterations each; checkpoints after 2 and at the end (3).
    # (The best trial's `metrics` is its last result, as in Tune.)
    assert returned.startswith("RETURNED ResultGrid 2 0 2 [] [3, 3] 3 ")
    checkpoint = returned.split()[-2]
    assert checkpoint.startswith(str(tmp_path / "ray_results" / "PPO_"))
    assert checkpoint.endswith("checkpoint_000001") and returned.split()[-1] == "2"
    assert os.path.isfile(os.path.join(checkpoint, "metadata.json"))
    assert len([line for line in completed.stdout.splitlines() if line.startswith("iter")]) == 6


@pytest.mark.slow
def test_driver_default_stop_uses_rllib_keys(tmp_path):
    # RLlib's default stop dict: env_runners/num_env_steps_sampled_lifetime among them.
    returned = _returned(_run_script(tmp_path, "--stop-timesteps", "400"))
    assert returned == "RETURNED ResultGrid 1 0 1 [] [2] 2 None 0"


@pytest.mark.slow
def test_as_test_checks_the_best_value_over_the_run(tmp_path):
    # "score" is 10 in the first iteration and 0 after it: RLlib's rule takes the best value.
    stop = json.dumps({"training_iteration": 3})
    completed = _run_script(
        tmp_path, "--as-test", "--stop-json", stop, "--success-json", json.dumps({"score": 5.0})
    )
    assert _returned(completed).startswith("RETURNED ResultGrid 1 0 1 [] [3]")
    assert "`score` of 5.0 reached! ok" in completed.stdout
    failed = _run_script(
        tmp_path, "--as-test", "--stop-json", stop, "--success-json", json.dumps({"score": 20.0})
    )
    assert failed.returncode != 0
    assert "ValueError: `score` of 20.0 not reached! Best value reached is 10.0" in failed.stderr


@pytest.mark.slow
def test_as_release_test_writes_rllib_summary(tmp_path):
    out = tmp_path / "summary.json"
    completed = _run_script(
        tmp_path,
        "--as-release-test",
        "--stop-iters",
        "1",
        "--success-json",
        json.dumps({"score": 5}),
        env={"TEST_OUTPUT_JSON": str(out)},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["passed"] == [True] and summary["best_value"] == 10.0
    assert summary["success_metric"] == "score" and summary["stats"]["training_iteration"] == 1


@pytest.mark.slow
def test_no_tune_returns_the_last_result_and_flags_like_rllib(tmp_path):
    completed = _run_script(
        tmp_path,
        "--no-tune",
        "--stop-json",
        json.dumps({"training_iteration": 5, "task_solved": 1.0}),
    )
    assert _returned(completed) == "RETURNED dict 3"
    assert "Stop criterion (task_solved=1.0) fulfilled!" in completed.stdout
    assert [
        line.split()[0] for line in completed.stdout.splitlines() if line.startswith("iter=")
    ] == ["iter=0", "iter=1", "iter=2"]
    # RLlib 2.60 refuses the removed flags; --old-api-stack runs the new stack.
    removed = _run_script(tmp_path, "--enable-new-api-stack")
    assert (
        removed.returncode != 0
        and "`--enable-new-api-stack` flag no longer supported" in removed.stderr
    )
    old = _run_script(tmp_path, "--old-api-stack", "--no-tune", "--stop-iters", "1")
    assert _returned(old) == "RETURNED dict 1"
    assert old.stderr.count("api_stack(...=False)") == 1


def test_every_rllib_argument_with_its_default():
    import ast
    import importlib.util

    # RLlib 2.60's own parser, read from the installed wheel (it cannot be imported here).
    spec = importlib.util.find_spec("ray")
    if spec is None:
        pytest.skip("ray (the test extra) is not installed")
    source = Path(spec.origin).parent / "rllib" / "examples" / "utils.py"
    tree = ast.parse(source.read_text())
    function = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "add_rllib_example_script_args"
    )
    expected = {}
    for call in ast.walk(function):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument":
            flag = call.args[0].value
            keywords = {k.arg: k.value for k in call.keywords}
            default = keywords.get("default")
            value = (
                False
                if keywords.get("action") is not None
                else (
                    None
                    if default is None
                    else ast.literal_eval(default)
                    if not isinstance(default, ast.Name)
                    else default.id
                )
            )
            expected[flag] = value
    ours = {
        action.option_strings[0]: action.default
        for action in add_rllib_example_script_args(default_reward=100.0)._actions
        if action.option_strings[0] != "-h"
    }
    substituted = {"default_reward": 100.0, "default_iters": 200, "default_timesteps": 100000}
    expected = {flag: substituted.get(value, value) for flag, value in expected.items()}
    assert ours == expected


#: RLlib's curriculum example (rllib/examples/curriculum/curriculum_learning.py) in short: its
#: callback keeps the current task in `algorithm._counters` and re-makes every EnvRunner's
#: FrozenLake with the next map; the threshold is -1 so that every iteration moves one task on.
CURRICULUM = textwrap.dedent("""
    from functools import partial
    from callbacks import DefaultCallbacks
    from trainer import get_trainable_cls
    from trainer.connectors.env_to_module import FlattenObservations
    from trainer.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN
    from trainer.testing import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    parser = add_rllib_example_script_args(default_iters=3, default_timesteps=600000)
    MAPS = [["SFG", "FFF", "FFF"], ["SFF", "FFG", "FFF"], ["SFF", "FFF", "FFG"]]


    def _remote_fn(env_runner, new_task):
        env_runner.config.environment(env_config={"desc": MAPS[new_task]})
        env_runner.make_env()


    class EnvTaskCallback(DefaultCallbacks):
        def on_train_result(self, *, algorithm, metrics_logger=None, result, **kwargs):
            current_task = algorithm._counters["current_env_task"]
            result["task"] = current_task
            if result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN] > -1.0 and current_task < 2:
                new_task = current_task + 1
                print(f"Switching task/map on all EnvRunners to #{new_task}")
                algorithm.env_runner_group.foreach_worker(
                    func=partial(_remote_fn, new_task=new_task))
                algorithm._counters["current_env_task"] = new_task


    if __name__ == "__main__":
        args = parser.parse_args()
        config = (
            get_trainable_cls(args.algo).get_default_config()
            .callbacks(EnvTaskCallback)
            .environment("FrozenLake-v1", env_config={"desc": MAPS[0], "is_slippery": False,
                                                      "max_episode_steps": 16})
            .env_runners(num_envs_per_env_runner=2,
                         env_to_module_connector=lambda env: FlattenObservations())
            .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        )
        results = run_rllib_example_script_experiment(
            config, args, stop={"training_iteration": args.stop_iters})
        print("TASKS", [r["task"] for r in results[0].all_metrics])
""")


@pytest.mark.slow
def test_curriculum_example_keeps_its_task_in_the_counters(tmp_path):
    script = tmp_path / "curriculum.py"
    script.write_text(CURRICULUM)
    completed = subprocess.run(
        [sys.executable, str(script), "--num-env-runners", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert [line for line in completed.stdout.splitlines() if line.startswith("Switching")] == [
        "Switching task/map on all EnvRunners to #1",
        "Switching task/map on all EnvRunners to #2",
    ]
    assert "TASKS [0, 1, 2]" in completed.stdout


def test_result_grid_best_result_scopes_and_errors():
    from trainer.result_grid import Result, ResultGrid

    def trial(scores, error=None):
        rows = [
            {"training_iteration": i + 1, "env_runners": {"episode_return_mean": s}}
            for i, s in enumerate(scores)
        ]
        return Result(metrics=rows[-1], config={}, path=None, error=error, all_metrics=rows)

    early, steady = trial([90.0, 10.0]), trial([40.0, 50.0])
    crashed = trial([float("nan")], error=RuntimeError("boom"))
    grid = ResultGrid([early, steady, crashed])
    metric = "env_runners/episode_return_mean"
    assert grid.get_best_result(metric, "max") is steady  # scope "last"
    assert grid.get_best_result(metric, "max", scope="all") is early
    assert grid.get_best_result(metric, "min", scope="avg") is steady
    assert grid.num_errors == 1 and grid.num_terminated == 2
    assert [str(e) for e in grid.errors] == ["boom"] and grid[1] is steady and len(grid) == 3
    with pytest.raises(ValueError, match="needs a metric and a mode"):
        grid.get_best_result()
    # As Tune's: one trial is the best, with no metric asked for.
    assert ResultGrid([early]).get_best_result() is early
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            grid.get_dataframe()
    else:
        frame = grid.get_dataframe(filter_metric=metric, filter_mode="max")
        assert list(frame[metric][:2]) == [90.0, 50.0]


# -- RLlib's test_utils checks, driven on real algorithms with one worker process ------------------
from types import SimpleNamespace  # noqa: E402

import gymnasium as gym  # noqa: E402

from trainer.algorithms.dqn import DQNConfig  # noqa: E402
from trainer.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from trainer.examples.envs.classes.random_env import RandomEnv  # noqa: E402
from trainer.launcher import ray_api  # noqa: E402
from trainer.testing import (  # noqa: E402
    check_compute_single_action,
    check_inference_w_connectors,
    check_learning_achieved,
    check_off_policyness,
    check_reproducibilty,
    check_same_batch,
    check_supported_spaces,
    check_train_results,
    check_train_results_new_api_stack,
    should_stop,
)


def _tiny_ppo(env: str = "CartPole-v1", runners: int = 1) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=runners)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=1)
    )


def _tiny_dqn() -> DQNConfig:
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=16, num_steps_sampled_before_learning_starts=32)
        .reporting(min_sample_timesteps_per_iteration=32)
        .debugging(seed=1)
    )


@pytest.fixture
def ppo_run():
    """A PPO algorithm on CartPole (one EnvRunner process) and its first two results."""
    with _tiny_ppo().build() as algo:
        results = [algo.train(), algo.train()]
        yield algo, results


@pytest.mark.slow
def test_should_stop_reads_nested_metric_paths(ppo_run):
    _, results = ppo_run
    result = results[-1]
    returned = result["env_runners"]["episode_return_mean"]
    assert should_stop({"env_runners/episode_return_mean": returned}, result, keep_ray_up=True)
    assert not should_stop(
        {"env_runners/episode_return_mean": returned + 1}, result, keep_ray_up=True
    )
    assert should_stop({"training_iteration": 2}, result, keep_ray_up=True)
    # Missing keys, NaN and non-numeric values meet nothing.
    assert not should_stop({"env_runners/nope": 0, "date": 0}, result, keep_ray_up=True)
    assert not should_stop({"a/b": 0.0}, {"a": {"b": float("nan")}}, keep_ray_up=True)
    # Without keep_ray_up a met criterion shuts down what ray.init() started (the launcher's).
    ray_api.init(ignore_reinit_error=True)
    assert not should_stop({"training_iteration": 3}, result)
    assert ray_api.is_initialized()
    assert should_stop({"training_iteration": 2}, result)
    assert not ray_api.is_initialized()


@pytest.mark.slow
def test_check_learning_achieved_takes_the_best_row(ppo_run):
    _, results = ppo_run
    best = max(r["env_runners"]["episode_return_mean"] for r in results)
    check_learning_achieved(results, best)
    with pytest.raises(ValueError, match="episode_return_mean` of"):
        check_learning_achieved(results, best + 0.5)
    check_learning_achieved(results, 2, metric="training_iteration")
    # Tune's Result objects (`.metrics`) count as rows too.
    check_learning_achieved([SimpleNamespace(metrics=r) for r in results], best)
    # evaluation=None prefers the evaluation value where a row has one.
    row = {
        "env_runners": {"episode_return_mean": 5.0},
        "evaluation": {"env_runners": {"episode_return_mean": 50.0}},
    }
    check_learning_achieved(row, 50.0)
    with pytest.raises(ValueError):
        check_learning_achieved(row, 50.0, evaluation=False)


@pytest.mark.slow
def test_train_results_layout_of_ppo_and_dqn(ppo_run):
    _, results = ppo_run
    assert check_train_results_new_api_stack(results[-1]) is results[-1]
    check_train_results(results[-1])
    with _tiny_dqn().build() as dqn:
        dqn_result = dqn.train()
        dqn_result = dqn.train()
        check_compute_single_action(dqn)
        check_inference_w_connectors(dqn, "CartPole-v1", max_steps=20)
    check_train_results_new_api_stack(dqn_result)
    check_train_results(dqn_result)
    broken = dict(results[-1])
    del broken["fault_tolerance"]
    with pytest.raises(AssertionError, match="fault_tolerance"):
        check_train_results_new_api_stack(broken)
    with pytest.raises(AssertionError, match="not a scalar"):
        check_train_results_new_api_stack(
            {**results[-1], "learners": {"default_policy": {"loss_max": [1.0, 2.0]}}}
        )
    with pytest.raises(AssertionError, match="default_policy"):
        check_train_results_new_api_stack({**results[-1], "learners": {"other": {}}})
    with pytest.raises(AssertionError, match="not a python dict"):
        check_train_results_new_api_stack({**results[-1], "config": _tiny_ppo()})
    with pytest.raises(AssertionError, match="time_total_s"):
        check_train_results({k: v for k, v in results[-1].items() if k != "time_total_s"})


@pytest.mark.slow
def test_off_policyness_is_read_from_the_learner_results(ppo_run):
    _, results = ppo_run
    # The learners here sample with the current weights: they log no such metric.
    assert check_off_policyness(results[-1], upper_limit=0.0) is None
    result = {"learners": {"default_policy": {"diff_num_grad_updates_vs_sampler_policy": 0.3}}}
    assert check_off_policyness(result, upper_limit=0.4) == 0.3
    with pytest.raises(AssertionError, match="outside the given bounds"):
        check_off_policyness(result, upper_limit=0.2)
    with pytest.raises(AssertionError):
        check_off_policyness(result, upper_limit=1.0, lower_limit=0.5)


@pytest.mark.slow
def test_compute_single_action_checks_discrete_and_box_actions(ppo_run):
    algo, _ = ppo_run
    check_compute_single_action(algo)
    check_compute_single_action(algo, include_state=True)
    with pytest.raises(ValueError, match="include_prev_action_reward"):
        check_compute_single_action(algo, include_prev_action_reward=True)
    # An algorithm whose actions leave CartPole's Discrete(2) fails the check.
    real = algo.compute_single_action
    algo.compute_single_action = lambda *args, **kwargs: real(*args, **kwargs) + 2
    with pytest.raises(ValueError, match="not in Env's action_space"):
        check_compute_single_action(algo)
    del algo.compute_single_action
    with _tiny_ppo("Pendulum-v1").build() as pendulum:
        check_compute_single_action(pendulum)


@pytest.mark.slow
def test_inference_with_connectors_runs_an_episode(ppo_run):
    algo, _ = ppo_run
    check_inference_w_connectors(algo, "CartPole-v1", max_steps=20)
    # The same observations with one action only: the policy's actions (0 or 1) leave the
    # space at the first 1.
    gym.register("CartPoleOneAction-v0", entry_point=_OneActionCartPole)
    with pytest.raises(ValueError, match="not in CartPoleOneAction-v0's action space"):
        check_inference_w_connectors(algo, "CartPoleOneAction-v0", max_steps=200)


class _OneActionCartPole(gym.Wrapper):
    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))
        self.action_space = gym.spaces.Discrete(1)


@pytest.mark.slow
def test_same_batch_compares_sampled_columns(ppo_run):
    algo, _ = ppo_run
    episodes, _ = algo.env_runner_group.sample(min_env_steps=20, explore=False)
    batch = {
        "obs": np.concatenate([np.asarray(e.get_observations()[:-1]) for e in episodes]),
        "actions": np.concatenate([np.asarray(e.get_actions()) for e in episodes]),
        "unroll_id": 3,
    }
    same = {
        key: (value.copy() if isinstance(value, np.ndarray) else value)
        for key, value in batch.items()
    }
    check_same_batch(batch, same)
    check_same_batch(batch, {k: v for k, v in same.items() if k != "unroll_id"})
    changed = dict(same, actions=same["actions"] + 1)
    with pytest.raises(AssertionError):
        check_same_batch(batch, changed)
    with pytest.raises(AssertionError, match="rewards"):
        check_same_batch(batch, dict(same, rewards=np.zeros(3)))
    with pytest.raises(AssertionError):
        check_same_batch(batch, dict(same, unroll_id=4))
    with pytest.raises(AssertionError, match="different types"):
        check_same_batch(batch, list(batch.values()))
    with pytest.raises(ValueError, match="Unsupported batch type"):
        check_same_batch([1], [1])


@pytest.mark.slow
def test_reproducibility_of_seeded_runs_and_its_failure():
    config = _tiny_ppo().training(train_batch_size=32, minibatch_size=16)
    check_reproducibilty(PPO, config, fw_kwargs={"frameworks": ("torch",)}, training_iteration=2)
    # RandomEnv draws from unseeded spaces: two seeded runs differ and the check says so.
    unseeded = config.copy(copy_frozen=False).environment(
        RandomEnv,
        env_config={"observation_space": gym.spaces.Box(-1.0, 1.0, (3,)), "p_terminated": 0.2},
    )
    with pytest.raises(AssertionError):
        check_reproducibilty(PPO, unseeded, fw_kwargs={})


@pytest.mark.slow
def test_supported_spaces_of_ppo_and_dqn():
    ppo = check_supported_spaces(
        "PPO", _tiny_ppo(runners=1).training(train_batch_size=16, minibatch_size=16)
    )
    assert set(ppo) == {
        ("discrete", "discrete"),
        ("continuous", "discrete"),
        *(("discrete", o) for o in ("multi_binary", "continuous", "image", "tuple", "dict")),
    }
    # The numpy modules take Box and Discrete observations (images flattened), Discrete and Box
    # actions; RLlib's other observation spaces need a flattening wrapper here.
    assert {key for key, status in ppo.items() if status == "ok"} == {
        ("discrete", "discrete"),
        ("continuous", "discrete"),
        ("discrete", "continuous"),
        ("discrete", "image"),
    }
    # DQN in the driver process (no EnvRunner processes): only its builds are checked.
    dqn = check_supported_spaces("DQN", _tiny_dqn().env_runners(num_env_runners=0), train=False)
    assert dqn[("discrete", "discrete")] == "ok"
    assert dqn[("continuous", "discrete")] == "unsupported"


def test_grid_search_runs_one_trial_per_value_and_build_refuses_the_marker(tmp_path, monkeypatch):
    """RLlib's async_gym_env_vectorization example puts tune.grid_search(["sync", "async"])
    into env_runners(); the driver runs one trial per value, in the grid's order."""
    from trainer.algorithms.algorithm_config import ConfigError
    from trainer.algorithms.ppo import PPOConfig
    from trainer.launcher.tune_api import grid_search
    from trainer.testing import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    monkeypatch.setenv("HOME", str(tmp_path))
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=2, gym_env_vectorize_mode=grid_search(["sync", "async"])
        )
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    assert config.grid_settings() == {"gym_env_vectorize_mode": ["sync", "async"]}
    with pytest.raises(ConfigError, match="gym_env_vectorize_mode=grid_search"):
        config.build()
    with pytest.raises(ConfigError, match="gym_env_vectorize_mode must be"):
        PPOConfig().env_runners(gym_env_vectorize_mode=grid_search(["sync", "nope"]))
    args = add_rllib_example_script_args().parse_args(["--stop-iters=1", "--num-env-runners=0"])
    results = run_rllib_example_script_experiment(config, args)
    assert len(results) == 2 and results.num_errors == 0
    assert [r.metrics["training_iteration"] for r in results] == [1, 1]
    assert [r.config["gym_env_vectorize_mode"] for r in results] == ["sync", "async"]
