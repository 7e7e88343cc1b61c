"""DreamerV3 (`trainer/algorithms/dreamerv3/`): its settings are RLlib 2.60's and are checked at
the call; its module has RLlib's layout (state dicts exchange with RLlib's own
`DreamerV3TorchRLModule`, built from the installed Ray wheel) and computes what RLlib's computes
for the same weights and seed; its losses equal RLlib's loss functions on the same inputs; it
learns through the public API on a worker process (and not with its rates at 0), and resumes
exactly from a checkpoint."""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest

from trainer import launcher
from trainer.algorithms import registry
from trainer.algorithms.dreamerv3 import DreamerV3, DreamerV3Config
from trainer.algorithms.dreamerv3.config import MODEL_SIZES
from trainer.errors import ConfigError, NotSupported
from trainer.metrics import LEARNER_RESULTS

torch = pytest.importorskip("torch")  # DreamerV3 runs on torch

from trainer.algorithms.dreamerv3 import loss as dreamer_loss  # noqa: E402
from trainer.algorithms.dreamerv3 import torch_module  # noqa: E402
from trainer.algorithms.dreamerv3.torch_module import DreamerV3TorchRLModule  # noqa: E402

#: A small, fast configuration (RLlib's "nano" size).
SMALL = {
    "model_size": "nano",
    "batch_size_B": 4,
    "batch_length_T": 8,
    "horizon_H": 5,
    "training_ratio": 32,
}
FROZEN_LAKE_2X2 = {"desc": ["SF", "HG"], "is_slippery": False}


def _rllib_dreamer() -> types.SimpleNamespace:
    """RLlib's module, catalog and learner classes from the installed Ray wheel (the test
    extra), or a skip."""
    pytest.importorskip("ray.rllib")
    from ray.rllib.algorithms.dreamerv3.dreamerv3_catalog import DreamerV3Catalog
    from ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_learner import (
        DreamerV3TorchLearner,
    )
    from ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_rl_module import (
        DreamerV3TorchRLModule as RLlibModule,
    )

    return types.SimpleNamespace(
        module=RLlibModule, catalog=DreamerV3Catalog, learner=DreamerV3TorchLearner
    )


def _model_config(model_size: str, T: int = 5, H: int = 3) -> dict:
    return {
        "model_size": model_size,
        "batch_length_T": T,
        "horizon_H": H,
        "gamma": 0.99,
        "symlog_obs": "auto",
    }


# -- settings --------------------------------------------------------------------------------
def test_defaults_are_rllibs():
    config = DreamerV3Config()
    expected = {
        "model_size": "XS",
        "training_ratio": 1024,
        "batch_size_B": 16,
        "batch_length_T": 64,
        "horizon_H": 15,
        "gae_lambda": 0.95,
        "entropy_scale": 3e-4,
        "return_normalization_decay": 0.99,
        "train_critic": True,
        "train_actor": True,
        "intrinsic_rewards_scale": 0.1,
        "world_model_lr": 1e-4,
        "actor_lr": 3e-5,
        "critic_lr": 3e-5,
        "world_model_grad_clip_by_global_norm": 1000.0,
        "critic_grad_clip_by_global_norm": 100.0,
        "actor_grad_clip_by_global_norm": 100.0,
        "symlog_obs": "auto",
        "use_float16": False,
        "use_curiosity": False,
        "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 1_000_000},
        "report_individual_batch_item_stats": False,
        "report_dream_data": False,
        "report_images_and_videos": False,
        "lr": None,
        "train_batch_size": None,
        "gamma": 0.997,
        "num_env_runners": 0,
        "rollout_fragment_length": 1,
        "metrics_num_episodes_for_smoothing": 1,
        "framework_str": "torch",
    }
    assert {name: getattr(config, name) for name in expected} == expected
    assert set(MODEL_SIZES) == {"nano", "micro", "mini", "XXS", "XS", "S", "M", "L", "XL"}
    assert registry.get_trainable_cls("DreamerV3") is DreamerV3


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda c: c.training(model_size="XXL"),
            "DreamerV3Config.training(model_size='XXL'): model_size must be one of ['nano'",
        ),
        (lambda c: c.training(training_ratio=0), "training_ratio=0): training_ratio must be"),
        (lambda c: c.training(batch_size_B=0), "batch_size_B=0): batch_size_B must be"),
        (lambda c: c.training(horizon_H=1.5), "horizon_H=1.5): horizon_H must be"),
        (lambda c: c.training(gae_lambda=1.5), "gae_lambda=1.5): gae_lambda must be"),
        (lambda c: c.training(symlog_obs="yes"), "symlog_obs='yes'): symlog_obs must be"),
        (lambda c: c.training(lr=0.1), "lr=0.1): lr must be None (DreamerV3's rates"),
        (lambda c: c.training(train_batch_size=64), "train_batch_size must be None"),
        (
            lambda c: c.training(replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer"}),
            "replay_buffer_config must be a dict whose 'type' is 'EpisodeReplayBuffer'",
        ),
        (
            lambda c: c.training(replay_buffer_config={"capacity": 0}),
            "whose 'capacity' is a whole number >= 1 (got 0)",
        ),
        (
            lambda c: c.reporting(report_dream_data="yes"),
            "reporting(report_dream_data='yes'): report_dream_data must be True or False",
        ),
    ],
)
def test_bad_values_are_refused_at_the_call(call, message):
    config = DreamerV3Config()
    with pytest.raises(ConfigError) as refused:
        call(config)
    assert message in str(refused.value)


