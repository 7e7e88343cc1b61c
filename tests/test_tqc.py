"""TQC (`trainer.algorithms.tqc`): its loss in numpy against the torch loss and autograd, the
numpy learner's gradients against finite differences, the config's defaults and checks, the
torch module's layout and outputs against RLlib 2.60's own module, learning (numpy and torch,
with real EnvRunner processes), exact checkpoints, multi-agent runs, the registry and an RLlib
script through the launcher."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from test_launcher import run_script
from test_sac import (
    _ContinuousBandit,
    _fast,
    _float64,
    assert_each_optimizer_gradient_is_its_loss,
)

from trainer import Algorithm
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.registry import get_trainable_cls
from trainer.algorithms.sac.loss import ALPHA_VALUE_KEY, QF_PREDS, QF_TARGET_NEXT, STAT_KEYS
from trainer.algorithms.tqc import TQC, TQCConfig
from trainer.algorithms.tqc.loss import LOGP_CURR, LOGP_NEXT, QF_CURR, loss_terms
from trainer.algorithms.tqc.tqc_learner import TQCLearner
from trainer.algorithms.tqc.tqc_module import TQCModule
from trainer.core.models import SpaceInfo
from trainer.errors import UnsupportedValue
from trainer.util.rng import generator_state, set_generator_state

ROWS, CRITICS, QUANTILES, KEPT = 7, 3, 5, 12
LOG_ALPHA, TARGET_ENTROPY = math.log(0.4), -1.0


def _replay_batch(rng: np.random.Generator, rows: int, obs_dim: int = 0, action_dim: int = 0):
    """A replay batch (n-step discounts, some terminal rows, importance weights), float64, with
    observations and actions when their sizes are given."""
    batch = {
        "rewards": rng.uniform(-1.5, 1.5, rows),
        "terminateds": rng.random(rows) < 0.3,
        "discounts": 0.99 ** rng.integers(1, 4, rows).astype(np.float64),
        "weights": rng.uniform(0.3, 1.0, rows),
    }
    if obs_dim:
        batch["obs"] = rng.standard_normal((rows, obs_dim))
        batch["next_obs"] = rng.standard_normal((rows, obs_dim))
        batch["actions"] = rng.uniform(-0.9, 0.9, (rows, action_dim))
    return batch


# -- the loss ------------------------------------------------------------------------------------
def test_the_numpy_loss_is_the_torch_loss_and_its_gradients_autograds():
    """The same losses, TD errors and statistics (keys in SAC's order, without the twin's),
    and the numpy gradients with respect to Z(s, a), Z(s, a~), log pi(a~|s) and log_alpha are
    autograd's, in float64 (quantiles spread over both sides of the Huber kink)."""
    torch = pytest.importorskip("torch")
    from trainer.algorithms.tqc.torch_loss import tqc_loss

    rng = np.random.default_rng(0)
    batch = _replay_batch(rng, ROWS)
    fwd_out = {
        QF_PREDS: 2.0 * rng.standard_normal((ROWS, CRITICS, QUANTILES)),
        QF_CURR: rng.standard_normal((ROWS, CRITICS, QUANTILES)),
        LOGP_CURR: rng.standard_normal(ROWS),
        QF_TARGET_NEXT: rng.standard_normal((ROWS, CRITICS, QUANTILES)),
        LOGP_NEXT: rng.standard_normal(ROWS),
    }
    loss = loss_terms(batch, fwd_out, np.array([LOG_ALPHA]), TARGET_ENTROPY, KEPT)

    tensors = {
        key: torch.tensor(value, requires_grad=value.dtype.kind == "f")
        for key, value in fwd_out.items()
    }
    log_alpha = torch.tensor([LOG_ALPHA], dtype=torch.float64, requires_grad=True)
    result = tqc_loss(
        {key: torch.tensor(value) for key, value in batch.items()},
        tensors,
        log_alpha=log_alpha,
        target_entropy=torch.tensor(TARGET_ENTROPY, dtype=torch.float64),
        gamma=0.99,
        kept=KEPT,
    )

    torch_keys = {"qf": "qf_loss", "policy": "policy_loss", "alpha": "alpha_loss"}
    assert list(loss.losses) == list(torch_keys)
    for name, key in torch_keys.items():
        assert loss.losses[name] == pytest.approx(float(result.losses[key].detach()), rel=1e-12)
    np.testing.assert_allclose(loss.td_error, result.td_error.numpy(), rtol=1e-12)
    assert list(loss.stats) == list(result.stats) == list(STAT_KEYS[:-1])
    for key in loss.stats:
        rel = 1e-7 if key == ALPHA_VALUE_KEY else 1e-12
        assert loss.stats[key] == pytest.approx(float(result.stats[key].detach()), rel=rel), key

    def grad(loss_key: str, tensor) -> np.ndarray:
        (value,) = torch.autograd.grad(result.losses[loss_key], tensor, retain_graph=True)
        return value.numpy()

    for key, loss_key in ((QF_PREDS, "qf_loss"), (QF_CURR, "policy_loss")):
        np.testing.assert_allclose(loss.gradients[key], grad(loss_key, tensors[key]), rtol=1e-12)
    np.testing.assert_allclose(
        loss.gradients[LOGP_CURR], grad("policy_loss", tensors[LOGP_CURR]), rtol=1e-12
    )
    assert float(loss.d_log_alpha) == pytest.approx(grad("alpha_loss", log_alpha)[0], rel=1e-12)
    # The target drops the largest quantiles: raising one of the target's largest changes
    # nothing, raising one of its smallest changes the critics' loss.
    raised = {**fwd_out, QF_TARGET_NEXT: fwd_out[QF_TARGET_NEXT].copy()}
    row = raised[QF_TARGET_NEXT][0].reshape(-1)
    row[np.argmax(row)] += 5.0
    same = loss_terms(batch, raised, np.array([LOG_ALPHA]), TARGET_ENTROPY, KEPT)
    assert same.losses["qf"] == loss.losses["qf"]
    row[np.argmin(row)] += 0.5
    other = loss_terms(batch, raised, np.array([LOG_ALPHA]), TARGET_ENTROPY, KEPT)
    assert other.losses["qf"] != loss.losses["qf"]


