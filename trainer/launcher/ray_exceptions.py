"""`ray.exceptions` under the RLlib launcher: Ray's exception names for this project's errors
(`RayError` is the base of every error about other processes, `RayActorError` an EnvRunner
process that died, `GetTimeoutError` one that did not answer in time)."""

from trainer.errors import EnvRunnerCrashed, EnvRunnerTimeout, RemoteError
from trainer.named_objects.client import NamedObjectError

RayError = RemoteError
RayActorError = EnvRunnerCrashed
ActorDiedError = EnvRunnerCrashed
GetTimeoutError = EnvRunnerTimeout
#: A named object's method raised (the message carries the original traceback).
RayTaskError = NamedObjectError

__all__ = ["ActorDiedError", "GetTimeoutError", "RayActorError", "RayError", "RayTaskError"]
