"""RLlib's protected hooks that users override, called here where RLlib calls them: a subclass's
override takes effect when the algorithm is built and trained through the public API
(`Learner.build`, `TorchLearner._update`, `TorchLearner._get_optimizer_lr`,
`Algorithm._create_local_replay_buffer_if_necessary`, `Algorithm._run_one_training_iteration`,
`Algorithm._compile_iteration_results`, `SingleAgentEnvRunner._sample`), and `@override(Parent)`
finds each on RLlib's parent class; and an EnvRunner's own checkpoint (`save_to_path`)."""

from __future__ import annotations

from typing import Any

import pytest

from trainer import PPOConfig
from trainer.algorithms.algorithm import Algorithm, TrainIterCtx
from trainer.algorithms.dqn import DQN, DQNConfig
from trainer.algorithms.ppo import PPO
from trainer.compat.rllib_utils import override
from trainer.core.learner import Learner
from trainer.errors import NotSupported
from trainer.replay_buffers import EpisodeReplayBuffer
from trainer.runners.env_runner import SingleAgentEnvRunner

torch = pytest.importorskip("torch")

from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.torch_rl.learner import TorchLearner  # noqa: E402


def _ppo(**training: Any) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


class CountingLearner(PPOTorchLearner):
    """Overrides RLlib's learner hooks the way RLlib's examples do."""

    built = 0
    steps = 0

    @override(Learner)
    def build(self) -> None:
        super().build()
        CountingLearner.built += 1

    @override(TorchLearner)
    def _update(self, batch: dict[str, Any], **kwargs: Any) -> tuple[Any, Any, Any]:
        CountingLearner.steps += 1
        fwd_out, loss_per_module, metrics = super()._update(batch, **kwargs)
        assert set(loss_per_module) == {"default_policy"}
        return fwd_out, loss_per_module, metrics

    @staticmethod
    @override(TorchLearner)
    def _get_optimizer_lr(optimizer: Any) -> float:
        return 0.5


def test_learner_build_update_and_lr_hooks_take_effect() -> None:
    CountingLearner.built = CountingLearner.steps = 0
    algo = _ppo(learner_class=CountingLearner).build()
    try:
        assert CountingLearner.built == 1  # once, when the algorithm was built
        result = algo.train()
    finally:
        algo.stop()
    # train_batch_size=200, minibatch_size=100, one epoch: two gradient steps, each through
    # the override of RLlib's per-minibatch hook.
    assert CountingLearner.steps == 2
    learner_results = result["learners"]["default_policy"]
    assert learner_results["default_optimizer_learning_rate"] == 0.5
    assert learner_results["curr_lr"] == 0.5


class ReplayingPPO(PPO):
    made: list[Any] = []

    @override(Algorithm)
    def _create_local_replay_buffer_if_necessary(self, config: Any) -> Any:
        buffer = EpisodeReplayBuffer(capacity=1000)
        ReplayingPPO.made.append(buffer)
        return buffer


class CountingDQN(DQN):
    calls: list[str] = []

    @override(Algorithm)
    def setup(self, config: Any) -> None:
        CountingDQN.calls.append("setup")
        super().setup(config)

    @override(DQN)
    def _create_local_replay_buffer_if_necessary(self, config: Any) -> Any:
        CountingDQN.calls.append("buffer")
        return EpisodeReplayBuffer(capacity=500)


def test_the_replay_buffer_hook_makes_the_algorithms_buffer() -> None:
    ReplayingPPO.made = []
    algo = ReplayingPPO(config=_ppo())
    try:
        assert algo.local_replay_buffer is ReplayingPPO.made[0]
    finally:
        algo.stop()
    CountingDQN.calls = []
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=32, num_steps_sampled_before_learning_starts=50)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=100)
    )
    dqn = CountingDQN(config=config)
    try:
        assert CountingDQN.calls == ["setup", "buffer"]
        buffer = dqn.local_replay_buffer
        assert type(buffer) is EpisodeReplayBuffer and buffer.capacity == 500
        dqn.train()
        assert buffer.get_num_timesteps() >= 100  # the training step fills the hook's buffer
    finally:
        dqn.stop()


