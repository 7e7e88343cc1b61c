"""IMPALA's and APPO's minibatches (`training(minibatch_size=..., num_epochs=...)`), as RLlib's
learner cycles its MiniBatchCyclicIterator over the train batch: the step ranges, the chunks cut
into pieces that bootstrap V-trace where they were cut, a recurrent module's pieces as
sequences of their own, the numpy and torch updates, and RLlib's checks at validate()."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from test_impala import _float64_learner, _trajectory_batch

from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.appo import APPOConfig
from trainer.algorithms.appo.appo_learner import APPOLearner
from trainer.algorithms.impala import IMPALAConfig
from trainer.algorithms.impala.impala_learner import (
    IMPALALearner,
    cyclic_step_ranges,
    minibatch_plan,
    num_minibatches,
    take_steps,
)
from trainer.errors import NotSupported

CARTPOLE = gym.make("CartPole-v1")


def test_minibatches_cycle_over_the_steps_as_rllibs_iterator():
    # 120 steps in minibatches of 50 for one epoch: the third wraps around to the start.
    assert cyclic_step_ranges(120, 50, 3) == [[(0, 50)], [(50, 100)], [(100, 120), (0, 30)]]
    # A minibatch larger than the batch takes it whole, then again.
    assert cyclic_step_ranges(30, 50, 2) == [[(0, 30), (0, 20)], [(20, 30), (0, 30), (0, 10)]]
    # Enough minibatches for the module with the most steps to see each step num_epochs times.
    assert num_minibatches([120, 40], 1, 50) == 3
    assert num_minibatches([120, 40], 4, 50) == 10
    config = IMPALAConfig().training(num_epochs=2)
    plan = minibatch_plan(config, 30)  # no minibatch_size: the batch's steps, 2 epochs
    assert (plan.minibatch_size, plan.count) == (30, 2)
    assert minibatch_plan(IMPALAConfig(), 30) is None  # RLlib's defaults: one step, as before


def _learner(learner_class=IMPALALearner, **training):
    config_class = APPOConfig if learner_class is APPOLearner else IMPALAConfig
    config = (
        config_class()
        .environment("CartPole-v1")
        .training(gamma=0.9, **training)
        .rl_module(model_config={"fcnet_hiddens": [5, 4], "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )
    return _float64_learner(learner_class, config, "CartPole-v1")


def test_a_minibatch_cuts_chunks_into_pieces_that_bootstrap_where_cut():
    learner = _learner()
    batch = _trajectory_batch(learner, "CartPole-v1", np.random.default_rng(0))  # chunks 4 and 3
    # Steps 2..5: the end of the first chunk (2, 3) and the start of the second (4, 5).
    part = take_steps(batch, [(2, 6)])
    assert part.num_steps == 4
    assert part.chunk_end.tolist() == [False, True, False, True]
    # The first piece ends where its chunk ended (terminated there); the second was cut.
    assert part.terminated.tolist() == [False, True, False, False]
    rows = np.flatnonzero(batch.is_step)
    # The pieces' rows: their steps' observations and the one after each piece's last step.
    expected_rows = [rows[2], rows[3], rows[3] + 1, rows[4], rows[5], rows[5] + 1]
    np.testing.assert_array_equal(part.obs, batch.obs[expected_rows])
    np.testing.assert_array_equal(part.actions, batch.actions[2:6])
    np.testing.assert_array_equal(part.behaviour_logp, batch.behaviour_logp[2:6])
    # V-trace's bootstrap at the cut is the value of the observation after the cut.
    full, cut = learner.policy_terms(batch), learner.policy_terms(part)
    np.testing.assert_allclose(cut.values, full.values[2:6])
    np.testing.assert_allclose(cut.next_values[3], full.values[6])
    np.testing.assert_allclose(cut.next_values[:3], full.next_values[2:5])
    # Whole chunks, in order: the batch itself.
    whole = take_steps(batch, [(0, batch.num_steps)])
    for name in ("obs", "is_step", "actions", "rewards", "terminated", "chunk_end"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(batch, name))


@pytest.mark.parametrize("learner_class", [IMPALALearner, APPOLearner])
def test_one_minibatch_of_the_whole_batch_is_the_update_without_minibatches(learner_class):
    """minibatch_size = the batch's steps, one epoch: bit for bit the update of RLlib's
    defaults (one step on the batch)."""
    plain, cut = _learner(learner_class), _learner(learner_class)
    rng = np.random.default_rng(1)
    batch = _trajectory_batch(plain, "CartPole-v1", rng)
    stats = plain.update(batch)
    minibatched = cut.update(batch, minibatch_size=batch.num_steps, num_minibatches=1)
    np.testing.assert_array_equal(plain.module.flat_params, cut.module.flat_params)
    assert stats["total_loss"] == minibatched["total_loss"]
    assert minibatched["num_module_steps_trained"] == batch.num_steps
    assert minibatched["module_train_batch_size_mean"] == batch.num_steps


def test_an_update_takes_a_step_per_minibatch():
    learner, by_hand = _learner(), _learner()
    batch = _trajectory_batch(learner, "CartPole-v1", np.random.default_rng(2))  # 7 steps
    stats = learner.update(batch, minibatch_size=3, num_minibatches=5)
    for ranges in cyclic_step_ranges(batch.num_steps, 3, 5):
        by_hand.update(take_steps(batch, ranges), minibatch_size=None)
    np.testing.assert_array_equal(learner.module.flat_params, by_hand.module.flat_params)
    assert stats["num_module_steps_trained"] == stats["num_env_steps_trained"] == 15
    assert learner.optimizer.step_count == 5
    # From the config: minibatch_size=3, num_epochs=2 -> ceil(2 * 7 / 3) = 5 steps.
    configured = _learner(minibatch_size=3, num_epochs=2)
    configured.update(batch)
    assert configured.optimizer.step_count == 5


def test_rllibs_checks_of_minibatches_at_validate():
    config = IMPALAConfig().environment("CartPole-v1").env_runners(rollout_fragment_length=30)
    with pytest.raises(
        ConfigError,
        match=r"`minibatch_size` \(100\) must either be None or a multiple of "
        r"`rollout_fragment_length` \(30\) while at the same time smaller than or equal to "
        r"`total_train_batch_size` \(500\)!",
    ):
        config.copy().training(minibatch_size=100).validate()
    config.copy().training(minibatch_size=90, num_epochs=3).validate()
    with pytest.raises(NotSupported, match="shuffle_batch_per_epoch"):
        config.copy().training(num_epochs=2, shuffle_batch_per_epoch=True).validate()


# -- torch ----------------------------------------------------------------------------------------
torch = pytest.importorskip("torch")


def test_the_torch_learner_takes_the_numpy_learners_minibatch_steps():
    from trainer.algorithms.impala.torch_learner import IMPALATorchLearner

    config = (
        IMPALAConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .training(minibatch_size=3, num_epochs=2, lr=0.01)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    learner, by_hand = config.build_learner(env=CARTPOLE), config.build_learner(env=CARTPOLE)
    assert isinstance(learner, IMPALATorchLearner)
    by_hand.rl_module.load_state_dict(learner.rl_module.state_dict())
    batch = _trajectory_batch(_learner(), "CartPole-v1", np.random.default_rng(3))
    stats = learner.update(batch)
    for ranges in cyclic_step_ranges(batch.num_steps, 3, 5):
        by_hand._step(by_hand.columns(by_hand.minibatch(batch, ranges)))
    for key, value in learner.rl_module.state_dict().items():
        torch.testing.assert_close(value, by_hand.rl_module.state_dict()[key])
    assert stats["num_module_steps_trained"] == 15


@pytest.mark.slow
def test_a_recurrent_modules_pieces_start_from_the_recorded_state():
    from test_torch_lstm import LSTM_MODEL, hand_built_chunk

    from trainer.algorithms.impala.torch_learner import SequenceTrajectoryBatch

    config = (
        IMPALAConfig()
        .framework("torch")
        .environment(observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32))
        .environment(action_space=gym.spaces.Discrete(2))
        .rl_module(model_config={**LSTM_MODEL, "vf_share_layers": True})
    )
    learner = config.build_learner(
        spaces={"default_policy": (config.observation_space, config.action_space)}
    )
    # Chunks of 6 and 3 steps (7 and 4 rows); the recorded state out of step t is t + 1.
    batch = learner.trajectory_batch([hand_built_chunk(0, 6), hand_built_chunk(5, 3)])
    assert isinstance(batch, SequenceTrajectoryBatch)
    whole = learner.minibatch(batch, [(0, batch.num_steps)])
    for name in ("seq_obs", "seq_lens", "row_mask"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(batch, name))
    np.testing.assert_array_equal(whole.state_in["h"], batch.state_in["h"])
    # Steps 2..7: rows 2..6 of the first chunk (its bootstrap row last) and 0..1 + 1 of the
    # second; max_seq_len 4: sequences of 4 and 1 rows, then 3.
    part = learner.minibatch(batch, [(2, 8)])
    assert part.seq_lens.tolist() == [4, 1, 3]
    # Each sequence starts from the state before its first row: step 2's (state out of step
    # 1: 2), step 6's (the bootstrap row: 6) and the second chunk's start (its lookback: 5).
    assert part.state_in["h"][:, 0, 0].tolist() == [2.0, 6.0, 5.0]
    # (the second chunk starts at the observation after step 4: 5)
    assert part.seq_obs[:, :, 0].tolist() == [[2, 3, 4, 5], [6, 0, 0, 0], [5, 6, 7, 0]]
    stats = learner.update(batch, minibatch_size=4, num_minibatches=3)
    assert np.isfinite(stats["total_loss"]) and stats["num_module_steps_trained"] == 12
