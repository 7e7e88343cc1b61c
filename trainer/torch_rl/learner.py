"""`TorchLearner` (RLlib's `ray.rllib.core.learner.torch.TorchLearner`): the base of a learner
that trains a `TorchRLModule` with a torch optimizer, as this trainer's `Learner`.

One gradient step (`update_from_batch`) runs RLlib's steps, each an overridable hook:
`module.forward_train(batch)`, `compute_loss_for_module(...)` (the algorithm's loss),
`compute_gradients` (backward), `postprocess_gradients` (clipping by `grad_clip` /
`grad_clip_by`), `apply_gradients` (the optimizer step). Before the step, a NaN or infinite loss
or gradient raises `trainer.errors.NonFiniteUpdateError` with the weights unchanged (RLlib zeroes
or skips such gradients instead; this trainer stops, as its numpy learners do).

The state is plain data and numpy arrays (msgpack, never pickle): the module's `get_state()`,
and the optimizer's per-parameter state keyed by the module's parameter names (torch's own
`state_dict()` keys them by position).
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.algorithms.algorithm_config import adam_settings
from trainer.algorithms.learner import Learner, LearningRate
from trainer.core.blas import BLAS_THREAD_VARS
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.nn import check_finite_update
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.util.state_checks import (
    StateError,
    require_float_array,
    require_map,
    require_number,
)

if TYPE_CHECKING:
    from trainer.algorithms.algorithm_config import AlgorithmConfig

#: Gradients by parameter name (RLlib's `ParamDict` keys them by parameter reference).
ParamDict = dict[str, torch.Tensor]

#: The statistic every update reports: the gradient's global L2 norm before clipping (RLlib's
#: name for the default optimizer's).
GLOBAL_NORM_KEY = "gradients_default_optimizer_global_norm"

#: The per-parameter state torch's Adam keeps (with amsgrad, also "max_exp_avg_sq").
_ADAM_STATE_KEYS = ("exp_avg", "exp_avg_sq", "step")


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
        self.num_threads = num_threads
        #: True when the user sized the pools: torch's thread count is then left alone.
        self.user_sized = any(var in os.environ for var in BLAS_THREAD_VARS)

    @contextmanager
    def __call__(self) -> Iterator[None]:
        """torch's intra-op pool at `num_threads` for the `with` block, then as it was."""
        previous = torch.get_num_threads()
        if self.user_sized or previous == self.num_threads:
            yield
            return
        torch.set_num_threads(self.num_threads)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


def global_norm(gradients: list[torch.Tensor]) -> float:
    """The L2 norm of all `gradients` together: NaN or infinite when any element is (RLlib's
    `compute_global_norm` maps infinities to 1e9; the finite check needs to see them)."""
    if not gradients:
        return 0.0
    norms = torch.stack([torch.linalg.vector_norm(g.detach()) for g in gradients])
    return float(torch.linalg.vector_norm(norms))


def clip_gradients(gradients: ParamDict, *, grad_clip: float | None, grad_clip_by: str) -> None:
    """Clips `gradients` in place as RLlib's torch learner does (`torch_utils.clip_gradients`):
    "value" clips each element to [-grad_clip, grad_clip]; "norm" scales each tensor whose L2
    norm exceeds grad_clip down to it; "global_norm" scales all of them by
    grad_clip / max(global norm + 1e-6, grad_clip). None: no clipping."""
    if grad_clip is None:
        return
    if grad_clip_by == "value":
        for name, grad in gradients.items():
            gradients[name] = torch.clip(grad, -grad_clip, grad_clip)
    elif grad_clip_by == "norm":
        for grad in gradients.values():
            norm = torch.linalg.vector_norm(grad).nan_to_num(neginf=-10e8, posinf=10e8)
            if norm > grad_clip:
                grad.mul_(grad_clip / norm)
    elif grad_clip_by == "global_norm":
        grads = list(gradients.values())
        if not grads:
            return
        norms = torch.stack(
            [
                torch.linalg.vector_norm(g.detach()).nan_to_num(neginf=-10e8, posinf=10e8)
                for g in grads
            ]
        )
        total = torch.linalg.vector_norm(norms).nan_to_num(neginf=-10e8, posinf=10e8)
        # A coefficient in (0, 1]: below grad_clip the gradients stay as they are.
        coefficient = torch.clamp(grad_clip / torch.clamp(total + 1e-6, min=grad_clip), max=1.0)
        for grad in grads:
            grad.detach().mul_(coefficient)
    else:
        raise ValueError(
            f"grad_clip_by={grad_clip_by!r}: must be one of 'value', 'norm', 'global_norm'"
        )


