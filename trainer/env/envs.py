"""Env registry and env construction.

`config.environment(env)` takes a gymnasium id, a name given to `register_env`, a `gymnasium.Env`
subclass (built as `cls(env_config)`) or a callable `(env_config) -> env`. It is resolved once, in
the main process, into an `EnvCreator` that is cloudpickled into every EnvRunner process; so names
registered in a user's script (with `register_env` or `gymnasium.register`) work in the workers too.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from trainer.util.checks import signature_refusing

_REGISTRY: dict[str, Callable[[Any], gym.Env]] = {}


def register_env(name: str, env_creator: Callable[[Any], gym.Env]) -> None:
    """Registers `env_creator(env_config) -> env` under `name`, for `config.environment(name)`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_env(name={name!r}): name must be a non-empty string")
    if not callable(env_creator):
        raise ValueError(
            f"register_env({name!r}, env_creator={env_creator!r}): env_creator must "
            "be callable as env_creator(env_config) -> gymnasium.Env"
        )
    _REGISTRY[name] = env_creator


def registered_env_creator(name: Any) -> Callable[[Any], gym.Env] | None:
    """The creator `register_env` holds under `name`, or None."""
    return _REGISTRY.get(name) if isinstance(name, str) else None


def register_env_if_missing(name: str, env_creator: Callable[[Any], gym.Env]) -> None:
    """`register_env(name, env_creator)` unless this process has `name` registered already."""
    if name not in _REGISTRY:
        register_env(name, env_creator)


#: Tune's registry category of env creators (`ray.tune.registry.ENV_CREATOR`).
ENV_CREATOR = "env_creator"


class _Registry:
    """Tune's `_global_registry` spelling over the env registry (RLlib's tests unregister the
    envs they registered through it)."""

    def register(self, category: str, key: str, value: Callable[[Any], gym.Env]) -> None:
        self._check(category)
        register_env(key, value)

    def contains(self, category: str, key: str) -> bool:
        self._check(category)
        return key in _REGISTRY

    def get(self, category: str, key: str) -> Callable[[Any], gym.Env]:
        self._check(category)
        return _REGISTRY[key]

    def unregister(self, category: str, key: str) -> None:
        self._check(category)
        _REGISTRY.pop(key, None)

    @staticmethod
    def _check(category: str) -> None:
        if category != ENV_CREATOR:
            raise ValueError(
                f"registry category {category!r}: only {ENV_CREATOR!r} (env creators) exists here"
            )


_global_registry = _Registry()


class EnvContext(dict):
    """The `env_config` dict an env creator receives, plus where it runs: `worker_index`
    (0 for the main process), `num_workers`, `vector_index` (the sub-env's index in its runner)
    and `recreated_worker`."""

    def __init__(
        self,
        env_config: dict,
        worker_index: int = 0,
        num_workers: int = 0,
        vector_index: int = 0,
        recreated_worker: bool = False,
    ):
        super().__init__(env_config)
        self.worker_index = worker_index
        self.num_workers = num_workers
        self.vector_index = vector_index
        self.recreated_worker = recreated_worker

    def set_defaults(self, defaults: dict) -> None:
        """Adds the keys of `defaults` this context lacks (those it has keep their values)."""
        for key, value in defaults.items():
            self.setdefault(key, value)

    def copy_with_overrides(self, **overrides: Any) -> EnvContext:
        fields: dict[str, Any] = {
            "worker_index": self.worker_index,
            "num_workers": self.num_workers,
            "vector_index": self.vector_index,
            "recreated_worker": self.recreated_worker,
        }
        fields.update(overrides)
        return EnvContext(dict(self), **fields)

    def __reduce__(self) -> tuple[type[EnvContext], tuple[Any, ...]]:
        return (
            EnvContext,
            (
                dict(self),
                self.worker_index,
                self.num_workers,
                self.vector_index,
                self.recreated_worker,
            ),
        )


