"""A torch learner's module and Adam mirrored in numpy, for updates computed in numpy.

RLlib's default framework is torch, so unmodified RLlib scripts train the default torch
learners on the default torch modules. For the small networks RL trains on a CPU, most of a
torch gradient step is per-operation dispatch (autograd's records, tensor wrapping, the
optimizer's loops), not arithmetic; the numpy learners take the same step several times
faster (`bench/learner.py --framework torch`). An algorithm whose numpy learner has the same
networks as its default torch module can therefore compute the torch learner's update in
numpy. Whether it does is the algorithm's own choice: its torch learner builds the update its
folder defines (its `numpy_update` module: PPO and DQN have one) and says when that update
serves (its own class, its default module, this file's `plain_adam`); nothing here lists the
algorithms. This file keeps the two sides the same:

    torch parameters  ==  numpy module's flat parameters (one memory: each torch parameter's
                          data is a view of the numpy buffer, a weight matrix's `(in, out)`
                          numpy view transposed, so a numpy step is a torch step, and a torch
                          write, a restore or a target network's update in torch, is seen by
                          numpy; shared again if a parameter's memory was replaced)
    torch Adam's exp_avg / exp_avg_sq / step
        |  pull(): before an update, when torch's state was replaced (a restore) or stepped
        |  (a torch update: its step counts' version counters)
        v
    numpy Adam's m, v, step_count
        |  flush_optimizer(): when the torch optimizer is read (`get_state`,
        |  `get_optimizer`) or steps in torch (its state created as torch's Adam creates it
        v  on its first step)
    torch Adam's state

The torch optimizer must be a plain `torch.optim.Adam` over the trained parameters
(`plain_adam`): one parameter group, no amsgrad, weight decay, maximize or differentiable,
no torch lr scheduler, float32 parameters on the CPU. Everything else updates in torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.nn.modules import module as torch_module

from trainer.core.learner import DEFAULT_OPTIMIZER, adam_settings
from trainer.core.models import FlatParameterModule
from trainer.core.nn import Adam
from trainer.core.rl_module import RLModuleSpec
from trainer.torch_rl.numpy_inference import NUMPY_FORWARD_CLASS, has_hooks

#: torch Adam's per-parameter state (`optimizer.state[param]`).
EXP_AVG, EXP_AVG_SQ, STEP = "exp_avg", "exp_avg_sq", "step"
_ADAM_STATE_KEYS = {EXP_AVG, EXP_AVG_SQ, STEP}
#: Adam options under which torch's update is the numpy `Adam`'s.
_PLAIN_ADAM = {"amsgrad": False, "weight_decay": 0, "maximize": False, "differentiable": False}


def plain_adam(learner: Any) -> Any:
    """The learner's one optimizer's entry (`RegisteredOptimizer`) when it is a plain torch
    Adam over the trainable parameters of its module (and perhaps its frozen ones), all
    float32 on the CPU, with no torch lr scheduler; None otherwise (see the module
    docstring). The default Adam not built yet (`RegisteredOptimizer.built`) is one: it is
    built on first use, so the numpy update never builds it."""
    optimizers = learner._optimizers
    if list(optimizers) != [DEFAULT_OPTIMIZER]:
        return None
    entry = optimizers[DEFAULT_OPTIMIZER]
    if entry.lr_schedulers:
        return None
    params = list(learner.rl_module.parameters())
    if any(p.device.type != "cpu" or p.dtype != torch.float32 for p in params):
        return None
    if not entry.built:
        return entry
    optimizer = entry.optimizer
    if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
        return None
    group = optimizer.param_groups[0]
    if any(group.get(key, value) != value for key, value in _PLAIN_ADAM.items()):
        return None
    if group.get("capturable") or isinstance(group["lr"], torch.Tensor):
        return None
    # Every trainable parameter, and perhaps frozen ones, which get no gradient and so no
    # step and no state (RLlib's default optimizer takes all of a DQN module's parameters,
    # its target networks' too).
    stepped = {id(p) for p in group["params"]}
    if not {id(p) for p in params if p.requires_grad} <= stepped <= {id(p) for p in params}:
        return None
    if any(optimizer.state.get(p) for p in params if not p.requires_grad):
        return None
    return entry


def is_default_mlp_module(learner: Any, forward_class: type) -> bool:
    """Whether the learner trains the default module whose EnvRunner forward is
    `forward_class` (`numpy_forward_class`, read from the module's own class: not a
    subclass), with an MLP encoder (no LayerNorm), no forward hooks, over Box or Discrete observations that
    the learner feeds as rows."""
    module = learner.rl_module
    return (
        type(module).__dict__.get(NUMPY_FORWARD_CLASS) is forward_class
        and module._encode_obs is not None  # None: a catalog subclass's encoder (DQN)
        and not module._encode_obs.image
        and not has_hooks(module)
        # A LayerNorm (`fcnet_use_layernorm`, `head_fcnet_use_layernorm`): not an MLP of
        # Linear layers only, which the numpy twin computes.
        and not any(isinstance(m, torch.nn.LayerNorm) for m in module.modules())
        and learner.spaces.nested_obs_space is None
        and isinstance(module.observation_space, gym.spaces.Box | gym.spaces.Discrete)
    )


def adam_settings_of(learner: Any, entry: Any) -> dict[str, Any]:
    """The rate, betas and eps of the learner's default Adam (`entry`): its parameter
    group's, or before it is built the config's (`training(optimizer=...)`)."""
    if entry.built:
        group = entry.optimizer.param_groups[0]
        return {"lr": float(group["lr"]), "betas": tuple(group["betas"]), "eps": group["eps"]}
    return {"lr": entry.lr[0], **adam_settings(learner.config.optimizer)}


def adam_like(learner: Any, entry: Any, params: np.ndarray) -> Adam:
    """A numpy Adam over the flat `params` with the torch Adam's settings."""
    return Adam(params, **adam_settings_of(learner, entry))