def test_what_is_not_built_is_refused_typed():
    config = DreamerV3Config()
    for call in (
        lambda: config.training(use_curiosity=True),
        lambda: config.training(use_float16=True),
        lambda: config.reporting(report_images_and_videos=True),
    ):
        with pytest.raises(NotSupported) as refused:
            call()
        assert isinstance(refused.value, ConfigError) and refused.value.capability
    config.training(replay_buffer_config={"capacity": 5000}, model_size="S")
    assert config.replay_buffer_config == {"type": "EpisodeReplayBuffer", "capacity": 5000}
    assert config.model_size == "S"


def test_validate_checks_the_settings_together():
    with pytest.raises(ConfigError, match="train_actor=True, train_critic=False"):
        DreamerV3Config().environment("CartPole-v1").training(train_critic=False).validate()
    with pytest.raises(ConfigError, match="DreamerV3 does not train a multi-agent config"):
        (
            DreamerV3Config()
            .environment("CartPole-v1")
            .multi_agent(policies={"a", "b"}, policy_mapping_fn=lambda agent_id, *a, **k: "a")
            .validate()
        )
    DreamerV3Config().environment("CartPole-v1").training(
        train_critic=False, train_actor=False
    ).validate()


# -- the module: RLlib's layout and computations ----------------------------------------------
def _mine_and_rllibs(observation_space: gym.Space, action_space: gym.Space, config: dict) -> tuple:
    """This project's module and RLlib's for the spaces, after checking that their state dicts
    have the same names and shapes."""
    mine = DreamerV3TorchRLModule(
        observation_space=observation_space, action_space=action_space, model_config=config
    )
    rllib = _rllib_dreamer()
    theirs = rllib.module(
        observation_space=observation_space,
        action_space=action_space,
        model_config=config,
        catalog_class=rllib.catalog,
    )
    shapes = {key: tuple(value.shape) for key, value in mine.state_dict().items()}
    assert shapes == {key: tuple(value.shape) for key, value in theirs.state_dict().items()}
    return mine, theirs


@pytest.mark.parametrize("model_size", ["nano", "XS"])
@pytest.mark.parametrize(
    "action_space", [gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)]
)
def test_the_module_layout_is_rllibs(model_size, action_space):
    observation_space = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
    mine, theirs = _mine_and_rllibs(observation_space, action_space, _model_config(model_size))
    # RLlib's weights load into this module and back.
    mine.set_state({key: value.numpy() for key, value in theirs.state_dict().items()})
    theirs.load_state_dict(mine.state_dict())


def test_image_observations_have_rllibs_cnn_layout_and_outputs():
    """64x64 RGB images: RLlib's CNN encoder and transposed-CNN decoder, the same state-dict
    names and shapes as RLlib's module; with the same weights and draws the world model's
    training pass computes what RLlib's computes (decoded means, posterior states, rewards).
    (A gray image with its channel axis, (64, 64, 1), gets 1-channel networks here; RLlib's
    catalog builds 3-channel ones for it, which its images cannot go through.)"""
    shape = (64, 64, 3)
    observation_space = gym.spaces.Box(0.0, 1.0, shape, np.float32)
    action_space = gym.spaces.Discrete(3)
    B, T = 2, 3
    config = {**_model_config("nano", T, 2), "symlog_obs": "auto"}
    torch.manual_seed(0)
    mine, theirs = _mine_and_rllibs(observation_space, action_space, config)
    assert any(key.startswith("encoder.cnn_stack.") for key in mine.state_dict())
    theirs.load_state_dict(mine.state_dict())
    mine.use_rllib_draws()
    generator = torch.Generator().manual_seed(1)
    obs = torch.rand((B, T, *shape), generator=generator)
    actions = torch.randint(0, 3, (B, T), generator=generator)
    is_first = torch.zeros(B, T)
    is_first[:, 0] = 1.0
    torch.manual_seed(2)
    out = mine.forward_train({"obs": obs, "actions": actions, "is_first": is_first})
    torch.manual_seed(2)
    rllib_out = theirs.forward_train(
        {
            "obs": obs,
            "actions": torch.nn.functional.one_hot(actions, 3).float(),
            "is_first": is_first,
        }
    )
    assert out["obs_distribution_means_BxT"].shape == (B * T, int(np.prod(shape)))
    for key in (
        "obs_distribution_means_BxT",
        "z_posterior_states_BxT",
        "h_states_BxT",
        "rewards_BxT",
    ):  # (the convolutions sum 12,288 inputs in another order: 1e-5 apart)
        torch.testing.assert_close(out[key], rllib_out[key].float(), rtol=1e-4, atol=1e-4, msg=key)
    gray = DreamerV3TorchRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (64, 64, 1), np.float32),
        action_space=action_space,
        model_config=config,
    )
    assert gray.state_dict()["encoder.cnn_stack.net.0.cnn.1.weight"].shape[1] == 1
    gray_out = gray.forward_train({"obs": obs[..., :1], "actions": actions, "is_first": is_first})
    assert gray_out["obs_distribution_means_BxT"].shape == (B * T, 64 * 64)


