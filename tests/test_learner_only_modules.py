"""Learner-only modules with their own loss (RLlib's `SelfSupervisedLossAPI`) beside PPO's
module in a single-agent config, and RLlib's intrinsic curiosity example classes built on them,
through real EnvRunner processes and checkpoints on disk."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import DQNConfig, PPOConfig  # noqa: E402
from trainer.algorithms.algorithm import Algorithm  # noqa: E402
from trainer.algorithms.dqn.torch_learner import DQNTorchLearner  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.connectors import FlattenObservations  # noqa: E402
from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2  # noqa: E402
from trainer.core.apis import SelfSupervisedLossAPI  # noqa: E402
from trainer.core.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from trainer.core.rl_module import RLModuleSpec  # noqa: E402
from trainer.env.episode import SingleAgentEpisode  # noqa: E402
from trainer.errors import ConfigError  # noqa: E402
from trainer.examples.learners.classes.intrinsic_curiosity_learners import (  # noqa: E402
    ICM_MODULE_ID,
    IntrinsicCuriosityModelConnector,
    PPOTorchLearnerWithCuriosity,
)
from trainer.examples.rl_modules.classes.intrinsic_curiosity_model_rlm import (  # noqa: E402
    IntrinsicCuriosityModel,
)
from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402
from trainer.torch_rl.self_supervised import ModulesById  # noqa: E402

PREDICTOR = "next_obs_predictor"


class NextObservationPredictor(TorchRLModule, SelfSupervisedLossAPI):
    """Learns to predict the next observation from the observation (mean squared error)."""

    def setup(self):
        size = self.observation_space.shape[0]
        self.net = torch.nn.Linear(size, size)

    def _forward_train(self, batch, **kwargs):
        return {"predicted": self.net(batch[Columns.OBS])}

    def compute_self_supervised_loss(self, *, learner, module_id, config, batch, fwd_out):
        assert learner.module[module_id] is self
        loss = torch.mean((fwd_out["predicted"] - batch[Columns.NEXT_OBS]) ** 2)
        learner.metrics.log_value((module_id, "prediction_loss"), loss, window=1)
        return loss


class NotSelfSupervised(TorchRLModule):
    def setup(self):
        self.net = torch.nn.Linear(4, 4)


def _config(predictor=NextObservationPredictor, num_env_runners=1):
    """PPO on CartPole beside the learner-only `predictor`, sampling through `num_env_runners`
    EnvRunner processes (0: in this process, for a test that samples nothing or need not)."""
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners)
        .training(train_batch_size=400, minibatch_size=100, num_epochs=2)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "default_policy": RLModuleSpec(),
                    PREDICTOR: RLModuleSpec(module_class=predictor, learner_only=True),
                }
            ),
            algorithm_config_overrides_per_module={
                PREDICTOR: PPOConfig.overrides(lr=[[0, 0.02], [1200, 0.005]])
            },
        )
        .debugging(seed=3)
    )


@pytest.mark.slow
def test_a_learner_only_module_trains_on_ppos_minibatches_and_checkpoints(tmp_path):
    algo = _config().build()
    try:
        learner = algo.learner
        predictor = learner.learner_only_learners[PREDICTOR]
        # Its own optimizer at its module's rate; the policy's at the config's.
        assert predictor.current_lr == pytest.approx(0.02)
        assert learner.current_lr == pytest.approx(algo.config.lr)
        # The EnvRunners build the default module alone.
        assert not isinstance(algo.env_runner.module, NextObservationPredictor)
        losses = []
        for _ in range(4):
            result = algo.train()
            losses.append(result["learners"][PREDICTOR]["prediction_loss"])
        # Its rate on its own schedule (1600 env steps sampled: past its last point).
        assert result["learners"][PREDICTOR]["curr_lr"] == pytest.approx(0.005)
        assert "policy_loss" in result["learners"]["default_policy"]
        assert losses[-1] < 0.6 * losses[0], losses  # it learns to predict CartPole's dynamics
        algo.save_to_path(tmp_path / "checkpoint")
        weights = {k: v.detach().clone() for k, v in predictor.rl_module.state_dict().items()}
        moments = predictor.get_state()["optimizer"]
    finally:
        algo.stop()
    restored = _config(num_env_runners=0).build()  # the learner's state is what it restores
    try:
        restored.restore_from_path(tmp_path / "checkpoint")
        again = restored.learner.learner_only_learners[PREDICTOR]
        for key, value in again.rl_module.state_dict().items():
            torch.testing.assert_close(value, weights[key], rtol=0, atol=0)
        state = again.get_state()["optimizer"]
        for name, entry in moments.items():
            for param, values in entry["param_state"].items():
                for key, value in values.items():
                    np.testing.assert_array_equal(state[name]["param_state"][param][key], value)
        restored.train()
    finally:
        restored.stop()


@pytest.mark.slow
def test_a_learner_state_without_the_learner_only_module_is_refused_changing_nothing():
    algo = _config(num_env_runners=0).build()
    try:
        state = algo.learner.get_state()
        before = algo.learner.learner_only_learners[PREDICTOR].get_state()["module"]
        del state["learner_only_modules"][PREDICTOR]
        with pytest.raises(Exception, match=PREDICTOR):
            algo.learner.set_state(state)
        after = algo.learner.learner_only_learners[PREDICTOR].get_state()["module"]
        for key, value in before.items():
            np.testing.assert_array_equal(after[key], value)
    finally:
        algo.stop()


def test_learner_only_modules_are_refused_where_nothing_trains_them():
    with pytest.raises(
        ConfigError, match=r"module_class=NotSelfSupervised .*SelfSupervisedLossAPI"
    ):
        _config(NotSelfSupervised).validate()
    dqn = (
        DQNConfig()
        .environment("CartPole-v1")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "default_policy": RLModuleSpec(),
                    PREDICTOR: RLModuleSpec(
                        module_class=NextObservationPredictor, learner_only=True
                    ),
                }
            )
        )
    )
    with pytest.raises(ConfigError, match=r"DQN does not train learner-only modules.*PPO"):
        dqn.validate()
    # A module the EnvRunners would run too needs a multi-agent config, as before.
    both = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"default_policy": RLModuleSpec(), "other": RLModuleSpec()}
            )
        )
    )
    with pytest.raises(ConfigError, match=r"learner_only=True"):
        both.validate()


def _icm(observation_size=6, num_actions=3):
    return IntrinsicCuriosityModel(
        observation_space=gym.spaces.Box(0.0, 1.0, (observation_size,), np.float32),
        action_space=gym.spaces.Discrete(num_actions),
        model_config={
            "feature_dim": 8,
            "feature_net_hiddens": (16,),
            "feature_net_activation": "relu",
        },
    )


def test_the_curiosity_piece_adds_the_models_surprise_to_each_steps_reward():
    torch.manual_seed(0)
    icm = _icm()
    rng = np.random.default_rng(0)
    episodes = []
    for length in (3, 5):
        episode = SingleAgentEpisode()
        episode.add_env_reset(rng.random(6).astype(np.float32))
        for _ in range(length):
            episode.add_env_step(rng.random(6).astype(np.float32), int(rng.integers(3)), 1.0)
        episodes.append(episode)
    piece = IntrinsicCuriosityModelConnector(intrinsic_reward_coeff=0.5)
    piece(rl_module=ModulesById({ICM_MODULE_ID: icm}), batch={}, episodes=episodes)
    for episode in episodes:
        observations = torch.from_numpy(np.asarray(episode.get_observations(), np.float32))
        with torch.no_grad():
            surprise = icm.forward_train(
                {
                    Columns.OBS: observations[:-1],
                    Columns.NEXT_OBS: observations[1:],
                    Columns.ACTIONS: torch.as_tensor(np.asarray(episode.get_actions())),
                }
            )[Columns.INTRINSIC_REWARDS].numpy()
        assert (surprise > 0).all()
        np.testing.assert_allclose(episode.get_rewards(), 1.0 + 0.5 * surprise, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="trains only"):
        icm.forward_inference({Columns.OBS: torch.zeros(1, 6)})


def _curiosity_config(**learner_config):
    return (
        PPOConfig()
        .environment("FrozenLake-v1", env_config={"is_slippery": False, "map_name": "8x8"})
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env: FlattenObservations(),
        )
        .training(
            learner_class=PPOTorchLearnerWithCuriosity,
            learner_config_dict=learner_config,
            train_batch_size=256,
            minibatch_size=64,
            num_epochs=2,
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "default_policy": RLModuleSpec(),
                    ICM_MODULE_ID: RLModuleSpec(
                        module_class=IntrinsicCuriosityModel,
                        learner_only=True,
                        model_config={"feature_dim": 16, "feature_net_hiddens": (32,)},
                    ),
                }
            ),
            algorithm_config_overrides_per_module={ICM_MODULE_ID: PPOConfig.overrides(lr=5e-4)},
        )
    )


@pytest.mark.slow
def test_the_curiosity_learner_trains_the_model_and_learns_from_its_rewards(tmp_path):
    algo = _curiosity_config(intrinsic_reward_coeff=0.05, forward_loss_weight=0.2).build()
    try:
        result = algo.train()
        icm_results = result["learners"][ICM_MODULE_ID]
        for key in ("forward_loss", "inverse_loss", "mean_intrinsic_rewards", "total_loss"):
            assert np.isfinite(icm_results[key]), key
        assert icm_results["curr_lr"] == pytest.approx(5e-4)
        # The policy's learner pieces hold the intrinsic rewards' piece.
        pieces = [type(piece).__name__ for piece in algo.learner._learner_connector.connectors]
        assert pieces == ["IntrinsicCuriosityModelConnector"]
        algo.save_to_path(tmp_path / "checkpoint")
        saved = algo.learner.learner_only_learners[ICM_MODULE_ID].get_state()["module"]
    finally:
        algo.stop()
    # A checkpoint rebuilds the whole algorithm: the learner class and the curiosity model.
    restored = Algorithm.from_checkpoint(tmp_path / "checkpoint")
    try:
        assert type(restored.learner) is PPOTorchLearnerWithCuriosity
        state = restored.learner.learner_only_learners[ICM_MODULE_ID].get_state()["module"]
        for key, value in saved.items():
            np.testing.assert_array_equal(state[key], value)
        assert ICM_MODULE_ID in restored.train()["learners"]
    finally:
        restored.stop()


@pytest.mark.slow
def test_the_curiosity_learner_names_the_settings_it_needs():
    config = _curiosity_config(forward_loss_weight=0.2).env_runners(num_env_runners=0)
    with pytest.raises(KeyError, match="intrinsic_reward_coeff"):
        config.build()


class _Noop(ConnectorV2):
    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


class DQNLearnerCountingBuilds(DQNTorchLearner):
    builds = 0

    def build(self):
        super().build()
        type(self).builds += 1


class DQNLearnerAddingAPiece(DQNTorchLearner):
    def build(self):
        super().build()
        self._learner_connector = ConnectorPipelineV2(connectors=[_Noop()])


def _dqn(learner_class):
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(learner_class=learner_class)
    )


@pytest.mark.slow
def test_every_torch_learner_gets_rllibs_build_hook_once():
    algo = _dqn(DQNLearnerCountingBuilds).build()
    try:
        assert DQNLearnerCountingBuilds.builds == 1
    finally:
        algo.stop()
    # Pieces a hook adds where the algorithm runs none are refused, naming them.
    with pytest.raises(ConfigError, match=r"build\(\) added learner pieces \['_Noop'\]: DQN"):
        _dqn(DQNLearnerAddingAPiece).build()
