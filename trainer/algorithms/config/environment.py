"""The `environment()` section: the env, its config and the spaces the networks are built for.
A config pickled with an env named by `register_env` carries that env's creator."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from trainer.algorithms.config.base import (
    ConfigBase,
    Flag,
    NotProvided,
    deep_updated,
    mergeable,
    search_options,
)
from trainer.algorithms.settings import Setting, settings_of
from trainer.env.envs import (
    check_env_spec,
    multi_agent_env_needs_policies,
    register_env_if_missing,
    registered_env_creator,
)
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import ConfigError
from trainer.util.checks import callable_taking, is_bool, is_dict

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The key under which a pickled config carries its `register_env` creator (`__getstate__`).
_REGISTERED_ENV_CREATOR = "_registered_env_creator"


def _is_space_or_none(v: Any) -> str | None:
    return None if v is None or isinstance(v, gym.Space) else "None or a gymnasium.spaces.Space"


#: The settings of `environment()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
ENVIRONMENT_SETTINGS: dict[str, Setting] = settings_of(
    "environment",
    {
        "env": (
            None,
            lambda v: None,
            "a gymnasium id, a register_env name, a gymnasium.Env subclass (built as "
            "cls(env_config)) or a callable (env_config) -> env",
        ),
        "env_config": (
            {},
            is_dict,
            "passed to the env's creator as an EnvContext (the "
            "dict, plus worker_index, vector_index, ...)",
        ),
        "env_task_fn": (
            None,
            callable_taking(3, "(train_results, env, env_context)", none=True),
            "curriculum: (train_results, env, env_context) -> the next task, set "
            "on every training sub-env after each train()",
        ),
        "normalize_actions": (
            True,
            is_bool,
            "the policy acts in [-1, 1], scaled to a Box action space's bounds",
        ),
        "clip_actions": (
            False,
            is_bool,
            "actions are clipped to a Box action space's bounds",
        ),
        "observation_space": (
            None,
            _is_space_or_none,
            "the observation space the networks are built for, instead of the env's",
        ),
        "action_space": (
            None,
            _is_space_or_none,
            "the action space the networks are built for, instead of the env's",
        ),
    },
)


class EnvironmentSection(ConfigBase):
    """The env and its spaces (`environment()`)."""

    if TYPE_CHECKING:  # what this section reads of the others
        env_runner_cls: type | None
        _LEARNS_OFFLINE: bool
        evaluation_interval: int | None
        evaluation_config: dict[str, Any] | None

        @property
        def is_multi_agent(self) -> Flag: ...

    env: str | type[gym.Env] | Callable[..., gym.Env] | None
    env_config: dict[str, Any]
    env_task_fn: Callable[..., Any] | None
    normalize_actions: bool
    clip_actions: bool
    observation_space: gym.Space | None
    action_space: gym.Space | None

    # -- pickling ----------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The settings; an env named with `register_env` travels with its creator, so a config
        sent to another process (a Ray actor made with `ray.remote(SingleAgentEnvRunner)`, a
        pickled checkpoint) makes the same env there, as RLlib's registry does through Ray."""
        state = dict(self.__dict__)
        creator = registered_env_creator(self.env)
        if creator is not None:
            state[_REGISTERED_ENV_CREATOR] = creator
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        creator = state.pop(_REGISTERED_ENV_CREATOR, None)
        self.__dict__.update(state)
        if creator is not None and isinstance(self.env, str):  # only a name has a creator
            register_env_if_missing(self.env, creator)

    def environment(
        self,
        env: str | type[gym.Env] | Callable[..., gym.Env] | None = NotProvided,
        *,
        env_config: dict = NotProvided,
        env_task_fn: Callable | None = NotProvided,
        normalize_actions: bool = NotProvided,
        clip_actions: bool = NotProvided,
        observation_space: gym.Space | None = NotProvided,
        action_space: gym.Space | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """The env and its spaces."""
        self._reject_unknown(
            "environment",
            unknown,
            [
                "env",
                "env_config",
                "env_task_fn",
                "normalize_actions",
                "clip_actions",
                "observation_space",
                "action_space",
            ],
        )
        if env is not NotProvided and env is not None:  # None: no env (as RLlib's default)
            # A Tune search space (grid_search over envs, as RLlib's benchmark scripts give):
            # each option is checked; Tune gives each trial one.
            for option in search_options(env):
                try:
                    check_env_spec(option)
                except ValueError as error:
                    raise ConfigError(str(error), getattr(error, "capability", None)) from None
        if mergeable(env_config) and mergeable(self.env_config):
            # RLlib updates the env_config it has (deep), it does not replace it: code that
            # changes one key (a curriculum's map, in an EnvRunner's config) keeps the others.
            env_config = deep_updated(self.env_config, env_config)
        return self._set(
            "environment",
            {
                "env": env,
                "env_config": env_config,
                "env_task_fn": env_task_fn,
                "normalize_actions": normalize_actions,
                "clip_actions": clip_actions,
                "observation_space": observation_space,
                "action_space": action_space,
            },
        )

    def _validate_environment(self, name: str) -> None:
        """The env spec again (it may have been set without `environment()`), and a
        MultiAgentEnv class needs a multi-agent config. A custom `env_runner_cls` may have
        no env (RLlib's server for external simulators gets its episodes over TCP), and so may
        an offline algorithm (BC, MARWIL, CQL, IQL: it learns from recorded data, its networks
        built for `observation_space` / `action_space`), as in RLlib, unless it evaluates in
        an env (`evaluation_interval`)."""
        if self.env is None and self.env_runner_cls is not None:
            return
        if self.env is None and self._LEARNS_OFFLINE:
            self._validate_offline_without_env(name)
            return
        try:
            check_env_spec(self.env)
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
        if (
            isinstance(self.env, type)
            and issubclass(self.env, MultiAgentEnv)
            and not self.is_multi_agent
            and self.env_runner_cls is None
        ):
            # Before any EnvRunner starts (an env from a creator: when the runner makes it).
            raise ConfigError(f"{name}: {multi_agent_env_needs_policies(self.env.__qualname__)}")

    def _validate_offline_without_env(self, name: str) -> None:
        """An offline algorithm without an env trains from recorded data; only evaluating in an
        env (`evaluation_interval`, unless `evaluation_config` names an env) needs one. (RLlib
        fails there when it builds the evaluation EnvRunners: "`config.env` is not provided!")"""
        eval_env = (self.evaluation_config or {}).get("env")
        if self.evaluation_interval and eval_env is None:
            raise ConfigError(
                f"{name}.evaluation(evaluation_interval={self.evaluation_interval!r}): evaluation "
                "runs episodes in an env, and the config has no env (environment(env=None)); "
                "give one with environment(env) (or evaluation(evaluation_config={'env': ...})), "
                "or evaluate on recorded data with evaluation(offline_evaluation_interval=...)"
            )
