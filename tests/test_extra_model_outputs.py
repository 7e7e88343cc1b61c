"""A user RLModule's extra outputs, as RLlib 2.60 keeps them: every key its acting forward pass
returns besides the actions (a "my_value" beside `action_dist_inputs` and `action_logp`) is
recorded per step in the episodes (`get_extra_model_outputs`) and reaches the learner's train
batch, so a custom `compute_loss_for_module` reads `batch["my_value"]`. Through the public
API: a subclass of the default PPO torch module and a module written from scratch (RLlib's
TorchRLModule + ValueFunctionAPI), sampled in the Algorithm's process and in an EnvRunner
process, single- and multi-agent, and a recurrent one (outputs `(B, 1, ...)` per step)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from trainer import MultiRLModuleSpec, PPOConfig, RLModuleSpec
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.torch_rl.rl_module import TorchRLModule


def my_value(obs: Any) -> Any:
    """The extra output "my_value": a function of the observation, so that a row of the batch
    can be checked against its own observation."""
    return 2.0 * obs[..., 0] - obs[..., 2]


class ExtraValuePPOModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO torch module, its forward pass returning "my_value" too."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out = super()._forward(batch, **kwargs)
        out["my_value"] = my_value(batch[Columns.OBS].float())
        return out


class ScratchModule(TorchRLModule, ValueFunctionAPI):
    """A module written from scratch (as RLlib's examples write one) whose forward pass
    returns "my_value" and a two-column "my_pair" besides the distribution inputs."""

    def setup(self) -> None:
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.pi = nn.Linear(8, 2)
        self.vf = nn.Linear(8, 1)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS].float()
        return {
            Columns.ACTION_DIST_INPUTS: self.pi(self.body(obs)),
            "my_value": my_value(obs),
            "my_pair": obs[..., :2] * 3.0,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.vf(self.body(batch[Columns.OBS].float())).squeeze(-1)


class ScalarOutputModule(ScratchModule):
    """Returns an output that is not one row per observation."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out = super()._forward(batch, **kwargs)
        out["my_value"] = out["my_value"].sum()
        return out


class RecordingLearner(PPOTorchLearner):
    """A user's learner: its loss checks the extra columns row by row against the batch's
    observations (minibatches are shuffled: a row off its step would not match)."""

    #: Per loss call: (module id, "my_value"'s shape, "my_pair"'s shape or None).
    seen: list[tuple[Any, tuple, tuple | None]] = []

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        obs = batch[Columns.OBS]
        mask = batch.get(Columns.LOSS_MASK)
        rows = (lambda x: x[mask]) if mask is not None else (lambda x: x)
        torch.testing.assert_close(rows(batch["my_value"]), rows(my_value(obs)))
        pair = batch.get("my_pair")
        if pair is not None:
            torch.testing.assert_close(rows(pair), rows(obs[..., :2] * 3.0))
        RecordingLearner.seen.append(
            (module_id, tuple(batch["my_value"].shape), None if pair is None else pair.shape)
        )
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


def small_ppo(num_env_runners: int, env: Any = "CartPole-v1") -> PPOConfig:
    return (
        PPOConfig()
        .environment(env, env_config={"num_agents": 2} if env is MultiAgentCartPole else {})
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=64)
        .training(
            train_batch_size=128, minibatch_size=64, num_epochs=1, learner_class=RecordingLearner
        )
        .debugging(seed=3)
    )


def assert_episode_outputs(episode: Any, pair: bool) -> None:
    """The episode's extra model outputs: one per step, each its step's observation's."""
    obs = np.asarray(episode.get_observations())[:-1]
    assert {"my_value", Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS} <= set(
        episode.extra_model_outputs
    )
    np.testing.assert_allclose(
        episode.get_extra_model_outputs("my_value"), my_value(obs), rtol=1e-6
    )
    if pair:
        values = episode.get_extra_model_outputs("my_pair")
        assert values.shape == (len(episode), 2)
        np.testing.assert_allclose(values, obs[:, :2] * 3.0, rtol=1e-6)


