"""The default torch PPO run before torch is imported: its learner and its EnvRunners' modules
as numpy stand-ins that build the torch objects only when something asks for one.

RLlib's default framework is torch, so an unmodified RLlib PPO script trains the default
`PPOTorchLearner` on the default `DefaultPPOTorchRLModule`. Here that learner already updates in
numpy (`numpy_update`) and the EnvRunners' copies act in numpy (`NumpyPPOInference`): what
torch still costs such a run is `import torch` itself, in the main process and in every
EnvRunner process (about a second of CPU each, most of the build). Where the config is exactly
the default (the conditions: `deferred_torch_plan`), the Algorithm gets instead

    DeferredPPOTorchLearner     the numpy `PPOLearner` the torch learner's update runs
                                (`NumpyPPOUpdate`), with the torch learner's settings: its
                                module and Adam start as the torch learner's would for the
                                seed (`start_as_numpy_module`), it updates as that learner
                                does and gives the EnvRunners the weights that learner gives
                                (torch's names and layout)
    DeferredPPOModuleView       each EnvRunner's module: acts on the weights it was sent with
                                the view's numpy forward (`NumpyPPOInference`'s operations)

Anything else asked of either (a torch module, `get_state`, a checkpoint, a user's attribute,
RLlib's `learner_group._learner`) builds the real object first (`materialize()`: torch
imported, the torch learner or view built as the config would have built it, and given the
stand-in's whole state: weights, Adam's moments and step, the KL coefficient, the minibatch
generator, the entropy schedule), and from then on the stand-in hands every call to it. The
torch learner that results is the one a torch build would hold after the same updates (the
same weights and state, bit for bit: `tests/test_deferred_torch.py`). Nothing here imports
torch.
"""

from __future__ import annotations

import dataclasses
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.ppo_learner import PPOLearner
from trainer.core.learner import DEFAULT_OPTIMIZER, adam_settings
from trainer.core.models import (
    DEFAULT_MODULE_ID,
    SpaceInfo,
    check_model_config,
    env_actions,
    mlp_names,
)
from trainer.core.nn import (
    Adam,
    Categorical,
    DiagGaussian,
    accepts_rows,
    forward_head,
    forward_layers,
)
from trainer.core.rl_module import RLModule
from trainer.util.rng import generator_state

#: The torch learner and module classes a deferred run stands in for (as `PPOConfig` declares
#: them, `AlgorithmClasses`): their paths, so that nothing here imports them.
TORCH_LEARNER = "trainer.algorithms.ppo.torch_learner:PPOTorchLearner"
TORCH_MODULE = "trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule"
#: Model-config activations the default module's MLPs compute as the numpy forward does
#: (`trainer.torch_rl.numpy_inference.ACTIVATION_NAMES`), by their numpy names.
#: ("linear" and None: no activation layer.)
_ACTIVATIONS: dict[str | None, str | None] = {
    "tanh": "tanh",
    "relu": "relu",
    "elu": "elu",
    "silu": "silu",
    "swish": "silu",
    "linear": None,
    None: None,
}
#: What no default PPOTorchLearner has: asked of a stand-in, an AttributeError (the algorithm
#: probes for a multi-agent learner's `learners`), not a build.
_ABSENT = frozenset({"learners"})
#: The keywords of the Algorithm's `update` call that a stand-in learner takes itself.
_UPDATE_KWARGS = frozenset({"num_env_steps_sampled_lifetime"})


@dataclasses.dataclass(frozen=True)
class DeferredPlan:
    """What a deferred run computes with: the torch module's model config (`_config`), the
    spaces, and the torch names of the numpy module's parameters (numpy name -> torch name,
    in the torch module's state order) with the inference-only ones (the EnvRunners') and
    each one's shape in torch's layout."""

    model_config: dict
    spaces: SpaceInfo
    torch_names: dict[str, str]
    inference_names: tuple[str, ...]
    torch_shapes: dict[str, tuple[int, ...]]
    #: The layers' activations (numpy names; None: linear) and the log-std clip (Box actions).
    encoder_activations: tuple[str | None, ...]
    head_activations: tuple[str | None, ...]
    log_std_clip: float | None

    def numpy_spaces(self) -> SpaceInfo:
        return dataclasses.replace(self.spaces, keep_obs_shape=False)


