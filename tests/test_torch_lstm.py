"""Recurrent torch PPO (`use_lstm`), as RLlib 2.60 runs it: the default torch module's LSTM
encoder, the EnvRunner carrying each sub-env's state (in worker processes too), the learner's
zero-padded sequences, exact checkpoint resumes, and learning a task only memory solves
(StatelessCartPole to its target: bench/learning_targets.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import assert_steps_time_one_torch_thread_against_two

from trainer import PPOConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner, sequences_per_minibatch
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.models import DefaultModelConfig
from trainer.env.episode import SingleAgentEpisode
from trainer.examples.envs.classes.stateless_cartpole import StatelessCartPole
from trainer.torch_rl.sequences import loss_mask, sequence_lengths, split_and_zero_pad

CELL = 8
#: Separate policy and value LSTMs: the tests read the actor's state.
LSTM_MODEL = {
    "use_lstm": True,
    "lstm_cell_size": CELL,
    "fcnet_hiddens": [16],
    "max_seq_len": 4,
    "vf_share_layers": False,
}


def lstm_module(**model) -> DefaultPPOTorchRLModule:
    return DefaultPPOTorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={**LSTM_MODEL, **model},
    )


def batched(state, batch_size: int):
    """An initial state (leaves `(1, cell)`) for `batch_size` rows: leaves `(B, 1, cell)`."""
    if isinstance(state, dict):
        return {key: batched(value, batch_size) for key, value in state.items()}
    return state.unsqueeze(0).repeat(batch_size, 1, 1)


def lstm_ppo(num_env_runners: int = 0, **model) -> PPOConfig:
    return (
        PPOConfig()
        .environment(StatelessCartPole)
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=2, rollout_fragment_length=50
        )
        .training(train_batch_size=200, minibatch_size=40, num_epochs=2, lr=0.001)
        .rl_module(model_config={**LSTM_MODEL, **model})
        .debugging(seed=3)
    )


# -- the module ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shared", [True, False])
def test_the_lstm_module_is_stateful_with_rllibs_state_layout(shared):
    module = lstm_module(vf_share_layers=shared)
    assert module.is_stateful()
    state = module.get_initial_state()
    leaves = state if shared else state["actor"]
    assert sorted(leaves) == ["c", "h"]
    assert leaves["h"].shape == (1, CELL) and not leaves["h"].any()
    if not shared:
        assert sorted(state) == ["actor", "critic"]
    # As in RLlib: a recurrent module keeps its value function even when asked to be
    # inference-only (the EnvRunners carry the critic's state too).
    copy = DefaultPPOTorchRLModule(
        observation_space=module.observation_space,
        action_space=module.action_space,
        inference_only=True,
        model_config={**LSTM_MODEL, "vf_share_layers": shared},
    )
    assert not copy.inference_only and any(k.startswith("vf.") for k in copy.get_state())
    assert not lstm_module(use_lstm=False).is_stateful()


@pytest.mark.parametrize("shared", [True, False])
def test_a_sequence_forward_equals_stepping_one_step_at_a_time(shared):
    torch.manual_seed(0)
    module = lstm_module(vf_share_layers=shared, lstm_use_prev_action=True)
    batch_size, steps = 3, 5
    obs = torch.randn(batch_size, steps, 3)
    prev_actions = torch.randint(0, 2, (batch_size, steps))
    state_in = batched(module.get_initial_state(), batch_size)
    out = module.forward_train(
        {Columns.OBS: obs, Columns.STATE_IN: state_in, "prev_actions": prev_actions}
    )
    assert out[Columns.ACTION_DIST_INPUTS].shape == (batch_size, steps, 2)
    state, logits = state_in, []
    for t in range(steps):
        step = module.forward_exploration(
            {
                Columns.OBS: obs[:, t : t + 1],
                Columns.STATE_IN: state,
                "prev_actions": prev_actions[:, t : t + 1],
            }
        )
        state = step[Columns.STATE_OUT]
        logits.append(step[Columns.ACTION_DIST_INPUTS])
    torch.testing.assert_close(torch.cat(logits, 1), out[Columns.ACTION_DIST_INPUTS])
    torch.testing.assert_close(state, out[Columns.STATE_OUT])
    values = module.compute_values(
        {Columns.OBS: obs, Columns.STATE_IN: state_in, "prev_actions": prev_actions}
    )
    assert values.shape == (batch_size, steps)
    with pytest.raises(ValueError, match="state_in"):
        module.forward_exploration({Columns.OBS: obs, "prev_actions": prev_actions})


def test_lstm_initializers_are_applied_as_rllibs():
    module = lstm_module(
        vf_share_layers=True, lstm_kernel_initializer="zeros_", lstm_bias_initializer="ones_"
    )
    lstm = module.encoder.encoder.lstm
    assert not lstm.weight_ih_l0.any() and not lstm.weight_hh_l0.any()
    assert (lstm.bias_ih_l0 == 1).all() and (lstm.bias_hh_l0 == 1).all()


def test_use_lstm_runs_on_torch_unless_numpy_was_chosen():
    """RLlib's default framework is torch: a config that chose none and asks for an LSTM gets
    the torch module; one that chose numpy is refused, naming framework("torch")."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(model_config=DefaultModelConfig(use_lstm=True))
    )
    assert config.uses_torch
    assert "use_lstm=True" in config.torch_reason
    config.validate()
    config.framework("numpy")
    assert not config.uses_torch
    with pytest.raises(ConfigError, match=r"use_lstm'\]=True.*framework\(\"torch\"\)"):
        config.validate()
    config.framework("torch").validate()
    with pytest.raises(ConfigError, match=r"lstm_cell_size'\]=0: must be an int >= 1"):
        PPOConfig().rl_module(model_config={"use_lstm": True, "lstm_cell_size": 0})
    conv = PPOConfig().rl_module(model_config={"conv_filters": [[4, 3, 1]]})
    assert "conv_filters=[[4, 3, 1]]" in conv.torch_reason


