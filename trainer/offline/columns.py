"""RLlib's column names (`ray.rllib.core.columns.Columns`) for recorded data, and the schema its
offline reader maps a table's columns with (`OfflinePreLearner`'s `SCHEMA`)."""

from __future__ import annotations

OBS = "obs"
ACTIONS = "actions"
REWARDS = "rewards"
NEXT_OBS = "new_obs"
TERMINATEDS = "terminateds"
TRUNCATEDS = "truncateds"
INFOS = "infos"
EPS_ID = "eps_id"
AGENT_ID = "agent_id"
MODULE_ID = "module_id"
T = "t"
#: The old stack's episode end (RLlib's reader takes it for `terminateds` when that is missing).
DONES = "dones"
#: The column of a serialized-episode table (Ray Data's name for a table of plain items).
EPISODE_ITEM = "item"

#: The columns RLlib's reader knows (its `SCHEMA`, key -> the table's column name, which
#: `input_read_schema` changes); any other column is an extra model output of the step
#: (action_logp, action_dist_inputs, ...) and goes into the train batch by its name.
SCHEMA: dict[str, str] = {
    name: name
    for name in (
        EPS_ID,
        AGENT_ID,
        MODULE_ID,
        OBS,
        ACTIONS,
        REWARDS,
        INFOS,
        NEXT_OBS,
        TERMINATEDS,
        TRUNCATEDS,
        T,
        "agent_index",
        DONES,
        "unroll_id",
    )
}
#: Schema columns RLlib's reader drops (the old stack's bookkeeping).
DROPPED = frozenset({"agent_index", "unroll_id", "type", DONES, T, INFOS})