def test_image_observations_train_and_act_through_the_public_api():
    """An env of 64x64 RGB images trains (a worker process acts with the CNN encoder, the
    learner reconstructs the images); other image sizes are refused at the build."""

    class Frames(gym.Env):
        observation_space = gym.spaces.Box(0.0, 1.0, (64, 64, 3), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, config=None):
            self.t = 0

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.zeros((64, 64, 3), np.float32), {}

        def step(self, action):
            self.t += 1
            frame = np.full((64, 64, 3), self.t / 10.0, np.float32)
            frame[:, :, int(action)] = 1.0
            return frame, float(action), self.t >= 10, False, {}

    algo = _config("CartPole-v1", world_model_lr=1e-3).environment(Frames).build()
    try:
        results = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    losses = [r[LEARNER_RESULTS]["default_policy"]["WORLD_MODEL_L_decoder"] for r in results]
    assert all(np.isfinite(losses)), losses
    assert results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] >= 34

    class SmallFrames(Frames):
        observation_space = gym.spaces.Box(0.0, 1.0, (32, 32, 3), np.float32)

    # RLlib's DreamerV3 refuses other image sizes with a ValueError too: not a refusal of a
    # capability RLlib has (NotSupported), as a Dict observation space is.
    with pytest.raises(ValueError, match=r"64x64 images.*wrap_atari_for_new_api_stack") as wrong:
        _config("CartPole-v1").environment(SmallFrames).build()
    assert not isinstance(wrong.value, NotSupported)

    class DictFrames(Frames):
        observation_space = gym.spaces.Dict({"x": gym.spaces.Box(0.0, 1.0, (4,), np.float32)})

    with pytest.raises(NotSupported, match=r"vector observations"):
        _config("CartPole-v1").environment(DictFrames).build()


@pytest.mark.parametrize(
    ("model_size", "world_model", "actor", "critic"),
    [("XS", 2435076, 328706, 393727), ("S", 7493380, 1051650, 1181439)],
)
def test_the_parameter_counts_are_the_papers(model_size, world_model, actor, critic):
    """RLlib's unit test's counts for CartPole's spaces (the paper's table B sizes)."""
    module = DreamerV3TorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 0.0, (4,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config=_model_config(model_size),
    )

    def count(part: torch.nn.Module) -> int:
        return sum(int(np.prod(p.shape)) for p in part.parameters() if p.requires_grad)

    assert (count(module.world_model), count(module.actor), count(module.critic)) == (
        world_model,
        actor,
        critic,
    )


def _same_weights_modules(action_space: gym.Space, T: int, H: int) -> tuple:
    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    torch.manual_seed(0)
    mine, theirs = _mine_and_rllibs(observation_space, action_space, _model_config("nano", T, H))
    theirs.load_state_dict(mine.state_dict())
    mine.use_rllib_draws()  # (torch's draws in RLlib's order: the same z states for a seed)
    return mine, theirs, _rllib_dreamer()


def _batch(action_space: gym.Space, B: int, T: int) -> dict:
    generator = torch.Generator().manual_seed(1)
    if isinstance(action_space, gym.spaces.Discrete):
        actions = torch.randint(0, action_space.n, (B, T), generator=generator)
        one_hot = torch.nn.functional.one_hot(actions, action_space.n).float()
    else:
        actions = one_hot = torch.randn(B, T, 2, generator=generator)
    is_first = torch.zeros(B, T)
    is_first[:, 0] = 1.0
    is_first[1, 3] = 1.0  # an episode starts inside a row
    is_terminated = torch.zeros(B, T)
    is_terminated[1, 2] = 1.0
    return {
        "obs": torch.randn(B, T, 4, generator=generator) * 3.0,
        "actions": actions,
        "actions_one_hot": one_hot,
        "rewards": torch.randn(B, T, generator=generator),
        "is_first": is_first,
        "is_terminated": is_terminated,
    }


class _RLlibLearnerStub:
    """What RLlib's DreamerV3TorchLearner's loss helpers read of the learner: its device, its
    metrics (discarded) and its module (RLlib's, with the same weights)."""

    def __init__(self, rllib: types.SimpleNamespace, module: object):
        self._device = torch.device("cpu")
        self.metrics = types.SimpleNamespace(log_dict=lambda *a, **k: None)
        self.module = {"default_policy": types.SimpleNamespace(unwrapped=lambda: module)}
        for name in (
            "_compute_world_model_prediction_losses",
            "_compute_world_model_dynamics_and_representation_loss",
            "_compute_value_targets",
            "_compute_scaled_value_targets",
            "_compute_critic_loss",
            "_compute_actor_loss",
        ):
            setattr(self, name, types.MethodType(getattr(rllib.learner, name), self))