def to_train_tensors(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """A numpy batch as torch tensors on `device`; float64 arrays become float32 (as RLlib's
    `convert_to_torch_tensor`), other dtypes stay. Nested columns (a Dict / Tuple space's
    observations) become dicts / tuples of tensors."""
    return {key: _train_tensor(value, device) for key, value in batch.items()}


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


class TorchLearner(Learner):
    """Trains one `TorchRLModule` (the full module, not an inference-only copy) with Adam (or
    what `configure_optimizers_for_module` returns). Subclasses define `update` (the data flow
    of their algorithm) and `compute_loss_for_module` (their loss); see the module docstring."""

    #: The algorithm's name in error messages (NonFiniteUpdateError).
    algorithm_name = "Torch"

    def __init__(
        self,
        config: AlgorithmConfig,
        module: Any,
        *,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the algorithm's config (lr, optimizer, grad_clip, grad_clip_by, ...);
        `module`: the TorchRLModule to train, built by the caller, or a view of one (an object
        whose `rl_module` is the TorchRLModule, as `TorchModuleView`): `self.module` is what
        was given (the Algorithm reads weights through it), `self.rl_module` the torch module
        trained; `module_id`: its id (what `compute_loss_for_module` is called with)."""
        rl_module = getattr(module, "rl_module", module)
        if not isinstance(rl_module, TorchRLModule):
            raise TypeError(
                f"{type(self).__name__}: module must be a TorchRLModule (or a view of one), "
                f"got {type(rl_module).__name__}"
            )
        if rl_module.inference_only:
            raise ValueError(
                f"{type(self).__name__}: module is an inference-only copy "
                "(inference_only=True); a learner trains the full module"
            )
        self.config = config
        self.module = module
        self.rl_module: TorchRLModule = rl_module
        self.module_id = module_id
        self.learning_rate = LearningRate(config.lr)
        #: The trainable parameters by name (`named_parameters()` order).
        self.named_params: dict[str, torch.nn.Parameter] = {
            name: param for name, param in rl_module.named_parameters() if param.requires_grad
        }
        self.optimizer = self.configure_optimizers_for_module(module_id, config)
        self._check_optimizer_params()
        self._names_by_param = {param: name for name, param in self.named_params.items()}
        #: The loss statistics the last `compute_loss_for_module` logged (`log_loss_stats`).
        self.loss_stats: dict[str, Any] = {}
        #: Updates run on one torch thread unless the user sized the pools.
        self.update_threads = TorchThreads()

    # -- hooks (RLlib's names) -----------------------------------------------------------------
    def configure_optimizers_for_module(
        self, module_id: str, config: AlgorithmConfig
    ) -> torch.optim.Optimizer:
        """The optimizer of the module's parameters: Adam with the config's `lr` (its
        schedule's first rate) and `optimizer` settings (betas, eps). RLlib's registers the
        optimizer instead of returning it; override to use another (its state must be
        tensors of the parameters' shapes and numbers)."""
        return torch.optim.Adam(
            list(self.named_params.values()),
            lr=self.learning_rate.initial,
            **adam_settings(config.optimizer),
        )

    @abstractmethod
    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: AlgorithmConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The scalar loss of `module_id` on `batch` (tensors), given the module's
        `forward_train` output; statistics go to `log_loss_stats`."""

    def compute_losses(self, *, fwd_out: dict[str, Any], batch: dict[str, Any]) -> dict:
        """{module_id: loss} (RLlib's, for the one module this learner trains)."""
        return {
            self.module_id: self.compute_loss_for_module(
                module_id=self.module_id, config=self.config, batch=batch, fwd_out=fwd_out
            )
        }

    def compute_gradients(self, loss_per_module: dict[str, torch.Tensor]) -> ParamDict:
        """Backpropagates the summed losses; returns each trainable parameter's gradient by
        name (parameters the loss does not reach have none)."""
        self.optimizer.zero_grad(set_to_none=True)
        total_loss = sum(loss_per_module.values())
        if not isinstance(total_loss, torch.Tensor) or total_loss.grad_fn is None:
            return {}
        total_loss.backward()
        return {
            name: param.grad for name, param in self.named_params.items() if param.grad is not None
        }

    def postprocess_gradients(self, gradients: ParamDict) -> ParamDict:
        """Clips the gradients by the config's `grad_clip` / `grad_clip_by` (in place)."""
        clip_gradients(
            gradients,
            grad_clip=self.config.grad_clip,
            grad_clip_by=self.config.grad_clip_by,
        )
        return gradients

    def apply_gradients(self, gradients: ParamDict) -> None:
        """Sets the parameters' gradients and takes the optimizer's step."""
        for name, grad in gradients.items():
            self.named_params[name].grad = grad
        self.optimizer.step()

    def log_loss_stats(self, stats: dict[str, Any]) -> None:
        """Records loss statistics (tensors or numbers) for this step's results (RLlib's
        `self.metrics.log_dict(..., key=module_id, window=1)` in a loss)."""
        self.loss_stats.update(stats)

    # -- one gradient step ---------------------------------------------------------------------
    def update_from_batch(self, batch: dict[str, Any]) -> dict[str, float]:
        """One gradient step on `batch` (numpy arrays or tensors by column); returns the loss
        statistics, `total_loss` and the gradient's global norm before clipping. Raises
        NonFiniteUpdateError, with the weights unchanged, on a NaN or infinite loss or
        gradient."""
        tensors = to_train_tensors(batch, self.device)
        self.loss_stats = {}
        fwd_out = self.rl_module.forward_train(tensors)
        loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=tensors)
        total_loss = float(sum(_to_float(loss) for loss in loss_per_module.values()))
        gradients = self.compute_gradients(loss_per_module)
        norm = global_norm(list(gradients.values()))
        # Before the step: a NaN or infinite loss or gradient must not reach the weights.
        check_finite_update(total_loss, norm, self.algorithm_name)
        self.apply_gradients(self.postprocess_gradients(gradients))
        stats = {key: _to_float(value) for key, value in self.loss_stats.items()}
        stats["total_loss"] = total_loss
        stats[GLOBAL_NORM_KEY] = norm
        return stats

    def apply_lr_schedule(self, num_env_steps_sampled_lifetime: int | None) -> None:
        """Sets every parameter group's rate from the lr schedule (a constant rate is left as
        it is: it may have come from a checkpoint)."""
        rate = self.learning_rate.scheduled(num_env_steps_sampled_lifetime)
        if rate is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = rate

    @property
    def current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @property
    def device(self) -> torch.device:
        for param in self.rl_module.parameters():
            return param.device
        return torch.device("cpu")

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """{"module": the module's state, "optimizer": {"lr", "param_state": {parameter name:
        {state name: array or number}}}}, as copies (later steps update the tensors in
        place)."""
        # Copies: TorchRLModule.get_state's arrays may share memory with the parameters.
        module_state = {key: np.array(value) for key, value in self.rl_module.get_state().items()}
        return {"module": module_state, "optimizer": self._optimizer_state()}

    def check_state(self, state: dict, where: str = "learner") -> None:
        """Raises `StateError` unless `state` fits this learner; changes nothing."""
        require_map(state, where, ("module", "optimizer"))
        self._check_module_state(state["module"], f"{where}['module']")
        self._check_optimizer_state(state["optimizer"], f"{where}['optimizer']")

    def set_state(self, state: dict) -> None:
        self.check_state(state)
        self.rl_module.set_state(state["module"])
        self._set_optimizer_state(state["optimizer"])

    def _optimizer_state(self) -> dict:
        param_state: dict[str, dict[str, Any]] = {}
        for param, entries in self.optimizer.state.items():
            param_state[self._names_by_param[param]] = {
                key: _plain(value) for key, value in entries.items()
            }
        return {"lr": self.current_lr, "param_state": param_state}

    def _set_optimizer_state(self, state: dict) -> None:
        # Through torch's load_state_dict (positions by the optimizer's parameter order), so
        # torch casts the moments to each parameter's dtype and device as it does for its own.
        position = {
            self._names_by_param[param]: index
            for index, param in enumerate(
                p for group in self.optimizer.param_groups for p in group["params"]
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
        full = self.optimizer.state_dict()
        full["state"] = torch_state
        for group in full["param_groups"]:
            group["lr"] = float(state["lr"])
        self.optimizer.load_state_dict(full)

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

    def _check_optimizer_state(self, state: Any, where: str) -> None:
        require_map(state, where, ("lr", "param_state"))
        require_number(state["lr"], f"{where}['lr']", minimum=0.0)
        param_state = require_map(state["param_state"], f"{where}['param_state']")
        expected_keys = self._expected_optimizer_keys()
        for name, entries in param_state.items():
            place = f"{where}['param_state'][{name!r}]"
            if name not in self.named_params:
                raise StateError(
                    place,
                    f"no trainable parameter of that name (the module's: "
                    f"{list(self.named_params)[:5]}...)",
                )
            require_map(entries, place, expected_keys or ())
            if expected_keys is not None and set(entries) != set(expected_keys):
                extra = sorted(set(entries) - set(expected_keys))
                raise StateError(place, f"unknown optimizer state {extra}")
            shape = tuple(self.named_params[name].shape)
            for key, value in entries.items():
                if isinstance(value, np.ndarray):
                    array = require_float_array(value, f"{place}[{key!r}]", shape)
                    if key in ("exp_avg_sq", "max_exp_avg_sq") and (array < 0).any():
                        raise StateError(
                            f"{place}[{key!r}]", "Adam's second moment cannot be negative"
                        )
                elif value is not None:  # (SGD without momentum keeps None buffers)
                    require_number(value, f"{place}[{key!r}]", minimum=0.0)

    def _expected_optimizer_keys(self) -> tuple[str, ...] | None:
        """The per-parameter state keys of torch's Adam / AdamW (None for other
        optimizers: any arrays of the parameter's shape, numbers and None)."""
        if type(self.optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
            return None
        if any(group.get("amsgrad") for group in self.optimizer.param_groups):
            return (*_ADAM_STATE_KEYS, "max_exp_avg_sq")
        return _ADAM_STATE_KEYS

    def _check_optimizer_params(self) -> None:
        own = set(self.named_params.values())
        foreign = [
            param
            for group in self.optimizer.param_groups
            for param in group["params"]
            if param not in own
        ]
        if foreign:
            raise ValueError(
                f"{type(self).__name__}.configure_optimizers_for_module: the optimizer holds "
                f"{len(foreign)} tensor(s) that are not trainable parameters of the module"
            )


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


__all__ = ["TorchLearner", "TorchThreads", "clip_gradients", "global_norm"]
