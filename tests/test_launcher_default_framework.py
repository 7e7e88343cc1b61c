"""RLlib's default framework under the launcher: a config that chooses none runs on torch (when
torch is installed), as an unmodified RLlib script expects; `trainer`'s own imports keep numpy.
And what that brings to RLlib's calls: an EnvRunner's torch module travels back from a worker
process (`foreach_env_runner(lambda w: w.module)`) and is an RLModule; the torch APPO learner
takes RLlib's `update(batch=...)`."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import APPOConfig, PPOConfig  # noqa: E402
from trainer.algorithms.config.framework import launcher_default_framework  # noqa: E402
from trainer.core.rl_module import RLModule  # noqa: E402
from trainer.runners.env_runner_group import EnvRunnerGroup  # noqa: E402


def test_no_framework_chosen_is_torch_under_the_launcher_and_numpy_outside(hook):
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig

    assert launcher_default_framework() == "torch"
    config = RLlibPPOConfig().environment("CartPole-v1")
    assert config.framework_str == "torch" and AlgorithmConfig().framework_str == "torch"
    assert config.get_default_learner_class().__name__ == "PPOTorchLearner"
    assert not config.is_given("framework_str")
    # A framework chosen is kept, and framework(None) goes back to the default.
    assert RLlibPPOConfig().framework("numpy").framework_str == "numpy"
    assert RLlibPPOConfig().framework("numpy").framework(None).framework_str == "torch"


def test_trainers_own_imports_keep_numpy():
    assert launcher_default_framework() == "numpy"
    assert PPOConfig().framework_str == "numpy"
    assert PPOConfig().get_default_learner_class().__name__ == "PPOLearner"


@pytest.mark.slow
def test_a_runners_torch_module_comes_back_from_its_process_as_an_rlmodule():
    """With torch imported, the worker's reply used to go through multiprocessing's pickler,
    which sends a tensor as shared memory fetched with the worker's key: the main process
    refused it (AuthenticationError)."""
    config = PPOConfig().environment("CartPole-v1").framework("torch")
    group = EnvRunnerGroup(config=config.env_runners(num_env_runners=2))
    try:
        modules = group.foreach_env_runner(lambda w: w.module, local_env_runner=True)
        assert len(modules) == 3
        assert all(isinstance(module, RLModule) for module in modules)
        obs = torch.zeros((1, 4))
        for module in modules:  # each a working module, here in the main process
            logits = module.forward_inference({"obs": obs})["action_dist_inputs"]
            assert tuple(np.asarray(logits).shape) == (1, 2)
    finally:
        group.stop()


def test_the_torch_appo_learner_takes_rllibs_batch_update():
    from trainer.compat.rllib_utils import Columns
    from trainer.compat.sample_batch import SampleBatch

    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(rollout_fragment_length=3)
        .learners(num_learners=0)
    )
    learner_group = config.build_learner_group(env=None, spaces=_cartpole_spaces())
    rng = np.random.default_rng(0)
    batch = SampleBatch(
        {
            Columns.OBS: rng.normal(size=(3, 4)).astype(np.float32),
            Columns.NEXT_OBS: rng.normal(size=(3, 4)).astype(np.float32),
            Columns.ACTIONS: np.array([0, 1, 1]),
            Columns.REWARDS: np.array([1.0, -1.0, 0.5], np.float32),
            Columns.TERMINATEDS: np.array([False, False, True]),
            Columns.TRUNCATEDS: np.array([False, False, False]),
            Columns.ACTION_LOGP: np.array([-0.5, -0.1, -0.2], np.float32),
            Columns.EPS_ID: np.array([0, 0, 0]),
        }
    )
    before = {k: v.copy() for k, v in learner_group.get_weights()["default_policy"].items()}
    results = learner_group.update(batch=batch.as_multi_agent())
    after = learner_group.get_weights()["default_policy"]
    assert any(not np.array_equal(before[k], after[k]) for k in before)
    assert results is not None


def _cartpole_spaces():
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    return {"default_policy": (env.observation_space, env.action_space)}


@pytest.mark.slow
def test_multi_agent_dqn_without_a_framework_trains_numpy_modules_under_the_launcher(hook):
    """RLlib's multi_agent_cartpole_dqn.py chooses no framework: under the launcher it gets
    RLlib's default (torch), which multi-agent DQN does not run here; it trains the numpy
    Q-modules instead, with a warning. A script that asks for torch gets the refusal."""
    from ray.rllib.algorithms.dqn import DQNConfig as RLlibDQNConfig

    from trainer.errors import ConfigError
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    def config(framework=None):
        made = (
            RLlibDQNConfig()
            .environment(MultiAgentCartPole, env_config={"num_agents": 2})
            .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
            .training(
                num_steps_sampled_before_learning_starts=32,
                train_batch_size=16,
                replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": 1000},
            )
            .env_runners(num_env_runners=0)
        )
        return made if framework is None else made.framework(framework)

    assert config().framework_str == "torch"
    with pytest.warns(UserWarning, match="multi-agent DQN trains the numpy Q-modules"):
        algo = config().build()
    try:
        assert algo.config.framework_str == "numpy"
        result = algo.train()
        assert {"p0", "p1"} <= set(result["learners"])
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match=r"framework\('torch'\) in a multi-agent config"):
        config("torch").build()