@pytest.mark.parametrize("num_env_runners", [0, 1])
@pytest.mark.parametrize("module_class", [ExtraValuePPOModule, ScratchModule])
def test_a_modules_extra_outputs_reach_the_episodes_and_the_loss(
    module_class: type, num_env_runners: int
) -> None:
    config = small_ppo(num_env_runners).rl_module(
        rl_module_spec=RLModuleSpec(module_class=module_class, model_config={"fcnet_hiddens": [8]})
    )
    algo = config.build()
    try:
        pair = module_class is ScratchModule
        if num_env_runners:  # the episodes as they come over the process boundary
            (episodes,) = algo.env_runner_group.foreach_env_runner(
                lambda runner: runner.sample(num_timesteps=40), local_env_runner=False
            )
        else:
            episodes = algo.env_runner.sample(num_timesteps=40)
        assert sum(len(episode) for episode in episodes) >= 40
        for episode in episodes:
            assert_episode_outputs(episode, pair)
        RecordingLearner.seen.clear()
        algo.train()
        assert RecordingLearner.seen, "the loss never ran"
        for _, value_shape, pair_shape in RecordingLearner.seen:
            assert value_shape == (64,)
            assert pair_shape == ((64, 2) if pair else None)
    finally:
        algo.stop()


def test_multi_agent_modules_extra_outputs_reach_their_episodes_and_their_losses() -> None:
    config = (
        small_ppo(1, MultiAgentCartPole)
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=lambda agent_id, episode, **kwargs: f"p{agent_id}",
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "p0": RLModuleSpec(
                        module_class=ExtraValuePPOModule, model_config={"fcnet_hiddens": [8]}
                    ),
                    "p1": RLModuleSpec(module_class=ScratchModule),
                }
            )
        )
    )
    algo = config.build()
    try:
        (episodes,) = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.sample(num_timesteps=40), local_env_runner=False
        )
        for episode in episodes:
            for agent_id, agent_episode in episode.agent_episodes.items():
                if len(agent_episode):
                    assert_episode_outputs(agent_episode, pair=agent_id == 1)
        RecordingLearner.seen.clear()
        algo.train()
        shapes = {module_id: pair for module_id, _, pair in RecordingLearner.seen}
        assert shapes.keys() == {"p0", "p1"}
        p1_pair = shapes["p1"]
        assert shapes["p0"] is None and p1_pair is not None and p1_pair[1:] == (2,)
    finally:
        algo.stop()


def test_a_recurrent_modules_extra_outputs_lose_their_time_axis_and_pad_into_sequences() -> None:
    config = small_ppo(0).rl_module(
        rl_module_spec=RLModuleSpec(
            module_class=ExtraValuePPOModule,
            model_config={
                "fcnet_hiddens": [8],
                "use_lstm": True,
                "lstm_cell_size": 8,
                "max_seq_len": 10,
            },
        )
    )
    algo = config.build()
    try:
        for episode in algo.env_runner.sample(num_timesteps=30):
            assert_episode_outputs(episode, pair=False)
            assert Columns.STATE_OUT in episode.extra_model_outputs
        RecordingLearner.seen.clear()
        algo.train()
        assert RecordingLearner.seen
        # (sequences, max_seq_len), as the other columns: the loss compared the unpadded rows.
        assert all(len(shape) == 2 and shape[1] == 10 for _, shape, _ in RecordingLearner.seen)
    finally:
        algo.stop()


def test_an_extra_output_that_is_not_one_row_per_observation_is_refused_by_name() -> None:
    config = small_ppo(0).rl_module(rl_module_spec=RLModuleSpec(module_class=ScalarOutputModule))
    refusal = (
        r"ScalarOutputModule.forward_exploration\(\) returned 'my_value' as shape \(\): .* "
        r"must be an array \(or tensor\) of shape \(1, \.\.\.\)"
    )
    algo = config.build()
    try:
        with pytest.raises(ValueError, match=refusal):
            algo.env_runner.sample(num_timesteps=5)
    finally:
        algo.stop()