@pytest.mark.parametrize("one_hot_min_rows", [1, torch_module.ONE_HOT_MIN_ROWS])
@pytest.mark.parametrize(
    "action_space", [gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)]
)
def test_forward_dreams_and_losses_equal_rllibs(action_space, one_hot_min_rows, monkeypatch):
    """With the same weights and torch seed, the world model's training pass and the dreamed
    trajectories equal RLlib's module's; on them, each loss equals RLlib's learner's. Every
    product with a z state as sums of weight columns (`one_hot_min_rows` 1), and as the dense
    products of these few rows."""
    monkeypatch.setattr(torch_module, "ONE_HOT_MIN_ROWS", one_hot_min_rows)
    B, T, H = 3, 6, 4
    mine, theirs, rllib = _same_weights_modules(action_space, T, H)
    batch = _batch(action_space, B, T)
    torch.manual_seed(7)
    out = mine.forward_train(
        {"obs": batch["obs"], "actions": batch["actions"], "is_first": batch["is_first"]}
    )
    dream = mine.dreamer_model.dream_trajectory(
        out["h_states_BxT"],
        out["z_posterior_states_BxT"],
        batch["is_terminated"].reshape(-1),
        H,
        0.99,
    )
    torch.manual_seed(7)
    rllib_out = theirs.forward_train(
        {"obs": batch["obs"], "actions": batch["actions_one_hot"], "is_first": batch["is_first"]}
    )
    rllib_dream = theirs.dreamer_model.dream_trajectory(
        start_states={"h": rllib_out["h_states_BxT"], "z": rllib_out["z_posterior_states_BxT"]},
        start_is_terminated=batch["is_terminated"].reshape(-1),
        timesteps_H=H,
        gamma=0.99,
    )
    for key, value in out.items():
        if key in rllib_out:
            torch.testing.assert_close(value, rllib_out[key].float(), msg=key)
    assert set(dream) == set(rllib_dream)
    for key, value in dream.items():
        torch.testing.assert_close(value.float(), rllib_dream[key].float(), msg=key)

    config = types.SimpleNamespace(
        batch_size_B_per_learner=B,
        batch_length_T=T,
        gamma=0.99,
        gae_lambda=0.95,
        entropy_scale=3e-4,
        return_normalization_decay=0.99,
        report_individual_batch_item_stats=False,
    )
    stub = _RLlibLearnerStub(rllib, theirs)
    # The world model's loss.
    world = dreamer_loss.world_model_loss(out, batch["rewards"], batch["is_terminated"])
    rllib_fwd = {
        **out,
        "continue_distribution_BxT": torch.distributions.Bernoulli(
            logits=out["continue_logits_BxT"]
        ),
    }
    prediction = stub._compute_world_model_prediction_losses(
        config=config,
        rewards_B_T=batch["rewards"],
        continues_B_T=1.0 - batch["is_terminated"],
        fwd_out=rllib_fwd,
    )
    L_dyn, L_rep = stub._compute_world_model_dynamics_and_representation_loss(
        config=config, fwd_out=rllib_fwd
    )
    for mine_key, theirs_value in (
        ("WORLD_MODEL_L_decoder", prediction["L_decoder"]),
        ("WORLD_MODEL_L_reward", prediction["L_reward"]),
        ("WORLD_MODEL_L_continue", prediction["L_continue"]),
        ("WORLD_MODEL_L_prediction", prediction["L_prediction"]),
        ("WORLD_MODEL_L_dynamics", L_dyn.mean()),
        ("WORLD_MODEL_L_representation", L_rep.mean()),
        (
            "WORLD_MODEL_L_total",
            torch.mean(prediction["L_prediction_B_T"] + 0.5 * L_dyn + 0.1 * L_rep),
        ),
    ):
        torch.testing.assert_close(world.stats[mine_key], theirs_value, msg=mine_key)
    # The lambda-returns, the critic's and the actor's losses (the percentile EMAs start alike).
    R_lambda = dreamer_loss.lambda_returns(
        dream["rewards_dreamed_t0_to_H_BxT"],
        dream["continues_dreamed_t0_to_H_BxT"],
        dream["values_dreamed_t0_to_H_BxT"],
        0.99,
        0.95,
    )
    rllib_targets = stub._compute_value_targets(
        config=config,
        rewards_t0_to_H_BxT=dream["rewards_dreamed_t0_to_H_BxT"],
        intrinsic_rewards_t1_to_H_BxT=None,
        continues_t0_to_H_BxT=dream["continues_dreamed_t0_to_H_BxT"],
        value_predictions_t0_to_H_BxT=dream["values_dreamed_t0_to_H_BxT"],
    )
    torch.testing.assert_close(R_lambda, rllib_targets)
    critic = dreamer_loss.critic_loss(dream, R_lambda)
    torch.testing.assert_close(
        critic.loss,
        stub._compute_critic_loss(
            module_id="default_policy",
            config=config,
            dream_data=dream,
            value_targets_t0_to_Hm1_BxT=rllib_targets,
        ),
    )
    for step in range(2):  # the second step's scale comes from the EMAs the first one set
        A = dreamer_loss.scaled_advantages(
            R_lambda, dream["values_dreamed_t0_to_H_BxT"][:-1], mine.actor, 0.99
        )
        actor = dreamer_loss.actor_loss(dream, A, mine.actor, 3e-4)
        rllib_actor = stub._compute_actor_loss(
            module_id="default_policy",
            config=config,
            dream_data=dream,
            value_targets_t0_to_Hm1_BxT=rllib_targets,
        )
        torch.testing.assert_close(actor.loss, rllib_actor, msg=f"actor loss, step {step}")
        torch.testing.assert_close(
            mine.actor.ema_value_target_pct95.data, theirs.actor.ema_value_target_pct95.data
        )


