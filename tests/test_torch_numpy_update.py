"""The default torch PPO and DQN learners' updates in numpy (`trainer.torch_rl.numpy_twin`,
`trainer.algorithms.ppo.numpy_update`, `trainer.algorithms.dqn.numpy_update`):
`PPOTorchLearner` on `DefaultPPOTorchRLModule` and `DQNTorchLearner` on
`DefaultDQNTorchRLModule`, with their default Adam, take the same steps as their torch updates
(to float32 rounding: same weights, target networks, Adam moments and step counts, statistics,
KL coefficient and minibatch order); the torch module and optimizer hold the result after each
update (a torch update, a restore or an in-place write in between is picked up); every other
learner, module or optimizer trains in torch."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer import SingleAgentEpisode
from trainer.algorithms.dqn.config import DQNConfig
from trainer.algorithms.dqn.torch_learner import DQNTorchLearner
from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule
from trainer.algorithms.ppo.ppo import PPOConfig
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.models import SpaceInfo
from trainer.metrics import TD_ERROR_KEY
from trainer.torch_rl.runner_view import build_torch_module
from trainer.util.rng import generator_state

#: float32 rounding after a few Adam steps: Adam divides by the gradients' scale, so a
#: rounding difference in a near-zero gradient moves its weight by up to about lr.
WEIGHT_ATOL = 2e-4


def _config(env: str, **training: Any) -> PPOConfig:
    settings: dict[str, Any] = {"num_epochs": 3, "minibatch_size": 64, "lr": 1e-3}
    settings.update(training)
    return PPOConfig().environment(env).framework("torch").debugging(seed=3).training(**settings)


def _module(env: str, model_config: dict, seed: int = 0) -> Any:
    spec_env = gym.make(env)
    spaces = SpaceInfo.from_spaces(spec_env.observation_space, spec_env.action_space)
    return build_torch_module(
        DefaultPPOTorchRLModule, spaces, model_config, inference_only=False, seed=seed
    )


def _episodes(view: Any, env_name: str, num_steps: int, seed: int) -> list[SingleAgentEpisode]:
    """Episodes played in `env_name` by the module's sampled actions, with the action logp
    and distribution inputs the learner needs; the last one is cut. The same for the same
    `seed`: the actions are drawn from torch's generator seeded with it (the caller's stream
    left as it was), so each run compares the learners on the same data."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return _play(view, env_name, num_steps, seed)


