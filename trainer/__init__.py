"""localrl's trainer: RLlib's Python API on one machine.

from trainer import PPOConfig
algo = PPOConfig().environment("CartPole-v1").build()
print(algo.train()["env_runners"]["episode_return_mean"])
"""

import os as _os
from typing import Any as _Any

from trainer.algorithms import registry as _registry
from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.registry import get_trainable_cls
from trainer.compat import moved_modules as _moved_modules
from trainer.core.exploration import EpsilonGreedy, Exploration, SoftQ, StochasticSampling
from trainer.core.models import DefaultModelConfig
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.policy_spec import PolicySpec
from trainer.core.rl_module import RLModule, RLModuleSpec
from trainer.env.curriculum import TaskSettableEnv
from trainer.env.envs import EnvContext, register_env
from trainer.env.episode import SingleAgentEpisode
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.env.registered_envs import register_project_envs as _register_project_envs
from trainer.errors import (
    EnvRunnerCrashed,
    EnvRunnerError,
    EnvRunnerFailure,
    EnvRunnerTimeout,
    NoHealthyEnvRunners,
    SampleRequestError,
    StepFailedRecreateEnvError,
)
from trainer.metrics import MetricsLogger
from trainer.named_objects import (
    NamedObjectError,
    create_named_object,
    get_named_object,
    shutdown_named_objects,
)
from trainer.runners.env_runner import EnvRunner, SingleAgentEnvRunner
from trainer.runners.env_runner_group import EnvRunnerGroup

__version__ = "0.1.0"

__all__ = [
    *_registry.EXPORTED_NAMES,  # each registered algorithm and its config (`__getattr__`)
    "DefaultModelConfig",
    "EpsilonGreedy",
    "Exploration",
    "Algorithm",
    "AlgorithmConfig",
    "ConfigError",
    "EnvContext",
    "EnvRunner",
    "EnvRunnerCrashed",
    "EnvRunnerError",
    "EnvRunnerFailure",
    "EnvRunnerGroup",
    "EnvRunnerTimeout",
    "NoHealthyEnvRunners",
    "SampleRequestError",
    "StepFailedRecreateEnvError",
    "MetricsLogger",
    "MultiAgentEnv",
    "MultiAgentEpisode",
    "NamedObjectError",
    "NotProvided",
    "MultiRLModule",
    "MultiRLModuleSpec",
    "PolicySpec",
    "RLModule",
    "RLModuleSpec",
    "SingleAgentEnvRunner",
    "SingleAgentEpisode",
    "SoftQ",
    "StochasticSampling",
    "TaskSettableEnv",
    "create_named_object",
    "get_named_object",
    "get_trainable_cls",
    "register_env",
    "shutdown_named_objects",
]


def __getattr__(name: str) -> _Any:
    """`trainer.PPO`, `trainer.PPOConfig`, ...: a registered algorithm's classes, its package
    imported on first use (importing `trainer` imports no algorithm)."""
    exported = _registry.exported_class(name)
    if exported is None:
        raise AttributeError(f"module 'trainer' has no attribute {name!r}")
    return exported


_moved_modules.install()  # old import paths (trainer.env_runner, ...) keep working
_register_project_envs()  # gym.make("localrl/TinyCatch-v0") wherever trainer is imported
if _os.environ.get("LOCALRL_RLLIB_LAUNCHER"):  # a process started under `python -m trainer run`
    from trainer.launcher import install_from_environment as _install_rllib_launcher

    _install_rllib_launcher()
