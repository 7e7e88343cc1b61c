"""Learner results through `train()`, as RLlib 2.60 names and places them: each module's
`module_train_batch_size_mean` (the mean size of the batches its gradient steps took) under
`result["learners"][module_id]`, for PPO and DQN, numpy and torch learners, one module or
several."""

import importlib.util

import pytest

from trainer import DQNConfig, PPOConfig
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.metrics import LEARNER_RESULTS, MODULE_TRAIN_BATCH_SIZE_MEAN

TORCH = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="the torch learners need torch"
)


def _two_modules(config, **training):
    return (
        config.environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}")
        .training(**training)
    )


def _ppo(framework, multi_agent):
    # 250 steps in minibatches of 100: 100, 100, then the remainder of 50 (half a minibatch
    # is kept), in each of 2 epochs: a mean of 250 / 3.
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=0, rollout_fragment_length=250)
        .training(train_batch_size=250, minibatch_size=100, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    return _two_modules(config) if multi_agent else config


def _dqn(framework, multi_agent):
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=0)
        .training(train_batch_size=24, num_steps_sampled_before_learning_starts=50)
        .reporting(min_sample_timesteps_per_iteration=100)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    if not multi_agent:
        return config
    buffer = {"type": "MultiAgentPrioritizedEpisodeReplayBuffer"}
    return _two_modules(config, replay_buffer_config=buffer)


@pytest.mark.parametrize(
    "framework, multi_agent",
    [
        ("numpy", False),
        ("numpy", True),
        pytest.param("torch", False, marks=TORCH),
        pytest.param("torch", True, marks=TORCH),
    ],
)
def test_ppo_logs_the_mean_minibatch_size_per_module(framework, multi_agent):
    with _ppo(framework, multi_agent).build() as algo:
        learners = algo.train()[LEARNER_RESULTS]
    if multi_agent:  # each module trains on its own agent's steps: fewer than 250
        assert 0 < learners["p0"][MODULE_TRAIN_BATCH_SIZE_MEAN] <= 100
        assert 0 < learners["p1"][MODULE_TRAIN_BATCH_SIZE_MEAN] <= 100
    else:
        assert learners["default_policy"][MODULE_TRAIN_BATCH_SIZE_MEAN] == pytest.approx(250 / 3)


@pytest.mark.parametrize(
    "framework, multi_agent",
    # (Multi-agent DQN trains numpy Q-modules only.)
    [("numpy", False), ("numpy", True), pytest.param("torch", False, marks=TORCH)],
)
def test_dqn_logs_its_train_batch_size_per_module(framework, multi_agent):
    with _dqn(framework, multi_agent).build() as algo:
        for _ in range(2):
            learners = algo.train()[LEARNER_RESULTS]
    for module_id in ["p0", "p1"] if multi_agent else ["default_policy"]:
        assert learners[module_id][MODULE_TRAIN_BATCH_SIZE_MEAN] == 24
