"""`TorchRLModule` (RLlib's `ray.rllib.core.rl_module.torch.TorchRLModule`): the base class of a
user's torch module, a `torch.nn.Module` and an `RLModule` at once.

A subclass builds its layers in `setup()` and overrides `_forward` (or the per-phase
`_forward_inference` / `_forward_exploration` / `_forward_train`), taking and returning dicts of
torch tensors keyed by `Columns` names. `forward_inference` and `forward_exploration` run in eval
mode and, by default, without gradients; `forward_train` in train mode. The state is the
module's `state_dict()` as numpy arrays (what EnvRunners receive and checkpoints store);
`set_state` takes arrays or tensors. An inference-only copy (`inference_only=True`, with
`InferenceOnlyAPI`) drops the attributes `get_non_inference_attributes()` names, and
`get_state(inference_only=True)` leaves their weights out.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.core.apis import InferenceOnlyAPI
from trainer.core.rl_module import RLModule
from trainer.util.state_checks import StateError, require_map


def to_numpy(tree: Any) -> Any:
    """Tensors in `tree` (dicts, lists, tuples) as numpy arrays (detached, on the CPU)."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu().numpy()
    if isinstance(tree, dict):
        return {key: to_numpy(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_numpy(value) for value in tree)
    return tree


def to_tensor(tree: Any, device: Any = None) -> Any:
    """Numpy arrays (and numbers) in `tree` as torch tensors on `device`; tensors are moved."""
    if isinstance(tree, torch.Tensor):
        return tree if device is None else tree.to(device)
    if isinstance(tree, np.ndarray):
        tensor = torch.from_numpy(np.ascontiguousarray(tree))
        return tensor if device is None else tensor.to(device)
    if isinstance(tree, dict):
        return {key: to_tensor(value, device) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_tensor(value, device) for value in tree)
    if isinstance(tree, (bool, int, float, np.number, np.bool_)):
        return torch.as_tensor(tree, device=device)
    return tree


def _matches(key: str, attribute: str) -> bool:
    """Whether state-dict `key` belongs to `attribute` (a dotted path)."""
    return key == attribute or key.startswith(attribute + ".")


@dataclass
class TorchCompileConfig:
    """RLlib's `TorchCompileConfig` (`ray.rllib.core.rl_module.torch.torch_compile_config`):
    how `TorchRLModule.compile` calls `torch.compile` on the forward methods: the dynamo
    backend (RLlib's default: "aot_eager" on macOS, "cudagraphs" elsewhere), its mode, and
    further keyword arguments."""

    torch_dynamo_backend: str = "aot_eager" if sys.platform == "darwin" else "cudagraphs"
    torch_dynamo_mode: str | None = None
    kwargs: dict = field(default_factory=dict)


class TorchRLModule(nn.Module, RLModule):
    """RLlib's TorchRLModule: see the module docstring."""

    #: Whether the module reads only the default model config's keys (an algorithm's default
    #: torch module sets it): a multi-agent spec's model config is then checked as the
    #: default modules' is.
    reads_default_model_config_only: bool = False

    framework: str | None = "torch"
    STATE_FILE_NAME = "module_state"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        RLModule.__init__(self, *args, **kwargs)
        if self.inference_only and isinstance(self, InferenceOnlyAPI):
            for attribute in self.get_non_inference_attributes():
                self._drop_attribute(attribute)

    def _drop_attribute(self, path: str) -> None:
        """Deletes the attribute at dotted `path` (if it exists): an inference-only copy does
        not hold it."""
        owner: Any = self
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part, None)
            if owner is None:
                return
        if hasattr(owner, name):
            delattr(owner, name)

    # -- forward passes ------------------------------------------------------------------------
    def compile(self, compile_config: TorchCompileConfig) -> None:
        """RLlib's: replaces `_forward_train`, `_forward_inference` and `_forward_exploration`
        by their `torch.compile`d forms (compiled at their first call), as `compile_config`
        says. (It overrides `nn.Module.compile`, as RLlib's does.)"""
        options = {
            "backend": compile_config.torch_dynamo_backend,
            "mode": compile_config.torch_dynamo_mode,
            **compile_config.kwargs,
        }
        for name in ("_forward_train", "_forward_inference", "_forward_exploration"):
            setattr(self, name, torch.compile(getattr(self, name), **options))

    def forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Action computation without exploration, in eval mode (override
        `_forward_inference`)."""
        was_training = self.training
        if was_training:  # (a module left in eval mode is not walked again at every step)
            self.eval()
        try:
            return self._forward_inference(batch, **kwargs)
        finally:
            if was_training:
                self.train()

    def forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Action computation with exploration, in eval mode (override
        `_forward_exploration`)."""
        was_training = self.training
        if was_training:  # (a module left in eval mode is not walked again at every step)
            self.eval()
        try:
            return self._forward_exploration(batch, **kwargs)
        finally:
            if was_training:
                self.train()

    def forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The forward pass before the loss, in train mode (override `_forward_train`)."""
        self.train()
        return RLModule.forward_train(self, batch, **kwargs)

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._forward(batch, **kwargs)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with torch.no_grad():
            return self._forward(batch, **kwargs)

    def forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """torch's `__call__` entry: `forward_exploration` on an inference-only module,
        `forward_train` otherwise (do not override; override the `_forward*` methods)."""
        if self.inference_only:
            return self.forward_exploration(batch, **kwargs)
        return self.forward_train(batch, **kwargs)

    # -- state ---------------------------------------------------------------------------------
    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The `state_dict()` as numpy arrays; with `inference_only` (on a full module with
        `InferenceOnlyAPI`), without the weights an inference-only copy lacks."""
        state = self.state_dict()
        if inference_only:
            state = {key: state[key] for key in self._inference_state_keys(state)}
        # Copies: a CPU tensor's .numpy() shares its memory, and a state is a snapshot.
        return {key: value.detach().cpu().numpy().copy() for key, value in state.items()}

    def _inference_state_keys(self, state: dict[str, Any]) -> list[str]:
        """The keys of `state` (this module's `state_dict()`) an inference-only copy holds:
        all of them, but on a full module with `InferenceOnlyAPI` those of the attributes
        `get_non_inference_attributes()` names."""
        if self.inference_only or not isinstance(self, InferenceOnlyAPI):
            return list(state)
        left_out = self.get_non_inference_attributes()
        return [key for key in state if not any(_matches(key, attribute) for attribute in left_out)]

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads `state` (arrays or tensors by `state_dict()` key). Keys this module lacks are
        an error, and so are missing keys on an inference-only module (a full module may get
        the inference-only subset)."""
        own = self.state_dict()
        unexpected = sorted(set(state) - set(own))
        if unexpected:
            raise ValueError(
                f"{type(self).__name__}.set_state(): the state has weights this module lacks: "
                f"{unexpected[:5]} (the module's: {sorted(own)[:5]}...)"
            )
        missing = sorted(set(own) - set(state))
        if missing and self.inference_only:
            raise ValueError(
                f"{type(self).__name__}.set_state(): the state lacks weights of this "
                f"inference-only module: {missing[:5]}"
            )
        for key, value in state.items():
            if tuple(np.shape(value)) != tuple(own[key].shape):
                raise ValueError(
                    f"{type(self).__name__}.set_state(): {key!r} has shape "
                    f"{tuple(np.shape(value))}, the module's is {tuple(own[key].shape)}"
                )
        tensors = {
            key: value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
            for key, value in state.items()
        }
        self.load_state_dict(tensors, strict=False)

    def check_weights(
        self, weights: Any, where: str = "weights", *, own: dict[str, Any] | None = None
    ) -> None:
        """Raises `StateError` (and changes nothing) unless `weights` (a module checkpoint's
        or a learner's state, `{state_dict key: array}`) holds at least the inference-only
        state's keys and nothing this module lacks, each array of its shape and kind, finite.
        `own`: this module's `state_dict()` when the caller has it."""
        own = self.state_dict() if own is None else own
        require_map(weights, where, self._inference_state_keys(own))
        extra = sorted(set(weights) - set(own))
        if extra:
            raise StateError(where, f"has weights this module lacks: {extra[:4]}")
        for key, value in weights.items():
            if not isinstance(value, np.ndarray):
                raise StateError(f"{where}[{key!r}]", f"expected an array, got {type(value)}")
            expected = own[key]
            if value.shape != tuple(expected.shape):
                raise StateError(
                    f"{where}[{key!r}]",
                    f"has shape {value.shape}, the module's is {tuple(expected.shape)}",
                )
            if value.dtype.kind != np.dtype(str(expected.dtype).replace("torch.", "")).kind:
                raise StateError(
                    f"{where}[{key!r}]",
                    f"has dtype {value.dtype}, the module's is {expected.dtype}",
                )
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise StateError(f"{where}[{key!r}]", "has non-finite values")

    # -- action distributions ------------------------------------------------------------------
    def get_inference_action_dist_cls(self) -> Any:
        """`self.action_dist_cls` if `setup()` set one, else RLlib's default for the action
        space: TorchCategorical (Discrete) or TorchDiagGaussian (Box)."""
        from trainer.torch_rl.distributions import TorchCategorical, TorchDiagGaussian

        if self.action_dist_cls is not None:
            return self.action_dist_cls
        if isinstance(self.action_space, gym.spaces.Discrete):
            return TorchCategorical
        if isinstance(self.action_space, gym.spaces.Box):
            return TorchDiagGaussian
        raise ValueError(
            f"{type(self).__name__}: no default action distribution for the action space "
            f"{self.action_space}: set self.action_dist_cls in setup() (a TorchDistribution "
            "subclass), or override get_inference_action_dist_cls, "
            "get_exploration_action_dist_cls and get_train_action_dist_cls"
        )

    def get_exploration_action_dist_cls(self) -> Any:
        return self.get_inference_action_dist_cls()

    def get_train_action_dist_cls(self) -> Any:
        return self.get_inference_action_dist_cls()

    def __repr__(self) -> str:
        return nn.Module.__repr__(self)
