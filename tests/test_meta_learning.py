"""Meta-learning with functional updates (RLlib's `TorchMetaLearner`,
`TorchDifferentiableLearner`, `DifferentiableLearnerConfig`, `TrainingData`,
`DifferentiableAlgorithmConfig`): a meta step is MAML's, second-order terms included, checked
against the same step written out in torch; bad input is refused by name; RLlib's MAML example
runs unmodified through the launcher."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from cli_in_process import run_cli
from helpers import rllib_example

from trainer import launcher
from trainer.algorithms.differentiable_config import DifferentiableAlgorithmConfig
from trainer.compat.sample_batch import MultiAgentBatch, SampleBatch
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.rl_module import RLModuleSpec
from trainer.errors import UnsupportedCall, UnsupportedSetting
from trainer.examples.algorithms.classes.maml_lr_differentiable_learner import (
    MAMLTorchDifferentiableLearner,
)
from trainer.examples.algorithms.classes.maml_lr_differentiable_rlm import (
    DifferentiableTorchRLModule,
)
from trainer.examples.algorithms.classes.maml_lr_meta_learner import MAMLTorchMetaLearner
from trainer.torch_rl.meta_learning import DifferentiableLearnerConfig, TrainingData

REPO = Path(__file__).resolve().parent.parent
INNER_LR, META_LR = 0.01, 0.001
SPACE = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)


def sine_task(rng: np.random.Generator, size: int) -> tuple[TrainingData, TrainingData]:
    """Two batches of one sine task (amplitude and phase drawn): the meta learner's and the
    inner learner's."""
    amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0.0, np.pi)
    x = rng.uniform(-5.0, 5.0, (2 * size, 1)).astype(np.float32)
    y = (amplitude * np.sin(x - phase)).astype(np.float32)

    def data(rows: slice) -> TrainingData:
        columns = {"obs": torch.from_numpy(x[rows]), "y": torch.from_numpy(y[rows])}
        return TrainingData(
            batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(columns)}, env_steps=size)
        )

    return data(slice(0, size)), data(slice(size, None))


def meta_learner(inner_lr: float = INNER_LR) -> MAMLTorchMetaLearner:
    config = (
        DifferentiableAlgorithmConfig()
        .learners(
            differentiable_learner_configs=[
                DifferentiableLearnerConfig(
                    learner_class=MAMLTorchDifferentiableLearner, minibatch_size=5, lr=inner_lr
                )
            ]
        )
        .training(lr=META_LR, train_batch_size=5, minibatch_size=5)
    )
    spec = RLModuleSpec(
        module_class=DifferentiableTorchRLModule, observation_space=SPACE, action_space=SPACE
    )
    learner = MAMLTorchMetaLearner(config=config, module_spec=spec)
    learner.build()
    return learner


def test_a_meta_step_is_mamls_second_order_step():
    """One update: the inner SGD step on the task's batch, the meta loss on the other batch
    at the adapted weights, differentiated through the inner step (second order), one Adam
    step of the meta learner's rate. The same step in plain torch gives the same weights."""
    torch.manual_seed(0)
    learner = meta_learner()
    module = learner.module[DEFAULT_MODULE_ID]
    before = {name: p.detach().clone() for name, p in module.named_parameters()}
    meta_data, task_data = sine_task(np.random.default_rng(1), 5)
    results = learner.update(
        training_data=meta_data, num_epochs=1, others_training_data=[task_data]
    )

    # By hand: theta' = theta - a * grad L_task(theta); meta loss L_meta(theta'); Adam.
    theta = {name: value.clone().requires_grad_() for name, value in before.items()}
    task, meta = task_data.batch[DEFAULT_MODULE_ID], meta_data.batch[DEFAULT_MODULE_ID]

    def loss(params, columns):
        prediction = torch.func.functional_call(module.net, _net_params(params), (columns["obs"],))
        return torch.nn.functional.mse_loss(prediction, columns["y"])

    names = list(theta)
    grads = torch.autograd.grad(loss(theta, task), [theta[n] for n in names], create_graph=True)
    adapted = {n: theta[n] - INNER_LR * g for n, g in zip(names, grads, strict=True)}
    meta_loss = loss(adapted, meta)
    meta_loss.backward()
    adam = torch.optim.Adam(list(theta.values()), lr=META_LR)
    adam.step()
    for name, param in module.named_parameters():
        torch.testing.assert_close(param.detach(), theta[name].detach(), rtol=1e-5, atol=1e-7)
    total = results[DEFAULT_MODULE_ID]["total_loss"].peek()
    assert total == pytest.approx(float(meta_loss.detach()), rel=1e-5)
    inner = results["differentiable_learners"]["maml_torch_differentiable_learner"]
    assert DEFAULT_MODULE_ID in inner

    # The second-order terms count: with them dropped (first-order MAML) the step differs.
    first_order = {n: theta_n.detach() for n, theta_n in zip(names, before.values(), strict=True)}
    first_order = {n: v.clone().requires_grad_() for n, v in first_order.items()}
    grads = torch.autograd.grad(loss(first_order, task), [first_order[n] for n in names])
    adapted = {n: first_order[n] - INNER_LR * g for n, g in zip(names, grads, strict=True)}
    loss(adapted, meta).backward()
    assert any(not torch.allclose(first_order[n].grad, theta[n].grad) for n in names), (
        "second-order terms vanished"
    )


