"""Meta-learning with functional updates: RLlib's `TorchMetaLearner`,
`TorchDifferentiableLearner`, `DifferentiableLearnerConfig`, `TrainingData` and
`DifferentiableAlgorithmConfig` (`ray.rllib.core.learner...`), what its MAML example drives.

One `TorchMetaLearner.update(training_data=..., others_training_data=[...])`, per minibatch of
its own data:

    params = a clone of each module's parameters (a function of them)
    for each differentiable learner, with its own data:
        params = params - lr * d loss(params; its minibatch) / d params   (the graph kept)
    meta loss = the meta learner's loss of functional_call(module, params; its minibatch)
    backward through all of it -> the meta learner's optimizers step the module's parameters

The differentiable learners never change the module: they hand the updated parameters on
(`torch.func.functional_call` runs the module on them, so the module's `forward` (RLlib's
`_forward`) must hold the whole training forward pass). The meta learner is a `TorchLearner`
of a whole `MultiRLModule` (its optimizers, gradient clipping, `compute_losses` per module),
built from a spec as RLlib's: `TorchMetaLearner(config=..., module_spec=...).build()`.

Data comes as batches (`TrainingData(batch=MultiAgentBatch)`, or a dict of columns per module):
episodes, object refs and Ray Data iterators need RLlib's learner connectors and Ray, and are
refused by name when given.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable
from itertools import cycle
from typing import Any

import numpy as np
import torch

from trainer.capabilities import CHECKPOINTABLE, LEARNER_CONNECTORS, RAY_INTERNALS
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.errors import UnsupportedCall, UnsupportedSetting
from trainer.metrics import DIFFERENTIABLE_LEARNER_RESULTS
from trainer.metrics.metrics_logger import MetricsLogger
from trainer.torch_rl.learner import (
    TorchLearner,
    batch_env_steps,
    refuse_unknown_modules,
    tensor_batches,
)
from trainer.torch_rl.minibatches import TensorBatches, cyclic_minibatches
from trainer.util.rllib_members import refuse

logger = logging.getLogger("trainer")

#: Per module id, its parameters by name (a functional update's currency).
NamedParams = dict[Any, dict[str, torch.Tensor]]

__all__ = [
    "DifferentiableLearner",
    "DifferentiableLearnerConfig",
    "TorchDifferentiableLearner",
    "TorchMetaLearner",
    "TrainingData",
]


@refuse(
    "ray.rllib.core.learner.training_data.TrainingData",
    RAY_INTERNALS,
    "sharding training data over Ray learner actors and data iterators; the learners here "
    "train in one process on the whole batch",
    "shard",
)
@dataclasses.dataclass
class TrainingData:
    """RLlib's `TrainingData`: what a learner's `update` trains on. Here a `batch` (a
    `MultiAgentBatch`, or `{module_id: {column: array or tensor}}`); the other forms are
    RLlib's Ray and learner-connector paths, refused by `validate()` with what to give."""

    batch: Any = None
    batches: list | None = None
    batch_refs: list | None = None
    episodes: list | None = None
    episodes_refs: list | None = None
    data_iterators: list | None = None

    def validate(self) -> None:
        """Raises for anything but one `batch` (see the class docstring)."""
        for name, capability in (
            ("episodes", LEARNER_CONNECTORS),
            ("episodes_refs", RAY_INTERNALS),
            ("batch_refs", RAY_INTERNALS),
            ("data_iterators", RAY_INTERNALS),
        ):
            if getattr(self, name) is not None:
                raise UnsupportedCall(
                    f"TrainingData({name}=...): meta-learning here trains on batches; give "
                    "TrainingData(batch=MultiAgentBatch(...)) (or a dict of columns per "
                    "module id)",
                    capability,
                )
        if self.batches is not None:
            raise ValueError(
                "TrainingData(batches=...): a (meta-)learner's update takes one batch; give "
                "TrainingData(batch=...)"
            )
        if self.batch is None:
            raise ValueError("TrainingData(): give batch= (a MultiAgentBatch of columns)")

    def solve_refs(self) -> None:
        """RLlib's: resolves object refs into data (there are none here)."""