#: The modules of env families that register their gymnasium ids when imported, and how to
#: install each: (this project's extra, the package itself).
ENV_FAMILY_PACKAGES = {
    "ale_py": ("atari", "ale-py"),
    "pettingzoo": ("pettingzoo", "pettingzoo"),
    "mujoco": ("mujoco", "mujoco"),
    "dm_control": ("mujoco", "dm-control"),
    "pyspiel": ("openspiel", "open_spiel"),
    "pymunk": ("pettingzoo", "pymunk"),
}
#: Gymnasium's own envs whose entry point needs a family's package (its MuJoCo envs import
#: `mujoco` when made): checked at `environment()`, not at the first EnvRunner's make.
ENTRY_POINT_MODULES = {"gymnasium.envs.mujoco": "mujoco"}
#: Gymnasium id prefixes whose family module registers them (RLlib's scripts write
#: "ale_py:ALE/Pong-v5"; "ALE/Pong-v5" alone names the same env once ale_py is imported).
ID_PREFIX_MODULES = {"ALE/": "ale_py"}


class EnvCreator:
    """A picklable `(env_context) -> gymnasium.Env`, resolved from what the user configured."""

    def __init__(self, kind: str, target: Any, description: str, gym_spec: Any = None):
        self.kind = kind  # "gym_id" | "callable"
        self.target = target
        self.description = description
        self.gym_spec = gym_spec

    def _register_gym_id(self) -> None:
        if self.target not in gym.registry and self.gym_spec is not None:
            entry_point = self.gym_spec.entry_point
            family = entry_point.partition(".")[0] if isinstance(entry_point, str) else ""
            if family in ENV_FAMILY_PACKAGES:  # (its module registers its own ids: ALE's)
                importlib.import_module(family)
                if self.target in gym.registry:
                    return
            # Registered with gymnasium.register() in the user's script: repeat it here.
            gym.register(
                **{k: v for k, v in vars(self.gym_spec).items() if k in _GYM_REGISTER_FIELDS}
            )

    def __call__(self, env_context: EnvContext) -> gym.Env:
        if self.kind == "gym_id":
            self._register_gym_id()
            env = gym.make(self.target, **dict(env_context))
        else:  # an Env class (built as cls(env_config)) or a creator callable
            env = self.target(env_context)
        if not isinstance(env, gym.Env):
            hint = (
                " (a vector env: set env_runners(gym_env_vectorize_mode='vector_entry_point'))"
                if isinstance(env, gym.vector.VectorEnv)
                else ""
            )
            raise TypeError(
                f"env {self.description} returned {type(env).__name__}, not a gymnasium.Env{hint}"
            )
        return env

    def make_vector(self, env_context: EnvContext, num_envs: int) -> Any:
        """The env as one vector env of `num_envs` copies
        (`gym_env_vectorize_mode="vector_entry_point"`), as RLlib 2.60 makes it: a gymnasium id
        through `gymnasium.make_vec(..., vectorization_mode="vector_entry_point")` with the
        env_config as keyword arguments; a registered name or callable called with the
        env_config plus `num_envs`. The caller checks that the result is a vector env."""
        if self.kind == "gym_id":
            self._register_gym_id()
            spec = gym.spec(self.target)
            if spec.vector_entry_point is None:
                raise ValueError(
                    f"env_runners(gym_env_vectorize_mode='vector_entry_point'): the gymnasium "
                    f"env {self.description} has no vector_entry_point in gymnasium's registry; "
                    "allowed for it: gym_env_vectorize_mode='sync' or 'async'"
                )
            return gym.make_vec(
                self.target,
                num_envs=num_envs,
                vectorization_mode="vector_entry_point",
                **dict(env_context),
            )
        vector_context = env_context.copy_with_overrides()
        vector_context["num_envs"] = num_envs
        return self.target(vector_context)


_GYM_REGISTER_FIELDS = (
    "id",
    "entry_point",
    "reward_threshold",
    "nondeterministic",
    "max_episode_steps",
    "order_enforce",
    "disable_env_checker",
    "kwargs",
    "additional_wrappers",
    "vector_entry_point",
)


def install_hint(module: str) -> str:
    """How to install the env family `module` belongs to ("" for another module)."""
    family = ENV_FAMILY_PACKAGES.get(module.partition(".")[0])
    if family is None:
        return ""
    extra, package = family
    return f"; install it with pip install -e '.[{extra}]' (or pip install {package})"