def _net_params(params: dict) -> dict:
    """The module's parameter names (`net.0.weight`, ...) as its `net`'s own."""
    return {name.removeprefix("net."): value for name, value in params.items()}


@pytest.mark.slow
def test_meta_learning_lowers_the_loss_after_a_few_shots():
    """A thousand meta updates: fine-tuned on a new task's 5 points for 5 SGD steps, the
    meta-learned weights fit it better than the same steps from the initial weights (about
    0.67 of their error on 40 new tasks, with two seeds)."""
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    learner = meta_learner()
    module = learner.module[DEFAULT_MODULE_ID]
    initial = {name: p.detach().clone() for name, p in module.named_parameters()}
    for _ in range(1000):
        meta_data, task_data = sine_task(rng, 5)
        learner.update(training_data=meta_data, others_training_data=[task_data])
    learned = {name: p.detach().clone() for name, p in module.named_parameters()}

    def few_shot_loss(weights: dict, seed: int) -> float:
        shots, test = sine_task(np.random.default_rng(seed), 5)
        with torch.no_grad():
            for name, param in module.named_parameters():
                param.copy_(weights[name])
        optimizer = torch.optim.SGD(module.parameters(), lr=0.01)
        for _ in range(5):
            columns = shots.batch[DEFAULT_MODULE_ID]
            loss = torch.nn.functional.mse_loss(module(columns)["y_pred"], columns["y"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        columns = test.batch[DEFAULT_MODULE_ID]
        with torch.no_grad():
            return float(torch.nn.functional.mse_loss(module(columns)["y_pred"], columns["y"]))

    seeds = range(100, 140)
    meta = np.mean([few_shot_loss(learned, seed) for seed in seeds])
    plain = np.mean([few_shot_loss(initial, seed) for seed in seeds])
    assert meta < 0.8 * plain, (meta, plain)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="learner_class"):
        DifferentiableLearnerConfig(learner_class=MAMLTorchMetaLearner)
    with pytest.raises(UnsupportedSetting, match="learner_connector"):
        DifferentiableLearnerConfig(
            learner_class=MAMLTorchDifferentiableLearner, learner_connector=lambda *a: []
        )
    with pytest.raises(ValueError, match=r"lr=-1"):
        DifferentiableLearnerConfig(learner_class=MAMLTorchDifferentiableLearner, lr=-1)
    with pytest.raises(ValueError, match="differentiable_learner_configs"):
        DifferentiableAlgorithmConfig().learners(differentiable_learner_configs=[object()])
    learner = meta_learner()
    with pytest.raises(UnsupportedCall, match="episodes"):
        learner.update(training_data=TrainingData(episodes=[]))
    meta_data, _ = sine_task(np.random.default_rng(0), 5)
    other = TrainingData(
        batch=MultiAgentBatch({"other": meta_data.batch[DEFAULT_MODULE_ID]}, env_steps=5)
    )
    with pytest.raises(ValueError, match="not in this Learner"):
        learner.update(training_data=other)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rllibs_maml_example_runs_through_the_launcher(tmp_path):
    """RLlib's `maml_lr_supervised_learning.py`, unmodified, with its CI arguments but fewer
    meta iterations: it meta-trains, then fine-tunes on a new task's points."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path))
    env.pop(launcher.ENV_VAR, None)
    relative = "algorithms/maml_lr_supervised_learning.py"
    script = rllib_example(relative)
    sys.path.insert(0, str(REPO))
    try:
        from bench.rllib_example_args import CI_ARGS
    finally:
        sys.path.remove(str(REPO))
    ((_, ci_arguments, _),) = CI_ARGS[relative]
    arguments = [
        "--stop-iters=1000" if argument.startswith("--stop-iters=") else argument
        for argument in ci_arguments
    ]
    # `python -m trainer run SCRIPT`, in this process (tests/cli_in_process.py).
    done = run_cli("run", str(script), *arguments, cwd=tmp_path, env=env, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Iteration: 1000" in done.stdout
    losses = [
        float(line.split(":")[1]) for line in done.stdout.splitlines() if "Few shot loss" in line
    ]
    # Each loss is measured on one random task the example draws unseeded: single values are
    # noisy (a first one of 0.09 against a last of 0.19 was seen), so the halves' means are
    # compared.
    assert len(losses) == 10 and sum(losses[5:]) < sum(losses[:5]), losses
