"""RLlib's action-masking PPO module (`ray.rllib.examples.rl_modules.classes.action_masking_rlm`):
the default PPO torch module over the `"observations"` of a Dict observation
`{"action_mask": Box(0, 1, (n,)), "observations": ...}`, whose action logits are masked so that
actions the env rules out (mask 0) are never sampled. Needs the `torch` extra.

As in RLlib, the networks are built for the `"observations"` sub-space only; the module's
`observation_space` is the whole Dict space after `setup()`. `compute_values`, which the learner
calls on the train batch before the updates (RLlib's GAE connector), moves the mask out of the
dict observation into an `"action_mask"` column and leaves the plain observations under
`Columns.OBS`: `_forward_train` reads the mask from that column.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.rl_module import RLModule
from trainer.torch_rl.torch_utils import FLOAT_MIN

_MASK_KEY = "action_mask"
_OBS_KEY = "observations"
_SPACE_LAYOUT = (
    "{'action_mask': Box(0.0, 1.0, shape=(action_space.n,)), 'observations': <observation space>}"
)


class ActionMaskingRLModule(RLModule):
    """The framework-free part (RLlib's): requires a Dict observation space and hands the
    module's networks its `"observations"` sub-space."""

    def __init__(
        self,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool = False,
        model_config: Any = None,
        catalog_class: type | None = None,
        **kwargs: Any,
    ):
        if not isinstance(observation_space, gym.spaces.Dict) or _OBS_KEY not in (
            observation_space.spaces
        ):
            raise ValueError(
                f"{type(self).__name__}: observation_space={observation_space}: this RLModule "
                f"requires a gymnasium Dict observation space of the form {_SPACE_LAYOUT}"
            )
        # The env's space (mask included) is the module's after setup(); the networks are
        # built for the original observations only.
        self.observation_space_with_mask = observation_space
        self._checked_observations = False
        super().__init__(
            observation_space=observation_space[_OBS_KEY],
            action_space=action_space,
            inference_only=inference_only,
            learner_only=learner_only,
            model_config=model_config,
            catalog_class=catalog_class,
            **kwargs,
        )


class ActionMaskingTorchRLModule(ActionMaskingRLModule, DefaultPPOTorchRLModule):
    """`DefaultPPOTorchRLModule` with masked action logits (see the module docstring)."""

    def setup(self) -> None:
        super().setup()
        self.observation_space = self.observation_space_with_mask

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        action_mask, batch = self._preprocess_batch(batch)
        outs = super()._forward_inference(batch, **kwargs)
        return self._mask_action_logits(outs, action_mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        action_mask, batch = self._preprocess_batch(batch)
        outs = super()._forward_exploration(batch, **kwargs)
        return self._mask_action_logits(outs, action_mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # The train batch's observations were split by compute_values (see the docstring).
        outs = super()._forward_train(batch, **kwargs)
        return self._mask_action_logits(outs, batch[_MASK_KEY])

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """The values of the batch's observations; a dict observation is split first, its mask
        kept in the batch's `"action_mask"` column (for `_forward_train`)."""
        if isinstance(batch[Columns.OBS], dict):
            action_mask, batch = self._preprocess_batch(batch)
            batch[_MASK_KEY] = action_mask
        return super().compute_values(batch, embeddings)

    def _preprocess_batch(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
        """The action mask, and `batch` with the original observations under `Columns.OBS`
        (the batch is changed in place, as RLlib's)."""
        self._check_batch(batch)
        action_mask = batch[Columns.OBS].pop(_MASK_KEY)
        batch[Columns.OBS] = batch[Columns.OBS].pop(_OBS_KEY)
        return action_mask, batch

    def _mask_action_logits(
        self, outs: dict[str, Any], action_mask: torch.Tensor
    ) -> dict[str, Any]:
        """Adds log(mask), clamped to `FLOAT_MIN`, to the action logits: 0 for allowed
        actions, the lowest float for ruled-out ones."""
        inf_mask = torch.clamp(torch.log(action_mask), min=FLOAT_MIN)
        outs[Columns.ACTION_DIST_INPUTS] = outs[Columns.ACTION_DIST_INPUTS] + inf_mask
        return outs

    def _check_batch(self, batch: dict[str, Any]) -> None:
        """Raises ValueError (once checked, never again) unless the batch's observations hold
        both the action mask and the observations."""
        if self._checked_observations:
            return
        observations = batch[Columns.OBS]
        for key, what in ((_MASK_KEY, "an action mask"), (_OBS_KEY, "the original observations")):
            if not isinstance(observations, dict) or key not in observations:
                found = sorted(observations) if isinstance(observations, dict) else "no dict"
                raise ValueError(
                    f"{type(self).__name__}: the batch's {Columns.OBS!r} has no {key!r} "
                    f"({found}): this RLModule needs observations with {what}, from a Dict "
                    f"observation space of the form {_SPACE_LAYOUT}"
                )
        self._checked_observations = True
