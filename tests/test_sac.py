"""SAC (numpy): the learner's gradients against finite differences, the squashed Gaussian, the
config's defaults and checks, learning on small tasks, exact checkpoints, multi-agent runs and
an RLlib script through the launcher."""

from __future__ import annotations

import math
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from test_launcher import run_script

from trainer import Algorithm, SACConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.sac.sac_learner import SACLearner
from trainer.algorithms.sac.sac_module import SquashedGaussian
from trainer.core.models import SpaceInfo
from trainer.util.rng import generator_state, set_generator_state


def _float64(module) -> None:
    """The module's parameters as float64 copies (finite differences need the precision)."""
    for _, net in module._named_nets():
        net.params[:] = [p.astype(np.float64) for p in net.params]
    module.__dict__.pop("_gradients", None)


def _learner(env_id: str, model_config: dict, **training) -> SACLearner:
    env = gym.make(env_id)
    config = (
        SACConfig()
        .environment(env_id)
        .rl_module(model_config=model_config)
        .training(initial_alpha=0.7, **training)
        .debugging(seed=0)
    )
    learner = SACLearner(config, SpaceInfo.from_spaces(env.observation_space, env.action_space))
    _float64(learner.module)
    _float64(learner.target)
    return learner


def assert_each_optimizer_gradient_is_its_loss(
    learner: SACLearner,
    losses: Callable[[], dict],
    samples: int,
    loss_of_net: dict[str, str] | None = None,
) -> None:
    """The gradient in the module's buffer (of the last `losses()`) against central
    differences of each parameter's own optimizer's loss, at about `samples` entries of each
    parameter: the policy's parameters against "policy", each critic's against its own, other
    networks' as `loss_of_net` says (by network name)."""
    grads = [g.copy() for g in learner.module.gradient_buffer()[1]]
    names = learner.module.parameter_names()
    assert len(names) == len(grads)
    eps = 1e-6
    for name, param, grad in zip(names, learner.module.parameters(), grads, strict=True):
        loss = "policy" if name.startswith("pi") else name.split("_encoder")[0].split(".")[0]
        loss = (loss_of_net or {}).get(loss, loss)
        flat, flat_grad = param.reshape(-1), grad.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // samples)):
            saved = flat[j]
            flat[j] = saved + eps
            up = losses()[loss]
            flat[j] = saved - eps
            down = losses()[loss]
            flat[j] = saved
            numeric = (up - down) / (2 * eps)
            assert flat_grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-7), (name, j)


def _batch(learner: SACLearner, n: int = 9) -> dict:
    rng = np.random.default_rng(1)
    spaces = learner.module.spaces
    if learner.module.continuous:
        actions = rng.uniform(-0.9, 0.9, (n, spaces.action_dim))
    else:
        actions = rng.integers(0, spaces.action_discrete_n, n)
    return {
        "obs": rng.standard_normal((n, spaces.obs_dim)),
        "next_obs": rng.standard_normal((n, spaces.obs_dim)),
        "actions": actions,
        "rewards": rng.standard_normal(n),
        "terminateds": rng.random(n) < 0.3,
        "discounts": np.full(n, 0.9),
        "weights": rng.uniform(0.5, 1.5, n),
    }


@pytest.mark.parametrize(
    ("env_id", "model_config", "twin_q"),
    [
        (
            "Pendulum-v1",
            {
                "fcnet_hiddens": [5, 4],
                "fcnet_activation": "tanh",
                "fusionnet_hiddens": [6, 3],
                "fusionnet_activation": "swish",
                "head_fcnet_hiddens": [3],
                "head_fcnet_activation": "tanh",
            },
            True,
        ),
        (
            "Pendulum-v1",
            {"fcnet_hiddens": [4], "fcnet_activation": "swish", "fusionnet_hiddens": []},
            False,
        ),
        (
            "CartPole-v1",
            {"fcnet_hiddens": [5], "head_fcnet_hiddens": [4], "head_fcnet_activation": "elu"},
            True,
        ),
        ("CartPole-v1", {"fcnet_hiddens": [5, 3], "fcnet_activation": "tanh"}, False),
    ],
)
def test_sac_gradients_match_finite_differences(env_id, model_config, twin_q):
    """Each optimizer's gradient is its own loss's: the critics' of their TD losses, the
    policy's of the policy loss through the reparameterized actions (the critics' parameters
    held), alpha's of the temperature loss. (Smooth activations: a ReLU unit whose input is
    exactly 0, as zero biases make it behind a dead layer, has no derivative to compare.)"""
    learner = _learner(env_id, model_config, twin_q=twin_q)
    batch = _batch(learner)
    state = generator_state(learner.rng)

    def losses() -> dict:
        set_generator_state(learner.rng, state)  # the same noise for every evaluation
        return learner.loss_and_gradients(batch).losses

    set_generator_state(learner.rng, state)
    alpha_grad = float(learner.loss_and_gradients(batch).d_log_alpha)
    assert_each_optimizer_gradient_is_its_loss(learner, losses, samples=5)
    # alpha's loss is linear in log_alpha: its gradient is the loss over log_alpha.
    log_alpha = float(learner.log_alpha[0])
    assert alpha_grad * log_alpha == pytest.approx(losses()["alpha"], rel=1e-5)


