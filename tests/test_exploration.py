"""The exploration API: built-in types, a user subclass, explore switches and bad configs."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from trainer import ConfigError, EpsilonGreedy, Exploration, SoftQ, StochasticSampling
from trainer.core.exploration import ActionDistribution
from trainer.core.nn import Categorical
from trainer.core.schedules import Schedule


class AlwaysAction(Exploration):
    """A user exploration: always the configured action, whatever the model says."""

    def __init__(self, action_space, *, action: int = 0, **kwargs):
        super().__init__(action_space, **kwargs)
        self.action = action

    def get_exploration_action(self, *, action_distribution, timestep, explore=True):
        actions = np.full(len(action_distribution.inputs), self.action)
        return actions, action_distribution.logp(actions)


def _distribution(logits, seed=0) -> ActionDistribution:
    return ActionDistribution(
        Categorical, np.asarray(logits, np.float32), np.random.default_rng(seed)
    )


def test_schedules_interpolate_and_hold_the_last_value():
    schedule = Schedule([(0, 1.0), (100, 0.0), (200, 0.5)])
    assert [schedule.value(t) for t in (0, 50, 100, 150, 200, 10**6)] == [
        1.0,
        0.5,
        0.0,
        0.25,
        0.5,
        0.5,
    ]
    assert Schedule(0.3).value(12345) == 0.3


def test_built_in_explorations_through_their_action_distributions():
    space = gym.spaces.Discrete(2)
    # One action is far more likely: sampling picks it, except while acting randomly.
    logits = np.tile([8.0, -8.0], (2000, 1))
    sampling = StochasticSampling(space, random_timesteps=100)
    early, _ = sampling.get_exploration_action(
        action_distribution=_distribution(logits), timestep=50
    )
    late, _ = sampling.get_exploration_action(
        action_distribution=_distribution(logits), timestep=100
    )
    assert 0.4 < early.mean() < 0.6 and late.mean() < 0.01
    # EpsilonGreedy: the greedy action, replaced by a random one with probability epsilon.
    greedy = EpsilonGreedy(space, initial_epsilon=1.0, final_epsilon=0.2, epsilon_timesteps=1000)
    actions, _ = greedy.get_exploration_action(
        action_distribution=_distribution(logits), timestep=5000
    )
    assert greedy.get_info() == {"cur_epsilon": pytest.approx(0.2)}
    assert 0.07 < actions.mean() < 0.13  # half of the random 20% are action 1
    # SoftQ: a high temperature flattens the distribution, a low one sharpens it.
    hot = SoftQ(space, temperature=100.0).get_exploration_action(
        action_distribution=_distribution(logits), timestep=0
    )[0]
    cold = SoftQ(space, temperature=0.1).get_exploration_action(
        action_distribution=_distribution(logits), timestep=0
    )[0]
    assert 0.4 < hot.mean() < 0.6 and cold.mean() == 0.0
    # explore=False is the greedy action for every type.
    for exploration in (sampling, greedy, SoftQ(space)):
        actions, _ = exploration.get_exploration_action(
            action_distribution=_distribution(-logits), timestep=0, explore=False
        )
        assert np.all(actions == 1)


@pytest.mark.slow
def test_user_exploration_subclass_runs_in_the_worker_processes():
    config = small_ppo(1).exploration(exploration_config={"type": AlwaysAction, "action": 1})
    algo = config.build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=100)
        assert all(np.all(ep.get_actions() == 1) for ep in episodes)
        assert algo.compute_single_action(np.zeros(4, np.float32)) == 1
    finally:
        algo.stop()


def test_explore_switch_and_per_call_override():
    algo = small_ppo(0, lr=0.001).env_runners(explore=False).build()
    try:
        obs = np.array([0.0, 0.0, 0.05, 0.0], np.float32)
        # The config says no exploration: always the most likely action.
        assert len({algo.compute_single_action(obs) for _ in range(30)}) == 1
        # explore=True per call samples (the fresh policy is close to uniform).
        assert len({algo.compute_single_action(obs, explore=True) for _ in range(60)}) == 2
        episodes = algo.env_runner_group.local_env_runner.sample(num_timesteps=50)
        module = algo.learner.module
        for episode in episodes:
            logits = module.dist_inputs(module.spaces.preprocess(episode.observations[:-1]))
            assert np.array_equal(episode.actions, logits.argmax(axis=1))
    finally:
        algo.stop()


def test_exploration_config_by_name_and_rllib_path_and_update():
    config = small_ppo().exploration(
        exploration_config={
            "type": "ray.rllib.utils.exploration.epsilon_greedy.EpsilonGreedy",
            "initial_epsilon": 0.5,
            "final_epsilon": 0.5,
            "epsilon_timesteps": 10,
        }
    )
    algo = config.build()
    try:
        assert isinstance(algo.exploration, EpsilonGreedy)
        assert algo.train()["env_runners"]["cur_epsilon"] == pytest.approx(0.5)
    finally:
        algo.stop()
    # Without "type" the dict updates the algorithm's default exploration.
    updated = small_ppo().exploration(exploration_config={"random_timesteps": 7})
    assert updated.get_exploration_config() == {"type": "StochasticSampling", "random_timesteps": 7}


@pytest.mark.parametrize(
    "exploration_config, message",
    [
        ({"type": "Curiosity"}, "must be one of"),
        ({"type": "EpsilonGreedy", "initial_epsilon": 2.0}, "initial_epsilon"),
        ({"type": "SoftQ", "temperature": 0}, "temperature=0"),
        ({"type": "SoftQ", "temp": 1.0}, "no argument 'temp'"),
        ({"type": dict}, "must subclass"),
        ({"random_timesteps": -1}, "random_timesteps=-1"),
        ("EpsilonGreedy", "must be a dict"),
    ],
)
def test_bad_exploration_configs_fail_at_the_call(exploration_config, message):
    with pytest.raises(ConfigError, match=message):
        small_ppo().exploration(exploration_config=exploration_config)


def test_epsilon_greedy_needs_discrete_actions():
    config = small_ppo(0, env="Pendulum-v1").exploration(
        exploration_config={"type": "EpsilonGreedy"}
    )
    with pytest.raises(ValueError, match="EpsilonGreedy' needs a Discrete action space"):
        config.build()
