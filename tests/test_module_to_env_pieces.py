"""Custom module-to-env connector pieces (RLlib's `env_runners(module_to_env_connector=...)`):
each single-agent EnvRunner runs them on the module's outputs before the actions are drawn,
with every sub-env's episode; a piece may change the distribution inputs (an action mask) or
write the actions itself; torch modules' pieces get tensors, as in RLlib; checkpoints restore
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
from trainer.errors import ConfigError
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


def test_multi_agent_configs_and_other_signatures_are_refused_when_validated():
    config = (
        config_with(lambda env, spaces: MaskLeft())
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
    )
    with pytest.raises(ConfigError, match=r"module_to_env_connector=\.\.\.\) is not available"):
        config.validate()
    with pytest.raises(ValueError, match=r"module_to_env_connector.*\(env\) or \(env, spaces\)"):
        PPOConfig().env_runners(module_to_env_connector=lambda a, b, c: MaskLeft())
