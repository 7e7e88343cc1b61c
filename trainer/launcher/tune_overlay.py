"""Names the RLlib launcher serves for Ray Tune's `ray.tune` and `ray.tune.registry` (with real
Ray and Ray Tune) before `trainer.tune`'s: where RLlib's behaviour needs more than the front.

- `get_trainable_cls(name)`: RLlib's scripts call `get_trainable_cls(args.algo)
  .get_default_config()`; in RLlib the registered trainable of an algorithm's name is the
  Algorithm class itself (RLlib's Algorithm is a Tune Trainable). Here Tune's registry holds
  the Tune Trainable that runs the algorithm (`trainer.tune.as_trainable`), so this returns
  the Algorithm class it runs (which `Tuner` takes as well); any other trainable as Tune has it.
  RLlib's other algorithms ("APPO", "SAC", ...) are refused with `UnsupportedValue` (a
  `NotSupported`), as under Ray's stand-in.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms import OTHER_RLLIB_ALGORITHM_NAMES
from trainer.algorithms import get_trainable_cls as get_algorithm_cls

__all__ = ["get_trainable_cls"]


def get_trainable_cls(name: str) -> Any:
    """The Algorithm class registered under `name` ("PPO", "DQN", or a registered Algorithm
    subclass), else Tune's trainable of that name."""
    from trainer import tune

    try:
        trainable = tune.get_trainable_cls(name)
    except Exception:
        if name in OTHER_RLLIB_ALGORITHM_NAMES:  # RLlib's, unless a script registered one
            get_algorithm_cls(name)  # raises UnsupportedValue naming the capability
        raise
    return getattr(trainable, "algorithm_class", trainable)
