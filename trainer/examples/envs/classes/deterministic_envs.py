"""RLlib's creators of seeded CartPole-v1 and Pendulum-v1 envs (for reproducibility tests)."""

from __future__ import annotations

import gymnasium as gym


def create_cartpole_deterministic(config: dict) -> gym.Env:
    """CartPole-v1, reset once with `config["seed"]` (default 0)."""
    env = gym.make("CartPole-v1")
    env.reset(seed=config.get("seed", 0))
    return env


def create_pendulum_deterministic(config: dict) -> gym.Env:
    """Pendulum-v1, reset once with `config["seed"]` (default 0)."""
    env = gym.make("Pendulum-v1")
    env.reset(seed=config.get("seed", 0))
    return env
