"""The `Learner` interface: what an algorithm's learner is to the rest of the trainer, and its
numpy backend (`NumpyLearner`; the torch backend is `trainer.torch_rl.learner.TorchLearner`).

One learner per module, in the driver process (a multi-agent run holds one per module in a
`trainer.algorithms.multi_agent_learner.MultiAgentLearner`; several learner processes are out of
scope here). It owns `module` (the network whose weights every EnvRunner samples with:
`get_weights()`), `optimizer`, and the update rule. `Algorithm` reaches it only through this
interface: `update(...)` in its training step (a round of updates inside `update_threads()`,
the thread pools' sizes), the state methods for checkpoints (weights and optimizer moments),
`get_weights()` / `set_weights()` for the EnvRunners.

An algorithm writes its loss once per backend: for numpy a `NumpyLearner` subclass computes
the loss and the module's gradient and calls `apply_gradients`; for torch a `TorchLearner`
subclass implements `compute_loss_for_module`. Optimizer, learning-rate schedule, gradient
clipping, the finite check and the state of module and optimizer are the backends'.
"""

from __future__ import annotations

import importlib
import os
import platform
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from trainer.capabilities import CHECKPOINTABLE, LEARNER_CONNECTORS, TORCH
from trainer.core.allreduce import SharedMemoryAllReduce, TcpAllReduce
from trainer.core.blas import BlasThreads
from trainer.core.learner_components import Names, own_learner_state, rllib_learner_state
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.nn import Adam, check_finite_update, clip_gradients
from trainer.core.schedules import Schedule
from trainer.util.rllib_members import refuse
from trainer.util.state_checks import require_map

#: What `Learner.update` returns: statistic name -> value. Each is a float, except per-row
#: arrays that the algorithm takes out before logging them (DQN's TD errors under
#: `trainer.metrics.TD_ERROR_KEY`, as in RLlib's learner results).
UpdateResults = dict[str, float | np.ndarray]

#: RLlib's `SMALL_NUMBER`, in its explained variance.
SMALL_NUMBER = 1e-6
_sum = np.add.reduce


def variance(x: np.ndarray) -> float:
    """The (biased) variance of a 1-D array, through two ufunc calls (np.var's wrappers cost
    more where it runs once per minibatch)."""
    centered = x - _sum(x) / len(x)
    return float(np.dot(centered, centered)) / len(x)


def explained_variance(targets: np.ndarray, values: np.ndarray) -> float:
    """RLlib's `torch_utils.explained_variance` in numpy: max(-1, 1 - var(y - v) /
    (var(y) + 1e-6)) with unbiased variances (NaN for one row, as torch's)."""
    n = len(targets)
    if n < 2:
        return float("nan")
    unbiased = n / (n - 1)
    residual_var = variance(targets - values) * unbiased
    return max(-1.0, 1.0 - residual_var / (variance(targets) * unbiased + SMALL_NUMBER))


#: RLlib's names (`ray.rllib.core.learner.learner`): the optimizer a learner registers when it
#: registers one (`TorchLearner.register_optimizer`), and common result keys.
DEFAULT_OPTIMIZER = "default_optimizer"
POLICY_LOSS_KEY = "policy_loss"
VF_LOSS_KEY = "vf_loss"
ENTROPY_KEY = "entropy"
LR_KEY = "learning_rate"
#: RLlib's learner-result key of the default optimizer's learning rate, which its learners log
#: after every update (`Learner.after_gradient_based_update`); this project's learners report it
#: beside their older `curr_lr`.
DEFAULT_OPTIMIZER_LR_KEY = f"{DEFAULT_OPTIMIZER}_{LR_KEY}"


#: Where a learner's checkpoints are written and read (`trainer.core.learner_checkpoint`; named
#: by path: it imports the module checkpoints, which sit beside this module).
LEARNER_CHECKPOINT = "trainer.core.learner_checkpoint"


class LearnerConfig(Protocol):
    """What the learner machinery reads of an algorithm's config (an `AlgorithmConfig`; the
    learners sit below the algorithms and name none of their classes)."""

    lr: float | list
    optimizer: dict
    grad_clip: float | None
    grad_clip_by: str
    seed: int | None


