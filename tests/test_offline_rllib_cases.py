"""The cases RLlib 2.60's own BC, MARWIL and CQL tests check (rllib/algorithms/{bc,marwil,cql}
/tests, read for their cases; IQL's beta checks are in test_iql.py), written here against this
project's API on recorded data of its own: each algorithm builds with RLlib's default
framework (torch) and trains with evaluation EnvRunners running parallel to training; BC
learns CartPole from expert steps and then acts through `compute_single_action`; MARWIL's
reported losses are RLlib's formula computed outside the learner; the module MARWIL builds
(RLlib's default PPO module) serves inference, exploration and training; CQL clones for
`bc_iters` iterations, then trains its critics' policy, and its critics rate actions."""

from __future__ import annotations

import itertools
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest
from test_cql import _pendulum_table
from test_offline import _expert_table

from trainer.algorithms.bc import BCConfig
from trainer.algorithms.cql import CQLConfig
from trainer.algorithms.marwil import MARWILConfig
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cartpole_data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cartpole")
    pq.write_table(_expert_table(6000), folder / "expert.parquet", row_group_size=1000)
    return folder


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pendulum")
    pq.write_table(_pendulum_table(20, 0.3), folder / "steps.parquet", row_group_size=2000)
    return folder


def _parallel_evaluation(config, interval: int = 3):
    return config.evaluation(
        evaluation_interval=interval,
        evaluation_num_env_runners=1,
        evaluation_duration=5,
        evaluation_parallel_to_training=True,
    )