def linear_names(part: torch.nn.Module | None, prefix: str) -> list[str]:
    """The dotted names (under `prefix`) of the `nn.Linear` layers of `part`, in order (a
    numpy MLP's layers `0, 1, ...` are these)."""
    if part is None:
        return []
    return [
        f"{prefix}.{name}" if name else prefix
        for name, layer in part.named_modules()
        if isinstance(layer, torch.nn.Linear)
    ]


@dataclasses.dataclass
class TwinParameter:
    """One torch parameter and its numpy counterparts, in torch's layout (a weight matrix's
    numpy `(in, out)` view transposed): the value, and for a trained parameter the views of
    Adam's moments at the same offsets."""

    param: torch.nn.Parameter
    value: np.ndarray
    m: np.ndarray | None = None
    v: np.ndarray | None = None

    def __post_init__(self) -> None:
        #: The numpy value's address (`ndarray.ctypes` costs microseconds per read).
        self.address = self.value.ctypes.data

    def shared(self) -> bool:
        """Whether the torch parameter's data is the numpy value's memory."""
        return self.param.data_ptr() == self.address

    def share(self) -> None:
        """Makes the torch parameter's data the numpy value's memory, keeping its values."""
        self.value[...] = self.param.detach().numpy()
        self.param.data = torch.from_numpy(self.value)


def twin_parameters(
    module: FlatParameterModule,
    torch_names: dict[str, str],
    torch_params: dict[str, torch.nn.Parameter],
    adam: Adam | None = None,
) -> list[TwinParameter] | None:
    """The numpy `module`'s parameters paired with the torch parameters `torch_names` names
    for them (numpy name -> torch name; ".weight" matrices are transposed), with views of
    `adam`'s moments when given; None where the names do not cover both sides exactly or a
    shape differs."""
    numpy_names = module.parameter_names()
    if set(torch_names) != set(numpy_names) or len(set(torch_names.values())) != len(torch_names):
        return None
    pairs = []
    offset = 0
    for name, value in zip(numpy_names, module.parameters(), strict=True):
        param = torch_params.get(torch_names[name])
        transposed = name.endswith(".weight")

        def layout(array: np.ndarray, transposed: bool = transposed) -> np.ndarray:
            return array.T if transposed else array

        if param is None or layout(value).shape != tuple(param.shape):
            return None
        m = v = None
        if adam is not None:
            m = layout(adam.m[offset : offset + value.size].reshape(value.shape))
            v = layout(adam.v[offset : offset + value.size].reshape(value.shape))
        offset += value.size
        pairs.append(TwinParameter(param, layout(value), m, v))
    return pairs