class UpdateThreads(Protocol):
    """The thread pools a learner's round of updates runs on: called, a context manager that
    sizes them for its `with` block and puts them back after (`trainer.core.blas.BlasThreads`,
    `trainer.core.blas.AdaptiveBlasThreads`, `trainer.torch_rl.learner.TorchThreads`)."""

    def __call__(self) -> AbstractContextManager[Any]: ...


@refuse(
    "ray.rllib.core.learner.learner.Learner",
    TORCH,
    "a torch learner's (TorchLearner's, which every algorithm's torch learner derives from); "
    "this base class is also that of the numpy learners, which step their own Adam",
    "add_module",
    "apply_gradients",
    "compute_gradients",
    "compute_losses",
    "configure_optimizers",
    "configure_optimizers_for_module",
    "get_optimizer",
    "get_optimizers_for_module",
    "get_param_ref",
    "get_parameters",
    "postprocess_gradients",
    "postprocess_gradients_for_module",
    "register_optimizer",
    "remove_module",
    "rl_module_is_compatible",
    "update_from_batch",
    "_get_optimizer_lr",
    "_set_optimizer_lr",
    "_update",
    "_convert_batch_type",
    "_check_registered_optimizer",
    "_get_optimizer_state",
    "_set_optimizer_state",
    "filter_param_dict_for_optimizer",
    "_get_clip_function",
    "_get_global_norm_function",
)
@refuse(
    "ray.rllib.core.learner.learner.Learner",
    CHECKPOINTABLE,
    "a learner's state is a component of the Algorithm's checkpoint, written and read by "
    "save_to_path / restore_from_path / from_checkpoint",
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_metadata",
)
@refuse(
    "ray.rllib.core.learner.learner.Learner",
    LEARNER_CONNECTORS,
    "a learner here makes no batch from episodes through learner connectors; the algorithm "
    "turns its episodes into the learner's batch (train through algo.train(), or call "
    "update(batch=...))",
    "update_from_episodes",
)
class Learner(ABC):
    """See the module docstring. The state (`get_state`) is the backend's (the module's weights
    and the optimizers' moments) plus the algorithm's own keys (`extra_state_keys`), which a
    learner adds through `get_extra_state`, `check_extra_state` and `set_extra_state`."""

    config: LearnerConfig
    #: RLlib's names of result keys (`Learner.TOTAL_LOSS_KEY`, ...).
    TOTAL_LOSS_KEY = "total_loss"
    POLICY_LOSS_KEY = POLICY_LOSS_KEY
    VF_LOSS_KEY = VF_LOSS_KEY
    ENTROPY_KEY = ENTROPY_KEY
    #: The keys `get_extra_state()` adds to the state.
    extra_state_keys: tuple[str, ...] = ()
    module: Any
    #: The numpy learners' Adam; a torch optimizer for the torch learners.
    optimizer: Any
    #: What the learner set as its `update_threads`; None: the default, made when first read.
    _update_threads: UpdateThreads | None = None
    #: Data-parallel learners' all-reduce (`trainer.algorithms.data_parallel`): each gradient
    #: step applies the mean of the learners' gradients (and checks the mean loss); None: this
    #: learner steps on its own gradient.
    gradient_allreduce: SharedMemoryAllReduce | TcpAllReduce | None = None

    def mean_over_learners(self, value: float) -> float:
        """`value`'s mean over the data-parallel learners (itself with one learner): what every
        replica must agree on beyond the gradients (PPO's KL, which adapts its coefficient)."""
        if self.gradient_allreduce is None:
            return value
        return float(self.gradient_allreduce.mean(np.array([value], dtype=np.float64))[0])

    @property
    def update_threads(self) -> UpdateThreads:
        """What the algorithm runs a round of this learner's updates in (`with
        learner.update_threads(): ...`): numpy's products on one BLAS thread unless the user
        sized the pools (`BlasThreads`), or what the learner set instead (a torch learner's
        `TorchThreads`, PPO's `AdaptiveBlasThreads`)."""
        if self._update_threads is None:
            self._update_threads = BlasThreads()
        return self._update_threads

    @update_threads.setter
    def update_threads(self, threads: UpdateThreads) -> None:
        self._update_threads = threads

    def get_weights(self) -> Any:
        """The weights the EnvRunners sample with (the module's, as numpy arrays)."""
        return self.module.get_weights()

    def set_weights(self, weights: Any) -> None:
        """Sets the module's weights (`get_weights()`'s form)."""
        self.module.set_weights(weights)

    @abstractmethod
    def update(self, data: Any, /, *, num_env_steps_sampled_lifetime: int) -> UpdateResults:
        """One training update on `data` (PPO: the sampled episodes; DQN: a replay batch), with
        the env steps sampled so far (for the learning-rate schedule and target updates);
        returns the update's statistics (losses, gradient norm, current lr, ...). Raises
        `trainer.errors.NonFiniteUpdateError` before the weights change if the loss or the
        gradient is not finite."""

    def _updates_independently(self) -> bool:
        """Whether the next `update` works on this learner's own module, optimizer, RNG and
        statistics alone, in numpy, so that a multi-agent learner may run it beside another
        module's on a thread of its own (`MultiAgentLearner`). None do by default; PPO's
        learners say where theirs does."""
        return False

    #: RLlib's name of the learner's framework ("torch" on the torch learners).
    framework: str | None = "numpy"

    @property
    def device(self) -> Any:
        """Where the learner computes: "cpu" for the numpy learners (a torch learner's is its
        module's torch device)."""
        return "cpu"

    @property
    def node(self) -> Any:
        """The name of the machine the learner runs on (`platform.node()`, as RLlib's)."""
        return platform.node()

    @property
    def _device(self) -> Any:
        """RLlib's attribute name of `device`, which users' learners read
        (`Scheduler(..., device=self._device)`)."""
        return self.device

    @property
    def distributed(self) -> bool:
        """Whether the learner is one of several data-parallel learners (`num_learners` > 1)."""
        return int(getattr(self.config, "num_learners", 0) or 0) > 1

    def should_module_be_updated(self, module_id: str, multi_agent_batch: Any = None) -> bool:
        """Whether `module_id` trains: the config's `policies_to_train` (None: all; a
        collection: those in it; a function: its answer for the id and the batch)."""
        to_train = getattr(self.config, "policies_to_train", None)
        if to_train is None:
            return True
        if not callable(to_train):
            return module_id in set(to_train)
        return bool(to_train(module_id, multi_agent_batch))

    @classmethod
    def rl_module_required_apis(cls) -> list[type]:
        """The RLModule APIs (`trainer.core.apis`) a module must implement to be trained by
        this learner class: none by default (an algorithm's learner names its own)."""
        return []

    def apply(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """`func(self, *args, **kwargs)` (RLlib's way to run code on a learner actor; this
        learner is in the calling process)."""
        return func(self, *args, **kwargs)

    def shutdown(self) -> None:  # noqa: B027 - nothing to release
        """RLlib's learner shutdown: nothing to release here (no actor, no process group)."""

    def build(self) -> None:  # noqa: B027 - a hook; nothing to build here
        """RLlib's `Learner.build` hook: called once on each learner the Algorithm (or a
        `LearnerGroup`) makes, after it exists and before its first update. Override
        (calling `super().build()`) to set up what the learner needs."""

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        """RLlib's loss hook, which a learner class implements (each torch learner here
        does); this base class has none."""
        raise NotImplementedError(f"{type(self).__name__} implements no compute_loss_for_module")

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:  # noqa: B027
        """RLlib's hook before an update's gradient steps (`timesteps`: the env steps sampled
        so far): nothing here; a torch learner's update calls it."""

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """RLlib's hook after an update's gradient steps (`timesteps`: the env steps sampled
        and trained so far): the backend's work between updates (a torch learner steps its
        torch lr schedulers). Override, calling super, for an algorithm's own."""
        self._after_gradient_steps(timesteps=timesteps)

    def _after_gradient_steps(self, *, timesteps: dict[str, Any]) -> None:  # noqa: B027
        """The backend's part of `after_gradient_based_update`: nothing here."""

    def get_extra_state(self) -> dict:
        """The algorithm's own state (counters, coefficients, random streams): none here."""
        return {}

    def check_extra_state(self, state: dict, where: str) -> None:  # noqa: B027 - none here
        """Raises `StateError` unless the algorithm's own keys of `state` fit."""

    def set_extra_state(self, state: dict) -> None:  # noqa: B027 - none here
        """Takes the algorithm's own keys of `state` back (after `check_state`)."""

    @abstractmethod
    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        """Weights, optimizer state and the learner's own counters, as plain data and arrays
        (`{"module", "optimizer", ...}`); with RLlib's `components=` / `not_components=`, in
        RLlib's layout (`trainer.core.learner_components`)."""

    @abstractmethod
    def check_state(self, state: dict, where: str = "learner") -> None:
        """Raises `trainer.util.state_checks.StateError` unless `state` fits; changes nothing."""

    @abstractmethod
    def set_state(self, state: dict) -> None:
        """Takes `state` back after `check_state` (a state that does not fit changes nothing);
        either layout of `get_state`."""

    # -- checkpoints (RLlib's Checkpointable methods) ----------------------------------------
    def save_to_path(
        self, path: str | os.PathLike | None = None, *, state: dict | None = None, **kwargs: Any
    ) -> str:
        """Writes this learner (or `state`) as a learner checkpoint at `path` (default: a new
        temporary directory): its state, its modules and its config
        (`trainer.core.learner_checkpoint`); returns the path."""
        return str(
            importlib.import_module(LEARNER_CHECKPOINT).save_learner(self, path, state=state)
        )

    def restore_from_path(self, path: str | os.PathLike, **kwargs: Any) -> None:
        """Takes the state back from the learner checkpoint at `path` (`save_to_path`'s);
        a checkpoint that does not fit changes nothing."""
        importlib.import_module(LEARNER_CHECKPOINT).restore_learner(self, path)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, **kwargs: Any) -> Any:
        """A new learner built from the learner checkpoint at `path` (its class, config and
        modules, by import path: nothing is unpickled) with the saved state; its class must be
        `cls` or a subclass."""
        return importlib.import_module(LEARNER_CHECKPOINT).load_learner(path, expected=cls)