class IterationPPO(PPO):
    contexts: list[TrainIterCtx] = []

    @override(Algorithm)
    def _run_one_training_iteration(self) -> tuple[dict, TrainIterCtx]:
        results, ctx = super()._run_one_training_iteration()
        IterationPPO.contexts.append(ctx)
        results["my_iteration_key"] = len(IterationPPO.contexts)
        return results, ctx

    @override(Algorithm)
    def _compile_iteration_results(self, *, train_results: dict, eval_results: Any) -> dict:
        result = super()._compile_iteration_results(
            train_results=train_results, eval_results=eval_results
        )
        result["compiled_with_train_results"] = "my_iteration_key" in train_results
        return result


def test_the_training_iteration_hook_runs_each_iteration() -> None:
    IterationPPO.contexts = []
    algo = IterationPPO(config=_ppo())
    try:
        first, second = algo.train(), algo.train()
    finally:
        algo.stop()
    assert [first["my_iteration_key"], second["my_iteration_key"]] == [1, 2]
    assert first["compiled_with_train_results"] and second["compiled_with_train_results"]
    ctx = IterationPPO.contexts[-1]
    assert ctx.sampled >= 200 and ctx.time_stop is not None and ctx.time_start is not None
    assert ctx.time_stop >= ctx.time_start


class SampleCountingRunner(SingleAgentEnvRunner):
    requests: list[dict[str, Any]] = []

    @override(SingleAgentEnvRunner)
    def _sample(self, **kwargs: Any) -> list:
        SampleCountingRunner.requests.append(kwargs)
        return super()._sample(**kwargs)


def test_the_env_runners_sample_hook_does_the_sampling() -> None:
    SampleCountingRunner.requests = []
    algo = _ppo().env_runners(env_runner_cls=SampleCountingRunner).build()
    try:
        algo.train()
        runner = algo.env_runner
        assert isinstance(runner, SampleCountingRunner)
        episodes = runner.sample(num_timesteps=10, explore=False)
    finally:
        algo.stop()
    assert sum(len(e) for e in episodes) >= 10
    assert SampleCountingRunner.requests[-1] == {
        "num_timesteps": 10,
        "num_episodes": None,
        "explore": False,
        "random_actions": False,
        "force_reset": False,
    }
    # The algorithm's own sampling went through it too (RLlib fills in the fragment length).
    assert len(SampleCountingRunner.requests) >= 2
    assert SampleCountingRunner.requests[0]["num_timesteps"] is not None


def test_an_env_runner_saves_and_restores_its_own_checkpoint(tmp_path: Any) -> None:
    """RLlib's `SingleAgentEnvRunner.save_to_path` / `restore_from_path`: the runner's state
    (its module's weights among it) written on its own and taken back."""
    algo = _ppo().build()
    try:
        runner = algo.env_runner
        path = runner.save_to_path(tmp_path / "runner")
        saved = {key: value.copy() for key, value in runner.get_weights().items()}
        algo.train()  # the learner's new weights reach the runner
        assert any((runner.get_weights()[k] != saved[k]).any() for k in saved)
        runner.restore_from_path(path)
        assert all((runner.get_weights()[k] == saved[k]).all() for k in saved)
        with pytest.raises(NotSupported):
            runner.restore_from_path(path, component="rl_module")
    finally:
        algo.stop()


def test_ppos_kl_coefficient_is_adapted_through_update_module_kl_coeff() -> None:
    """RLlib's PPO learner adapts the KL coefficient in `_update_module_kl_coeff` after an
    update's epochs; a subclass's override (users' learners write their own rule) takes
    effect, on the torch and the numpy learners."""
    calls: list[tuple[str, float]] = []

    class FixedKLLearner(PPOTorchLearner):
        @override(PPOTorchLearner)
        def _update_module_kl_coeff(self, *, module_id: str, config: Any, kl_loss: float) -> None:
            calls.append((module_id, kl_loss))
            self.kl_coeff = 0.123

    algo = _ppo(use_kl_loss=True, learner_class=FixedKLLearner).build()
    try:
        result = algo.train()
        assert calls and calls[0][0] == "default_policy" and calls[0][1] >= 0.0
        assert result["learners"]["default_policy"]["curr_kl_coeff"] == 0.123
    finally:
        algo.stop()
