"""RLlib's `Columns` (`ray.rllib.core.columns`): the names of a batch's columns, the keys of the
dicts that RLModules' forward passes take and return, and of episodes' model outputs."""

from __future__ import annotations


class Columns:
    """The column names RLlib 2.60 uses (each the string RLlib uses)."""

    # Observation, action and env-step data.
    OBS = "obs"
    INFOS = "infos"
    ACTIONS = "actions"
    ACTIONS_FOR_ENV = "actions_for_env"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    NEXT_OBS = "new_obs"
    EPS_ID = "eps_id"
    AGENT_ID = "agent_id"
    MODULE_ID = "module_id"
    # Sequences and recurrent state.
    SEQ_LENS = "seq_lens"
    T = "t"
    STATE_IN = "state_in"
    NEXT_STATE_IN = "next_state_in"
    STATE_OUT = "state_out"
    NEXT_STATE_OUT = "next_state_out"
    # Model outputs.
    EMBEDDINGS = "embeddings"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    ACTION_PROB = "action_prob"
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    VALUES_BOOTSTRAPPED = "values_bootstrapped"
    # Computed by the learner before the loss.
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    INTRINSIC_REWARDS = "intrinsic_rewards"
    RETURNS_TO_GO = "returns_to_go"
    LOSS_MASK = "loss_mask"