def test_squashed_gaussian_log_likelihood_is_the_change_of_variables():
    rng = np.random.default_rng(0)
    inputs = np.concatenate(
        [rng.standard_normal((50, 2)), rng.uniform(-3, 1, (50, 2))], axis=1
    ).astype(np.float32)
    actions, logp = SquashedGaussian.act(inputs, rng, explore=True)
    assert np.all(np.abs(actions) <= 1.0)
    mean, log_std = inputs[:, :2], inputs[:, 2:]
    unsquashed = np.arctanh(np.clip(actions.astype(np.float64), -1 + 1e-12, 1 - 1e-12))
    std = np.exp(log_std)
    gaussian = -0.5 * ((unsquashed - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    expected = (gaussian - np.log1p(-(np.tanh(unsquashed) ** 2))).sum(axis=1)
    interior = np.all(np.abs(actions) < 0.999, axis=1)
    np.testing.assert_allclose(logp[interior], expected[interior], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        SquashedGaussian.logp(inputs, actions)[interior], logp[interior], rtol=1e-3, atol=1e-3
    )
    greedy, _ = SquashedGaussian.act(inputs, rng, explore=False)
    np.testing.assert_allclose(greedy, np.tanh(mean), rtol=1e-6)
    # log-stds are clamped to RLlib's [-5, 2]
    wide = np.array([[0.0, 50.0], [0.0, -50.0]], dtype=np.float32)
    assert SquashedGaussian.split(wide)[1].ravel().tolist() == [2.0, -5.0]


def test_config_defaults_are_rllibs():
    config = SACConfig()
    assert config.twin_q is True
    assert (config.tau, config.initial_alpha, config.target_entropy) == (0.005, 1.0, "auto")
    assert (config.actor_lr, config.critic_lr, config.alpha_lr) == (3e-5, 3e-4, 3e-4)
    assert config.n_step == 1 and config.target_network_update_freq == 0
    assert config.replay_buffer_config == {
        "type": "PrioritizedEpisodeReplayBuffer",
        "capacity": 1_000_000,
        "alpha": 0.6,
        "beta": 0.4,
    }
    assert config.num_steps_sampled_before_learning_starts == 1500
    assert config.train_batch_size_per_learner == 256
    assert config.rollout_fragment_length == "auto"
    assert (config.min_time_s_per_iteration, config.min_sample_timesteps_per_iteration) == (1, 100)
    assert config.get_exploration_config()["type"] == "StochasticSampling"
    assert config.training(n_step=(2, 5)).get_rollout_fragment_length() == 5


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda c: c.training(lr=0.001), "lr=0.001"),
        (lambda c: c.training(tau=0), "tau"),
        (lambda c: c.training(initial_alpha=-1.0), "initial_alpha"),
        (lambda c: c.training(target_entropy="high"), "target_entropy"),
        (lambda c: c.training(actor_lr=-1), "actor_lr"),
        (lambda c: c.training(n_step=0), "n_step"),
        (lambda c: c.training(replay_buffer_config={"type": "Nope"}), "replay_buffer_config"),
    ],
)
def test_bad_settings_are_refused_at_the_call(call, words):
    with pytest.raises(ConfigError, match=words):
        call(SACConfig())