def _model_config(config: Any) -> dict | None:
    """The default torch module's checked model config for `config` (as
    `FrameworkSection._build_torch_module` and the module's `setup` make it), or None."""
    spec = config._runner_module_spec()
    given: Any = getattr(spec, "model_config", None) or {}
    if dataclasses.is_dataclass(given) and not isinstance(given, type):
        given = dataclasses.asdict(given)  # a DefaultModelConfig, as the torch path reads it
    if not isinstance(given, dict):
        return None
    try:
        return check_model_config(
            {**config.model, **config._model_config_auto_includes, **given},
            setting="model_config",
        )
    except (ValueError, TypeError, KeyError):
        return None


def defers_torch(config: Any) -> bool:
    """Whether a run of `config` may start without torch (the config's half of
    `deferred_torch_plan`: everything but the spaces). The EnvRunners' worker template then
    does not import torch. Not where the run has no seed and torch is imported already: its
    module would start from torch's global generator, which the script may have seeded."""
    return _deferred_model(config) is not None


def _deferred_model(config: Any) -> dict | None:
    """The torch module's model config where `config` may run without torch
    (`defers_torch`), else None."""
    if not config.uses_torch or config.framework_str != "torch" or config.is_multi_agent:
        return None
    if config.seed is None and "torch" in sys.modules:
        # Without a seed the torch module starts from torch's global generator, which a
        # script that imported torch may have seeded itself (`torch.manual_seed`): built.
        return None
    classes = type(config)._CLASSES
    if classes is None or (classes.torch_learner, classes.torch_module) != (
        TORCH_LEARNER,
        TORCH_MODULE,
    ):
        return None
    spec = config._runner_module_spec()
    if any(getattr(spec, key, None) is not None for key in ("module_class", "catalog_class")):
        return None
    if getattr(spec, "load_state_path", None) or config.__dict__.get("_learner_class"):
        return None
    if config.learner_only_module_specs() or config.get("learner_connector"):
        return None
    if config.get("_torch_lr_scheduler_classes"):
        return None
    if config.num_learners > 1 or config["num_gpus_per_learner"]:
        return None
    if not config.use_critic or isinstance(config.lr, list | tuple) or config.optimizer:
        return None
    model = _model_config(config)
    if model is None or model["use_lstm"] or not model["fcnet_hiddens"]:
        return None
    if any(model.get(key) for key in _TORCH_ONLY_KEYS):
        return None
    activations = (model["fcnet_activation"], model["head_fcnet_activation"])
    return model if all(name in _ACTIVATIONS for name in activations) else None


#: Model-config keys of networks the numpy module does not mirror (layer norms, initializers,
#: attention, a CNN's layers: the torch module then keeps its own weights).
_TORCH_ONLY_KEYS = (
    "fcnet_use_layernorm",
    "head_fcnet_use_layernorm",
    "use_attention",
    "fcnet_kernel_initializer",
    "fcnet_bias_initializer",
    "head_fcnet_kernel_initializer",
    "head_fcnet_bias_initializer",
    "conv_filters",
)


