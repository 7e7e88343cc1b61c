"""IMPALA's torch learner: RLlib 2.60's `IMPALATorchLearner` loss (loss.py's `torch_loss`) on a
torch module with a value function, RLlib's `DefaultPPOTorchRLModule` by default. The batch is
the numpy learner's `TrajectoryBatch` (every chunk's observations, its bootstrap observation
included); V-trace runs on the forward pass's log-likelihoods and values outside the graph
(vtrace.py), as RLlib's `vtrace_torch` runs without gradients.

A recurrent module (`use_lstm`) runs each chunk's rows, its bootstrap observation included, as
zero-padded sequences of `max_seq_len` rows (`trainer.torch_rl.sequences`), each from the state
the EnvRunner recorded before its first step; the real rows of its outputs, in order, are the
batch's rows, and the loss goes on as for any module. Minibatches (`minibatch_size`,
`num_epochs`) are cut as the numpy learner cuts them (impala_learner.py); a recurrent module's
pieces of chunks become sequences of their own, each starting from the state recorded before
its first row.

The episodes' other extra model outputs (a user module's "my_value", RLlib's
`AddColumnsFromEpisodesToTrainBatch`) are columns of the batch `compute_loss_for_module` gets,
laid out as its observations, a recurrent module's padded into its sequences
(`extra_output_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainer.algorithms.impala.impala_learner import (
    EntropyCoeff,
    TrajectoryBatch,
    chunk_pieces,
    minibatch_plan,
    piece_rows,
    take_steps,
    trajectory_batch,
)
from trainer.algorithms.impala.loss import torch_loss
from trainer.algorithms.impala.vtrace import VTraceReturns, vtrace
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY
from trainer.core.obs_tree import tree_concat, tree_rows
from trainer.core.recurrent import chunk_state_in, tree_stack
from trainer.env.episode import SingleAgentEpisode
from trainer.torch_rl.learner import TorchLearner
from trainer.torch_rl.rl_module import to_numpy
from trainer.torch_rl.sequences import (
    loss_mask,
    sequence_lengths,
    sequence_states_in,
    split_and_zero_pad,
)

#: The TrajectoryBatch's columns in the tensor batch (besides Columns.OBS and ACTIONS).
IS_STEP = "is_step"
REWARDS = "rewards"
BEHAVIOUR_LOGP = "behaviour_logp"
TERMINATED = "terminated"
CHUNK_END = "chunk_end"
#: A recurrent module's batch: True on the sequences' real rows (`(S, max_seq_len)`).
ROW_MASK = "row_mask"


@dataclass
class SequenceTrajectoryBatch(TrajectoryBatch):
    """A `TrajectoryBatch` for a recurrent module: its rows (`obs`) also as zero-padded
    sequences, `seq_obs` `(S, max_seq_len, ...)`, each chunk's rows in sequences of their own;
    `state_in` (each leaf `(S, ...)`) the state each sequence starts from; `seq_lens` their
    lengths, and `row_mask` True on their real rows, which are `obs`'s rows in order."""

    seq_obs: Any = None
    state_in: Any = None
    seq_lens: Any = None
    row_mask: Any = None
    #: The state before each row of `obs` (each leaf `(rows, ...)`): the state a sequence
    #: that starts at that row starts from (minibatches cut chunks into new sequences).
    row_state_in: Any = None


