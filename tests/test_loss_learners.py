"""The generic learners of a loss function (`trainer.algorithms.loss_learner`, numpy, and
`trainer.algorithms.torch_loss_learner`, torch), and the shape they give an algorithm: a new
algorithm with numpy and torch learners is its config (settings and `AlgorithmClasses`), its
loss (numpy and torch side by side), its Algorithm (`training_step`), its package's entry and
its modules, and nothing else; the base Algorithm builds its learners and modules from the
classes its config names.

`TOY` is such an algorithm (REINFORCE on PPO's default numpy and torch modules, which it
reuses, as IMPALA and MARWIL train PPO's): four files, written to a temporary folder and
imported from there.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from trainer.compat.rllib_utils import Columns
from trainer.metrics import LEARNER_RESULTS

try:
    import torch
except ImportError:  # the torch extra is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the torch extra)")

#: The toy algorithm's package, file by file.
TOY: dict[str, str] = {
    "__init__.py": """
        from trainer.algorithms.registry import AlgorithmEntry
        from toy_pg.config import ToyPGConfig
        from toy_pg.toy_pg import ToyPG

        ALGORITHM = AlgorithmEntry(name="ToyPG", algorithm_cls=ToyPG, config_cls=ToyPGConfig)
    """,
    "config.py": """
        from trainer.algorithms.algorithm_config import AlgorithmConfig
        from trainer.algorithms.config.classes import AlgorithmClasses
        from trainer.util.import_paths import resolve_import_path

        CLASSES = AlgorithmClasses(
            numpy_learner="trainer.algorithms.loss_learner:LossNumpyLearner",
            torch_learner="trainer.algorithms.torch_loss_learner:LossTorchLearner",
            numpy_module="trainer.algorithms.ppo.module:PolicyModule",
            torch_module="trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule",
            numpy_loss="toy_pg.loss:numpy_loss",
            torch_loss="toy_pg.loss:torch_loss",
            episode_columns="toy_pg.loss:episode_columns",
        )


        class ToyPGConfig(AlgorithmConfig):
            _CLASSES = CLASSES
            _DEFAULT_OVERRIDES = {
                "batch_mode": "complete_episodes",
                "num_env_runners": 0,
                "train_batch_size": 200,
                "lr": 0.01,
            }

            def __init__(self, algo_class=None):
                super().__init__(algo_class or resolve_import_path("toy_pg.toy_pg:ToyPG"))
    """,
    "loss.py": """
        import numpy as np

        from trainer.compat.rllib_utils import Columns


        def episode_columns(episode, config):
            rewards = np.asarray(episode.get_rewards(), dtype=np.float32)
            discounts = config.gamma ** np.arange(len(rewards))
            returns = np.cumsum((rewards * discounts)[::-1])[::-1] / discounts
            return {Columns.RETURNS_TO_GO: returns.astype(np.float32)}


        def numpy_loss(batch, module, config):
            dist_inputs, values, cache = module.forward_train(batch[Columns.OBS])
            terms = module.dist.loss_grads(dist_inputs, batch[Columns.ACTIONS], dist_inputs)
            G = batch[Columns.RETURNS_TO_GO].astype(dist_inputs.dtype)
            loss = -float(np.mean(terms.logp * G))
            d_inputs = -(G / len(G))[:, None] * terms.d_logp
            module.backward(cache, d_inputs.astype(dist_inputs.dtype), np.zeros_like(values))
            return loss, {"mean_return_to_go": float(G.mean())}


        def torch_loss(batch, fwd_out, config, *, action_dist_class):
            import torch

            pi = action_dist_class.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
            G = batch[Columns.RETURNS_TO_GO]
            loss = -torch.mean(pi.logp(batch[Columns.ACTIONS]) * G)
            return loss, {"mean_return_to_go": G.mean()}
    """,
    "toy_pg.py": """
        from trainer.algorithms.algorithm import Algorithm
        from trainer.core.models import DEFAULT_MODULE_ID
        from trainer.metrics import (
            ENV_RUNNER_RESULTS,
            LEARNER_RESULTS,
            NUM_ENV_STEPS_SAMPLED_LIFETIME,
        )
        from toy_pg.config import ToyPGConfig


        class ToyPG(Algorithm):
            @classmethod
            def get_default_config(cls):
                return ToyPGConfig()

            def training_step(self):
                episodes, runner_metrics = self.env_runner_group.sample(
                    min_env_steps=self.config.train_batch_size
                )
                self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
                steps = sum(map(len, episodes))
                self.metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum")
                results = self.learner.update(
                    episodes, num_env_steps_sampled_lifetime=self.num_env_steps_sampled_lifetime
                )
                self.metrics.log_dict(results, key=(LEARNER_RESULTS, DEFAULT_MODULE_ID), window=1)
                self.sync_weights()
    """,
}


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy algorithm's package, importable as `toy_pg`."""
    package = tmp_path / "toy_pg"
    package.mkdir()
    for name, source in TOY.items():
        (package / name).write_text(textwrap.dedent(source).lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "toy_pg" or m.startswith("toy_pg.")]:
        monkeypatch.delitem(sys.modules, name)
    import toy_pg

    yield toy_pg
    for name in [m for m in sys.modules if m == "toy_pg" or m.startswith("toy_pg.")]:
        sys.modules.pop(name, None)


