"""`GPURequiringEnv`: a `SimpleCorridor` that reports the GPUs its EnvRunner was given (RLlib's
example env for GPU placement of EnvRunners)."""

from __future__ import annotations

from trainer.examples.envs.classes.simple_corridor import SimpleCorridor


def gpu_ids_of_this_env_runner() -> list[int]:
    """The GPUs assigned to the calling EnvRunner (Ray's `ray.get_gpu_ids()`). EnvRunners here
    are CPU processes and are assigned none (`num_gpus_per_env_runner` has no effect), so this
    is always empty."""
    return []


class GPURequiringEnv(SimpleCorridor):
    """`SimpleCorridor` that prints the GPUs it can see at construction. As RLlib's, it works
    without one: RLlib's puts a tensor on the first GPU only when there is a GPU and torch, and
    an EnvRunner here has no GPU."""

    def __init__(self, config: dict | None = None):
        super().__init__(config)
        gpus_available = gpu_ids_of_this_env_runner()
        print(f"{type(self).__name__} can see GPUs={gpus_available}")
