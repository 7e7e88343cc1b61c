"""A user's own env loop on a trained policy, as RLlib's policy inference examples write it: the
env-to-module and module-to-env pipelines restored from an algorithm checkpoint
(`EnvToModulePipeline.from_checkpoint`, `ModuleToEnvPipeline.from_checkpoint`) around the module
restored with `RLModule.from_checkpoint`, each step recorded in a SingleAgentEpisode."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer import PPOConfig
from trainer.checkpoints.format import CheckpointError
from trainer.compat.rllib_utils import Columns
from trainer.connectors.env_to_module import EnvToModulePipeline, MeanStdFilter
from trainer.connectors.module_to_env import ModuleToEnvPipeline
from trainer.core.rl_module import RLModule
from trainer.env.episode import SingleAgentEpisode
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.examples.envs.classes.stateless_cartpole import StatelessCartPole

ENV_TO_MODULE = os.path.join("env_runner", "env_to_module_connector")
MODULE_TO_ENV = os.path.join("env_runner", "module_to_env_connector")
MODULE = os.path.join("learner_group", "learner", "rl_module", "default_policy")


def restored(path):
    return (
        EnvToModulePipeline.from_checkpoint(os.path.join(path, ENV_TO_MODULE)),
        RLModule.from_checkpoint(os.path.join(path, MODULE)),
        ModuleToEnvPipeline.from_checkpoint(os.path.join(path, MODULE_TO_ENV)),
    )


def trained_checkpoint(config, tmp_path) -> str:
    """The checkpoint of `config`'s algorithm after one training iteration."""
    algo = config.build()
    try:
        algo.train()
        return algo.save_to_path(tmp_path / "checkpoint")
    finally:
        algo.stop()


def batched(state):
    """A (nested) initial state with a batch axis of one."""
    if isinstance(state, dict):
        return {key: batched(value) for key, value in state.items()}
    return torch.as_tensor(np.asarray(state))[None]


def run_loop(env, env_to_module, module, module_to_env, steps, explore=False, seed=0):
    """RLlib's inference loop: returns (the episodes, every step's module input and output)."""
    obs, _ = env.reset(seed=seed)
    episode = SingleAgentEpisode(
        observations=[obs], observation_space=env.observation_space, action_space=env.action_space
    )
    episodes, records = [episode], []
    for _ in range(steps):
        shared_data: dict = {}
        batch = env_to_module(
            episodes=[episode], rl_module=module, explore=explore, shared_data=shared_data
        )
        with torch.no_grad():
            out = module.forward_exploration(batch) if explore else module.forward_inference(batch)
        to_env = module_to_env(
            batch=dict(out),
            episodes=[episode],
            rl_module=module,
            explore=explore,
            shared_data=shared_data,
        )
        records.append((batch, dict(to_env)))
        action = to_env.pop(Columns.ACTIONS)[0]
        obs, reward, terminated, truncated, _ = env.step(to_env[Columns.ACTIONS_FOR_ENV][0])
        episode.add_env_step(
            obs,
            action,
            reward,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={key: value[0] for key, value in to_env.items()},
        )
        if episode.is_done:
            obs, _ = env.reset()
            episode = SingleAgentEpisode(
                observations=[obs],
                observation_space=env.observation_space,
                action_space=env.action_space,
            )
            episodes.append(episode)
    return episodes, records


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_mean_std_filtered_policy_acts_greedily_on_the_saved_statistics(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1, env_to_module_connector=lambda env: MeanStdFilter())
        .training(train_batch_size=500, minibatch_size=100, num_epochs=2)
        .debugging(seed=1)
    )
    algo = config.build()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
        saved_filter = algo.env_runner.env_to_module.connectors[0].get_state()
    finally:
        algo.stop()
    env_to_module, module, module_to_env = restored(path)
    names = [type(piece).__name__ for piece in env_to_module.connectors]
    assert names == [
        "MeanStdFilter",
        "AddObservationsFromEpisodesToBatch",
        "AddTimeDimToBatchAndZeroPad",
        "AddStatesFromEpisodesToBatch",
        "BatchIndividualItems",
        "NumpyToTensor",
    ]
    restored_filter = env_to_module.connectors[0].get_state()
    assert restored_filter.keys() == saved_filter.keys()
    assert repr(restored_filter) == repr(saved_filter)
    env = gym.make("CartPole-v1")
    episodes, records = run_loop(env, env_to_module, module, module_to_env, steps=30)
    # The module saw each episode's observations as the episode records them: filtered.
    seen = np.concatenate([np.asarray(e.get_observations())[: len(e)] for e in episodes])
    raw_first, _ = gym.make("CartPole-v1").reset(seed=0)
    assert not np.allclose(seen[0], raw_first)
    for t, (batch, to_env) in enumerate(records):
        assert batch[Columns.OBS].shape == (1, 4)
        np.testing.assert_allclose(np.asarray(batch[Columns.OBS])[0], seen[t], rtol=1e-6)
        logits = module.forward_inference({Columns.OBS: batch[Columns.OBS]})
        greedy = int(np.argmax(np.asarray(logits[Columns.ACTION_DIST_INPUTS])[0]))
        assert to_env[Columns.ACTIONS_FOR_ENV][0] == greedy
        assert Columns.ACTION_LOGP not in to_env  # no exploration: no log-probs


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_recurrent_policy_carries_its_state_through_the_episodes(tmp_path):
    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .framework("torch")
        .env_runners(num_env_runners=0, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=50, num_epochs=1)
        .rl_module(model_config={"use_lstm": True, "lstm_cell_size": 16, "max_seq_len": 10})
        .debugging(seed=2)
    )
    env_to_module, module, module_to_env = restored(trained_checkpoint(config, tmp_path))
    assert module.is_stateful()
    env = StatelessCartPole()
    episodes, records = run_loop(env, env_to_module, module, module_to_env, steps=25, explore=True)
    batch, to_env = records[0]
    assert batch[Columns.OBS].shape == (1, 1, 2)  # a time axis of one
    assert set(batch[Columns.STATE_IN]) == set(module.get_initial_state())
    assert np.asarray(to_env[Columns.ACTION_DIST_INPUTS][0]).shape == (2,)  # time axis dropped
    assert np.ndim(to_env[Columns.ACTION_LOGP][0]) == 0  # exploring: log-probs recorded
    # Stepping with the carried states equals one pass over each episode's whole sequence.
    step = 0
    for episode in episodes:
        length = len(episode)
        if length == 0:
            continue
        initial = batched(module.get_initial_state())
        observations = torch.as_tensor(np.asarray(episode.get_observations()[:length]))[None]
        with torch.no_grad():
            whole = module.forward_exploration(
                {Columns.OBS: observations, Columns.STATE_IN: initial}
            )
        stepped = np.stack(
            [np.asarray(records[step + t][1][Columns.ACTION_DIST_INPUTS][0]) for t in range(length)]
        )
        np.testing.assert_allclose(stepped, whole[Columns.ACTION_DIST_INPUTS][0].numpy(), atol=1e-5)
        step += length


