"""`PPOTorchLearner` (RLlib's `ray.rllib.algorithms.ppo.torch.PPOTorchLearner`): PPO's update
on a `TorchRLModule`, with the numpy `PPOLearner`'s data flow and statistics.

`update(episodes)` builds the train batch as the numpy learner does (GAE advantages and value
targets, from the module's `compute_values`, then standardized advantages), runs `num_epochs`
passes of shuffled minibatch steps (the same minibatches, drawn from an rng seeded as the
numpy learner's), and adapts the KL coefficient on the last minibatch's KL. The loss is RLlib
2.60's (`loss.torch_loss`, the numpy learner's written for torch, with the same statistics):
clipped surrogate, squared value error clipped at `vf_clip_param`, entropy bonus and the KL
penalty (`use_kl_loss`); without `use_critic` the value terms are zero.

A stateful (recurrent) module (`is_stateful()`, e.g. `use_lstm`) trains on sequences, as RLlib's
learner connectors build them: the values for GAE come from `compute_values` on each chunk's
sequences (the chunk with its last observation, each sequence starting from the recorded
state), GAE and the advantages' standardization run on the unpadded steps, and then every
column is split into zero-padded sequences of `max_seq_len` steps (`trainer.torch_rl.sequences`)
with `Columns.STATE_IN`, `Columns.SEQ_LENS` and `Columns.LOSS_MASK` (the loss's means are over
the real steps). Minibatches hold whole sequences, as many as hold `minibatch_size` steps on
average (`sequences_per_minibatch`, RLlib 2.60's `MiniBatchCyclicIterator`).

The module: a TorchRLModule with `ValueFunctionAPI` whose `_forward_train` returns
`Columns.ACTION_DIST_INPUTS` (and may return `Columns.EMBEDDINGS`, passed on to
`compute_values`), and whose action distribution classes have RLlib's TorchDistribution API
(`from_logits`, `logp`, `entropy`, `kl`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from trainer.algorithms.ppo.loss import (
    CURR_ENTROPY_COEFF,
    CURR_KL_COEFF,
    MEAN_KL_LOSS,
    float32_coeff,
    torch_loss,
)
from trainer.algorithms.ppo.numpy_update import NumpyPPOUpdate
from trainer.algorithms.ppo.ppo_learner import (
    DEFAULT_OPTIMIZER_LR,
    SHUFFLE_SEED_WORD,
    PPOLearnerState,
    build_train_batch,
    mean_size,
    shuffled_minibatches,
    standardize_advantages,
)
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.core.learner import UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.core.obs_tree import (
    flatten_column,
    is_nested,
    nest_column,
    tree_concat,
    tree_map,
    tree_rows,
)
from trainer.core.recurrent import chunk_prev_actions, chunk_prev_rewards
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN, NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.learner import TorchLearner, to_train_tensors
from trainer.torch_rl.numpy_twin import NumpyTwinHost
from trainer.torch_rl.rl_module import to_numpy
from trainer.torch_rl.sequences import (
    loss_mask,
    sequence_lengths,
    sequence_states_in,
    split_and_zero_pad,
)
from trainer.util import seeding

if TYPE_CHECKING:
    from trainer.algorithms.ppo.config import PPOConfig

#: A recurrent module's extra inputs (RLlib's `Columns.PREV_ACTIONS` / `PREV_REWARDS`).
PREV_ACTIONS = "prev_actions"
PREV_REWARDS = "prev_rewards"


def sequences_per_minibatch(seq_lens: np.ndarray, minibatch_size: int | None) -> int | None:
    """The sequences in each minibatch of a recurrent module's batch (`seq_lens`: its
    sequences' real steps), as RLlib 2.60's `MiniBatchCyclicIterator` takes them, where
    `minibatch_size` counts steps: the batch's sequences times `minibatch_size` over its steps
    (truncated; at least one), so that a minibatch holds `minibatch_size` steps on average.
    Early in training, when episodes are short, a sequence holds fewer than `max_seq_len`
    steps and a minibatch more sequences. None (no `minibatch_size`): the whole batch."""
    if not minibatch_size:
        return None
    steps = int(seq_lens.sum())
    return max(1, int(len(seq_lens) * (minibatch_size / steps))) if steps else 1


#: The prefix of the state-in leaves' flat keys in a sequence batch (minibatches are drawn
#: from flat arrays; the loss's batch gets the nested state back).
_STATE_KEY = Columns.STATE_IN + "/"


class PPOTorchLearner(PPOLearnerState, NumpyTwinHost, TorchLearner):
    """PPO's learner for torch modules (see the module docstring)."""

    config: PPOConfig
    algorithm_name = "PPO"

    def __init__(
        self,
        config: PPOConfig,
        module: Any,
        *,
        spaces: SpaceInfo | None = None,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the PPOConfig; `module`: the full TorchRLModule to train (with
        ValueFunctionAPI), built by the caller, or a view of one (see `TorchLearner`);
        `spaces`: how the EnvRunners preprocessed the observations they fed the module (the
        learner feeds it the same), by default the view's `spaces`, else the module's
        observation and action spaces; `module_id`: its id."""
        rl_module = getattr(module, "rl_module", module)
        if not isinstance(rl_module, ValueFunctionAPI):
            raise TypeError(
                f"PPOTorchLearner: the module ({type(rl_module).__name__}) must implement "
                "ValueFunctionAPI (compute_values(batch, embeddings=None)): PPO's advantages "
                "and value loss need it"
            )
        super().__init__(config, module, module_id=module_id)
        self.spaces: SpaceInfo = (
            spaces
            or getattr(module, "spaces", None)
            or SpaceInfo.from_spaces(
                cast(Any, rl_module).observation_space,
                cast(Any, rl_module).action_space,
                nested_obs=True,
            ).keeping_obs_shape()
        )
        self.kl_coeff = float32_coeff(config.kl_coeff)
        self.start_entropy_coeff(config)
        #: Whether the module is recurrent: it then trains on zero-padded sequences.
        self.stateful = bool(self.rl_module.is_stateful())
        model_config = self.rl_module.model_config
        model_config = model_config if isinstance(model_config, dict) else {}
        self.max_seq_len = int(model_config.get("max_seq_len", 20))
        self.needs_prev_actions = self.stateful and bool(model_config.get("lstm_use_prev_action"))
        self.needs_prev_rewards = self.stateful and bool(model_config.get("lstm_use_prev_reward"))
        if self.stateful and self.spaces.nested_obs_space is not None:
            raise ValueError(
                f"PPOTorchLearner: a stateful module ({type(self.rl_module).__name__}) with "
                f"observation space {self.spaces.nested_obs_space}: recurrent modules train "
                "on Box and Discrete observations here; flatten Dict / Tuple observations "
                "with the env-to-module connector FlattenObservations"
            )
        #: The batch the last `_values` call gave `compute_values`, if the module changed it
        #: (see `build_train_batch`); None otherwise.
        self._valued_batch: dict[str, Any] | None = None
        # Seeded as the numpy PPOLearner's shuffler: the same seed draws the same minibatches.
        self.rng = np.random.default_rng(seeding.derived_stream(config.seed, SHUFFLE_SEED_WORD))
        #: The update in numpy, for this class itself on the default module and optimizer
        #: (`trainer.algorithms.ppo.numpy_update`); None: every update runs in torch.
        self.numpy_update = NumpyPPOUpdate.of(self) if type(self) is PPOTorchLearner else None
        self.numpy_twin = self.numpy_update.twin if self.numpy_update is not None else None

    # -- 1. from episodes to a train batch ---------------------------------------------------
    def build_train_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, Any]:
        """The numpy learner's train batch (`build_train_batch`): observations preprocessed
        as the EnvRunners did (`spaces.preprocess`: float32 rows, one-hot for Discrete, Dict
        / Tuple observations as nested columns), valued by this module's `compute_values`.

        As in RLlib, whose GAE connector calls `compute_values` on the batch that becomes
        the train batch, columns the module's `compute_values` sets in its batch (RLlib's
        action-masking module moves the mask out of a dict observation into an
        "action_mask" column and leaves the plain observations in "obs") are the train
        batch's columns."""
        self._valued_batch = None
        batch = build_train_batch(
            episodes,
            self.config,
            self.spaces.preprocess,
            self._values,
            next_observations=bool(self.learner_only_learners),
        )
        valued, self._valued_batch = self._valued_batch, None
        if valued is not None:
            rows = _train_rows([len(ep) for ep in episodes if len(ep) > 0])
            for key, value in to_numpy(valued).items():
                batch[key] = tree_rows(value, rows)
        return batch

    # -- 1b. a recurrent module's sequences ---------------------------------------------------
    def build_sequence_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, Any]:
        """A recurrent module's train batch: GAE on the unpadded steps (values from
        `compute_values` on the chunks' sequences), advantages standardized, then every column
        split into zero-padded sequences (`(S, max_seq_len, ...)`), with the sequences'
        `Columns.STATE_IN` leaves under flat `"state_in/..."` keys, `Columns.SEQ_LENS` and
        `Columns.LOSS_MASK`."""
        episodes = [ep for ep in episodes if len(ep) > 0]
        initial_state = to_numpy(self.rl_module.get_initial_state())
        flat = build_train_batch(
            episodes,
            self.config,
            self.spaces.preprocess,
            lambda _observations: self._sequence_values(episodes, initial_state),
        )
        standardize_advantages(flat)
        if self.needs_prev_actions:
            flat[PREV_ACTIONS] = np.concatenate(
                [chunk_prev_actions(ep, self._zero_action()) for ep in episodes]
            )
        if self.needs_prev_rewards:
            flat[PREV_REWARDS] = np.concatenate([chunk_prev_rewards(ep) for ep in episodes])
        lengths = [len(ep) for ep in episodes]
        batch = self._pad_per_chunk(flat, lengths)
        states = [
            sequence_states_in(ep, len(ep), self.max_seq_len, initial_state) for ep in episodes
        ]
        batch.update(_flat_state(tree_concat(states)))
        seq_lens = np.concatenate([sequence_lengths(n, self.max_seq_len) for n in lengths])
        batch[Columns.SEQ_LENS] = seq_lens
        batch[Columns.LOSS_MASK] = loss_mask(seq_lens, self.max_seq_len)
        return batch

    def add_learner_only_learners(self, learners: dict[str, Any]) -> None:
        """As `TorchLearner`'s; a recurrent module's sequences are refused (learner-only
        modules train on PPO's flat minibatches here)."""
        if learners and self.stateful:
            raise ValueError(
                f"PPOTorchLearner: learner-only modules {sorted(learners)} beside a recurrent "
                f"module ({type(self.rl_module).__name__}): they train on the flat minibatches "
                "of a module without state here"
            )
        super().add_learner_only_learners(learners)

    def _zero_action(self) -> np.ndarray:
        space = cast(Any, self.rl_module).action_space
        return np.zeros(space.shape, dtype=space.dtype)

    def _pad_per_chunk(self, flat: dict[str, np.ndarray], lengths: list[int]) -> dict:
        """Each column of `flat` (the chunks' rows one after the other) as zero-padded
        sequences, chunk by chunk: a sequence never spans two chunks."""
        bounds = np.cumsum([0] + lengths)
        return {
            key: np.concatenate(
                [
                    split_and_zero_pad(column[bounds[i] : bounds[i + 1]], self.max_seq_len)
                    for i in range(len(lengths))
                ]
            )
            for key, column in flat.items()
        }

    def _sequence_values(
        self, episodes: list[SingleAgentEpisode], initial_state: Any
    ) -> np.ndarray:
        """The value of every observation of every chunk (its last included), in the order
        `build_train_batch` asks for them: each chunk run as sequences of `max_seq_len` steps
        from the recorded states, as RLlib's GAE connector values them."""
        observations = self.spaces.preprocess(
            np.concatenate([ep.get_observations() for ep in episodes])
        )
        lengths = [len(ep) + 1 for ep in episodes]
        flat: dict[str, np.ndarray] = {Columns.OBS: observations}
        if self.needs_prev_actions:
            zero = self._zero_action()
            flat[PREV_ACTIONS] = np.concatenate(
                [
                    np.concatenate([chunk_prev_actions(ep, zero), ep.get_actions()[-1:]])
                    for ep in episodes
                ]
            )
        if self.needs_prev_rewards:
            flat[PREV_REWARDS] = np.concatenate(
                [
                    np.concatenate(
                        [chunk_prev_rewards(ep), np.asarray(ep.get_rewards()[-1:], np.float32)]
                    )
                    for ep in episodes
                ]
            )
        batch = self._pad_per_chunk(flat, lengths)
        states = tree_concat(
            [
                sequence_states_in(ep, n, self.max_seq_len, initial_state)
                for ep, n in zip(episodes, lengths, strict=True)
            ]
        )
        seq_lens = np.concatenate([sequence_lengths(n, self.max_seq_len) for n in lengths])
        with torch.no_grad():
            tensors = to_train_tensors(batch, self.device)
            tensors[Columns.STATE_IN] = tree_map(
                lambda leaf: torch.from_numpy(np.ascontiguousarray(leaf)).to(self.device),
                states,
            )
            values = self.rl_module.compute_values(tensors)
        values = values.detach().cpu().numpy().astype(np.float32, copy=False)
        return values[loss_mask(seq_lens, self.max_seq_len)]

    def _values(self, observations: Any) -> np.ndarray:
        """The values of `observations` (every chunk's, its last included). Images are valued
        `VALUE_ROWS` at a time: a convolution over a thousand frames at once spills the CPU's
        caches (about twice the time for 1032 84x84x4 frames on 2 cores); a module that
        changes its batch is valued in one call (see `build_train_batch`)."""
        rows = _image_rows(observations)
        if rows > VALUE_ROWS and self.device.type == "cpu":
            parts = []
            for start in range(0, rows, VALUE_ROWS):
                part = self._values_of(observations[start : start + VALUE_ROWS])
                if part is None:
                    break
                parts.append(part)
            else:
                return np.concatenate(parts)
        values = self._values_of(observations, keep_batch=True)
        assert values is not None, "keep_batch values every batch"
        return values

    def _values_of(self, observations: Any, *, keep_batch: bool = False) -> np.ndarray | None:
        """`compute_values` of `observations`, flat; None when the module changed its batch
        (kept for `build_train_batch` with `keep_batch`)."""
        with torch.no_grad():
            batch = to_train_tensors({Columns.OBS: observations}, self.device)
            given = batch[Columns.OBS]
            values = self.rl_module.compute_values(batch)
        if batch.keys() != {Columns.OBS} or batch[Columns.OBS] is not given:
            if not keep_batch:
                return None
            self._valued_batch = batch  # the module changed its batch: see build_train_batch
        return values.detach().cpu().numpy().astype(np.float32, copy=False).reshape(-1)

    # -- 2. the loss -------------------------------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a PPOConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: PPOConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """RLlib 2.60's PPO loss (`loss.torch_loss`), as a mean over the minibatch (over the
        masked-in rows with `Columns.LOSS_MASK`); logs its statistics (policy_loss, vf_loss,
        vf_loss_unclipped, vf_explained_var, entropy, mean_kl_loss)."""
        module = self.rl_module
        total_loss, stats = torch_loss(
            batch,
            module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS]),
            module.get_exploration_action_dist_cls().from_logits(batch[Columns.ACTION_DIST_INPUTS]),
            lambda: module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS)),
            config,
            entropy_coeff=self.entropy_coeff,
            kl_coeff=self.kl_coeff,
        )
        self.log_loss_stats(stats)
        return total_loss

    # -- 3. epochs of minibatches ------------------------------------------------------------
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """TorchLearner's (the lr schedulers step), then, as RLlib's PPOLearner, the entropy
        coefficient's scheduler steps to the env steps sampled."""
        super().after_gradient_based_update(timesteps=timesteps)
        self.update_entropy_coeff(timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))

    def _updates_independently(self) -> bool:
        """This class's own update, where it runs in numpy (`numpy_update`)."""
        return (
            type(self) is PPOTorchLearner
            and self.numpy_update is not None
            and not self.learner_only_learners
            and self.numpy_update.usable()
        )

    def update(
        self,
        episodes: list[SingleAgentEpisode],
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        num_total_minibatches: int = 0,
        minibatch_rng: np.random.Generator | None = None,
    ) -> UpdateResults:
        """One PPO update on `episodes`; returns the numpy PPOLearner's statistics: those of
        the last minibatch (total_loss, policy_loss, vf_loss, vf_loss_unclipped,
        vf_explained_var, entropy, mean_kl_loss, gradients_default_optimizer_global_norm),
        curr_kl_coeff after its adaptation, curr_lr and num_env_steps_trained.
        `num_env_steps_sampled_lifetime` places a learning-rate schedule;
        `num_total_minibatches` and `minibatch_rng`: as the numpy learner's (data-parallel
        learners)."""
        if (
            self.numpy_update is not None
            and not self.learner_only_learners  # (they step in torch, on each minibatch)
            and self.numpy_update.usable()
        ):
            return self.numpy_update.update(
                episodes, num_env_steps_sampled_lifetime, num_total_minibatches, minibatch_rng
            )
        self.sync_torch_optimizer()
        with self.update_threads():
            return self._update_on_episodes(
                episodes,
                num_env_steps_sampled_lifetime,
                num_total_minibatches,
                minibatch_rng or self.rng,
            )

    def _update_on_episodes(
        self,
        episodes: list[SingleAgentEpisode],
        num_env_steps_sampled_lifetime: int | None,
        num_total_minibatches: int = 0,
        rng: np.random.Generator | None = None,
    ) -> UpdateResults:
        rng = rng or self.rng
        cfg = self.config
        self.metrics.reset()  # (an update that stopped on an error may have logged some)
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        step_stats: dict[str, float] = {}
        minibatch_sizes = []
        if self.stateful:
            batch = self.build_sequence_batch(episodes)
            per_minibatch = sequences_per_minibatch(batch[Columns.SEQ_LENS], cfg.minibatch_size)
            plan = SimpleNamespace(
                minibatch_size=per_minibatch,
                num_epochs=cfg.num_epochs,
                shuffle_batch_per_epoch=cfg.shuffle_batch_per_epoch,
            )
            for minibatch in shuffled_minibatches(
                batch, cast(Any, plan), rng, num_total_minibatches
            ):
                # The steps of its sequences (padding left out).
                minibatch_sizes.append(int(minibatch[Columns.SEQ_LENS].sum()))
                step_stats = self.update_from_batch(_nested_state(minibatch, self.device))
            num_trained = int(batch[Columns.SEQ_LENS].sum())
        else:
            batch = self.build_train_batch(episodes)
            standardize_advantages(batch)
            # Minibatches are drawn from flat columns: nested ones (Dict / Tuple
            # observations) travel as their leaves and are nested again for the module.
            nested = {key: value for key, value in batch.items() if is_nested(value)}
            for key, value in nested.items():
                del batch[key]
                batch.update(flatten_column(key, value))
            for minibatch in shuffled_minibatches(batch, cfg, rng, num_total_minibatches):
                minibatch_sizes.append(len(minibatch[Columns.ADVANTAGES]))
                for key, structure in nested.items():
                    minibatch = dict(minibatch)
                    minibatch[key] = nest_column(key, structure, minibatch)
                step_stats = self.update_from_batch(minibatch)
            num_trained = len(batch[Columns.ADVANTAGES])
        # As RLlib: the last minibatch's statistics, and the KL coefficient adapted on its KL.
        results: UpdateResults = dict(step_stats)
        if cfg.use_kl_loss:  # (on the learners' mean KL: every replica adapts alike)
            kl = self.mean_over_learners(float(results[MEAN_KL_LOSS]))
            self._update_module_kl_coeff(module_id=self.module_id, config=cfg, kl_loss=kl)
        # Torch lr schedulers step once per update, after it (RLlib's TorchLearner).
        self.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime or 0}
        )
        results.update(self.update_results())
        results[CURR_KL_COEFF] = self.kl_coeff
        results[CURR_ENTROPY_COEFF] = self.entropy_coeff
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR] = self.current_lr
        results["num_env_steps_trained"] = num_trained
        if minibatch_sizes:
            results[MODULE_TRAIN_BATCH_SIZE_MEAN] = mean_size(minibatch_sizes)
        return results


