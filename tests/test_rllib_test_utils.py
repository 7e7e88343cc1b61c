"""`trainer.testing`'s ports of RLlib's test helpers (`check`, the example-script driver)."""

import numpy as np
import pytest

from trainer.testing import add_rllib_example_script_args, check


def test_check_compares_nested_values_with_tolerances():
    check({"a": [1.0, np.array([2.0, 3.0])], "b": "x"}, {"a": [1.0, np.array([2.0, 3.0])],
                                                         "b": "x"})
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
    args = parser.parse_args(["--num-env-runners", "2", "--evaluation-duration", "auto",
                              "--no-tune", "--framework", "torch"])
    assert args.num_env_runners == 2 and args.evaluation_duration == "auto"
    assert args.stop_reward == 450.0 and args.algo == "PPO"


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
    return (PPOConfig().environment(env).env_runners(num_env_runners=runners)
            .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
            .debugging(seed=1))


def _tiny_dqn() -> DQNConfig:
    return (DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=1)
            .training(train_batch_size=16, num_steps_sampled_before_learning_starts=32)
            .reporting(min_sample_timesteps_per_iteration=32).debugging(seed=1))


@pytest.fixture
def ppo_run():
    """A PPO algorithm on CartPole (one EnvRunner process) and its first two results."""
    with _tiny_ppo().build() as algo:
        results = [algo.train(), algo.train()]
        yield algo, results


def test_should_stop_reads_nested_metric_paths(ppo_run):
    _, results = ppo_run
    result = results[-1]
    returned = result["env_runners"]["episode_return_mean"]
    assert should_stop({"env_runners/episode_return_mean": returned}, result, keep_ray_up=True)
    assert not should_stop({"env_runners/episode_return_mean": returned + 1}, result,
                           keep_ray_up=True)
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
    row = {"env_runners": {"episode_return_mean": 5.0},
           "evaluation": {"env_runners": {"episode_return_mean": 50.0}}}
    check_learning_achieved(row, 50.0)
    with pytest.raises(ValueError):
        check_learning_achieved(row, 50.0, evaluation=False)


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
            {**results[-1], "learners": {"default_policy": {"loss_max": [1.0, 2.0]}}})
    with pytest.raises(AssertionError, match="default_policy"):
        check_train_results_new_api_stack({**results[-1], "learners": {"other": {}}})
    with pytest.raises(AssertionError, match="not a python dict"):
        check_train_results_new_api_stack({**results[-1], "config": _tiny_ppo()})
    with pytest.raises(AssertionError, match="time_total_s"):
        check_train_results({k: v for k, v in results[-1].items() if k != "time_total_s"})


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


def test_same_batch_compares_sampled_columns(ppo_run):
    algo, _ = ppo_run
    episodes, _ = algo.env_runner_group.sample(min_env_steps=20, explore=False)
    batch = {"obs": np.concatenate([np.asarray(e.get_observations()[:-1]) for e in episodes]),
             "actions": np.concatenate([np.asarray(e.get_actions()) for e in episodes]),
             "unroll_id": 3}
    same = {key: (value.copy() if isinstance(value, np.ndarray) else value)
            for key, value in batch.items()}
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


def test_reproducibility_of_seeded_runs_and_its_failure():
    config = _tiny_ppo().training(train_batch_size=32, minibatch_size=16)
    check_reproducibilty(PPO, config, fw_kwargs={"frameworks": ("torch",)},
                         training_iteration=2)
    # RandomEnv draws from unseeded spaces: two seeded runs differ and the check says so.
    unseeded = config.copy(copy_frozen=False).environment(RandomEnv, env_config={
        "observation_space": gym.spaces.Box(-1.0, 1.0, (3,)), "p_terminated": 0.2})
    with pytest.raises(AssertionError):
        check_reproducibilty(PPO, unseeded, fw_kwargs={})


def test_supported_spaces_of_ppo_and_dqn():
    ppo = check_supported_spaces("PPO", _tiny_ppo(runners=1).training(
        train_batch_size=16, minibatch_size=16))
    assert set(ppo) == {("discrete", "discrete"), ("continuous", "discrete"),
                        *(("discrete", o) for o in ("multi_binary", "continuous", "image",
                                                    "tuple", "dict"))}
    # The numpy modules take Box and Discrete observations (images flattened), Discrete and Box
    # actions; RLlib's other observation spaces need a flattening wrapper here.
    assert {key for key, status in ppo.items() if status == "ok"} == {
        ("discrete", "discrete"), ("continuous", "discrete"), ("discrete", "continuous"),
        ("discrete", "image")}
    # DQN in the driver process (no EnvRunner processes): only its builds are checked.
    dqn = check_supported_spaces("DQN", _tiny_dqn().env_runners(num_env_runners=0), train=False)
    assert dqn[("discrete", "discrete")] == "ok"
    assert dqn[("continuous", "discrete")] == "unsupported"
