"""Every random stream of a run, derived from `config.seed` in one place (None: fresh entropy).

| stream | seed | draws |
|---|---|---|
| the driver (`Algorithm._rng`) | `seed` | `compute_single_action`'s sampling |
| the networks' initial weights | `seed` (a multi-agent or learner-only module: `module_seed`) | module construction |
| a part of an algorithm: PPO's learner, APPO's circular buffer | `[seed, word]` (`derived_stream`), the word its folder declares: 7, 11 | minibatch shuffling; which train batch the learner takes next |
| an EnvRunner's actions | `[seed, worker_index]`, `[seed, worker_index, 1]` for evaluation | action sampling, exploration |
| an EnvRunner's envs | `seed + 1000 * worker_index` (+500 for evaluation), sub-env i gets +i | `env.reset(seed=)` |

Evaluation runners draw from streams of their own, so evaluating never shifts training's. The
numbers are kept as they were first chosen: changing one changes every seeded result. An
algorithm's words are its folder's (next to the draws they seed), so this module names no
algorithm; a new word is one no other part uses.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import numpy as np

#: The numpy SeedSequence entropy word that tells an EnvRunner's evaluation stream apart.
_EVALUATION_WORD = 1
#: Env seeds: runners 1000 apart, evaluation runners 500 above training ones.
_ENV_SEEDS_PER_RUNNER = 1000
_EVALUATION_ENV_OFFSET = 500


def derived_stream(seed: int | None, word: int) -> list[int] | None:
    """The entropy of a stream of one part of a run, told apart from the others by `word`
    (a numpy SeedSequence entropy word the part declares): `[seed, word]`; None without a
    seed."""
    return None if seed is None else [seed, word]


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
