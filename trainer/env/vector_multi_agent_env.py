"""`VectorMultiAgentEnv`: the type of a MultiAgentEnvRunner's `env` (RLlib's
`ray.rllib.env.vector.vector_multi_agent_env.VectorMultiAgentEnv`): `num_envs` MultiAgentEnvs
(`envs`), reset and stepped together with one dict per sub-env in and out.

Callbacks receive it as `env` in every episode event of a multi-agent runner, as RLlib's
receive its `SyncVectorMultiAgentEnv`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from trainer.capabilities import THIRD_PARTY_ENVS
from trainer.util.rllib_members import refuse


@refuse(
    "ray.rllib.env.vector.vector_multi_agent_env.VectorMultiAgentEnv",
    THIRD_PARTY_ENVS,
    "rendering a vectorized multi-agent env as one image; render each sub-env instead "
    "(the envs of `envs`)",
    "render",
)
class VectorMultiAgentEnv:
    """Base class of vectorized MultiAgentEnvs: `envs`, `num_envs`, `reset()` / `step()` over
    all sub-envs (lists with one entry per sub-env), `close()` once, `unwrapped` itself."""

    metadata: dict[str, Any] = {}
    render_mode: str | None = None
    closed: bool = False
    envs: list[Any] | None = None
    num_envs: int
    #: Each agent's observation / action space in one sub-env (the first's), and the same
    #: as a `gym.spaces.Dict`: what connector factories read (None until a subclass sets
    #: them).
    single_observation_spaces: dict[Any, gym.Space] | None = None
    single_action_spaces: dict[Any, gym.Space] | None = None
    single_observation_space: gym.spaces.Dict | None = None
    single_action_space: gym.spaces.Dict | None = None
    #: RLlib's old-stack names: None on a vector of MultiAgentEnvs (as in RLlib; a factory
    #: that reads `env.observation_space` gets None).
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[list[dict], list[dict]]:
        """Resets every sub-env (sub-env `i` seeded with `seed + i`): (observations, infos),
        one dict per sub-env."""
        raise NotImplementedError(f"{type(self).__name__} does not implement reset()")

    def step(
        self, actions: list[dict]
    ) -> tuple[list[dict], list[dict], list[dict], list[dict], list[dict]]:
        """Steps every sub-env with its action dict: (observations, rewards, terminateds,
        truncateds, infos), one dict per sub-env."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def close(self, **kwargs: Any) -> None:
        """Closes the sub-envs (once)."""
        if self.closed:
            return
        self.close_extras(**kwargs)
        self.closed = True

    def close_extras(self, **kwargs: Any) -> None:
        """What a subclass closes besides the flag (its sub-envs)."""

    @property
    def unwrapped(self) -> VectorMultiAgentEnv:
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_envs={self.num_envs})"
