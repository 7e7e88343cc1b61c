"""RLlib's creators of D4RL's offline-RL MuJoCo envs (`halfcheetah_random`, ...). They need the
`d4rl` package (and MuJoCo); without it, calling one raises `ModuleNotFoundError` naming it."""

from __future__ import annotations

import gymnasium as gym

D4RL_MISSING = (
    "needs the `d4rl` package (pip install d4rl, with MuJoCo), which registers "
    "the '{name}' env; it is not installed"
)


def _make(name: str) -> gym.Env:
    try:
        import d4rl  # noqa: F401  (registers D4RL's envs on import)
    except ImportError as error:
        raise ModuleNotFoundError(
            f"d4rl_env {name!r}: " + D4RL_MISSING.format(name=name), name="d4rl"
        ) from error
    return gym.make(name)


def halfcheetah_random() -> gym.Env:
    return _make("halfcheetah-random-v0")


def halfcheetah_medium() -> gym.Env:
    return _make("halfcheetah-medium-v0")


def halfcheetah_expert() -> gym.Env:
    return _make("halfcheetah-expert-v0")


def halfcheetah_medium_replay() -> gym.Env:
    return _make("halfcheetah-medium-replay-v0")


def hopper_random() -> gym.Env:
    return _make("hopper-random-v0")


def hopper_medium() -> gym.Env:
    return _make("hopper-medium-v0")


def hopper_expert() -> gym.Env:
    return _make("hopper-expert-v0")


def hopper_medium_replay() -> gym.Env:
    return _make("hopper-medium-replay-v0")