def test_the_draws_follow_the_probabilities():
    """`draw_one_hot`: one-hot draws whose class frequencies are the probabilities (200,000
    draws per categorical: within 0.005), with their indices; RLlib's draws likewise."""
    probs = torch.tensor([[0.7, 0.2, 0.1, 0.0], [0.01, 0.01, 0.01, 0.97]])
    for rllib_draws in (False, True):
        torch.manual_seed(0)
        one_hot, index = torch_module.draw_one_hot(
            probs.expand(200_000, 2, 4), rllib_draws=rllib_draws
        )
        assert one_hot.shape == (200_000, 2, 4) and set(one_hot.unique().tolist()) == {0.0, 1.0}
        assert torch.equal(one_hot.sum(-1), torch.ones(200_000, 2))
        assert torch.equal(one_hot.argmax(-1), index)
        torch.testing.assert_close(one_hot.mean(0), probs, atol=0.005, rtol=0)
        assert one_hot[:, 0, 3].sum() == 0  # a class of probability 0 is never drawn


def test_sums_of_weight_columns_equal_the_dense_product_and_its_gradients():
    """`linear_over` with a one-hot z (straight-through) of 300 rows: the output and the
    gradients of the weight, the bias, h and z's probabilities equal `linear(cat([h, z]))`
    (float64)."""
    generator = torch.Generator().manual_seed(0)
    N, C, K, units = 300, 4, 5, 7
    linear = torch.nn.Linear(3 + C * K + 2, units).double()
    h = torch.randn(N, 3, dtype=torch.float64, generator=generator, requires_grad=True)
    a = torch.randn(N, 2, dtype=torch.float64, generator=generator, requires_grad=True)
    logits = torch.randn(N, C, K, dtype=torch.float64, generator=generator, requires_grad=True)
    index = torch.randint(0, K, (N, C), generator=generator)
    weights = torch.randn(N, units, dtype=torch.float64, generator=generator)

    def outputs_and_gradients(fast: bool) -> list:
        probs = torch.softmax(logits, -1)
        z = torch.nn.functional.one_hot(index, K).double() + probs - probs.detach()
        pieces = [h, torch_module.OneHotZ(z, index) if fast else z.reshape(N, -1), a]
        if fast:
            out = torch_module.linear_over(linear, pieces)
        else:
            out = linear(torch.cat(pieces, -1))
        grads = torch.autograd.grad(
            (out * weights).sum(), [linear.weight, linear.bias, h, a, logits]
        )
        return [out, *grads]

    assert torch_module.ONE_HOT_MIN_ROWS <= N
    for fast, dense in zip(outputs_and_gradients(True), outputs_and_gradients(False), strict=True):
        torch.testing.assert_close(fast, dense, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "action_space", [gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)]
)
def test_the_learners_gradients_are_those_of_the_dense_products(action_space, monkeypatch):
    """The three losses' gradients (world model, critic, actor) with every product with a z
    state as sums of weight columns equal those of the dense products, same draws (float64)."""
    module = DreamerV3TorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        action_space=action_space,
        model_config=_model_config("nano", 6, 4),
    ).double()
    batch = _batch(action_space, 3, 6)
    parts = {"world_model": module.world_model, "critic": module.critic, "actor": module.actor}

    def gradients(one_hot_min_rows: int) -> dict:
        monkeypatch.setattr(torch_module, "ONE_HOT_MIN_ROWS", one_hot_min_rows)
        torch.manual_seed(3)
        actions = batch["actions"] if action_space.shape == () else batch["actions"].double()
        out = module.world_model.forward_train(
            batch["obs"].double(),
            torch.nn.functional.one_hot(actions, 3).double()
            if action_space.shape == ()
            else actions,
            batch["is_first"],
        )
        dream = module.dreamer_model.dream_trajectory(
            out["h_states_BxT"],
            out["z_posterior_states_BxT"],
            batch["is_terminated"].reshape(-1).double(),
            4,
            0.99,
            start_z_index=out["z_posterior_index_BxT"],
        )
        returns = dreamer_loss.lambda_returns(
            dream["rewards_dreamed_t0_to_H_BxT"],
            dream["continues_dreamed_t0_to_H_BxT"],
            dream["values_dreamed_t0_to_H_BxT"],
            0.99,
            0.95,
        )
        advantages = dreamer_loss.scaled_advantages(
            returns, dream["values_dreamed_t0_to_H_BxT"][:-1], module.actor, 0.99
        )
        losses = {
            "world_model": dreamer_loss.world_model_loss(
                out, batch["rewards"].double(), batch["is_terminated"].double()
            ).loss,
            "critic": dreamer_loss.critic_loss(dream, returns).loss,
            "actor": dreamer_loss.actor_loss(dream, advantages, module.actor, 3e-4).loss,
        }
        result = {}
        for name, loss in losses.items():
            params = [p for p in parts[name].parameters() if p.requires_grad]
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
            result[name] = [g for g in grads if g is not None]
        for name in torch_module.PERCENTILE_EMAS:  # (the advantages' scale set them)
            getattr(module.actor, name).data.fill_(float("nan"))
        return result

    fast, dense = gradients(1), gradients(10**9)
    for name in parts:
        assert len(fast[name]) == len(dense[name]) > 0
        for mine, theirs in zip(fast[name], dense[name], strict=True):
            torch.testing.assert_close(mine, theirs, rtol=1e-9, atol=1e-11, msg=name)