def _play(view: Any, env_name: str, num_steps: int, seed: int) -> list[SingleAgentEpisode]:
    env = gym.make(env_name)
    rng = np.random.default_rng(seed)
    module = view.rl_module
    obs, _ = env.reset(seed=seed)
    episodes, episode = [], SingleAgentEpisode()
    episode.add_env_reset(obs)
    for _ in range(num_steps):
        rows = torch.from_numpy(view.spaces.preprocess(np.asarray([obs])))
        with torch.no_grad():
            inputs = module.forward_exploration({Columns.OBS: rows})[Columns.ACTION_DIST_INPUTS]
            dist = module.get_exploration_action_dist_cls().from_logits(inputs)
            action = dist.sample()
            logp = float(dist.logp(action)[0])
        action = action[0].numpy()
        if isinstance(env.action_space, gym.spaces.Discrete):
            action = int(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        episode.add_env_step(
            obs,
            action,
            float(reward),
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={"action_logp": logp, "action_dist_inputs": inputs[0].numpy()},
        )
        if terminated or truncated:
            episodes.append(episode.to_numpy())
            obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
            episode = SingleAgentEpisode()
            episode.add_env_reset(obs)
    if len(episode) > 0:
        episodes.append(episode.to_numpy())
    return episodes


def _pair(env: str, model_config: dict, **training: Any) -> tuple[PPOTorchLearner, ...]:
    """Two learners on modules with the same weights: the first updates in numpy, the
    second in torch."""
    view = _module(env, model_config)
    in_numpy = PPOTorchLearner(_config(env, **training), view)
    in_torch = PPOTorchLearner(_config(env, **training), copy.deepcopy(view))
    assert in_numpy.numpy_update is not None
    in_torch.numpy_update = None
    return in_numpy, in_torch


def _weights(learner: PPOTorchLearner) -> dict[str, np.ndarray]:
    return {name: p.detach().numpy().copy() for name, p in learner.rl_module.named_parameters()}


def _adam(learner: PPOTorchLearner) -> dict[str, dict[str, np.ndarray]]:
    state = learner.get_state()["optimizer"]["default_optimizer"]["param_state"]
    return {name: {k: np.asarray(v) for k, v in entries.items()} for name, entries in state.items()}


def _assert_equal_adam(actual: dict, expected: dict) -> None:
    """Adam's per-parameter states (`_adam`'s layout) equal, bit for bit."""
    assert actual.keys() == expected.keys()
    for name, entries in actual.items():
        assert entries.keys() == expected[name].keys()
        for key, value in entries.items():
            np.testing.assert_array_equal(value, expected[name][key], err_msg=f"{name} {key}")


def _assert_same_learners(a: PPOTorchLearner, b: PPOTorchLearner, atol: float) -> None:
    weights_a, weights_b = _weights(a), _weights(b)
    assert weights_a.keys() == weights_b.keys()
    for name in weights_a:
        np.testing.assert_allclose(weights_a[name], weights_b[name], atol=atol, err_msg=name)
    adam_a, adam_b = _adam(a), _adam(b)
    assert adam_a.keys() == adam_b.keys() == weights_a.keys()
    for name, entries in adam_a.items():
        assert entries.keys() == adam_b[name].keys() == {"step", "exp_avg", "exp_avg_sq"}
        assert float(entries["step"]) == float(adam_b[name]["step"])
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(
                entries[key], adam_b[name][key], rtol=1e-3, atol=1e-6, err_msg=f"{name} {key}"
            )
    assert a.kl_coeff == pytest.approx(b.kl_coeff)
    assert generator_state(a.rng) == generator_state(b.rng)


def _assert_same_results(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-3, abs=1e-5), key


CASES = {
    "cartpole": ("CartPole-v1", {}, {}),
    "cartpole_shared_layers_kl_off": (
        "CartPole-v1",
        {"vf_share_layers": True, "fcnet_hiddens": [32, 16]},
        {"use_kl_loss": False, "grad_clip": 0.5, "grad_clip_by": "norm"},
    ),
    "pendulum": ("Pendulum-v1", {"fcnet_hiddens": [32, 32]}, {"lr": [[0, 1e-3], [400, 1e-4]]}),
    "pendulum_free_log_std_clip_value": (
        "Pendulum-v1",
        {"free_log_std": True, "head_fcnet_hiddens": [16], "fcnet_activation": "relu"},
        {"grad_clip": 0.05, "grad_clip_by": "value", "minibatch_size": 100},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_the_numpy_update_takes_the_torch_updates_steps(case):
    env, model_config, training = CASES[case]
    in_numpy, in_torch = _pair(env, model_config, **training)
    for round_, steps in enumerate([300, 250]):
        episodes = _episodes(in_torch.module, env, steps, seed=round_)
        lifetime = 200 * (round_ + 1)
        results_numpy = in_numpy.update(episodes, num_env_steps_sampled_lifetime=lifetime)
        results_torch = in_torch.update(episodes, num_env_steps_sampled_lifetime=lifetime)
        _assert_same_results(results_numpy, results_torch)
        _assert_same_learners(in_numpy, in_torch, WEIGHT_ATOL)


def test_a_torch_update_in_between_is_picked_up():
    """numpy, torch, numpy on one learner: the same as torch three times."""
    mixed, in_torch = _pair("CartPole-v1", {"fcnet_hiddens": [32, 32]})
    numpy_update = mixed.numpy_update
    for round_ in range(3):
        episodes = _episodes(in_torch.module, "CartPole-v1", 200, seed=round_)
        mixed.numpy_update = None if round_ == 1 else numpy_update
        mixed.update(episodes)
        in_torch.update(episodes)
        # The torch optimizer as a user reads it (before get_state) holds the update's state.
        for param, param_torch in zip(
            mixed.rl_module.parameters(), in_torch.rl_module.parameters(), strict=True
        ):
            moments = mixed.get_optimizer().state[param]["exp_avg"].numpy()
            expected = in_torch.get_optimizer().state[param_torch]["exp_avg"].numpy()
            np.testing.assert_allclose(moments, expected, rtol=1e-3, atol=1e-6)
        _assert_same_learners(mixed, in_torch, WEIGHT_ATOL)


@pytest.mark.slow
def test_a_restore_continues_exactly():
    """A learner restored from another's state after a numpy update takes the same next
    update, bit for bit; an in-place write to a parameter is used by the next update."""
    env = "CartPole-v1"
    first = PPOTorchLearner(_config(env), _module(env, {}, seed=1))
    first.update(_episodes(first.module, env, 300, seed=0))
    second = PPOTorchLearner(_config(env), _module(env, {}, seed=2))
    second.set_state(first.get_state())
    episodes = _episodes(first.module, env, 300, seed=1)
    first.update(episodes)
    second.update(episodes)
    for name, value in _weights(first).items():
        np.testing.assert_array_equal(value, _weights(second)[name], err_msg=name)
    # An in-place write (as a user's callback might make) reaches the next numpy update.
    with torch.no_grad():
        for learner in (first, second):
            learner.rl_module.pi.net.mlp[-1].bias.add_(5.0)
    first.numpy_update = None
    first.update(episodes)
    second.update(episodes)
    for name, value in _weights(first).items():
        np.testing.assert_allclose(value, _weights(second)[name], atol=WEIGHT_ATOL, err_msg=name)


class _SubclassedLearner(PPOTorchLearner):
    pass


@pytest.mark.slow
def test_what_trains_in_torch():
    env = "CartPole-v1"
    assert _SubclassedLearner(_config(env), _module(env, {})).numpy_update is None
    assert PPOTorchLearner(_config(env, use_critic=False), _module(env, {})).numpy_update is None
    lstm = {"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4}
    assert PPOTorchLearner(_config(env), _module(env, lstm)).numpy_update is None
    schedulers = _config(env).experimental(
        _torch_lr_scheduler_classes=[
            lambda optimizer: torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.9)
        ]
    )
    assert PPOTorchLearner(schedulers, _module(env, {})).numpy_update is None


@pytest.mark.slow
def test_a_forward_hook_or_a_changed_optimizer_sends_the_update_to_torch():
    env = "CartPole-v1"
    learner = PPOTorchLearner(_config(env), _module(env, {}))
    episodes = _episodes(learner.module, env, 200, seed=0)
    assert learner.numpy_update is not None and learner.numpy_update.usable()
    calls = []
    handle = learner.rl_module.pi.register_forward_hook(lambda *args: calls.append(1))
    learner.update(episodes)
    assert calls, "the update ran in numpy past a forward hook"
    handle.remove()
    assert learner.numpy_update.usable()
    learner.get_optimizer().param_groups[0]["weight_decay"] = 0.01
    assert not learner.numpy_update.usable()


@pytest.mark.slow
def test_an_algorithm_on_torch_trains_with_the_numpy_update_and_restores(tmp_path):
    """Through the public API: a torch PPO Algorithm with EnvRunner processes learns
    CartPole's first steps, and its checkpoint restores the same weights and Adam state."""
    from trainer import Algorithm

    config = (
        _config("CartPole-v1", train_batch_size=1000, minibatch_size=128, num_epochs=4)
        .env_runners(num_env_runners=1)
        .training(lr=3e-4)
    )
    algo = config.build()
    try:
        assert algo.learner.numpy_update is not None
        for _ in range(4):
            result = algo.train()
        assert result["learners"]["default_policy"]["num_env_steps_trained"] == 1000
        algo.save_to_path(tmp_path / "checkpoint")
        saved = algo.learner.get_state()
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(tmp_path / "checkpoint")
    try:
        state = restored.learner.get_state()
        for name, value in saved["module"].items():
            np.testing.assert_array_equal(value, state["module"][name])
        saved_adam = saved["optimizer"]["default_optimizer"]["param_state"]
        assert saved_adam.keys() == set(saved["module"])
        _assert_equal_adam(_adam(restored.learner), saved_adam)
        restored.train()
    finally:
        restored.stop()


# -- DQN ---------------------------------------------------------------------------------------
def _dqn_pair(model_config: dict, **training: Any) -> tuple[DQNTorchLearner, DQNTorchLearner]:
    """Two DQN learners on modules with the same weights: the first steps in numpy, the
    second in torch."""
    env = gym.make("CartPole-v1")
    spaces = SpaceInfo.from_spaces(env.observation_space, env.action_space)
    settings: dict[str, Any] = {"lr": 1e-3, "target_network_update_freq": 40, "tau": 0.5}
    settings.update(training)
    config = DQNConfig().environment("CartPole-v1").framework("torch").training(**settings)
    view = build_torch_module(
        DefaultDQNTorchRLModule, spaces, model_config, inference_only=False, seed=0
    )
    in_numpy = DQNTorchLearner(config, view)
    in_torch = DQNTorchLearner(config, copy.deepcopy(view))
    assert in_numpy.numpy_update is not None
    in_torch.numpy_update = None
    return in_numpy, in_torch


def _replay_batch(rng: np.random.Generator, n: int = 32) -> dict[str, np.ndarray]:
    return {
        "obs": rng.standard_normal((n, 4), dtype=np.float32),
        "next_obs": rng.standard_normal((n, 4), dtype=np.float32),
        "actions": rng.integers(0, 2, n),
        "rewards": rng.random(n, dtype=np.float32),
        "terminateds": rng.random(n) < 0.1,
        "discounts": np.full(n, 0.99**2, dtype=np.float32),
        "weights": rng.uniform(0.5, 1.0, n).astype(np.float32),
    }


DQN_CASES = {
    "dueling_double_q_huber": ({"fcnet_hiddens": [32, 32]}, {}),
    "single_head_mse_clip_by_value": (
        {"dueling": False, "fcnet_hiddens": [16], "head_fcnet_hiddens": [8]},
        {"double_q": False, "td_error_loss_fn": "mse", "grad_clip": 0.1, "grad_clip_by": "value"},
    ),
    # Single-headed: RLlib's dueling distributional head gives the value stream only rounding
    # noise as gradient (V shifts each row of logits by a constant, which the softmax cancels),
    # which Adam scales up to steps of about lr that differ between numpy and torch.
    "distributional_double_q": (
        {"dueling": False, "fcnet_hiddens": [16], "num_atoms": 11, "v_min": -1.0, "v_max": 3.0},
        {"dueling": False, "num_atoms": 11, "v_min": -1.0, "v_max": 3.0},
    ),
}


@pytest.mark.parametrize("case", list(DQN_CASES))
def test_the_numpy_dqn_step_takes_the_torch_steps(case):
    """Weights, target networks, Adam's state and the statistics (TD errors for the
    priorities included) after steps across two target network updates."""
    model_config, training = DQN_CASES[case]
    in_numpy, in_torch = _dqn_pair(model_config, **training)
    rng = np.random.default_rng(0)
    for step in range(12):
        batch = _replay_batch(rng)
        results_numpy = in_numpy.update(batch, num_env_steps_sampled_lifetime=10 * step)
        results_torch = in_torch.update(batch, num_env_steps_sampled_lifetime=10 * step)
        td_numpy = results_numpy.pop(TD_ERROR_KEY)
        td_torch = results_torch.pop(TD_ERROR_KEY)
        assert td_numpy.dtype == td_torch.dtype == np.float64
        np.testing.assert_allclose(td_numpy, td_torch, rtol=1e-4, atol=1e-5)
        _assert_same_results(results_numpy, results_torch)
    assert in_numpy.last_target_update_step == in_torch.last_target_update_step == 80
    weights_numpy, weights_torch = _weights(in_numpy), _weights(in_torch)
    assert any(name.startswith("_target_") for name in weights_numpy)
    for name, value in weights_numpy.items():
        np.testing.assert_allclose(value, weights_torch[name], atol=WEIGHT_ATOL, err_msg=name)
    adam_numpy, adam_torch = _adam(in_numpy), _adam(in_torch)
    assert adam_numpy.keys() == adam_torch.keys()
    assert not any(name.startswith("_target_") for name in adam_numpy)
    for name, entries in adam_numpy.items():
        assert float(entries["step"]) == float(adam_torch[name]["step"]) == 12
        np.testing.assert_allclose(
            entries["exp_avg"], adam_torch[name]["exp_avg"], rtol=1e-3, atol=1e-6
        )


def test_a_restored_dqn_learner_continues_exactly():
    in_numpy, _ = _dqn_pair({"fcnet_hiddens": [32, 32]})
    rng = np.random.default_rng(1)
    for step in range(5):
        in_numpy.update(_replay_batch(rng), num_env_steps_sampled_lifetime=10 * step)
    restored, _ = _dqn_pair({"fcnet_hiddens": [32, 32]})
    restored.set_state(in_numpy.get_state())
    for step in range(5, 10):
        batch = _replay_batch(rng)
        in_numpy.update(batch, num_env_steps_sampled_lifetime=10 * step)
        restored.update(batch, num_env_steps_sampled_lifetime=10 * step)
    for name, value in _weights(in_numpy).items():
        np.testing.assert_array_equal(value, _weights(restored)[name], err_msg=name)


@pytest.mark.slow
def test_a_dqn_algorithm_on_torch_steps_in_numpy_and_restores(tmp_path, monkeypatch):
    """Through the public API: the default torch DQN on CartPole with an EnvRunner process
    trains with the numpy step (torch's is never called), and its checkpoint restores the
    trained weights and Adam state."""
    from trainer import Algorithm

    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=1)
        .reporting(min_sample_timesteps_per_iteration=300)
        .training(num_steps_sampled_before_learning_starts=200)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        learner = algo.learner
        assert learner.numpy_update is not None
        initial = _weights(learner)

        def torch_step(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the torch step ran")

        monkeypatch.setattr(learner, "update_from_batch", torch_step)
        for _ in range(3):
            result = algo.train()
        assert result["learners"]["default_policy"]["qf_loss"] > 0
        trained = _weights(learner)
        assert not np.array_equal(trained["af.net.mlp.0.weight"], initial["af.net.mlp.0.weight"])
        algo.save_to_path(tmp_path / "checkpoint")
        saved_adam = _adam(learner)
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(tmp_path / "checkpoint")
    try:
        for name, value in _weights(restored.learner).items():
            np.testing.assert_array_equal(value, trained[name], err_msg=name)
        _assert_equal_adam(_adam(restored.learner), saved_adam)
        restored.train()
    finally:
        restored.stop()


def test_a_round_of_dqn_updates_runs_the_numpy_step_on_one_blas_thread():
    """The algorithm runs its updates inside `learner.update_threads()`: for the numpy step
    that caps numpy's BLAS pool, as for the numpy DQN learner (two threads on a busy
    machine made each 32-row step several times slower)."""
    from threadpoolctl import threadpool_info

    in_numpy, _ = _dqn_pair({"fcnet_hiddens": [32, 32]})
    if in_numpy.numpy_update.numpy_learner.update_threads.user_sized:
        pytest.skip("the BLAS pools are sized by the environment (OMP_NUM_THREADS, ...)")
    with in_numpy.update_threads():
        inside = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
    assert inside == {1}


_NEVER_BUILT_SCRIPT = """
import sys, tempfile
from trainer import Algorithm, DQNConfig, PPOConfig

configs = [
    PPOConfig().training(train_batch_size=400, minibatch_size=100, num_epochs=2),
    DQNConfig()
    .reporting(min_sample_timesteps_per_iteration=100)
    .training(num_steps_sampled_before_learning_starts=50),
]
for config in configs:
    config.environment("CartPole-v1").framework("torch").env_runners(num_env_runners=1)
    algo = config.build()
    algo.train()
    algo.train()
    path = tempfile.mkdtemp()
    algo.save_to_path(path)
    algo.stop()
    restored = Algorithm.from_checkpoint(path)
    restored.train()
    built = restored.learner._optimizers["default_optimizer"].built
    restored.stop()
    print(type(algo).__name__, built, "torch._dynamo" in sys.modules)
"""


@pytest.mark.slow
def test_default_torch_runs_never_build_the_torch_adam(tmp_path):
    """In a fresh process: PPO and DQN on torch train, checkpoint, restore and train again
    with the numpy update alone: the torch Adam is never built, so torch._dynamo (which a
    torch optimizer's constructor imports, about 1 s of CPU) is never imported."""
    import subprocess
    import sys

    output = subprocess.run(
        [sys.executable, "-c", _NEVER_BUILT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
        cwd=tmp_path,
    ).stdout.split("\n")
    assert [line for line in output if line] == ["PPO False False", "DQN False False"]


@pytest.mark.parametrize("algo_name", ["PPO", "DQN"])
def test_a_seeded_torch_run_starts_from_the_numpy_runs_weights(algo_name):
    """The default torch module built for a seed holds the numpy module's initial weights
    for that seed (the same networks, torch's layout; DQN's target networks too): on either
    framework a seeded run starts from the same weights. A seedless one does not."""
    from trainer.algorithms.dqn.torch_module import torch_names_of_numpy_parameters as dqn_names
    from trainer.algorithms.ppo.state_conversion import torch_names_of_numpy_parameters

    def build(framework: str, seed: int | None):
        config = (PPOConfig() if algo_name == "PPO" else DQNConfig()).environment("CartPole-v1")
        config.framework(framework).env_runners(num_env_runners=0)
        if seed is not None:
            config.debugging(seed=seed)
        return config.build()

    numpy_algo, torch_algo, seedless = build("numpy", 5), build("torch", 5), build("torch", None)
    try:
        numpy_weights = numpy_algo.learner.module.get_weights()
        module = torch_algo.learner.rl_module
        if algo_name == "PPO":
            pairs = list(torch_names_of_numpy_parameters(module._config, module).items())
        else:
            pairs = list(dqn_names(module).items()) + list(dqn_names(module, "_target_").items())
        torch_state = torch_algo.learner.get_state()["module"]
        assert {torch_name for _, torch_name in pairs} == set(torch_state)
        for numpy_name, torch_name in pairs:
            value = numpy_weights[numpy_name]
            expected = value.T if numpy_name.endswith(".weight") else value
            np.testing.assert_array_equal(torch_state[torch_name], expected, err_msg=torch_name)
        seedless_state = seedless.learner.get_state()["module"]
        assert not all(np.array_equal(seedless_state[k], v) for k, v in torch_state.items())
    finally:
        for algo in (numpy_algo, torch_algo, seedless):
            algo.stop()
