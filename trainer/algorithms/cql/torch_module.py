"""RLlib 2.60's `DefaultCQLTorchRLModule`: SAC's default torch module whose training pass also
gives the conservative term's Q-values of repeated states (`num_actions` per state, RLlib's
model-config key from `CQLConfig.num_actions`):

    q_rand_repeat            Q(s, a_rand), a_rand uniform between the action space's bounds
    q_curr_repeat            Q(s, a~),  a~ ~ pi(.|s),   with logps_curr_repeat = log pi(a~|s)
    q_next_repeat            Q(s', a~'), a~' ~ pi(.|s'), with logps_next_repeat
    q_twin_*_repeat          the same from the twin critic (twin_q)

each of shape (B, num_actions, 1); the policy's parameters are frozen in these passes (only
the critics learn from the conservative term).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import torch

from trainer.algorithms.sac.numpy_inference import NumpySACInference
from trainer.algorithms.sac.torch_module import (
    QF_PREDS,
    QF_TWIN_PREDS,
    SAC_MODEL_KEYS,
    DefaultSACTorchRLModule,
)
from trainer.capabilities import ACTION_SPACES
from trainer.compat.rllib_utils import Columns
from trainer.errors import UnsupportedValue
from trainer.torch_rl.draws import uniform

#: CQL's model-config keys (`CQLConfig._model_config_auto_includes`) and their defaults.
CQL_MODEL_KEYS: dict[str, Any] = {**SAC_MODEL_KEYS, "num_actions": 10}


class DefaultCQLTorchRLModule(DefaultSACTorchRLModule):
    """See the module docstring."""

    numpy_forward_class = NumpySACInference
    own_model_keys: ClassVar[dict[str, Any]] = CQL_MODEL_KEYS

    def setup(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Box):
            raise UnsupportedValue(
                f"{type(self).__name__}: action_space={self.action_space}: CQL learns Box "
                "actions (its conservative term draws random actions between the space's "
                "bounds, as RLlib's CQL)",
                ACTION_SPACES,
            )
        super().setup()

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        output = super()._forward_train(batch, **kwargs)
        policy_params = [*self.pi_encoder.parameters(), *self.pi.parameters()]
        for param in policy_params:
            param.requires_grad_(False)
        try:
            qf_preds = output[QF_PREDS]
            space: Any = self.action_space
            low = torch.as_tensor(space.low, dtype=qf_preds.dtype, device=qf_preds.device)
            high = torch.as_tensor(space.high, dtype=qf_preds.dtype, device=qf_preds.device)
            rows = len(qf_preds) * self.num_actions
            random_actions = low + (high - low) * uniform(
                (rows, low.shape[0]), qf_preds.dtype, qf_preds.device
            )
            for name, obs, actions in (
                ("rand", batch[Columns.OBS], random_actions),
                ("curr", batch[Columns.OBS], None),
                ("next", batch[Columns.NEXT_OBS], None),
            ):
                repeated = self._repeat_actions(obs, actions)
                output[f"actions_{name}_repeat"] = repeated[Columns.ACTIONS]
                if Columns.ACTION_LOGP in repeated:
                    output[f"logps_{name}_repeat"] = repeated[Columns.ACTION_LOGP]
                output[f"q_{name}_repeat"] = repeated[QF_PREDS]
                if self.twin_q:
                    output[f"q_twin_{name}_repeat"] = repeated[QF_TWIN_PREDS]
        finally:
            for param in policy_params:
                param.requires_grad_(True)
        return output

    @property
    def num_actions(self) -> int:
        """Actions drawn per state for the conservative term (the model config's)."""
        return int(self.own_model_settings["num_actions"])

    def _repeat_actions(self, obs: Any, actions: torch.Tensor | None = None) -> dict[str, Any]:
        """RLlib's helper: each state `num_actions` times (in place, as repeat_interleave),
        with the given actions or the policy's draws (and their log-likelihoods), and the
        critics' Q-values, shaped (B, num_actions, 1)."""
        n = self.num_actions
        obs_repeat = torch.repeat_interleave(self._obs(obs), n, dim=0)
        batch_size = len(obs_repeat) // n
        output: dict[str, Any] = {}
        if actions is None:
            dist = self.get_train_action_dist_cls().from_logits(
                self.pi(self.pi_encoder(obs_repeat))
            )
            actions, logp = dist.rsample_and_logp()
            output[Columns.ACTION_LOGP] = logp.view(batch_size, n, 1)
        output[Columns.ACTIONS] = actions
        repeat_batch = {Columns.OBS: obs_repeat, Columns.ACTIONS: actions}
        output[QF_PREDS] = self._qf_forward_train_helper(
            repeat_batch, self.qf_encoder, self.qf
        ).view(batch_size, n, 1)
        if self.twin_q:
            output[QF_TWIN_PREDS] = self._qf_forward_train_helper(
                repeat_batch, self.qf_twin_encoder, self.qf_twin
            ).view(batch_size, n, 1)
        return output


__all__ = ["DefaultCQLTorchRLModule"]