def _tensor_batch(training_data: TrainingData | Any, learner: TorchLearner | Any) -> TensorBatches:
    """`training_data` (or a bare batch) as tensors per module on the learner's device."""
    if not isinstance(training_data, TrainingData):
        training_data = TrainingData(batch=training_data)
    training_data.validate()
    training_data.solve_refs()
    batch = training_data.batch
    if isinstance(batch, TensorBatches):
        return batch
    per_module = getattr(batch, "policy_batches", batch)
    if not isinstance(per_module, dict) or not all(
        isinstance(columns, dict) or hasattr(columns, "keys") for columns in per_module.values()
    ):
        raise TypeError(
            f"{type(learner).__name__}.update(training_data=...): its batch must be a "
            f"MultiAgentBatch or {{module_id: {{column: array}}}}, got {type(batch).__name__}"
        )
    return tensor_batches(per_module, batch_env_steps(batch), learner.device)


def functional_forward(module: MultiRLModule, params: NamedParams, batch: dict) -> dict:
    """Each module of `batch` run on `params` (its parameters by name) instead of its own:
    `{module_id: forward output}`."""
    return {
        module_id: torch.func.functional_call(module[module_id], params[module_id], (columns,))
        for module_id, columns in batch.items()
    }


@refuse(
    "ray.rllib.core.learner.differentiable_learner_config.DifferentiableLearnerConfig",
    LEARNER_CONNECTORS,
    "a differentiable learner here trains on the batch the meta learner gives it, with no "
    "learner connector of its own",
    "build_learner_connector",
)
@dataclasses.dataclass
class DifferentiableLearnerConfig:
    """RLlib's `DifferentiableLearnerConfig`: a differentiable learner's class and its update
    (`lr`: the functional SGD step's rate; `minibatch_size`, `num_epochs`,
    `shuffle_batch_per_epoch`, `num_total_minibatches`: its minibatches of each update's
    data; `policies_to_update`: the modules it updates, default all). `learner_connector`
    and the default connector pieces act on episodes, which these learners do not take."""

    learner_class: Callable
    learner_connector: Callable | None = None
    add_default_connectors_to_learner_pipeline: bool = True
    is_multi_agent: bool = False
    policies_to_update: list | None = None
    lr: float = 3e-5
    num_total_minibatches: int = 0
    num_epochs: int = 1
    minibatch_size: int | None = None
    shuffle_batch_per_epoch: bool = False

    def update_from_kwargs(self, **kwargs: Any) -> None:
        """Sets each keyword as the attribute of its name (RLlib's)."""
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __post_init__(self) -> None:
        if not (
            isinstance(self.learner_class, type)
            and issubclass(self.learner_class, DifferentiableLearner)
        ):
            raise ValueError(
                "`learner_class` must be a subclass of `DifferentiableLearner but is "
                f"{self.learner_class}."
            )
        if self.learner_connector is not None:
            raise UnsupportedSetting(
                "DifferentiableLearnerConfig(learner_connector=...): differentiable learners "
                "here train on batches (TrainingData(batch=...)), which no learner connector "
                "reads; leave it out",
                LEARNER_CONNECTORS,
            )
        if not isinstance(self.lr, (int, float)) or isinstance(self.lr, bool) or self.lr < 0:
            raise ValueError(
                f"DifferentiableLearnerConfig(lr={self.lr!r}): a rate >= 0 (the functional "
                "SGD step's)"
            )


