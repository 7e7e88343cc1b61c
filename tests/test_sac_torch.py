"""SAC with torch: RLlib's `DefaultSACTorchRLModule` and `SACTorchLearner` take the numpy SAC's
step from the same weights and noise (losses, per-parameter gradients, statistics), a seeded
torch module starts from the numpy module's weights, `framework("torch")` samples Pendulum in
an EnvRunner process with the squashed Gaussian and learns, a checkpoint resumes exactly, a
user's learner class trains, and an RLlib script runs through the launcher."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from helpers import (  # noqa: E402
    assert_plain_data,
    assert_steps_time_one_torch_thread_against_two,
)
from test_launcher import run_script  # noqa: E402

from trainer import Algorithm, launcher  # noqa: E402
from trainer.algorithms.sac.config import SACConfig  # noqa: E402
from trainer.algorithms.sac.sac_learner import SACLearner  # noqa: E402
from trainer.algorithms.sac.sac_module import SACModule, SquashedGaussian  # noqa: E402
from trainer.algorithms.sac.torch_learner import SACTorchLearner  # noqa: E402
from trainer.algorithms.sac.torch_module import (  # noqa: E402
    DefaultSACTorchRLModule,
    torch_names_of_numpy_parameters,
)
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.core.nn import Categorical  # noqa: E402
from trainer.metrics import TD_ERROR_KEY  # noqa: E402
from trainer.torch_rl.distributions import TorchSquashedGaussian  # noqa: E402
from trainer.torch_rl.runner_view import TorchModuleView  # noqa: E402

MODEL = {
    "fcnet_hiddens": [16, 12],
    "fcnet_activation": "relu",
    "head_fcnet_hiddens": [8],
    "fusionnet_hiddens": [10, 6],
}
BOX_SPACES = (
    gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
    gym.spaces.Box(-2.0, 2.0, (2,), np.float32),
)
DISCRETE_SPACES = (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(3))


def small_torch_sac(num_env_runners: int = 0, **training) -> SACConfig:
    settings = {
        "num_steps_sampled_before_learning_starts": 64,
        "train_batch_size": 32,
        # (A checkpoint's prioritized buffer of RLlib's million steps takes seconds to load.)
        "replay_buffer_config": {"capacity": 10_000},
    }
    settings.update(training)
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(
            model_config={
                "fcnet_hiddens": [32, 32],
                "head_fcnet_hiddens": [],
                "fusionnet_hiddens": [32],
            }
        )
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


# -- the same step as the numpy learner ---------------------------------------------------------
class FixedNoise:
    """A numpy generator stand-in whose normal draws are the given noise."""

    def __init__(self, noise: np.ndarray):
        self.noise = noise

    def standard_normal(self, shape):
        assert tuple(shape) == self.noise.shape
        return self.noise


class FixedNoiseSquashedGaussian(TorchSquashedGaussian):
    """The squashed Gaussian whose draws are `noise`: the rows of the current observations'
    (reparameterized) first, then the next observations' (as the numpy learner draws them)."""

    noise: torch.Tensor

    def _unsquashed(self, part: slice) -> torch.Tensor:
        dist = self._dist
        return dist.loc + dist.scale * type(self).noise[part]

    def rsample_and_logp(self, *, sample_shape=None):
        unsquashed = self._unsquashed(slice(0, len(self._dist.loc)))
        return self._squash(unsquashed), self._squashed_logp(unsquashed)

    def sample_and_logp(self, *, sample_shape=None):
        unsquashed = self._unsquashed(slice(len(self._dist.loc), None)).detach()
        return self._squash(unsquashed), self._squashed_logp(unsquashed)


