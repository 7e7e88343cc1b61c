"""The algorithms: `trainer.algorithms.ppo` (PPO, PPOConfig) and `trainer.algorithms.dqn`
(DQN, DQNConfig)."""

from __future__ import annotations

from typing import Any

from trainer.capabilities import OTHER_ALGORITHMS
from trainer.errors import UnsupportedValue

#: The algorithms' names, as RLlib registers them (`get_trainable_cls`).
ALGORITHM_NAMES = ("PPO", "DQN")
#: The other algorithms RLlib 2.60 registers (`ray.rllib.algorithms.registry`): asked for by
#: name, they are refused with `UnsupportedValue` (a typo stays a plain `ValueError`).
OTHER_RLLIB_ALGORITHM_NAMES = (
    "APPO",
    "BC",
    "CQL",
    "DreamerV3",
    "IMPALA",
    "Impala",
    "IQL",
    "MARWIL",
    "SAC",
)


def get_trainable_cls(name: str) -> Any:
    """The Algorithm class registered under `name` ("PPO" or "DQN"), as Tune's
    `get_trainable_cls` returns it (RLlib's example scripts call
    `get_trainable_cls(args.algo).get_default_config()`)."""
    from trainer.algorithms.dqn import DQN
    from trainer.algorithms.ppo import PPO

    algorithms = dict(zip(ALGORITHM_NAMES, (PPO, DQN), strict=True))
    if name in OTHER_RLLIB_ALGORITHM_NAMES:
        raise UnsupportedValue(
            f"get_trainable_cls({name!r}): RLlib's {name} is not available in localrl, which "
            f"has no {OTHER_ALGORITHMS}; the algorithms here are {sorted(algorithms)}",
            OTHER_ALGORITHMS,
        )
    if name not in algorithms:
        raise ValueError(
            f"get_trainable_cls({name!r}): the algorithms here are {sorted(algorithms)}"
        )
    return algorithms[name]
