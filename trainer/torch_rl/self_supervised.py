"""Learner-only modules with a loss of their own (RLlib's `SelfSupervisedLossAPI`), trained on
the learner beside the module the algorithm trains.

    rl_module(rl_module_spec=MultiRLModuleSpec({
        "default_policy": RLModuleSpec(...),                       # the policy: EnvRunners too
        "icm": RLModuleSpec(module_class=..., learner_only=True),  # the learner only
    }))
      -> the EnvRunners build the default module alone
      -> the learner builds each learner-only module and a `SelfSupervisedLearner` for it
         (its own optimizer, at the rate of its `algorithm_config_overrides_per_module` entry)
      -> after each gradient step of the default module on a minibatch, one step of each
         learner-only module on the same minibatch: `forward_train(minibatch)`, then
         `compute_self_supervised_loss(learner=, module_id=, config=, batch=, fwd_out=)`

RLlib's learner trains such a module when a learner connector piece puts a batch for it into
the train batch (its curiosity example copies the policy's batch there); the learners here make
their batch themselves, so a learner-only module trains on every minibatch of the default
module, which then also holds `Columns.NEXT_OBS` (the observation after each step). Learner
pieces reach the modules by id through `ModulesById` (RLlib's `rl_module[module_id]`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from trainer.core.apis import SelfSupervisedLossAPI
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.torch_rl.learner import TorchLearner
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.torch_rl.runner_view import build_torch_module_from_spec
from trainer.util.seeding import module_seed


class ModulesById(Mapping):
    """The modules of a learner by id (RLlib's MultiRLModule, as its learner pieces and losses
    reach them: `learner.module[module_id]`, `rl_module[module_id]`)."""

    def __init__(self, modules: dict[str, TorchRLModule]) -> None:
        self._modules = modules

    def __getitem__(self, module_id: str) -> TorchRLModule:
        try:
            return self._modules[module_id]
        except KeyError:
            raise KeyError(
                f"no module {module_id!r} on this learner (modules: {sorted(self._modules)})"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


class SelfSupervisedLearner(TorchLearner):
    """Trains one learner-only module by its own loss: `compute_loss_for_module` is the
    module's `compute_self_supervised_loss`. Its config is the algorithm's with the module's
    overrides applied (`get_config_for_module`): its `lr`, `grad_clip`, `optimizer`."""

    algorithm_name = "self-supervised module"

    def __init__(self, config: Any, module: TorchRLModule, *, module_id: str, modules: Any):
        """`modules`: every module of the learner by id (`ModulesById`), this one included."""
        if not isinstance(module, SelfSupervisedLossAPI):
            raise TypeError(
                f"learner-only module {module_id!r} ({type(module).__name__}) must implement "
                "SelfSupervisedLossAPI (compute_self_supervised_loss): a learner-only module "
                "trains by its own loss here"
            )
        super().__init__(config.get_config_for_module(module_id), module, module_id=module_id)
        #: RLlib's `learner.module`: every module by id (losses read `module[module_id]`).
        self.module = modules

    def update(
        self, data: Any, /, *, num_env_steps_sampled_lifetime: int | None = None
    ) -> dict[str, Any]:
        """One gradient step on `data`, a batch of columns (numpy arrays or tensors: what the
        module's `forward_train` and loss read, e.g. `Columns.OBS`, `Columns.NEXT_OBS`,
        `Columns.ACTIONS`), at the rate the module's `lr` schedule gives; its results."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        with self.update_threads():
            return self.step(data)

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        module: Any = self.rl_module
        return module.compute_self_supervised_loss(
            learner=self, module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


def build_learner_only_learners(
    config: Any, main_module: TorchRLModule, seed: int | None
) -> dict[str, SelfSupervisedLearner]:
    """A `SelfSupervisedLearner` for each learner-only module of the config
    (`learner_only_module_specs()`), each built for the default module's spaces unless its
    spec names its own, its weights seeded from `seed` and its id."""
    specs = config.learner_only_module_specs()
    modules: dict[str, TorchRLModule] = {DEFAULT_MODULE_ID: main_module}
    for module_id, spec in specs.items():
        spec = copy.copy(spec)
        spec.observation_space = spec.observation_space or main_module.observation_space
        spec.action_space = spec.action_space or main_module.action_space
        view = build_torch_module_from_spec(spec, seed=module_seed(seed, module_id))
        modules[module_id] = view.rl_module
    by_id = ModulesById(modules)
    return {
        module_id: SelfSupervisedLearner(
            config, modules[module_id], module_id=module_id, modules=by_id
        )
        for module_id in specs
    }