def adam_settings(optimizer: dict) -> dict:
    """`training(optimizer=...)` as `Adam`'s keyword arguments (numpy's and torch's)."""
    beta1, beta2 = optimizer.get(
        "betas", (optimizer.get("beta1", 0.9), optimizer.get("beta2", 0.999))
    )
    eps = optimizer.get("eps", optimizer.get("adam_epsilon", optimizer.get("epsilon", 1e-8)))
    return {"betas": (float(beta1), float(beta2)), "eps": float(eps)}


class LearningRate:
    """`training(lr=...)`: a constant, or RLlib's schedule `[[timestep, lr], ...]`, piecewise
    linear in the env steps sampled so far (the last rate after the last point)."""

    def __init__(self, lr: float | list, *, setting: str = "lr"):
        """`setting`: the name bad values are reported under."""
        self.schedule = Schedule(lr, setting=setting, low=0.0)

    def apply(self, optimizer: Adam, num_env_steps_sampled_lifetime: int | None) -> None:
        """Sets the optimizer's rate for the update about to run (a constant rate is left as
        it is: it may have come from a checkpoint)."""
        rate = self.scheduled(num_env_steps_sampled_lifetime)
        if rate is not None:
            optimizer.lr = rate

    def scheduled(self, num_env_steps_sampled_lifetime: int | None) -> float | None:
        """The schedule's rate at this many env steps; None for a constant rate or unknown
        steps (the optimizer's rate then stays as it is)."""
        if len(self.schedule.points) > 1 and num_env_steps_sampled_lifetime is not None:
            return self.schedule.value(num_env_steps_sampled_lifetime)
        return None

    @property
    def initial(self) -> float:
        return self.schedule.value(0)