class NumpyTwin:
    """Keeps a torch module's parameters and Adam state and their numpy counterparts the
    same (see the module docstring). `entry`: the learner's default optimizer
    (`RegisteredOptimizer`, perhaps not built yet); `trained`: the parameters the update
    steps, with Adam's moments; `fixed`: parameters the numpy update reads but never writes
    (e.g. DQN's target networks, which the torch learner moves itself)."""

    def __init__(
        self,
        learner: Any,
        entry: Any,
        adam: Adam,
        trained: list[TwinParameter],
        fixed: list[TwinParameter] = (),  # type: ignore[assignment]
    ) -> None:
        self.learner = learner
        self.entry = entry
        self.adam = adam
        self.trained = trained
        self.fixed = list(fixed)
        #: The module's submodules (whose forward hooks would miss a numpy update).
        self._modules = list(learner.rl_module.modules())
        #: How many parameters the built torch Adam steps (None until it is built).
        self._num_stepped: int | None = None
        #: The torch Adam state's identity and step versions when the two sides last matched.
        self._optimizer_mark: tuple | None = None
        #: Whether the numpy Adam stepped since the torch one was last written.
        self._optimizer_ahead = False
        for twin in self.trained + self.fixed:
            twin.share()

    # -- checks --------------------------------------------------------------------------------
    def _torch_optimizer_mark(self) -> tuple:
        """What changes when the torch Adam is built, its state replaced (a restore) or
        stepped (its step counts' versions; its fused kernel leaves the moments' versions as
        they were)."""
        if not self.entry.built:
            return ("not built",)
        state = self.entry.optimizer.state
        marks: list[Any] = [id(state)]
        for twin in self.trained:
            entries = state.get(twin.param)
            step = entries.get(STEP) if entries else None
            marks += [id(entries), id(step), getattr(step, "_version", None)]
        return tuple(marks)

    def _hooked(self) -> bool:
        if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
            return True
        return any(m._forward_hooks or m._forward_pre_hooks for m in self._modules)

    def _same_plain_optimizer(self) -> bool:
        """The checks of `plain_adam` that a user's change between updates could fail,
        without walking the module (a moved parameter is checked in full by `usable`)."""
        optimizers = self.learner._optimizers
        entry = self.entry
        if len(optimizers) != 1 or optimizers.get(DEFAULT_OPTIMIZER) is not entry:
            return False
        if entry.lr_schedulers:
            return False
        if not entry.built:
            return True
        groups = entry.optimizer.param_groups
        if len(groups) != 1:
            return False
        group = groups[0]
        if self._num_stepped is None:  # built since the last check: check it in full
            if plain_adam(self.learner) is not entry:
                return False
            self._num_stepped = len(group["params"])
        return (
            all(group.get(key, value) == value for key, value in _PLAIN_ADAM.items())
            and not group.get("capturable")
            and not isinstance(group["lr"], torch.Tensor)
            and len(group["params"]) == self._num_stepped
        )

    def usable(self) -> bool:
        """Whether the next update can run in numpy: no forward hook, still this plain Adam
        (see `plain_adam`) over the same parameters, and its state one the numpy Adam holds
        (every trained parameter's or none, with one step count)."""
        if self._hooked() or not self._same_plain_optimizer():
            return False
        moved = not all(twin.shared() for twin in self.trained + self.fixed)
        if moved and plain_adam(self.learner) is not self.entry:
            return False  # e.g. cast to float64 or sent to a GPU
        if self._optimizer_mark == self._torch_optimizer_mark() or not self.entry.built:
            return True
        state = self.entry.optimizer.state
        entries = [state.get(twin.param) or {} for twin in self.trained]
        if not any(entries):
            return True
        if any(set(e) != _ADAM_STATE_KEYS for e in entries):
            return False
        return len({float(e[STEP]) for e in entries}) == 1

    # -- torch -> numpy --------------------------------------------------------------------------
    def pull(self) -> None:
        """Brings the numpy side up to date before an update: parameters whose memory was
        replaced (`module.to(...)`, a user's `param.data = ...`) are shared again, and the
        torch Adam's state is read when it was built, replaced or stepped since the last
        sync."""
        for twin in self.trained + self.fixed:
            if not twin.shared():
                twin.share()
        mark = self._torch_optimizer_mark()
        if self._optimizer_mark == mark:
            return
        self._optimizer_mark = mark
        if not self.entry.built:
            return  # the numpy Adam holds the only state
        if self._optimizer_ahead:
            # Built since the numpy Adam stepped, with nothing written to it yet: the numpy
            # state is the newer one.
            self.flush_optimizer()
            return
        state = self.entry.optimizer.state
        steps = 0
        for twin in self.trained:
            assert twin.m is not None and twin.v is not None
            entries = state.get(twin.param)
            if entries:
                twin.m[...] = entries[EXP_AVG].detach().numpy()
                twin.v[...] = entries[EXP_AVG_SQ].detach().numpy()
                steps = int(float(entries[STEP]))
            else:
                twin.m[...] = 0.0
                twin.v[...] = 0.0
        self.adam.step_count = steps

    # -- numpy -> torch --------------------------------------------------------------------------
    def stepped(self) -> None:
        """Notes a numpy update: the parameters are torch's already, Adam's state is ahead."""
        self._optimizer_ahead = True

    def flush_optimizer(self) -> None:
        """Writes the numpy Adam's state into the torch Adam (building it if it is not yet),
        if it stepped since: before the torch optimizer is read or steps."""
        if not self._optimizer_ahead:
            return
        state = self.entry.optimizer.state
        step_dtype = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        with torch.no_grad():
            for twin in self.trained:
                assert twin.m is not None and twin.v is not None
                entries = state[twin.param]
                if not entries:
                    # As torch's Adam creates a parameter's state on its first step.
                    entries[STEP] = torch.tensor(0.0, dtype=step_dtype)
                    entries[EXP_AVG] = torch.zeros_like(twin.param)
                    entries[EXP_AVG_SQ] = torch.zeros_like(twin.param)
                entries[STEP].fill_(self.adam.step_count)
                entries[EXP_AVG].copy_(torch.from_numpy(twin.m))
                entries[EXP_AVG_SQ].copy_(torch.from_numpy(twin.v))
        self._optimizer_mark = self._torch_optimizer_mark()
        self._optimizer_ahead = False

    # -- the torch Adam's state while it is not built ----------------------------------------
    def param_state(self, names: dict[Any, str]) -> dict[str, dict[str, Any]]:
        """The numpy Adam's state as the torch Adam's `param_state` (`TorchLearner.get_state`:
        by parameter name, step as a number, moments as arrays in torch's layout); a fresh
        Adam's (no step yet) is empty, as torch's."""
        if self.adam.step_count == 0:
            return {}
        assert all(twin.m is not None and twin.v is not None for twin in self.trained)
        return {
            names[twin.param]: {
                STEP: float(self.adam.step_count),
                EXP_AVG: np.array(twin.m),
                EXP_AVG_SQ: np.array(twin.v),
            }
            for twin in self.trained
        }

    def set_param_state(
        self, param_state: dict[str, dict[str, Any]], names: dict[Any, str]
    ) -> bool:
        """Takes a checked `param_state` into the numpy Adam (the torch one not built yet);
        False, changing nothing, for one it cannot hold (not every trained parameter's or
        none, or several step counts)."""
        entries = [param_state.get(names[twin.param]) for twin in self.trained]
        if not param_state:
            steps: set[float] = {0.0}
        elif all(entries) and len(param_state) == len(entries):
            steps = {float(e[STEP]) for e in entries if e is not None}
        else:
            return False
        if len(steps) != 1:
            return False
        for twin, e in zip(self.trained, entries, strict=True):
            assert twin.m is not None and twin.v is not None
            twin.m[...] = e[EXP_AVG] if e else 0.0
            twin.v[...] = e[EXP_AVG_SQ] if e else 0.0
        self.adam.step_count = int(steps.pop())
        self._optimizer_ahead = self.adam.step_count > 0
        return True

    def restored_in_torch(self) -> None:
        """Notes that the torch Adam takes a restored state: the next update reads it (the
        numpy Adam's steps since the last write are overwritten, as the restore says)."""
        self._optimizer_ahead = False
        self._optimizer_mark = None

    def rate(self) -> float:
        """The torch optimizer's rate (the learner's schedule sets it there)."""
        return float(self.entry.lr[0])

    def sync_settings(self) -> None:
        """The numpy Adam's rate, betas and eps from the torch Adam's (a schedule or the user
        may have set them)."""
        settings = adam_settings_of(self.learner, self.entry)
        self.adam.lr = float(settings["lr"])
        self.adam.beta1, self.adam.beta2 = (float(beta) for beta in settings["betas"])
        self.adam.eps = float(settings["eps"])


