"""RLlib's algorithm APIs of an RLModule (`ray.rllib.core.rl_module.apis`): the methods an
algorithm's learner asks of the module it trains, declared by inheriting the API class.

- `ValueFunctionAPI`: `compute_values(batch, embeddings=None)`, what PPO's learner bootstraps
  and trains the value function with;
- `QNetAPI`: `compute_q_values(batch)` (and `compute_advantage_distribution` for dueling/
  distributional heads), what DQN acts and learns with;
- `TargetNetworkAPI`: `make_target_networks()`, `get_target_network_pairs()`,
  `forward_target(batch)`, the target copies DQN's learner keeps and syncs;
- `InferenceOnlyAPI`: `get_non_inference_attributes()`, the parts an inference-only copy (the
  EnvRunners') leaves out;
- `SelfSupervisedLossAPI`: `compute_self_supervised_loss(...)`, a module that trains itself.

They hold no framework code: a numpy module and a torch module implement them alike.
"""

from __future__ import annotations

import abc
from typing import Any

#: The key of `forward_target`'s action-distribution inputs (RLlib's constant).
TARGET_NETWORK_ACTION_DIST_INPUTS = "target_network_action_dist_inputs"


class ValueFunctionAPI(abc.ABC):
    """A module with a value function (PPO's learner needs it)."""

    @abc.abstractmethod
    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        """The value of each observation in `batch` (shape `(B,)`; `(B, T)` for sequences).
        `embeddings`, when given, are the encoder's outputs already computed for `batch` (a
        module whose value head shares the encoder uses them instead of encoding again)."""


class QNetAPI(abc.ABC):
    """A module with Q-value heads (DQN's learner needs it)."""

    @abc.abstractmethod
    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The Q-values of `batch`'s observations under `"qf_preds"` (and, for distributional
        heads, their atoms, logits and probabilities)."""

    def compute_advantage_distribution(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The advantage stream's distribution of a dueling, distributional Q-network."""
        raise NotImplementedError(
            f"{type(self).__name__}.compute_advantage_distribution() is not implemented: a "
            "dueling, distributional Q-network defines it"
        )


class TargetNetworkAPI(abc.ABC):
    """A module with target networks that its learner syncs from the main ones."""

    @abc.abstractmethod
    def make_target_networks(self) -> None:
        """Creates the target networks (copies of the main ones), called by the learner."""

    @abc.abstractmethod
    def get_target_network_pairs(self) -> list[tuple[Any, Any]]:
        """`(main network, its target network)` pairs, for the learner's syncs."""

    @abc.abstractmethod
    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The forward pass through the target networks."""


class InferenceOnlyAPI(abc.ABC):
    """A module whose inference-only copy (on the EnvRunners) leaves parts out."""

    @abc.abstractmethod
    def get_non_inference_attributes(self) -> list[str]:
        """Attribute names (dotted paths allowed: `"encoder.critic_encoder"`) of the parts an
        inference-only copy does not hold; their weights are not sent to the EnvRunners."""


class SelfSupervisedLossAPI(abc.ABC):
    """A module that computes its own loss (RLlib's curiosity modules, for example)."""

    @abc.abstractmethod
    def compute_self_supervised_loss(
        self,
        *,
        learner: Any,
        module_id: Any,
        config: Any,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> Any:
        """This module's loss on `batch`, given the forward pass's outputs `fwd_out`."""