def extra_output_rows(batch: TrajectoryBatch) -> dict[str, np.ndarray]:
    """The batch's extra model outputs (one per step) laid out as its observations, so that a
    user's loss reads them row by row beside `batch[Columns.OBS]`: one row per row of the
    batch, a step's row (`IS_STEP`) holding that step's output.

    A bootstrap row (a chunk's last observation, or the observation after a minibatch's piece
    of a chunk, `take_steps`) holds no step, and the loss never reads it as one: it repeats
    the output of the step before it, as RLlib's `AddOneTsToEpisodesAndTruncate` repeats the
    last extra model outputs into the timestep it adds for bootstrapping (which its loss mask
    leaves out). A user's loss takes the steps' rows with `batch[IS_STEP]`, as the built-in
    losses do.

    Of a recurrent module's batch (`SequenceTrajectoryBatch`) the rows are zero-padded into
    its sequences, `(S, max_seq_len, ...)` as its observations: `ROW_MASK` is True on the
    real rows, which are the rows above in order (so `column[ROW_MASK][IS_STEP]` are the
    steps' outputs)."""
    if not batch.extra_model_outputs:
        return {}
    # Each row's step: its own, or (a bootstrap row) the one before it.
    step_of_row = np.maximum(np.cumsum(batch.is_step) - 1, 0)
    rows = {key: value[step_of_row] for key, value in batch.extra_model_outputs.items()}
    if not isinstance(batch, SequenceTrajectoryBatch):
        return rows
    mask = np.asarray(batch.row_mask)
    padded = {}
    for key, value in rows.items():
        column = np.zeros(mask.shape + value.shape[1:], dtype=value.dtype)
        column[mask] = value
        padded[key] = column
    return padded


