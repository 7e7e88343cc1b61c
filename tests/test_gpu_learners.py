"""Every torch learner on a GPU: `learners(num_gpus_per_learner=1)` puts the learner's modules on
CUDA and trains what the CPU trains.

Each torch case of tests/bit_identical_cases.py (PPO, DQN, SAC, IMPALA, APPO, VPG, BC, MARWIL,
CQL, IQL; single- and multi-agent; sampling here and in an EnvRunner process) runs again with a
GPU learner: every trained module's parameters are on the GPU while the EnvRunners' copies stay
on the CPU, and the trained weights, the optimizers' moments and the counters equal the CPU
recording within a float tolerance (float32 sums run in another order on the GPU: on an H200
the largest difference of any array was 4.7e-6, APPO's). The modules' random draws come from
the CPU generator (`trainer.torch_rl.draws`), so SAC's, CQL's and IQL's runs follow the CPU's
too. TQC and DreamerV3, which have no recorded case, train an iteration on the GPU and save
and restore there; a GPU SAC run resumes exactly.

Skipped on a machine without CUDA (CI has none); run on a machine with a GPU:
`python -m pytest -m "slow or not slow" tests/test_gpu_learners.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bit_identical_cases import CASES, case_module_ids, load, run_case

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device (GPU learners)"
)

#: Float arrays (weights, Adam moments) against the CPU recording.
RTOL = 1e-4
ATOL = 5e-5

TORCH_CASES = [name for name in CASES if "torch" in name]


def _on_gpu(config: Any) -> Any:
    return config.learners(num_gpus_per_learner=1)


def _devices(module: Any) -> set[str]:
    torch_module = getattr(module, "rl_module", module)
    return {parameter.device.type for parameter in torch_module.parameters()}


def _learner_on_gpu_runners_on_cpu(config_case: str) -> Any:
    def check(algo: Any) -> None:
        for module_id in case_module_ids(algo.config):
            assert _devices(algo.learner_module(module_id)) == {"cuda"}, module_id
        runner_devices = algo.env_runner_group.foreach_env_runner(
            lambda runner: sorted(
                device for module in _runner_modules(runner) for device in _devices(module)
            ),
            local_env_runner=algo.env_runner_group.num_remote_workers() == 0,
        )
        assert all(set(devices) <= {"cpu"} for devices in runner_devices), (
            config_case,
            runner_devices,
        )

    return check


def _runner_modules(runner: Any) -> list[Any]:
    module = getattr(runner, "module", None)
    if module is None:
        return []
    if hasattr(module, "keys") and not hasattr(module, "parameters"):  # a multi-agent module
        return [module[module_id] for module_id in module.keys()]
    return [module]


def _outside(want: np.ndarray, got: np.ndarray) -> tuple[int, float]:
    """The number of elements outside RTOL/ATOL, and the largest absolute difference."""
    difference = np.abs(got.astype(np.float64) - want.astype(np.float64))
    outside = difference > ATOL + RTOL * np.abs(want.astype(np.float64))
    return int(outside.sum()), float(difference.max(initial=0.0))


@pytest.mark.slow
@pytest.mark.parametrize("case", TORCH_CASES)
def test_a_gpu_learner_trains_the_cpu_weights(case):
    expected, _ = load(case)
    actual = run_case(case, configure=_on_gpu, after_training=_learner_on_gpu_runners_on_cpu(case))
    assert sorted(actual) == sorted(expected)
    problems = []
    worst = 0.0
    for key in sorted(expected):
        want, got = expected[key], np.asarray(actual[key])
        assert got.shape == want.shape, key
        if want.dtype.kind != "f":
            if not np.array_equal(want, got):
                problems.append(f"{key}: {got.ravel()[:4]} against {want.ravel()[:4]}")
            continue
        outside, difference = _outside(want, got)
        worst = max(worst, difference)
        if outside:
            problems.append(f"{key}: {outside} of {want.size} apart by up to {difference:.3g}")
    print(f"{case}: largest difference from the CPU recording {worst:.3g}")
    assert not problems, f"{case}: " + "; ".join(problems)


def _train_save_restore(config: Any, tmp_path: Any) -> None:
    from trainer import Algorithm

    algo = config.learners(num_gpus_per_learner=1).build()
    try:
        result = algo.train()
        assert _devices(algo.learner_module()) == {"cuda"}
        losses = result["learners"]["default_policy"]
        assert all(np.isfinite(value) for value in losses.values() if isinstance(value, float))
        path = algo.save_to_path(tmp_path / "checkpoint")
        weights = {
            name: value.detach().cpu().clone()
            for name, value in algo.learner_module().state_dict().items()
        }
    finally:
        algo.stop()
    again = Algorithm.from_checkpoint(path)
    try:
        assert _devices(again.learner_module()) == {"cuda"}
        restored = again.learner_module().state_dict()
        for name, value in weights.items():
            assert torch.equal(restored[name].detach().cpu(), value), name
        again.train()
    finally:
        again.stop()


@pytest.mark.slow
def test_tqc_learns_on_the_gpu_and_restores_there(tmp_path):
    from trainer import TQCConfig

    config = (
        TQCConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=1)
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
        .reporting(min_sample_timesteps_per_iteration=128)
        .debugging(seed=0)
    )
    _train_save_restore(config, tmp_path)


@pytest.mark.slow
def test_dreamerv3_learns_on_the_gpu_and_restores_there(tmp_path):
    from trainer import DreamerV3Config

    config = (
        DreamerV3Config()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(model_size="nano", batch_size_B=4, batch_length_T=8, horizon_H=5)
        .debugging(seed=3)
    )
    _train_save_restore(config, tmp_path)


def test_a_draw_on_the_gpu_is_the_cpus():
    """The module's draws (trainer.torch_rl.draws) on CUDA parameters are the numbers the CPU
    draws for the same seed and parameters."""
    from trainer.torch_rl.draws import draw, uniform

    loc, scale = torch.tensor([[0.5, -1.0], [2.0, 0.1]]), torch.tensor([[1.5, 0.2], [0.3, 2.0]])
    logits = torch.tensor([[0.1, 2.0, -1.0], [0.0, 0.0, 3.0]])
    makers = {
        "normal": lambda device: torch.distributions.Normal(loc.to(device), scale.to(device)),
        "categorical": lambda device: torch.distributions.Categorical(logits=logits.to(device)),
        "one-hot": lambda device: torch.distributions.OneHotCategorical(logits=logits.to(device)),
    }

    def seeded(device: str, name: str, reparameterized: bool) -> Any:
        torch.manual_seed(5)
        torch.cuda.manual_seed(6)  # (a draw on the CUDA generator would differ)
        sample = draw(makers[name](device), torch.Size([64]), reparameterized=reparameterized)
        assert sample.device.type == device
        return sample.cpu()

    for name in makers:
        for reparameterized in [False, True] if name == "normal" else [False]:
            cpu, gpu = seeded("cpu", name, reparameterized), seeded("cuda", name, reparameterized)
            torch.testing.assert_close(gpu, cpu, rtol=1e-6, atol=1e-6)
    torch.manual_seed(5)
    on_cpu = uniform((8, 3), torch.float32, "cpu")
    torch.manual_seed(5)
    assert torch.equal(uniform((8, 3), torch.float32, "cuda").cpu(), on_cpu)


@pytest.mark.slow
def test_sac_on_the_gpu_resumes_exactly(tmp_path):
    """A GPU learner's checkpoint holds every state its next update depends on (the draws come
    from the learner's own CPU generator state): the resumed run trains the weights the
    uninterrupted one trains."""
    from trainer import Algorithm

    config = _on_gpu(CASES["sac_single_torch_worker"]())
    algo = config.training(store_buffer_in_checkpoints=True).build()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
        algo.train()
        expected = algo.learner_module().get_state()
    finally:
        algo.stop()
    resumed = Algorithm.from_checkpoint(path)
    try:
        assert _devices(resumed.learner_module()) == {"cuda"}
        resumed.train()
        got = resumed.learner_module().get_state()
    finally:
        resumed.stop()
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, atol=1e-7, err_msg=name)