def _batch(spaces: tuple, size: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs_space, action_space = spaces
    obs_dim = obs_space.shape[0]
    if isinstance(action_space, gym.spaces.Box):
        actions = rng.uniform(-0.95, 0.95, (size, *action_space.shape)).astype(np.float32)
    else:
        actions = rng.integers(action_space.n, size=size)
    n_step = rng.integers(1, 4, size=size)
    return {
        "obs": rng.normal(size=(size, obs_dim)).astype(np.float32),
        "next_obs": rng.normal(size=(size, obs_dim)).astype(np.float32),
        "actions": actions,
        "rewards": rng.normal(size=size).astype(np.float32),
        "terminateds": rng.random(size) < 0.2,
        "discounts": (0.95**n_step).astype(np.float32),
        "n_step": n_step,
        "weights": rng.uniform(0.3, 1.0, size).astype(np.float32),
    }


def _target_name(name: str) -> str:
    return "target_" + name


def _numpy_weights_as_torch(weights: dict, module: DefaultSACTorchRLModule, target: bool) -> dict:
    """The numpy SACModule's weights by the torch module's names (with `target` the critics'
    only, by the target critics' names)."""
    out = {}
    for numpy_name, torch_name in torch_names_of_numpy_parameters(module).items():
        if target and numpy_name.startswith("pi"):
            continue
        value = weights[numpy_name]
        out[_target_name(torch_name) if target else torch_name] = (
            value.T if numpy_name.endswith(".weight") else value
        )
    return out


def _capture_numpy_gradients(learner: SACLearner) -> dict[str, np.ndarray]:
    captured: dict[str, np.ndarray] = {}
    apply = learner._apply_gradients

    def capturing(losses):
        _, views = learner.module.gradient_buffer()
        for name, view in zip(learner.module.parameter_names(), views, strict=True):
            captured[name] = view.copy()
        captured["curr_log_alpha"] = learner._alpha_grad.copy()
        return apply(losses)

    learner._apply_gradients = capturing
    return captured


def _capture_torch_gradients(learner: SACTorchLearner) -> dict[str, np.ndarray]:
    captured: dict[str, np.ndarray] = {}
    postprocess = learner.postprocess_gradients

    def capturing(gradients):  # (before clipping)
        captured.update({name: grad.detach().numpy().copy() for name, grad in gradients.items()})
        return postprocess(gradients)

    learner.postprocess_gradients = capturing
    return captured


@pytest.mark.parametrize(
    "spaces, twin_q, grad_clip",
    [
        (BOX_SPACES, True, 0.5),
        (BOX_SPACES, False, None),
        (DISCRETE_SPACES, True, None),
        (DISCRETE_SPACES, False, 0.5),
    ],
    ids=["box-twin", "box-single", "discrete-twin", "discrete-single"],
)
@pytest.mark.slow
def test_the_torch_learner_takes_the_numpy_learners_step(spaces, twin_q, grad_clip):
    config = (
        SACConfig()
        .training(
            twin_q=twin_q,
            initial_alpha=0.5,
            tau=0.3,
            actor_lr=1e-3,
            critic_lr=2e-3,
            alpha_lr=3e-3,
            grad_clip=grad_clip,
            target_network_update_freq=100,
        )
        .rl_module(model_config=MODEL)
        .debugging(seed=5)
    )
    info = SpaceInfo.from_spaces(*spaces)
    numpy_learner = SACLearner(config, info)
    # Target critics unlike the critics, so the targets' source shows in the step.
    numpy_learner.target.flat_params[:] = numpy_learner.module.flat_params * 0.5 + 0.01
    torch_config = config.copy(copy_frozen=False).framework("torch")
    torch_learner = SACTorchLearner(torch_config, torch_config.build_module(info, seed=5))
    module = torch_learner.rl_module
    assert isinstance(module, DefaultSACTorchRLModule) and module.twin_q is twin_q
    # A seeded torch module starts from the numpy module's weights (its targets from them).
    numpy_weights = numpy_learner.module.get_weights()
    state = module.get_state()
    expected = _numpy_weights_as_torch(numpy_weights, module, target=False)
    expected.update(_numpy_weights_as_torch(numpy_weights, module, target=True))
    assert set(expected) == set(state)
    for name, value in expected.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)
    module.set_state(
        _numpy_weights_as_torch(numpy_learner.target.get_weights(), module, target=True)
    )

    batch = _batch(spaces, 48, seed=0)
    if module.continuous:
        noise = np.random.default_rng(1).standard_normal((96, 2)).astype(np.float32)
        numpy_learner.rng = FixedNoise(noise)
        FixedNoiseSquashedGaussian.noise = torch.from_numpy(noise)
        module.action_dist_cls = FixedNoiseSquashedGaussian
    numpy_grads = _capture_numpy_gradients(numpy_learner)
    torch_grads = _capture_torch_gradients(torch_learner)
    numpy_results = numpy_learner.update(dict(batch), num_env_steps_sampled_lifetime=150)
    torch_results = torch_learner.update(dict(batch), num_env_steps_sampled_lifetime=150)

    assert set(torch_results) == set(numpy_results)
    assert ("qf_twin_loss" in torch_results) is twin_q
    assert ("gradients_policy_global_norm" in torch_results) is (grad_clip is not None)
    for key, value in numpy_results.items():
        if key == TD_ERROR_KEY:
            np.testing.assert_allclose(torch_results[key], value, rtol=1e-4, atol=1e-5)
            assert torch_results[key].dtype == np.float32
        else:
            assert torch_results[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key
    # Each optimizer's gradient of its own loss, parameter by parameter (before clipping).
    names = torch_names_of_numpy_parameters(module)
    names["curr_log_alpha"] = "curr_log_alpha"
    assert set(torch_grads) == set(names.values())
    for numpy_name, torch_name in names.items():
        grad = numpy_grads[numpy_name]
        np.testing.assert_allclose(
            torch_grads[torch_name],
            grad.T if numpy_name.endswith(".weight") else grad,
            rtol=1e-3,
            atol=1e-5,
            err_msg=numpy_name,
        )
    # The same Adam steps and target update (150 - 0 >= 100 sampled steps).
    expected = _numpy_weights_as_torch(numpy_learner.module.get_weights(), module, target=False)
    expected.update(_numpy_weights_as_torch(numpy_learner.target.get_weights(), module, True))
    got = module.get_state()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-3, atol=2e-5, err_msg=name)
    np.testing.assert_allclose(
        torch_learner.curr_log_alpha["default_policy"].detach().numpy(),
        numpy_learner.log_alpha,
        rtol=1e-5,
    )
    assert torch_learner.last_target_update_step == 150


