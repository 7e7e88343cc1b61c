"""RLlib's RecSim envs (`LongTermSatisfactionRecSimEnv`, `InterestExplorationRecSimEnv`,
`InterestEvolutionRecSimEnv`, registered as "RecSim-v1"). They need Google's `recsim` package and
RLlib's RecSim wrapper: the module imports without them (RLlib's fails at import), and
constructing an env raises an error naming what is missing."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from trainer.capabilities import THIRD_PARTY_ENVS
from trainer.env.envs import register_env
from trainer.errors import UnsupportedCall


class _RecSimEnvUnavailable(gym.Env):
    """Stands for one of RLlib's RecSim envs; refused when constructed. A `gymnasium.Env`
    subclass, as RLlib's are, so `config.environment(cls)` is accepted and the run stops on
    this class's own message when the env is built."""

    recsim_env: str = ""

    def __init__(self, config: Any = None):
        try:
            import recsim  # noqa: F401
        except ImportError as error:
            raise ModuleNotFoundError(
                f"{self.recsim_env}: needs Google's `recsim` package (pip install recsim), "
                "which is not installed",
                name="recsim",
            ) from error
        raise UnsupportedCall(
            f"{self.recsim_env}: RLlib's RecSim wrapper (ray.rllib.env.wrappers.recsim."
            "make_recsim_env) is not part of this project; wrap the RecSim environment as a "
            "gymnasium.Env and pass that to config.environment()",
            THIRD_PARTY_ENVS,
        )


class LongTermSatisfactionRecSimEnv(_RecSimEnvUnavailable):
    """RecSim's long-term-satisfaction env (needs `recsim`)."""

    recsim_env = "LongTermSatisfactionRecSimEnv"


class InterestExplorationRecSimEnv(_RecSimEnvUnavailable):
    """RecSim's interest-exploration env (needs `recsim`)."""

    recsim_env = "InterestExplorationRecSimEnv"


class InterestEvolutionRecSimEnv(_RecSimEnvUnavailable):
    """RecSim's interest-evolution env (needs `recsim`)."""

    recsim_env = "InterestEvolutionRecSimEnv"


register_env("RecSim-v1", lambda env_ctx: InterestEvolutionRecSimEnv(env_ctx))
