"""A torch learner's module and Adam mirrored in numpy, for updates computed in numpy.

RLlib's default framework is torch, so unmodified RLlib scripts train the default torch
learners on the default torch modules. For the small networks RL trains on a CPU, most of a
torch gradient step is per-operation dispatch (autograd's records, tensor wrapping, the
optimizer's loops), not arithmetic; the numpy learners take the same step several times
faster (`bench/learner.py --framework torch`). An algorithm whose numpy learner has the same
networks as its default torch module can therefore compute the torch learner's update in
numpy (`trainer.algorithms.ppo.numpy_update`, `trainer.algorithms.dqn.numpy_update`); this
file keeps the two sides the same:

    torch parameters, torch Adam's exp_avg / exp_avg_sq / step
        |  pull(): before an update, what was written since the last sync (torch's version
        |  counters, the memory's address, the state tensors' identities: a restore, a torch
        |  update, an in-place write by the user)
        v
    numpy module's flat parameters (weights transposed to (in, out)), numpy Adam's m, v, step
        |  the numpy update
        v
    push_parameters(): after each update, the trained parameters (what the EnvRunners, the
    target networks and `compute_single_action` read);
    flush_optimizer(): Adam's state, when the torch optimizer is read (`get_state`,
    `get_optimizer`) or steps in torch (created as torch's Adam creates it on its first step)

The torch optimizer must be a plain `torch.optim.Adam` over exactly the trained parameters
(`plain_adam`): one parameter group, no amsgrad, weight decay, maximize or differentiable,
no torch lr scheduler, float32 parameters on the CPU. Everything else updates in torch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from trainer.core.learner import DEFAULT_OPTIMIZER
from trainer.core.models import FlatParameterModule
from trainer.core.nn import Adam

#: torch Adam's per-parameter state (`optimizer.state[param]`).
EXP_AVG, EXP_AVG_SQ, STEP = "exp_avg", "exp_avg_sq", "step"
_ADAM_STATE_KEYS = {EXP_AVG, EXP_AVG_SQ, STEP}
#: Adam options under which torch's update is the numpy `Adam`'s.
_PLAIN_ADAM = {"amsgrad": False, "weight_decay": 0, "maximize": False, "differentiable": False}


def plain_adam(learner: Any) -> torch.optim.Adam | None:
    """The learner's one optimizer when it is a plain torch Adam over exactly the trainable
    parameters of its module, all float32 on the CPU, with no torch lr scheduler; None
    otherwise (see the module docstring)."""
    optimizers = learner._optimizers
    if list(optimizers) != [DEFAULT_OPTIMIZER]:
        return None
    entry = optimizers[DEFAULT_OPTIMIZER]
    optimizer = entry.optimizer
    if type(optimizer) is not torch.optim.Adam or entry.lr_schedulers:
        return None
    if len(optimizer.param_groups) != 1:
        return None
    group = optimizer.param_groups[0]
    if any(group.get(key, value) != value for key, value in _PLAIN_ADAM.items()):
        return None
    if group.get("capturable") or isinstance(group["lr"], torch.Tensor):
        return None
    params = list(learner.rl_module.parameters())
    trained = [p for p in params if p.requires_grad]
    if len(group["params"]) != len(trained) or {id(p) for p in group["params"]} != {
        id(p) for p in trained
    }:
        return None
    if any(p.device.type != "cpu" or p.dtype != torch.float32 for p in params):
        return None
    return optimizer


@dataclasses.dataclass
class TwinParameter:
    """One torch parameter and its numpy counterparts, in torch's layout (a weight matrix's
    numpy `(in, out)` view transposed): the value, and for a trained parameter the views of
    Adam's moments at the same offsets."""

    param: torch.nn.Parameter
    value: np.ndarray
    m: np.ndarray | None = None
    v: np.ndarray | None = None

    def mark(self) -> tuple[int, int]:
        return self.param._version, self.param.data_ptr()


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
    same (see the module docstring). `trained`: the parameters the update steps, with Adam's
    moments; `fixed`: parameters the numpy update reads but never writes (e.g. DQN's target
    networks, which the torch learner moves itself)."""

    def __init__(
        self,
        optimizer: torch.optim.Adam,
        adam: Adam,
        trained: list[TwinParameter],
        fixed: list[TwinParameter] = (),  # type: ignore[assignment]
    ) -> None:
        self.optimizer = optimizer
        self.adam = adam
        self.trained = trained
        self.fixed = list(fixed)
        #: Each parameter's (version, address) when its two sides were last the same.
        self._marks: dict[int, tuple[int, int]] = {}
        #: The torch Adam state's identity and versions when the two sides last matched.
        self._optimizer_mark: tuple | None = None
        #: Whether the numpy Adam stepped since the torch one was last written.
        self._optimizer_ahead = False

    # -- checks --------------------------------------------------------------------------------
    def _torch_optimizer_mark(self) -> tuple:
        state = self.optimizer.state
        marks: list[Any] = []
        for twin in self.trained:
            entries = state.get(twin.param) or {}
            for key in (EXP_AVG, EXP_AVG_SQ, STEP):
                tensor = entries.get(key)
                marks += [id(tensor), getattr(tensor, "_version", None)]
        return tuple(marks)

    def usable(self, learner: Any) -> bool:
        """Whether the next update can run in numpy: still this plain Adam (see `plain_adam`)
        over the same parameters, and its state one the numpy Adam holds (every trained
        parameter's or none, with one step count)."""
        adam = plain_adam(learner)
        if adam is None or adam is not self.optimizer:
            return False
        if self._optimizer_mark == self._torch_optimizer_mark():
            return True
        entries = [adam.state.get(twin.param) or {} for twin in self.trained]
        if not any(entries):
            return True
        if any(set(e) != _ADAM_STATE_KEYS for e in entries):
            return False
        return len({float(e[STEP]) for e in entries}) == 1

    # -- torch -> numpy --------------------------------------------------------------------------
    def pull(self) -> None:
        """Copies into numpy what changed on the torch side since the last sync."""
        # A torch step changes its state (its step counts' versions): then every trained
        # parameter is taken again, since torch's fused Adam writes the parameters without
        # bumping their version counters.
        optimizer_changed = self._optimizer_mark != self._torch_optimizer_mark()
        for twin in self.trained + self.fixed:
            mark = twin.mark()
            if self._marks.get(id(twin)) != mark or (optimizer_changed and twin.m is not None):
                twin.value[...] = twin.param.detach().numpy()
                self._marks[id(twin)] = mark
        if not optimizer_changed:
            return
        state = self.optimizer.state
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
        self._optimizer_mark = self._torch_optimizer_mark()
        self._optimizer_ahead = False

    # -- numpy -> torch --------------------------------------------------------------------------
    def push_parameters(self) -> None:
        """Copies the trained parameters' numpy values into torch (after a numpy update)."""
        with torch.no_grad():
            for twin in self.trained:
                twin.param.copy_(torch.from_numpy(twin.value))
                self._marks[id(twin)] = twin.mark()
        self._optimizer_ahead = True

    def flush_optimizer(self) -> None:
        """Writes the numpy Adam's state into the torch Adam, if it stepped since."""
        if not self._optimizer_ahead:
            return
        state = self.optimizer.state
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

    def rate(self) -> float:
        """The torch optimizer's rate (the learner's schedule sets it there)."""
        return float(self.optimizer.param_groups[0]["lr"])


class NumpyTwinHost:
    """A torch learner mixin for a learner that may update in numpy (`numpy_twin`): the
    torch optimizer's state is brought up to date before anything reads it or steps it."""

    numpy_twin: NumpyTwin | None = None

    def sync_torch_optimizer(self) -> None:
        if self.numpy_twin is not None:
            self.numpy_twin.flush_optimizer()

    def get_state(self) -> dict:
        self.sync_torch_optimizer()
        return super().get_state()  # type: ignore[misc]

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
