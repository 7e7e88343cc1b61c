"""`TorchLearner` (RLlib's `ray.rllib.core.learner.torch.TorchLearner`): the base of a learner
that trains a `TorchRLModule` with torch optimizers, as this trainer's `Learner`.

One gradient step (`update_from_batch`) runs RLlib's steps, each an overridable hook:
`module.forward_train(batch)`, `compute_loss_for_module(...)` (the algorithm's loss),
`compute_gradients` (backward), `postprocess_gradients` (clipping by `grad_clip` /
`grad_clip_by`, each optimizer's gradients on their own), `apply_gradients` (every optimizer's
step). Before the step, a NaN or infinite loss or gradient raises
`trainer.errors.NonFiniteUpdateError` with the weights unchanged (RLlib zeroes or skips such
gradients instead; this trainer stops, as its numpy learners do).

Optimizers are RLlib's: `configure_optimizers_for_module` registers each one
(`register_optimizer(module_id=, optimizer_name=, optimizer=, params=, lr_or_lr_schedule=)`; by
default one Adam as `DEFAULT_OPTIMIZER`), each over its own parameters and at its own rate or
schedule. `_torch_lr_scheduler_classes` (the config's `experimental()` setting) chains torch lr
schedulers over every optimizer, stepped once after each update (`after_gradient_based_update`).
What a loss logs to `self.metrics` joins the update's results (`update_results`).

The state is plain data and numpy arrays (msgpack, never pickle): the module's `get_state()`,
and per optimizer name its rates, its per-parameter state keyed by the module's parameter names
(torch's own `state_dict()` keys them by position) and its lr schedulers' `state_dict()`s.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, cast

import numpy as np
import torch
from torch import nn

from trainer.capabilities import LEARNER_CONNECTORS, MULTI_AGENT
from trainer.core.blas import (
    MAX_UPDATE_THREADS,
    ThreadPolicy,
    after_step,
    threads_for_next_step,
    user_sized_pools,
)
from trainer.core.learner import (
    DEFAULT_OPTIMIZER,
    DEFAULT_OPTIMIZER_LR_KEY,
    LR_KEY,
    Learner,
    LearnerConfig,
    LearningRate,
    adam_settings,
)
from trainer.core.learner_components import Names, own_learner_state, rllib_learner_state
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.nn import check_finite_update
from trainer.errors import UnsupportedCall
from trainer.metrics import (
    ALL_MODULES,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)
from trainer.metrics.metrics_logger import MetricsLogger
from trainer.torch_rl.dynamo_free import optimizer_step, skip_until_compiler_imported
from trainer.torch_rl.minibatches import TensorBatches, cyclic_minibatches, num_rows
from trainer.torch_rl.module_group import TorchModuleGroup
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.torch_rl.torch_utils import clip_gradients, compute_global_norm
from trainer.util.imports import collector_paused
from trainer.util.state_checks import (
    StateError,
    require_float_array,
    require_int,
    require_map,
    require_number,
)

#: Gradients by parameter name (RLlib's `ParamDict` keys them by parameter reference).
ParamDict = dict[str, torch.Tensor]

#: The statistic every update reports: the gradient's global L2 norm before clipping (RLlib's
#: name for the default optimizer's).
GLOBAL_NORM_KEY = "gradients_default_optimizer_global_norm"

#: The key of the learner-only modules' states in their learner's state
#: (`trainer.torch_rl.self_supervised`).
LEARNER_ONLY_KEY = "learner_only_modules"

#: The per-parameter state torch's Adam keeps (with amsgrad, also "max_exp_avg_sq").
_ADAM_STATE_KEYS = ("exp_avg", "exp_avg_sq", "step")


def generator_state_for(seed: int | None, stream: int) -> torch.Tensor:
    """A torch CPU generator state for a learner's own draws: seeded from `seed` in a stream
    of its own (`[seed, stream]`, as the numpy learners' generators), or fresh."""
    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(np.random.SeedSequence([seed, stream]).generate_state(1)[0]))
    return generator.get_state()


class OwnGenerator:
    """A learner's own torch CPU generator (a mixin of SAC's and DreamerV3's torch learners):
    its state `_rng_state` (`generator_state_for`), drawn from inside `_own_rng()` and kept in
    the learner's state (`_check_rng_state` checks a restored one)."""

    _rng_state: torch.Tensor

    @contextmanager
    def _own_rng(self) -> Iterator[None]:
        """torch's CPU generator on the learner's own state for the block (the module's
        draws), then as it was."""
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._rng_state)
            try:
                yield
            finally:
                self._rng_state = torch.get_rng_state()

    def _check_rng_state(self, rng: Any, where: str) -> None:
        """Raises StateError unless `rng` is a generator state of this learner's shape."""
        if not (
            isinstance(rng, np.ndarray)
            and rng.dtype == np.uint8
            and rng.shape == tuple(self._rng_state.shape)
        ):
            raise StateError(
                where,
                f"expected a uint8 array of shape {tuple(self._rng_state.shape)} (a torch "
                f"generator's state), got {type(rng).__name__} "
                f"{getattr(rng, 'dtype', '')} {getattr(rng, 'shape', '')}",
            )


#: A Linear layer of at least this many weights (256x256: RLlib's default MLPs) makes the
#: minibatch steps of a learner that asks (`TorchLearner.times_large_linear_steps`) a few
#: large products, timed on one thread against two as a convolution's are (`step_threads`):
#: RLlib's SAC Pendulum example took 100 s here on one thread, 67 s so (2 idle cores).
LARGE_LINEAR = 256 * 256

#: A recurrent layer (LSTM, GRU) of at least this many units makes a learner's minibatch steps
#: timed on one torch thread against two, as a convolution's are (`step_threads`): its steps
#: are a product per time step, each too small to amortize a step's fixed costs, and torch's
#: oneDNN LSTM took 7.3 ms forward and backward on one thread and 3.3 ms on two (a minibatch
#: of 7 sequences of 20 steps, 256 units: RLlib's default `use_lstm` model, 2 idle cores); at
#: 64 units the two were alike.
LARGE_RECURRENT = 128


class TorchThreads:
    """Runs a learner's update on one torch thread, unless the user sized the thread pools
    (`OMP_NUM_THREADS` / `MKL_NUM_THREADS` / `OPENBLAS_NUM_THREADS`): the policy of
    `trainer.core.blas.BlasThreads`, for the same reason. An update is thousands of small
    products (minibatches of 64-128 rows), and a pool thread descheduled by other work on the
    machine holds up every one of them; RLlib's learner actor runs with `OMP_NUM_THREADS` = its
    CPUs, one for the local learner. A PPO update of 4000 CartPole steps (30 epochs, minibatch
    128, two 256x256 MLPs) on 2 cores took 4.4 s on one thread and 17.0 s on two while one
    other process kept a core busy; on idle cores, two threads took 2.9 s and one 4.2 s."""

    def __init__(self, num_threads: int = 1):
        #: The pool's size during an update (0: left as it is).
        self.num_threads = num_threads
        #: True when the user sized the pools: torch's thread count is then left alone.
        self.user_sized = user_sized_pools()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        """torch's intra-op pool at `num_threads` for the `with` block, then as it was."""
        previous = torch.get_num_threads()
        if self.user_sized or self.num_threads in (0, previous):
            yield
            return
        torch.set_num_threads(self.num_threads)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


class AdaptiveTorchThreads:
    """torch's intra-op threads for a learner whose update is a few large products (DreamerV3's):
    one or two per update, chosen by timing the updates with `trainer.core.blas`'s policy
    (`ThreadPolicy`: start on one, probe two now and then, keep the faster, back to one at the
    first stalled update). Two threads make an idle 2-core machine's XS update 1.6x faster;
    beside another busy process they made DreamerV3's test trainings up to 30 times slower.

    A seeded run stays on one thread: a product's last bits may depend on its thread count, and
    a seeded run's weights must not depend on what the timing chose. A user who sized the pools
    (`OMP_NUM_THREADS`, ...) keeps them. Nested entries (an update inside the timed one) run on
    the outer one's count."""

    def __init__(self, *, seeded: bool, max_threads: int = MAX_UPDATE_THREADS):
        self.seeded = seeded
        self.max_threads = max_threads
        self.user_sized = user_sized_pools()
        self.policy = ThreadPolicy()
        #: Updates run at each thread count.
        self.steps_at: dict[int, int] = {}
        self._depth = 0

    @contextmanager
    def __call__(self, rows: int = 1) -> Iterator[None]:
        """One update of `rows` rows on the policy's thread count, timed; torch's pool as it was
        afterwards."""
        if self.user_sized or self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        previous = torch.get_num_threads()
        ceiling = 1 if self.seeded else min(self.max_threads, previous)
        threads = threads_for_next_step(self.policy, ceiling)
        torch.set_num_threads(threads)
        self._depth += 1
        started = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            seconds = time.perf_counter() - started
            torch.set_num_threads(previous)
            self.steps_at[threads] = self.steps_at.get(threads, 0) + 1
            self.policy = after_step(self.policy, threads, seconds / max(rows, 1), ceiling)


#: The devices whose parameters torch's fused Adam steps (one kernel per step).
_FUSED_ADAM_DEVICES = ("cpu", "cuda")


def adam_kernel(params: list[torch.Tensor]) -> dict[str, bool]:
    """torch Adam's implementation for `params`: fused (one kernel for all of them) where every
    parameter is a floating-point tensor on a device that has the kernel, else foreach (one
    call per operation for all of them). Without either, torch steps a CPU module's parameters
    one by one, a dozen operations each: a 64x64 PPO minibatch step spent 0.30 ms of its
    2.0 ms in Adam, 0.07 ms fused. The fused kernel rounds its arithmetic in its own order,
    so its weights differ from the per-parameter loop's in the last bits."""
    fused = bool(params) and all(
        p.is_floating_point() and p.device.type in _FUSED_ADAM_DEVICES for p in params
    )
    return {"fused": True} if fused else {"foreach": True}


