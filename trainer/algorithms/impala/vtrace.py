"""V-trace (Espeholt et al. 2018, "IMPALA", section 4.1): off-policy value targets and policy
gradient advantages for trajectories sampled by a behaviour policy mu and learned by a target
policy pi, as RLlib 2.60's `vtrace_torch` computes them (without gradients).

For each trajectory x_0 .. x_n (a chunk of an episode; several chunks are concatenated, each
row's `chunk_end` flag marking a chunk's last step):

    rho_t    = pi(a_t|x_t) / mu(a_t|x_t)
    delta_t  = min(rho_bar, rho_t) (r_t + gamma_t V(x_{t+1}) - V(x_t))
    vs_t     = V(x_t) + delta_t + gamma_t min(c_bar, rho_t) (vs_{t+1} - V(x_{t+1}))
    pg_adv_t = min(pg_rho_bar, rho_t) (r_t + gamma_t vs_{t+1} - V(x_t))

with gamma_t = gamma (0 after a terminating step), c_bar = 1 (RLlib's), and vs_{n+1} =
V(x_{n+1}) the chunk's bootstrap value (0 after termination: gamma_n is 0 there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VTraceReturns:
    """`vs`: the value targets; `pg_advantages`: the policy gradient's advantages."""

    vs: np.ndarray
    pg_advantages: np.ndarray


def vtrace(
    *,
    target_logp: np.ndarray,
    behaviour_logp: np.ndarray,
    rewards: np.ndarray,
    discounts: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    chunk_end: np.ndarray,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
) -> VTraceReturns:
    """V-trace over concatenated chunks (see the module docstring). Every array has one entry
    per row: `discounts` is gamma_t, `values` V(x_t), `next_values` V(x_{t+1}) (at a chunk's
    last row its bootstrap value), `chunk_end` True at each chunk's last row."""
    rhos = np.exp(target_logp - behaviour_logp)
    clipped_rhos = np.minimum(clip_rho_threshold, rhos)
    cs = np.minimum(1.0, rhos)
    deltas = clipped_rhos * (rewards + discounts * next_values - values)
    # vs_t - V(x_t), summed backwards within each chunk. (A loop over Python floats: element
    # access on numpy arrays costs several times more.)
    corrections = deltas.tolist()
    decays = (discounts * cs).tolist()
    ends = chunk_end.tolist()
    running = 0.0
    for t in range(len(corrections) - 1, -1, -1):
        if ends[t]:
            running = 0.0
        running = corrections[t] + decays[t] * running
        corrections[t] = running
    vs = np.asarray(corrections, dtype=values.dtype) + values
    # vs_{t+1}: the next row's target within a chunk, the bootstrap value at its end.
    vs_next = np.empty_like(vs)
    vs_next[:-1] = vs[1:]
    vs_next[chunk_end] = next_values[chunk_end]
    pg_advantages = np.minimum(clip_pg_rho_threshold, rhos) * (
        rewards + discounts * vs_next - values
    )
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages.astype(values.dtype))
