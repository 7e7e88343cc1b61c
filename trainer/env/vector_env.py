"""`FastSyncVectorEnv`: gymnasium's `SyncVectorEnv` with a leaner `step` for the common case.

An EnvRunner steps its sub-envs through this class. It is a `SyncVectorEnv` (callbacks, connectors
and `foreach_env` see the same object, `env.envs[i]` the same sub-envs), and its `step` returns
what gymnasium's would. For Box observations and Box/Discrete actions in NEXT_STEP autoreset mode
(the EnvRunner's), it skips gymnasium's generic helpers, which cost more than the sub-envs'
own steps for a few small envs: the space-dispatched `iterate` and `concatenate`, an `_add_info`
call per sub-env even when its info is empty, and a deepcopy of the observations (a plain copy
here: a Box batch is one array). Any other space or mode takes gymnasium's `step`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class FastSyncVectorEnv(gym.vector.SyncVectorEnv):
    def __init__(self, env_fns, **kwargs: Any):
        super().__init__(env_fns, **kwargs)
        self._fast = (self.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP
                      and isinstance(self.single_observation_space, gym.spaces.Box)
                      and isinstance(self.single_action_space,
                                     (gym.spaces.Box, gym.spaces.Discrete))
                      and isinstance(self._observations, np.ndarray))

    def step(self, actions):
        if not self._fast:
            return super().step(actions)
        infos: dict = {}
        env_obs, rewards = self._env_obs, self._rewards
        terminations, truncations = self._terminations, self._truncations
        autoreset = self._autoreset_envs.tolist()
        # Iterating the batch yields what gymnasium's `iterate` yields for Box / MultiDiscrete
        # batches: its rows (numpy arrays or scalars).
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if autoreset[i]:
                env_obs[i], env_info = env.reset()
                rewards[i] = 0.0
                terminations[i] = False
                truncations[i] = False
            else:
                (env_obs[i], rewards[i], terminations[i], truncations[i],
                 env_info) = env.step(action)
            if env_info:
                infos = self._add_info(infos, env_info, i)
        np.stack(env_obs, axis=0, out=self._observations)
        self._autoreset_envs = np.logical_or(terminations, truncations)
        return (self._observations.copy() if self.copy else self._observations,
                rewards.copy(), terminations.copy(), truncations.copy(), infos)