@refuse(
    "ray.rllib.core.learner.differentiable_learner.DifferentiableLearner",
    CHECKPOINTABLE,
    "a differentiable learner's parameters are the meta learner's module's (functional "
    "copies made for each update), which the meta learner's checkpoint holds; it has no "
    "state of its own to save",
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_state",
    "set_state",
    "from_checkpoint",
    "restore_from_path",
    "save_to_path",
    "get_metadata",
)
class DifferentiableLearner:
    """RLlib's `DifferentiableLearner`: updates a module's parameters functionally (see the
    module docstring); `TorchDifferentiableLearner` is the one framework here."""

    TOTAL_LOSS_KEY = "total_loss"
    framework: str = "torch"

    def __init__(
        self, *, config: Any, learner_config: DifferentiableLearnerConfig, module: Any = None
    ) -> None:
        self.config = config
        self.learner_config = learner_config
        #: The meta learner's MultiRLModule (set by its `build()`).
        self.module = module
        self._device: torch.device | None = None
        self._weights_seq_no = 0
        self._is_built = False
        self.metrics = MetricsLogger()
        #: The order `shuffle_batch_per_epoch` shuffles rows in.
        self._rng = np.random.default_rng(getattr(config, "seed", None))

    @property
    def device(self) -> torch.device:
        return self._device or torch.device("cpu")

    def build(self, device: Any = None) -> None:
        """Takes the meta learner's device (the module is given by the meta learner)."""
        if device is not None:
            self._device = torch.device(device)
        self._is_built = True

    def should_module_be_updated(self, module_id: Any, multi_agent_batch: Any = None) -> bool:
        """Whether `module_id` trains: the config's `policies_to_train` (all by default)."""
        to_train = getattr(self.config, "policies_to_train", None)
        if to_train is None:
            return True
        if callable(to_train):
            return bool(to_train(module_id, multi_agent_batch))
        return module_id in set(to_train)

    def update(
        self,
        params: NamedParams,
        training_data: TrainingData | Any,
        *,
        _no_metrics_reduce: bool = False,
        **kwargs: Any,
    ) -> tuple[NamedParams, dict, dict]:
        """Functional updates of `params` on `training_data`'s minibatches (its config's
        `minibatch_size`, `num_epochs`, ...): (the updated parameters, a function of
        `params`; the last minibatch's loss per module; the reduced metrics)."""
        if not self._is_built:
            raise RuntimeError(f"{type(self).__name__}.update(): call build() first")
        batch = _tensor_batch(training_data, self)
        batch = TensorBatches(
            {mid: cols for mid, cols in batch.items() if self.should_module_be_updated(mid)},
            batch.env_steps,
        )
        refuse_unknown_modules(batch, list(self.module.keys()))
        self._weights_seq_no += 1
        config = self.learner_config
        loss_per_module: dict = {}
        for minibatch in cyclic_minibatches(
            batch,
            num_epochs=config.num_epochs,
            minibatch_size=config.minibatch_size,
            shuffle_batch_per_epoch=config.shuffle_batch_per_epoch,
            num_total_minibatches=config.num_total_minibatches,
            rng=self._rng,
        ):
            _, loss_per_module, params, _ = self._update(dict(minibatch), params)
        for module_id, loss in loss_per_module.items():
            self.metrics.log_value((module_id, self.TOTAL_LOSS_KEY), loss.detach(), window=1)
        results = {} if _no_metrics_reduce else self.metrics.reduce()
        return params, loss_per_module, results

    def _update(self, batch: dict, params: NamedParams) -> tuple[dict, dict, NamedParams, dict]:
        """One functional step on a minibatch: (forward outputs, losses, new parameters, {})."""
        fwd_out = functional_forward(self.module, params, batch)
        loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=batch)
        gradients = self.compute_gradients(loss_per_module, params)
        return fwd_out, loss_per_module, self.apply_gradients(gradients, params), {}

    def compute_losses(self, *, fwd_out: dict, batch: dict) -> dict:
        """`{module_id: loss}` from `compute_loss_for_module` (use `fwd_out`: a forward pass
        made here would not run on the functional parameters)."""
        return {
            module_id: self.compute_loss_for_module(
                module_id=module_id,
                config=_config_for_module(self.config, module_id),
                batch=batch[module_id],
                fwd_out=module_out,
            )
            for module_id, module_out in fwd_out.items()
        }

    def compute_loss_for_module(
        self, *, module_id: Any, config: Any, batch: dict, fwd_out: dict
    ) -> torch.Tensor:
        """The module's loss on `batch` given `fwd_out` (override: there is no default)."""
        raise NotImplementedError(
            f"{type(self).__name__}.compute_loss_for_module: a differentiable learner "
            "defines its loss (override compute_loss_for_module)"
        )

    def compute_gradients(
        self, loss_per_module: dict, params: NamedParams, **kwargs: Any
    ) -> NamedParams:
        """The summed losses' gradients with respect to `params`, their graph kept (so a
        meta learner differentiates through them); a parameter the losses do not reach gets
        none."""
        names = [(module_id, name) for module_id, named in params.items() for name in named]
        grads = torch.autograd.grad(
            sum(loss_per_module.values()),
            [params[module_id][name] for module_id, name in names],
            create_graph=True,
            retain_graph=True,
            allow_unused=True,
        )
        gradients: NamedParams = {module_id: {} for module_id in params}
        for (module_id, name), grad in zip(names, grads, strict=True):
            if grad is not None:
                gradients[module_id][name] = grad
        return gradients

    def apply_gradients(self, gradients: NamedParams, params: NamedParams) -> NamedParams:
        """One SGD step of rate `lr` on the modules to update (`policies_to_update`): new
        parameters, functions of the old ones. A gradient with NaN or infinite values is
        zeroed where they are (with a warning), or, with the config's
        `torch_skip_nan_gradients`, the parameter keeps its value."""
        to_update = self.learner_config.policies_to_update or list(gradients)
        skip_bad = bool(getattr(self.config, "torch_skip_nan_gradients", False))
        rate = self.learner_config.lr
        updated: NamedParams = {}
        for module_id, named in params.items():
            module_grads = gradients.get(module_id, {})
            if module_id not in to_update:
                updated[module_id] = named
                continue
            updated[module_id] = {}
            for name, param in named.items():
                grad = module_grads.get(name)
                if grad is not None and not bool(torch.isfinite(grad).all()):
                    if skip_bad:
                        logger.warning("Gradients %s contain nan/inf values: not applied.", name)
                        grad = None
                    else:
                        logger.warning("Gradients %s contain nan/inf values: set to zero.", name)
                        grad = torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
                updated[module_id][name] = param if grad is None else param - rate * grad
        return updated