def _trains(config) -> tuple[object, dict]:
    """One iteration of `config` on CartPole: the learner, the learner's results; the weights
    changed."""
    algo = config.environment("CartPole-v1").debugging(seed=0).build()
    try:
        before = algo.get_weights()
        result = algo.train()
        after = algo.get_weights()
        assert any(not np.array_equal(before[k], after[k]) for k in before)
        return algo.learner, result[LEARNER_RESULTS]["default_policy"]
    finally:
        algo.stop()


def test_the_numpy_learner_runs_the_configs_numpy_loss(toy):
    from trainer.algorithms.loss_learner import LossNumpyLearner

    learner, stats = _trains(toy.ToyPGConfig())
    assert type(learner) is LossNumpyLearner
    assert {"total_loss", "mean_return_to_go", "curr_lr", "num_env_steps_trained"} <= set(stats)
    assert stats["mean_return_to_go"] > 0  # CartPole pays 1 a step


def test_the_numpy_loss_is_minus_the_mean_of_log_pi_times_the_return(toy):
    config = toy.ToyPGConfig().environment("CartPole-v1").debugging(seed=0)
    algo = config.build()
    try:
        episodes = algo.env_runner.sample(num_episodes=2)
        batch = algo.learner.build_train_batch(episodes)
        assert len(batch[Columns.ACTIONS]) == sum(map(len, episodes))
        module = algo.learner.module
        logits = module.dist_inputs(batch[Columns.OBS]).astype(np.float64)
        log_pi = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        log_pi_a = log_pi[np.arange(len(logits)), batch[Columns.ACTIONS].astype(int)]
        expected = -np.mean(log_pi_a * batch[Columns.RETURNS_TO_GO])
        loss, _ = toy.loss.numpy_loss(batch, module, algo.config)
        assert loss == pytest.approx(expected, rel=1e-5)
    finally:
        algo.stop()


@needs_torch
def test_the_torch_learner_runs_the_configs_torch_loss(toy):
    from trainer.algorithms.torch_loss_learner import LossTorchLearner

    learner, stats = _trains(toy.ToyPGConfig().framework("torch"))
    assert type(learner) is LossTorchLearner
    assert {"total_loss", "mean_return_to_go", "curr_lr", "num_env_steps_trained"} <= set(stats)


def test_a_config_without_a_loss_is_refused_by_the_generic_learners(toy):
    from trainer.algorithms.loss_learner import LossNumpyLearner
    from trainer.algorithms.ppo import PPOConfig

    with pytest.raises(TypeError, match=r"PPOConfig names no loss for it"):
        LossNumpyLearner(PPOConfig(), None, module=object())


def test_the_toy_is_four_files_and_two_modules_it_reuses(toy):
    """An algorithm in this shape: the entry, the config, the loss and the Algorithm (and its
    numpy and torch modules, here PPO's: with its own, six files)."""
    assert sorted(TOY) == ["__init__.py", "config.py", "loss.py", "toy_pg.py"]
    classes = toy.ALGORITHM.classes
    assert classes.numpy_module and classes.torch_module
    config = toy.ToyPGConfig()
    assert config.algo_class is toy.ALGORITHM.algorithm_cls
    assert config.get_default_learner_class().__name__ == "LossNumpyLearner"
