"""A MultiRLModule trained whole by one learner (RLlib's learner over all modules), and a
container class that runs its modules together (RLlib's shared-encoder example,
`VPGMultiRLModuleWithSharedEncoder`): the EnvRunners act through the container's forward, the
learner trains through it, one optimizer may span the modules, and checkpoints hold it all.
Through the public API, with real EnvRunner processes where the test is about sampling."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.algorithms.vpg import VPG, VPGConfig
from trainer.compat.rllib_utils import Columns
from trainer.core.multi_rl_module import MultiRLModuleSpec, runs_modules_together
from trainer.core.rl_module import RLModule, RLModuleSpec
from trainer.errors import ConfigError
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.util.state_checks import StateError

torch = pytest.importorskip("torch", reason="the modules and the learner are torch's")

from trainer.algorithms.vpg.shared_optimizer_learner import (  # noqa: E402
    VPGTorchLearnerSharedOptimizer,
)
from trainer.examples.rl_modules.classes.vpg_using_shared_encoder_rlm import (  # noqa: E402
    SHARED_ENCODER_ID,
    SharedEncoder,
    VPGMultiRLModuleWithSharedEncoder,
    VPGPolicyAfterSharedEncoder,
    VPGPolicyNoSharedEncoder,
)
from trainer.metrics import ALL_MODULES, LEARNER_RESULTS  # noqa: E402

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class AlwaysRightForP1(VPGMultiRLModuleWithSharedEncoder):
    """The shared-encoder container, but its exploration forward makes policy "p1" push right
    (action 1) at every step: what the EnvRunners sample shows whose forward they ran."""

    def _forward_exploration(self, batch, **kwargs):
        out = super()._forward_exploration(batch, **kwargs)
        if "p1" in out:
            logits = out["p1"][Columns.ACTION_DIST_INPUTS]
            out["p1"][Columns.ACTION_DIST_INPUTS] = torch.stack(
                [torch.full_like(logits[:, 0], -50.0), torch.full_like(logits[:, 1], 50.0)], 1
            )
        return out


def shared_encoder_spec(container: type = VPGMultiRLModuleWithSharedEncoder) -> MultiRLModuleSpec:
    return MultiRLModuleSpec(
        multi_rl_module_class=container,
        rl_module_specs={
            SHARED_ENCODER_ID: RLModuleSpec(
                module_class=SharedEncoder,
                model_config={"embedding_dim": 8},
                observation_space=OBS_SPACE,
                action_space=ACT_SPACE,
            ),
            "p0": RLModuleSpec(
                module_class=VPGPolicyAfterSharedEncoder,
                model_config={"embedding_dim": 8, "hidden_dim": 16},
            ),
            "p1": RLModuleSpec(
                module_class=VPGPolicyAfterSharedEncoder,
                model_config={"embedding_dim": 8, "hidden_dim": 16},
            ),
        },
    )


def two_policies(config):
    return config.environment(MultiAgentCartPole, env_config={"num_agents": 2}).multi_agent(
        policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}"
    )


def shared_encoder_vpg(**training) -> VPGConfig:
    return (
        two_policies(VPGConfig())
        .training(learner_class=VPGTorchLearnerSharedOptimizer, lr=1e-2, **training)
        .rl_module(rl_module_spec=shared_encoder_spec())
        .debugging(seed=3)
    )


@pytest.mark.slow
def test_the_shared_encoder_trains_with_both_policies_and_reaches_the_env_runners():
    algo = shared_encoder_vpg().build()  # one EnvRunner process (VPG's default)
    try:
        assert list(algo.learner._optimizers) == ["shared_optimizer"]
        before = {m: algo.get_module(m).get_state() for m in ("p0", "p1", SHARED_ENCODER_ID)}
        result = algo.train()
        learners = result[LEARNER_RESULTS]
        assert learners[ALL_MODULES]["gradients_shared_optimizer_global_norm"] > 0
        # Env steps (each counts both agents' steps while both balance), and each module's
        # agent steps.
        env_steps = learners[ALL_MODULES]["num_env_steps_trained"]
        assert env_steps == result["num_env_steps_sampled_lifetime"]
        agent_steps = sum(learners[m]["num_module_steps_trained"] for m in ("p0", "p1"))
        assert env_steps < agent_steps <= 2 * env_steps
        for module_id, state in before.items():
            after = algo.get_module(module_id).get_state()
            assert any(not np.array_equal(after[k], state[k]) for k in state), module_id
        # The EnvRunner process acts with the learner's new weights, the encoder's too.
        [remote] = algo.env_runner_group.foreach_env_runner(
            lambda runner: {m: runner.module[m].get_state() for m in runner.module.keys()},
            local_env_runner=False,
        )
        for module_id, state in remote.items():
            learned = algo.get_module(module_id).get_state()
            assert all(np.array_equal(state[k], learned[k]) for k in learned), module_id
    finally:
        algo.stop()


def test_the_env_runners_act_through_the_containers_forward():
    config = (
        two_policies(VPGConfig())
        .env_runners(num_env_runners=0)
        .rl_module(rl_module_spec=shared_encoder_spec(AlwaysRightForP1))
        .training(num_episodes_per_train_batch=4)
    )
    algo = config.build()
    try:
        episodes = algo.env_runner.sample(num_episodes=4)
        actions = {"p0": [], "p1": []}
        for episode in episodes:
            for agent_episode in episode.agent_episodes.values():
                actions[agent_episode.module_id] += list(agent_episode.get_actions())
        assert set(actions["p1"]) == {1}  # the container's forward chose them
        assert set(actions["p0"]) == {0, 1}
    finally:
        algo.stop()


def test_the_joint_loss_is_the_sum_of_each_policys_vpg_loss_through_the_encoder():
    algo = shared_encoder_vpg().env_runners(num_env_runners=0).build()
    try:
        learner = algo.learner
        rng = np.random.default_rng(0)
        batch = {
            module_id: {
                Columns.OBS: rng.normal(size=(n, 4)).astype(np.float32),
                Columns.ACTIONS: rng.integers(0, 2, n),
                Columns.RETURNS_TO_GO: rng.normal(size=n).astype(np.float32),
            }
            for module_id, n in (("p0", 5), ("p1", 7))
        }
        encoder = algo.get_module(SHARED_ENCODER_ID)
        expected = 0.0
        with torch.no_grad():
            for module_id, columns in batch.items():
                embeddings = encoder._net(torch.as_tensor(columns[Columns.OBS]))
                logits = algo.get_module(module_id)._pi_head(embeddings)
                log_pi = torch.log_softmax(logits, -1)
                log_pi_a = log_pi[torch.arange(len(logits)), columns[Columns.ACTIONS]]
                expected += float(
                    -(log_pi_a * torch.as_tensor(columns[Columns.RETURNS_TO_GO])).mean()
                )
        stats = learner.update_from_batch(batch)
        assert stats["total_loss"] == pytest.approx(expected, rel=1e-5)
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_checkpoint_holds_every_module_and_the_shared_optimizer(tmp_path):
    algo = shared_encoder_vpg().build()
    try:
        algo.train()
        saved = algo.learner.get_state()
        algo.save_to_path(str(tmp_path / "ckpt"))
        assert sorted(
            p.name
            for p in (tmp_path / "ckpt" / "learner_group" / "learner" / "rl_module").iterdir()
            if p.is_dir()
        ) == ["p0", "p1", SHARED_ENCODER_ID]
    finally:
        algo.stop()
    # Into a freshly built algorithm (other weights: another seed), and through
    # from_checkpoint: the same modules and optimizer moments.
    fresh = shared_encoder_vpg().debugging(seed=4).env_runners(num_env_runners=0).build()
    try:
        fresh.restore_from_path(str(tmp_path / "ckpt"))
        assert_same_learner_state(fresh.learner.get_state(), saved)
        fresh.train()  # and it trains on from there
        moved = fresh.get_module(SHARED_ENCODER_ID).get_state()
        assert not np.array_equal(
            moved["_net.0.weight"], saved["module"][f"{SHARED_ENCODER_ID}._net.0.weight"]
        )
    finally:
        fresh.stop()
    # The modules' checkpoint is the container's: RLlib's module API rebuilds it whole, its
    # forward running the shared encoder before each policy.
    container = RLModule.from_checkpoint(tmp_path / "ckpt" / "learner_group/learner/rl_module")
    assert type(container) is VPGMultiRLModuleWithSharedEncoder
    obs = torch.as_tensor(np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32))
    logits = container.forward_inference({"p1": {Columns.OBS: obs}})["p1"]
    embeddings = obs @ torch.as_tensor(saved["module"][f"{SHARED_ENCODER_ID}._net.0.weight"]).T
    embeddings += torch.as_tensor(saved["module"][f"{SHARED_ENCODER_ID}._net.0.bias"])
    head = container["p1"]._pi_head
    np.testing.assert_allclose(
        logits[Columns.ACTION_DIST_INPUTS].detach().numpy(),
        head(embeddings).detach().numpy(),
        rtol=1e-6,
    )
    algo = VPG.from_checkpoint(str(tmp_path / "ckpt"))
    try:
        assert type(algo.learner) is VPGTorchLearnerSharedOptimizer
        assert type(algo.env_runner_group.local_env_runner.module) is (
            VPGMultiRLModuleWithSharedEncoder
        )
        assert_same_learner_state(algo.learner.get_state(), saved)
    finally:
        algo.stop()


def assert_same_learner_state(state: dict, saved: dict) -> None:
    assert state["module"].keys() == saved["module"].keys()
    for key, value in saved["module"].items():
        np.testing.assert_array_equal(state["module"][key], value)
    moments = saved["optimizer"]["shared_optimizer"]["param_state"]
    restored = state["optimizer"]["shared_optimizer"]["param_state"]
    assert moments and moments.keys() == restored.keys()
    for name, entry in moments.items():
        np.testing.assert_array_equal(restored[name]["exp_avg"], entry["exp_avg"])
        np.testing.assert_array_equal(restored[name]["exp_avg_sq"], entry["exp_avg_sq"])


def test_without_a_shared_encoder_each_module_has_its_own_optimizer():
    spec = MultiRLModuleSpec(
        rl_module_specs={
            module_id: RLModuleSpec(
                module_class=VPGPolicyNoSharedEncoder,
                model_config={"embedding_dim": 8, "hidden_dim": 16},
            )
            for module_id in ("p0", "p1")
        }
    )
    algo = (
        two_policies(VPGConfig())
        .env_runners(num_env_runners=0)
        .rl_module(rl_module_spec=spec)
        .build()
    )
    try:
        learner = algo.learner
        assert list(learner._optimizers) == ["p0_default_optimizer", "p1_default_optimizer"]
        assert learner.get_optimizer("p1") is learner._optimizers["p1_default_optimizer"].optimizer
        result = algo.train()[LEARNER_RESULTS]
        assert result["p0"]["num_module_steps_trained"] > 0
        assert result[ALL_MODULES]["gradients_p0_default_optimizer_global_norm"] > 0
        with pytest.raises(ValueError, match=r"module_id='p9': this learner trains \['p0', 'p1'\]"):
            learner.register_optimizer(
                module_id="p9",
                optimizer=torch.optim.SGD(algo.learner_module("p0").parameters(), lr=0.1),
                params=list(algo.learner_module("p0").parameters()),
            )
    finally:
        algo.stop()


def test_a_container_that_runs_its_modules_together_is_refused_where_learners_are_per_module():
    assert runs_modules_together(VPGMultiRLModuleWithSharedEncoder)
    config = two_policies(PPOConfig().framework("torch")).rl_module(
        rl_module_spec=shared_encoder_spec()
    )
    with pytest.raises(
        ConfigError,
        match=r"VPGMultiRLModuleWithSharedEncoder\) runs its modules together.*VPG train the whole MultiRLModule",
    ):
        config.validate()


def test_vpg_trains_every_module_and_says_so_for_policies_to_train():
    config = shared_encoder_vpg().multi_agent(policies_to_train=["p0"])
    with pytest.raises(ConfigError, match=r"policies_to_train=\['p0'\].*trains every module"):
        config.validate()  # before any process starts


def test_weights_that_do_not_fit_one_module_change_no_module():
    algo = shared_encoder_vpg().env_runners(num_env_runners=0).build()
    try:
        before = {m: algo.get_module(m).get_state() for m in ("p0", "p1")}
        p0 = {k: v + 1.0 for k, v in before["p0"].items()}
        p1 = {k: np.zeros((3, 3), np.float32) for k in before["p1"]}  # wrong shapes
        with pytest.raises(StateError, match=r"weights\['p1'\]"):
            algo.set_weights({"p0": p0, "p1": p1})
        for module_id, state in before.items():
            after = algo.get_module(module_id).get_state()
            assert all(np.array_equal(after[k], state[k]) for k in state), module_id
    finally:
        algo.stop()
