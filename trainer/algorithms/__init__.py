"""The algorithms: `trainer.algorithms.ppo` (PPO, PPOConfig) and `trainer.algorithms.dqn`
(DQN, DQNConfig)."""

from __future__ import annotations

from typing import Any

#: The algorithms' names, as RLlib registers them (`get_trainable_cls`).
ALGORITHM_NAMES = ("PPO", "DQN")


def get_trainable_cls(name: str) -> Any:
    """The Algorithm class registered under `name` ("PPO" or "DQN"), as Tune's
    `get_trainable_cls` returns it (RLlib's example scripts call
    `get_trainable_cls(args.algo).get_default_config()`)."""
    from trainer.algorithms.dqn import DQN
    from trainer.algorithms.ppo import PPO

    algorithms = dict(zip(ALGORITHM_NAMES, (PPO, DQN), strict=True))
    if name not in algorithms:
        raise ValueError(
            f"get_trainable_cls({name!r}): the algorithms here are {sorted(algorithms)}"
        )
    return algorithms[name]
