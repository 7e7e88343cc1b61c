"""Two RLlib 2.60 behaviours through the public API.

- The offline algorithms (BC, MARWIL, IQL, CQL) build and train from recorded data without an
  env, their networks built for `environment(observation_space=..., action_space=...)`; their
  configs validate without an env (and without `input_`: RLlib's IQL and MARWIL config tests
  validate such configs); only evaluating in an env needs one, and says so.
- `algo.get_module()` is the local EnvRunner's inference-only module (RLlib's
  `Algorithm.get_module`): a torch module without value-function weights, with the learner's
  weights; the learner's whole module is `algo.learner_module()`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trainer.algorithms.appo import APPOConfig
from trainer.algorithms.bc import BCConfig
from trainer.algorithms.cql import CQLConfig
from trainer.algorithms.iql import IQLConfig
from trainer.algorithms.marwil import MARWILConfig
from trainer.algorithms.ppo import PPOConfig
from trainer.errors import ConfigError
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
OFFLINE_CONFIGS = [BCConfig, MARWILConfig, IQLConfig, CQLConfig]


def _write_bandit(path, rows: int = 256) -> str:
    """One-step episodes in RLlib's column layout: the reward is best for action 0.5 * obs[0]."""
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1.0, 1.0, (rows, 2)).astype(np.float32)
    actions = rng.uniform(-1.0, 1.0, (rows, 1)).astype(np.float32)
    table = pa.table(
        {
            "eps_id": [str(i) for i in range(rows)],
            "obs": obs.tolist(),
            "actions": actions.tolist(),
            "rewards": -((actions[:, 0] - 0.5 * obs[:, 0]) ** 2),
            "new_obs": obs.tolist(),
            "terminateds": np.ones(rows, dtype=bool),
            "truncateds": np.zeros(rows, dtype=bool),
        }
    )
    pq.write_table(table, path / "bandit.parquet")
    return str(path / "bandit.parquet")


def _without_env(config_class, data: str, framework: str = "numpy"):
    return (
        config_class()
        .framework(framework)
        .environment(observation_space=OBS_SPACE, action_space=ACTION_SPACE)
        .offline_data(input_=data, dataset_num_iters_per_learner=1)
        .training(train_batch_size_per_learner=32)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


# -- offline algorithms without an env ----------------------------------------------------------
@pytest.mark.parametrize(
    ("config_class", "framework"),
    [(c, "numpy") for c in OFFLINE_CONFIGS] + [(IQLConfig, "torch"), (BCConfig, "torch")],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_an_offline_algorithm_builds_and_trains_without_an_env(tmp_path, config_class, framework):
    config = _without_env(config_class, _write_bandit(tmp_path), framework)
    config.validate()
    algo = config.build_algo()
    try:
        assert algo.env_runner.env is None  # no env made, no runner processes
        assert algo.env_runner_group.num_remote_env_runners() == 0
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] > 0
        assert result["learners"]["__all_modules__"]["num_env_steps_trained"] > 0
        action = algo.compute_single_action(np.zeros(2, np.float32), explore=False)
        assert ACTION_SPACE.contains(np.asarray(action, np.float32).reshape(1))
        assert algo.get_module() is not None
        # Evaluating needs an env: a clear error, not a sampling failure.
        with pytest.raises(ValueError, match=r"evaluation runs episodes in an env.*no env"):
            algo.evaluate()
    finally:
        algo.stop()


def test_no_env_runner_processes_start_for_an_offline_algorithm_without_env(tmp_path):
    config = _without_env(BCConfig, _write_bandit(tmp_path)).env_runners(num_env_runners=2)
    algo = config.build_algo()
    try:
        assert algo.env_runner_group.num_remote_env_runners() == 0
        assert algo.train()["num_env_steps_sampled_lifetime"] == 32
    finally:
        algo.stop()


def test_offline_evaluation_needs_no_env_but_evaluation_in_an_env_does(tmp_path):
    data = _write_bandit(tmp_path)
    algo = _without_env(MARWILConfig, data).evaluation(offline_evaluation_interval=1).build_algo()
    try:
        assert "evaluation" in algo.train()
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match=r"evaluation_interval=1.*no env"):
        _without_env(MARWILConfig, data).evaluation(evaluation_interval=1).validate()


@pytest.mark.parametrize("config_class", [IQLConfig, MARWILConfig, BCConfig, CQLConfig])
def test_offline_configs_validate_without_env_or_data_and_refuse_to_build(config_class):
    """RLlib's validate() passes with neither an env nor input_ (its IQL and MARWIL config
    tests); building needs the recorded data, and without an env the spaces."""
    config_class().offline_data(dataset_num_iters_per_learner=1).validate()
    with pytest.raises(ConfigError, match="learns from recorded data"):
        config_class().build_algo()
    with pytest.raises(ConfigError, match=r"observation_space=\.\.\., action_space=\.\.\."):
        config_class().offline_data(input_="data.parquet").build_algo()


@pytest.mark.parametrize(("beta", "ok"), [(0.1, True), (1.0, True), (0.0, False), (3.0, False)])
def test_iql_beta_is_checked_without_an_env(beta, ok):
    config = IQLConfig().training(beta=beta).offline_data(dataset_num_iters_per_learner=1)
    if ok:
        config.validate()
    else:
        with pytest.raises(ConfigError, match="`beta`"):
            config.validate()


def test_online_algorithms_still_need_an_env():
    with pytest.raises(ConfigError, match="no env is set"):
        PPOConfig().environment(observation_space=OBS_SPACE, action_space=ACTION_SPACE).validate()


# -- get_module: the local EnvRunner's inference-only module -------------------------------------
@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_get_module_is_the_env_runners_inference_only_module(num_env_runners):
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=10)
        .training(train_batch_size_per_learner=20)
        .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": True})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        module = algo.get_module("default_policy")
        assert isinstance(module, torch.nn.Module)
        assert module.inference_only
        names = [name for name, _ in module.named_parameters()]
        assert len(names) == 4 and not any(name.startswith("vf") for name in names), names
        assert not any("vf" in key or "target" in key for key in module.get_state())
        out = module.forward_inference({"obs": torch.zeros(3, 4)})
        assert tuple(out["action_dist_inputs"].shape) == (3, 2)
        # The learner's whole module has the value head.
        learner = algo.learner_module()
        assert not learner.inference_only
        assert any(name.startswith("vf") for name, _ in learner.named_parameters())
    finally:
        algo.stop()


def test_get_module_holds_the_learners_weights_after_a_training_step():
    """PPO syncs the weights after each update: the EnvRunner's copy is the learner's."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        before = {k: v.clone() for k, v in algo.get_module().state_dict().items()}
        algo.train()
        module, learned = algo.get_module(), algo.learner_module().state_dict()
        assert any(
            not torch.equal(value, before[key]) for key, value in module.state_dict().items()
        )
        for key, value in module.state_dict().items():
            assert torch.equal(value, learned[key]), key
    finally:
        algo.stop()


def _agent_to_module(agent_id, *args, **kwargs) -> str:
    return f"p{agent_id}"


def test_get_module_of_a_multi_agent_algorithm_is_the_runners_copy():
    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .framework("torch")
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_agent_to_module)
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    algo = config.build()
    try:
        for module_id in ("p0", "p1"):
            module = algo.get_module(module_id)
            assert module.inference_only
            assert not any(name.startswith("vf") for name, _ in module.named_parameters())
            learner = algo.learner_module(module_id)
            assert any(name.startswith("vf") for name, _ in learner.named_parameters())
        with pytest.raises(KeyError, match="p7"):
            algo.get_module("p7")
    finally:
        algo.stop()