def deferred_torch_plan(config: Any, spaces: SpaceInfo) -> DeferredPlan | None:
    """The plan of a run of `config` on `spaces` (a `SpaceInfo`) without torch, or None where
    it must build the torch objects (see the module docstring): the config is exactly the
    default (`defers_torch`) and the spaces are a flat Box of observations and Discrete or
    flat Box actions."""
    model = _deferred_model(config) if isinstance(spaces, SpaceInfo) else None
    if model is None:
        return None
    obs_space = spaces.observation_space()
    action_space = spaces.action_space()
    if spaces.nested_obs_space is not None or spaces.action_layout is not None:
        return None
    if not (isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1):
        return None
    if spaces.obs_shape is not None and len(spaces.obs_shape) != 1:
        return None  # (images, read by the torch module's CNN; matrices)
    if not isinstance(action_space, gym.spaces.Discrete) and not (
        isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1
    ):
        return None
    try:
        numpy_module = PolicyModule(dataclasses.replace(spaces, keep_obs_shape=False), model)
    except (ValueError, TypeError, KeyError):
        return None
    box = isinstance(action_space, gym.spaces.Box)
    encoder_act = _ACTIVATIONS[model["fcnet_activation"]]
    head_act = _ACTIVATIONS[model["head_fcnet_activation"]]
    encoder_acts = (encoder_act,) * len(model["fcnet_hiddens"])
    head_acts = (head_act,) * len(model["head_fcnet_hiddens"]) + (None,)
    shared = bool(model["vf_share_layers"])
    free_log_std = bool(model["free_log_std"]) and box
    torch_names = _torch_names(numpy_module, shared, encoder_acts, head_acts, free_log_std)
    if torch_names is None:
        return None
    inference = tuple(
        name for name in torch_names.values() if not name.startswith(("vf.", _CRITIC))
    )
    state = numpy_module.get_state()
    return DeferredPlan(
        model_config=model,
        spaces=spaces.keeping_obs_shape(),
        torch_names=torch_names,
        inference_names=inference,
        torch_shapes={
            torch_name: _torch_layout(name, state[name]).shape
            for name, torch_name in torch_names.items()
        },
        encoder_activations=encoder_acts,
        head_activations=head_acts,
        log_std_clip=float(model.get("log_std_clip_param", 20.0)) if box else None,
    )


_CRITIC = "encoder.critic_encoder."


def _linear_names(prefix: str, activations: tuple[str | None, ...]) -> list[str]:
    """The names of a `TorchMLP`'s Linear layers (`prefix.mlp.<i>`: each Linear is followed
    by its activation layer, if any, in one `nn.Sequential`)."""
    names, index = [], 0
    for activation in activations:
        names.append(f"{prefix}.mlp.{index}")
        index += 1 + (activation is not None)
    return names


def _torch_names(
    numpy_module: PolicyModule,
    shared: bool,
    encoder_acts: tuple[str | None, ...],
    head_acts: tuple[str | None, ...],
    free_log_std: bool,
) -> dict[str, str] | None:
    """{numpy parameter name: the default torch module's parameter name}, in the torch
    module's state order (`trainer.algorithms.ppo.numpy_state` maps the same pairs by reading
    a torch module); None where they do not cover the numpy module's parameters."""
    pi_head = _linear_names("pi.net", head_acts)
    vf_head = _linear_names("vf.net", head_acts)
    if shared:
        chains = [("encoder", _linear_names("encoder.encoder.net", encoder_acts))]
        chains += [("pi", pi_head), ("vf", vf_head)]
    else:
        actor = _linear_names("encoder.actor_encoder.net", encoder_acts)
        critic = _linear_names("encoder.critic_encoder.net", encoder_acts)
        chains = [("pi", actor + pi_head), ("vf", critic + vf_head)]
    names: dict[str, str] = {}
    for numpy_net, linears in chains:
        names.update(mlp_names(numpy_net, linears))
    if free_log_std:
        names["log_std"] = "pi.log_std"
    if set(names) != set(numpy_module.parameter_names()):
        return None
    # The torch module's state order: its encoder (actor, then critic), pi (its own log-std
    # before its layers), vf.
    order = ("encoder.actor_encoder.", "encoder.encoder.", _CRITIC, "pi.log_std", "pi.", "vf.")
    return dict(sorted(names.items(), key=lambda pair: order.index(_part(pair[1], order))))


