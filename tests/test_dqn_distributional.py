"""Distributional DQN (`num_atoms` > 1, RLlib 2.60's new-stack Rainbow pieces), numpy and
torch: the categorical projection against a hand-computed case and RLlib's formula, the numpy
and torch learners' loss and gradients on the same weights and batch, the numpy backward pass
against finite differences, training and learning CartPole through the public API with
EnvRunner processes, exact checkpoints, the config's checks, the noisy-network settings
(accepted with no effect, as in RLlib's new stack), the export's refusal, and RLlib's own
module and loss (a subprocess with Ray 2.60)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from helpers import run_rllib_script, written_once

from trainer import Algorithm, DQNConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.dqn.dqn_learner import DQNLearner
from trainer.algorithms.dqn.loss import project_distribution
from trainer.algorithms.dqn.q_module import QModule, support
from trainer.compat.rllib_settings import IgnoredSettingWarning
from trainer.core.models import SpaceInfo
from trainer.errors import NotSupported
from trainer.export import ExportError, export_policy
from trainer.metrics import TD_ERROR_KEY
from trainer.test_utils_checks import check_train_results_new_api_stack

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the torch extra)")
FRAMEWORKS = ["numpy", pytest.param("torch", marks=needs_torch)]
#: RLlib's statistics of the distributions, besides DQN's.
DISTRIBUTION_STATS = (
    "atoms",
    "expectations_abs_diff",
    "dist_total_variation_dist",
    "dist_max_abs_distance",
    "action_dist_mean_entropy",
)
CARTPOLE = SpaceInfo.from_spaces(gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2))


def small_config(framework: str = "numpy", num_env_runners: int = 0, **training: Any) -> DQNConfig:
    settings: dict[str, Any] = {
        "num_atoms": 11,
        "v_min": -5.0,
        "v_max": 15.0,
        "dueling": True,
        "double_q": True,
        "n_step": 3,
        "num_steps_sampled_before_learning_starts": 0,
        "train_batch_size": 16,
        "target_network_update_freq": 50,
    }
    settings.update(training)
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


def _batch(n: int = 24, seed: int = 0, gamma: float = 0.9) -> dict[str, np.ndarray]:
    """A replay batch as `sample_train_batch` returns it, with rewards that push some shifted
    atoms past the support's ends (clipped) and some terminal rows."""
    rng = np.random.default_rng(seed)
    steps = rng.integers(1, 4, n)
    return {
        "obs": rng.standard_normal((n, 4)).astype(np.float32),
        "next_obs": rng.standard_normal((n, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, n),
        "rewards": rng.uniform(-4.0, 6.0, n).astype(np.float32),
        "terminateds": rng.random(n) < 0.25,
        "discounts": (gamma**steps).astype(np.float32),
        "weights": rng.uniform(0.5, 1.5, n).astype(np.float32),
    }


# -- the projection ------------------------------------------------------------------------------
def _torch_projection(*arrays: np.ndarray, v_min: float, v_max: float) -> np.ndarray:
    import torch

    from trainer.algorithms.dqn.loss import torch_project_distribution as torch_projection

    tensors = [torch.from_numpy(np.asarray(a, np.float32)) for a in arrays]
    return torch_projection(*tensors, v_min, v_max).numpy()


def test_the_projection_matches_a_hand_computed_case():
    atoms = support(3, -1.0, 1.0)
    assert atoms.tolist() == [-1.0, 0.0, 1.0]
    probs = np.array([[0.2, 0.5, 0.3]] * 3, np.float32)
    # Row 0: r + 0.5 z = (0, 0.5, 1): atom 0's 0.2 lands on atom 1, atom 1's 0.5 splits
    # half and half between atoms 1 and 2, atom 2's 0.3 lands on atom 2.
    # Row 1: terminal (discount 0): every atom moves to r = -0.25, a quarter of the way
    # from atom 0 to atom 1. Row 2: r = 5 is clipped to v_max: all on atom 2.
    rewards = np.array([0.5, -0.25, 5.0], np.float32)
    discounts = np.array([0.5, 0.0, 0.9], np.float32)
    expected = np.array([[0.0, 0.45, 0.55], [0.25, 0.75, 0.0], [0.0, 0.0, 1.0]])
    got = project_distribution(probs, rewards, discounts, atoms, -1.0, 1.0)
    np.testing.assert_allclose(got, expected, atol=1e-7)
    if HAS_TORCH:
        torch_got = _torch_projection(probs, rewards, discounts, atoms, v_min=-1.0, v_max=1.0)
        np.testing.assert_allclose(torch_got, expected, atol=1e-7)
    # The cross-entropy of logits (0, 0, ln 2) (probabilities 1/4, 1/4, 1/2) against row 0.
    logits = np.log(np.array([[1.0, 1.0, 2.0]]))
    log_probs = logits - np.log(np.exp(logits).sum())
    assert -(expected[0] * log_probs[0]).sum() == pytest.approx(
        -(0.45 * np.log(0.25) + 0.55 * np.log(0.5))
    )


def _rllib_projection(probs, rewards, discounts, z, v_min, v_max):
    """RLlib 2.60's projection (`DQNTorchLearner.compute_loss_for_module`), line by line in
    numpy: one-hot matrices of the lower and upper atoms, summed."""
    num_atoms = len(z)
    r_tau = np.clip(rewards[:, None] + discounts[:, None] * z, v_min, v_max)
    b = (r_tau - v_min) / ((v_max - v_min) / float(num_atoms - 1.0))
    lower_bound, upper_bound = np.floor(b), np.ceil(b)
    floor_equal_ceil = ((upper_bound - lower_bound) < 0.5).astype(np.float32)
    eye = np.eye(num_atoms, dtype=np.float32)
    lower_projection = eye[lower_bound.astype(np.int64)]  # (B, num_atoms, num_atoms)
    upper_projection = eye[upper_bound.astype(np.int64)]
    ml_delta = probs * (upper_bound - b + floor_equal_ceil)
    mu_delta = probs * (b - lower_bound)
    ml_delta = np.sum(lower_projection * ml_delta[..., None], axis=1)
    mu_delta = np.sum(upper_projection * mu_delta[..., None], axis=1)
    return ml_delta + mu_delta


@pytest.mark.parametrize("num_atoms, v_min, v_max", [(51, -10.0, 10.0), (7, -1.5, 3.0)])
def test_the_projection_is_rllibs_on_random_inputs(num_atoms, v_min, v_max):
    rng = np.random.default_rng(num_atoms)
    n = 64
    z = support(num_atoms, v_min, v_max)
    logits = rng.standard_normal((n, num_atoms)).astype(np.float32)
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    rewards = rng.uniform(2 * v_min, 2 * v_max, n).astype(np.float32)
    discounts = (0.99 ** rng.integers(1, 5, n) * (rng.random(n) > 0.2)).astype(np.float32)
    expected = _rllib_projection(probs, rewards, discounts, z, v_min, v_max)
    got = project_distribution(probs, rewards, discounts, z, v_min, v_max)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)  # a distribution still
    if HAS_TORCH:
        torch_got = _torch_projection(probs, rewards, discounts, z, v_min=v_min, v_max=v_max)
        np.testing.assert_allclose(torch_got, expected, rtol=1e-5, atol=1e-6)