def test_a_large_lstm_times_its_steps_on_one_torch_thread_against_two():
    """RLlib's default LSTM (256 units) makes a learner's minibatch steps products too small
    for one thread's fixed costs: one thread or two, timed (`LARGE_RECURRENT`); a seeded run
    stays on one; a 64-unit LSTM keeps one thread for the whole update."""
    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(use_lstm=True, max_seq_len=10))
    )
    small = config.copy().rl_module(
        model_config=DefaultModelConfig(use_lstm=True, lstm_cell_size=64, max_seq_len=10)
    )
    assert_steps_time_one_torch_thread_against_two(config, small, StatelessCartPole())


# -- sequences ----------------------------------------------------------------------------------
def test_a_minibatch_takes_the_sequences_that_hold_minibatch_size_steps_as_rllibs():
    """RLlib 2.60's MiniBatchCyclicIterator slices a recurrent batch by sequences: the batch's
    sequences times minibatch_size over its steps (truncated). While episodes are short, a
    sequence holds fewer than max_seq_len steps and a minibatch more sequences; each
    minibatch then holds about minibatch_size steps (RLlib's stateless CartPole example
    reported 118-127 as its module_train_batch_size_mean at minibatch_size 128)."""
    assert sequences_per_minibatch(np.full(10, 20), 128) == 6
    assert sequences_per_minibatch(np.full(30, 10), 128) == 12  # int(30 * 128 / 300)
    assert sequences_per_minibatch(np.array([3, 2]), 1) == 1  # (at least one)
    assert sequences_per_minibatch(np.full(4, 20), None) is None  # (the whole batch)
    learner = _recurrent_ppo_learner_results(minibatch_size=128)
    # (random play: episodes of about 20 steps, sequences of about 13; a minibatch of
    # 128 // 20 = 6 sequences would hold about 80 steps)
    assert 110 <= learner["module_train_batch_size_mean"] <= 150, learner


def test_without_a_minibatch_size_a_recurrent_batch_trains_whole_as_rllibs():
    """RLlib 2.60 takes the whole batch as one minibatch when `minibatch_size` is None."""
    learner = _recurrent_ppo_learner_results(minibatch_size=None)
    assert learner["module_train_batch_size_mean"] == learner["num_env_steps_trained"] >= 1000


def _recurrent_ppo_learner_results(*, minibatch_size: int | None) -> dict:
    """The learner results of one iteration of a small LSTM PPO (1000 steps, one epoch)."""
    algo = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(num_env_runners=0)
        .training(train_batch_size=1000, minibatch_size=minibatch_size, num_epochs=1)
        .rl_module(model_config=DefaultModelConfig(use_lstm=True, lstm_cell_size=32))
        .debugging(seed=0)
        .build()
    )
    try:
        return algo.train()["learners"]["default_policy"]
    finally:
        algo.stop()


