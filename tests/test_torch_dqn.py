"""DQN with torch: RLlib's `DefaultDQNTorchRLModule` and `DQNTorchLearner` take the numpy
DQN's step from the same weights, `framework("torch")` samples in an EnvRunner process with
epsilon-greedy exploration and learns, a user's Q-network and learner class train, and a
checkpoint (msgpack arrays) resumes exactly."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from helpers import assert_plain_data  # noqa: E402
from torch import nn  # noqa: E402
from torch_modules import CountingDQNTorchLearner, SmallQTorchModule  # noqa: E402

from trainer import (  # noqa: E402
    Algorithm,
    DQNConfig,
    RLModuleSpec,
    SingleAgentEpisode,
    launcher,  # noqa: E402
)
from trainer.algorithms.algorithm_config import ConfigError  # noqa: E402
from trainer.algorithms.dqn.dqn_learner import DQNLearner  # noqa: E402
from trainer.algorithms.dqn.torch_learner import DQNTorchLearner  # noqa: E402
from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.algorithms.replay import (  # noqa: E402
    PrioritizedEpisodeReplayBuffer,
    sample_train_batch,
)
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.metrics import TD_ERROR_KEY  # noqa: E402
from trainer.torch_rl.runner_view import build_torch_module  # noqa: E402


def small_torch_dqn(num_env_runners: int = 0, **training) -> DQNConfig:
    settings = {
        "num_steps_sampled_before_learning_starts": 0,
        "train_batch_size": 16,
        "target_network_update_freq": 50,
    }
    settings.update(training)
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


# -- the same step as the numpy learner ---------------------------------------------------------
def _cartpole_episodes(num: int, seed: int) -> list[SingleAgentEpisode]:
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(num):
        episode = SingleAgentEpisode()
        obs, _ = env.reset(seed=seed + i)
        episode.add_env_reset(obs)
        done = False
        while not done:
            action = int(rng.integers(2))
            obs, reward, terminated, truncated, _ = env.step(action)
            episode.add_env_step(obs, action, reward, terminated=terminated, truncated=truncated)
            done = terminated or truncated
        episodes.append(episode.to_numpy())
    return episodes


def _linear_layers(network: nn.Module) -> list[nn.Linear]:
    return [layer for layer in network.modules() if isinstance(layer, nn.Linear)]


def _copy_numpy_weights(numpy_module, torch_module, prefix: str = "") -> None:
    """The numpy QModule's layers into the torch module's (`prefix` "_target_": into its
    target networks); numpy keeps (in, out) kernels, torch (out, in)."""
    pairs = [("encoder", "encoder")]
    pairs += [("advantage", "af"), ("value", "vf")] if numpy_module.dueling else [("q", "af")]
    for numpy_name, torch_name in pairs:
        mlp = getattr(numpy_module, numpy_name)
        layers = _linear_layers(getattr(torch_module, prefix + torch_name))
        assert len(layers) == mlp.num_layers
        with torch.no_grad():
            for i, layer in enumerate(layers):
                layer.weight.copy_(torch.from_numpy(mlp.params[2 * i].T.copy()))
                layer.bias.copy_(torch.from_numpy(mlp.params[2 * i + 1].copy()))


@pytest.mark.parametrize(
    "dueling, double_q, loss, tau",
    [(True, True, "huber", 0.5), (False, False, "mse", 1.0)],
)
def test_the_torch_learner_takes_the_numpy_learners_step(dueling, double_q, loss, tau):
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(
            dueling=dueling,
            double_q=double_q,
            td_error_loss_fn=loss,
            tau=tau,
            n_step=3,
            lr=0.01,
            target_network_update_freq=100,
        )
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]})
        .debugging(seed=3)
    )
    spaces = SpaceInfo.from_spaces(
        gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2)
    )
    numpy_learner = DQNLearner(config, spaces)
    # A target network unlike the online one, so the targets' source shows in the step.
    numpy_learner.target.flat_params[:] = numpy_learner.module.flat_params * 0.5 + 0.01
    torch_config = config.copy(copy_frozen=False).framework("torch")
    torch_learner = DQNTorchLearner(torch_config, torch_config.build_module(spaces, seed=1))
    torch_module = torch_learner.rl_module
    _copy_numpy_weights(numpy_learner.module, torch_module)
    _copy_numpy_weights(numpy_learner.target, torch_module, prefix="_target_")

    buffer = PrioritizedEpisodeReplayBuffer(capacity=5000, seed=0)
    buffer.add(_cartpole_episodes(6, seed=0))
    # Uneven priorities, so the importance weights differ.
    sample_train_batch(buffer, 64, n_step=3, gamma=0.99, beta=0.4)
    buffer.update_priorities(np.random.default_rng(0).uniform(0.1, 3.0, 64))
    batch = sample_train_batch(buffer, 64, n_step=3, gamma=0.99, beta=0.4)
    assert not np.all(batch["weights"] == 1.0)  # prioritized replay's importance weights

    obs = torch.from_numpy(batch["obs"])
    np.testing.assert_allclose(
        torch_module.compute_q_values({Columns.OBS: obs})["qf_preds"].detach().numpy(),
        numpy_learner.module.q_values(batch["obs"]),
        rtol=1e-5,
        atol=1e-6,
    )
    numpy_results = numpy_learner.update(dict(batch), num_env_steps_sampled_lifetime=150)
    torch_results = torch_learner.update(dict(batch), num_env_steps_sampled_lifetime=150)
    keys = ("qf_loss", "qf_mean", "qf_min", "qf_max", "td_error_mean", "gradients_adam_global_norm")
    for key in keys:
        assert torch_results[key] == pytest.approx(numpy_results[key], rel=1e-4, abs=1e-6), key
    # RLlib's TD errors are absolute (the priorities take their absolute values either way).
    np.testing.assert_allclose(
        torch_results[TD_ERROR_KEY], np.abs(numpy_results[TD_ERROR_KEY]), rtol=1e-4, atol=1e-6
    )
    # The same Adam step, then the same target update (150 - 0 >= 100 sampled steps).
    numpy_after = DefaultDQNTorchRLModule(
        observation_space=torch_module.observation_space,
        action_space=torch_module.action_space,
        model_config=torch_module.model_config,
    )
    _copy_numpy_weights(numpy_learner.module, numpy_after)
    _copy_numpy_weights(numpy_learner.target, numpy_after, prefix="_target_")
    expected, got = numpy_after.get_state(), torch_module.get_state()
    assert set(expected) == set(got) and any(k.startswith("_target_") for k in got)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-4, atol=1e-6, err_msg=key)
    assert torch_learner.last_target_update_step == 150


# -- end to end ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_framework_torch_dqn_explores_in_a_worker_process_and_learns():
    algo = small_torch_dqn(num_env_runners=1, epsilon=[(0, 1.0), (200, 0.1)]).build()
    try:
        # The learner's module: get_module() is the EnvRunner's inference-only copy.
        module = algo.learner_module()
        assert isinstance(module, DefaultDQNTorchRLModule) and module.uses_dueling
        before = module.get_state()
        results = [algo.train() for _ in range(2)]
        # The EnvRunner process samples with an inference-only copy: no target networks.
        runner_keys = algo.env_runner_group.foreach_env_runner(
            lambda runner: sorted(runner.module.get_weights()), local_env_runner=False
        )
        assert runner_keys and not any(k.startswith("_target_") for k in runner_keys[0])
        after = module.get_state()
    finally:
        algo.stop()
    learner = results[-1]["learners"]["default_policy"]
    for key in ("qf_loss", "qf_mean", "td_error_mean", "gradients_adam_global_norm"):
        assert np.isfinite(learner[key]), key
    assert results[-1]["env_runners"]["cur_epsilon"] < results[0]["env_runners"]["cur_epsilon"]
    assert results[-1]["replay_buffer"]["num_env_steps_added_lifetime"] >= 200
    assert not np.array_equal(before["af.net.mlp.0.weight"], after["af.net.mlp.0.weight"])
    # The target networks followed (tau = 1: a copy at the last update).
    assert not np.array_equal(
        before["_target_af.net.mlp.0.weight"], after["_target_af.net.mlp.0.weight"]
    )


def test_greedy_actions_follow_the_torch_q_values():
    algo = small_torch_dqn().env_runners(explore=False).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=40)
        module = algo.get_module()
        for episode in episodes:
            obs = torch.from_numpy(np.asarray(episode.observations[:-1], np.float32))
            q_values = module.compute_q_values({Columns.OBS: obs})["qf_preds"]
            assert np.array_equal(episode.actions, q_values.argmax(-1).numpy())
        obs = np.array([0.01, 0.2, -0.03, -0.3], np.float32)
        assert algo.compute_single_action(obs, explore=False) == algo.compute_single_action(obs)
        # Epsilon is 1.0 at t=0: exploring picks both actions.
        assert len({algo.compute_single_action(obs, explore=True) for _ in range(40)}) == 2
    finally:
        algo.stop()


def test_a_users_q_module_and_learner_class_train():
    config = (
        small_torch_dqn()
        .framework("numpy")  # the module class and the learner class ask for torch
        .training(learner_class=CountingDQNTorchLearner)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=SmallQTorchModule))
    )
    assert config.uses_torch
    algo = config.build()
    try:
        assert type(algo.learner) is CountingDQNTorchLearner
        module = algo.learner_module()  # (with its target network)
        assert isinstance(module, SmallQTorchModule)
        # The learner made the target networks; the EnvRunners get the online one only.
        assert {"_target_q.0.weight", "q.0.weight"} <= set(module.get_state())
        assert "_target_q.0.weight" not in algo.get_weights()
        before = module.get_state()
        calls = CountingDQNTorchLearner.calls
        result = algo.train()
        assert CountingDQNTorchLearner.calls > calls
        assert result["learners"]["default_policy"]["loss_calls"] > 0
        assert result["learners"]["default_policy"]["mean_n_step"] == 1.0  # n_step=1
        assert not np.array_equal(before["q.0.weight"], module.get_state()["q.0.weight"])
    finally:
        algo.stop()


def test_a_torch_dqn_checkpoint_holds_arrays_and_resumes_exactly(tmp_path):
    algo = small_torch_dqn(store_buffer_in_checkpoints=True).build()
    try:
        algo.train()
        state = algo.learner.get_state()
        assert_plain_data(state)
        assert any(k.startswith("_target_") for k in state["module"])
        # Adam's moments, by optimizer name, then parameter name
        assert state["optimizer"]["default_optimizer"]["param_state"]
        path = algo.save_to_path(tmp_path / "checkpoint")
        assert [p.name for p in Path(path).rglob("*.pkl")] == ["class_and_config.pkl"]
        # The module checkpoint rebuilds RLlib's module, target networks included.
        module_dir = Path(path) / "learner_group" / "learner" / "rl_module" / "default_policy"
        module = DefaultDQNTorchRLModule.from_checkpoint(str(module_dir))
        saved = algo.learner_module().get_state()
        assert set(module.get_state()) == set(saved)
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
    assert got_learner["last_target_update_step"] == expected_learner["last_target_update_step"]
    expected_adam = expected_learner["optimizer"]["default_optimizer"]["param_state"]
    got_adam = got_learner["optimizer"]["default_optimizer"]["param_state"]
    for name, entries in expected_adam.items():
        assert np.array_equal(got_adam[name]["exp_avg_sq"], entries["exp_avg_sq"])
    assert (
        result["learners"]["default_policy"]["qf_loss"]
        == after["learners"]["default_policy"]["qf_loss"]
    )


# -- refusals and RLlib's paths -----------------------------------------------------------------
def test_torch_dqn_refusals_name_the_setting():
    spaces = dict(
        observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        action_space=gym.spaces.Discrete(2),
    )
    with pytest.raises(ValueError, match=r"num_atoms=0 must be an int >= 1"):
        DefaultDQNTorchRLModule(**spaces, model_config={"num_atoms": 0})
    with pytest.raises(ValueError, match="v_min must be < v_max"):
        DefaultDQNTorchRLModule(**spaces, model_config={"num_atoms": 5, "v_min": 1, "v_max": 1})
    with pytest.raises(ValueError, match="Discrete action space"):
        DefaultDQNTorchRLModule(
            observation_space=spaces["observation_space"],
            action_space=gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
        )
    with pytest.raises(ConfigError, match="num_atoms"):
        small_torch_dqn(num_atoms=0).build()
    with pytest.raises(
        ConfigError, match="learner_class=PPOTorchLearner is not a subclass of DQNTorchLearner"
    ):
        small_torch_dqn(learner_class=PPOTorchLearner).validate()
    with pytest.raises(TypeError, match="must implement QNetAPI and TargetNetworkAPI"):
        from torch_modules import TwoHeadedTorchModule

        view = build_torch_module(
            TwoHeadedTorchModule,
            SpaceInfo.from_spaces(spaces["observation_space"], spaces["action_space"]),
            {},
        )
        DQNTorchLearner(small_torch_dqn(), view)


def test_rllib_dqn_torch_paths_import_these_classes():
    launcher.install()
    try:
        from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import (
            DefaultDQNTorchRLModule as RLlibModule,
        )
        from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import (
            DQNTorchLearner as RLlibLearner,
        )
    finally:
        launcher.uninstall()
    assert RLlibModule is DefaultDQNTorchRLModule and RLlibLearner is DQNTorchLearner


def test_discrete_observations_train_one_hot_encoded_once():
    module = DefaultDQNTorchRLModule(
        observation_space=gym.spaces.Discrete(16), action_space=gym.spaces.Discrete(4)
    )
    raw = torch.tensor([0, 5, 15])
    one_hot = torch.nn.functional.one_hot(raw, 16).float()  # as the EnvRunners preprocess
    torch.testing.assert_close(
        module.compute_q_values({Columns.OBS: raw})["qf_preds"],
        module.compute_q_values({Columns.OBS: one_hot})["qf_preds"],
    )
    algo = (
        small_torch_dqn()
        .environment("FrozenLake-v1")
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .build()
    )
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert np.isfinite(result["learners"]["default_policy"]["qf_loss"])