class TorchDifferentiableLearner(DifferentiableLearner):
    """RLlib's `TorchDifferentiableLearner` (a subclass defines `compute_loss_for_module`)."""


def to_snake_case(name: str) -> str:
    """RLlib's `to_snake_case`: "MAMLTorchDifferentiableLearner" ->
    "maml_torch_differentiable_learner" (a differentiable learner's results key)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _config_for_module(config: Any, module_id: Any) -> Any:
    for_module = getattr(config, "get_config_for_module", None)
    return for_module(module_id) if callable(for_module) else config


class TorchMetaLearner(TorchLearner):
    """RLlib's `TorchMetaLearner` (see the module docstring): a `TorchLearner` of a whole
    MultiRLModule that takes its update through its config's `differentiable_learner_configs`.
    Built as RLlib's: `TorchMetaLearner(config=..., module_spec=...)`, then `build()`."""

    def __init__(
        self,
        *,
        config: Any,
        module_spec: Any = None,
        module: Any = None,
        **kwargs: Any,
    ) -> None:
        if module_spec is None and module is None:
            raise ValueError(f"{type(self).__name__}(): give module_spec= (or module=)")
        self._init_config = config
        self._module_spec = module_spec
        self._given_module = module
        self._built = False
        configs = list(getattr(config, "differentiable_learner_configs", None) or [])
        #: The differentiable learners, in the config's order (RLlib's `others`).
        self.others: list[DifferentiableLearner] = [
            other.learner_class(config=config, learner_config=other, module=None)
            for other in configs
        ]

    def build(self) -> None:
        """Builds the MultiRLModule (an `RLModuleSpec` becomes the one module under
        `DEFAULT_MODULE_ID`), its optimizers, and the differentiable learners on it."""
        if self._built:
            return
        module = self._given_module
        if module is None:
            spec = self._module_spec
            if not isinstance(spec, MultiRLModuleSpec):
                spec = MultiRLModuleSpec(rl_module_specs={DEFAULT_MODULE_ID: spec})
            module = spec.build()
        if not isinstance(module, MultiRLModule):
            module = MultiRLModule(rl_modules={DEFAULT_MODULE_ID: module})
        TorchLearner.__init__(self, self._init_config, module)
        self._built = True
        for other in self.others:
            other.build(device=self.device)
            if other.module is None:
                other.module = self.module

    @property
    def _device(self) -> torch.device:
        """RLlib's attribute: the device the module trains on."""
        return self.device

    def _check_is_built(self) -> None:
        if not self._built:
            raise RuntimeError(f"{type(self).__name__}: call build() before update()")

    def _clone_named_parameters(self) -> NamedParams:
        """Each module's parameters, cloned (differentiable in the originals)."""
        return {
            module_id: {name: param.clone() for name, param in module.named_parameters()}
            for module_id, module in self.module.items()
        }

    def update(
        self,
        batch: Any = None,
        *,
        training_data: TrainingData | None = None,
        others_training_data: Iterable[TrainingData] | None = None,
        timesteps: dict[str, Any] | None = None,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        num_total_minibatches: int = 0,
        _no_metrics_reduce: bool = False,
        **kwargs: Any,
    ) -> dict:
        """A meta-update (see the module docstring) per minibatch of `training_data` (or
        `batch`); each differentiable learner trains on its entry of `others_training_data`
        (default: this update's data). Returns the reduced metrics: per module
        `total_loss`, and the differentiable learners' under `differentiable_learners`."""
        self._check_is_built()
        for name in ("batches", "episodes", "batch_refs", "episodes_refs", "data_iterators"):
            if kwargs.get(name) is not None:
                TrainingData(**{name: kwargs[name]}).validate()
        data = training_data if training_data is not None else TrainingData(batch=batch)
        tensors = _tensor_batch(data, self)
        refuse_unknown_modules(tensors, list(self.module.keys()))
        others_data = list(others_training_data) if others_training_data else None
        if others_data is not None and len(others_data) < len(self.others):
            raise ValueError(
                f"{type(self).__name__}.update(others_training_data=...): {len(others_data)} "
                f"entries for {len(self.others)} differentiable learners"
            )
        self.before_gradient_based_update(timesteps=timesteps or {})
        self._weights_seq_no += 1
        with self.update_threads():
            loss_per_module = self._meta_steps(
                tensors,
                data,
                others_data,
                num_epochs=num_epochs,
                minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                num_total_minibatches=num_total_minibatches,
                no_metrics_reduce=_no_metrics_reduce,
            )
        for module_id, loss in loss_per_module.items():
            self.metrics.log_value((module_id, self.TOTAL_LOSS_KEY), loss.detach(), window=1)
        self.after_gradient_based_update(timesteps=timesteps or {})
        return {} if _no_metrics_reduce else self.metrics.reduce()

    def _meta_steps(
        self,
        tensors: TensorBatches,
        data: TrainingData,
        others_data: list | None,
        *,
        no_metrics_reduce: bool,
        **minibatching: Any,
    ) -> dict:
        """The meta steps of one update, one per minibatch; the last one's losses."""
        loss_per_module: dict = {}
        for minibatch in cyclic_minibatches(
            tensors,
            rng=self._minibatch_rng,
            **minibatching,
        ):
            params = self._clone_named_parameters()
            others_loss_per_module = []
            others_results = {}
            for other, other_data in zip(self.others, others_data or cycle([data]), strict=False):
                params, other_losses, other_results = other.update(
                    params=params, training_data=other_data, _no_metrics_reduce=no_metrics_reduce
                )
                others_loss_per_module.append(other_losses)
                others_results[to_snake_case(type(other).__name__)] = other_results
            if others_results and not no_metrics_reduce:
                self.metrics.aggregate([others_results], key=DIFFERENTIABLE_LEARNER_RESULTS)
            _, loss_per_module, _ = self._update(dict(minibatch), params, others_loss_per_module)
        return loss_per_module

    def _update(  # type: ignore[override]  # RLlib's TorchMetaLearner's own signature
        self, batch: dict, params: NamedParams, others_loss_per_module: list | None = None
    ) -> tuple[dict, dict, dict]:
        """One meta step: the module run on the differentiable learners' parameters, this
        learner's losses, backward to the module's own parameters, clipped, stepped (its own
        `update` calls it; `update_from_batch` is not the meta learner's path)."""
        fwd_out = functional_forward(self.module, params, batch)
        loss_per_module = self.compute_losses(
            fwd_out=fwd_out, batch=batch, others_loss_per_module=others_loss_per_module
        )
        gradients = self.compute_gradients(loss_per_module)
        self.apply_gradients(self.postprocess_gradients(gradients))
        return fwd_out, loss_per_module, {}

    def compute_losses(
        self,
        *,
        fwd_out: dict,
        batch: Any,
        others_loss_per_module: list | None = None,
        **kwargs: Any,
    ) -> dict:
        """`{module_id: loss}` from `compute_loss_for_module`, which also gets the
        differentiable learners' losses (`others_loss_per_module`, one dict per learner)."""
        return super().compute_losses(
            fwd_out=fwd_out,
            batch=getattr(batch, "policy_batches", batch),
            others_loss_per_module=others_loss_per_module,
        )

    def compute_loss_for_module(
        self,
        *,
        module_id: Any,
        config: Any,
        batch: dict,
        fwd_out: dict,
        others_loss_per_module: list | None = None,
    ) -> torch.Tensor:
        """The module's meta loss (override: there is no default)."""
        raise NotImplementedError(
            f"{type(self).__name__}.compute_loss_for_module: a meta learner defines its loss "
            "(override compute_loss_for_module)"
        )
