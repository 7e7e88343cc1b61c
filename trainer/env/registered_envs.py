"""The gymnasium ids of the envs that ship with this project, registered when `trainer` is
imported (in every process that imports it: the user's, the launcher's, the EnvRunners').

Registration names the env's module as a string, so nothing is imported until `gym.make`.
"""

from __future__ import annotations

import gymnasium as gym

#: gymnasium id -> (entry point, default keyword arguments).
PROJECT_ENVS: dict[str, tuple[str, dict]] = {
    # ALE v5's defaults: 4 frames per step, sticky actions with probability 0.25.
    "localrl/TinyCatch-v0": (
        "trainer.examples.envs.classes.tiny_catch:TinyCatch",
        {"frameskip": 4, "repeat_action_probability": 0.25, "full_action_space": False},
    ),
}


def register_project_envs() -> None:
    """Registers each of `PROJECT_ENVS` with gymnasium, unless an env of that id is there."""
    for env_id, (entry_point, kwargs) in PROJECT_ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))