class NumpyLearner(Learner):
    """The numpy backend of `Learner`: one `FlatParameterModule`, Adam over its flat parameters
    at the config's `lr` (or schedule) with `training(optimizer=...)`'s settings, gradient
    clipping by `grad_clip` / `grad_clip_by`, the finite check before each step, and the state:
    the module's weights, the optimizer's moments and what the algorithm adds
    (`get_extra_state`, `check_extra_state`, `set_extra_state`).

    A subclass computes its loss and the module's gradient (into `module.gradient_buffer()`)
    and calls `apply_gradients(loss)`."""

    #: The algorithm's name in a `NonFiniteUpdateError`.
    loss_name = "the loss"

    def __init__(self, config: LearnerConfig, module: Any) -> None:
        self.config = config
        self.module = module
        self.learning_rate = LearningRate(config.lr)
        self.optimizer = Adam(
            module.flat_params, lr=self.learning_rate.initial, **adam_settings(config.optimizer)
        )
        self._parameter_sizes = [p.size for p in module.parameters()]

    def apply_lr_schedule(self, num_env_steps_sampled_lifetime: int | None) -> None:
        """Sets the optimizer's rate for the update about to run (`LearningRate.apply`)."""
        self.learning_rate.apply(self.optimizer, num_env_steps_sampled_lifetime)

    # -- RLlib's optimizer accessors -----------------------------------------------------------
    def numpy_optimizers(self) -> dict[str, Adam]:
        """The optimizers by name (RLlib's registered names): the one Adam as
        `DEFAULT_OPTIMIZER`; a learner with more names its own."""
        return {DEFAULT_OPTIMIZER: self.optimizer}

    def get_optimizer(
        self, module_id: str = DEFAULT_MODULE_ID, optimizer_name: str = DEFAULT_OPTIMIZER
    ) -> Adam:
        """RLlib's: the optimizer `optimizer_name` of the module (its rate is
        `param_groups[0]["lr"]`, as torch's); KeyError when there is none."""
        optimizers = self.numpy_optimizers()
        name = optimizer_name.removeprefix(f"{module_id}_")
        if name not in optimizers:
            raise KeyError(
                f"Optimizer not found! module_id={module_id} optimizer_name={optimizer_name} "
                f"(registered: {list(optimizers)})"
            )
        return optimizers[name]

    def get_optimizers_for_module(self, module_id: str = DEFAULT_MODULE_ID) -> list[tuple]:
        """RLlib's: `[(optimizer_name, optimizer), ...]` of the module."""
        return list(self.numpy_optimizers().items())

    def get_parameters(self, module: Any) -> list[np.ndarray]:
        """RLlib's: the module's parameters (numpy arrays, views into its flat vector)."""
        return list(module.parameters())

    def gradient_size(self) -> int:
        """The numbers one all-reduce of this learner's step carries: the flat gradient and
        the loss."""
        return int(self.module.flat_params.size) + 1

    def apply_gradients(self, loss: float) -> float:
        """Clips the module's gradient buffer (`grad_clip_by`), raises `NonFiniteUpdateError`
        before the weights change if `loss` or the gradient is not finite, then takes one Adam
        step; returns the gradient's global norm before clipping."""
        gradient = self.module.gradient_buffer()[0]  # the flat buffer backward wrote into
        if self.gradient_allreduce is not None:  # the mean over the data-parallel learners
            mean = self.gradient_allreduce.mean(np.append(gradient.astype(np.float64), loss))
            gradient[:] = mean[:-1]
            loss = float(mean[-1])
        norm = clip_gradients(
            gradient, self.config.grad_clip, self.config.grad_clip_by, self._parameter_sizes
        )
        check_finite_update(loss, norm, self.loss_name)
        self.optimizer.step(gradient)
        return norm

    # -- state (checkpoints) -----------------------------------------------------------------
    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        own = {
            "module": self.module.get_weights(),
            "optimizer": self.optimizer.get_state(),
            **self.get_extra_state(),
        }
        if components is None and not_components is None:
            return own
        return rllib_learner_state(self, own, components, not_components)

    def check_state(self, state: dict, where: str = "learner") -> None:
        """Raises `StateError` unless `state` fits this learner (see `trainer.util.state_checks`)."""
        require_map(state, where, ("module", "optimizer", *self.extra_state_keys))
        self.module.check_weights(state["module"], f"{where}['module']")
        self.optimizer.check_state(state["optimizer"], f"{where}['optimizer']")
        self.check_extra_state(state, where)

    def set_state(self, state: dict) -> None:
        state = own_learner_state(self, state, lambda: NumpyLearner.get_state(self))
        self.check_state(state)
        self.module.set_weights(state["module"])
        self.optimizer.set_state(state["optimizer"])
        self.set_extra_state(state)