def _pairwise(weights, quantiles, y):
    """The quantile Huber loss and its gradient term by term, as RLlib's torch loss."""
    size, _, n = quantiles.shape
    tau = (np.arange(n) + 0.5) / n
    x = quantiles[:, :, :, None] - y[:, None, None, :]
    weight = np.abs(tau[None, None, :, None] - (x > 0))
    huber = np.where(np.abs(x) <= 1, 0.5 * x * x, np.abs(x) - 0.5)
    loss = float((weights[:, None] * (weight * huber).sum(axis=(2, 3))).sum() / size)
    slope = (weight * np.clip(x, -1, 1)).sum(axis=3)
    return loss, slope * (weights / size)[:, None, None]


@pytest.mark.parametrize("scale", [0.3, 3.0, 400.0])
def test_the_quantile_huber_loss_by_runs_is_the_pairwise_loss(scale):
    """The numpy loss sums over runs of the sorted targets; the same value and gradient as
    term by term: targets with ties (a terminated row's are all r), quantiles exactly at a
    target and at a target +- 1 (the runs' ends), returns of Pendulum's size."""
    from trainer.algorithms.tqc.loss import quantile_huber_losses

    rng = np.random.default_rng(int(scale))
    y = scale * rng.standard_normal((6, 9))
    y[1] = y[1, 0]  # ties
    quantiles = scale * rng.standard_normal((6, 2, 4))
    quantiles[0, 0, :3] = y[0, 2] + np.array([0.0, 1.0, -1.0])
    quantiles[1, 1, 0] = y[1, 0] + 1.0
    weights = rng.uniform(0.5, 1.5, 6)
    loss, gradient = _pairwise(weights, quantiles, y)
    result = quantile_huber_losses(weights, quantiles, y)
    assert result.loss == pytest.approx(loss, rel=1e-9)
    np.testing.assert_allclose(result.gradient, gradient, rtol=1e-9, atol=1e-12)


def _learner(model_config: dict, **training) -> TQCLearner:
    env = gym.make("Pendulum-v1")
    config = (
        TQCConfig()
        .environment("Pendulum-v1")
        .rl_module(model_config=model_config)
        .training(initial_alpha=0.7, **training)
        .debugging(seed=0)
    )
    learner = TQCLearner(config, SpaceInfo.from_spaces(env.observation_space, env.action_space))
    _float64(learner.module)
    _float64(learner.target)
    return learner