def _import_env_module(env: str, module: str) -> None:
    """Imports the module that registers `env`'s gymnasium id (ValueError, with how to
    install it, where it is missing)."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        raise ValueError(
            f"environment(env={env!r}): gymnasium imports {module!r} to make this env, "
            f"and it is not installed ({error}){install_hint(module)}"
        ) from None


def _check_entry_point_module(env: str) -> None:
    """ValueError, with how to install it, for a gymnasium id whose entry point needs a
    family's package that is missing (HalfCheetah-v5 without `mujoco`)."""
    entry_point = gym.spec(env).entry_point
    if not isinstance(entry_point, str):
        return
    for prefix, module in ENTRY_POINT_MODULES.items():
        if entry_point.startswith(prefix):
            _import_env_module(env, module)


def env_description(env: Any) -> str:
    if isinstance(env, str):
        return repr(env)
    return getattr(env, "__qualname__", None) or repr(env)


def check_env_spec(env: Any) -> None:
    """Raises ValueError when `env` cannot name an env: used by `environment()` and `validate()`."""
    if env is None:
        raise ValueError(
            "environment(env=None): no env is set; give a gymnasium id (for "
            "example 'CartPole-v1'), a name given to register_env, a gymnasium.Env "
            "subclass, or a callable (env_config) -> env"
        )
    if isinstance(env, str):
        if env in _REGISTRY:
            return
        if env in gym.registry:
            _check_entry_point_module(env)
            return
        for prefix, family in ID_PREFIX_MODULES.items():
            if env.startswith(prefix):  # (its family's module registers it)
                _import_env_module(env, family)
                if env in gym.registry:
                    return
        module, colon, env_id = env.partition(":")
        if colon and module and env_id:  # gymnasium's "module:EnvId": make() imports module
            _import_env_module(env, module)
            if env_id in gym.registry:
                return
        known = list(_REGISTRY) + list(gym.registry)
        close = difflib.get_close_matches(env, known, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"environment(env={env!r}): no env of that name, neither registered "
            f"with register_env nor a gymnasium id{hint}"
        )
    if isinstance(env, type):
        if not issubclass(env, (gym.Env, gym.vector.VectorEnv)):
            raise ValueError(
                f"environment(env={env.__qualname__}): a class must subclass "
                "gymnasium.Env (or gymnasium.vector.VectorEnv, with "
                "env_runners(gym_env_vectorize_mode='vector_entry_point'))"
            )
        return
    if not callable(env):
        raise ValueError(
            f"environment(env={env!r}): must be a gymnasium id, a registered name, "
            "a gymnasium.Env subclass, or a callable (env_config) -> env"
        )
    refused = signature_refusing(env, 1)
    if refused is not None:
        raise ValueError(
            f"environment(env={env!r}): a creator is called "
            f"with the env_config, one argument; this one's signature is {refused}"
        )


def multi_agent_env_needs_policies(subject: str) -> str:
    """The message for a MultiAgentEnv given to a single-agent config: `subject` names the
    env ("MultiAgentCartPole", or what a creator made)."""
    return (
        f"{subject} is a MultiAgentEnv: it trains with a multi-agent config, "
        "config.multi_agent(policies=..., policy_mapping_fn=...) (one policy for all agents: "
        "policies={'p0'}, policy_mapping_fn=lambda agent_id, episode, **kw: 'p0')"
    )


def _no_env(env_config: Any) -> Any:
    raise ValueError(
        "environment(env=None): no env is set, and this EnvRunner class makes one; give a "
        "gymnasium id (for example 'CartPole-v1'), a name given to register_env, a "
        "gymnasium.Env subclass, or a callable (env_config) -> env"
    )


def make_env_creator(env: Any) -> EnvCreator:
    """The creator of the env `env` names. None (a custom EnvRunner class that has no env, as
    RLlib's server for external simulators) gives a creator that raises when called."""
    if env is None:
        return EnvCreator("callable", _no_env, "None")
    check_env_spec(env)
    if isinstance(env, str):
        if env in _REGISTRY:
            return EnvCreator("callable", _REGISTRY[env], repr(env))
        # (gymnasium's "module:EnvId": `check_env_spec` imported the module, which registered
        # the id)
        gym_id = env if env in gym.registry else env.partition(":")[2]
        return EnvCreator("gym_id", gym_id, repr(env), gym_spec=gym.spec(gym_id))
    if isinstance(env, type):
        return EnvCreator("callable", env, env.__qualname__)
    return EnvCreator("callable", env, env_description(env))
