"""The config's module-to-env pieces (`env_runners(module_to_env_connector=...)`) as both
EnvRunners run them, between a module's forward pass and the drawing of its actions:

    module outputs      ACTION_DIST_INPUTS; ACTIONS / ACTION_LOGP of a module that drew its
                        actions itself; any other output (a user's "my_value")
    `for_pieces`        as the pieces get them: torch tensors for a torch module, as in RLlib
    the pieces          may change the distribution inputs (an action mask) or write ACTIONS
                        (and ACTION_LOGP) themselves
    `pieces_left`       back to numpy: the distribution inputs the actions are drawn from, or
                        the actions a piece (or the module) wrote, as the episodes record them
                        (a composite action as flat rows), with their log-likelihoods, and
                        the other columns left (a piece may add one), recorded as the
                        module's extra model outputs (`trainer.core.extra_outputs`)

A single-agent EnvRunner's batch is one module's; a multi-agent one's maps each acting module's
id to its batch (`{module_id: {column: rows}}`), as RLlib's MultiRLModule returns it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.extra_outputs import extra_outputs


def for_pieces(
    dist_inputs: Any,
    acted: tuple[Any, Any] | None,
    torch_module: bool,
    extras: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """A module's outputs as its module-to-env pieces get them: its distribution inputs (if
    any), the (actions, log-likelihoods or None) it drew itself (if it did), and its other
    outputs (`extras`)."""
    batch: dict[str, Any] = dict(extras) if extras else {}
    if dist_inputs is not None:
        batch[Columns.ACTION_DIST_INPUTS] = dist_inputs
    if acted is not None:
        batch[Columns.ACTIONS] = acted[0]
        if acted[1] is not None:
            batch[Columns.ACTION_LOGP] = acted[1]
    if not torch_module:
        return batch
    from trainer.torch_rl.rl_module import to_tensor

    return to_tensor(batch)


def missing_dist_inputs(whose: str) -> ValueError:
    """The error for pieces that removed the distribution inputs the EnvRunner needs."""
    return ValueError(
        f"the module_to_env_connector pieces removed {Columns.ACTION_DIST_INPUTS!r} from "
        f"{whose}: the EnvRunner draws the actions from them, or records them with the actions"
    )


def pieces_left(
    out: dict[str, Any],
    torch_module: bool,
    dist: Any = None,
    action_layout: Any = None,
    *,
    rows: int,
) -> tuple[
    np.ndarray | None,
    tuple[np.ndarray, np.ndarray | None] | None,
    dict[str, np.ndarray] | None,
]:
    """What the pieces left in one module's batch of `rows` rows (numpy arrays or torch
    tensors): its distribution inputs (None if it has none), the (actions, log-likelihoods)
    written in it or None when the actions are still to be drawn, and its other columns
    (`extra_outputs`; None for none). A missing `Columns.ACTION_LOGP` is `dist`'s
    log-likelihood of the actions under the distribution inputs (None without one)."""
    if torch_module:
        from trainer.torch_rl.rl_module import to_numpy

        out = to_numpy(out)
    extras = extra_outputs(out, rows, "the module_to_env_connector pieces' batch")
    dist_inputs = out.get(Columns.ACTION_DIST_INPUTS)
    if dist_inputs is not None:
        dist_inputs = np.asarray(dist_inputs, dtype=np.float32)
    if Columns.ACTIONS not in out:
        return dist_inputs, None, extras
    actions = out[Columns.ACTIONS]
    if action_layout is not None and isinstance(actions, (dict, tuple)):
        actions = action_layout.flatten(actions)
    actions = np.asarray(actions)
    logp = out.get(Columns.ACTION_LOGP)
    if logp is None and dist is not None and dist_inputs is not None:
        logp = dist.logp(dist_inputs, actions)
    if logp is None:
        return dist_inputs, (actions, None), extras
    logp = np.asarray(logp, dtype=np.float32).reshape(len(actions))
    return dist_inputs, (actions, logp), extras
