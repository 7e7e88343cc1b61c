"""Custom module-to-env connector pieces (RLlib's `env_runners(module_to_env_connector=...)`):
each EnvRunner runs them on the modules' outputs before the actions are drawn, with every
sub-env's episode (a multi-agent one's batch keyed by module id, as RLlib's); a piece may
change the distribution inputs (an action mask) or write the actions itself; torch modules' pieces get tensors, as in RLlib; checkpoints restore
them in front of RLlib's default pieces for a user's own env loop. Real EnvRunner processes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from trainer import PPOConfig
from trainer.compat.rllib_utils import Columns
from trainer.connectors.connector_v2 import ConnectorV2
from trainer.connectors.module_to_env import GetActions, ModuleToEnvPipeline
from trainer.env.episode import SingleAgentEpisode
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

NUM_ENVS = 3


class MaskLeft(ConnectorV2):
    """Action 0 made impossible in the distribution inputs (an action mask); counts the
    episodes it was given."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        # One episode per sub-env (a new, empty one where the next step resets the sub-env).
        assert len(episodes) == NUM_ENVS, len(episodes)
        assert all(isinstance(episode, SingleAgentEpisode) for episode in episodes)
        batch[Columns.ACTION_DIST_INPUTS][:, 0] = -1e9
        return batch


class PushRight(ConnectorV2):
    """Writes the actions itself (always 1), as torch tensors: it checks it got tensors."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        import torch

        logits = batch[Columns.ACTION_DIST_INPUTS]
        assert isinstance(logits, torch.Tensor), type(logits)
        batch[Columns.ACTIONS] = torch.ones(len(logits), dtype=torch.int64)
        batch[Columns.ACTION_LOGP] = torch.zeros(len(logits))
        return batch


def config_with(factory) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=NUM_ENVS,
            module_to_env_connector=factory,
        )
        .training(train_batch_size=300, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


def sampled(algo) -> list:
    """What the EnvRunner process samples now."""
    [episodes] = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.sample(num_timesteps=90), local_env_runner=False
    )
    return episodes


@pytest.mark.slow
def test_a_piece_masks_an_action_in_the_env_runner_processes(tmp_path):
    algo = config_with(lambda env, spaces: MaskLeft()).build()
    try:
        algo.train()
        episodes = sampled(algo)
        actions = np.concatenate([episode.get_actions() for episode in episodes])
        assert set(actions.tolist()) == {1}
        # What the episodes record is what the actions were drawn from: the masked inputs.
        inputs = np.concatenate(
            [episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS) for episode in episodes]
        )
        assert (inputs[:, 0] == -1e9).all()
        # A checkpoint restores the piece in front of RLlib's default pieces.
        path = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    pipeline = ModuleToEnvPipeline.from_checkpoint(
        os.path.join(path, "env_runner", "module_to_env_connector")
    )
    assert [type(piece) for piece in pipeline.connectors[:2]] == [MaskLeft, GetActions]


@pytest.mark.slow
def test_a_torch_modules_piece_gets_tensors_and_may_act_itself():
    torch = pytest.importorskip("torch", reason="a torch module's pieces get tensors")
    assert torch is not None
    algo = config_with(lambda env: PushRight()).framework("torch").build()  # (env) only
    try:
        episodes = sampled(algo)
        for episode in episodes:
            assert set(episode.get_actions().tolist()) == {1}
            np.testing.assert_array_equal(episode.get_extra_model_outputs(Columns.ACTION_LOGP), 0.0)
        assert algo.train()["env_runners"]["num_env_steps_sampled"] > 0
    finally:
        algo.stop()


class MaskLeftPerModule(ConnectorV2):
    """A multi-agent piece: action 0 made impossible in every acting module's inputs."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        # Every sub-env's MultiAgentEpisode; the batch maps each acting module's id to its rows.
        assert len(episodes) == NUM_ENVS, len(episodes)
        assert all(isinstance(episode, MultiAgentEpisode) for episode in episodes)
        assert set(batch) <= {"p0", "p1"}, set(batch)
        for module_batch in batch.values():
            module_batch[Columns.ACTION_DIST_INPUTS][:, 0] = -1e9
        return batch


class P0PushesRight(ConnectorV2):
    """Writes module p0's actions itself (always 1) as torch tensors; p1 acts as it would."""

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        import torch

        if "p0" in batch:
            logits = batch["p0"][Columns.ACTION_DIST_INPUTS]
            assert isinstance(logits, torch.Tensor), type(logits)
            batch["p0"][Columns.ACTIONS] = torch.ones(len(logits), dtype=torch.int64)
        return batch


def multi_agent_config_with(factory) -> PPOConfig:
    return (
        config_with(factory)
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, episode, **kw: f"p{aid}")
    )


def actions_by_agent(episodes) -> dict:
    actions: dict = {}
    for episode in episodes:
        for agent_id, agent_episode in episode.agent_episodes.items():
            actions.setdefault(agent_id, []).extend(agent_episode.get_actions().tolist())
    return actions


@pytest.mark.slow
def test_multi_agent_pieces_mask_every_modules_actions_in_the_env_runner_processes():
    algo = multi_agent_config_with(lambda env, spaces: MaskLeftPerModule()).build()
    try:
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] > 0
        episodes = sampled(algo)
        assert {agent: set(taken) for agent, taken in actions_by_agent(episodes).items()} == {
            0: {1},
            1: {1},
        }
        # The episodes record the inputs the actions were drawn from: the masked ones.
        for episode in episodes:
            for agent_episode in episode.agent_episodes.values():
                inputs = agent_episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
                assert (np.asarray(inputs)[:, 0] == -1e9).all()
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_multi_agent_torch_piece_may_act_for_one_module():
    pytest.importorskip("torch", reason="a torch module's pieces get tensors")
    algo = multi_agent_config_with(lambda env: P0PushesRight()).framework("torch").build()
    try:
        taken = actions_by_agent(sampled(algo))
        assert set(taken[0]) == {1}
        assert set(taken[1]) == {0, 1}  # p1's actions are drawn from its distribution
        # The log-likelihoods of p0's written actions are its distribution's.
        assert np.isfinite(algo.train()["learners"]["p0"]["policy_loss"])
    finally:
        algo.stop()


def test_other_signatures_are_refused_when_configured():
    with pytest.raises(ValueError, match=r"module_to_env_connector.*\(env\) or \(env, spaces\)"):
        PPOConfig().env_runners(module_to_env_connector=lambda a, b, c: MaskLeft())


@pytest.mark.slow
def test_multi_agent_pieces_run_on_recurrent_modules_outputs():
    pytest.importorskip("torch", reason="use_lstm runs on torch")
    model_config = {"use_lstm": True, "max_seq_len": 10, "fcnet_hiddens": [16], "lstm_cell_size": 8}
    config = multi_agent_config_with(lambda env, spaces: MaskLeftPerModule())
    algo = config.rl_module(model_config=model_config).build()
    try:
        episodes = sampled(algo)
        assert {agent: set(taken) for agent, taken in actions_by_agent(episodes).items()} == {
            0: {1},
            1: {1},
        }
        # The steps still record the module's state out beside the masked inputs.
        assert Columns.STATE_OUT in episodes[0].agent_episodes[0].extra_model_outputs
    finally:
        algo.stop()