def test_lr_none_is_accepted_as_rllib_asks():
    config = SACConfig().training(lr=None, actor_lr=1e-3)
    assert config.actor_lr == 1e-3


def _fast(config: SACConfig) -> SACConfig:
    return config.reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=1)


class _ContinuousBandit(gym.Env):
    """One step: the best action is the observation's sign times 0.5."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)

    def __init__(self, config=None):
        self._obs = np.zeros(1, np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._obs = np.array([self.np_random.choice([-1.0, 1.0])], np.float32)
        return self._obs, {}

    def step(self, action):
        reward = -float((action[0] - 0.5 * self._obs[0]) ** 2)
        return self._obs, reward, True, False, {}


class _DiscreteBandit(gym.Env):
    """One step: arm 2 pays 1, the others 0."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, config=None):
        super().__init__()  # no settings: env_config is accepted and has none to give

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), float(action == 2), True, False, {}


def _bandit_config(env: type) -> SACConfig:
    return _fast(
        SACConfig()
        .environment(env)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
        .training(
            actor_lr=3e-3,
            critic_lr=3e-3,
            alpha_lr=3e-3,
            initial_alpha=0.1,
            training_intensity=64,  # 4 updates of 64 per 4 env steps
            train_batch_size_per_learner=64,
            num_steps_sampled_before_learning_starts=64,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 5000},
        )
        .rl_module(model_config={"fcnet_hiddens": [32], "fusionnet_hiddens": [32]})
        .evaluation(evaluation_duration=20, evaluation_config=SACConfig.overrides(explore=False))
        .debugging(seed=0)
    )


def test_sac_learns_a_continuous_bandit():
    algo = _bandit_config(_ContinuousBandit).build()
    try:
        for _ in range(300):
            algo.train()
        returns = algo.evaluate()["env_runners"]["episode_return_mean"]
        # the env's action, mapped from [-1, 1] onto [-2, 2], near +-0.5: a small squared
        # error (acting at random: about -1.6)
        assert returns > -0.1, returns
    finally:
        algo.stop()


def test_sac_learns_a_discrete_bandit():
    algo = _bandit_config(_DiscreteBandit).build()
    try:
        for _ in range(100):
            result = algo.train()
        assert result["learners"]["default_policy"]["target_entropy"] == -1.0
        assert algo.evaluate()["env_runners"]["episode_return_mean"] == 1.0
    finally:
        algo.stop()


def test_results_have_rllibs_keys():
    algo = _fast(
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=1)
        .training(num_steps_sampled_before_learning_starts=32, train_batch_size_per_learner=32)
        .rl_module(model_config={"fcnet_hiddens": [16], "fusionnet_hiddens": [16]})
    ).build()
    try:
        for _ in range(40):
            result = algo.train()
    finally:
        algo.stop()
    learner = result["learners"]["default_policy"]
    for key in (
        "policy_loss",
        "qf_loss",
        "qf_twin_loss",
        "alpha_loss",
        "alpha_value",
        "log_alpha_value",
        "target_entropy",
        "logps",
        "qf_mean",
        "qf_max",
        "qf_min",
        "td_error_mean",
    ):
        assert math.isfinite(learner[key]), key
    assert learner["target_entropy"] == -1.0  # "auto": -prod(Pendulum's action shape)
    rates = {name: learner[f"{name}_learning_rate"] for name in ("qf", "qf_twin", "policy")}
    assert rates == {"qf": 3e-4, "qf_twin": 3e-4, "policy": 3e-5}
    assert learner["alpha_learning_rate"] == 3e-4
    assert "replay_buffer" in result


def _resumable() -> SACConfig:
    return _fast(
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=0)
        .training(
            num_steps_sampled_before_learning_starts=16,
            train_batch_size_per_learner=16,
            store_buffer_in_checkpoints=True,
            n_step=(1, 3),
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
        .debugging(seed=3)
    )


def test_checkpoint_resume_is_exact(tmp_path):
    straight = _resumable().build()
    for _ in range(30):
        straight.train()
    expected = straight.learner.get_state()
    straight.stop()

    first = _resumable().build()
    for _ in range(15):
        first.train()
    path = first.save_to_path(str(tmp_path / "ckpt"))
    first.stop()
    resumed = Algorithm.from_checkpoint(path)
    try:
        for _ in range(15):
            resumed.train()
        state = resumed.learner.get_state()
    finally:
        resumed.stop()
    for name, weights in expected["module"].items():
        np.testing.assert_array_equal(state["module"][name], weights, err_msg=name)
    np.testing.assert_array_equal(state["log_alpha"], expected["log_alpha"])
    for name, optimizer in expected["optimizers"].items():
        np.testing.assert_array_equal(state["optimizers"][name]["m"], optimizer["m"])