# -- the numpy and torch learners ----------------------------------------------------------------
def _float64(module: QModule) -> None:
    """The module's parameters as float64 copies (finite differences need the precision)."""
    for _, net in module._named_nets():
        if net is not None:
            net.params[:] = [p.astype(np.float64) for p in net.params]
    module.__dict__.pop("_gradients", None)


@pytest.mark.parametrize(
    "dueling, double_q, encoder",
    [(True, True, [5]), (False, False, [5, 4]), (True, False, []), (False, True, [4])],
)
def test_the_numpy_distributional_gradient_matches_finite_differences(dueling, double_q, encoder):
    config = small_config(
        dueling=dueling, double_q=double_q, num_atoms=5, v_min=-2.0, v_max=3.0
    ).rl_module(
        model_config={
            "fcnet_hiddens": encoder,
            "fcnet_activation": "tanh",
            "head_fcnet_hiddens": [3],
            "head_fcnet_activation": "tanh",
        }
    )
    learner = DQNLearner(config, CARTPOLE)
    # A target network unlike the online one.
    learner.target.flat_params[:] = learner.module.flat_params * 0.7 - 0.02
    _float64(learner.module)
    _float64(learner.target)
    batch = _batch(n=9, seed=3)
    batch = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in batch.items()}

    def loss() -> float:
        return learner.loss_and_gradients(batch)[0]["qf_loss"]

    loss()
    module = learner.module
    grads = [g.copy() for g in module.gradient_buffer()[1]]
    names = module.parameter_names()
    assert any(np.any(g != 0) for g in grads)
    eps = 1e-6
    for name, param, grad in zip(names, module.parameters(), grads, strict=True):
        flat, flat_grad = param.reshape(-1), grad.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 6)):
            saved = flat[j]
            flat[j] = saved + eps
            up = loss()
            flat[j] = saved - eps
            down = loss()
            flat[j] = saved
            numeric = (up - down) / (2 * eps)
            assert flat_grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-8), (name, j)


