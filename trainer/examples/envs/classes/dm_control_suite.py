"""RLlib's creators of DeepMind Control Suite envs (`acrobot_swingup`, `walker_walk`, ...), with
RLlib's arguments: each is a `DMCEnv` (`trainer.env.wrappers.dm_control_wrapper`; the `mujoco`
extra), from pixels by default."""

from __future__ import annotations

from typing import Any

from trainer.env.wrappers.dm_control_wrapper import DMCEnv


def _dmc_env(domain: str, task: str, **kwargs: Any) -> Any:
    return DMCEnv(domain, task, **kwargs)


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