def test_episodes_that_go_on_from_random_to_the_modules_actions_stay_whole(tmp_path):
    """The first steps' random actions still run the module: an episode that goes on from
    them to the module's actions has its distribution inputs and RSSM states at every step,
    and a checkpoint taken then restores."""
    config = _config("CartPole-v1").env_runners(num_env_runners=0)
    algo = config.build()
    try:
        runner = algo.env_runner
        runner.sample(num_timesteps=3, random_actions=True)
        (episode,) = runner.sample(num_timesteps=3)
        assert len(episode) == 3 and episode.t == 6 and not episode.is_done
        for key in ("action_dist_inputs", "action_logp", "state_out"):
            assert len(episode.get_extra_model_outputs(key)) == 3, key
        algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    DreamerV3.from_checkpoint(str(tmp_path / "checkpoint")).stop()


def test_the_losses_by_hand():
    """A hand-computed case: the lambda-returns of a 2-step dream, the free bits of the KL
    terms, and the two-hot negative log-likelihood."""
    rewards = torch.tensor([[0.0], [1.0], [2.0]])  # (H + 1, 1): r_0 (unused), r_1, r_2
    continues = torch.tensor([[1.0], [1.0], [0.0]])
    values = torch.tensor([[0.5], [1.5], [3.0]])
    gamma, lam = 0.9, 0.8
    R_1 = 2.0 + gamma * 0.0 * ((1 - lam) * 3.0 + lam * 3.0)  # c_2 = 0: the episode ends
    R_0 = 1.0 + gamma * 1.0 * ((1 - lam) * 1.5 + lam * R_1)
    torch.testing.assert_close(
        dreamer_loss.lambda_returns(rewards, continues, values, gamma, lam),
        torch.tensor([[R_0], [R_1]]),
    )
    # Identical posterior and prior: both KL terms are clipped up to the free bit.
    probs = torch.full((2, 4, 4), 0.25)
    assert torch.all(dreamer_loss.categorical_kl(probs, probs) == 0)
    q = torch.tensor([[[0.97, 0.01, 0.01, 0.01]]])
    p = torch.tensor([[[0.25, 0.25, 0.25, 0.25]]])
    expected_kl = 0.97 * np.log(0.97 / 0.25) + 3 * 0.01 * np.log(0.01 / 0.25)
    assert float(dreamer_loss.categorical_kl(q, p)) == pytest.approx(expected_kl, rel=1e-5)
    # Two-hot: uniform logits over 255 buckets give -ln(1/255) for any target.
    nll = dreamer_loss.two_hot_nll(torch.zeros(3, 255), torch.tensor([0.0, 0.3, -7.0]))
    torch.testing.assert_close(nll, torch.full((3,), float(np.log(255))))


# -- acting ----------------------------------------------------------------------------------
def test_the_module_acts_statefully_from_its_initial_state():
    module = DreamerV3TorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config=_model_config("nano"),
    )
    state = module.get_initial_state()
    assert set(state) == {"h", "z", "is_first"} and float(state["is_first"]) == 1.0
    obs = torch.randn(3, 1, 4)
    batch = {
        "obs": obs,
        "state_in": {
            key: value.unsqueeze(0).expand(3, *value.shape) for key, value in state.items()
        },
        "prev_actions": torch.zeros(3, 1, dtype=torch.int64),
    }
    out = module.forward_exploration(batch)
    assert out["action_dist_inputs"].shape == (3, 1, 2)
    assert out["state_out"]["h"].shape == state["h"].shape[:0] + (3, 16)
    assert torch.all(out["state_out"]["is_first"] == 0)
    # The next step goes on from the state out; an is_first row starts over.
    torch.manual_seed(0)
    going_on = module.forward_exploration({**batch, "state_in": out["state_out"]})
    torch.manual_seed(0)
    restarted = module.forward_exploration(
        {**batch, "state_in": {**out["state_out"], "is_first": torch.ones(3)}}
    )
    torch.manual_seed(0)
    fresh = module.forward_exploration(batch)
    torch.testing.assert_close(restarted["state_out"]["h"], fresh["state_out"]["h"])
    assert not torch.allclose(going_on["state_out"]["h"], fresh["state_out"]["h"])


# -- training through the public API ----------------------------------------------------------
def _config(env: str = "FrozenLake-v1", **training: object) -> DreamerV3Config:
    return (
        DreamerV3Config()
        .environment(env, env_config=FROZEN_LAKE_2X2 if env == "FrozenLake-v1" else {})
        .env_runners(num_env_runners=1)
        .training(**{**SMALL, **training})
        .debugging(seed=3)
    )


