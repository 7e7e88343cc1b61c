"""Envs that break gymnasium's API or misbehave, each run through the public API with a real
EnvRunner worker process: train() returns or raises within a bound, and the error (raised, or
listed in the result's fault-tolerance block with the runner left out) names the runner and says
what the env did wrong. Single-agent envs in "sync" and "async" vectorizing, and multi-agent envs."""

from __future__ import annotations

import os
import re
import time

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import EnvDataError, EnvRunnerFailure

#: Every train() here returns or raises within this many seconds.
BOUND_S = 20.0


class MisbehavingEnv(gym.Env):
    """A 4-float, 2-action env that breaks in the way env_config["bug"] names: in its
    constructor, its spaces, reset(), close(), or step() from the third step of each episode."""

    def __init__(self, config=None):
        self.bug = (config or {}).get("bug")
        if self.bug == "constructor raises":
            raise RuntimeError("cannot open the simulator")
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        if self.bug == "observation_space is a tuple":
            self.observation_space = (4,)
        if self.bug == "action_space is Text":
            self.action_space = gym.spaces.Text(5)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        observation = np.zeros(4, np.float32)
        return {
            "reset returns the observation alone": observation,
            "reset observation is a string": ("hello", {}),
            "reset observation has the wrong shape": (np.zeros(5, np.float32), {}),
            "reset info is not a dict": (observation, 5),
        }.get(self.bug, (observation, {}))

    def step(self, action):
        self.t += 1
        observation = np.zeros(4, np.float32)
        if self.t < 3:
            return observation, 1.0, False, False, {}
        if self.bug == "step sleeps":
            time.sleep(3600)
        if self.bug == "step exits":
            os._exit(3)
        broken = {
            "step returns 4 values": (observation, 1.0, False, {}),
            "step returns the observation alone": observation,
            "reward is a string": (observation, "1.0", False, False, {}),
            "reward is None": (observation, None, False, False, {}),
            "terminated is a string": (observation, 1.0, "no", False, {}),
            "info is None": (observation, 1.0, False, False, None),
            "observation is a string": ("hello", 1.0, False, False, {}),
            "observation is None": (None, 1.0, False, False, {}),
        }
        return broken.get(self.bug, (observation, 1.0, False, self.t >= 20, {}))

    def close(self):
        if self.bug == "close raises":
            raise RuntimeError("close failed")


