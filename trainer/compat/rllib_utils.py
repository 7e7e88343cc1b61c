"""Small RLlib utilities that RLlib scripts import next to the algorithms: the API annotations
(`override`, `PublicAPI`, ...), `try_import_torch`/`try_import_tf` (which, as in RLlib, return
stand-ins when the framework is not installed), the type aliases of `ray.rllib.utils.typing`,
the constants of `ray.rllib.core` and RLlib's `Columns` names. The RLlib launcher
(`trainer.launcher`) maps `ray.rllib.utils.annotations`, `.framework`, `.typing`,
`ray.rllib.core` and `ray.rllib.core.columns` here.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from trainer.capabilities import TORCH
from trainer.core.initializers import INITIALIZERS
from trainer.errors import RLlibNotAvailable

F = TypeVar("F", bound=Callable[..., Any])


# -- ray.rllib.utils.annotations --------------------------------------------------------------
def _decorated_name(obj: Any) -> str | None:
    """The name a decorated object is bound under in its class: a function's, or the wrapped
    function's of a `classmethod`, `staticmethod` or `property` (whichever way round the
    decorators are stacked)."""
    for inner in (obj, getattr(obj, "__func__", None), getattr(obj, "fget", None)):
        name = getattr(inner, "__name__", None)
        if isinstance(name, str):
            return name
    return None


def override(parent_cls: type) -> Callable[[F], F]:
    """RLlib's `@override(Parent)`: documents that a method overrides `Parent`'s and returns
    the decorated object itself (so it stacks with `classmethod`, `staticmethod` and
    `property`, either way round). As in RLlib, the one check is that `Parent` has a member of
    that name (`dir(Parent)`): a `NameError` names both otherwise."""

    def decorator(method: F) -> F:
        name = _decorated_name(method)
        if name is None:
            raise TypeError(
                f"@override({getattr(parent_cls, '__name__', parent_cls)}) decorates a "
                f"function, classmethod, staticmethod or property; got {method!r}"
            )
        if isinstance(parent_cls, type) and isinstance(
            vars(parent_cls).get("__localrl_rllib_name__"), str
        ):
            # A placeholder of an RLlib class this project does not serve (the launcher's):
            # the subclass can be defined; making one fails, naming what it needs.
            return method
        if name not in dir(parent_cls):
            raise NameError(
                f"@override({getattr(parent_cls, '__name__', parent_cls)}) on {name}: "
                f"{getattr(parent_cls, '__name__', parent_cls)} has no method {name!r} "
                "(when using the @override decorator, the method must override the "
                "respective method of the parent class)"
            )
        return method

    return decorator


def _marker(obj: F) -> F:
    """The API-stability annotations (`PublicAPI`, `DeveloperAPI`, `ExperimentalAPI`,
    `OldAPIStack`) only document: the object itself comes back."""
    return obj


PublicAPI = DeveloperAPI = ExperimentalAPI = OldAPIStack = _marker


def OverrideToImplementCustomLogic(obj: F) -> F:  # noqa: N802 (RLlib's name)
    """Marks a method that users override to implement custom logic: RLlib's
    `is_overridden(instance.method)` is False until a subclass defines its own."""
    vars(obj)["__is_overridden__"] = False  # a function attribute, as RLlib sets it
    return obj


#: The same mark, for methods whose override should call `super()`'s (RLlib's `setup`).
OverrideToImplementCustomLogic_CallToSuperRecommended = OverrideToImplementCustomLogic


def is_overridden(obj: Callable[..., Any]) -> bool:
    """RLlib's check: False for a method marked `OverrideToImplementCustomLogic` (or its
    `_CallToSuperRecommended` twin) that no subclass redefined; True otherwise, an unmarked
    method included (as in RLlib, which only answers for the marked ones)."""
    return bool(getattr(obj, "__is_overridden__", True))


# -- ray.rllib.utils.lambda_defaultdict -------------------------------------------------------
class LambdaDefaultDict(defaultdict):
    """RLlib's defaultdict whose factory takes the missing key: `d[key]` of a missing key
    stores and returns `default_factory(key)`."""

    def __init__(self, default_factory: Callable[[Any], Any], *args: Any, **kwargs: Any):
        if not callable(default_factory):
            raise TypeError(
                f"LambdaDefaultDict(default_factory={default_factory!r}): the first argument "
                "must be a callable taking the missing key"
            )
        super().__init__(None, *args, **kwargs)
        self.default_factory = default_factory  # type: ignore[assignment]

    def __missing__(self, key: Any) -> Any:
        assert self.default_factory is not None
        self[key] = value = self.default_factory(key)  # type: ignore[call-arg]
        return value


# -- ray.rllib.evaluation.postprocessing (the names the new stack's learners use) -------------
class Postprocessing:
    """RLlib's column names of the advantages and value targets (RLlib's PPO learners read
    `batch[Postprocessing.ADVANTAGES]`)."""

    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"


def discount_cumsum(x: Any, gamma: float) -> Any:
    """RLlib's discounted cumulative sums along the first axis: `y[t] = x[t] + gamma *
    y[t+1]` (`[1, 2, 3]`, gamma 0.9: `[5.23, 4.7, 3.0]`)."""
    import numpy as np

    values = np.asarray(x, dtype=np.float64 if np.asarray(x).dtype.kind != "f" else None)
    out = np.empty_like(values)
    running = np.zeros_like(values[0]) if len(values) else values
    for t in range(len(values) - 1, -1, -1):
        running = values[t] + gamma * running
        out[t] = running
    return out


# -- ray._common.deprecation (RLlib's annotations re-export `Deprecated`) ----------------------
#: RLlib's marker for a setting that should not be given any more (`AlgorithmConfig` keys).
DEPRECATED_VALUE = -1

_logger = logging.getLogger("ray.rllib")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def deprecation_warning(
    old: str,
    new: str | None = None,
    *,
    help: str | None = None,  # RLlib's name
    error: bool | type[Exception] | None = None,
    stacklevel: int = 2,
) -> None:
    """RLlib's deprecation message: raised (`ValueError`, or the exception class given as
    `error`) or logged as a warning."""
    message = f"`{old}` has been deprecated." + (
        f" Use `{new}` instead." if new else f" {help}" if help else ""
    )
    if error:
        raise (error if isinstance(error, type) else ValueError)(message)
    _logger.warning(
        "DeprecationWarning: %s This will raise an error in the future!",
        message,
        stacklevel=stacklevel,
    )


def Deprecated(  # noqa: N802 (RLlib's name)
    old: str | None = None,
    *,
    new: str | None = None,
    help: str | None = None,  # RLlib's name
    error: bool | type[Exception],
) -> Callable[[F], F]:
    """RLlib's `@Deprecated(new=..., error=...)`: a class's constructor, or a function or
    method, logs the deprecation the first time it is used, or raises it (each time, where
    RLlib raises only the first time) with `error`."""

    def decorate(obj: F) -> F:
        name = old or str(getattr(obj, "__name__", obj))

        def announce() -> None:
            with _warned_lock:
                first = name not in _warned
                _warned.add(name)
            if first or error:
                deprecation_warning(name, new, help=help, error=error, stacklevel=4)

        if isinstance(obj, type):
            original_init: Callable[..., None] = obj.__init__  # type: ignore[misc]

            @functools.wraps(original_init)
            def patched_init(*args: Any, **kwargs: Any) -> None:
                announce()
                original_init(*args, **kwargs)

            type.__setattr__(obj, "__init__", patched_init)
            return obj

        def deprecated(*args: Any, **kwargs: Any) -> Any:
            announce()
            return obj(*args, **kwargs)

        return functools.wraps(obj)(deprecated) if callable(obj) else deprecated  # type: ignore[return-value]

    return decorate


# -- ray.rllib.utils.framework ----------------------------------------------------------------
def _torch_missing(what: str) -> ImportError:
    return RLlibNotAvailable(
        what,
        TORCH,
        "this project's numpy models (or pip install torch)",
        detail="torch is not installed",
    )


class _FrameworkClassStub:
    """What `nn.Module` is when torch is missing: subclassing works, instantiating fails (as in
    RLlib, with the launcher's typed error)."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise _torch_missing(f"torch.nn.Module ({type(self).__name__})")


class _TorchInitNames:
    """`nn.init` when torch is missing: `nn.init.xavier_uniform_` names the numpy initializer
    of that name, so a model config given `fcnet_kernel_initializer=nn.init.xavier_uniform_`
    builds the same network as with torch's function (`trainer.core.initializers`); calling
    one, as code that fills torch tensors does, fails with the launcher's typed error."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.lower() not in INITIALIZERS:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            raise _torch_missing(f"torch.nn.init.{name}")

        def initializer(*args: Any, **kwargs: Any) -> Any:
            raise _torch_missing(f"torch.nn.init.{name}")

        initializer.__name__ = initializer.__qualname__ = name
        vars(initializer)["torch_init_name"] = name  # a function attribute, read by name
        return initializer


class _NNStub:
    def __init__(self) -> None:
        self.functional = None
        self.Module = _FrameworkClassStub
        self.parallel = None
        self.init = _TorchInitNames()


class _MissingTorch:
    """What `try_import_torch()` gives for `torch` when torch is not installed: false (RLlib
    gives None, and scripts test `if torch:`), and any use fails with `RLlibNotAvailable`
    naming what was used (instead of `'NoneType' object has no attribute ...`)."""

    def __init__(self, path: str = "torch"):
        self._path = path

    def __bool__(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name == "nn" and self._path == "torch":  # torch.nn.init names initializers too
            return _NNStub()
        raise _torch_missing(f"{self._path}.{name}")

    def __repr__(self) -> str:
        return "<torch: not installed>"


def try_import_torch(error: bool = False) -> tuple[Any, Any]:
    """(torch, torch.nn), or, when torch is not installed, a false stand-in for torch (using
    it raises `RLlibNotAvailable`) and a stub `nn` whose `Module` can be subclassed (RLlib's
    behaviour, with None for torch); `error=True` raises `ImportError` instead."""
    try:
        import torch
        import torch.nn as nn

        return torch, nn
    except ImportError:
        if error:
            raise ImportError("Could not import PyTorch: pip install torch") from None
        return _MissingTorch(), _NNStub()


def try_import_tf(error: bool = False) -> tuple[Any, Any, Any]:
    """(tf1, tf, version), or `(None, None, None)` when TensorFlow is not installed."""
    try:
        import tensorflow as tf

        return tf.compat.v1, tf, 2
    except ImportError:
        if error:
            raise ImportError("Could not import TensorFlow: pip install tensorflow") from None
        return None, None, None


def try_import_jax(error: bool = False) -> tuple[Any, Any]:
    """(jax, flax), or `(None, None)` when they are not installed."""
    try:
        import flax
        import jax

        return jax, flax
    except ImportError:
        if error:
            raise ImportError("Could not import JAX: pip install jax flax") from None
        return None, None


def try_import_tfp(error: bool = False) -> Any:
    """tensorflow_probability, or None when it is not installed."""
    try:
        import tensorflow_probability as tfp

        return tfp
    except ImportError:
        if error:
            raise ImportError("Could not import tensorflow_probability") from None
        return None


# -- ray.rllib.core -----------------------------------------------------------------------------
DEFAULT_AGENT_ID = "default_agent"
DEFAULT_POLICY_ID = "default_policy"
DEFAULT_MODULE_ID = DEFAULT_POLICY_ID
ALL_MODULES = "__all_modules__"
COMPONENT_ENV_RUNNER = "env_runner"
COMPONENT_ENV_TO_MODULE_CONNECTOR = "env_to_module_connector"
COMPONENT_EVAL_ENV_RUNNER = "eval_env_runner"
COMPONENT_LEARNER = "learner"
COMPONENT_LEARNER_GROUP = "learner_group"
COMPONENT_METRICS_LOGGER = "metrics_logger"
COMPONENT_MODULE_TO_ENV_CONNECTOR = "module_to_env_connector"
COMPONENT_OPTIMIZER = "optimizer"
COMPONENT_RL_MODULE = "rl_module"


class Columns:
    """RLlib's names of the columns of episodes and train batches (`ray.rllib.core.columns`)."""

    OBS = "obs"
    INFOS = "infos"
    ACTIONS = "actions"
    ACTIONS_FOR_ENV = "actions_for_env"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    NEXT_OBS = "new_obs"
    EPS_ID = "eps_id"
    AGENT_ID = "agent_id"
    MODULE_ID = "module_id"
    SEQ_LENS = "seq_lens"
    T = "t"
    STATE_IN = "state_in"
    NEXT_STATE_IN = "next_state_in"
    STATE_OUT = "state_out"
    NEXT_STATE_OUT = "next_state_out"
    EMBEDDINGS = "embeddings"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    ACTION_PROB = "action_prob"
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    VALUES_BOOTSTRAPPED = "values_bootstrapped"
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    INTRINSIC_REWARDS = "intrinsic_rewards"
    RETURNS_TO_GO = "returns_to_go"
    LOSS_MASK = "loss_mask"


# -- ray.rllib.utils.typing: type hints only, so each alias is `Any` ----------------------------
TYPE_ALIASES = (
    "TensorType",
    "TensorStructType",
    "TensorShape",
    "NetworkType",
    "DeviceType",
    "RLModuleSpecType",
    "StateDict",
    "AlgorithmConfigDict",
    "PartialAlgorithmConfigDict",
    "ModelConfigDict",
    "ConvFilterSpec",
    "FromConfigSpec",
    "EnvConfigDict",
    "EnvID",
    "EnvType",
    "EnvCreator",
    "AgentID",
    "PolicyID",
    "ModuleID",
    "MultiAgentPolicyConfigDict",
    "EpisodeType",
    "IsPolicyToTrain",
    "AgentToModuleMappingFn",
    "ShouldModuleBeUpdatedFn",
    "PolicyState",
    "TFPolicyV2Type",
    "EpisodeID",
    "UnrollID",
    "MultiAgentDict",
    "MultiEnvDict",
    "EnvObsType",
    "EnvActionType",
    "EnvInfoDict",
    "FileType",
    "ViewRequirementsDict",
    "ResultDict",
    "LocalOptimizer",
    "Optimizer",
    "Param",
    "ParamRef",
    "ParamDict",
    "ParamList",
    "NamedParamDict",
    "LearningRateOrSchedule",
    "GradInfoDict",
    "LearnerStatsDict",
    "ModelGradients",
    "ModelWeights",
    "ModelInputDict",
    "SampleBatchType",
    "SpaceStruct",
    "StateBatches",
    "PolicyOutputType",
)
globals().update({name: Any for name in TYPE_ALIASES})
T = TypeVar("T")


# -- ray.rllib.utils: flatten_dict / unflatten_dict --------------------------------------------
def flatten_dict(nested: dict[str, Any], sep: str = "/", env_steps: int = 0) -> dict[str, Any]:
    """RLlib's `flatten_dict`: a nested dict (and the lists and tuples in it) as one flat dict
    whose keys are the paths joined by `sep` (`{"p0": {"obs": x}}` -> `{"p0/obs": x}`), as an
    `OfflinePreLearner` hands its batch on. `env_steps` is taken, as RLlib's, and unused."""
    flat: dict[str, Any] = {}

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if isinstance(value, dict):  # (an empty one has no leaves, as in dm_tree)
            for key in sorted(value, key=str):
                walk(value[key], (*path, str(key)))
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                walk(item, (*path, str(index)))
        else:
            flat[sep.join(path)] = value

    walk(nested, ())
    return flat


def unflatten_dict(flat: dict[str, Any], sep: str = "/") -> dict[str, Any]:
    """RLlib's `unflatten_dict`: the nested dict of a flat one whose keys are paths joined by
    `sep` (lists flattened by `flatten_dict` come back as dicts keyed "0", "1", ...)."""
    nested: dict[str, Any] = {}
    for compound_key, value in flat.items():
        keys = compound_key.split(sep)
        current = nested
        for key in keys[:-1]:
            current = current.setdefault(key, {})
        current[keys[-1]] = value
    return nested