class BothPools:
    """The thread-pool settings of a learner's torch update and of its numpy update, entered
    together (`update_threads`: the algorithm runs a round of updates inside it)."""

    def __init__(self, torch_threads: Any, numpy_threads: Any) -> None:
        self.pools = (torch_threads, numpy_threads)
        #: The BLAS threads the numpy update runs on.
        self.num_threads = numpy_threads.num_threads

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self.pools[0](), self.pools[1]():
            yield


class NumpyTwinHost:
    """A torch learner mixin for a learner that may update in numpy (`numpy_twin`): the
    torch optimizer's state is brought up to date before anything reads it or steps it, and
    while the default Adam is not built its state is the numpy Adam's (a checkpoint neither
    builds it nor imports what building it imports)."""

    numpy_twin: NumpyTwin | None = None

    def sync_torch_optimizer(self) -> None:
        """Writes the numpy Adam's state into the torch Adam, building it if need be."""
        if self.numpy_twin is not None:
            self.numpy_twin.flush_optimizer()

    def get_state(self, *args: Any, **kwargs: Any) -> dict:
        twin = self.numpy_twin
        if twin is not None and twin.entry.built:
            twin.flush_optimizer()
        return super().get_state(*args, **kwargs)  # type: ignore[misc]

    def _optimizer_state(self, entry: Any) -> dict:
        twin = self.numpy_twin
        if twin is None or entry is not twin.entry or entry.built:
            return super()._optimizer_state(entry)  # type: ignore[misc]
        names = self._names_by_param  # type: ignore[attr-defined]
        return {"lr": entry.lr, "param_state": twin.param_state(names), "lr_schedulers": []}

    def _get_optimizer_state(self) -> dict:
        twin = self.numpy_twin
        if twin is not None and twin.entry.built:
            twin.flush_optimizer()
        return super()._get_optimizer_state()  # type: ignore[misc]

    def _set_one_optimizer_state(self, entry: Any, state: dict) -> None:
        twin = self.numpy_twin
        if twin is not None and entry is twin.entry:
            if not entry.built and twin.set_param_state(
                state["param_state"],
                self._names_by_param,  # type: ignore[attr-defined]
            ):
                entry.set_lr(float(state["lr"][0]))
                return
            twin.restored_in_torch()
        super()._set_one_optimizer_state(entry, state)  # type: ignore[misc]

    def get_optimizer(self, *args: Any, **kwargs: Any) -> torch.optim.Optimizer:
        self.sync_torch_optimizer()
        return super().get_optimizer(*args, **kwargs)  # type: ignore[misc]

    def get_optimizers_for_module(self, *args: Any, **kwargs: Any) -> Any:
        self.sync_torch_optimizer()
        return super().get_optimizers_for_module(*args, **kwargs)  # type: ignore[misc]

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        self.sync_torch_optimizer()
        return super().optimizer  # type: ignore[misc]

    def update_from_batch(self, batch: dict[str, Any]) -> dict[str, float]:
        """A torch step (RLlib's API; a numpy update does not come here)."""
        self.sync_torch_optimizer()
        return super().update_from_batch(batch)  # type: ignore[misc]

    def apply_gradients(self, gradients_dict: dict[str, torch.Tensor]) -> None:
        """The torch step, from the numpy Adam's newer state: RLlib's tests and users call
        this hook by hand (after `compute_gradients` and `postprocess_gradients`), and it
        reads the registered optimizer itself, not through `get_optimizer`. Without the write,
        a hand step after a numpy update stepped from the torch Adam's older moments (or a
        fresh Adam's), and the next update's `pull` took those."""
        self.sync_torch_optimizer()
        super().apply_gradients(gradients_dict)  # type: ignore[misc]


def torch_module_like(
    numpy_module: Any, torch_class: type, names: Any, extra_model_config: Any = None
) -> Any:
    """A `torch_class` module of `numpy_module`'s spaces and model config (with
    `extra_model_config`'s keys: an algorithm's settings the module reads) holding its
    weights: `names(torch_module)` gives {numpy parameter name: torch parameter name} (a
    weight `(in, out)` here is `(out, in)` in torch); the parameters no name reaches (a target
    network) keep what the torch module built."""
    twin = RLModuleSpec(
        module_class=torch_class,
        observation_space=numpy_module.observation_space,
        action_space=numpy_module.action_space,
        model_config={**numpy_module.model_config, **(extra_model_config or {})},
    ).build()
    state = numpy_module.get_state()
    own = {key: value.detach().cpu().numpy() for key, value in twin.state_dict().items()}
    for numpy_name, torch_name in names(twin).items():
        value = np.asarray(state[numpy_name])
        own[torch_name] = np.ascontiguousarray(value.T if value.ndim == 2 else value, np.float32)
    twin.set_state(own)
    return twin