def _world_model_losses(algo: DreamerV3, iterations: int) -> list[float]:
    losses = []
    for _ in range(iterations):
        result = algo.train()
        losses.append(float(result[LEARNER_RESULTS]["default_policy"]["WORLD_MODEL_L_total"]))
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("rate", [1e-3, 0.0])
def test_it_learns_on_a_worker_process_and_not_at_rate_0(rate):
    """The world model's loss falls over 40 steps on a worker process's FrozenLake episodes; with
    every rate at 0 it does not."""
    algo = _config(world_model_lr=rate, actor_lr=rate, critic_lr=rate).build()
    try:
        assert algo.env_runner_group.num_remote_workers() == 1
        losses = _world_model_losses(algo, 40)
        result = algo.train()
    finally:
        algo.stop()
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])
    if rate > 0:
        assert last < 0.75 * first, losses
    else:
        assert last > 0.9 * first, losses
    learner = result[LEARNER_RESULTS]["default_policy"]
    for key in (
        "WORLD_MODEL_L_total",
        "WORLD_MODEL_L_prediction",
        "WORLD_MODEL_L_decoder",
        "WORLD_MODEL_L_reward",
        "WORLD_MODEL_L_continue",
        "WORLD_MODEL_L_dynamics",
        "WORLD_MODEL_L_representation",
        "ACTOR_L_total",
        "CRITIC_L_total",
        "WORLD_MODEL_gradients_global_norm",
    ):
        assert np.isfinite(learner[key]), key
    # training_ratio 32 over 4 x 8 replayed steps: one update per env step sampled.
    assert result["num_grad_updates_lifetime"] == result["num_env_steps_sampled_lifetime"] - 31