def test_the_numpy_gradients_match_finite_differences():
    """Each optimizer's gradient is its own loss's: the critics' ("qf", one optimizer over
    the three critics) of the quantile Huber loss, the policy's of the policy loss through the
    reparameterized actions (the critics' parameters held). Smooth activations (see SAC's)."""
    learner = _learner(
        {
            "fcnet_hiddens": [5, 4],
            "fcnet_activation": "tanh",
            "fusionnet_hiddens": [3],
            "fusionnet_activation": "swish",
        },
        n_quantiles=4,
        n_critics=3,
        top_quantiles_to_drop_per_net=1,
    )
    assert sorted(learner.optimizers) == ["alpha", "policy", "qf"]
    batch = _replay_batch(np.random.default_rng(1), 9, obs_dim=3, action_dim=1)
    state = generator_state(learner.rng)

    def losses() -> dict:
        set_generator_state(learner.rng, state)  # the same noise for every evaluation
        return learner.loss_and_gradients(batch).losses

    set_generator_state(learner.rng, state)
    learner.loss_and_gradients(batch)
    assert_each_optimizer_gradient_is_its_loss(
        learner, losses, samples=4, loss_of_net={"qf_encoders": "qf", "qf_heads": "qf"}
    )


# -- the config ----------------------------------------------------------------------------------
def test_config_defaults_are_rllibs_and_bad_values_are_refused():
    config = TQCConfig()
    assert (config.n_quantiles, config.n_critics, config.top_quantiles_to_drop_per_net) == (
        25,
        2,
        2,
    )
    assert (config.actor_lr, config.critic_lr, config.alpha_lr, config.tau) == (
        3e-5,
        3e-4,
        3e-4,
        5e-3,
    )
    assert config._model_config_auto_includes == {
        "n_quantiles": 25,
        "n_critics": 2,
        "top_quantiles_to_drop_per_net": 2,
    }
    assert get_trainable_cls("TQC") is TQC
    for bad in ({"n_quantiles": 0}, {"n_critics": 0}, {"top_quantiles_to_drop_per_net": -1}):
        ((name, value),) = bad.items()
        with pytest.raises(ConfigError, match=f"{name}={value}"):
            TQCConfig().training(**bad)
    too_many = TQCConfig().training(n_quantiles=5, n_critics=2, top_quantiles_to_drop_per_net=5)
    with pytest.raises(ConfigError, match="top_quantiles_to_drop_per_net=5 drops 10 of the 10"):
        too_many.validate()


def test_discrete_actions_are_refused():
    spaces = SpaceInfo.from_spaces(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3))
    with pytest.raises(UnsupportedValue, match="TQC's critics take Box actions"):
        TQCModule(spaces, {"fcnet_hiddens": [4]})


# -- the torch module against RLlib's ------------------------------------------------------------
@pytest.mark.ray
@pytest.mark.slow
def test_the_torch_module_is_rllibs_layout_and_computes_rllibs_quantiles():
    """RLlib 2.60's own DefaultTQCTorchRLModule (the installed wheel's) of the same model
    config has the same parameters (names and shapes; RLlib's constant log-std buffers
    aside), takes this module's state, and computes the same quantiles from it, of the critics
    and of the target critics."""
    torch = pytest.importorskip("torch")
    rllib_module = pytest.importorskip("ray.rllib.algorithms.tqc.torch.default_tqc_torch_rl_module")
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from trainer.algorithms.tqc.torch_module import DefaultTQCTorchRLModule

    obs_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
    tqc = {"n_quantiles": 5, "n_critics": 3, "top_quantiles_to_drop_per_net": 1}
    model = {"fcnet_hiddens": [16, 8], "fusionnet_hiddens": [8]}
    import dataclasses

    theirs = rllib_module.DefaultTQCTorchRLModule(
        observation_space=obs_space,
        action_space=action_space,
        model_config={**dataclasses.asdict(DefaultModelConfig(**model)), "twin_q": True, **tqc},
        inference_only=False,
    )
    theirs.make_target_networks()  # (RLlib's learner makes them)
    ours = DefaultTQCTorchRLModule(
        observation_space=obs_space,
        action_space=action_space,
        model_config={**model, **tqc},
        inference_only=False,
    )
    their_state = {
        key: tuple(value.shape)
        for key, value in theirs.state_dict().items()
        if not key.endswith("log_std_clip_param_const")
    }
    assert {key: tuple(value.shape) for key, value in ours.state_dict().items()} == their_state
    with torch.no_grad():
        for target in ours.target_qf_encoders.parameters():
            target.add_(0.01)  # the targets differ from the critics
    theirs.load_state_dict(ours.state_dict(), strict=False)

    rng = np.random.default_rng(0)
    obs = torch.tensor(rng.standard_normal((6, 3)), dtype=torch.float32)
    actions = torch.tensor(rng.uniform(-1, 1, (6, 2)), dtype=torch.float32)
    with torch.no_grad():
        batch = {"obs": obs, "actions": actions}
        for target in (False, True):
            expected = theirs._qf_forward_all_critics(obs, actions, use_target=target)
            np.testing.assert_allclose(
                ours.quantiles(batch, target=target).numpy(), expected.numpy(), rtol=1e-5
            )
        np.testing.assert_allclose(
            ours.forward_target(batch)["qf_preds"].numpy(),
            theirs.forward_target(batch).numpy(),
            rtol=1e-5,
        )