def test_the_torch_module_follows_rllibs_layout_and_outputs():
    module = DefaultSACTorchRLModule(
        observation_space=BOX_SPACES[0],
        action_space=BOX_SPACES[1],
        model_config={**MODEL, "twin_q": True},
    )
    fusion = module.qf_encoder
    assert list(fusion.base_encoders) == ["actions", "obs"]  # RLlib's sorted streams
    # [h, E] skip inputs after the first fusion layer and into the output layer.
    assert [layer.in_features for layer in fusion.fusion_layers] == [24, 10 + 24]
    assert fusion.output_layer.in_features == 6 + 24 and fusion.output_layer.out_features == 12
    names = {name for name, _ in module.named_children()}
    assert {"pi_encoder", "pi", "qf_encoder", "qf", "qf_twin_encoder", "qf_twin"} <= names
    assert {"target_qf_encoder", "target_qf", "target_qf_twin_encoder", "target_qf_twin"} <= names
    assert not any(p.requires_grad for p in module.target_qf.parameters())
    batch = {
        Columns.OBS: torch.randn(5, 3),
        Columns.NEXT_OBS: torch.randn(5, 3),
        Columns.ACTIONS: torch.rand(5, 2) * 2 - 1,
    }
    out = module.forward_train(batch)
    assert set(out) == {
        "qf_preds",
        "qf_twin_preds",
        "logp_resampled",
        "logp_next_resampled",
        "q_curr",
        "q_target_next",
        "action_dist_inputs",
        "action_dist_inputs_next",
    }
    assert out["qf_preds"].shape == (5,) and out["action_dist_inputs"].shape == (5, 4)
    # The critics take no gradient from q_curr; the policy does.
    out["q_curr"].sum().backward()
    assert all(p.grad is None for p in module.qf.parameters())
    assert module.pi.net.mlp[0].weight.grad is not None
    assert all(p.requires_grad for p in module.qf.parameters())
    # The EnvRunners' copy holds the policy only, and acts in numpy with the squashed Gaussian.
    runner_module = DefaultSACTorchRLModule(
        observation_space=BOX_SPACES[0],
        action_space=BOX_SPACES[1],
        model_config={**MODEL, "twin_q": True},
        inference_only=True,
    )
    assert {name for name, _ in runner_module.named_children()} == {"pi_encoder", "pi"}
    view = TorchModuleView(runner_module, SpaceInfo.from_spaces(*BOX_SPACES))
    view.set_weights({k: v for k, v in module.get_state(inference_only=True).items()})
    assert view.dist is SquashedGaussian and view._numpy is not None
    obs = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    with torch.no_grad():
        expected = module.forward_inference({Columns.OBS: torch.from_numpy(obs)})
    np.testing.assert_allclose(
        view.dist_inputs(obs), expected["action_dist_inputs"].numpy(), rtol=1e-5, atol=1e-6
    )
    discrete = DefaultSACTorchRLModule(
        observation_space=DISCRETE_SPACES[0],
        action_space=DISCRETE_SPACES[1],
        model_config={**MODEL, "twin_q": False},
    )
    assert TorchModuleView(discrete, SpaceInfo.from_spaces(*DISCRETE_SPACES)).dist is Categorical
    out = discrete.forward_train(
        {
            Columns.OBS: torch.randn(5, 4),
            Columns.NEXT_OBS: torch.randn(5, 4),
            Columns.ACTIONS: torch.tensor([0, 1, 2, 0, 1]),
        }
    )
    assert set(out) == {
        "qf_preds",
        "action_probs",
        "action_log_probs",
        "action_probs_next",
        "action_log_probs_next",
        "q_target_next",
    }
    assert out["qf_preds"].shape == (5, 3) and out["q_target_next"].shape == (5, 3)