def _config(bug: str, *, restart: bool = False, sample_timeout_s: float = 10.0) -> PPOConfig:
    return (
        PPOConfig()
        .environment(MisbehavingEnv, env_config={"bug": bug})
        .env_runners(
            num_env_runners=1, rollout_fragment_length=25, sample_timeout_s=sample_timeout_s
        )
        .training(train_batch_size=50, minibatch_size=25, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .fault_tolerance(restart_failed_env_runners=restart)
    )


_STEP_API = r"gymnasium's API returns 5 values: \(obs, reward, terminated, truncated, info\)"
_BOX = r"Box\(-1.0, 1.0, \(4,\), float32\)"

#: misbehaviour -> what the error must say (after "EnvRunner 1 ...").
BROKEN_ENVS = {
    "constructor raises": r"raised RuntimeError: cannot open the simulator",
    "observation_space is a tuple": (
        r"sub-env 0 \(MisbehavingEnv\)'s observation_space is \(4,\) \(a tuple\), not a "
        r"gymnasium.spaces.Space"
    ),
    "action_space is Text": (
        r"action space Text\(.*\) is not supported: Discrete, Box, MultiDiscrete, and Tuple "
        r"and Dict of those are"
    ),
    "reset returns the observation alone": (
        r"sub-env 0's reset\(\) returned array\(\[0., 0., 0., 0.\], dtype=float32\) \(an? "
        r"ndarray\); gymnasium's API returns 2 values: \(obs, info\)"
    ),
    "reset observation is a string": (
        rf"sub-env 0's reset\(\) returned the observation 'hello' \(a str\) where its "
        rf"observation space is {_BOX}"
    ),
    "reset observation has the wrong shape": (
        r"sub-env 0's reset\(\) returned an observation of shape \(5,\) where its observation "
        r"space .* has shape \(4,\)"
    ),
    "reset info is not a dict": (
        r"sub-env 0's reset\(\) returned the info 5 \(an int\); gymnasium's API returns a dict"
    ),
    "step returns 4 values": (
        rf"sub-env 0's step\(\) returned 4 values \(obs, reward, done, info: the old gym API "
        rf"before 0.26\); {_STEP_API}"
    ),
    "step returns the observation alone": rf"sub-env 0's step\(\) returned array\(.*{_STEP_API}",
    "reward is a string": (
        r"sub-env 0's step\(\) returned the reward '1.0' \(a str\); gymnasium's API returns "
        r"one number"
    ),
    "reward is None": r"sub-env 0's step\(\) returned the reward None \(a NoneType\)",
    "terminated is a string": (
        r"sub-env 0's step\(\) returned terminated='no' \(a str\); gymnasium's API returns a bool"
    ),
    "info is None": r"sub-env 0's step\(\) returned the info None \(a NoneType\)",
    "observation is a string": r"sub-env 0's step\(\) returned the observation 'hello' \(a str\)",
    "observation is None": r"sub-env 0's step\(\) returned the observation None \(a NoneType\)",
    "step exits": r"EnvRunner 1 crashed during sample\(\): it exited with code 3",
}


@pytest.mark.slow
@pytest.mark.parametrize("bug", list(BROKEN_ENVS))
def test_a_broken_env_is_raised_naming_the_runner_and_what_the_env_did(bug):
    start = time.monotonic()
    with pytest.raises(EnvRunnerFailure) as error:
        with _config(bug).build() as algo:
            algo.train()
    assert time.monotonic() - start < BOUND_S
    assert error.value.worker_index == 1
    assert "EnvRunner 1" in str(error.value)
    assert re.search(BROKEN_ENVS[bug], str(error.value)), str(error.value)


@pytest.mark.slow
def test_with_default_fault_tolerance_train_returns_and_lists_the_failure(caplog):
    start = time.monotonic()
    with _config("step returns 4 values", restart=True).build() as algo:
        result = algo.train()
    assert time.monotonic() - start < BOUND_S
    fault_tolerance = result["fault_tolerance"]
    assert fault_tolerance["num_remote_worker_restarts"] == 1
    failures = fault_tolerance["failures_this_iteration"]
    assert failures and all(
        failure.startswith(
            "EnvRunner 1 raised EnvDataError: EnvRunner 1: sub-env 0's step() returned 4 values"
        )
        for failure in failures
    )
    assert any(
        "EnvRunner 1 is left out until the next iteration" in r.message for r in caplog.records
    )


@pytest.mark.slow
def test_an_env_that_never_returns_is_timed_out_and_train_returns():
    start = time.monotonic()
    with _config("step sleeps", restart=True, sample_timeout_s=0.5).build() as algo:
        result = algo.train()
    assert time.monotonic() - start < BOUND_S
    assert result["env_runners"]["num_env_steps_sampled"] == 0
    assert result["fault_tolerance"]["failures_this_iteration"][0].startswith(
        "EnvRunner 1 did not answer sample() within 0.5 s; its process was killed"
    )


@pytest.mark.slow
def test_an_env_whose_close_raises_does_not_keep_stop_from_returning():
    start = time.monotonic()
    algo = _config("close raises").build()
    algo.train()
    algo.stop()
    assert time.monotonic() - start < BOUND_S


@pytest.mark.parametrize(
    "bug, shown",
    [
        ("step returns 4 values", r"sub-env 0's step\(\) returned 4 values"),
        ("reward is a string", r"sub-env 0's step\(\) returned the reward '1.0' \(a str\)"),
    ],
)
@pytest.mark.slow
def test_an_async_sub_env_is_checked_in_its_child_process(bug, shown):
    config = _config(bug).env_runners(gym_env_vectorize_mode="async")
    with pytest.raises(EnvRunnerFailure, match=rf"EnvRunner 1 raised EnvDataError: .*{shown}"):
        with config.build() as algo:
            algo.train()


def test_the_local_runner_is_named_too():
    config = _config("info is None").env_runners(num_env_runners=0)
    with pytest.raises(
        EnvDataError, match=r"^EnvRunner 0: sub-env 0's step\(\) returned the info None"
    ):
        with config.build() as algo:
            algo.train()


class MisbehavingMultiAgentEnv(MultiAgentEnv):
    """Two agents with 3-float observations; from the third step of each episode, step()
    breaks in the way env_config["bug"] names."""

    def __init__(self, config=None):
        super().__init__()
        self.bug = (config or {}).get("bug")
        self.agents = self.possible_agents = ["a0", "a1"]
        self.observation_spaces = {
            agent: gym.spaces.Box(-1.0, 1.0, (3,), np.float32) for agent in self.agents
        }
        self.action_spaces = {agent: gym.spaces.Discrete(2) for agent in self.agents}
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {agent: np.zeros(3, np.float32) for agent in self.agents}, {}

    def step(self, action_dict):
        self.t += 1
        observations = {agent: np.zeros(3, np.float32) for agent in self.agents}
        rewards = {agent: 1.0 for agent in self.agents}
        terminateds, truncateds = {"__all__": False}, {"__all__": self.t >= 20}
        if self.t >= 3 and self.bug == "step returns 4 values":
            return observations, rewards, terminateds, {}
        if self.t >= 3 and self.bug == "reward is a string":
            rewards["a1"] = "1.0"
        if self.t >= 3 and self.bug == "observation has the wrong shape":
            observations["a1"] = np.zeros(5, np.float32)
        return observations, rewards, terminateds, truncateds, {}


@pytest.mark.parametrize(
    "bug, shown",
    [
        (
            "step returns 4 values",
            r"sub-env 0: .*MisbehavingMultiAgentEnv.step\(\) returned .*; it must return a tuple "
            r"of five dicts",
        ),
        (
            "reward is a string",
            r"sub-env 0: .*the reward of agent 'a1' is '1.0' \(str\)",
        ),
        (
            "observation has the wrong shape",
            r"sub-env 0 returned an observation for agent 'a1' that is not in its observation "
            r"space Box\(-1.0, 1.0, \(3,\), float32\)",
        ),
    ],
)
@pytest.mark.slow
def test_a_broken_multi_agent_env_is_named_with_the_agent_and_what_it_returned(bug, shown):
    config = (
        _config(bug)
        .environment(MisbehavingMultiAgentEnv, env_config={"bug": bug})
        .multi_agent(policies={"p"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p")
    )
    start = time.monotonic()
    with pytest.raises(EnvRunnerFailure, match=rf"EnvRunner 1 raised EnvDataError: .*{shown}"):
        with config.build() as algo:
            algo.train()
    assert time.monotonic() - start < BOUND_S


def test_compute_single_action_names_an_observation_that_does_not_fit():
    with _config("").env_runners(num_env_runners=0).build() as algo:
        for observation, shown in (
            ("hello", r"observation='hello'\) \(a str, shape \(\)\)"),
            (np.zeros(7), r"\(an? ndarray, shape \(7,\)\)"),
        ):
            with pytest.raises(
                ValueError, match=rf"{shown}: the module takes observations of shape \(4,\)"
            ):
                algo.compute_single_action(observation)
        assert algo.compute_single_action(np.zeros(4, np.float32)) in (0, 1)


@pytest.mark.slow
def test_an_observation_space_setting_the_env_cannot_fill_is_named_at_start():
    config = _config("").environment(observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32))
    with pytest.raises(
        EnvRunnerFailure,
        match=r"environment\(observation_space=Box\(-1.0, 1.0, \(3,\), float32\)\) does not fit "
        r"the env's observation space Box\(-1.0, 1.0, \(4,\), float32\): the networks take 3 "
        r"numbers per observation and the env returns 4",
    ):
        config.build()


@pytest.mark.slow
def test_an_action_space_setting_the_env_cannot_take_is_named_at_start():
    config = _config("").environment(action_space=gym.spaces.Discrete(5))
    with pytest.raises(
        EnvRunnerFailure,
        match=r"environment\(action_space=Discrete\(5\)\) does not fit the env's action space "
        r"Discrete\(2\)",
    ):
        config.build()