def _train_rows(lengths: list[int]) -> np.ndarray:
    """The rows of a batch of every chunk's observations (each chunk's `n` steps and its last
    observation, `n + 1` rows) that are train-batch rows (the last observation is not)."""
    starts = np.cumsum([0] + [n + 1 for n in lengths])
    return np.concatenate(
        [np.arange(start, start + n) for start, n in zip(starts, lengths, strict=False)]
    )


def _flat_state(state: Any, prefix: str = _STATE_KEY) -> dict[str, np.ndarray]:
    """A nested state's leaves under flat keys (`"state_in/actor/h"`)."""
    if not isinstance(state, dict):
        return {prefix.rstrip("/"): state}
    flat: dict[str, np.ndarray] = {}
    for key, value in state.items():
        flat.update(_flat_state(value, f"{prefix}{key}/"))
    return flat


def _nested_state(minibatch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """A minibatch with its flat state-in keys gathered back into `Columns.STATE_IN` (a
    nested dict of tensors, as the module takes it)."""
    batch: dict[str, Any] = {}
    state: dict[str, Any] = {}
    for key, value in minibatch.items():
        if not key.startswith(_STATE_KEY):
            batch[key] = value
            continue
        *parents, leaf = key[len(_STATE_KEY) :].split("/")
        node = state
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = torch.from_numpy(np.array(value)).to(device)
    batch[Columns.STATE_IN] = state
    return batch


#: Images are valued this many at a time (`PPOTorchLearner._values`): PPO's usual minibatch.
VALUE_ROWS = 256


def _image_rows(observations: Any) -> int:
    """The number of observations when they are a batch of images (an array of at least
    3 dimensions per row), else 0."""
    if isinstance(observations, np.ndarray) and observations.ndim >= 4:
        return len(observations)
    return 0
