"""A second import path for the EnvRunner, kept for user code that imports it from here
(`from trainer.env.env_runner import SingleAgentEnvRunner`). The class lives in
`trainer.runners.env_runner`, next to the rest of the runner code; the names here are the same
objects."""

from trainer.errors import StepFailedRecreateEnvError
from trainer.runners.env_runner import EnvRunner, SingleAgentEnvRunner

__all__ = ["EnvRunner", "SingleAgentEnvRunner", "StepFailedRecreateEnvError"]
