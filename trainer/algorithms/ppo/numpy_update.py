"""The default torch PPO learner's update, computed in numpy.

RLlib's default framework is torch, so an unmodified RLlib script trains `PPOTorchLearner` on
`DefaultPPOTorchRLModule`. For the small networks RL trains on a CPU most of a torch minibatch
step is per-operation dispatch (autograd records, tensor wrapping, the optimizer's loops), not
arithmetic: the numpy `PPOLearner` takes the same step on a 64x64 module several times faster
(`bench/learner.py --framework torch`). Where the torch learner is exactly the default one,
this file runs its update with the numpy learner's loss, backward pass and Adam:

- the learner is `PPOTorchLearner` itself (a subclass may override any hook) and its config
  keeps the critic (`use_critic`: without it torch's Adam skips the value network's
  parameters, which have no gradient, where the numpy Adam would step them);
- the module is the default one itself (`DefaultPPOTorchRLModule` / `PPOTorchRLModule`: the
  class whose EnvRunner forward runs in numpy, `numpy_forward_class`) with an MLP encoder, no
  LSTM, float32 parameters on the CPU and no forward hooks, over Box or Discrete
  observations;
- the optimizer is the default one: a single `torch.optim.Adam` over every parameter, one
  parameter group, no amsgrad, weight decay or maximize, and no torch lr schedulers.

Anything else trains in torch. The data flow of one update:

    torch parameters, Adam's exp_avg / exp_avg_sq / step
        | copied in when written since the last update (torch's version counters and the
        | state tensors' identities: a restore, a user's in-place write, a torch step)
        v
    numpy `PolicyModule` (the same networks, weights transposed to (in, out)) and numpy Adam
        | `PPOLearner._update`: the train batch, the minibatches drawn from the torch
        | learner's generator, the loss, its gradient, clipping, the finite check, Adam
        v
    copied back: the parameters and Adam's state (torch's layout, created as torch's
    Adam creates it on its first step)

so after every update the torch module and optimizer hold its result: the weights the
EnvRunners get, `get_state`, checkpoints and `get_optimizer()` read them as before. The
statistics are the torch learner's (its explained variance: unbiased variances, RLlib's
`explained_variance`). The products are numpy's (OpenBLAS): float32 results agree with torch's
to rounding, not to the last bit.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.ppo_learner import PPOLearner
from trainer.algorithms.ppo.state_conversion import torch_names_of_numpy_parameters
from trainer.core.learner import DEFAULT_OPTIMIZER, UpdateResults
from trainer.core.models import StateConversionError
from trainer.core.nn import Adam
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.numpy_inference import NUMPY_FORWARD_CLASS, NumpyPPOInference, has_hooks

if TYPE_CHECKING:
    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

#: torch Adam's per-parameter state (`optimizer.state[param]`).
EXP_AVG, EXP_AVG_SQ, STEP = "exp_avg", "exp_avg_sq", "step"
#: Adam options under which torch's update is the numpy `Adam`'s.
_PLAIN_ADAM = {"amsgrad": False, "weight_decay": 0, "maximize": False, "differentiable": False}
#: RLlib's `SMALL_NUMBER`, in its explained variance.
_SMALL_NUMBER = 1e-6


class _TorchStatisticsPPOLearner(PPOLearner):
    """The numpy PPO learner reporting the torch learner's statistics: its explained variance,
    and a zero KL without `use_kl_loss` (RLlib's)."""

    def loss_and_grads(self, mb: dict[str, np.ndarray]) -> tuple[list[np.ndarray], dict]:
        grads, stats = super().loss_and_grads(mb)
        if not self.config.use_kl_loss:
            stats["mean_kl_loss"] = 0.0
        return grads, stats

    @staticmethod
    def explained_variance(targets: np.ndarray, values: np.ndarray) -> float:
        """RLlib's `explained_variance`: max(-1, 1 - var(y - v) / (var(y) + 1e-6)), with
        unbiased variances (as `PPOTorchLearner` reports it)."""
        if len(targets) < 2:
            return float("nan")  # torch's unbiased variance of one value
        residual_var = float(np.var(targets - values, ddof=1))
        return max(-1.0, 1.0 - residual_var / (float(np.var(targets, ddof=1)) + _SMALL_NUMBER))


@dataclasses.dataclass
class _Pair:
    """One torch parameter and its numpy counterparts: the weight or bias view of the numpy
    module's flat parameters, and the views of Adam's moments at the same offsets, each
    transposed to torch's layout for a weight matrix."""

    param: torch.nn.Parameter
    value: np.ndarray
    m: np.ndarray
    v: np.ndarray


def _torch_layout(array: np.ndarray, transpose: bool) -> np.ndarray:
    return array.T if transpose else array


class NumpyPPOUpdate:
    """A default `PPOTorchLearner`'s update in numpy (see the module docstring):
    `NumpyPPOUpdate.of(learner)` builds one, or None where the learner trains in torch."""

    def __init__(
        self, learner: PPOTorchLearner, numpy_learner: PPOLearner, pairs: list[_Pair]
    ) -> None:
        self.learner = learner
        self.numpy_learner = numpy_learner
        self.pairs = pairs
        self.optimizer: torch.optim.Adam = learner._optimizers[DEFAULT_OPTIMIZER].optimizer
        #: What the torch side looked like when the numpy side last matched it (None: never).
        self._synced: tuple | None = None

    @classmethod
    def of(cls, learner: PPOTorchLearner) -> NumpyPPOUpdate | None:
        module = learner.rl_module
        config = learner.config
        if (
            type(module).__dict__.get(NUMPY_FORWARD_CLASS) is not NumpyPPOInference
            or learner.stateful
            or module._encode_obs.image
            or has_hooks(module)
            or not config.use_critic
            or learner.spaces.nested_obs_space is not None
            or not isinstance(module.observation_space, gym.spaces.Box | gym.spaces.Discrete)
        ):
            return None
        optimizer = cls._default_adam(learner)
        if optimizer is None:
            return None
        try:
            numpy_module = PolicyModule(
                dataclasses.replace(learner.spaces, keep_obs_shape=False), module._config
            )
            names = torch_names_of_numpy_parameters(module._config, module, "torch learner")
        except (StateConversionError, ValueError, TypeError, KeyError):
            return None  # networks the numpy module does not mirror train in torch
        params = dict(module.named_parameters())
        if sorted(names.values()) != sorted(params) or set(names) != set(
            numpy_module.parameter_names()
        ):
            return None
        numpy_learner = _TorchStatisticsPPOLearner(config, None, module=numpy_module)
        group = optimizer.param_groups[0]
        numpy_learner.optimizer = Adam(
            numpy_module.flat_params, lr=float(group["lr"]), betas=group["betas"], eps=group["eps"]
        )
        # One minibatch shuffler: the torch learner's (its state is the learner's state).
        numpy_learner.rng = learner.rng
        adam = numpy_learner.optimizer
        pairs = []
        offset = 0
        for numpy_name, value in zip(
            numpy_module.parameter_names(), numpy_module.parameters(), strict=True
        ):
            param = params[names[numpy_name]]
            transpose = numpy_name.endswith(".weight")
            shape = value.shape
            m = adam.m[offset : offset + value.size].reshape(shape)
            v = adam.v[offset : offset + value.size].reshape(shape)
            offset += value.size
            if _torch_layout(value, transpose).shape != tuple(param.shape):
                return None
            pairs.append(
                _Pair(
                    param,
                    _torch_layout(value, transpose),
                    _torch_layout(m, transpose),
                    _torch_layout(v, transpose),
                )
            )
        return cls(learner, numpy_learner, pairs)

    @staticmethod
    def _default_adam(learner: PPOTorchLearner) -> torch.optim.Adam | None:
        """The learner's one optimizer when it is a plain torch Adam over every float32 CPU
        parameter of its module, with no torch lr scheduler; None otherwise."""
        if list(learner._optimizers) != [DEFAULT_OPTIMIZER]:
            return None
        entry = learner._optimizers[DEFAULT_OPTIMIZER]
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
        if {id(p) for p in group["params"]} != {id(p) for p in params} or len(
            group["params"]
        ) != len(params):
            return None
        if any(
            p.device.type != "cpu" or p.dtype != torch.float32 or not p.requires_grad
            for p in params
        ):
            return None
        return optimizer

    # -- the torch side's fingerprint ---------------------------------------------------------
    def _torch_side(self) -> tuple:
        """What changes when the torch parameters or Adam's state are written or replaced."""
        state = self.optimizer.state
        marks: list[Any] = []
        for pair in self.pairs:
            param = pair.param
            marks += [param._version, param.data_ptr()]
            entries = state.get(param)
            if entries:
                for key in (EXP_AVG, EXP_AVG_SQ, STEP):
                    tensor = entries.get(key)
                    marks += [id(tensor), getattr(tensor, "_version", None)]
        return tuple(marks)

    def usable(self) -> bool:
        """Whether the next update can run in numpy: no forward hook since, still the same
        plain Adam over the same float32 CPU parameters, and its state one the numpy Adam can
        hold (every parameter's or none, one step count)."""
        learner = self.learner
        if has_hooks(learner.rl_module):
            return False
        if self._synced is not None and self._synced == self._torch_side():
            return True  # nothing written since the last update
        adam = self._default_adam(learner)
        if adam is None or adam is not self.optimizer:
            return False
        state = adam.state
        entries = [state.get(pair.param) or {} for pair in self.pairs]
        if not any(entries):
            return True
        if any(set(e) != {EXP_AVG, EXP_AVG_SQ, STEP} for e in entries):
            return False
        return len({float(e[STEP]) for e in entries}) == 1

    # -- copies ------------------------------------------------------------------------------
    def _pull(self) -> None:
        """The torch parameters and Adam state into the numpy module and Adam."""
        adam = self.numpy_learner.optimizer
        state = self.optimizer.state
        steps = 0
        for pair in self.pairs:
            pair.value[...] = pair.param.detach().numpy()
            entries = state.get(pair.param)
            if entries:
                pair.m[...] = entries[EXP_AVG].detach().numpy()
                pair.v[...] = entries[EXP_AVG_SQ].detach().numpy()
                steps = int(float(entries[STEP]))
            else:
                pair.m[...] = 0.0
                pair.v[...] = 0.0
        adam.step_count = steps

    def _push(self) -> None:
        """The numpy module's weights and Adam state into the torch parameters and Adam."""
        adam = self.numpy_learner.optimizer
        state = self.optimizer.state
        step_dtype = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        with torch.no_grad():
            for pair in self.pairs:
                pair.param.copy_(torch.from_numpy(pair.value))
                if adam.step_count == 0 and not state.get(pair.param):
                    continue
                entries = state[pair.param]
                if not entries:
                    # As torch's Adam creates a parameter's state on its first step.
                    entries[STEP] = torch.tensor(0.0, dtype=step_dtype)
                    entries[EXP_AVG] = torch.zeros_like(pair.param)
                    entries[EXP_AVG_SQ] = torch.zeros_like(pair.param)
                entries[STEP].fill_(adam.step_count)
                entries[EXP_AVG].copy_(torch.from_numpy(pair.m))
                entries[EXP_AVG_SQ].copy_(torch.from_numpy(pair.v))
        self._synced = self._torch_side()

    # -- the update --------------------------------------------------------------------------
    def update(
        self, episodes: list[SingleAgentEpisode], num_env_steps_sampled_lifetime: int | None
    ) -> UpdateResults:
        """`PPOTorchLearner.update`'s results, computed in numpy (call when `usable()`)."""
        learner = self.learner
        numpy_learner = self.numpy_learner
        learner.metrics.reset()
        learner.apply_lr_schedule(num_env_steps_sampled_lifetime)
        if self._synced != self._torch_side():
            self._pull()
        numpy_learner.optimizer.lr = float(self.optimizer.param_groups[0]["lr"])
        numpy_learner.kl_coeff = learner.kl_coeff
        try:
            # The rate is set above (the torch optimizer's, schedule applied): None keeps it.
            results = numpy_learner.update(episodes, num_env_steps_sampled_lifetime=None)
        finally:
            # Also after a NonFiniteUpdateError: the minibatch steps before it count, as in
            # torch, where each step writes the parameters.
            self._push()
            learner.kl_coeff = numpy_learner.kl_coeff
        learner.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime or 0}
        )
        results.update(learner.update_results())
        results["curr_lr"] = learner.current_lr
        return results
