"""RLlib's curiosity learners (`ray.rllib.examples.learners.classes.intrinsic_curiosity_learners`):
PPO's torch learner training an intrinsic curiosity model (ICM) beside its policy and learning
from the extrinsic rewards plus the model's intrinsic ones. Needs the `torch` extra.

    sampled episodes
      -> IntrinsicCuriosityModelConnector (a learner piece, no gradient): each step's reward
         += intrinsic_reward_coeff * the ICM's surprise at (s_t, a_t, s_t+1)
      -> PPO's train batch (GAE on those rewards; with the next observations, for the ICM)
      -> each minibatch: PPO's step on the policy, then the ICM's step by its own loss, at its
         own rate (`algorithm_config_overrides_per_module`)

The config names the ICM as a learner-only module beside "default_policy" (RLlib's curiosity
example: `MultiRLModuleSpec` with `RLModuleSpec(module_class=IntrinsicCuriosityModel,
learner_only=True)` under `ICM_MODULE_ID`), and `learner_config_dict` gives
`intrinsic_reward_coeff` and `forward_loss_weight`. RLlib's learner inserts two pieces into its
batch pipeline (the next observations, then the intrinsic rewards on the torch batch); the
learners here build their batch themselves, so the intrinsic rewards go into the episodes
before it, and the next observations come with any learner-only module
(`trainer.torch_rl.self_supervised`).
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch

from trainer.algorithms.dqn.torch_learner import DQNTorchLearner
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner
from trainer.compat.rllib_utils import Columns
from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2
from trainer.core.obs_tree import float32_leaves, is_nested, tree_concat, tree_rows
from trainer.core.spaces import batch as batch_rows
from trainer.torch_rl.learner import TorchLearner
from trainer.torch_rl.rl_module import to_tensor

#: RLlib's id of the curiosity model in the learner's modules.
ICM_MODULE_ID = "_intrinsic_curiosity_model"

#: The `learner_config_dict` keys the curiosity learners read.
_REQUIRED_KEYS = ("intrinsic_reward_coeff", "forward_loss_weight")


class PPOTorchLearnerWithCuriosity(PPOTorchLearner):
    """PPO's torch learner with the curiosity model's intrinsic rewards (module docstring)."""

    def build(self) -> None:
        super().build()
        add_intrinsic_curiosity_connectors(self)


class DQNTorchLearnerWithCuriosity(DQNTorchLearner):
    """DQN's torch learner with the curiosity model's intrinsic rewards, as RLlib's names it.
    DQN does not train learner-only modules here (RLlib 2.60 keeps its DQN curiosity example
    out of its tests too), so a config naming this class with the curiosity model is refused
    when it is built, naming the algorithm that trains them (PPO)."""

    def build(self) -> None:
        super().build()
        add_intrinsic_curiosity_connectors(self)


def add_intrinsic_curiosity_connectors(learner: TorchLearner) -> None:
    """Adds the intrinsic-reward piece to `learner`'s learner pipeline, after the config's
    own pieces. Raises ValueError unless the curiosity model is the learner's one learner-only
    module, and KeyError (RLlib's) unless `learner_config_dict` has `forward_loss_weight` and
    `intrinsic_reward_coeff`."""
    learner_only = sorted(map(str, learner.learner_only_learners))
    if learner_only != [ICM_MODULE_ID]:
        raise ValueError(
            f"{type(learner).__name__}: the learner-only modules are {learner_only}; the "
            f"curiosity learner needs exactly the curiosity model under {ICM_MODULE_ID!r}: "
            "rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={'default_policy': "
            f"RLModuleSpec(), {ICM_MODULE_ID!r}: RLModuleSpec(module_class="
            "IntrinsicCuriosityModel, learner_only=True)}))"
        )
    settings = cast(Any, learner.config).learner_config_dict
    missing = [key for key in _REQUIRED_KEYS if key not in settings]
    if missing:
        raise KeyError(
            f"{type(learner).__name__}: learner_config_dict has no {missing}: the curiosity "
            "learner needs both `forward_loss_weight` and `intrinsic_reward_coeff`; add them "
            "with config.training(learner_config_dict={'forward_loss_weight': ..., "
            "'intrinsic_reward_coeff': ...})"
        )
    piece = IntrinsicCuriosityModelConnector(
        intrinsic_reward_coeff=settings["intrinsic_reward_coeff"]
    )
    if learner._learner_connector is None:
        learner._learner_connector = ConnectorPipelineV2(connectors=[piece])
    else:
        learner._learner_connector.append(piece)


class IntrinsicCuriosityModelConnector(ConnectorV2):
    """A learner piece adding the curiosity model's intrinsic rewards to the episodes' rewards:
    reward_t += intrinsic_reward_coeff * surprise(s_t, a_t, s_t+1), computed without gradients
    by `rl_module[ICM_MODULE_ID]` on all the episodes' steps at once. The learner's modules
    must hold the curiosity model under `ICM_MODULE_ID`."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        intrinsic_reward_coeff: float,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.intrinsic_reward_coeff = float(intrinsic_reward_coeff)

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        icm = rl_module[ICM_MODULE_ID]
        steps = [ep for ep in self.single_agent_episode_iterator(episodes) if len(ep) > 0]
        if not steps:
            return batch
        device = next(icm.parameters()).device
        # Each episode's observations, a batched tree for Dict / Tuple spaces (as the train
        # batch holds them: RLlib's ICM piece reads them from its tree-mapped batch).
        observations = [_float32_observations(ep.get_observations()) for ep in steps]
        inputs = {
            Columns.OBS: tree_concat([tree_rows(obs, slice(None, -1)) for obs in observations]),
            Columns.NEXT_OBS: tree_concat([tree_rows(obs, slice(1, None)) for obs in observations]),
            Columns.ACTIONS: np.concatenate([np.asarray(ep.get_actions()) for ep in steps]),
        }
        with torch.no_grad():
            out = icm.forward_train(to_tensor(inputs, device))
        surprise = out[Columns.INTRINSIC_REWARDS].cpu().numpy()
        start = 0
        for episode in steps:
            end = start + len(episode)
            rewards = np.asarray(episode.get_rewards(), dtype=np.float32)
            episode.set_rewards(
                new_data=rewards + self.intrinsic_reward_coeff * surprise[start:end]
            )
            start = end
        return batch


def _float32_observations(observations: Any) -> Any:
    """An episode's observations as one batch: a float32 array, or for Dict / Tuple spaces a
    tree of batched leaves (float64 leaves as float32, others kept), as the train batch's."""
    if isinstance(observations, list) and observations and is_nested(observations[0]):
        observations = batch_rows(observations)
    if is_nested(observations):
        return float32_leaves(observations)
    return np.asarray(observations, dtype=np.float32)
