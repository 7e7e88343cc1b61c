"""torch's optimizers stepped without importing `torch._dynamo` (`trainer.torch_rl.dynamo_free`):
a torch learner's run never imports the compiler, and each step is torch's own, to the bit,
hooks included; once a script imports the compiler, torch's own wrappers take over."""

from __future__ import annotations

import pytest
from helpers import run_code

torch = pytest.importorskip("torch")

from trainer.torch_rl import dynamo_free  # noqa: E402
from trainer.torch_rl.dynamo_free import optimizer_step  # noqa: E402


@pytest.mark.slow
def test_a_torch_sac_run_with_a_checkpoint_and_restore_never_imports_the_compiler(tmp_path):
    output = run_code(
        f"""
        import math, sys
        from trainer import SACConfig

        config = (
            SACConfig()
            .environment("Pendulum-v1")
            .framework("torch")
            .env_runners(num_env_runners=1, rollout_fragment_length=50)
            .training(train_batch_size=32, num_steps_sampled_before_learning_starts=64)
            .rl_module(model_config={{"fcnet_hiddens": [16, 16]}})
            .debugging(seed=0)
        )
        with config.build() as algo:
            for _ in range(3):
                result = algo.train()
            algo.save({str(tmp_path)!r})
            losses = result["learners"]["default_policy"]
        with config.build() as restored:
            restored.restore({str(tmp_path)!r})
            restored.train()
        print(all(math.isfinite(v) for k, v in losses.items() if "loss" in k))
        print("torch._dynamo" in sys.modules)
        """
    )
    assert output == ["True", "False"]


def _net(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


OPTIMIZERS = {
    "Adam": lambda params: torch.optim.Adam(params, lr=1e-2),
    "Adam foreach": lambda params: torch.optim.Adam(params, lr=1e-2, foreach=True),
    "Adam fused": lambda params: torch.optim.Adam(params, lr=1e-2, fused=True),
    "AdamW": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1),
    "SGD momentum": lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9),
    "RMSprop": lambda params: torch.optim.RMSprop(params, lr=1e-3),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_step_is_torch_s_own_to_the_bit(monkeypatch, name):
    # (In this process another test may have imported the compiler: the path that steps
    # without it is taken anyway, as in a process that never imported it.)
    monkeypatch.setattr(dynamo_free, "compiler_imported", lambda: False)
    nets = [_net(0), _net(0)]
    optimizers = [OPTIMIZERS[name](net.parameters()) for net in nets]
    inputs = torch.randn(8, 5, generator=torch.Generator().manual_seed(1))
    for _ in range(4):
        for net, optimizer in zip(nets, optimizers, strict=True):
            optimizer.zero_grad()
            net(inputs).pow(2).sum().backward()
        optimizers[0].step()
        optimizer_step(optimizers[1])
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        assert torch.equal(a, b)
    states = [optimizer.state_dict()["state"] for optimizer in optimizers]
    for key, state in states[0].items():
        for field, value in state.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(states[1][key][field]))


def test_step_hooks_run_as_torch_runs_them(monkeypatch):
    monkeypatch.setattr(dynamo_free, "compiler_imported", lambda: False)
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    calls: list[tuple[str, int]] = []
    optimizers = [torch.optim.SGD(_net(0).parameters(), lr=0.1) for _ in range(2)]
    handles = []
    for index, optimizer in enumerate(optimizers):
        handles.append(
            optimizer.register_step_pre_hook(lambda o, a, k, i=index: calls.append(("pre", i)))
        )
        handles.append(
            optimizer.register_step_post_hook(lambda o, a, k, i=index: calls.append(("post", i)))
        )
    handles.append(
        register_optimizer_step_pre_hook(
            lambda o, a, k: calls.append(("global pre", optimizers.index(o)))
        )
    )
    handles.append(
        register_optimizer_step_post_hook(
            lambda o, a, k: calls.append(("global post", optimizers.index(o)))
        )
    )
    try:
        optimizers[0].step()
        torch_order = [event for event, _ in calls]
        calls.clear()
        optimizer_step(optimizers[1])
        assert [event for event, _ in calls] == torch_order
        assert torch_order == ["global pre", "pre", "post", "global post"]
        assert {index for _, index in calls} == {1}
    finally:
        for handle in handles:
            handle.remove()


def test_a_pre_hook_that_returns_something_else_is_refused_as_torch_refuses_it(monkeypatch):
    monkeypatch.setattr(dynamo_free, "compiler_imported", lambda: False)
    optimizer = torch.optim.SGD(_net(0).parameters(), lr=0.1)
    optimizer.register_step_pre_hook(lambda o, a, k: "not a pair")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        optimizer_step(optimizer)


@pytest.mark.slow
def test_once_the_compiler_is_imported_torch_s_own_wrappers_take_over():
    output = run_code(
        """
        import sys
        import torch
        from trainer.torch_rl.dynamo_free import optimizer_step, skip_until_compiler_imported

        net = torch.nn.Linear(3, 2)
        skip_until_compiler_imported()
        optimizer = torch.optim.Adam(net.parameters(), lr=0.1)
        zero_grad = torch.optim.Optimizer.zero_grad.__wrapped__
        net(torch.ones(1, 3)).sum().backward()
        optimizer_step(optimizer)
        optimizer.zero_grad()
        print("torch._dynamo" in sys.modules)
        print(getattr(zero_grad, "__dynamo_disable").__qualname__)

        import torch._dynamo  # a script compiles something
        net(torch.ones(1, 3)).sum().backward()
        optimizer_step(optimizer)
        optimizer.zero_grad()
        print(getattr(zero_grad, "__dynamo_disable").__qualname__ != "_twin_of.<locals>.twin")
        """
    )
    assert output == ["False", "_twin_of.<locals>.twin", "True"]


def test_a_torch_lr_scheduler_sees_its_optimizer_stepped(monkeypatch):
    monkeypatch.setattr(dynamo_free, "compiler_imported", lambda: False)
    import warnings

    nets = [_net(0), _net(0)]
    optimizers = [torch.optim.Adam(net.parameters(), lr=0.1) for net in nets]
    schedulers = [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in optimizers]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (torch warns of a scheduler stepped first)
        for _ in range(3):
            for net, optimizer in zip(nets, optimizers, strict=True):
                optimizer.zero_grad()
                net(torch.ones(2, 5)).sum().backward()
            optimizers[0].step()
            optimizer_step(optimizers[1])
            for scheduler in schedulers:
                scheduler.step()
    assert optimizers[1]._opt_called
    assert [s.get_last_lr() for s in schedulers] == [[0.0125], [0.0125]]
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        assert torch.equal(a, b)


def test_another_wrapper_of_the_instance_s_step_is_called(monkeypatch):
    monkeypatch.setattr(dynamo_free, "compiler_imported", lambda: False)
    optimizer = torch.optim.SGD(_net(0).parameters(), lr=0.1)
    calls = []
    step = optimizer.step
    optimizer.step = lambda *a, **k: calls.append("wrapped") or step(*a, **k)
    optimizer_step(optimizer)
    assert calls == ["wrapped"]