def test_torch_sac_refusals_name_the_setting():
    with pytest.raises(ValueError, match="fcnet_hiddens'\\]=\\[\\]"):
        DefaultSACTorchRLModule(
            observation_space=BOX_SPACES[0],
            action_space=BOX_SPACES[1],
            model_config={"fcnet_hiddens": []},
        )
    with pytest.raises(ValueError, match="free_log_std"):
        DefaultSACTorchRLModule(
            observation_space=BOX_SPACES[0],
            action_space=BOX_SPACES[1],
            model_config={"free_log_std": True},
        )
    with pytest.raises(ValueError, match="not supported"):
        DefaultSACTorchRLModule(
            observation_space=BOX_SPACES[0], action_space=gym.spaces.MultiDiscrete([2, 2])
        )


# -- end to end ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_framework_torch_sac_samples_pendulum_in_a_worker_process_and_learns():
    algo = small_torch_sac(num_env_runners=1).build()
    try:
        # The learner's module: get_module() is the EnvRunner's inference-only copy.
        module = algo.learner_module()
        assert isinstance(module, DefaultSACTorchRLModule) and module.twin_q
        assert type(algo.learner) is SACTorchLearner
        before = module.get_state()
        results = [algo.train() for _ in range(2)]
        # The EnvRunner process acts with an inference-only copy (no critics), its policy's
        # outputs in numpy, its actions drawn from the squashed Gaussian.
        runner = algo.env_runner_group.foreach_env_runner(
            lambda runner: (
                sorted(runner.module.get_weights()),
                runner.module.dist.__name__,
                runner.module._numpy is not None,
            ),
            local_env_runner=False,
        )[0]
        after = module.get_state()
    finally:
        algo.stop()
    keys, dist_name, numpy_forward = runner
    assert keys and all(k.startswith("pi") for k in keys)
    assert dist_name == "SquashedGaussian" and numpy_forward
    learner = results[-1]["learners"]["default_policy"]
    for key in (
        "qf_loss",
        "qf_twin_loss",
        "policy_loss",
        "alpha_loss",
        "alpha_value",
        "log_alpha_value",
        "logps",
        "qf_mean",
        "td_error_mean",
    ):
        assert np.isfinite(learner[key]), key
    assert learner["target_entropy"] == -1.0
    assert learner["module_train_batch_size_mean"] == 32
    assert results[-1]["replay_buffer"]["num_env_steps_added_lifetime"] >= 200
    for name in ("pi.net.mlp.0.weight", "qf.net.mlp.0.weight", "target_qf.net.mlp.0.weight"):
        assert not np.array_equal(before[name], after[name]), name