class IMPALATorchLearner(TorchLearner):
    """See the module docstring. `update(episodes)` takes one step of the default optimizer on
    their batch (or on their `trajectory_batch`, made once for a batch used several times)."""

    algorithm_name = "IMPALA"
    #: An IMPALAConfig (or APPOConfig).
    config: Any

    def __init__(self, config: Any, module: Any, **kwargs: Any):
        super().__init__(config, module, **kwargs)
        name = type(self.rl_module).__name__
        if not isinstance(self.rl_module, ValueFunctionAPI):
            raise TypeError(
                f"{type(self).__name__}: V-trace needs a module with a value function "
                f"(ValueFunctionAPI); {name} has none"
            )
        self.entropy_coeff = EntropyCoeff(config)
        #: Whether the module is recurrent: it then runs on each chunk's sequences.
        self.stateful = bool(self.rl_module.is_stateful())
        model_config = self.rl_module.model_config
        model_config = model_config if isinstance(model_config, dict) else {}
        self.max_seq_len = int(model_config.get("max_seq_len", 20))
        if self.stateful and (
            model_config.get("lstm_use_prev_action") or model_config.get("lstm_use_prev_reward")
        ):
            raise TypeError(
                f"{type(self).__name__}: lstm_use_prev_action / lstm_use_prev_reward are not "
                "supported yet in IMPALA and APPO (PPO has them); leave them False"
            )

    # -- the batch -------------------------------------------------------------------------
    def trajectory_batch(self, episodes: list[SingleAgentEpisode]) -> TrajectoryBatch:
        """The episodes' `TrajectoryBatch` (a `SequenceTrajectoryBatch` for a recurrent
        module)."""
        batch = trajectory_batch(episodes, self.module.spaces.preprocess)
        if not self.stateful:
            return batch
        if not isinstance(batch.obs, np.ndarray):
            raise TypeError(
                f"{type(self).__name__}: a recurrent module with Dict / Tuple observations "
                "is not supported yet (flatten them: FlattenObservations)"
            )
        chunks = [ep for ep in episodes if len(ep) > 0]
        rows = [len(ep) + 1 for ep in chunks]  # each chunk's steps and its bootstrap row
        bounds = np.cumsum([0, *rows])
        size = self.max_seq_len
        initial_state = to_numpy(self.rl_module.get_initial_state())
        row_state_in = tree_concat(
            [
                tree_concat(
                    [
                        tree_stack([chunk_state_in(ep, initial_state)]),
                        ep.get_extra_model_outputs(Columns.STATE_OUT),
                    ]
                )
                for ep in chunks
            ]
        )
        seq_lens = np.concatenate([sequence_lengths(n, size) for n in rows])
        return SequenceTrajectoryBatch(
            **vars(batch),
            seq_obs=np.concatenate(
                [
                    split_and_zero_pad(batch.obs[bounds[i] : bounds[i + 1]], size)
                    for i in range(len(rows))
                ]
            ),
            state_in=tree_concat(
                [
                    sequence_states_in(ep, n, size, initial_state)
                    for ep, n in zip(chunks, rows, strict=True)
                ]
            ),
            seq_lens=seq_lens,
            row_mask=loss_mask(seq_lens, size),
            row_state_in=row_state_in,
        )

    def minibatch(self, batch: TrajectoryBatch, ranges: list[tuple[int, int]]) -> TrajectoryBatch:
        """The minibatch of the steps in `ranges` (`take_steps`); of a recurrent module's
        batch, each piece of a chunk as zero-padded sequences of its own, each from the state
        recorded before its first row."""
        part = take_steps(batch, ranges)
        if not isinstance(batch, SequenceTrajectoryBatch):
            return part
        size = self.max_seq_len
        rows = piece_rows(batch, chunk_pieces(batch, ranges))
        seq_lens = np.concatenate([sequence_lengths(len(r), size) for r in rows])
        starts = np.concatenate([r[::size] for r in rows])
        return SequenceTrajectoryBatch(
            **vars(part),
            seq_obs=np.concatenate([split_and_zero_pad(batch.obs[r], size) for r in rows]),
            state_in=tree_rows(batch.row_state_in, starts),
            seq_lens=seq_lens,
            row_mask=loss_mask(seq_lens, size),
            row_state_in=tree_rows(batch.row_state_in, np.concatenate(rows)),
        )

    @staticmethod
    def columns(batch: TrajectoryBatch) -> dict[str, Any]:
        """The tensor batch `compute_loss_for_module` gets (as numpy): the batch's rows
        (`Columns.OBS`, a recurrent module's as sequences with `Columns.STATE_IN`,
        `Columns.SEQ_LENS` and `ROW_MASK`), the per-step columns (`Columns.ACTIONS`,
        `REWARDS`, `BEHAVIOUR_LOGP`, `TERMINATED`, `CHUNK_END`), `IS_STEP` by row, and the
        episodes' extra model outputs (a user module's "my_value") laid out as the
        observations (`extra_output_rows`). An extra output named as one of the batch's own
        columns is left out (the batch's column stays), as in PPO's batch."""
        columns = {
            Columns.OBS: batch.obs,
            Columns.ACTIONS: batch.actions,
            IS_STEP: batch.is_step,
            REWARDS: batch.rewards.astype(np.float32),
            BEHAVIOUR_LOGP: batch.behaviour_logp.astype(np.float32),
            TERMINATED: batch.terminated,
            CHUNK_END: batch.chunk_end,
        }
        if isinstance(batch, SequenceTrajectoryBatch):
            columns[Columns.OBS] = batch.seq_obs
            columns[Columns.STATE_IN] = batch.state_in
            columns[Columns.SEQ_LENS] = batch.seq_lens
            columns[ROW_MASK] = batch.row_mask
        for key, value in extra_output_rows(batch).items():
            columns.setdefault(key, value)
        return columns

    # -- the forward pass's terms ----------------------------------------------------------
    @staticmethod
    def row_outputs(
        module: Any, batch: dict[str, Any], fwd_out: dict[str, Any], *, values: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`module`'s distribution inputs and values (with `values`) for every row of the
        batch, from its forward pass `fwd_out` (a recurrent module's: the sequences' real
        rows, in order)."""
        dist_inputs = fwd_out[Columns.ACTION_DIST_INPUTS]
        all_values = (
            module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
            if values
            else None
        )
        mask = batch.get(ROW_MASK)
        if mask is not None:
            dist_inputs = dist_inputs[mask]
            all_values = all_values[mask] if all_values is not None else None
        return dist_inputs, all_values

    def step_terms(
        self, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """(the steps' action distribution, V(x_t), V(x_{t+1}) without a graph; 0 after
        termination) from the forward pass over every observation of `batch`."""
        module = self.rl_module
        is_step = batch[IS_STEP]
        all_inputs, all_values = self.row_outputs(module, batch, fwd_out)
        assert all_values is not None
        dist = module.get_train_action_dist_cls().from_logits(all_inputs[is_step])
        values = all_values[is_step]
        with torch.no_grad():
            alive = (~batch[TERMINATED]).to(values.dtype)
            next_values = all_values[1:][is_step[:-1]].detach() * alive
        return dist, values, next_values

    def vtrace_targets(
        self,
        batch: dict[str, Any],
        target_logp: torch.Tensor,
        values: torch.Tensor,
        next_values: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """V-trace's (vs, pg_advantages) as tensors without a graph (vtrace.py in numpy)."""
        cfg = self.config

        def numpy(tensor: torch.Tensor) -> np.ndarray:
            return tensor.detach().cpu().numpy().astype(np.float64)

        terminated = batch[TERMINATED].cpu().numpy()
        returns: VTraceReturns = vtrace(
            target_logp=numpy(target_logp),
            behaviour_logp=numpy(batch[BEHAVIOUR_LOGP]),
            rewards=numpy(batch[REWARDS]),
            discounts=cfg.gamma * ~terminated,
            values=numpy(values),
            next_values=numpy(next_values),
            chunk_end=batch[CHUNK_END].cpu().numpy(),
            clip_rho_threshold=cfg.vtrace_clip_rho_threshold,
            clip_pg_rho_threshold=cfg.vtrace_clip_pg_rho_threshold,
        )
        device, dtype = values.device, values.dtype
        return (
            torch.as_tensor(returns.vs, dtype=dtype, device=device),
            torch.as_tensor(returns.pg_advantages, dtype=dtype, device=device),
        )

    # -- the loss --------------------------------------------------------------------------
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """RLlib 2.60's IMPALA loss (loss.py); logs pi_loss, mean_pi_loss, vf_loss,
        mean_vf_loss and entropy."""
        dist, values, next_values = self.step_terms(batch, fwd_out)
        total_loss, stats = torch_loss(
            actions=batch[Columns.ACTIONS],
            curr_action_dist=dist,
            values=values,
            vtrace_targets=lambda target_logp: self.vtrace_targets(
                batch, target_logp, values, next_values
            ),
            config=config,
            entropy_coeff=self.entropy_coeff.value,
        )
        self.log_loss_stats(stats)
        return total_loss

    # -- the update ------------------------------------------------------------------------
    def update(
        self,
        episodes: list[SingleAgentEpisode] | TrajectoryBatch,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        minibatch_size: int | None = None,
        num_minibatches: int | None = None,
    ) -> dict[str, Any]:
        """One optimizer step on the batch of `episodes`, or one per minibatch (as the numpy
        learner's); the statistics under RLlib's keys (the last step's losses). (The
        algorithm runs its iterations on one torch thread: `update_threads`.)"""
        batch = (
            episodes if isinstance(episodes, TrajectoryBatch) else self.trajectory_batch(episodes)
        )
        self.metrics.reset()
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        self.entropy_coeff.at(num_env_steps_sampled_lifetime)
        plan = minibatch_plan(self.config, batch.num_steps, minibatch_size, num_minibatches)
        if plan is None:
            stats = self._step(self.columns(batch))
            stats["num_env_steps_trained"] = batch.num_steps
            stats["num_module_steps_trained"] = batch.num_steps
            return stats
        for ranges in plan.ranges(batch.num_steps):
            self.metrics.reset()
            stats = self._step(self.columns(self.minibatch(batch, ranges)))
        trained = plan.count * plan.minibatch_size
        stats["num_env_steps_trained"] = trained
        stats["num_module_steps_trained"] = trained
        stats["module_train_batch_size_mean"] = plan.minibatch_size
        return stats

    def _step(self, columns: dict[str, Any]) -> dict[str, Any]:
        """One optimizer step on `columns`; its statistics."""
        stats: dict[str, Any] = self.update_from_batch(columns)
        stats["curr_entropy_coeff"] = self.entropy_coeff.value
        stats.update(self.update_results())
        stats[DEFAULT_OPTIMIZER_LR_KEY] = self.current_lr
        return stats


__all__ = ["IMPALATorchLearner", "SequenceTrajectoryBatch"]