def _torch_learner_like(numpy_learner: DQNLearner, config: DQNConfig) -> Any:
    """A DQNTorchLearner whose every step runs in torch, with the numpy learner's weights
    (online and target)."""
    import torch

    from trainer.algorithms.dqn.torch_learner import DQNTorchLearner
    from trainer.algorithms.dqn.torch_module import torch_names_of_numpy_parameters

    torch_config = config.copy(copy_frozen=False).framework("torch")
    learner = DQNTorchLearner(torch_config, torch_config.build_module(CARTPOLE, seed=1))
    learner.numpy_update = None  # torch itself, not its numpy twin
    module = learner.rl_module
    params = dict(module.named_parameters())
    with torch.no_grad():
        for source, prefix in ((numpy_learner.module, ""), (numpy_learner.target, "_target_")):
            weights = source.get_weights()
            for numpy_name, torch_name in torch_names_of_numpy_parameters(module, prefix).items():
                value = weights[numpy_name]
                params[torch_name].copy_(torch.from_numpy(np.ascontiguousarray(value.T)))
    return learner


def _torch_loss_and_grads(learner: Any, batch: dict[str, np.ndarray]) -> tuple[Any, dict]:
    """The torch learner's loss on `batch` (its update's columns), its statistics, TD errors
    and the gradients by parameter name (no step)."""
    import torch

    from trainer.compat.rllib_utils import Columns

    tensors = {
        Columns.OBS: torch.from_numpy(batch["obs"]),
        Columns.NEXT_OBS: torch.from_numpy(batch["next_obs"]),
        Columns.ACTIONS: torch.from_numpy(batch["actions"].astype(np.int64)),
        Columns.REWARDS: torch.from_numpy(batch["rewards"]),
        Columns.TERMINATEDS: torch.from_numpy(batch["terminateds"]),
        "discounts": torch.from_numpy(batch["discounts"]),
        "weights": torch.from_numpy(batch["weights"]),
    }
    module = learner.rl_module
    module.zero_grad()
    learner.loss_stats = {}
    fwd_out = module.forward_train(tensors)
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=learner.config, batch=tensors, fwd_out=fwd_out
    )
    loss.backward()
    stats = {k: float(v.detach()) for k, v in learner.loss_stats.items()}
    grads = {n: p.grad.numpy().copy() for n, p in module.named_parameters() if p.grad is not None}
    return stats, learner.td_errors.numpy(), grads