@pytest.mark.slow
def test_a_torch_sac_checkpoint_holds_arrays_and_resumes_exactly(tmp_path):
    algo = small_torch_sac(store_buffer_in_checkpoints=True).build()
    try:
        algo.train()
        state = algo.learner.get_state()
        assert_plain_data(state)
        assert set(state["optimizer"]) == {"qf", "qf_twin", "policy", "alpha"}
        assert set(state["optimizer"]["alpha"]["param_state"]) == {"curr_log_alpha"}
        assert state["curr_log_alpha"].shape == (1,)
        path = algo.save_to_path(tmp_path / "checkpoint")
        # The module checkpoint rebuilds RLlib's module, target critics included.
        module_dir = Path(path) / "learner_group" / "learner" / "rl_module" / "default_policy"
        module = DefaultSACTorchRLModule.from_checkpoint(str(module_dir))
        saved = algo.learner_module().get_state()
        assert set(module.get_state()) == set(saved) and module.twin_q
        assert all(np.array_equal(module.get_state()[k], saved[k]) for k in saved)
        after = algo.train()
        expected = algo.learner_module().get_state()
        expected_learner = algo.learner.get_state()
    finally:
        algo.stop()
    resumed = Algorithm.from_checkpoint(path)
    try:
        result = resumed.train()
        got = resumed.learner_module().get_state()
        got_learner = resumed.learner.get_state()
    finally:
        resumed.stop()
    assert set(got) == set(expected)
    assert all(np.array_equal(got[k], expected[k]) for k in expected)
    np.testing.assert_array_equal(got_learner["curr_log_alpha"], expected_learner["curr_log_alpha"])
    assert got_learner["last_target_update_step"] == expected_learner["last_target_update_step"]
    np.testing.assert_array_equal(got_learner["rng"], expected_learner["rng"])
    for name, optimizer in expected_learner["optimizer"].items():
        for param, entries in optimizer["param_state"].items():
            got_entries = got_learner["optimizer"][name]["param_state"][param]
            assert got_entries["step"] == entries["step"]
            assert np.array_equal(got_entries["exp_avg_sq"], entries["exp_avg_sq"]), param
    learner_results = result["learners"]["default_policy"]
    assert learner_results["qf_loss"] == after["learners"]["default_policy"]["qf_loss"]


class ScaledPolicyLossLearner(SACTorchLearner):
    """A user's SAC learner (RLlib's `learner_class`): RLlib's loss, the policy's part scaled,
    one more statistic logged the RLlib way."""

    calls = 0

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        ScaledPolicyLossLearner.calls += 1
        total = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        key = (module_id, "policy_loss")
        self._temp_losses[key] = 0.5 * self._temp_losses[key]
        self.metrics.log_value((module_id, "mean_n_step"), batch["n_step"].float().mean(), window=1)
        # RLlib's way to hand over the TD errors: an item series in the metrics.
        td_errors, self.td_errors = self.td_errors, None
        self.metrics.log_value((module_id, TD_ERROR_KEY), td_errors, reduce="item_series")
        return total


