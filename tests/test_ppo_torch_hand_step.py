"""A default `PPOTorchLearner` stepped by hand, with RLlib's hooks (`compute_losses`,
`compute_gradients`, `postprocess_gradients`, `apply_gradients`), takes its own
`update_from_batch` step bit for bit, before and after a `train()` (whose update runs in numpy
on a twin of the torch weights and Adam state), and the next `train()` starts from that step.

Two algorithms of one config and seed stay in lockstep: one steps by hand, the other with
`update_from_batch`, on the same minibatch; every parameter and Adam state tensor must match.
The by-hand gradients come as the learner computes them, or carried as one flat vector and
viewed back (as an all-reduce or a user's code carries them): a gradient's memory layout must
not change the step."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from trainer import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.ppo_learner import standardize_advantages  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.torch_rl.learner import to_train_tensors  # noqa: E402

MINIBATCH = 64


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=128, minibatch_size=MINIBATCH, num_epochs=2, lr=1e-3)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=3)
    )


def _minibatch(algos: list[Any]) -> dict:
    """A minibatch of the first algorithm's episodes; every algorithm samples as many steps,
    so their env runners stay in lockstep for the next `train()`."""
    episodes = [algo.env_runner.sample(num_timesteps=MINIBATCH) for algo in algos][0]
    learner = algos[0].learner_group._learner
    batch = learner.build_train_batch(episodes)
    standardize_advantages(batch)
    return {key: value[:MINIBATCH] for key, value in batch.items()}


def _hand_step(learner: PPOTorchLearner, minibatch: dict, gradients: str) -> None:
    tensors = to_train_tensors(minibatch, learner.device)
    fwd_out = learner.module.forward_train(tensors)
    grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd_out, batch=tensors))
    if gradients == "flat":
        flat = torch.cat([grad.reshape(-1) for grad in grads.values()])
        sizes = [grad.numel() for grad in grads.values()]
        parts = torch.split(flat, sizes)
        grads = {
            name: part.view(grad.shape)
            for (name, grad), part in zip(grads.items(), parts, strict=True)
        }
    learner.apply_gradients(learner.postprocess_gradients(grads))


def _assert_same(hand: PPOTorchLearner, own: PPOTorchLearner, when: str) -> None:
    """Every parameter and every Adam state tensor equal, bit for bit."""
    hand_params = dict(hand.module.named_parameters())
    own_params = dict(own.module.named_parameters())
    assert hand_params.keys() == own_params.keys()
    hand_adam, own_adam = hand.get_optimizer().state, own.get_optimizer().state
    for name, param in hand_params.items():
        assert torch.equal(param, own_params[name]), f"{when}: parameter {name}"
        hand_state, own_state = hand_adam[param], own_adam[own_params[name]]
        assert hand_state.keys() == own_state.keys() == {"step", "exp_avg", "exp_avg_sq"}
        for key, value in hand_state.items():
            assert torch.equal(value, own_state[key]), f"{when}: Adam {key} of {name}"


@pytest.mark.parametrize("gradients", ["own", "flat"])
def test_a_hand_step_is_the_learners_own_update_before_and_after_train(gradients: str) -> None:
    algos = [_config().build() for _ in range(2)]
    try:
        hand, own = (algo.learner_group._learner for algo in algos)
        # The default class on the default module: its update() runs in numpy.
        assert type(hand) is PPOTorchLearner and hand.numpy_update is not None
        for when in ("fresh", "after train"):
            if when == "after train":
                for algo in algos:
                    algo.train()
            minibatch = _minibatch(algos)
            _hand_step(hand, minibatch, gradients)
            own.update_from_batch(minibatch)
            _assert_same(hand, own, when)
        # The numpy update goes on from the by-hand step's weights and Adam state.
        for algo in algos:
            algo.train()
        _assert_same(hand, own, "train after the steps")
    finally:
        for algo in algos:
            algo.stop()
