"""The EnvRunner's import path of earlier releases: `EnvRunner` and RLlib's names for it live
in `trainer.runners.env_runner` (next to the rest of the runner code); this module names the
same classes, so `from trainer.env.env_runner import SingleAgentEnvRunner` keeps working."""

from trainer.errors import StepFailedRecreateEnvError
from trainer.runners.env_runner import EnvRunner, SingleAgentEnvRunner

__all__ = ["EnvRunner", "SingleAgentEnvRunner", "StepFailedRecreateEnvError"]