@pytest.mark.slow
def test_a_users_learner_class_overriding_the_loss_trains():
    config = small_torch_sac(num_steps_sampled_before_learning_starts=32).training(
        learner_class=ScaledPolicyLossLearner
    )
    algo = config.build()
    try:
        assert type(algo.learner) is ScaledPolicyLossLearner
        before = algo.get_module().get_state()
        calls = ScaledPolicyLossLearner.calls
        result = algo.train()
        after = algo.get_module().get_state()
    finally:
        algo.stop()
    assert ScaledPolicyLossLearner.calls > calls
    learner = result["learners"]["default_policy"]
    assert learner["mean_n_step"] == 1.0  # n_step=1
    assert np.isfinite(learner["policy_loss"])
    assert not np.array_equal(before["pi.net.mlp.0.weight"], after["pi.net.mlp.0.weight"])


# -- RLlib's paths ------------------------------------------------------------------------------
def test_rllib_sac_torch_paths_import_these_classes():
    launcher.install()
    try:
        from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import (
            DefaultSACTorchRLModule as RLlibModule,
        )
        from ray.rllib.algorithms.sac.torch.sac_torch_learner import (
            SACTorchLearner as RLlibLearner,
        )
    finally:
        launcher.uninstall()
    assert RLlibModule is DefaultSACTorchRLModule and RLlibLearner is SACTorchLearner


@pytest.mark.timeout(120)
def test_an_rllib_sac_script_trains_with_torch_through_the_launcher(tmp_path):
    result = run_script(
        tmp_path,
        """
        from ray.rllib.algorithms.sac import SACConfig

        if __name__ == "__main__":
            config = (
                SACConfig()
                .environment("Pendulum-v1")
                .framework("torch")
                .env_runners(num_env_runners=0)
                .training(
                    num_steps_sampled_before_learning_starts=50,
                    train_batch_size=32,
                    actor_lr=1e-3,
                )
                .rl_module(model_config={"fcnet_hiddens": [32, 32]})
                .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=100)
            )
            algo = config.build()
            result = algo.train()
            print("module", type(algo.get_module()).__name__)
            print("qf_loss finite", result["learners"]["default_policy"]["qf_loss"] < 1e9)
            algo.stop()
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "module DefaultSACTorchRLModule" in result.stdout
    assert "qf_loss finite True" in result.stdout


def test_a_seeded_torch_module_starts_from_the_numpy_modules_weights():
    for spaces in (BOX_SPACES, DISCRETE_SPACES):
        info = SpaceInfo.from_spaces(*spaces)
        config = SACConfig().rl_module(model_config=MODEL)
        numpy_module = SACModule(info, config.model, twin_q=True, seed=7)
        view = config.copy(copy_frozen=False).framework("torch").build_module(info, seed=7)
        got = view.rl_module.get_state()
        for name, value in _numpy_weights_as_torch(
            numpy_module.get_weights(), view.rl_module, target=False
        ).items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.slow
def test_steps_on_256_wide_networks_time_one_torch_thread_against_two():
    """SAC's minibatch steps through RLlib's default 256x256 networks are large products: one
    thread or two, timed (`TorchLearner.times_large_linear_steps`); a seeded run stays on
    one, and small networks keep one thread for the whole update."""
    import gymnasium as gym

    from trainer import SACConfig

    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size=32)
        .reporting(min_sample_timesteps_per_iteration=100)
    )
    small = config.copy().rl_module(
        model_config={
            "fcnet_hiddens": [64, 64],
            "head_fcnet_hiddens": [64],
            "fusionnet_hiddens": [64, 64],
        }
    )
    assert_steps_time_one_torch_thread_against_two(config, small, gym.make("Pendulum-v1"))