def _moments_in_parameter_layout(optimizer: torch.optim.Optimizer) -> None:
    """Lays each per-parameter state tensor of `optimizer` (Adam's moments) out in memory as
    its parameter is (a convolution's kernel is channels-last, `TorchCNN`): torch's
    `load_state_dict` keeps a loaded moment row-major, and the fused Adam kernel, which reads a
    parameter and its moments by memory position, then paired elements of the two layouts
    (a restored CNN's run drifted from the uninterrupted one's)."""
    for param, state in optimizer.state.items():
        for key, value in state.items():
            if (
                isinstance(value, torch.Tensor)
                and value.shape == param.shape
                and value.stride() != param.stride()
            ):
                state[key] = torch.empty_like(param, dtype=value.dtype).copy_(value)


def keep_gradients_in_parameter_layout(optimizer: torch.optim.Optimizer) -> None:
    """Has a fused `optimizer` lay each gradient out in memory as its parameter is before every
    step (`_gradients_in_parameter_layout`); other optimizers index their tensors and need
    nothing."""
    if any(group.get("fused") for group in optimizer.param_groups):
        optimizer.register_step_pre_hook(_gradients_in_parameter_layout)


def _gradients_in_parameter_layout(optimizer: torch.optim.Optimizer, *_: Any) -> None:
    """A step pre-hook: each gradient whose strides are not its parameter's is copied into the
    parameter's layout. torch's fused Adam pairs a parameter's elements with its gradient's
    by memory position, so a gradient in another layout steps each weight by another weight's
    gradient. A parameter's layout need not be row-major (a numpy twin's weight is the
    transposed view of its `(in, out)` numpy matrix, `trainer.torch_rl.numpy_twin`; a
    channels-last convolution kernel), while a gradient built outside backward (viewed from
    a flat all-reduced vector, `torch.autograd.grad`'s, a user's) is row-major: a default PPO
    learner's by-hand step moved its weight matrices by up to twice the rate from its own
    update, its biases not at all. Backward's gradients already have their parameter's layout
    (autograd's layout contract): the check costs a stride comparison per parameter."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            grad = param.grad
            if grad is not None and grad.stride() != param.stride():
                param.grad = torch.empty_like(param).copy_(grad)


def global_norm(gradients: list[torch.Tensor]) -> float:
    """The L2 norm of all `gradients` together: NaN or infinite when any element is (RLlib's
    `compute_global_norm` maps infinities to 1e9; the finite check needs to see them)."""
    if not gradients:
        return 0.0
    # One call for every tensor's norm (torch's per-tensor norm, without a Python loop).
    norms = torch.stack(torch._foreach_norm([g.detach() for g in gradients]))
    return float(torch.linalg.vector_norm(norms))


def to_train_tensors(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """A numpy batch as torch tensors on `device`; float64 arrays become float32 (as RLlib's
    `convert_to_torch_tensor`), other dtypes stay. Nested columns (a Dict / Tuple space's
    observations) become dicts / tuples of tensors."""
    return {key: _train_tensor(value, device) for key, value in batch.items()}


def batch_env_steps(batch: Any) -> int | None:
    """The env steps a batch covers, as RLlib's `MultiAgentBatch` counts them (`env_steps()`,
    or `count`); None for a plain dict."""
    env_steps = getattr(batch, "env_steps", None)
    env_steps = env_steps() if callable(env_steps) else env_steps
    return getattr(batch, "count", None) if env_steps is None else env_steps


def tensor_batches(
    per_module: dict[Any, Any], env_steps: int | None, device: torch.device
) -> TensorBatches:
    """`{module_id: columns}` as tensors on `device`, with the env steps they cover (by
    default, their rows together: a dict of columns counts no env steps of its own)."""
    tensors = {
        module_id: to_train_tensors(dict(columns), device)
        for module_id, columns in per_module.items()
    }
    if env_steps is None:
        env_steps = sum(num_rows(columns) for columns in tensors.values())
    return TensorBatches(tensors, int(env_steps))


def refuse_unknown_modules(module_ids: Any, known: list[Any]) -> None:
    """RLlib's ValueError for a batch of modules (`module_ids`) a learner does not hold."""
    unknown = [module_id for module_id in module_ids if module_id not in known]
    if unknown:
        raise ValueError(
            f"Batch contains one or more ModuleIDs ({set(unknown)}) that are not in this "
            f"Learner! (its modules: {known})"
        )


def _train_tensor(value: Any, device: torch.device) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        tensor = torch.from_numpy(np.ascontiguousarray(value))
        if tensor.dtype == torch.float64:
            tensor = tensor.float()
        return tensor.to(device)
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: _train_tensor(leaf, device) for key, leaf in value.items()}
    if isinstance(value, tuple):
        return tuple(_train_tensor(leaf, device) for leaf in value)
    return value


def _registers_only(returned: Any, hook: str, learner: Any) -> None:
    """A user's optimizer hook returns None (RLlib's old hook returned optimizers)."""
    if returned is not None:
        raise TypeError(
            f"{type(learner).__name__}.{hook} returned {type(returned).__name__}: it registers "
            "its optimizers with self.register_optimizer(module_id=..., optimizer_name=..., "
            "optimizer=..., params=..., lr_or_lr_schedule=...) and returns None (RLlib's API)"
        )


class RegisteredOptimizer:
    """One optimizer of `TorchLearner.register_optimizer`: its name, the module it belongs to,
    the parameters it steps (by name), the rate RLlib keeps it on (`lr_or_lr_schedule`; None:
    its own rate stays) and the torch lr schedulers built over it
    (`_torch_lr_scheduler_classes`).

    The default optimizer is built on first use of `optimizer` (`TorchLearner`'s
    `configure_optimizers_for_module`): a torch optimizer's constructor imports torch._dynamo
    (about 1 s of CPU), which a learner that never steps it, or steps it later, need not wait
    for when the Algorithm is built. Until then `built` is False and its rate is `lr`."""

    def __init__(
        self,
        name: str,
        module_id: str,
        optimizer: torch.optim.Optimizer | Callable[[], torch.optim.Optimizer],
        param_names: list[str],
        learning_rate: LearningRate | None,
        lr_schedulers: list[Any] | None = None,
    ):
        """`optimizer`: the optimizer, or what builds it (with one parameter group, whose
        rate `set_lr` gives) when `optimizer` is first read."""
        self.name = name
        self.module_id = module_id
        self.param_names = param_names
        self.learning_rate = learning_rate
        self.lr_schedulers: list[Any] = lr_schedulers if lr_schedulers is not None else []
        self._optimizer: torch.optim.Optimizer | None = None
        self._build: Callable[[], torch.optim.Optimizer] | None = None
        #: The rate of an optimizer not built yet (`set_lr`).
        self._lr: float | None = None
        if isinstance(optimizer, torch.optim.Optimizer):
            keep_gradients_in_parameter_layout(optimizer)
            self._optimizer = optimizer
        else:
            self._build = optimizer

    @property
    def built(self) -> bool:
        """Whether the optimizer exists (a lazily built one: since `optimizer` was read)."""
        return self._optimizer is not None

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The torch optimizer, built now if it was not yet (without importing
        torch._dynamo: `dynamo_free`; with the cyclic collector paused, see
        `collector_paused`, where a script has imported it)."""
        if self._optimizer is None:
            assert self._build is not None
            skip_until_compiler_imported()
            with collector_paused():
                optimizer = self._build()
            keep_gradients_in_parameter_layout(optimizer)
            if self._lr is not None:
                for group in optimizer.param_groups:
                    group["lr"] = self._lr
            self._optimizer, self._build = optimizer, None
        return self._optimizer

    @property
    def lr(self) -> list[float]:
        """Each parameter group's rate (of an optimizer not built yet: its one group's)."""
        if self._optimizer is None:
            if self._lr is None:
                raise RuntimeError(f"optimizer {self.name!r}: no rate set (set_lr) before use")
            return [float(self._lr)]
        return [float(group["lr"]) for group in self._optimizer.param_groups]

    def set_lr(self, rate: float) -> None:
        """Sets every parameter group's rate (of an optimizer not built yet: when it is)."""
        if self._optimizer is None:
            self._lr = rate
            return
        for group in self._optimizer.param_groups:
            group["lr"] = rate


class LearnerMetrics(MetricsLogger):
    """RLlib's `Learner.metrics`: what a loss or hook logs during an update
    (`self.metrics.log_value((module_id, "mean_weight"), value, window=1)`) reaches the
    update's results. Tensors are logged as numbers (detached), so no graph is kept alive."""

    def log_value(self, key: Any, value: Any, **settings: Any) -> None:
        super().log_value(key, _metric_value(value), **settings)


def lr_scheduler_classes_for(setting: Any, module_id: str) -> list[Any]:
    """The torch lr scheduler factories of `_torch_lr_scheduler_classes` for `module_id`: the
    list itself, or the module's entry of a per-module dict (none when it has no entry)."""
    if not setting:
        return []
    if isinstance(setting, dict):
        return list(setting.get(module_id) or [])
    return list(setting)


