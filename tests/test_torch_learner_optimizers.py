"""RLlib's Learner optimizer API on the torch learners: `register_optimizer` (named optimizers,
each with its own rate or schedule), `get_optimizer`, torch lr schedulers
(`experimental(_torch_lr_scheduler_classes=...)`), `self.metrics` in a loss, and the state of
all of it through msgpack (exact resume). The learners train on episodes played in real
CartPole (`test_torch_learner.cartpole_episodes`); one end-to-end run trains RLlib's
separate-optimizer example learner with EnvRunner processes and resumes it from a checkpoint.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_torch_learner import (  # noqa: E402
    ENV,
    cartpole_episodes,
    make_config,
    make_module,
    same_weights,
    weights,
)

from trainer.algorithms.dqn import DQNConfig  # noqa: E402
from trainer.algorithms.ppo.ppo import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.checkpoints.codec import pack, unpack  # noqa: E402
from trainer.core.learner import DEFAULT_OPTIMIZER  # noqa: E402
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo  # noqa: E402
from trainer.errors import ConfigError, StateError  # noqa: E402
from trainer.examples.learners.classes.custom_ppo_loss_fn_learner import (  # noqa: E402
    PPOTorchLearnerWithWeightRegularizerLoss,
)
from trainer.examples.learners.classes.separate_vf_lr_and_optimizer_learner import (  # noqa: E402
    PPOTorchLearnerWithSeparateVfOptimizer,
)


def two_optimizer_learner(seed: int = 0, **training) -> PPOTorchLearnerWithSeparateVfOptimizer:
    """RLlib's separate-optimizer example learner on the default PPO torch module (separate
    actor and critic networks)."""
    config = (
        make_config(**training)
        .framework("torch")
        .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": False})
    )
    spaces = SpaceInfo.from_spaces(ENV.observation_space, ENV.action_space)
    return PPOTorchLearnerWithSeparateVfOptimizer(config, config.build_module(spaces, seed=seed))


def scheduled_learner(seed: int = 0, **training) -> PPOTorchLearner:
    """A PPO learner whose rate runs through RLlib's example chain: ConstantLR (x0.5 for the
    first 2 updates), then ExponentialLR (x0.9 per update)."""
    config = make_config(**training).experimental(
        _torch_lr_scheduler_classes=[
            functools.partial(torch.optim.lr_scheduler.ConstantLR, factor=0.5, total_iters=2),
            functools.partial(torch.optim.lr_scheduler.ExponentialLR, gamma=0.9),
        ]
    )
    return PPOTorchLearner(config, make_module(seed))


def lr_of(learner, name: str = DEFAULT_OPTIMIZER) -> float:
    return learner.get_optimizer(DEFAULT_MODULE_ID, name).param_groups[0]["lr"]


# -- register_optimizer -----------------------------------------------------------------------
def test_the_default_learner_registers_one_adam_under_the_default_name():
    learner = PPOTorchLearner(make_config(lr=3e-4), make_module(0))
    optimizer = learner.get_optimizer(DEFAULT_MODULE_ID, DEFAULT_OPTIMIZER)
    assert isinstance(optimizer, torch.optim.Adam)
    assert optimizer is learner.optimizer
    assert learner.get_optimizer(optimizer_name=f"{DEFAULT_MODULE_ID}_{DEFAULT_OPTIMIZER}") is (
        optimizer
    )
    assert learner.get_optimizers_for_module(DEFAULT_MODULE_ID) == [(DEFAULT_OPTIMIZER, optimizer)]
    assert lr_of(learner) == 3e-4
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert held == {id(p) for p in learner.rl_module.parameters()}
    with pytest.raises(KeyError, match="optim_for_vf"):
        learner.get_optimizer(DEFAULT_MODULE_ID, "optim_for_vf")


def _registering(body):
    """A PPO learner class whose configure_optimizers_for_module is `body(learner, module_id)`."""

    class Learner(PPOTorchLearner):
        def configure_optimizers_for_module(self, module_id, config=None):
            body(self, module_id)

    return Learner


#: (configure_optimizers_for_module body, the ValueError's message), one fault each.
REFUSED_REGISTRATIONS = [
    (lambda s, m: None, "registered no optimizer"),
    (
        lambda s, m: s.register_optimizer(
            module_id=m, optimizer="adam", params=list(s.rl_module.parameters())
        ),
        "must be a torch.optim.Optimizer",
    ),
    (
        lambda s, m: s.register_optimizer(
            module_id=m,
            optimizer=torch.optim.Adam(s.rl_module.parameters()),
            params=tuple(s.rl_module.parameters()),
        ),
        "params must be a list",
    ),
    (
        lambda s, m: s.register_optimizer(
            module_id="other",
            optimizer=torch.optim.Adam(s.rl_module.parameters()),
            params=list(s.rl_module.parameters()),
        ),
        "module_id='other'",
    ),
    (
        lambda s, m: s.register_optimizer(
            module_id=m,
            optimizer=torch.optim.Adam(s.rl_module.parameters()),
            params=s.get_parameters(s.rl_module.pi),
        ),
        "the optimizer holds parameters not in params",
    ),
    (
        lambda s, m: [
            s.register_optimizer(
                module_id=m,
                optimizer_name=name,
                optimizer=torch.optim.Adam(s.get_parameters(s.rl_module.pi)),
                params=s.get_parameters(s.rl_module.pi),
            )
            for name in ("first", "second")
        ],
        "registered with optimizer 'first' already",
    ),
    (
        lambda s, m: [
            s.register_optimizer(
                module_id=m,
                optimizer=torch.optim.Adam(s.get_parameters(net)),
                params=s.get_parameters(net),
            )
            for net in (s.rl_module.pi, s.rl_module.vf)
        ],
        "registered already",
    ),
    (
        lambda s, m: s.register_optimizer(
            module_id=m,
            optimizer=torch.optim.Adam(s.rl_module.parameters()),
            params=list(s.rl_module.parameters()),
            lr_or_lr_schedule=-1.0,
        ),
        "lr_or_lr_schedule",
    ),
]


def test_register_optimizer_refuses_what_cannot_train():
    for body, message in REFUSED_REGISTRATIONS:
        with pytest.raises(ValueError, match=message):
            _registering(body)(make_config(), make_module(0))


# -- two optimizers -----------------------------------------------------------------------------
def test_two_optimizers_each_step_their_own_parameters_at_their_own_rate():
    learner = two_optimizer_learner(lr=2e-3, learner_config_dict={"lr_vf": 0.0})
    assert [name for name, _ in learner.get_optimizers_for_module(DEFAULT_MODULE_ID)] == [
        "optim_for_pi",
        "optim_for_vf",
    ]
    assert (lr_of(learner, "optim_for_pi"), lr_of(learner, "optim_for_vf")) == (2e-3, 0.0)
    before = weights(learner)
    results = learner.update(cartpole_episodes(learner.rl_module, 128, seed=1))
    after = weights(learner)
    moved = {key for key in before if not np.array_equal(before[key], after[key])}
    # A rate of 0 holds the value function still; the policy side moves.
    assert moved and all(k.startswith(("pi.", "encoder.actor_encoder.")) for k in moved)
    assert any(k.startswith("pi.") for k in moved)
    assert results["optim_for_vf_learning_rate"] == 0.0
    assert results["curr_lr"] == 2e-3  # the first optimizer's when none is the default
    assert results["gradients_optim_for_pi_global_norm"] > 0
    assert results["gradients_optim_for_vf_global_norm"] > 0
    state = learner.get_state()["optimizer"]
    assert set(state) == {"optim_for_pi", "optim_for_vf"}
    assert all(
        k.startswith(("vf.", "encoder.critic_encoder."))
        for k in state["optim_for_vf"]["param_state"]
    )


def test_two_optimizer_state_resumes_exactly_through_msgpack():
    original = two_optimizer_learner(seed=0, learner_config_dict={"lr_vf": 5e-4})
    episodes = cartpole_episodes(original.rl_module, 160, seed=3)
    original.update(episodes)
    state = unpack(pack(original.get_state()))
    restored = two_optimizer_learner(seed=1, learner_config_dict={"lr_vf": 5e-4})
    assert not same_weights(weights(restored), weights(original))
    restored.set_state(state)
    assert original.update(episodes) == restored.update(episodes)
    assert same_weights(weights(original), weights(restored))

    # A state that does not fit is refused whole.
    bad = copy.deepcopy(state)
    pi_weight = "pi.net.mlp.0.weight"
    bad["optimizer"]["optim_for_vf"]["param_state"][pi_weight] = bad["optimizer"]["optim_for_pi"][
        "param_state"
    ][pi_weight]
    with pytest.raises(StateError, match="not a parameter of optimizer 'optim_for_vf'"):
        restored.check_state(bad)
    one_optimizer = PPOTorchLearner(restored.config, restored.module)
    with pytest.raises(StateError, match="has no 'default_optimizer'"):
        one_optimizer.check_state(state)


# -- torch lr schedulers ------------------------------------------------------------------------
def test_lr_schedulers_step_once_per_update_as_rllibs_example_expects():
    learner = scheduled_learner(lr=0.01, num_epochs=2)
    episodes = cartpole_episodes(learner.rl_module, 96, seed=4)
    assert lr_of(learner) == pytest.approx(0.005)  # ConstantLR acts when built
    for i in range(1, 5):
        results = learner.update(episodes, num_env_steps_sampled_lifetime=96 * i)
        # RLlib's LRChecker: lr * (factor while i < total_iters) * gamma**i.
        expected = 0.01 * (0.5 if i < 2 else 1.0) * 0.9**i
        assert lr_of(learner) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert results["curr_lr"] == pytest.approx(expected, rel=1e-9)


def test_lr_scheduler_state_resumes_exactly_and_is_checked():
    original = scheduled_learner(lr=0.01)
    episodes = cartpole_episodes(original.rl_module, 96, seed=5)
    original.update(episodes, num_env_steps_sampled_lifetime=96)
    state = unpack(pack(original.get_state()))
    schedulers = state["optimizer"][DEFAULT_OPTIMIZER]["lr_schedulers"]
    assert [s["last_epoch"] for s in schedulers] == [1, 1]
    restored = scheduled_learner(seed=3, lr=0.01)
    restored.set_state(state)
    for step in (2, 3):
        a = original.update(episodes, num_env_steps_sampled_lifetime=96 * step)
        b = restored.update(episodes, num_env_steps_sampled_lifetime=96 * step)
        assert a == b
    assert same_weights(weights(original), weights(restored))
    assert lr_of(original) == lr_of(restored) == pytest.approx(0.01 * 0.9**3)

    bad = copy.deepcopy(state)
    bad["optimizer"][DEFAULT_OPTIMIZER]["lr_schedulers"].pop()
    with pytest.raises(StateError, match="lr_schedulers"):
        restored.check_state(bad)
    bad = copy.deepcopy(state)
    bad["optimizer"][DEFAULT_OPTIMIZER]["lr_schedulers"][1]["last_epoch"] = "one"
    with pytest.raises(StateError, match="last_epoch"):
        restored.check_state(bad)


def test_lr_scheduler_classes_per_module_and_their_errors():
    decay = [functools.partial(torch.optim.lr_scheduler.ExponentialLR, gamma=0.5)]
    per_module = make_config(lr=0.01).experimental(
        _torch_lr_scheduler_classes={DEFAULT_MODULE_ID: decay}
    )
    learner = PPOTorchLearner(per_module, make_module(0))
    learner.update(cartpole_episodes(learner.rl_module, 64, seed=6))
    assert lr_of(learner) == pytest.approx(0.005)
    other_module = make_config(lr=0.01).experimental(_torch_lr_scheduler_classes={"other": decay})
    untouched = PPOTorchLearner(other_module, make_module(0))
    untouched.update(cartpole_episodes(untouched.rl_module, 64, seed=6))
    assert lr_of(untouched) == 0.01
    with pytest.raises(ConfigError, match="_torch_lr_scheduler_classes must be None, a list"):
        PPOConfig().experimental(_torch_lr_scheduler_classes=torch.optim.lr_scheduler.StepLR)
    needs_step_size = make_config().experimental(
        _torch_lr_scheduler_classes=[torch.optim.lr_scheduler.StepLR]
    )
    with pytest.raises(ValueError, match="_torch_lr_scheduler_classes: .*StepLR"):
        PPOTorchLearner(needs_step_size, make_module(0))
    # Only torch optimizers take them: the setting makes the run torch's.
    assert per_module.uses_torch and not make_config().uses_torch
    dqn = DQNConfig().environment("CartPole-v1").experimental(_torch_lr_scheduler_classes=decay)
    assert "_torch_lr_scheduler_classes" in dqn.torch_reason
    dqn.validate()  # torch DQN's learner takes them too


# -- a custom loss, learner_config_dict and self.metrics ------------------------------------------
def test_a_custom_loss_reads_learner_config_dict_and_logs_to_metrics():
    config = make_config(learner_config_dict={"regularizer_coeff": 0.5})
    learner = PPOTorchLearnerWithWeightRegularizerLoss(config, make_module(0))
    episodes = cartpole_episodes(learner.rl_module, 96, seed=7)
    expected_mean = float(
        torch.stack([w.detach().mean() for w in learner.rl_module.parameters()]).mean()
    )
    batch = learner.build_train_batch(episodes)
    from trainer.algorithms.ppo.ppo_learner import standardize_advantages

    standardize_advantages(batch)
    plain = PPOTorchLearner(make_config(), make_module(0))
    stats = learner.update_from_batch(batch)
    plain_stats = plain.update_from_batch(batch)
    assert stats["total_loss"] == pytest.approx(
        plain_stats["total_loss"] + 0.5 * expected_mean, rel=1e-5
    )
    results = learner.update(episodes)
    assert isinstance(results["mean_weight"], float)
    with pytest.raises(ConfigError, match="learner_config_dict must be"):
        PPOConfig().training(learner_config_dict=[("regularizer_coeff", 0.5)])


# -- end to end -------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_optimizers_and_lr_schedulers_train_and_resume_from_a_checkpoint(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .debugging(seed=3)
        .training(
            learner_class=PPOTorchLearnerWithSeparateVfOptimizer,
            learner_config_dict={"lr_vf": 1e-3},
            lr=2e-3,
            train_batch_size=256,
            minibatch_size=128,
            num_epochs=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": False})
        .experimental(
            _torch_lr_scheduler_classes=[
                functools.partial(torch.optim.lr_scheduler.ExponentialLR, gamma=0.5)
            ]
        )
    )
    algo = config.build()
    try:
        result = algo.train()
        learner_results = result["learners"][DEFAULT_MODULE_ID]
        assert learner_results["curr_lr"] == pytest.approx(1e-3)  # optim_for_pi, halved once
        assert learner_results["optim_for_vf_learning_rate"] == pytest.approx(5e-4)
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        expected_state = algo.learner.get_state()
        algo.train()
        expected_lrs = [lr_of(algo.learner, n) for n in ("optim_for_pi", "optim_for_vf")]
    finally:
        algo.stop()
    restored = config.build()
    try:
        restored.restore_from_path(path)
        state = restored.learner.get_state()
        assert state["optimizer"].keys() == expected_state["optimizer"].keys()
        for name, entry in expected_state["optimizer"].items():
            assert state["optimizer"][name]["lr_schedulers"] == entry["lr_schedulers"]
            assert state["optimizer"][name]["lr"] == entry["lr"]
            for param, moments in entry["param_state"].items():
                for key, value in moments.items():
                    np.testing.assert_array_equal(
                        state["optimizer"][name]["param_state"][param][key], value
                    )
        restored.train()
        assert [lr_of(restored.learner, n) for n in ("optim_for_pi", "optim_for_vf")] == (
            expected_lrs
        )
    finally:
        restored.stop()
