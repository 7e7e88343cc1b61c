"""RLlib's `ray.rllib.policy.sample_batch` as the new API stack uses it: `SampleBatch`'s column
names (`SampleBatch.OBS`, `SampleBatch.ACTIONS`, ... the same strings as `Columns`), which
new-stack code uses as batch keys, and `DEFAULT_POLICY_ID`. A `SampleBatch` itself (the old API
stack's batch) cannot be made: constructing one raises `RLlibNotAvailable` naming the old API
stack; the new stack's batches are plain dicts of these keys.
"""

from __future__ import annotations

from typing import Any

from trainer.capabilities import OLD_API_STACK
from trainer.compat.rllib_utils import Columns
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.errors import RLlibNotAvailable

__all__ = ["DEFAULT_POLICY_ID", "SampleBatch"]

#: RLlib's old name of the default module's id ("default_policy").
DEFAULT_POLICY_ID = DEFAULT_MODULE_ID

#: Where a `SampleBatch` would be used: what the new stack has instead.
_INSTEAD = "a dict keyed by these column names (Columns), or the episodes (SingleAgentEpisode)"


class SampleBatch(dict):
    """RLlib's old-stack batch class, for its column names only (see the module docstring)."""

    OBS = Columns.OBS
    ACTIONS = Columns.ACTIONS
    REWARDS = Columns.REWARDS
    TERMINATEDS = Columns.TERMINATEDS
    TRUNCATEDS = Columns.TRUNCATEDS
    INFOS = Columns.INFOS
    SEQ_LENS = Columns.SEQ_LENS
    T = Columns.T
    ACTION_DIST_INPUTS = Columns.ACTION_DIST_INPUTS
    ACTION_PROB = Columns.ACTION_PROB
    ACTION_LOGP = Columns.ACTION_LOGP
    VF_PREDS = Columns.VF_PREDS
    VALUES_BOOTSTRAPPED = Columns.VALUES_BOOTSTRAPPED
    EPS_ID = Columns.EPS_ID
    NEXT_OBS = Columns.NEXT_OBS

    ACTION_DIST = "action_dist"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    ENV_ID = "env_id"
    AGENT_INDEX = "agent_index"
    UNROLL_ID = "unroll_id"
    OBS_EMBEDS = "obs_embeds"
    RETURNS_TO_GO = "returns_to_go"
    ATTENTION_MASKS = "attention_masks"
    DONES = "dones"
    CUR_OBS = "obs"

    def __new__(cls, *args: Any, **kwargs: Any) -> SampleBatch:
        raise RLlibNotAvailable(
            "ray.rllib.policy.sample_batch.SampleBatch",
            OLD_API_STACK,
            _INSTEAD,
            detail="its column names (SampleBatch.OBS, ...) are here, a batch object is not",
        )