class TorchLearner(Learner):
    """Trains one `TorchRLModule` (the full module, not an inference-only copy) with the
    optimizers `configure_optimizers_for_module` registers (`register_optimizer`; by default
    one Adam under `DEFAULT_OPTIMIZER`). Subclasses define `update` (the data flow of their
    algorithm) and `compute_loss_for_module` (their loss); see the module docstring."""

    #: Whether a module with a large Linear layer (`LARGE_LINEAR` weights) has its minibatch
    #: steps timed on one torch thread against two, as a convolution's (`step_threads`): for
    #: a learner whose every update is torch's own steps on large products (SAC's: 256-wide
    #: networks on 256-row batches, one step per few env steps).
    times_large_linear_steps: ClassVar[bool] = False

    #: The algorithm's name in error messages (NonFiniteUpdateError).
    algorithm_name = "Torch"
    framework = "torch"

    def __init__(
        self,
        config: LearnerConfig,
        module: Any,
        *,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the algorithm's config (lr, optimizer, grad_clip, grad_clip_by,
        learner_config_dict, _torch_lr_scheduler_classes, ...); `module`: the TorchRLModule to
        train, built by the caller, or a view of one (an object whose `rl_module` is the
        TorchRLModule, as `TorchModuleView`): `self.module` is what was given (the Algorithm
        reads weights through it), `self.rl_module` the torch module trained; `module_id`: its
        id (what `compute_loss_for_module` and `configure_optimizers_for_module` are called
        with). A `MultiRLModule` of TorchRLModules is trained whole (`is_multi_module`):
        `self.module` is the container (`self.module[module_id]`), `self.rl_module` its
        `TorchModuleGroup`, and the losses are those of the modules in each batch
        (`{module_id: columns}`)."""
        #: Whether this learner trains a whole MultiRLModule (RLlib's learner over all modules).
        self.is_multi_module = isinstance(module, MultiRLModule)
        rl_module = (
            TorchModuleGroup(module)
            if self.is_multi_module
            else getattr(module, "rl_module", module)
        )
        if not isinstance(rl_module, (TorchRLModule, TorchModuleGroup)):
            raise TypeError(
                f"{type(self).__name__}: module must be a TorchRLModule (or a view of one), "
                f"or a MultiRLModule of them, got {type(rl_module).__name__}"
            )
        if rl_module.inference_only:
            raise ValueError(
                f"{type(self).__name__}: module is an inference-only copy "
                "(inference_only=True); a learner trains the full module"
            )
        self.config = config
        self.module = module
        # (A whole MultiRLModule's TorchModuleGroup has what the learner calls of a module:
        # parameters, state, forward_train.)
        self.rl_module: TorchRLModule = cast(TorchRLModule, rl_module)
        self.module_id = ALL_MODULES if self.is_multi_module else module_id
        if module is not rl_module and not self.is_multi_module and hasattr(module, "keys"):
            module.module_id = module_id  # (a TorchModuleView: its MultiRLModule calls' id)
        #: The trainable parameters by name (`named_parameters()` order).
        self.named_params: dict[str, torch.nn.Parameter] = {
            name: param for name, param in rl_module.named_parameters() if param.requires_grad
        }
        self._names_by_param = {param: name for name, param in rl_module.named_parameters()}
        self._params_by_name = dict(rl_module.named_parameters())
        #: The registered optimizers by name, in registration order (each steps in that order).
        self._optimizers: dict[str, RegisteredOptimizer] = {}
        #: The names of the parameters some registered optimizer steps.
        self._registered_names: set[str] = set()
        #: RLlib's `Learner.metrics`: values logged during an update join its results.
        self.metrics = LearnerMetrics()
        #: The loss statistics the last `compute_loss_for_module` logged (`log_loss_stats`).
        self.loss_stats: dict[str, Any] = {}
        large_linear = type(self).times_large_linear_steps
        large_products = any(
            isinstance(layer, torch.nn.modules.conv._ConvNd)
            or (isinstance(layer, torch.nn.RNNBase) and layer.hidden_size >= LARGE_RECURRENT)
            or (
                large_linear
                and isinstance(layer, torch.nn.Linear)
                and layer.weight.numel() >= LARGE_LINEAR
            )
            for layer in rl_module.modules()
        )
        #: Updates run on one torch thread unless the user sized the pools. A module with
        #: convolutions, large recurrent layers (`LARGE_RECURRENT`) or large Linear layers
        #: (where the learner asks: `LARGE_LINEAR`)
        #: leaves the pool as it is for the update and times each minibatch step
        #: instead (`step_threads`: one thread against two, the faster kept; a seeded run stays
        #: on one): its steps are a few large products (a minibatch of 256 84x84x4 frames
        #: through the Nature CNN, forward and backward, took 0.16 s on one thread and 0.09 s
        #: on two, 2 idle cores).
        self.update_threads: TorchThreads | AdaptiveTorchThreads = TorchThreads(
            0 if large_products else 1
        )
        #: Each `update_from_batch` step's thread count, timed (None: the update's count).
        self.step_threads: AdaptiveTorchThreads | None = (
            AdaptiveTorchThreads(seeded=getattr(config, "seed", None) is not None)
            if large_products
            else None
        )
        #: The learners of the learner-only modules trained beside this one, by module id
        #: (`trainer.torch_rl.self_supervised`): each steps on every batch this one steps on.
        self.learner_only_learners: dict[str, TorchLearner] = {}
        #: Their last step's results, by module id.
        self.learner_only_results: dict[str, dict[str, Any]] = {}
        #: RLlib's learner pipeline (`learner._learner_connector`): the config's learner
        #: pieces, which the algorithm runs over the episodes (None without any).
        self._learner_connector: Any = None
        #: RLlib's count of `update(batch=...)` calls (`WEIGHTS_SEQ_NO` in their results).
        self._weights_seq_no = 0
        #: The per-module losses of the last gradient step (`update(batch=...)`'s
        #: `TOTAL_LOSS_KEY` per module).
        self._last_loss_per_module: dict[str, float] = {}
        #: The order `update(batch=..., shuffle_batch_per_epoch=True)` shuffles rows in.
        self._minibatch_rng = np.random.default_rng(getattr(config, "seed", None))
        returned = self.configure_optimizers()  # type: ignore[func-returns-value]
        _registers_only(returned, "configure_optimizers", self)
        if not self._optimizers:
            raise ValueError(
                f"{type(self).__name__}.configure_optimizers_for_module registered no "
                "optimizer (call self.register_optimizer(...))"
            )
        self._build_lr_schedulers(getattr(config, "_torch_lr_scheduler_classes", None))

    # -- optimizers (RLlib's Learner API) -------------------------------------------------------
    def configure_optimizers(self) -> None:
        """Registers every optimizer (RLlib's hook): by default
        `configure_optimizers_for_module` for the module, or for each module of a whole
        MultiRLModule (with the module's own config). Override to register optimizers that
        span modules (one over a shared encoder and its policies)."""
        if not self.is_multi_module:
            returned = self.configure_optimizers_for_module(  # type: ignore[func-returns-value]
                module_id=self.module_id, config=self.config
            )
            _registers_only(returned, "configure_optimizers_for_module", self)
            return
        for module_id, module in self.module.items():
            if self.rl_module_is_compatible(module):
                returned = self.configure_optimizers_for_module(  # type: ignore[func-returns-value]
                    module_id=module_id, config=self.config_for_module(module_id)
                )
                _registers_only(returned, "configure_optimizers_for_module", self)

    def rl_module_is_compatible(self, module: Any) -> bool:
        """Whether this learner trains `module` (RLlib's check): a torch module."""
        return isinstance(module, nn.Module)

    def config_for_module(self, module_id: str) -> LearnerConfig:
        """The config of `module_id` (its `multi_agent(algorithm_config_overrides_per_module=)`
        applied, where the config has them)."""
        for_module = getattr(self.config, "get_config_for_module", None)
        return for_module(module_id) if callable(for_module) else self.config

    def _torch_module(self, module_id: str) -> Any:
        """The torch module of `module_id`: the one this learner trains, or of a whole
        MultiRLModule, that module."""
        if not self.is_multi_module or module_id == ALL_MODULES:
            return self.rl_module
        return self.module[module_id]

    def configure_optimizers_for_module(
        self, module_id: str, config: LearnerConfig | None = None
    ) -> None:
        """Registers the module's optimizers (override to use others, e.g. one per network):
        by default Adam over the module's parameters with the config's `optimizer` settings
        (betas, eps), under `DEFAULT_OPTIMIZER`, on the config's `lr` (a rate or a schedule),
        with torch's fused kernel where it has one (`adam_kernel`). That Adam is built on its
        first use (`get_optimizer()`, `self.optimizer`, the first step, a state to restore):
        see `RegisteredOptimizer`."""
        config = config or self.config
        params = self.get_parameters(self._torch_module(module_id))
        settings = {**adam_kernel(params), **adam_settings(config.optimizer)}
        self._add_optimizer(
            module_id=module_id,
            optimizer_name=DEFAULT_OPTIMIZER,
            optimizer=functools.partial(torch.optim.Adam, params, **settings),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def register_optimizer(
        self,
        *,
        module_id: str = ALL_MODULES,
        optimizer_name: str = DEFAULT_OPTIMIZER,
        optimizer: torch.optim.Optimizer,
        params: list[torch.Tensor],
        lr_or_lr_schedule: float | list | None = None,
    ) -> None:
        """Registers `optimizer`, which steps `params` (parameters of this learner's module,
        each in one optimizer only), under `optimizer_name`. With `lr_or_lr_schedule` (a rate,
        or RLlib's schedule `[[timestep, lr], ...]`), the optimizer's rate is set to it now and
        kept on the schedule as env steps are sampled; without, its own rate stays. Raises
        ValueError for anything else (RLlib's checks, and the ones its later asserts make)."""
        self._check_registered_optimizer(optimizer, params)
        self._add_optimizer(
            module_id=module_id,
            optimizer_name=optimizer_name,
            optimizer=optimizer,
            params=params,
            lr_or_lr_schedule=lr_or_lr_schedule,
        )

    def _check_registered_optimizer(self, optimizer: Any, params: Any) -> None:
        """RLlib's check of what `register_optimizer` gets: a torch optimizer and a list of
        the module's parameters (ValueError otherwise)."""
        who = f"{type(self).__name__}.register_optimizer"
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ValueError(
                f"{who}: optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        if not isinstance(params, list):
            raise ValueError(
                f"{who}: params must be a list of the module's parameters, got "
                f"{type(params).__name__}"
            )
        self._param_names(params, who, "params")

    def _add_optimizer(
        self,
        *,
        module_id: str,
        optimizer_name: str,
        optimizer: torch.optim.Optimizer | Callable[[], torch.optim.Optimizer],
        params: list[torch.Tensor],
        lr_or_lr_schedule: float | list | None,
    ) -> None:
        """`register_optimizer`, of an optimizer or of what builds it over `params` (on first
        use, see `RegisteredOptimizer`; with `lr_or_lr_schedule`, which gives its rate)."""
        who = f"{type(self).__name__}.register_optimizer(optimizer_name={optimizer_name!r})"
        if not isinstance(optimizer, torch.optim.Optimizer) and lr_or_lr_schedule is None:
            raise ValueError(f"{who}: an optimizer built on first use needs lr_or_lr_schedule")
        if self.is_multi_module:
            if module_id != ALL_MODULES and module_id not in self.module:
                raise ValueError(
                    f"{who}: module_id={module_id!r}: this learner trains "
                    f"{sorted(map(str, self.module.keys()))} (or {ALL_MODULES!r}: all of them)"
                )
        elif module_id not in (self.module_id, ALL_MODULES):
            raise ValueError(
                f"{who}: module_id={module_id!r}: this learner trains {self.module_id!r}"
            )
        if not isinstance(optimizer_name, str) or not optimizer_name:
            raise ValueError(f"{who}: optimizer_name must be a non-empty str")
        if self.is_multi_module and module_id != ALL_MODULES:
            # Each module's optimizers under RLlib's full name, "<module_id>_<name>".
            optimizer_name = f"{module_id}_{optimizer_name}"
        if optimizer_name in self._optimizers:
            raise ValueError(f"{who}: an optimizer of that name is registered already")
        if not isinstance(params, list):
            raise ValueError(f"{who}: params must be a list of the module's parameters")
        names = self._param_names(params, who, "params")
        if isinstance(optimizer, torch.optim.Optimizer):  # (one built later holds `params`)
            held = self._param_names(
                [p for group in optimizer.param_groups for p in group["params"]],
                who,
                "the optimizer",
            )
            outside = sorted(set(held) - set(names))
            if outside:
                raise ValueError(
                    f"{who}: the optimizer holds parameters not in params: {outside[:5]}"
                )
        for other in self._optimizers.values():
            shared = sorted(set(names) & set(other.param_names))
            if shared:
                raise ValueError(
                    f"{who}: parameters {shared[:5]} are registered with optimizer "
                    f"{other.name!r} already (each parameter has one optimizer)"
                )
        learning_rate = None
        if lr_or_lr_schedule is not None:
            learning_rate = LearningRate(lr_or_lr_schedule, setting="lr_or_lr_schedule")
        entry = RegisteredOptimizer(optimizer_name, module_id, optimizer, names, learning_rate)
        if learning_rate is not None:
            entry.set_lr(learning_rate.initial)
        self._optimizers[optimizer_name] = entry
        self._registered_names |= set(names)

    def get_optimizer(
        self, module_id: str = DEFAULT_MODULE_ID, optimizer_name: str = DEFAULT_OPTIMIZER
    ) -> torch.optim.Optimizer:
        """The optimizer registered as `optimizer_name` (or RLlib's full name
        `"<module_id>_<optimizer_name>"`) for `module_id`; KeyError when there is none."""
        for name in (
            f"{module_id}_{optimizer_name}",
            optimizer_name,
            optimizer_name.removeprefix(f"{module_id}_"),
        ):
            entry = self._optimizers.get(name)
            if entry is not None and module_id in (entry.module_id, self.module_id):
                return entry.optimizer
        raise KeyError(
            f"Optimizer not found! module_id={module_id} optimizer_name={optimizer_name} "
            f"(registered: {list(self._optimizers)})"
        )

    def get_optimizers_for_module(
        self, module_id: str = ALL_MODULES
    ) -> list[tuple[str, torch.optim.Optimizer]]:
        """`[(optimizer_name, optimizer), ...]` registered for `module_id`."""
        # ALL_MODULES on either side matches. A module's optimizers of a whole MultiRLModule
        # by their own names (RLlib's), without the "<module_id>_" they are registered under.
        return [
            (self._short_name(entry), entry.optimizer)
            for entry in self._optimizers.values()
            if ALL_MODULES in (module_id, entry.module_id) or entry.module_id == module_id
        ]

    def _short_name(self, entry: RegisteredOptimizer) -> str:
        """The name `entry` was registered with (its full name less "<module_id>_")."""
        if self.is_multi_module and entry.module_id != ALL_MODULES:
            return entry.name.removeprefix(f"{entry.module_id}_")
        return entry.name

    @property
    def _module_optimizers(self) -> dict[str, list[str]]:
        """RLlib's attribute: module id -> the full names of its registered optimizers."""
        optimizers: dict[str, list[str]] = {}
        for entry in self._optimizers.values():
            optimizers.setdefault(entry.module_id, []).append(entry.name)
        return optimizers

    def _get_optimizer_state(self) -> dict[str, Any]:
        """RLlib's: every optimizer's state by full name (`get_state()["optimizer"]`)."""
        return {name: self._optimizer_state(entry) for name, entry in self._optimizers.items()}

    def filter_param_dict_for_optimizer(self, param_dict: dict, optimizer: Any) -> dict:
        """The entries of `param_dict` (by `get_param_ref`) that `optimizer` steps."""
        return {
            self.get_param_ref(param): param_dict[self.get_param_ref(param)]
            for group in optimizer.param_groups
            for param in group["params"]
        }

    def _set_optimizer_state(self, state: dict[str, Any]) -> None:
        """RLlib's: takes back `_get_optimizer_state()`'s output (checked first)."""
        self._check_optimizers_state(state, "optimizer state")
        for name, entry in self._optimizers.items():
            self._set_one_optimizer_state(entry, state[name])

    def get_param_ref(self, param: torch.Tensor) -> str:
        """RLlib's: the key of `param` in the gradient dicts (`compute_gradients`,
        `postprocess_gradients`, `apply_gradients`): its name in the module (RLlib's torch
        learner keys them by the parameter object)."""
        name = self._names_by_param.get(param)
        if name is None:
            raise ValueError(
                f"{type(self).__name__}.get_param_ref: not a parameter of this learner's module"
            )
        return name

    def get_parameters(self, module: torch.nn.Module) -> list[torch.nn.Parameter]:
        """The parameters of `module` (the learner's module or one of its networks), as
        RLlib's TorchLearner lists them (`list(module.parameters())`)."""
        return list(module.parameters())

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The default optimizer (`DEFAULT_OPTIMIZER`), else the first registered."""
        return self._default_entry().optimizer

    def _default_entry(self) -> RegisteredOptimizer:
        return self._optimizers.get(DEFAULT_OPTIMIZER) or next(iter(self._optimizers.values()))

    def _param_names(self, params: list[Any], who: str, what: str) -> list[str]:
        names = []
        for param in params:
            name = self._names_by_param.get(param) if isinstance(param, torch.Tensor) else None
            if name is None:
                raise ValueError(
                    f"{who}: {what} holds a {type(param).__name__} that is not a parameter "
                    "of the module; use self.get_parameters(network) of the module or one "
                    "of its networks"
                )
            names.append(name)
        return names

    def _build_lr_schedulers(self, setting: Any) -> None:
        """Builds each optimizer's chain of torch lr schedulers (RLlib's
        `_torch_lr_scheduler_classes`: each factory is called with the optimizer; the chain
        steps once per `update`, after it)."""
        for factory in lr_scheduler_classes_for(setting, self.module_id):
            for entry in self._optimizers.values():
                try:
                    scheduler = factory(entry.optimizer)
                except TypeError as error:
                    raise ValueError(
                        f"_torch_lr_scheduler_classes: {factory!r} could not be built over "
                        f"optimizer {entry.name!r} ({error}); give torch lr scheduler classes "
                        "or functools.partial(scheduler class, **its arguments but the "
                        "optimizer)"
                    ) from error
                if not callable(getattr(scheduler, "step", None)) or not callable(
                    getattr(scheduler, "state_dict", None)
                ):
                    raise ValueError(
                        f"_torch_lr_scheduler_classes: {factory!r} built a "
                        f"{type(scheduler).__name__}, not a torch lr scheduler (step, "
                        "state_dict)"
                    )
                entry.lr_schedulers.append(scheduler)

    #: The step's loss (the mean over data-parallel learners) and each optimizer's gradient
    #: norm, as `_uncompiled_update` found them (None / empty: an `_update` override's step).
    _step_total_loss: float | None = None
    _step_norms: dict[str, float]

    # -- hooks (RLlib's names) -----------------------------------------------------------------
    def build(self) -> None:  # noqa: B027 - a hook; nothing to add here
        """RLlib's `Learner.build`: called once, after the learner, its optimizers, its
        learner-only modules and its learner pipeline (`self._learner_connector`, the config's
        learner pieces or None) exist and before the first update. Override (calling
        `super().build()`) to add learner pieces or check the config; it may change the
        pipeline (setting `self._learner_connector` to one when it is None)."""

    def add_learner_only_learners(self, learners: dict[str, TorchLearner]) -> None:
        """Trains these learners' modules (learner-only, by their own losses) beside this
        learner's: each takes one step on every batch `update_from_batch` steps on."""
        self.learner_only_learners.update(learners)

    @abstractmethod
    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: LearnerConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The scalar loss of `module_id` on `batch` (tensors), given the module's
        `forward_train` output; statistics go to `log_loss_stats` or `self.metrics`."""

    def compute_losses(
        self, *, fwd_out: dict[str, Any], batch: dict[str, Any], **kwargs: Any
    ) -> dict:
        """{module_id: loss} (RLlib's): of the one module this learner trains, or of each
        module of a whole MultiRLModule that has a batch (`batch[module_id]`,
        `fwd_out[module_id]`), with the module's own config. Further keyword arguments go to
        each `compute_loss_for_module` call (a meta learner's `others_loss_per_module`)."""
        if self.is_multi_module:
            return {
                module_id: self.compute_loss_for_module(
                    module_id=module_id,
                    config=self.config_for_module(module_id),
                    batch=batch[module_id],
                    fwd_out=module_out,
                    **kwargs,
                )
                for module_id, module_out in fwd_out.items()
                if module_id in batch
            }
        return {
            self.module_id: self.compute_loss_for_module(
                module_id=self.module_id, config=self.config, batch=batch, fwd_out=fwd_out, **kwargs
            )
        }

    def compute_gradients(
        self,
        loss_per_module: dict[str, torch.Tensor],
        gradient_tape: Any = None,
        **kwargs: Any,
    ) -> ParamDict:
        """Backpropagates the summed losses; returns the gradient of each parameter an
        optimizer steps, by name (parameters the loss does not reach have none).
        `gradient_tape` is RLlib's TF argument (torch records its graph itself)."""
        # All of the module's gradients, registered or not: none may carry over a step. (The
        # module's own zero_grad walks its submodules for them, about 4% of a 64x64 step.)
        for param in self._params_by_name.values():
            param.grad = None
        total_loss = sum(loss_per_module.values())
        if not isinstance(total_loss, torch.Tensor) or total_loss.grad_fn is None:
            return {}
        total_loss.backward()
        return {
            name: grad
            for entry in self._optimizers.values()
            for name in entry.param_names
            if (grad := self._params_by_name[name].grad) is not None
        }

    def gradients_of_own_losses(self, losses: dict[str, Any]) -> ParamDict:
        """Each registered optimizer's gradient: of its own loss in `losses` (by optimizer
        name) with respect to its own parameters only (RLlib's learners with several
        optimizers: SAC's, DreamerV3's). An optimizer with no loss there, or a constant one,
        gets none."""
        for param in self._params_by_name.values():
            param.grad = None
        gradients: ParamDict = {}
        for entry in self._optimizers.values():
            loss = losses.get(entry.name)
            if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
                continue
            params = [self._params_by_name[name] for name in entry.param_names]
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
            gradients.update(
                {
                    name: grad
                    for name, grad in zip(entry.param_names, grads, strict=True)
                    if grad is not None
                }
            )
        return gradients

    def _mean_over_learners(
        self, gradients: ParamDict, total_loss: float
    ) -> tuple[ParamDict, float]:
        """The mean over the data-parallel learners (`gradient_allreduce`) of every registered
        parameter's gradient (a learner whose loss did not reach a parameter counts zeros for
        it, as DistributedDataParallel; a parameter no learner's loss reached keeps no
        gradient) and of the loss. The mean is summed in float64 in rank order: every learner
        gets the same bits."""
        allreduce = self.gradient_allreduce
        assert allreduce is not None
        names = [name for entry in self._optimizers.values() for name in entry.param_names]
        params = [self._params_by_name[name] for name in names]
        parts = [
            gradients[name].detach().reshape(-1).to("cpu", torch.float64)
            if name in gradients
            else torch.zeros(param.numel(), dtype=torch.float64)
            for name, param in zip(names, params, strict=True)
        ]
        present = torch.tensor([float(name in gradients) for name in names], dtype=torch.float64)
        vector = torch.cat([*parts, present, torch.tensor([total_loss], dtype=torch.float64)])
        mean = torch.from_numpy(allreduce.mean(vector.numpy()))
        averaged: ParamDict = {}
        offset = 0
        flags = mean[-1 - len(names) : -1]
        for index, (name, param) in enumerate(zip(names, params, strict=True)):
            size = param.numel()
            if flags[index] > 0:
                averaged[name] = (
                    mean[offset : offset + size].view(param.shape).to(param.device, param.dtype)
                )
            offset += size
        return averaged, float(mean[-1])

    def gradient_size(self) -> int:
        """The numbers one all-reduce of this learner's step carries: every registered
        parameter's, a flag each, and the loss."""
        names = [name for entry in self._optimizers.values() for name in entry.param_names]
        return sum(self._params_by_name[name].numel() for name in names) + len(names) + 1

    def postprocess_gradients(self, gradients_dict: ParamDict) -> ParamDict:
        """RLlib's: each module's gradients (those of its registered optimizers) through
        `postprocess_gradients_for_module`, with the module's config; returns `gradients_dict`
        updated (clipped tensors, by parameter name)."""
        module_ids = list(dict.fromkeys(entry.module_id for entry in self._optimizers.values()))
        for module_id in module_ids:
            own = {
                name: gradients_dict[name]
                for entry in self._optimizers.values()
                if entry.module_id == module_id
                for name in entry.param_names
                if name in gradients_dict
            }
            config = (
                self.config
                if module_id in (self.module_id, ALL_MODULES)
                else self.config_for_module(module_id)
            )
            gradients_dict.update(
                self.postprocess_gradients_for_module(
                    module_id=module_id, config=config, module_gradients_dict=own
                )
            )
        return gradients_dict

    def postprocess_gradients_for_module(
        self,
        *,
        module_id: str,
        config: LearnerConfig | None = None,
        module_gradients_dict: ParamDict,
    ) -> ParamDict:
        """RLlib's: clips one module's gradients by its config's `grad_clip` /
        `grad_clip_by`, each of its optimizers' on their own; returns the dict updated."""
        config = config or self.config
        for entry in self._optimizers.values():
            if entry.module_id != module_id:
                continue
            own = {
                name: module_gradients_dict[name]
                for name in entry.param_names
                if name in module_gradients_dict
            }
            clip = self._get_clip_function()
            clip(own, grad_clip=config.grad_clip, grad_clip_by=config.grad_clip_by)
            module_gradients_dict.update(own)
        return module_gradients_dict

    @staticmethod
    def _get_clip_function() -> Callable[..., Any]:
        """RLlib's hook for the gradient clipping `postprocess_gradients_for_module` applies:
        `trainer.torch_rl.torch_utils.clip_gradients` (in place, by `grad_clip` /
        `grad_clip_by`)."""
        return clip_gradients

    @staticmethod
    def _get_global_norm_function() -> Callable[..., Any]:
        """RLlib's: the global norm of a list of gradient tensors
        (`trainer.torch_rl.torch_utils.compute_global_norm`)."""
        return compute_global_norm

    def apply_gradients(self, gradients_dict: ParamDict) -> None:
        """Sets the parameters' gradients and steps every optimizer (registration order)."""
        for name, grad in gradients_dict.items():
            self._params_by_name[name].grad = grad
        for entry in self._optimizers.values():
            optimizer_step(entry.optimizer)

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Before an update's gradient steps (RLlib's hook, in `update(batch=...)`): each
        optimizer's rate for `timesteps[NUM_ENV_STEPS_SAMPLED_LIFETIME]` (`apply_lr_schedule`).
        Override (calling super) for work before an update."""
        self.apply_lr_schedule(timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME))

    def _after_gradient_steps(self, *, timesteps: dict[str, Any]) -> None:
        """`after_gradient_based_update`'s own work (RLlib's Learner moves its lr schedules
        there): steps each optimizer's torch lr schedulers once, and the learner-only
        learners' hooks."""
        for entry in self._optimizers.values():
            for scheduler in entry.lr_schedulers:
                scheduler.step()
        for learner in self.learner_only_learners.values():
            learner.after_gradient_based_update(timesteps=timesteps)

    def log_loss_stats(self, stats: dict[str, Any]) -> None:
        """Records loss statistics (tensors or numbers) for this step's results (RLlib's
        `self.metrics.log_dict(..., key=module_id, window=1)` in a loss)."""
        self.loss_stats.update(stats)

    # -- RLlib's generic update (an algorithm's learner has its own) ---------------------------
    def update(self, *args: Any, **kwargs: Any) -> Any:
        """RLlib's `Learner.update(batch=..., timesteps=..., num_epochs=1, minibatch_size=None,
        shuffle_batch_per_epoch=False, num_total_minibatches=0)` (`update_from_batches`):
        gradient steps on a batch of columns per module. An algorithm's learner overrides it
        with its own data flow (PPO's, DQN's: `update(episodes, num_env_steps_sampled_lifetime=
        ...)`)."""
        return self.update_from_batches(*args, **kwargs)

    def update_from_batches(
        self,
        batch: Any = None,
        *,
        batches: Any = None,
        episodes: Any = None,
        timesteps: dict[str, Any] | None = None,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        num_total_minibatches: int = 0,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """RLlib's `Learner.update` on `batch`: `{module_id: {column: array or tensor}}`
        (RLlib's `MultiAgentBatch`, or what `_convert_batch_type` made of one; a learner of one
        module also takes its columns alone). `before_gradient_based_update(timesteps=...)`,
        then one gradient step per minibatch (RLlib's `MiniBatchCyclicIterator`:
        `trainer.torch_rl.minibatches`), then `after_gradient_based_update`. Returns RLlib's
        results: per module `WEIGHTS_SEQ_NO`, `MODULE_TRAIN_BATCH_SIZE_MEAN`,
        `NUM_MODULE_STEPS_TRAINED` (and `_LIFETIME`: this update's), `TOTAL_LOSS_KEY` (the
        last minibatch's), each optimizer's `<name>_learning_rate`; under `ALL_MODULES` the
        module and env steps trained; and what the loss and hooks logged to `self.metrics`."""
        if episodes is not None or batches is not None or kwargs.get("training_data") is not None:
            raise UnsupportedCall(
                f"{type(self).__name__}.update(episodes=/batches=/training_data=): a learner "
                "here makes no batch from episodes through learner connectors; give "
                "update(batch={module_id: {column: array}}), or train through the "
                "algorithm (algo.train())",
                LEARNER_CONNECTORS,
            )
        if batch is None:
            raise ValueError(f"{type(self).__name__}.update(): give batch=")
        tensors = self._convert_batch_type(batch)
        refuse_unknown_modules(tensors, self._module_ids())
        timesteps = timesteps or {}
        self.metrics.reset()
        self.before_gradient_based_update(timesteps=timesteps)
        self._weights_seq_no += 1
        results: dict[str, dict[str, Any]] = {module_id: {} for module_id in tensors}
        totals = results.setdefault(ALL_MODULES, {})
        sizes: dict[str, list[int]] = {module_id: [] for module_id in tensors}
        env_steps = 0
        stats: dict[str, Any] = {}
        with self.update_threads():
            for minibatch in cyclic_minibatches(
                tensors,
                num_epochs=num_epochs,
                minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                num_total_minibatches=num_total_minibatches,
                rng=self._minibatch_rng,
            ):
                step_batch = minibatch if self.is_multi_module else minibatch[self.module_id]
                stats = self.update_from_batch(step_batch)
                for module_id, columns in minibatch.items():
                    sizes[module_id].append(num_rows(columns))
                env_steps += minibatch.env_steps
        for module_id, module_sizes in sizes.items():
            trained = int(sum(module_sizes))
            results[module_id].update(
                {
                    WEIGHTS_SEQ_NO: self._weights_seq_no,
                    MODULE_TRAIN_BATCH_SIZE_MEAN: trained / max(len(module_sizes), 1),
                    NUM_MODULE_STEPS_TRAINED: trained,
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: trained,
                }
            )
            loss = self._last_loss_per_module.get(module_id)
            if loss is not None:
                results[module_id][self.TOTAL_LOSS_KEY] = loss
            for name, optimizer in self.get_optimizers_for_module(module_id):
                results[module_id][f"{name}_{LR_KEY}"] = self._get_optimizer_lr(optimizer)
        module_steps = sum(int(sum(module_sizes)) for module_sizes in sizes.values())
        totals.update(
            {
                NUM_MODULE_STEPS_TRAINED: module_steps,
                NUM_MODULE_STEPS_TRAINED_LIFETIME: module_steps,
                NUM_ENV_STEPS_TRAINED: env_steps,
                NUM_ENV_STEPS_TRAINED_LIFETIME: env_steps,
            }
        )
        # Each optimizer's gradient norm before clipping (the last step's), under its module
        # by its own name (RLlib's key), or under ALL_MODULES for one over all modules.
        for entry in self._optimizers.values():
            norm = stats.get(f"gradients_{entry.name}_global_norm")
            if norm is not None:
                target = results.get(entry.module_id, totals)
                target[f"gradients_{self._short_name(entry)}_global_norm"] = norm
        if not self.is_multi_module and self.loss_stats:
            results[self.module_id].update(
                {key: _to_float(value) for key, value in self.loss_stats.items()}
            )
        self.after_gradient_based_update(timesteps=timesteps)
        logged = self.metrics.compile()
        self.metrics.reset()
        for key, value in logged.items():
            if isinstance(value, dict) and isinstance(results.get(key), dict):
                results[key].update(value)
            else:
                results[key] = value
        return results

    def _module_ids(self) -> list[str]:
        """The ids of the modules this learner trains."""
        return list(self.module.keys()) if self.is_multi_module else [self.module_id]

    def _convert_batch_type(self, batch: Any) -> TensorBatches:
        """RLlib's: `batch` as tensors on the learner's device, `{module_id: {column:
        tensor}}` with the env steps it covers: a `MultiAgentBatch`-like object
        (`policy_batches`, `env_steps()` or `count`), a dict by module id, or, for a learner
        of one module, that module's columns."""
        if isinstance(batch, TensorBatches):
            return batch
        per_module = getattr(batch, "policy_batches", None)
        if per_module is None:
            if not isinstance(batch, dict):
                raise TypeError(
                    f"{type(self).__name__}.update(batch=...): give a dict of columns per "
                    f"module id, got {type(batch).__name__}"
                )
            ids = self._module_ids()
            if batch and all(isinstance(value, dict) for value in batch.values()):
                per_module = batch  # (ids it does not hold are refused by update())
            elif not self.is_multi_module:
                per_module = {self.module_id: batch}
            else:
                raise ValueError(
                    f"{type(self).__name__}.update(batch=...): a learner of several modules "
                    f"takes {{module_id: {{column: array}}}} (modules: {ids}); got columns "
                    f"{sorted(map(str, batch))[:5]}"
                )
        return tensor_batches(per_module, batch_env_steps(batch), self.device)

    # -- modules added and removed (a learner of a whole MultiRLModule) --------------------------
    def add_module(
        self,
        *,
        module_id: str,
        module_spec: Any,
        config_overrides: dict | None = None,
        new_should_module_be_updated: Any = None,
    ) -> Any:
        """RLlib's: builds the module of `module_spec` (an RLModuleSpec with its spaces), adds
        it to the learner's MultiRLModule as `module_id` and registers its optimizers
        (`configure_optimizers_for_module`, with its config: `config_overrides` become its
        `algorithm_config_overrides_per_module` entry). Returns the MultiRLModuleSpec of the
        modules now held. A learner of one module (an algorithm's, e.g. single-agent PPO's)
        adds none: the algorithm adds modules (`Algorithm.add_module`)."""
        self._require_multi_module("add_module")
        if module_id in self.module:
            raise ValueError(f"add_module({module_id!r}): the learner holds that module already")
        if config_overrides:
            self.config.rl_module(  # type: ignore[attr-defined]
                algorithm_config_overrides_per_module={module_id: dict(config_overrides)}
            )
        if new_should_module_be_updated is not None:
            self.config.multi_agent(  # type: ignore[attr-defined]
                policies_to_train=new_should_module_be_updated
            )
        module = module_spec.build()
        if not isinstance(module, TorchRLModule):
            raise TypeError(
                f"add_module({module_id!r}): {type(module).__name__} is not a TorchRLModule"
            )
        self.module.add_module(module_id, module)
        self.rl_module.add_module(str(module_id), module)
        self._refresh_parameters()
        if self.rl_module_is_compatible(module):
            returned = self.configure_optimizers_for_module(  # type: ignore[func-returns-value]
                module_id=module_id, config=self.config_for_module(module_id)
            )
            _registers_only(returned, "configure_optimizers_for_module", self)
        return self._multi_module_spec()

    def remove_module(self, module_id: str, *, new_should_module_be_updated: Any = None) -> Any:
        """RLlib's: drops module `module_id` and its optimizers; returns the MultiRLModuleSpec
        of the modules left."""
        self._require_multi_module("remove_module")
        if module_id not in self.module:
            raise KeyError(
                f"remove_module({module_id!r}): no such module (modules: {self._module_ids()})"
            )
        self.module.remove_module(module_id)
        del self.rl_module._modules[str(module_id)]
        for name, entry in list(self._optimizers.items()):
            if entry.module_id == module_id:
                del self._optimizers[name]
        self._refresh_parameters()
        self._registered_names = {
            name for entry in self._optimizers.values() for name in entry.param_names
        }
        if new_should_module_be_updated is not None:
            self.config.multi_agent(  # type: ignore[attr-defined]
                policies_to_train=new_should_module_be_updated
            )
        return self._multi_module_spec()

    def _require_multi_module(self, method: str) -> None:
        if not self.is_multi_module:
            raise UnsupportedCall(
                f"{type(self).__name__}.{method}(): this learner trains one module "
                f"({self.module_id!r}, an algorithm's learner); add and remove modules through "
                "the algorithm (algo.add_module / algo.remove_module), or build a learner of a "
                "whole MultiRLModule (config.build_learner() of a config without an algorithm "
                "class of its own)",
                MULTI_AGENT,
            )

    def _refresh_parameters(self) -> None:
        """The parameter maps, after the modules changed."""
        self.named_params = {
            name: param for name, param in self.rl_module.named_parameters() if param.requires_grad
        }
        self._names_by_param = {param: name for name, param in self.rl_module.named_parameters()}
        self._params_by_name = dict(self.rl_module.named_parameters())

    def _multi_module_spec(self) -> MultiRLModuleSpec:
        """The MultiRLModuleSpec of the modules held (RLlib's return of add/remove_module)."""
        return MultiRLModuleSpec.from_module(self.module)

    # -- one gradient step ---------------------------------------------------------------------
    def update_from_batch(self, batch: dict[str, Any]) -> dict[str, float]:
        """One gradient step on `batch` (numpy arrays or tensors by column); returns the loss
        statistics, `total_loss` and each optimizer's gradient global norm before clipping
        (`gradients_<optimizer name>_global_norm`). Raises NonFiniteUpdateError, with the
        weights unchanged, on a NaN or infinite loss or gradient."""
        if self.step_threads is None:
            return self._update_from_batch(batch)
        rows = next((len(column) for column in batch.values() if hasattr(column, "__len__")), 1)
        with self.step_threads(rows):
            return self._update_from_batch(batch)

    def _update_from_batch(self, batch: dict[str, Any]) -> dict[str, float]:
        tensors = to_train_tensors(batch, self.device)
        self.loss_stats = {}
        self._step_total_loss = None
        self._step_norms = {}
        _, loss_per_module, _ = self._update(tensors)
        self._last_loss_per_module = {
            module_id: _to_float(loss) for module_id, loss in loss_per_module.items()
        }
        total_loss = (
            float(sum(self._last_loss_per_module.values()))
            if self._step_total_loss is None
            else self._step_total_loss
        )
        stats = {key: _to_float(value) for key, value in self.loss_stats.items()}
        stats["total_loss"] = total_loss
        for name, norm in self._step_norms.items():
            stats[f"gradients_{name}_global_norm"] = norm
        for module_id, learner in self.learner_only_learners.items():
            self.learner_only_results[module_id] = learner.step(batch)
        return stats

    def _update(self, batch: dict[str, Any], **kwargs: Any) -> tuple[Any, Any, Any]:
        """RLlib's hook for one gradient step on a minibatch (tensors by column), called once
        per minibatch by `update`: `_uncompiled_update` (torch.compile is not used here).
        Returns RLlib's `(fwd_out, loss_per_module, metrics)`."""
        return self._uncompiled_update(batch, **kwargs)

    def _uncompiled_update(self, batch: dict[str, Any], **kwargs: Any) -> tuple[Any, Any, Any]:
        """One gradient step (RLlib's): `forward_train`, `compute_losses`,
        `compute_gradients`, then (with data-parallel learners) the mean over the learners,
        a refusal of a NaN or infinite loss or gradient before it reaches the weights,
        `postprocess_gradients` and `apply_gradients`."""
        self._step_total_loss = None
        self._step_norms = {}
        fwd_out = self.rl_module.forward_train(batch)
        loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=batch)
        total_loss = float(sum(_to_float(loss) for loss in loss_per_module.values()))
        gradients = self.compute_gradients(loss_per_module)
        if self.gradient_allreduce is not None:  # the mean over the data-parallel learners
            gradients, total_loss = self._mean_over_learners(gradients, total_loss)
        norms = {
            entry.name: global_norm([gradients[n] for n in entry.param_names if n in gradients])
            for entry in self._optimizers.values()
        }
        # Before the step: a NaN or infinite loss or gradient must not reach the weights. Where
        # every gradient is a registered optimizer's (as `compute_gradients` returns them), the
        # norm of all of them comes from the optimizers' norms, with no second pass over them.
        all_norm = (
            math.hypot(*norms.values())
            if gradients.keys() <= self._registered_names
            else global_norm(list(gradients.values()))
        )
        check_finite_update(total_loss, all_norm, self.algorithm_name)
        self.apply_gradients(self.postprocess_gradients(gradients))
        self._step_total_loss, self._step_norms = total_loss, norms
        return fwd_out, loss_per_module, {}

    @staticmethod
    def _get_optimizer_lr(optimizer: torch.optim.Optimizer) -> float:
        """RLlib's hook for an optimizer's current rate (its first parameter group's), read
        wherever an update reports rates (`<optimizer name>_learning_rate`, `curr_lr`)."""
        return float(optimizer.param_groups[0]["lr"])

    @staticmethod
    def _set_optimizer_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
        """RLlib's hook to set an optimizer's rate (every parameter group's)."""
        for group in optimizer.param_groups:
            group["lr"] = lr

    def step(self, batch: dict[str, Any]) -> dict[str, Any]:
        """One gradient step on `batch`: its loss statistics, what the loss logged to
        `self.metrics` and the default optimizer's rate (`curr_lr`)."""
        stats: dict[str, Any] = self.update_from_batch(batch)
        stats.update(self.update_results())
        stats["curr_lr"] = stats[DEFAULT_OPTIMIZER_LR_KEY] = self.current_lr
        return stats

    def evaluation_loss(self, batch: dict[str, Any]) -> dict[str, float]:
        """The loss statistics of `batch` (`total_loss` among them) with no step and the
        learner's state as it was (offline evaluation, RLlib's offline evaluation runner's
        loss): the forward pass and the loss without gradients, the algorithm's own state (a
        moving average, a generator's) restored after."""
        state = self.get_extra_state()
        tensors = to_train_tensors(batch, self.device)
        self.loss_stats = {}
        try:
            with torch.no_grad():
                fwd_out = self.rl_module.forward_train(tensors)
                loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=tensors)
        finally:
            self.set_extra_state(state)
            self.metrics.reset()
        stats = {key: _to_float(value) for key, value in self.loss_stats.items()}
        stats["total_loss"] = float(sum(_to_float(loss) for loss in loss_per_module.values()))
        return stats

    def apply_lr_schedule(self, num_env_steps_sampled_lifetime: int | None) -> None:
        """Sets each optimizer's rate from its `lr_or_lr_schedule` (a constant rate is left as
        it is: it may have come from a checkpoint). With torch lr schedulers, they own the
        rates and this does nothing (as RLlib's TorchLearner)."""
        for learner in self.learner_only_learners.values():  # (each on its own rates)
            learner.apply_lr_schedule(num_env_steps_sampled_lifetime)
        if any(entry.lr_schedulers for entry in self._optimizers.values()):
            return
        for entry in self._optimizers.values():
            if entry.learning_rate is None:
                continue
            rate = entry.learning_rate.scheduled(num_env_steps_sampled_lifetime)
            if rate is not None:
                entry.set_lr(rate)

    def update_results(self) -> dict[str, Any]:
        """What the update logged to `self.metrics` (those under this module's id by their
        own name), and the rate of each optimizer but the default one
        (`<optimizer name>_learning_rate`; the default's is `curr_lr`); starts the metrics
        over for the next update."""
        logged = self.metrics.compile()
        self.metrics.reset()
        results: dict[str, Any] = {}
        for key, value in logged.items():
            if key == self.module_id and isinstance(value, dict):
                results.update(value)
            else:
                results[key] = value
        for entry in self._optimizers.values():
            if entry.name != DEFAULT_OPTIMIZER:
                results[f"{entry.name}_{LR_KEY}"] = self._entry_lr(entry)
        return results

    def _entry_lr(self, entry: RegisteredOptimizer) -> float:
        """An optimizer's rate: `_get_optimizer_lr` of a built one (one not built yet has no
        torch optimizer to read: its set rate)."""
        return self._get_optimizer_lr(entry.optimizer) if entry.built else entry.lr[0]

    def get_weights(self) -> Any:
        """The weights the EnvRunners sample with; of a whole MultiRLModule, each module's
        inference-only state by module id."""
        if self.is_multi_module:
            return {
                module_id: module.get_state(inference_only=True)
                for module_id, module in self.module.items()
            }
        return super().get_weights()

    def set_weights(self, weights: Any) -> None:
        """Sets the module's weights (`get_weights()`'s form; of a whole MultiRLModule,
        `{module_id: weights}` for some of its modules, each checked before any is set)."""
        if not self.is_multi_module:
            super().set_weights(weights)
            return
        unknown = sorted(map(str, set(weights) - set(self.module.keys())))
        if unknown:
            raise KeyError(
                f"set_weights(): no module {unknown[0]!r} on this learner (modules: "
                f"{sorted(map(str, self.module.keys()))})"
            )
        for module_id, module_weights in weights.items():
            self.module[module_id].check_weights(module_weights, f"weights[{module_id!r}]")
        for module_id, module_weights in weights.items():
            self.module[module_id].set_state(module_weights)

    @property
    def current_lr(self) -> float:
        """The default optimizer's rate (`_get_optimizer_lr`: its first parameter group's)."""
        return self._entry_lr(self._default_entry())

    @property
    def device(self) -> torch.device:
        for param in self.rl_module.parameters():
            return param.device
        return torch.device("cpu")

    # -- state -------------------------------------------------------------------------------
    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        """{"module": the module's state, "optimizer": {optimizer name: {"lr": [each
        parameter group's rate], "param_state": {parameter name: {state name: array or
        number}}, "lr_schedulers": [each torch lr scheduler's state_dict, plain data]}}}, as
        copies (later steps update the tensors in place); with RLlib's `components=` /
        `not_components=`, in RLlib's layout (`trainer.core.learner_components`; `kwargs` such
        as `inference_only=True` go to the module's `get_state`)."""
        # Copies: TorchRLModule.get_state's arrays may share memory with the parameters.
        module_state = {
            key: np.array(value) for key, value in self.rl_module.get_state(**kwargs).items()
        }
        optimizers = {
            name: self._optimizer_state(entry) for name, entry in self._optimizers.items()
        }
        state = {"module": module_state, "optimizer": optimizers, **self.get_extra_state()}
        if self.learner_only_learners:
            state[LEARNER_ONLY_KEY] = {
                module_id: learner.get_state()
                for module_id, learner in self.learner_only_learners.items()
            }
        if components is None and not_components is None:
            return state
        return rllib_learner_state(self, state, components, not_components)

    def check_state(self, state: dict, where: str = "learner") -> None:
        """Raises `StateError` unless `state` fits this learner; changes nothing."""
        learner_only = (LEARNER_ONLY_KEY,) if self.learner_only_learners else ()
        require_map(state, where, ("module", "optimizer", *self.extra_state_keys, *learner_only))
        self._check_module_state(state["module"], f"{where}['module']")
        self._check_optimizers_state(state["optimizer"], f"{where}['optimizer']")
        self.check_extra_state(state, where)
        if self.learner_only_learners:
            states = require_map(
                state[LEARNER_ONLY_KEY],
                f"{where}[{LEARNER_ONLY_KEY!r}]",
                self.learner_only_learners,
            )
            for module_id, learner in self.learner_only_learners.items():
                learner.check_state(
                    states[module_id], f"{where}[{LEARNER_ONLY_KEY!r}][{module_id!r}]"
                )

    def set_state(self, state: dict) -> None:
        state = own_learner_state(self, state, lambda: TorchLearner.get_state(self))
        self.check_state(state)
        self.rl_module.set_state(state["module"])
        for name, entry in self._optimizers.items():
            self._set_one_optimizer_state(entry, state["optimizer"][name])
        self.set_extra_state(state)
        for module_id, learner in self.learner_only_learners.items():
            learner.set_state(state[LEARNER_ONLY_KEY][module_id])

    def _check_optimizers_state(self, state: Any, where: str) -> None:
        """Raises `StateError` unless `state` holds a fitting state of each registered
        optimizer, by full name, and of no other."""
        optimizers = require_map(state, where, self._optimizers)
        unknown = sorted(set(optimizers) - set(self._optimizers))
        if unknown:
            raise StateError(
                where,
                f"has optimizers this learner did not register: {unknown} (registered: "
                f"{list(self._optimizers)})",
            )
        for name, entry in self._optimizers.items():
            self._check_optimizer_state(entry, optimizers[name], f"{where}[{name!r}]")

    def _optimizer_state(self, entry: RegisteredOptimizer) -> dict:
        if not entry.built:  # a fresh optimizer's state: no per-parameter state yet
            return {"lr": entry.lr, "param_state": {}, "lr_schedulers": []}
        param_state: dict[str, dict[str, Any]] = {}
        for param, entries in entry.optimizer.state.items():
            param_state[self._names_by_param[param]] = {
                key: _plain(value) for key, value in entries.items()
            }
        return {
            "lr": [float(group["lr"]) for group in entry.optimizer.param_groups],
            "param_state": param_state,
            "lr_schedulers": [
                _plain_tree(scheduler.state_dict(), f"lr scheduler {type(scheduler).__name__}")
                for scheduler in entry.lr_schedulers
            ],
        }

    def _set_one_optimizer_state(self, entry: RegisteredOptimizer, state: dict) -> None:
        if not entry.built and not state["param_state"] and not entry.lr_schedulers:
            # A fresh optimizer's state (saved before any step): its rate is all there is.
            entry.set_lr(float(state["lr"][0]))
            return
        # Through torch's load_state_dict (positions by the optimizer's parameter order), so
        # torch casts the moments to each parameter's dtype and device as it does for its own.
        optimizer = entry.optimizer
        position = {
            self._names_by_param[param]: index
            for index, param in enumerate(
                p for group in optimizer.param_groups for p in group["params"]
            )
        }
        step_dtype = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        torch_state = {}
        for name, entries in state["param_state"].items():
            torch_state[position[name]] = {
                key: (
                    torch.tensor(float(value), dtype=step_dtype)
                    if key == "step"
                    else torch.from_numpy(np.array(value))
                    if isinstance(value, np.ndarray)
                    else value
                )
                for key, value in entries.items()
            }
        full = optimizer.state_dict()
        full["state"] = torch_state
        for group, rate in zip(full["param_groups"], state["lr"], strict=True):
            group["lr"] = float(rate)
        optimizer.load_state_dict(full)
        _moments_in_parameter_layout(optimizer)
        for scheduler, scheduler_state in zip(
            entry.lr_schedulers, state["lr_schedulers"], strict=True
        ):
            scheduler.load_state_dict(copy.deepcopy(scheduler_state))

    def _check_module_state(self, state: Any, where: str) -> None:
        own = self.rl_module.state_dict()
        require_map(state, where, own)
        unknown = sorted(set(state) - set(own))
        if unknown:
            raise StateError(where, f"has weights this module lacks: {unknown[:5]}")
        for key, tensor in own.items():
            value = state[key]
            place = f"{where}[{key!r}]"
            if tensor.is_floating_point():
                require_float_array(value, place, tuple(tensor.shape))
            else:
                if not isinstance(value, np.ndarray):
                    raise StateError(place, f"expected an array, got {type(value).__name__}")
                if value.shape != tuple(tensor.shape) or value.dtype.kind not in "biu":
                    raise StateError(
                        place,
                        f"expected an integer array of shape {list(tensor.shape)}, got "
                        f"dtype {value.dtype}, shape {list(value.shape)}",
                    )

    def _check_optimizer_state(self, entry: RegisteredOptimizer, state: Any, where: str) -> None:
        require_map(state, where, ("lr", "param_state", "lr_schedulers"))
        num_groups = len(entry.lr)
        rates = state["lr"]
        if not isinstance(rates, list) or len(rates) != num_groups:
            raise StateError(
                f"{where}['lr']",
                f"expected a list of {num_groups} rate(s), one per parameter group, got {rates!r}",
            )
        for index, rate in enumerate(rates):
            require_number(rate, f"{where}['lr'][{index}]", minimum=0.0)
        param_state = require_map(state["param_state"], f"{where}['param_state']")
        # (The default Adam not built yet keeps Adam's keys: checking a state does not build
        # it.)
        expected_keys = (
            (_expected_optimizer_keys(entry.optimizer) if entry.built else _ADAM_STATE_KEYS)
            if param_state
            else None
        )
        for name, entries in param_state.items():
            place = f"{where}['param_state'][{name!r}]"
            if name not in entry.param_names:
                raise StateError(
                    place,
                    f"not a parameter of optimizer {entry.name!r} (its: "
                    f"{entry.param_names[:5]}...)",
                )
            require_map(entries, place, expected_keys or ())
            if expected_keys is not None and set(entries) != set(expected_keys):
                extra = sorted(set(entries) - set(expected_keys))
                raise StateError(place, f"unknown optimizer state {extra}")
            shape = tuple(self._params_by_name[name].shape)
            for key, value in entries.items():
                if isinstance(value, np.ndarray):
                    array = require_float_array(value, f"{place}[{key!r}]", shape)
                    if key in ("exp_avg_sq", "max_exp_avg_sq") and (array < 0).any():
                        raise StateError(
                            f"{place}[{key!r}]", "Adam's second moment cannot be negative"
                        )
                elif value is not None:  # (SGD without momentum keeps None buffers)
                    require_number(value, f"{place}[{key!r}]", minimum=0.0)
        self._check_scheduler_states(entry, state["lr_schedulers"], f"{where}['lr_schedulers']")

    @staticmethod
    def _check_scheduler_states(entry: RegisteredOptimizer, states: Any, where: str) -> None:
        """Each torch lr scheduler's saved state: a map with its own state_dict's keys."""
        if not isinstance(states, list) or len(states) != len(entry.lr_schedulers):
            raise StateError(
                where,
                f"expected a list of {len(entry.lr_schedulers)} lr scheduler state(s) "
                f"(_torch_lr_scheduler_classes), got {type(states).__name__} of "
                f"{len(states) if isinstance(states, list) else '?'}",
            )
        for index, (scheduler, saved) in enumerate(zip(entry.lr_schedulers, states, strict=True)):
            own = scheduler.state_dict()
            place = f"{where}[{index}]"
            require_map(saved, place, own)
            unknown = sorted(set(saved) - set(own))
            if unknown:
                raise StateError(
                    place, f"has entries a {type(scheduler).__name__} lacks: {unknown[:5]}"
                )
            for key in ("last_epoch", "_step_count"):
                if key in own:
                    require_int(saved[key], f"{place}[{key!r}]", minimum=None)


def _expected_optimizer_keys(optimizer: torch.optim.Optimizer) -> tuple[str, ...] | None:
    """The per-parameter state keys of torch's Adam / AdamW (None for other optimizers: any
    arrays of the parameter's shape, numbers and None)."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
        return None
    if any(group.get("amsgrad") for group in optimizer.param_groups):
        return (*_ADAM_STATE_KEYS, "max_exp_avg_sq")
    return _ADAM_STATE_KEYS


def _plain_tree(value: Any, where: str) -> Any:
    """A state_dict as msgpack's plain data: tensors as numbers or arrays, tuples as lists;
    anything else (a function, an object) is refused by name."""
    if isinstance(value, dict):
        return {str(key): _plain_tree(item, f"{where}[{key!r}]") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_tree(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (torch.Tensor, np.ndarray, np.generic)):
        return _plain(torch.as_tensor(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"{where}: holds a {type(value).__name__}, which a checkpoint cannot store as plain "
        "data (numbers, strings, lists, dicts and arrays)"
    )


def _metric_value(value: Any) -> Any:
    """A logged value as the metrics keep it: a tensor detached, as a number (one element)
    or a numpy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.item() if value.numel() == 1 else value.numpy()
    return value


def _plain(value: Any) -> Any:
    """An optimizer state entry as plain data: a 0-d tensor as a number, a tensor as a numpy
    copy (the optimizer updates its tensors in place)."""
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return value.item()
        return value.detach().cpu().numpy().copy()
    return value


def _to_float(value: Any) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.detach())
    return float(value)


__all__ = [
    "ALL_MODULES",
    "DEFAULT_OPTIMIZER",
    "LR_KEY",
    "LearnerMetrics",
    "RegisteredOptimizer",
    "TorchLearner",
    "AdaptiveTorchThreads",
    "OwnGenerator",
    "TorchThreads",
    "adam_kernel",
    "clip_gradients",
    "global_norm",
]
