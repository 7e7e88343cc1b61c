"""RLlib's `CustomActionDistributionRLModule` example: a small torch policy over Discrete
actions whose action distribution is a categorical with a temperature (the logits divided by
`model_config["action_dist_temperature"]` before sampling). It sets `self.action_dist_cls` in
`setup()`, RLlib's way of giving a module its own distribution class; the EnvRunners sample
from that class in torch. Needs the `torch` extra."""

from __future__ import annotations

from typing import Any

import torch

from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.torch_rl.distributions import TorchCategorical
from trainer.torch_rl.rl_module import TorchRLModule


def _make_categorical_with_temperature(temperature: float) -> type[TorchCategorical]:
    """A TorchCategorical subclass whose logits are divided by `temperature` (> 0): below 1
    it sharpens toward the greedy action, above 1 it flattens toward uniform."""
    if not temperature > 0.0:
        raise ValueError(f"action_dist_temperature={temperature!r}: must be > 0")

    class TorchCategoricalWithTemp(TorchCategorical):
        def __init__(self, logits: Any = None, probs: Any = None, temperature: float = temperature):
            if logits is not None:
                logits = logits / temperature
            else:
                probs = torch.nn.functional.softmax(probs / temperature, dim=-1)
            super().__init__(logits, probs)

    return TorchCategoricalWithTemp


class CustomActionDistributionRLModule(TorchRLModule, ValueFunctionAPI):
    """An encoder (`hidden_dim` ReLU units), a policy head and a value head over Box
    observations and Discrete actions; the temperature categorical as its distribution."""

    def setup(self) -> None:
        input_dim = int(self.observation_space.shape[0])
        hidden_dim = int(self.model_config.get("hidden_dim", 256))
        self._encoder = torch.nn.Sequential(torch.nn.Linear(input_dim, hidden_dim), torch.nn.ReLU())
        self._policy_net = torch.nn.Linear(hidden_dim, int(self.action_space.n))
        self._vf = torch.nn.Linear(hidden_dim, 1)
        self.action_dist_cls = _make_categorical_with_temperature(
            float(self.model_config["action_dist_temperature"])
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        _, logits = self._embeddings_and_logits(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings, logits = self._embeddings_and_logits(batch)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: embeddings}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            embeddings = self._encoder(batch[Columns.OBS])
        return self._vf(embeddings).squeeze(-1)

    def _embeddings_and_logits(self, batch: dict[str, Any]) -> tuple[Any, Any]:
        embeddings = self._encoder(batch[Columns.OBS])
        return embeddings, self._policy_net(embeddings)