# -- MARWIL --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env_id", "data", "training"),
    [
        ("CartPole-v1", "cartpole_data", {"lr": 0.0008, "beta": 0.5}),
        ("Pendulum-v1", "pendulum_data", {"train_batch_size_per_learner": 1024}),
    ],
    ids=["discrete", "continuous"],
)
@pytest.mark.slow
def test_marwil_builds_and_trains_with_parallel_evaluation(env_id, data, training, request):
    folder = request.getfixturevalue(data)
    config = _parallel_evaluation(
        MARWILConfig()
        .environment(env_id)
        .framework("torch")
        .offline_data(input_=[f"local://{folder}"], dataset_num_iters_per_learner=1)
        .training(**{"train_batch_size_per_learner": 2000, **training})
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    learner = results[-1]["learners"]["default_policy"]
    assert {"policy_loss", "vf_loss", "total_loss"} <= set(learner)
    assert all(np.isfinite(learner[key]) for key in ("policy_loss", "vf_loss"))
    assert "evaluation" not in results[0]
    evaluation = results[2]["evaluation"]["env_runners"]
    assert evaluation["num_episodes"] >= 5
    assert np.isfinite(evaluation["episode_return_mean"])


def test_marwils_losses_are_rllibs_formula(cartpole_data):
    """policy_loss = -mean(exp(beta A / c) log pi(a|s)), vf_loss = 0.5 mean(A^2) with
    A = r + gamma V(s') - V(s) and c^2 = 100 + 1e-8 (mean(A^2) - 100) (the moving average's
    first step), total = policy_loss + vf_coeff vf_loss."""
    config = (
        MARWILConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .offline_data(input_=[str(cartpole_data)], dataset_num_iters_per_learner=1)
        .training(train_batch_size_per_learner=2000)
    )
    algo = config.build()
    try:
        batch = algo.offline_data.sample(2000)
        learner = algo.learner
        module = learner.rl_module
        with torch.no_grad():
            obs = torch.as_tensor(batch[Columns.OBS], dtype=torch.float32)
            next_obs = torch.as_tensor(batch[Columns.NEXT_OBS], dtype=torch.float32)
            values = module.compute_values({Columns.OBS: obs}).numpy().astype(np.float64)
            next_values = module.compute_values({Columns.OBS: next_obs}).numpy()
            logits = module.forward_train({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
            dist = module.get_train_action_dist_cls().from_logits(logits)
            logp = dist.logp(torch.as_tensor(batch[Columns.ACTIONS])).numpy()
        alive = 1.0 - np.asarray(batch[Columns.TERMINATEDS], dtype=np.float64)
        targets = batch[Columns.REWARDS] + config.gamma * alive * next_values
        advantages = targets - values
        advantages_squared = np.mean(advantages**2)
        c = np.sqrt(100.0 + 1e-8 * (advantages_squared - 100.0))
        expected_vf_loss = 0.5 * advantages_squared
        expected_policy_loss = -np.mean(np.exp(config.beta * advantages / c) * logp)
        expected_total = expected_policy_loss + config.vf_coeff * expected_vf_loss

        stats = learner.evaluation_loss(batch)
    finally:
        algo.stop()
    assert stats["vf_loss"] == pytest.approx(expected_vf_loss, rel=1e-4)
    assert stats["policy_loss"] == pytest.approx(expected_policy_loss, rel=1e-4)
    assert stats["total_loss"] == pytest.approx(expected_total, rel=1e-3)


def _marwil_module(env: gym.Env, hiddens=(64, 64), activation="relu", inference_only=False):
    config = (
        MARWILConfig()
        .environment(env.spec.id)
        .framework("torch")
        .rl_module(model_config={"fcnet_hiddens": list(hiddens), "fcnet_activation": activation})
    )
    assert config.get_default_rl_module_spec().module_class is DefaultPPOTorchRLModule
    return config.get_rl_module_spec(env=env, inference_only=inference_only).build()


def _observations(env: gym.Env, size: int):
    env.observation_space.seed(0)
    samples = [env.observation_space.sample() for _ in range(size)]
    return torch.as_tensor(np.array(samples), dtype=torch.float32)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_marwils_module_serves_inference_exploration_and_training(env_id):
    env = gym.make(env_id)
    try:
        module = _marwil_module(env, hiddens=(32, 32))
        obs = _observations(env, 8)
        action_dims = [env.action_space.n] if env_id == "CartPole-v1" else [2]
        with torch.no_grad():
            for forward in (module.forward_inference, module.forward_exploration):
                dist_inputs = forward({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
                assert list(dist_inputs.shape) == [8, *action_dims]
        for get_class in (
            module.get_inference_action_dist_cls,
            module.get_exploration_action_dist_cls,
            module.get_train_action_dist_cls,
        ):
            assert get_class() is not None
        outputs = module.forward_train({Columns.OBS: obs})
        outputs[Columns.ACTION_DIST_INPUTS].sum().backward()
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters())
    finally:
        env.close()


@pytest.mark.parametrize(
    ("hiddens", "activation"),
    list(itertools.product([[32], [64, 64], [128, 128, 128]], ["relu", "tanh"])),
)
def test_marwils_module_takes_rllibs_model_configs(hiddens, activation):
    env = gym.make("CartPole-v1")
    module = _marwil_module(env, hiddens=hiddens, activation=activation)
    with torch.no_grad():
        outputs = module.forward_inference({Columns.OBS: _observations(env, 4)})
    assert outputs[Columns.ACTION_DIST_INPUTS].shape == (4, 2)
    actor = module.encoder.encoder  # one encoder for both heads (RLlib's vf_share_layers)
    layers = [m for m in actor.modules() if isinstance(m, torch.nn.Linear)]
    assert [layer.out_features for layer in layers] == hiddens
    assert any(
        isinstance(m, {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[activation])
        for m in actor.modules()
    )


def test_marwils_module_values_inference_only_and_a_sampling_loop():
    env = gym.make("CartPole-v1")
    module = _marwil_module(env)
    with torch.no_grad():
        values = module.compute_values({Columns.OBS: _observations(env, 8)})
    assert values.shape == (8,)
    assert torch.isfinite(values).all()
    inference_only = _marwil_module(env, inference_only=True)
    with torch.no_grad():
        outputs = inference_only.forward_inference({Columns.OBS: _observations(env, 4)})
    assert Columns.ACTION_DIST_INPUTS in outputs
    assert Columns.VF_PREDS not in outputs
    dist_class = module.get_exploration_action_dist_cls()
    obs, _ = env.reset(seed=0)
    steps, done = 0, False
    while not done and steps < 100:
        with torch.no_grad():
            out = module.forward_exploration({Columns.OBS: torch.as_tensor(obs[None])})
        action = dist_class.from_logits(out[Columns.ACTION_DIST_INPUTS]).sample()[0].numpy()
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
        steps += 1
    assert steps > 0


# -- BC ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_bc_learns_cartpole_from_expert_steps_then_acts(cartpole_data):
    """RLlib's case: BC evaluated on the env in parallel to training reaches a return of 75
    from expert data; then `compute_single_action` acts in the env's space."""
    config = _parallel_evaluation(
        BCConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .offline_data(input_=[str(cartpole_data)], dataset_num_iters_per_learner=5)
        .training(train_batch_size_per_learner=512, lr=3e-3)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        learnt = False
        for _ in range(60):
            result = algo.train()
            evaluation = result.get("evaluation", {}).get("env_runners", {})
            if evaluation.get("episode_return_mean", -np.inf) > 75.0:
                learnt = True
                break
        assert learnt, "BC did not reach a return of 75 from expert data"
        env = gym.make("CartPole-v1")
        obs, _ = env.reset(seed=0)
        for explore in (True, False):
            action = algo.compute_single_action(obs, explore=explore)
            assert env.action_space.contains(np.int64(action))
    finally:
        algo.stop()


# -- CQL -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_cql_builds_trains_evaluates_and_rates_actions(pendulum_data):
    """RLlib's case: bc_iters=2 (cloning in iterations 1-2, the critics' policy in 3-4), twin
    critics, evaluation every 2 iterations; then `compute_single_action`, and the critics'
    values of the recorded actions and of the policy's own."""
    config = (
        CQLConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .offline_data(input_=[str(pendulum_data)], dataset_num_iters_per_learner=2)
        .training(
            bc_iters=2,
            twin_q=True,
            clip_actions=False,
            train_batch_size_per_learner=256,
            num_actions=4,
            lr=None,
        )
        .rl_module(model_config={"fcnet_hiddens": [32, 32], "fusionnet_hiddens": []})
        .evaluation(
            evaluation_interval=2,
            evaluation_num_env_runners=2,
            evaluation_duration=10,
            evaluation_parallel_to_training=False,
        )
        # One training step an iteration (CQL's default, SAC's, repeats it for a second).
        .reporting(min_time_s_per_iteration=0)
    )
    algo = config.build()
    try:
        phases, results = [], []
        for _ in range(4):
            results.append(algo.train())
            phases.append(algo.learner.cloning)
        assert phases == [True, True, False, False]
        for index, result in enumerate(results):
            assert ("evaluation" in result) == (index % 2 == 1)
            assert np.isfinite(result["learners"]["default_policy"]["cql_loss"])
        assert results[-1]["evaluation"]["env_runners"]["num_episodes"] >= 10

        env = gym.make("Pendulum-v1")
        obs, _ = env.reset(seed=0)
        action = algo.compute_single_action(obs)
        assert env.action_space.contains(np.asarray(action, dtype=np.float32))

        batch = algo.offline_data.sample(256)
        module = algo.learner.rl_module
        with torch.no_grad():
            obs_batch = torch.as_tensor(batch[Columns.OBS], dtype=torch.float32)
            q_recorded = module.compute_q_values(
                {Columns.OBS: obs_batch, Columns.ACTIONS: torch.as_tensor(batch[Columns.ACTIONS])}
            )["qf_preds"]
            dist_inputs = module.forward_inference({Columns.OBS: obs_batch})
            dist = module.get_inference_action_dist_cls().from_logits(
                dist_inputs[Columns.ACTION_DIST_INPUTS]
            )
            q_policy = module.compute_q_values(
                {Columns.OBS: obs_batch, Columns.ACTIONS: dist.sample()}
            )["qf_preds"]
        assert q_recorded.shape == q_policy.shape == (256,)
        assert torch.isfinite(q_recorded).all() and torch.isfinite(q_policy).all()
    finally:
        algo.stop()