def _part(name: str, order: tuple[str, ...]) -> str:
    return next(prefix for prefix in order if name.startswith(prefix))


def _torch_layout(name: str, value: np.ndarray) -> np.ndarray:
    """A numpy parameter as the torch parameter's array (a weight `(in, out)` is `(out, in)`
    there), a C-contiguous float32 copy."""
    return np.ascontiguousarray(value.T if name.endswith(".weight") else value, np.float32)


class _Deferred(ABC):
    """What both stand-ins share: the real object built on first need (`materialize`), and
    then every attribute, read or written, the real object's."""

    _OWN: frozenset[str] = frozenset()

    def __init__(self, build: Callable[[], Any]) -> None:
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_real", None)

    @property
    def materialized(self) -> bool:
        """Whether the real (torch) object was built."""
        return self._real is not None

    def materialize(self) -> Any:
        """The real object, built (torch imported) and given this stand-in's state on the
        first call."""
        if self._real is None:
            real = self._build()
            self._hand_over(real)
            object.__setattr__(self, "_real", real)
        return self._real

    @abstractmethod
    def _hand_over(self, real: Any) -> None:
        """Gives the freshly built `real` object this stand-in's state."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _ABSENT or name in ("_real", "_build"):
            raise AttributeError(name)
        return getattr(self.materialize(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN and self._real is None:
            object.__setattr__(self, name, value)
        else:
            setattr(self.materialize(), name, value)

    def __reduce__(self) -> Any:
        return (_same, (self.materialize(),))


def _same(value: Any) -> Any:
    return value


class DeferredPPOTorchLearner(_Deferred):
    """The default `PPOTorchLearner` of a config that `deferred_torch_plan` accepts, updating
    in numpy until the torch learner is asked for (see the module docstring). `build()`
    builds that torch learner (the Algorithm's torch path)."""

    _OWN = frozenset({"learner_only_results"})
    framework = "torch"
    #: RLlib's `Learner.build()` hook: the default learner's adds nothing, and no pipeline.
    _learner_connector = None

    def __init__(self, config: Any, plan: DeferredPlan, build: Callable[[], Any]) -> None:
        super().__init__(build)
        numpy_module = PolicyModule(plan.numpy_spaces(), plan.model_config, seed=config.seed)
        numpy_learner = PPOLearner(config, None, module=numpy_module)
        # The torch learner's default Adam, before it is built (`adam_settings_of`).
        numpy_learner.optimizer = Adam(
            numpy_module.flat_params, lr=float(config.lr), **adam_settings(config.optimizer)
        )
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "numpy_learner", numpy_learner)
        object.__setattr__(self, "module_id", DEFAULT_MODULE_ID)
        #: As the torch learner's: the learner-only modules' results (none here).
        object.__setattr__(self, "learner_only_results", {})

    def build(self) -> None:
        """RLlib's hook (`TorchLearner.build`): the default learner adds nothing."""
        if self._real is not None:
            self._real.build()

    def update(self, *args: Any, **kwargs: Any) -> Any:
        """`PPOTorchLearner.update(episodes, num_env_steps_sampled_lifetime=...)`'s results
        (its numpy update's: `NumpyPPOUpdate`); any other call is the torch learner's."""
        plain = len(args) == 1 and isinstance(args[0], list) and set(kwargs) <= _UPDATE_KWARGS
        if self._real is not None or not plain:
            return self.materialize().update(*args, **kwargs)
        timestep = kwargs.get("num_env_steps_sampled_lifetime")
        if timestep is not None:
            object.__setattr__(self, "_timestep", timestep)
        return self.numpy_learner.update(args[0], **kwargs)

    def get_weights(self) -> dict[str, np.ndarray]:
        """The EnvRunners' weights, as the torch learner gives them: the inference-only
        state, by torch name, in torch's layout."""
        if self._real is not None:
            return self._real.get_weights()
        state = self.numpy_learner.module.get_state()
        names = self.plan.torch_names
        inference = set(self.plan.inference_names)
        return {
            torch_name: _torch_layout(name, state[name])
            for name, torch_name in names.items()
            if torch_name in inference
        }

    def torch_state(self) -> dict[str, Any]:
        """The torch learner's `get_state()` that these updates give (its module's state,
        its Adam's, the KL coefficient and the minibatch generator)."""
        numpy_learner = self.numpy_learner
        module = numpy_learner.module
        adam = numpy_learner.optimizer
        names = self.plan.torch_names
        state = module.get_state()
        param_state: dict[str, dict[str, Any]] = {}
        if adam.step_count:
            offset = 0
            for name, value in zip(module.parameter_names(), module.parameters(), strict=True):
                size = value.size
                m = adam.m[offset : offset + size].reshape(value.shape)
                v = adam.v[offset : offset + size].reshape(value.shape)
                offset += size
                param_state[names[name]] = {
                    "step": float(adam.step_count),
                    "exp_avg": _torch_layout(name, m),
                    "exp_avg_sq": _torch_layout(name, v),
                }
        return {
            "module": {names[name]: _torch_layout(name, state[name]) for name in names},
            "optimizer": {
                DEFAULT_OPTIMIZER: {
                    "lr": [float(adam.lr)],
                    "param_state": param_state,
                    "lr_schedulers": [],
                }
            },
            "kl_coeff": numpy_learner.kl_coeff,
            "rng": generator_state(numpy_learner.rng),
        }

    def _hand_over(self, real: Any) -> None:
        real.set_state(self.torch_state())
        # Not in a learner's state (as in RLlib): where the entropy schedule stands, stepped
        # as the last update stepped it.
        timestep = self.__dict__.get("_timestep")
        if timestep is not None:
            real.update_entropy_coeff(timestep)