@needs_torch
@pytest.mark.parametrize("dueling, double_q", [(True, True), (False, False), (False, True)])
def test_the_numpy_and_torch_learners_give_the_same_loss_and_gradients(dueling, double_q):
    from trainer.algorithms.dqn.torch_module import torch_names_of_numpy_parameters

    config = small_config(dueling=dueling, double_q=double_q, num_atoms=21, v_min=-3, v_max=4)
    numpy_learner = DQNLearner(config, CARTPOLE)
    numpy_learner.target.flat_params[:] = numpy_learner.module.flat_params * 0.5 + 0.01
    torch_learner = _torch_learner_like(numpy_learner, config)
    batch = _batch()
    numpy_stats, numpy_td = numpy_learner.loss_and_gradients(batch)
    torch_stats, torch_td, torch_grads = _torch_loss_and_grads(torch_learner, batch)
    for key in ("qf_loss", "qf_mean", "qf_min", "qf_max", "td_error_mean", *DISTRIBUTION_STATS):
        assert numpy_stats[key] == pytest.approx(torch_stats[key], rel=1e-4, abs=1e-6), key
    # The TD errors the priorities follow: the cross-entropy per row.
    np.testing.assert_allclose(numpy_td, torch_td, rtol=1e-4, atol=1e-6)
    assert numpy_stats["td_error_mean"] == pytest.approx(np.mean(numpy_td))
    module = numpy_learner.module
    numpy_grads = dict(zip(module.parameter_names(), module.gradient_buffer()[1], strict=True))
    names = torch_names_of_numpy_parameters(torch_learner.rl_module)
    assert set(names) == set(numpy_grads)
    for numpy_name, torch_name in names.items():
        expected = torch_grads[torch_name]
        got = numpy_grads[numpy_name]
        np.testing.assert_allclose(
            got.T if got.ndim == 2 else got, expected, rtol=1e-4, atol=1e-6, err_msg=numpy_name
        )
    if dueling:  # RLlib's head: V is a constant per row of logits, which the softmax cancels
        assert np.abs(numpy_grads["value.1.weight"]).max() < 1e-6
    # A full update: the same results on both, with the TD errors for the priorities.
    numpy_results = numpy_learner.update(dict(batch), num_env_steps_sampled_lifetime=60)
    torch_results = torch_learner.update(dict(batch), num_env_steps_sampled_lifetime=60)
    assert set(torch_results) == set(numpy_results)
    for key in ("qf_loss", "gradients_adam_global_norm", *DISTRIBUTION_STATS):
        assert torch_results[key] == pytest.approx(numpy_results[key], rel=1e-4, abs=1e-6), key
    np.testing.assert_allclose(
        torch_results[TD_ERROR_KEY], numpy_results[TD_ERROR_KEY], rtol=1e-4, atol=1e-6
    )


# -- through the public API ----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_distributional_dqn_trains_with_an_env_runner_process(framework):
    config = small_config(framework, num_env_runners=1, epsilon=[(0, 1.0), (200, 0.1)])
    # Greedy evaluation episodes (RLlib's evaluation_config explore=False for DQN).
    config = config.evaluation(
        evaluation_interval=2, evaluation_duration=2, evaluation_duration_unit="episodes"
    )
    algo = config.build()
    try:
        results = [algo.train() for _ in range(2)]
        module = algo.get_module()
        assert module.num_atoms == 11
        obs = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
        q_values = _q_values(module, obs)
        assert q_values.shape == (20, 2)
        # Expected values of distributions over [v_min, v_max].
        assert np.all((q_values >= -5.0) & (q_values <= 15.0))
        # The EnvRunner process acts greedily on the expected Q-values when not exploring.
        greedy = algo.env_runner_group.foreach_env_runner(_greedy_check, local_env_runner=False)
        assert greedy == [True]
        action = algo.compute_single_action(obs[0], explore=False)
        assert action == int(np.argmax(q_values[0]))
    finally:
        algo.stop()
    last = check_train_results_new_api_stack(results[-1])
    learner = last["learners"]["default_policy"]
    for key in ("qf_loss", "qf_mean", "td_error_mean", "gradients_adam_global_norm"):
        assert np.isfinite(learner[key]), key
    for key in DISTRIBUTION_STATS:
        assert key in learner, key
    assert learner["atoms"] == pytest.approx(5.0)  # the support's mean
    assert last["env_runners"]["cur_epsilon"] < results[0]["env_runners"]["cur_epsilon"]
    assert last["num_env_steps_sampled_lifetime"] >= 200
    evaluation = last["evaluation"]["env_runners"]
    assert evaluation["num_episodes"] >= 2 and np.isfinite(evaluation["episode_return_mean"])


def test_a_multi_agent_config_trains_a_distributional_module_per_policy():
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    config = (
        small_config(replay_buffer_config={"type": "MultiAgentPrioritizedEpisodeReplayBuffer"})
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}")
    )
    algo = config.build()
    try:
        result = algo.train()
        assert {algo.get_module(p).num_atoms for p in ("p0", "p1")} == {11}
    finally:
        algo.stop()
    for module_id in ("p0", "p1"):
        learner = result["learners"][module_id]
        assert np.isfinite(learner["qf_loss"]) and learner["atoms"] == pytest.approx(5.0)


def _greedy_check(runner: Any) -> bool:
    """In the EnvRunner: its sampled actions (explore=False) are the argmax of its module's
    expected Q-values."""
    episodes = runner.sample(num_timesteps=30, explore=False)
    module = runner.module
    for episode in episodes:
        obs = np.asarray(episode.get_observations()[:-1], np.float32)
        q_values = module.q_values(obs) if hasattr(module, "q_values") else None
        if q_values is None:
            return False
        if not np.array_equal(np.asarray(episode.get_actions()), q_values.argmax(axis=1)):
            return False
    return True


