"""Bad numbers and bad settings are caught where they enter: NaN or infinite observations and
rewards in the EnvRunner, a NaN loss in the learner before the weights change, counts given as
bools, a callback holding a file opened for reading, a callback the worker cannot unpickle."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import CallbackError
from trainer import ConfigError
from trainer.errors import EnvDataError, EnvRunnerError, NonFiniteUpdateError


class BadNumbersEnv(gym.Env):
    """CartPole-like: 2 actions, 4 floats; at step `at` of every episode it returns NaN or inf
    in the field env_config["field"] ("observation" or "reward")."""

    def __init__(self, config=None):
        config = config or {}
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.at = config.get("at", 5)
        self.field = config.get("field", "observation")
        self.value = config.get("value", np.nan)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        obs, reward = np.full(4, 0.1, np.float32), 1.0
        if self.t == self.at:
            if self.field == "observation":
                obs[2] = self.value
            else:
                reward = self.value
        return obs, reward, False, self.t >= 20, {}


def _config(num_env_runners=0, **env_config):
    return (
        small_ppo(num_env_runners)
        .environment(BadNumbersEnv, env_config=env_config)
        .fault_tolerance(restart_failed_env_runners=False)
    )


def test_a_nan_observation_is_refused_naming_runner_sub_env_step_and_field():
    with _config(at=5).build() as algo:
        with pytest.raises(
            EnvDataError,
            match="EnvRunner 0: sub-env 0 returned a NaN observation at step 5 of its episode",
        ):
            algo.train()


def test_an_infinite_reward_in_a_remote_runner_is_reported_with_its_index():
    with (
        _config(1, at=3, field="reward", value=np.inf)
        .env_runners(num_envs_per_env_runner=2)
        .build()
    ) as algo:
        with pytest.raises(EnvRunnerError) as error:
            algo.train()
        assert error.value.error_type == "EnvDataError"
        assert "EnvRunner 1: sub-env 0 returned an infinite reward at step 3" in str(error.value)
        assert "debugging(check_nan=False)" in str(error.value)


def test_without_the_check_a_nan_reward_is_stopped_by_the_learner_before_the_weights():
    config = _config(at=4, field="reward").debugging(check_nan=False)
    with config.build() as algo:
        before = algo.get_weights()
        with pytest.raises(NonFiniteUpdateError, match="PPO learner: the loss is NaN"):
            algo.train()
        for name, value in algo.get_weights().items():
            np.testing.assert_array_equal(value, before[name], err_msg=name)
            assert np.isfinite(value).all()


def test_check_nan_is_a_bool_setting():
    with pytest.raises(ConfigError, match="check_nan"):
        small_ppo().debugging(check_nan="yes")
    assert small_ppo().check_nan is True


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda c: c.learners(num_learners=True), "num_learners"),
        (lambda c: c.resources(num_gpus=False), "num_gpus"),
    ],
)
def test_counts_given_as_bools_are_refused(call, name):
    with pytest.raises(ConfigError, match=f"{name} is a count; give an int"):
        call(small_ppo())


def test_a_callback_holding_a_file_opened_for_reading_is_refused_at_build(tmp_path):
    (tmp_path / "log.txt").write_text("x")
    with open(tmp_path / "log.txt") as handle:
        config = small_ppo(1).callbacks(on_episode_end=lambda **kw: handle.read())
        with pytest.raises(ConfigError, match="an open file .*mode 'r'.* cannot be sent"):
            config.build()


def _refuse_to_arrive():
    raise ModuleNotFoundError("No module named 'only_on_the_driver'")


class _ArrivesBroken:
    """Pickles fine here; unpickling it (in the worker) raises, like a class whose module is
    missing on the other side."""

    def __reduce__(self):
        return (_refuse_to_arrive, ())


def test_a_callback_the_worker_cannot_unpickle_is_named_with_the_runner_index():
    broken = _ArrivesBroken()

    def on_episode_end(**kwargs):
        return broken

    config = small_ppo(1).callbacks(on_episode_end=on_episode_end)
    with pytest.raises(CallbackError) as error:
        config.build()
    assert error.value.env_runner_index == 1
    assert "on_episode_end" in error.value.callback_name
    assert "only_on_the_driver" in str(error.value)