def test_zero_padding_splits_into_max_seq_len_sequences():
    column = np.arange(1, 11, dtype=np.float32)
    padded = split_and_zero_pad(column, 4)
    assert padded.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 0, 0]]
    assert sequence_lengths(10, 4).tolist() == [4, 4, 2]
    assert sequence_lengths(8, 4).tolist() == [4, 4]
    assert loss_mask(np.array([4, 2]), 4).tolist() == [[True] * 4, [True, True, False, False]]
    rows = split_and_zero_pad(np.ones((5, 2)), 4)
    assert rows.shape == (2, 4, 2) and rows[1, 1:].sum() == 0


def hand_built_chunk(t_started: int, length: int) -> SingleAgentEpisode:
    """A numpy'ized chunk whose recorded state out at step t is `t_started + t + 1` (its
    lookback step, when cut from an episode under way, recorded `t_started`)."""
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(3, np.float32), {})

    def record(t: int) -> None:
        episode.add_env_step(
            np.full(3, t + 1, np.float32),
            t % 2,
            float(t),
            {},
            extra_model_outputs={
                Columns.ACTION_LOGP: -0.5,
                Columns.ACTION_DIST_INPUTS: np.zeros(2, np.float32),
                Columns.STATE_OUT: {
                    "h": np.full((1, CELL), t + 1, np.float32),
                    "c": np.full((1, CELL), -(t + 1), np.float32),
                },
            },
        )

    if t_started:
        for t in range(t_started):
            record(t)
        episode = episode.cut(len_lookback_buffer=1)
    for t in range(t_started, t_started + length):
        record(t)
    return episode.to_numpy()


def test_the_learner_builds_rllibs_sequences_from_hand_built_episodes():
    config = lstm_ppo(vf_share_layers=True, lstm_use_prev_action=True, lstm_use_prev_reward=True)
    module = lstm_module(vf_share_layers=True, lstm_use_prev_action=True, lstm_use_prev_reward=True)
    learner = PPOTorchLearner(config, module)
    start, later = hand_built_chunk(0, 6), hand_built_chunk(5, 3)
    batch = learner.build_sequence_batch([start, later])
    # max_seq_len 4: 6 steps -> [4, 2], 3 steps -> [3]; sequences never span two chunks.
    assert batch[Columns.SEQ_LENS].tolist() == [4, 2, 3]
    assert batch[Columns.LOSS_MASK].tolist() == [
        [True] * 4,
        [True, True, False, False],
        [True, True, True, False],
    ]
    assert batch[Columns.OBS].shape == (3, 4, 3)
    # The observation each step acted on: the reset's (0), then the one after step t (t + 1).
    assert batch[Columns.OBS][:, :, 0].tolist() == [[0, 1, 2, 3], [4, 5, 0, 0], [5, 6, 7, 0]]
    assert batch[Columns.ACTIONS].tolist() == [[0, 1, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0]]
    # The state in: initial at the episode's start, then the state out of the step before
    # (in the chunk, or the lookback step a cut kept).
    h = batch["state_in/h"][:, 0, 0].tolist()
    assert h == [0.0, 4.0, 5.0]
    assert batch["state_in/c"][:, 0, 0].tolist() == [0.0, -4.0, -5.0]
    assert batch["prev_actions"].tolist() == [[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0]]
    assert batch["prev_rewards"][2].tolist() == [4.0, 5.0, 6.0, 0.0]
    # GAE on the real steps: the padding carries zeros and is masked out of the loss.
    assert np.all(batch["advantages"][~batch[Columns.LOSS_MASK]] == 0)
    real = batch["advantages"][batch[Columns.LOSS_MASK]]
    assert abs(real.mean()) < 1e-5 and abs(real.std() - 1.0) < 1e-3
    stats = learner.update([start, later])
    assert stats["num_env_steps_trained"] == 9
    assert np.isfinite(stats["total_loss"])


def test_gae_values_come_from_compute_values_on_the_recorded_sequences():
    config = lstm_ppo(vf_share_layers=True)
    module = lstm_module(vf_share_layers=True)
    learner = PPOTorchLearner(config, module)
    start, later = hand_built_chunk(0, 6), hand_built_chunk(5, 3)
    initial = {key: value.numpy() for key, value in module.get_initial_state().items()}
    values = learner._sequence_values([start, later], initial)

    def expected(episode, first: int, count: int, state: dict) -> np.ndarray:
        obs = torch.as_tensor(episode.get_observations()[first : first + count][None])
        state_in = {key: torch.as_tensor(np.asarray(value))[None] for key, value in state.items()}
        with torch.no_grad():
            return module.compute_values({Columns.OBS: obs, Columns.STATE_IN: state_in})[0]

    # 7 observations (6 steps and the last one) in sequences of 4 from the recorded states;
    # then the later chunk's 4 from its lookback step's state out.
    outs = start.get_extra_model_outputs(Columns.STATE_OUT)
    want = torch.cat(
        [
            expected(start, 0, 4, initial),
            expected(start, 4, 3, {key: value[3] for key, value in outs.items()}),
            expected(
                later,
                0,
                4,
                later.get_extra_model_outputs(Columns.STATE_OUT, -1, neg_index_as_lookback=True),
            ),
        ]
    )
    np.testing.assert_allclose(values, want.numpy(), atol=1e-6)