class DeferredPPOModuleView(_Deferred):
    """An EnvRunner's default torch PPO module (`TorchModuleView` of an inference-only
    `DefaultPPOTorchRLModule`) before torch: it acts on the weights it was sent with the
    view's numpy forward; before any weights, and for anything else, it builds the view
    (`build()`, seeded as the config builds it) and hands it the weights."""

    _OWN = frozenset({"module_acted", "module_extras"})
    framework = "torch"
    inference_only = False
    learner_only = False
    stateful = False
    needs_prev_actions = False
    needs_prev_rewards = False
    draws_in_forward = False
    module_id = DEFAULT_MODULE_ID

    def __init__(self, plan: DeferredPlan, build: Callable[[], Any]) -> None:
        super().__init__(build)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "spaces", plan.spaces)
        discrete = plan.spaces.action_discrete_n is not None
        object.__setattr__(self, "dist", Categorical if discrete else DiagGaussian)
        object.__setattr__(self, "inference_dist", self.dist)
        object.__setattr__(self, "module_acted", None)
        object.__setattr__(self, "module_extras", None)
        #: The weights sent (torch names and layout), and the forward's copies of them.
        object.__setattr__(self, "_weights", None)
        object.__setattr__(self, "_encoder", None)
        object.__setattr__(self, "_head", None)
        object.__setattr__(self, "_log_std", None)
        in_dim = plan.spaces.obs_dim
        object.__setattr__(self, "_obs_shapes", {(in_dim,), tuple(plan.spaces.obs_shape or ())})

    def dist_inputs(self, obs: np.ndarray, explore: bool = True) -> np.ndarray:
        """The action-distribution inputs for a batch of observation rows (the view's numpy
        forward: `NumpyPPOInference`)."""
        if (
            self._real is not None
            or self._encoder is None
            or not accepts_rows(obs, self._obs_shapes)
        ):
            return self.materialize().dist_inputs(obs, explore)
        rows = obs.reshape(len(obs), -1).astype(np.float32, copy=False)
        return forward_head(
            forward_layers(self._head, forward_layers(self._encoder, rows)),
            self._log_std,
            self.plan.log_std_clip,
        )

    def to_env_actions(self, actions: np.ndarray, *, normalize: bool, clip: bool) -> np.ndarray:
        return env_actions(self.spaces, actions, normalize=normalize, clip=clip)

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Takes the EnvRunners' weights (the inference-only state by torch name): exactly
        those, float32 of their shapes and finite; anything else goes to the torch view,
        which takes what it takes and names what it refuses."""
        if self._real is not None or not self._fits(weights):
            self.materialize().set_weights(weights)
            return
        own = {name: np.array(weights[name], np.float32) for name in self.plan.inference_names}
        object.__setattr__(self, "_weights", own)
        self._build_forward(own)

    def check_weights(self, weights: Any, where: str = "weights") -> None:
        """The view's `check_weights`: weights it takes pass here; any others are the torch
        view's to judge (it raises naming what does not fit)."""
        if self._real is not None or not self._fits(weights):
            self.materialize().check_weights(weights, where)

    def _fits(self, weights: Any) -> bool:
        if not isinstance(weights, dict) or set(weights) != set(self.plan.inference_names):
            return False
        shapes = self.plan.torch_shapes
        for name, value in weights.items():
            if type(value) is not np.ndarray or value.dtype != np.float32:
                return False
            if value.shape != shapes[name] or not np.isfinite(value).all():
                return False
        return True

    def _build_forward(self, weights: dict[str, np.ndarray]) -> None:
        """The forward's layers from the weights: `(weight (in, out) contiguous, bias,
        activation)` each, as `NumpyLayers` copies them from the torch module."""
        plan = self.plan
        names = [name for name in plan.inference_names if name != "pi.log_std"]
        linears = [name[: -len(".weight")] for name in names if name.endswith(".weight")]
        n_encoder = len(plan.encoder_activations)
        activations = plan.encoder_activations + plan.head_activations
        layers = [
            (np.ascontiguousarray(weights[f"{linear}.weight"].T), weights[f"{linear}.bias"], act)
            for linear, act in zip(linears, activations, strict=True)
        ]
        object.__setattr__(self, "_encoder", layers[:n_encoder])
        object.__setattr__(self, "_head", layers[n_encoder:])
        object.__setattr__(self, "_log_std", weights.get("pi.log_std"))

    def get_weights(self) -> dict[str, np.ndarray]:
        if self._real is not None or self._weights is None:
            return self.materialize().get_weights()
        return {name: value.copy() for name, value in self._weights.items()}

    def _hand_over(self, real: Any) -> None:
        if self._weights is not None:
            real.set_weights(self._weights)


# An EnvRunner's module is an RLModule to user code (as `TorchModuleView` is registered).
RLModule.register(DeferredPPOModuleView)


class DeferredTorch:
    """PPO's `AlgorithmClasses.deferred_torch`: the stand-ins where `deferred_torch_plan`
    accepts the config and spaces, else None."""

    @staticmethod
    def defers(config: Any) -> bool:
        return defers_torch(config)

    @staticmethod
    def learner(config: Any, spaces: Any, build: Callable[[], Any]) -> Any:
        plan = deferred_torch_plan(config, spaces)
        return None if plan is None else DeferredPPOTorchLearner(config, plan, build)

    @staticmethod
    def module_view(config: Any, spaces: Any, build: Callable[[], Any]) -> Any:
        plan = deferred_torch_plan(config, spaces)
        return None if plan is None else DeferredPPOModuleView(plan, build)


DEFERRED_TORCH = DeferredTorch()

__all__ = [
    "DEFERRED_TORCH",
    "DeferredPPOModuleView",
    "DeferredPPOTorchLearner",
    "DeferredPlan",
    "defers_torch",
    "deferred_torch_plan",
]
