"""RLlib's creators of DeepMind Control Suite envs (`acrobot_swingup`, `walker_walk`, ...), with
RLlib's arguments. They need the `dm_control` package and RLlib's `DMCEnv` wrapper: calling one
raises an error naming what is missing (`ModuleNotFoundError` without `dm_control`,
`UnsupportedCall`, a `NotImplementedError`, for the wrapper, which this project does not provide)."""

from __future__ import annotations

from typing import Any

from trainer.capabilities import THIRD_PARTY_ENVS
from trainer.errors import UnsupportedCall


def _dmc_env(domain: str, task: str, **kwargs: Any) -> Any:
    try:
        import dm_control  # noqa: F401
    except ImportError as error:
        raise ModuleNotFoundError(
            f"dm_control_suite {domain}_{task}: needs the `dm_control` package "
            "(pip install dm_control), which is not installed",
            name="dm_control",
        ) from error
    raise UnsupportedCall(
        f"dm_control_suite {domain}_{task}: RLlib's DMCEnv wrapper (ray.rllib.env.wrappers."
        "dm_control_wrapper) is not part of this project; wrap the dm_control env as a "
        "gymnasium.Env and pass that to config.environment()",
        THIRD_PARTY_ENVS,
    )


def acrobot_swingup(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "acrobot",
        "swingup",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def walker_walk(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "walker",
        "walk",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def hopper_hop(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "hopper",
        "hop",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def hopper_stand(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "hopper",
        "stand",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def cheetah_run(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "cheetah",
        "run",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def walker_run(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "walker",
        "run",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def pendulum_swingup(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "pendulum",
        "swingup",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def cartpole_swingup(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "cartpole",
        "swingup",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )


def humanoid_walk(
    from_pixels: bool = True,
    height: int = 64,
    width: int = 64,
    frame_skip: int = 2,
    channels_first: bool = True,
) -> Any:
    return _dmc_env(
        "humanoid",
        "walk",
        from_pixels=from_pixels,
        height=height,
        width=width,
        frame_skip=frame_skip,
        channels_first=channels_first,
    )