# -- the EnvRunner ------------------------------------------------------------------------------
def replay_states(module, episode: SingleAgentEpisode, state) -> list:
    """The state outs the module gives stepping through `episode` from `state` (the chunk's
    observations, one step at a time)."""
    observations = episode.get_observations()
    outs = []
    for t in range(len(episode)):
        with torch.no_grad():
            out = module.forward_exploration(
                {
                    Columns.OBS: torch.as_tensor(observations[t][None, None]),
                    Columns.STATE_IN: state,
                }
            )
        state = out[Columns.STATE_OUT]
        outs.append(state["actor"]["h"][0, 0].numpy().copy())
    return outs


def check_runner_states(runner) -> int:
    """Samples twice and replays every chunk: each recorded state out must be the module's,
    starting from the initial state at an episode's start and from the lookback step's state
    in a chunk that continues an episode. Returns the number of chunks checked."""
    module = runner.module.rl_module
    initial = {
        key: {k: v.unsqueeze(0) for k, v in value.items()}
        for key, value in module.get_initial_state().items()
    }
    checked = 0
    for _ in range(2):
        for episode in runner.sample(num_timesteps=60):
            recorded = episode.get_extra_model_outputs(Columns.STATE_OUT)["actor"]["h"][:, 0]
            if episode.t_started == 0:
                state = initial
            else:
                before = episode.get_extra_model_outputs(
                    Columns.STATE_OUT, -1, neg_index_as_lookback=True
                )
                state = {
                    key: {k: torch.as_tensor(v)[None] for k, v in value.items()}
                    for key, value in before.items()
                }
            replayed = replay_states(module, episode, state)
            np.testing.assert_allclose(np.stack(replayed), recorded, atol=1e-5)
            checked += 1
    return checked


@pytest.mark.slow
def test_the_runner_carries_the_state_and_resets_it_at_each_episode():
    algo = lstm_ppo().build()
    try:
        assert check_runner_states(algo.env_runner) >= 4
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_runner_processes_carry_the_state_too():
    algo = lstm_ppo(num_env_runners=1).build()
    try:
        checked = algo.env_runner_group.foreach_env_runner(
            check_runner_states, local_env_runner=False
        )
        assert checked and checked[0] >= 4
        result = algo.train()
        assert result["learners"]["default_policy"]["num_env_steps_trained"] >= 200
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_a_stateful_run_resumes_exactly_from_a_checkpoint(tmp_path, num_env_runners):
    algo = lstm_ppo(num_env_runners).build()
    try:
        algo.train()
        # Mid-episode: the runner's episodes under way carry their states into the checkpoint.
        path = algo.save_to_path(tmp_path / "checkpoint")
        after = algo.train()
        expected = algo.get_module().get_state()
    finally:
        algo.stop()
    restored = lstm_ppo(num_env_runners).build()
    try:
        restored.restore_from_path(path)
        resumed = restored.train()
        state = restored.get_module().get_state()
    finally:
        restored.stop()
    for key, value in expected.items():
        np.testing.assert_array_equal(state[key], value, err_msg=key)
    assert (
        resumed["env_runners"]["episode_return_mean"] == after["env_runners"]["episode_return_mean"]
    )


