"""localrl's trainer: RLlib's Python API on one machine.

    from trainer import PPOConfig
    algo = PPOConfig().environment("CartPole-v1").build()
    print(algo.train()["env_runners"]["episode_return_mean"])
"""

from trainer.algorithm import Algorithm
from trainer.algorithms import get_trainable_cls
from trainer.algorithms.dqn import DQN, DQNConfig
from trainer.algorithms.ppo import PPO, PPOConfig
from trainer.config import AlgorithmConfig, ConfigError, NotProvided
from trainer.curriculum import TaskSettableEnv
from trainer.env_runner import EnvRunner, SingleAgentEnvRunner
from trainer.env_runner_group import EnvRunnerGroup
from trainer.envs import EnvContext, register_env
from trainer.episode import SingleAgentEpisode
from trainer.errors import (
    EnvRunnerCrashed,
    EnvRunnerError,
    EnvRunnerFailure,
    EnvRunnerTimeout,
    NoHealthyEnvRunners,
    SampleRequestError,
    StepFailedRecreateEnvError,
)
from trainer.exploration import EpsilonGreedy, Exploration, SoftQ, StochasticSampling
from trainer.metrics import MetricsLogger
from trainer.models import DefaultModelConfig
from trainer.named_objects import (
    NamedObjectError,
    create_named_object,
    get_named_object,
    shutdown_named_objects,
)

__version__ = "0.1.0"

__all__ = [
    "DQN",
    "DQNConfig",
    "DefaultModelConfig",
    "EpsilonGreedy",
    "Exploration",
    "PPO",
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
    "NamedObjectError",
    "NotProvided",
    "PPOConfig",
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