def _q_values(module: Any, obs: np.ndarray) -> np.ndarray:
    if HAS_TORCH and type(module).__module__.endswith("torch_module"):
        import torch

        with torch.no_grad():
            return module.compute_q_values({"obs": torch.from_numpy(obs)})["qf_preds"].numpy()
    return module.compute_q_values({"obs": obs})["qf_preds"]


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_checkpoint_restores_the_same_q_values(tmp_path, framework):
    algo = small_config(framework, store_buffer_in_checkpoints=True).build()
    obs = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
        saved_q = _q_values(algo.get_module(), obs)
        state = algo.get_module().get_state()
        after = algo.train()["learners"]["default_policy"]["qf_loss"]
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        module = restored.get_module()
        assert module.num_atoms == 11
        assert set(module.get_state()) == set(state)
        np.testing.assert_array_equal(_q_values(module, obs), saved_q)
        # The restored run continues as the original did.
        assert restored.train()["learners"]["default_policy"]["qf_loss"] == after
    finally:
        restored.stop()


def test_bad_values_are_config_errors_naming_the_setting():
    for setting, message in (
        ({"num_atoms": 0}, r"training\(num_atoms=0\): num_atoms must be an int >= 1"),
        ({"num_atoms": 1.5}, r"num_atoms=1\.5\): num_atoms must be an int >= 1"),
        ({"v_max": float("nan")}, r"v_max=nan\): v_max must be a finite number"),
    ):
        with pytest.raises(ConfigError, match=message) as raised:
            DQNConfig().training(**setting)
        assert not isinstance(raised.value, NotSupported)
    # The support's ends are checked together by validate(), so either may be set first.
    config = DQNConfig().environment("CartPole-v1").training(num_atoms=51, v_min=20.0)
    assert config.v_min == 20.0
    with pytest.raises(ConfigError, match=r"v_min=20\.0, v_max=10\.0: v_min must be < v_max"):
        config.validate()
    config.training(v_max=30.0).validate()
    # One atom reads neither end (RLlib's default support stays as it is).
    DQNConfig().environment("CartPole-v1").training(v_min=3.0, v_max=3.0).validate()


def test_noisy_nets_are_accepted_with_no_effect_as_in_rllibs_new_stack():
    config = small_config(noisy=True, sigma0=0.3)
    assert (config.noisy, config.sigma0) == (True, 0.3)
    with pytest.warns(IgnoredSettingWarning) as caught:
        algo = config.build()
    algo.stop()
    messages = [str(w.message) for w in caught]
    assert any("noisy=True" in m and "no noisy layers" in m for m in messages), messages
    assert any("sigma0=0.3" in m for m in messages), messages
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        small_config().training(noisy=False, sigma0=0.5).build().stop()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_export_refuses_atoms_in_onnx_and_numpy_and_writes_rllibs_module(tmp_path, framework):
    from trainer import RLModule

    algo = small_config(framework).build()
    try:
        for fmt in ("onnx", "numpy"):
            with pytest.raises(ExportError, match="num_atoms=11") as raised:
                export_policy(algo, str(tmp_path / fmt), format=fmt)
            assert isinstance(raised.value, NotSupported) and raised.value.capability
            assert not (tmp_path / fmt).exists()
        if not HAS_TORCH:
            return
        path = export_policy(algo, str(tmp_path / "rllib"), format="rllib")
        obs = np.random.default_rng(2).standard_normal((8, 4)).astype(np.float32)
        expected = _q_values(algo.get_module(), obs)
    finally:
        algo.stop()
    module = RLModule.from_checkpoint(path)  # RLlib's module layout, read back here
    assert module.num_atoms == 11 and module.v_min == -5.0 and module.v_max == 15.0
    np.testing.assert_allclose(_q_values(module, obs), expected, rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("num_atoms", [1, 5])
def test_a_numpy_q_module_is_written_as_rllibs_torch_module(tmp_path, num_atoms):
    """RLlib's module checkpoint of a numpy QModule (its torch twin: the same networks), single
    headed and distributional, reads back with the same Q-values."""
    from trainer import RLModule
    from trainer.compat.rllib_checkpoint import save_rllib_module

    module = QModule(
        CARTPOLE, {"fcnet_hiddens": [8]}, dueling=False, num_atoms=num_atoms, v_max=2.0, seed=0
    )
    path = save_rllib_module(module, tmp_path / "module")
    loaded = RLModule.from_checkpoint(path)
    assert (loaded.num_atoms, loaded.uses_dueling) == (num_atoms, False)
    obs = np.random.default_rng(4).standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(_q_values(loaded, obs), module.q_values(obs), rtol=1e-5, atol=1e-6)


# -- learning ------------------------------------------------------------------------------------
def learning_config(framework: str = "numpy") -> DQNConfig:
    """Distributional DQN (51 atoms, dueling, double Q, 3-step, prioritized replay) on CartPole
    with an EnvRunner process: it reaches a mean return of 150 within 40 iterations of 1000 env
    steps (seed 0: in 4; bench/learning_targets.py)."""
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=1)
        .training(
            num_atoms=51,
            v_min=0.0,
            v_max=100.0,
            dueling=True,
            double_q=True,
            n_step=3,
            lr=1e-3,
            train_batch_size=64,
            num_steps_sampled_before_learning_starts=1000,
            target_network_update_freq=500,
            epsilon=[(0, 1.0), (5000, 0.02)],
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50000},
        )
        .rl_module(model_config={"fcnet_hiddens": [64], "head_fcnet_hiddens": [64]})
        .reporting(min_sample_timesteps_per_iteration=1000)
        .debugging(seed=0)
    )


