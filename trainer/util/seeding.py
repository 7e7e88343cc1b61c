"""Every random stream of a run, derived from `config.seed` in one place (None: fresh entropy).

| stream | seed | draws |
|---|---|---|
| the driver (`Algorithm._rng`) | `seed` | `compute_single_action`'s sampling |
| the networks' initial weights | `seed` (a multi-agent or learner-only module: `module_seed`) | module construction |
| PPO's learner | `[seed, 7]` | minibatch shuffling |
| APPO's circular buffer | `[seed, 11]` | which train batch the learner takes next |
| an EnvRunner's actions | `[seed, worker_index]`, `[seed, worker_index, 1]` for evaluation | action sampling, exploration |
| an EnvRunner's envs | `seed + 1000 * worker_index` (+500 for evaluation), sub-env i gets +i | `env.reset(seed=)` |

Evaluation runners draw from streams of their own, so evaluating never shifts training's. The
numbers are kept as they were first chosen: changing one changes every seeded result.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import numpy as np

#: numpy SeedSequence entropy words that tell streams apart.
_PPO_LEARNER_WORD = 7
_CIRCULAR_BUFFER_WORD = 11
_EVALUATION_WORD = 1
#: Env seeds: runners 1000 apart, evaluation runners 500 above training ones.
_ENV_SEEDS_PER_RUNNER = 1000
_EVALUATION_ENV_OFFSET = 500


def ppo_learner_stream(seed: int | None) -> list[int] | None:
    return None if seed is None else [seed, _PPO_LEARNER_WORD]


def circular_buffer_stream(seed: int | None) -> list[int] | None:
    return None if seed is None else [seed, _CIRCULAR_BUFFER_WORD]


def runner_stream(seed: int | None, worker_index: int, evaluation: bool) -> list[int] | None:
    if seed is None:
        return None
    return [seed, worker_index] + ([_EVALUATION_WORD] if evaluation else [])


def runner_env_seed(seed: int | None, worker_index: int, evaluation: bool) -> int | None:
    if seed is None:
        return None
    return (
        seed + _ENV_SEEDS_PER_RUNNER * worker_index + (_EVALUATION_ENV_OFFSET if evaluation else 0)
    )


def module_seed(seed: int | None, module_id: Any) -> int | None:
    """The seed of one module's networks: the config's seed mixed with the module's id, so
    that modules differ and a module's weights do not depend on which others exist."""
    if seed is None:
        return None
    return (int(seed) * 1_000_003 + zlib.crc32(str(module_id).encode())) % (2**32)


def update_global_seed_if_necessary(framework: str | None = None, seed: int | None = None) -> None:
    """RLlib's `ray.rllib.utils.debug.deterministic.update_global_seed_if_necessary`: seeds
    Python's `random`, numpy's global generator and, for `framework="torch"`, torch's
    (`torch.manual_seed`); nothing without a seed. The runs here draw from their own streams
    (above), so this matters only to what a script draws itself."""
    if seed is None:
        return
    if framework in ("tf", "tf2"):
        raise ValueError(
            f"update_global_seed_if_necessary(framework={framework!r}): TensorFlow is not "
            "here; the frameworks are 'torch' and numpy (framework=None)"
        )
    random.seed(seed)
    np.random.seed(seed)
    if framework == "torch":
        import torch

        torch.manual_seed(seed)
