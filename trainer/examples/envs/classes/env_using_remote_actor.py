"""`CartPoleWithRemoteParamServer`: a CartPole whose cart mass comes from a shared, named
parameter server (RLlib's example of an env using a named Ray actor; here a named object, see
`trainer.named_objects`)."""

from __future__ import annotations

import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.utils import seeding

from trainer.named_objects import get, get_actor, remote


@remote
class ParameterStorage:
    """The parameter server: draws a cart mass in [0.5, 2.0] from the generator it is given."""

    def get_params(self, rng: np.random.Generator) -> dict:
        return {"MASSCART": rng.uniform(low=0.5, high=2.0)}


class CartPoleWithRemoteParamServer(CartPoleEnv):
    """CartPole that asks the named parameter server (`env_config["param_server"]`, default
    "param-server"; create it first with
    `ParameterStorage.options(name="param-server").remote()`) for a new cart mass at each reset.
    """

    def __init__(self, env_config: dict):
        self.env_config = env_config
        super().__init__()
        self._handler = get_actor(env_config.get("param_server", "param-server"))
        self.rng_seed: int | None = None
        self.np_random, _ = seeding.np_random(self.rng_seed)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng_seed = int(seed)
            self.np_random, _ = seeding.np_random(seed)
            print(f"Seeding env (worker={getattr(self.env_config, 'worker_index', 0)}) with {seed}")
        params = get(self._handler.get_params.remote(self.np_random))
        # Move this env's generator on (the server drew from a copy of it).
        new_seed = int(self.np_random.integers(0, 1000000) if not self.rng_seed else self.rng_seed)
        self.np_random, _ = seeding.np_random(new_seed)
        print(
            f"Env worker-idx={getattr(self.env_config, 'worker_index', 0)} "
            f"mass={params['MASSCART']}"
        )
        self.masscart = params["MASSCART"]
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        return super().reset()