@pytest.mark.slow
def test_distributional_dqn_starts_learning_cartpole():
    """`learning_config`, seed 1: the first iteration's 1000 env steps are random play
    (learning starts after them: a mean return of 22.5); within two more iterations the mean
    return at least triples (141; seeds 0 and 2: 3.2 times; with lr=0, seed 1's third
    iteration returns 16). bench/learning_targets.py runs seed 0 to 150."""
    algo = learning_config().debugging(seed=1).build()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(3)]
    finally:
        algo.stop()
    assert returns[-1] >= 3 * returns[0], returns


# -- RLlib's own module and loss -----------------------------------------------------------------
RLLIB_SCRIPT = r"""
import sys
import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.core.columns import Columns

out = sys.argv[1]
for dueling, double_q in ((True, True), (False, False)):
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(num_atoms=11, v_min=-3.0, v_max=4.0, dueling=dueling, double_q=double_q,
                  gamma=0.9)
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]})
    )
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    module = learner.module["default_policy"]
    with torch.no_grad():  # a target network unlike the online one
        for name, param in module.named_parameters():
            if name.startswith("_target_"):
                param.mul_(0.5).add_(0.01)
    rng = np.random.default_rng(0)
    n = 24
    batch = {
        Columns.OBS: rng.standard_normal((n, 4)).astype(np.float32),
        Columns.NEXT_OBS: rng.standard_normal((n, 4)).astype(np.float32),
        Columns.ACTIONS: rng.integers(0, 2, n),
        Columns.REWARDS: rng.uniform(-4.0, 6.0, n).astype(np.float32),
        Columns.TERMINATEDS: rng.random(n) < 0.25,
        "n_step": rng.integers(1, 4, n),
        "weights": rng.uniform(0.5, 1.5, n).astype(np.float32),
    }
    tensors = {key: torch.from_numpy(value) for key, value in batch.items()}
    fwd_out = module.forward_train(tensors)
    loss = learner.compute_loss_for_module(
        module_id="default_policy", config=config, batch=tensors, fwd_out=fwd_out
    )
    module.zero_grad()
    loss.backward()
    name = f"{dueling}_{double_q}"
    module.save_to_path(f"{out}/{name}")
    metrics = learner.metrics
    stats = {
        key: float(metrics.peek(("default_policy", key)))
        for key in ("qf_loss", "qf_mean", "td_error_mean", "atoms", "expectations_abs_diff",
                    "dist_total_variation_dist", "dist_max_abs_distance",
                    "action_dist_mean_entropy")
    }
    with torch.no_grad():
        q_values = module.compute_q_values({Columns.OBS: tensors[Columns.OBS]})["qf_preds"]
    np.savez(
        f"{out}/{name}.npz",
        q_values=q_values.numpy(),
        **{"batch_" + key: value for key, value in batch.items()},
        **{"stat_" + key: value for key, value in stats.items()},
        **{"grad_" + key: p.grad.numpy() for key, p in module.named_parameters()
           if p.grad is not None},
    )
print("saved")
"""