class TwoArmedBandit(gym.Env):
    """One step: action 1 pays 1, action 0 nothing."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: object = None):
        super().__init__()

    def reset(self, *, seed: int | None = None, options: object = None) -> tuple:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: int) -> tuple:
        return np.ones(2, np.float32), float(action == 1), True, False, {}


@pytest.mark.slow
@pytest.mark.parametrize("rate", [1e-3, 0.0])
def test_the_actor_learns_from_dreams_and_not_at_rate_0(rate):
    """The greedy policy picks the paying arm of a two-armed bandit after 100 steps (the world
    model learns what each action brings, the actor learns from dreamed returns): 19 of 20
    for this seed; with every rate at 0 it stays where it started (13 of 20). Seeded runs are
    reproducible (the first steps' random actions too: the runner's generator seeds them)."""
    config = (
        DreamerV3Config()
        .environment(TwoArmedBandit)
        .training(
            **{**SMALL, "model_size": "mini", "horizon_H": 3},
            world_model_lr=rate,
            actor_lr=rate,
            critic_lr=rate,
        )
        .debugging(seed=2)
    )
    algo = config.build()
    try:
        for _ in range(100):
            algo.train()
        episodes = algo.env_runner.sample(num_episodes=20, explore=False)
    finally:
        algo.stop()
    paid = np.mean([episode.get_return() for episode in episodes])
    if rate > 0:
        assert paid >= 0.9, paid
    else:
        assert paid <= 0.75, paid


def test_a_checkpoint_resumes_exactly(tmp_path):
    """The next results after `from_checkpoint` are those the saved run gave (CartPole: its
    sub-env's state is captured; the worker process carries each step's RSSM state)."""
    config = (
        _config("CartPole-v1", world_model_lr=1e-3, actor_lr=1e-3, critic_lr=1e-3)
        .env_runners(create_env_on_local_worker=True)
        .evaluation(evaluation_duration=2, evaluation_duration_unit="episodes")
    )
    algo = config.build()
    try:
        for _ in range(3):
            algo.train()
        algo.save_to_path(str(tmp_path / "checkpoint"))
        expected = [algo.train() for _ in range(3)]
    finally:
        algo.stop()
    restored = DreamerV3.from_checkpoint(str(tmp_path / "checkpoint"))
    try:
        resumed = [restored.train() for _ in range(3)]
        evaluated = restored.evaluate()
    finally:
        restored.stop()
    for before, after in zip(expected, resumed, strict=True):
        assert after[LEARNER_RESULTS]["default_policy"] == before[LEARNER_RESULTS]["default_policy"]
        assert after["num_env_steps_sampled_lifetime"] == before["num_env_steps_sampled_lifetime"]
    assert "episode_return_mean" in evaluated["env_runners"]


def test_the_per_item_and_dream_reports():
    config = (
        _config("CartPole-v1")
        .env_runners(num_env_runners=0)
        .reporting(report_individual_batch_item_stats=True, report_dream_data=True)
    )
    algo = config.build()
    try:
        algo.train()
        learner = algo.train()[LEARNER_RESULTS]["default_policy"]
    finally:
        algo.stop()
    B, T, H = SMALL["batch_size_B"], SMALL["batch_length_T"], SMALL["horizon_H"]
    assert np.shape(learner["WORLD_MODEL_L_total_B_T"]) == (B, T)
    assert np.shape(learner["CRITIC_L_total_H_BxT"]) == (H, B * T)
    assert np.shape(learner["dream_data"]["rewards_dreamed_t0_to_H_Bx1"]) == (H + 1, B)


@pytest.mark.ray
def test_module_checkpoints_move_between_rllib_and_here(tmp_path):
    """RLlib's module checkpoint of its DreamerV3TorchRLModule (RLlib's config, RLlib's
    `save_to_path`) is read by `RLModule.from_checkpoint` here with the same weights; a trained
    run's module exported with `format="rllib"` is read by RLlib's own `RLModule.from_checkpoint`
    as RLlib's module with this module's weights, computing the same world-model pass."""
    rllib = _rllib_dreamer()
    from ray.rllib.algorithms.dreamerv3.dreamerv3 import DreamerV3Config as RLlibConfig
    from ray.rllib.core.rl_module.rl_module import RLModule as RLlibRLModule

    from trainer import RLModule
    from trainer.export import export_policy

    spec = (
        RLlibConfig()
        .environment("CartPole-v1")
        .training(model_size="nano", batch_length_T=8, horizon_H=3)
        .get_rl_module_spec(env=gym.make("CartPole-v1"))
    )
    theirs = spec.build()
    theirs.save_to_path(str(tmp_path / "rllib"))
    ours = RLModule.from_checkpoint(str(tmp_path / "rllib"))
    assert isinstance(ours, DreamerV3TorchRLModule)
    their_state = theirs.state_dict()
    assert set(ours.state_dict()) == set(their_state)
    for key, value in ours.state_dict().items():
        torch.testing.assert_close(value, their_state[key], equal_nan=True, msg=key)

    algo = _config("CartPole-v1", world_model_lr=1e-3).env_runners(num_env_runners=0).build()
    try:
        algo.train()
        trained = algo.learner.rl_module
        path = export_policy(algo, str(tmp_path / "export"), format="rllib")
    finally:
        algo.stop()
    loaded = RLlibRLModule.from_checkpoint(path)
    assert isinstance(loaded, rllib.module)
    assert loaded.model_config["model_size"] == "nano"
    loaded_state = loaded.state_dict()
    for key, value in trained.state_dict().items():
        torch.testing.assert_close(loaded_state[key], value, equal_nan=True, msg=key)
    batch = _batch(gym.spaces.Discrete(2), 2, SMALL["batch_length_T"])
    trained.use_rllib_draws()  # (the same z states as RLlib's module for a torch seed)
    torch.manual_seed(5)
    mine = trained.forward_train(
        {"obs": batch["obs"], "actions": batch["actions"] % 2, "is_first": batch["is_first"]}
    )
    torch.manual_seed(5)
    one_hot = torch.nn.functional.one_hot(batch["actions"] % 2, 2).float()
    theirs_out = loaded.forward_train(
        {"obs": batch["obs"], "actions": one_hot, "is_first": batch["is_first"]}
    )
    for key in ("obs_distribution_means_BxT", "rewards_BxT", "h_states_BxT"):
        torch.testing.assert_close(mine[key], theirs_out[key], msg=key)


#: RLlib 2.60 trains its DreamerV3 one iteration and saves it (run in a fresh interpreter).
RLLIB_DREAMER_SCRIPT = """
import sys
import ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
from ray.rllib.algorithms.dreamerv3.dreamerv3 import DreamerV3Config
config = DreamerV3Config().environment("CartPole-v1").training(
    model_size="nano", batch_size_B=2, batch_length_T=8, horizon_H=3, training_ratio=32
).debugging(seed=0)
algo = config.build()
algo.train()
algo.save_to_path(sys.argv[1])
algo.stop()
print("saved")
"""


@pytest.mark.ray
@pytest.mark.slow
def test_an_rllib_algorithm_checkpoint_trains_on_here(tmp_path):
    """RLlib 2.60's own DreamerV3 checkpoint (trained an iteration, saved by RLlib) is built here
    by `Algorithm.from_checkpoint` with RLlib's settings and weights, and trains on; the
    optimizers' moments start afresh, with a warning saying so."""
    from helpers import run_rllib_script

    from trainer import Algorithm

    pytest.importorskip("ray.rllib")
    run_rllib_script(RLLIB_DREAMER_SCRIPT, str(tmp_path / "rllib"), timeout=300)
    with pytest.warns(UserWarning, match="the optimizer's moments start afresh"):
        algo = Algorithm.from_checkpoint(str(tmp_path / "rllib"))
    try:
        assert isinstance(algo, DreamerV3)
        assert (algo.config.model_size, algo.config.batch_length_T) == ("nano", 8)
        assert algo.num_env_steps_sampled_lifetime >= 16
        pct95 = algo.learner.rl_module.actor.ema_value_target_pct95
        assert torch.isfinite(pct95)  # (set by RLlib's update)
        result = algo.train()
        assert np.isfinite(result[LEARNER_RESULTS]["default_policy"]["WORLD_MODEL_L_total"])
    finally:
        algo.stop()


def test_rllibs_module_paths_import_the_folders_classes():
    launcher.install()
    try:
        from ray.rllib.algorithms.dreamerv3 import DreamerV3 as RLlibDreamerV3
        from ray.rllib.algorithms.dreamerv3 import DreamerV3Config as RLlibConfig
        from ray.rllib.algorithms.dreamerv3.dreamerv3 import DreamerV3Config as RLlibConfig2
        from ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_rl_module import (
            DreamerV3TorchRLModule as RLlibModule,
        )
    finally:
        launcher.uninstall()
    assert (RLlibDreamerV3, RLlibConfig, RLlibConfig2) == (
        DreamerV3,
        DreamerV3Config,
        DreamerV3Config,
    )
    assert RLlibModule is DreamerV3TorchRLModule