@pytest.mark.timeout(120)
def test_box_actions_are_mapped_onto_the_bounds_for_the_env(tmp_path):
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=3)
    )
    env_to_module, module, module_to_env = restored(trained_checkpoint(config, tmp_path))
    assert [type(piece).__name__ for piece in env_to_module.connectors][0] == (
        "AddObservationsFromEpisodesToBatch"  # no pieces of the config's own
    )
    env = gym.make("Pendulum-v1")
    _, records = run_loop(env, env_to_module, module, module_to_env, steps=20, explore=True)
    for _, to_env in records:
        action = np.asarray(to_env[Columns.ACTIONS][0])
        for_env = np.asarray(to_env[Columns.ACTIONS_FOR_ENV][0])
        # normalize_actions (RLlib's default): [-1, 1] onto [-2, 2]
        expected = -2.0 + (np.clip(action, -1.0, 1.0) + 1.0) * 2.0
        np.testing.assert_allclose(for_env, expected, rtol=1e-6)
        assert np.all(np.abs(for_env) <= 2.0)


def test_damaged_or_misplaced_pipeline_directories_are_refused(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, env_to_module_connector=lambda env: MeanStdFilter())
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    )
    path = trained_checkpoint(config, tmp_path)
    with pytest.raises(CheckpointError, match="not what EnvToModulePipeline restores"):
        EnvToModulePipeline.from_checkpoint(os.path.join(path, MODULE_TO_ENV))
    with pytest.raises(CheckpointError, match="no such directory"):
        ModuleToEnvPipeline.from_checkpoint(os.path.join(path, "env_runner", "missing"))
    state_file = os.path.join(path, ENV_TO_MODULE, "state.msgpack")
    with open(state_file, "r+b") as handle:
        data = bytearray(handle.read())
        data[-1] ^= 0xFF
        handle.seek(0)
        handle.write(data)
    with pytest.raises(CheckpointError, match="state.msgpack is damaged or was altered"):
        EnvToModulePipeline.from_checkpoint(os.path.join(path, ENV_TO_MODULE))


def test_a_multi_agent_checkpoint_has_no_single_agent_pipelines(tmp_path):
    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    )
    path = trained_checkpoint(config, tmp_path)
    with pytest.raises(CheckpointError, match="multi-agent checkpoints have none"):
        EnvToModulePipeline.from_checkpoint(os.path.join(path, ENV_TO_MODULE))