@pytest.fixture(scope="module")
def rllib_outputs(tmp_path_factory) -> Path:
    pytest.importorskip("ray.rllib", reason="needs Ray 2.60 with RLlib's imports (the test extra)")
    pytest.importorskip("torch")
    return written_once(
        tmp_path_factory,
        "rllib_distributional",
        lambda out: run_rllib_script(RLLIB_SCRIPT, str(out), timeout=240),
    )


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("dueling, double_q", [(True, True), (False, False)])
def test_rllibs_distributional_module_loads_and_its_loss_is_the_learners(
    rllib_outputs, dueling, double_q
):
    """RLlib 2.60 builds, saves and takes its loss on a distributional module: the module
    loads here (RLlib's state-dict names) with RLlib's Q-values, and both learners here give
    RLlib's loss, statistics and gradients on the same batch (RLlib's gamma ** n_step as the
    discounts)."""
    from trainer import RLModule
    from trainer.algorithms.dqn.torch_module import torch_names_of_numpy_parameters

    name = f"{dueling}_{double_q}"
    saved = np.load(rllib_outputs / f"{name}.npz")
    module = RLModule.from_checkpoint(rllib_outputs / name)
    assert (module.num_atoms, module.uses_dueling) == (11, dueling)
    np.testing.assert_allclose(
        _q_values(module, saved["batch_obs"]), saved["q_values"], rtol=1e-6, atol=1e-6
    )
    config = small_config(
        "torch", dueling=dueling, double_q=double_q, num_atoms=11, v_min=-3.0, v_max=4.0
    ).training(gamma=0.9)
    batch = {
        "obs": saved["batch_obs"],
        "next_obs": saved["batch_new_obs"],
        "actions": saved["batch_actions"],
        "rewards": saved["batch_rewards"],
        "terminateds": saved["batch_terminateds"],
        "discounts": (0.9 ** saved["batch_n_step"]).astype(np.float32),
        "weights": saved["batch_weights"],
    }
    from trainer.algorithms.dqn.torch_learner import DQNTorchLearner

    saved_state = {k: v.clone() for k, v in module.state_dict().items()}
    learner = DQNTorchLearner(config, module)
    module.load_state_dict(saved_state)  # RLlib's target networks (the learner re-synced them)
    learner.numpy_update = None
    stats, _, grads = _torch_loss_and_grads(learner, batch)
    for key in ("qf_loss", "qf_mean", "td_error_mean", *DISTRIBUTION_STATS):
        assert stats[key] == pytest.approx(float(saved["stat_" + key]), rel=1e-5, abs=1e-6), key
    rllib_grads = {k[len("grad_") :]: saved[k] for k in saved.files if k.startswith("grad_")}
    assert set(grads) == set(rllib_grads)
    for key, value in rllib_grads.items():
        np.testing.assert_allclose(grads[key], value, rtol=1e-4, atol=1e-6, err_msg=key)
    # The numpy learner on the same weights.
    numpy_learner = DQNLearner(config.copy(copy_frozen=False).framework("numpy"), CARTPOLE)
    state = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    for target, prefix in ((numpy_learner.module, ""), (numpy_learner.target, "_target_")):
        names = torch_names_of_numpy_parameters(module, prefix)
        target.set_weights(
            {n: (state[t].T if n.endswith(".weight") else state[t]) for n, t in names.items()}
        )
    numpy_stats, _ = numpy_learner.loss_and_gradients(batch)
    for key in ("qf_loss", "qf_mean", "td_error_mean", *DISTRIBUTION_STATS):
        assert numpy_stats[key] == pytest.approx(float(saved["stat_" + key]), rel=1e-4, abs=1e-6), (
            key
        )
    numpy_grads = dict(
        zip(
            numpy_learner.module.parameter_names(),
            numpy_learner.module.gradient_buffer()[1],
            strict=True,
        )
    )
    for numpy_name, torch_name in torch_names_of_numpy_parameters(module).items():
        got = numpy_grads[numpy_name]
        np.testing.assert_allclose(
            got.T if got.ndim == 2 else got,
            rllib_grads[torch_name],
            rtol=1e-4,
            atol=1e-6,
            err_msg=numpy_name,
        )
