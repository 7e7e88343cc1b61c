"""A multi-agent PPO update runs its modules' updates side by side, each on a thread of its own
with one BLAS thread (`MultiAgentLearner`): the same results, bit for bit, as one after the
other, and a module's failure raised as it was."""

from __future__ import annotations

import numpy as np
import pytest

from trainer import PPOConfig
from trainer.algorithms import multi_agent_learner
from trainer.algorithms.multi_agent_learner import MultiAgentLearner
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole


def _config(framework: str) -> PPOConfig:
    return (
        PPOConfig()
        .framework(framework)
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *a, **kw: f"p{agent_id}"
        )
        .env_runners(num_env_runners=1)
        .training(train_batch_size=400, minibatch_size=64, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=3)
    )


def _run(framework: str, monkeypatch, *, cores: int) -> tuple[list[bool], dict, list[dict]]:
    """2 iterations with `cores` free cores; what `_side_by_side` decided, the weights and the
    learner results."""
    monkeypatch.setattr(multi_agent_learner, "free_cores", lambda: cores)
    decided: list[bool] = []
    side_by_side = MultiAgentLearner._side_by_side

    def spied(self, module_ids):
        threads = side_by_side(self, module_ids)
        decided.append(threads > 1)
        return threads

    monkeypatch.setattr(MultiAgentLearner, "_side_by_side", spied)
    with _config(framework).build() as algo:
        results = [algo.train()["learners"] for _ in range(2)]
        return decided, algo.get_weights(), results


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_side_by_side_is_one_after_the_other_to_the_bit(monkeypatch, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    decided, weights, results = _run(framework, monkeypatch, cores=2)
    assert decided == [True, True]
    alone, alone_weights, alone_results = _run(framework, monkeypatch, cores=1)
    assert alone == [False, False]
    assert sorted(weights) == sorted(alone_weights) == ["p0", "p1"]
    for module_id, module_weights in weights.items():
        for name, value in module_weights.items():
            assert np.array_equal(np.asarray(value), np.asarray(alone_weights[module_id][name])), (
                module_id,
                name,
            )
    for got, expected in zip(results, alone_results, strict=True):
        for module_id in ("p0", "p1"):
            assert got[module_id]["total_loss"] == expected[module_id]["total_loss"]
            assert got[module_id]["curr_kl_coeff"] == expected[module_id]["curr_kl_coeff"]


def test_a_module_whose_update_fails_raises_its_error(monkeypatch):
    monkeypatch.setattr(multi_agent_learner, "free_cores", lambda: 2)
    with _config("numpy").build() as algo:
        learner = algo.learner
        assert isinstance(learner, MultiAgentLearner)

        def broken(*args, **kwargs):
            raise ArithmeticError("p1's update broke")

        monkeypatch.setattr(learner.learners["p1"], "update", broken)
        with pytest.raises(ArithmeticError, match="p1's update broke"):
            algo.train()


def test_a_subclass_s_update_runs_alone(monkeypatch):
    from trainer.algorithms.ppo.ppo_learner import PPOLearner

    class MyLearner(PPOLearner):
        """A user's subclass: it overrides nothing, and still updates alone."""

    monkeypatch.setattr(multi_agent_learner, "free_cores", lambda: 2)
    with _config("numpy").build() as algo:
        learner = algo.learner
        assert learner._side_by_side(["p0", "p1"])
        assert not learner._side_by_side(["p0"])
        learner.learners["p1"].__class__ = MyLearner
        assert not learner._side_by_side(["p0", "p1"])