@pytest.mark.ray
@pytest.mark.slow
def test_a_numpy_module_written_in_rllibs_layout_loads_in_rllib(tmp_path):
    """The numpy TQCModule saved as one of RLlib's module checkpoints (its torch twin, RLlib's
    class and catalog) is read by RLlib 2.60's own `RLModule.from_checkpoint`, as RLlib's
    DefaultTQCTorchRLModule computing the numpy module's policy outputs."""
    torch = pytest.importorskip("torch")
    rl_module = pytest.importorskip("ray.rllib.core.rl_module.rl_module")
    from trainer.compat.rllib_checkpoint import save_rllib_module

    env = gym.make("Pendulum-v1")
    spaces = SpaceInfo.from_spaces(env.observation_space, env.action_space)
    module = TQCModule(spaces, {"fcnet_hiddens": [8]}, n_quantiles=3, n_critics=2, seed=1)
    module._remember_spaces(env.observation_space, env.action_space)
    path = save_rllib_module(module, tmp_path / "module")
    theirs = rl_module.RLModule.from_checkpoint(path)
    assert type(theirs).__name__ == "DefaultTQCTorchRLModule"
    assert len(theirs.qf_heads) == 2 and theirs.qf_heads[1].net.mlp[0].out_features == 3
    obs = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    with torch.no_grad():
        out = theirs.forward_inference({"obs": torch.from_numpy(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(out.numpy(), module.dist_inputs(obs), rtol=1e-5, atol=1e-6)


# -- training ------------------------------------------------------------------------------------
def _bandit(framework: str = "numpy", **training) -> TQCConfig:
    return _fast(
        TQCConfig()
        .environment(_ContinuousBandit)
        .framework(framework)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4, create_env_on_local_worker=True)
        .training(
            **{
                "actor_lr": 3e-3,
                "critic_lr": 3e-3,
                "alpha_lr": 3e-3,
                "initial_alpha": 0.1,
                "n_quantiles": 5,
                "top_quantiles_to_drop_per_net": 1,
                "training_intensity": 64,
                "train_batch_size_per_learner": 64,
                "num_steps_sampled_before_learning_starts": 64,
                "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 5000},
                **training,
            }
        )
        .rl_module(model_config={"fcnet_hiddens": [32], "fusionnet_hiddens": [32]})
        .evaluation(evaluation_duration=20, evaluation_config=TQCConfig.overrides(explore=False))
        .debugging(seed=0)
    )


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_tqc_learns_a_continuous_bandit_and_not_without_rates(framework):
    """A short seeded run with one EnvRunner process: the greedy policy's squared error falls
    well below acting at random (about -1.6 of return); with every rate 0 it does not."""
    if framework == "torch":
        pytest.importorskip("torch")
    returns = {}
    for rate in (3e-3, 0.0):
        algo = _bandit(framework, actor_lr=rate, critic_lr=rate, alpha_lr=rate).build()
        try:
            for _ in range(40):
                result = algo.train()
            returns[rate] = algo.evaluate()["env_runners"]["episode_return_mean"]
        finally:
            algo.stop()
    learner = result["learners"]["default_policy"]
    assert {"qf_learning_rate", "policy_learning_rate", "alpha_learning_rate"} <= set(learner)
    assert "qf_twin_loss" not in learner
    assert returns[3e-3] > -0.2, returns
    assert returns[0.0] < -0.5, returns


def _resumable(framework: str) -> TQCConfig:
    return _fast(
        TQCConfig()
        .environment("Pendulum-v1")
        .framework(framework)
        .env_runners(num_env_runners=0)
        .training(
            n_quantiles=4,
            top_quantiles_to_drop_per_net=1,
            num_steps_sampled_before_learning_starts=16,
            train_batch_size_per_learner=16,
            store_buffer_in_checkpoints=True,
            n_step=(1, 3),
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
        .debugging(seed=3)
    )


def _weights(algo: Algorithm) -> dict[str, np.ndarray]:
    """The learner's module's weights, critics included (get_module() is the EnvRunner's
    inference-only copy)."""
    return {name: np.asarray(value) for name, value in algo.learner_module().get_state().items()}


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_checkpoint_resume_is_exact(tmp_path, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    straight = _resumable(framework).build()
    for _ in range(24):
        straight.train()
    expected = _weights(straight)
    straight.stop()

    first = _resumable(framework).build()
    for _ in range(12):
        first.train()
    path = first.save_to_path(str(tmp_path / "ckpt"))
    first.stop()
    resumed = Algorithm.from_checkpoint(path)
    try:
        assert isinstance(resumed, TQC)
        for _ in range(12):
            resumed.train()
        state = _weights(resumed)
    finally:
        resumed.stop()
    assert state.keys() == expected.keys()
    assert any(name.startswith("qf_heads.1") for name in state)  # (both critics' weights)
    for name, weights in expected.items():
        np.testing.assert_array_equal(state[name], weights, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_multi_agent_tqc_trains_a_learner_per_module(framework):
    if framework == "torch":
        pytest.importorskip("torch")
    from trainer.examples.envs.classes.multi_agent import MultiAgentPendulum

    config = _fast(
        TQCConfig()
        .environment(MultiAgentPendulum, env_config={"num_agents": 2})
        .framework(framework)
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .training(
            n_quantiles=3,
            top_quantiles_to_drop_per_net=1,
            num_steps_sampled_before_learning_starts=16,
            train_batch_size_per_learner=16,
            replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": 1000},
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
    )
    algo = config.build()
    try:
        for _ in range(20):
            result = algo.train()
    finally:
        algo.stop()
    for module_id in ("p0", "p1"):
        assert math.isfinite(result["learners"][module_id]["qf_loss"])


def test_a_seeded_torch_module_starts_from_the_numpy_modules_weights():
    """The default torch module built for a seed holds the numpy TQCModule's initial weights
    for that seed (the same networks in torch's layout), so a seeded run starts alike on
    either framework."""
    pytest.importorskip("torch")
    from trainer.algorithms.tqc.state_conversion import torch_twin_of
    from trainer.algorithms.tqc.torch_module import DefaultTQCTorchRLModule
    from trainer.torch_rl.runner_view import build_torch_module

    env = gym.make("Pendulum-v1")
    spaces = SpaceInfo.from_spaces(env.observation_space, env.action_space)
    model = {"fcnet_hiddens": [8], "fusionnet_hiddens": [4]}
    numpy_module = TQCModule(spaces, model, n_quantiles=3, n_critics=2, seed=5)
    view = build_torch_module(
        DefaultTQCTorchRLModule,
        spaces,
        {**model, "n_quantiles": 3, "n_critics": 2},
        inference_only=False,
        seed=5,
    )
    torch_state = {k: v.detach().numpy() for k, v in view.rl_module.state_dict().items()}
    twin_state = {
        k: v.detach().numpy() for k, v in torch_twin_of(numpy_module).state_dict().items()
    }
    for name, value in twin_state.items():
        if not name.startswith("target_"):
            np.testing.assert_array_equal(torch_state[name], value, err_msg=name)
    np.testing.assert_array_equal(
        torch_state["qf_heads.1.net.mlp.0.weight"],
        numpy_module.get_weights()["qf_heads.1.0.weight"].T,
    )


# -- RLlib's scripts -----------------------------------------------------------------------------
RLLIB_TQC_SCRIPT = """
from ray.rllib.algorithms.tqc import TQCConfig
from ray.rllib.algorithms.tqc.torch.tqc_torch_learner import TQCTorchLearner
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

config = (
    TQCConfig()
    .environment("Pendulum-v1")
    .framework("torch")
    .env_runners(num_env_runners=1)
    .training(lr=None, n_quantiles=10, top_quantiles_to_drop_per_net=1,
              num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
    .reporting(min_time_s_per_iteration=0)
    .rl_module(model_config={"fcnet_hiddens": [16], "fusionnet_hiddens": [16]})
)
algo = config.build()
for _ in range(3):
    result = algo.train()
print("learner", isinstance(algo.learner, TQCTorchLearner))
algo.stop()
print("sampled", result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME] > 0)
print("qf_loss" in result["learners"]["default_policy"])
"""


@pytest.mark.cli
@pytest.mark.slow
def test_an_rllib_tqc_script_runs_through_the_launcher(tmp_path):
    pytest.importorskip("torch")
    ran = run_script(tmp_path, RLLIB_TQC_SCRIPT)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "learner True\nsampled True\nTrue" in ran.stdout