# -- learning -----------------------------------------------------------------------------------
def stateless_cartpole_lstm_ppo(seed: int = 0) -> PPOConfig:
    """RLlib's tuned stateless_cartpole_ppo.py settings (shared layers, max_seq_len 20, 6 epochs,
    vf_loss_coeff 0.05) on a smaller network and batch, lr 1e-3: from a random policy's ~22 to a
    mean return of 100 about 20 iterations in, above what the same settings reach without the
    LSTM in 30 iterations (at most ~50: the velocities are not observed).
    bench/learning_targets.py runs it to 100."""
    return (
        PPOConfig()
        .environment(StatelessCartPole)
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
        .training(
            train_batch_size=1000,
            minibatch_size=200,
            lr=0.001,
            num_epochs=6,
            vf_loss_coeff=0.05,
        )
        .rl_module(
            model_config={
                "vf_share_layers": True,
                "use_lstm": True,
                "max_seq_len": 20,
                "fcnet_hiddens": [32],
                "lstm_cell_size": 32,
            }
        )
        .debugging(seed=seed)
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_lstm_ppo_starts_learning_a_task_only_memory_solves():
    """The settings of `stateless_cartpole_lstm_ppo` (the same module, sequences and learner)
    on RepeatAfterMeEnv: each step's reward is +1 for repeating the previous step's random
    token, -1 otherwise, so a policy without memory returns 0 on average (any feed-forward
    policy: the token shown now says nothing about the one before) and the LSTM must carry the
    token from one step to the next. StatelessCartPole takes ~20 iterations to show its rise
    (bench/learning_targets.py); this shows within 5 of 500 env steps."""
    from trainer.examples.envs.classes.repeat_after_me_env import RepeatAfterMeEnv

    config = (
        stateless_cartpole_lstm_ppo(seed=0)
        .environment(RepeatAfterMeEnv, env_config={"episode_len": 20})
        .training(train_batch_size=500, lr=0.003)
    )
    algo = config.build()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(5)]
    finally:
        algo.stop()
    # 21 steps an episode: a memoryless policy's mean return over the ~100 episodes of the
    # window is 0 +- 0.5; seeds 0-5 returned 4.4-8.0 after 5 iterations (from -2.4 to 1.2).
    assert returns[-1] >= 3.0, returns


def test_box_actions_with_previous_actions_and_rewards_sample_and_train():
    from trainer.examples.envs.classes.stateless_pendulum import StatelessPendulum

    config = (
        lstm_ppo(lstm_use_prev_action=True, lstm_use_prev_reward=True)
        .environment(StatelessPendulum)
        .env_runners(rollout_fragment_length=100)
    )
    algo = config.build()
    try:
        episodes = algo.env_runner.sample(num_timesteps=40)
        assert all(ep.get_actions().shape[1:] == (1,) for ep in episodes)
        stats = algo.train()["learners"]["default_policy"]
        assert stats["num_env_steps_trained"] >= 200 and np.isfinite(stats["total_loss"])
    finally:
        algo.stop()


def test_compute_single_action_carries_a_recurrent_state():
    """RLlib's recurrent `compute_single_action`: `(action, state_out, extra)`, the state out
    fed back in; the same actions as the module's own forward passes from the initial state;
    prev actions/rewards go in where the model config asks for them."""
    algo = lstm_ppo(lstm_use_prev_action=True, lstm_use_prev_reward=True).build()
    try:
        module = algo.get_module()
        env = StatelessCartPole()
        obs, _ = env.reset(seed=0)
        state, prev_action, prev_reward = None, None, None
        replay = {
            key: {k: v.unsqueeze(0) for k, v in value.items()}
            for key, value in module.get_initial_state().items()
        }
        for _ in range(5):
            action, state, extra = algo.compute_single_action(
                obs, state, prev_action=prev_action, prev_reward=prev_reward, explore=False
            )
            assert extra == {} and isinstance(action, int)
            with torch.no_grad():
                out = module.forward_inference(
                    {
                        Columns.OBS: torch.as_tensor(obs[None, None]),
                        Columns.STATE_IN: replay,
                        "prev_actions": torch.as_tensor([[prev_action or 0]]),
                        "prev_rewards": torch.as_tensor([[prev_reward or 0.0]]),
                    }
                )
            replay = out[Columns.STATE_OUT]
            assert action == int(out[Columns.ACTION_DIST_INPUTS][0, 0].argmax())
            np.testing.assert_allclose(state["actor"]["h"], replay["actor"]["h"][0], atol=1e-6)
            obs, prev_reward, *_ = env.step(action)
            prev_action = action
        with pytest.raises(ValueError, match="the state must be what the previous call"):
            algo.compute_single_action(obs, state=[1.0, 2.0])
    finally:
        algo.stop()
    numpy_algo = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0).build()
    try:
        obs = np.zeros(4, np.float32)
        assert numpy_algo.compute_single_action(obs, full_fetch=True)[1:] == ([], {})
        with pytest.raises(ValueError, match="not recurrent, so it takes no state"):
            numpy_algo.compute_single_action(obs, state={"h": np.zeros(2)})
    finally:
        numpy_algo.stop()
