"""RLlib's `ray.rllib.examples.rl_modules.classes.random_rlm`: modules that act at random.

As RLlib's, written with numpy only. Two deliberate differences: the batch size is read from
the first leaf of the observations with this project's structure helper (RLlib uses dm_tree,
which is not a dependency here), and `StatefulRandomRLModule` returns its dummy state under
`Columns.STATE_OUT` from its forward passes, as its docstring says (RLlib's routes it through a
`_random_forward` method that nothing calls, so RLlib's returns no state).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.compat.rllib_utils import Columns, override
from trainer.core.rl_module import RLModule
from trainer.core.spaces import batch as batch_func
from trainer.core.spaces import first_leaf


class RandomRLModule(RLModule):
    """Samples its action space once per observation of the batch; not trainable."""

    @override(RLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs_batch_size = len(first_leaf(batch[Columns.OBS]))
        actions = batch_func([self.action_space.sample() for _ in range(obs_batch_size)])
        return {Columns.ACTIONS: actions}

    @override(RLModule)
    def _forward_train(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # A RandomRLModule is never trained: leave its module id out of
        # `config.multi_agent(policies_to_train=[...])`.
        raise NotImplementedError("Random RLModule: Should not be trained!")

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """RLlib's stand-in for TorchRLModule.compile: nothing to compile."""


class StatefulRandomRLModule(RandomRLModule):
    """A RandomRLModule with a (dummy) recurrent state: `get_initial_state()` is
    `{"state": zeros(1, 1)}` and the forward passes return a random state per batch row under
    `Columns.STATE_OUT`."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._internal_state_space = gym.spaces.Box(-1.0, 1.0, (1,))

    @override(RLModule)
    def get_initial_state(self) -> dict[str, np.ndarray]:
        return {"state": np.zeros_like([self._internal_state_space.sample()])}

    @override(RLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        output = super()._forward(batch, **kwargs)
        output[Columns.STATE_OUT] = {
            "state": batch_func(
                [self._internal_state_space.sample() for _ in range(len(output[Columns.ACTIONS]))]
            ),
        }
        return output