def test_multi_agent_sac_trains_a_learner_per_module():
    from trainer.examples.envs.classes.multi_agent import MultiAgentPendulum

    config = _fast(
        SACConfig()
        .environment(MultiAgentPendulum, env_config={"num_agents": 2})
        .env_runners(num_env_runners=0)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *args, **kw: f"p{agent_id}"
        )
        .training(
            num_steps_sampled_before_learning_starts=16,
            train_batch_size_per_learner=16,
            replay_buffer_config={"type": "MultiAgentPrioritizedEpisodeReplayBuffer"},
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
    )
    algo = config.build()
    try:
        for _ in range(40):
            result = algo.train()
    finally:
        algo.stop()
    for module_id in ("p0", "p1"):
        assert math.isfinite(result["learners"][module_id]["qf_loss"])


def test_multi_agent_sac_on_torch_trains_a_torch_learner_per_module():
    pytest.importorskip("torch")
    from trainer.algorithms.sac.torch_learner import SACTorchLearner
    from trainer.examples.envs.classes.multi_agent import MultiAgentPendulum

    config = _fast(
        SACConfig()
        .environment(MultiAgentPendulum, env_config={"num_agents": 2})
        .framework("torch")
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .training(
            num_steps_sampled_before_learning_starts=16,
            train_batch_size_per_learner=16,
            replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": 1000},
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
    )
    algo = config.build()
    try:
        for _ in range(40):
            result = algo.train()
        learners = algo.learner.learners
    finally:
        algo.stop()
    assert all(isinstance(learners[m], SACTorchLearner) for m in ("p0", "p1"))
    for module_id in ("p0", "p1"):
        assert math.isfinite(result["learners"][module_id]["policy_loss"])


def test_a_single_agent_buffer_in_a_multi_agent_config_is_refused():
    from trainer.examples.envs.classes.multi_agent import MultiAgentPendulum

    config = (
        SACConfig()
        .environment(MultiAgentPendulum, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
    )
    with pytest.raises(ConfigError, match="MultiAgentPrioritizedEpisodeReplayBuffer"):
        config.validate()


RLLIB_SAC_SCRIPT = """
from ray.rllib.algorithms.sac import SACConfig
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

config = (
    SACConfig()
    .environment("Pendulum-v1")
    .env_runners(num_env_runners=1)
    .training(lr=None, num_steps_sampled_before_learning_starts=64,
              train_batch_size_per_learner=32)
    .reporting(min_time_s_per_iteration=0)
    .rl_module(model_config={"fcnet_hiddens": [16], "fusionnet_hiddens": [16]})
)
algo = config.build()
for _ in range(3):
    result = algo.train()
algo.stop()
print("sampled", result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME] > 0)
print("qf_loss" in result["learners"]["default_policy"])
"""


@pytest.mark.slow
@pytest.mark.cli
def test_an_rllib_sac_script_runs_through_the_launcher(tmp_path):
    ran = run_script(tmp_path, RLLIB_SAC_SCRIPT)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "sampled True\nTrue" in ran.stdout


def test_env_runners_hold_the_policy_alone():
    """The EnvRunners' modules are inference-only, as RLlib's: the policy without critics,
    and each weight sync sends the policy's weights alone."""
    algo = _fast(
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=1)
        .rl_module(model_config={"fcnet_hiddens": [8], "fusionnet_hiddens": [8]})
    ).build()
    try:
        runner_names = algo.env_runner_group.foreach_env_runner(
            lambda runner: sorted(runner.module.get_weights()), local_env_runner=False
        )[0]
        sent = algo.learner.get_weights()
        full = algo.learner_module().get_weights()
    finally:
        algo.stop()
    assert runner_names == sorted(sent)
    assert all(name.startswith(("pi_encoder.", "pi.")) for name in sent)
    assert set(sent) < set(full) and any(name.startswith("qf_twin") for name in full)
