"""PPO's learner in numpy (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"),
with RLlib's loss (`loss.py`'s `numpy_loss` and its backward pass): clipped surrogate, value loss
clipped at `vf_clip_param`, entropy bonus, and an adaptive KL penalty.

`update(episodes)` turns episode chunks into a train batch (GAE advantages, value targets), then
runs `num_epochs` passes of shuffled minibatch Adam steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.ppo.loss import (
    CURR_ENTROPY_COEFF,
    CURR_KL_COEFF,
    MEAN_KL_LOSS,
    adapted_kl_coeff,
    float32_coeff,
    numpy_loss,
    numpy_loss_gradients,
)
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID, Columns
from trainer.core.blas import AdaptiveBlasThreads
from trainer.core.extra_outputs import extra_output_columns
from trainer.core.learner import (
    DEFAULT_OPTIMIZER_LR_KEY,
    NumpyLearner,
    UpdateResults,
)
from trainer.core.models import SpaceInfo
from trainer.core.obs_tree import tree_concat, tree_len, tree_rows
from trainer.core.schedules import Scheduler
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN
from trainer.util import seeding
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import require_generator_state, require_number

if TYPE_CHECKING:
    from trainer.algorithms.ppo.config import PPOConfig

#: RLlib's result key of the default optimizer's learning rate.
DEFAULT_OPTIMIZER_LR = DEFAULT_OPTIMIZER_LR_KEY
#: The entropy word of the learners' minibatch-shuffling stream (`seeding.derived_stream`):
#: the numpy and the torch learner draw the same minibatches for a seed. Fixed: changing it
#: changes every seeded PPO result.
SHUFFLE_SEED_WORD = 7


def build_train_batch(
    episodes: list[SingleAgentEpisode],
    cfg: PPOConfig,
    prepare_observations: Callable[[np.ndarray], np.ndarray],
    compute_values: Callable[[np.ndarray], np.ndarray],
    *,
    next_observations: bool = False,
) -> dict[str, np.ndarray]:
    """PPO's train batch (both frameworks' learners): concatenates the episode chunks and
    computes GAE advantages and value targets (Schulman et al. 2016). A chunk that ends without
    termination (cut for the batch, or truncated by a time limit) bootstraps from the value of
    its last observation.

    `prepare_observations` turns the concatenated observations into the module's input (the
    batch's "obs"); `compute_values` gives the value of each of those rows (as a float array,
    without gradients); it is not called when `use_critic` is off. With `next_observations`
    the batch also holds each step's next observation (`Columns.NEXT_OBS`, RLlib's
    `AddNextObservationsFromEpisodesToTrainBatch`), which learner-only modules train on.
    The episodes' other extra model outputs are columns too (`extra_output_columns`).
    """
    episodes = [ep for ep in episodes if len(ep) > 0]
    # Values of every observation, each chunk's final one included, in one forward pass.
    # (Dict / Tuple observations, which torch modules take, are trees of batched leaves.)
    all_obs = prepare_observations(tree_concat([ep.get_observations() for ep in episodes]))
    all_values = (
        compute_values(all_obs) if cfg.use_critic else np.zeros(tree_len(all_obs), dtype=np.float32)
    )
    obs_chunks: list[Any] = []
    next_obs_chunks: list[Any] = []
    value_chunks: list[np.ndarray] = []
    next_value_chunks: list[np.ndarray] = []
    reward_chunks: list[np.ndarray] = []
    end_chunks: list[np.ndarray] = []
    offset = 0
    for ep in episodes:
        n = len(ep)
        v = all_values[offset : offset + n + 1].copy()
        if ep.is_terminated:
            v[-1] = 0.0  # no value after a terminal state
        obs_chunks.append(tree_rows(all_obs, slice(offset, offset + n)))
        if next_observations:
            next_obs_chunks.append(tree_rows(all_obs, slice(offset + 1, offset + n + 1)))
        value_chunks.append(v[:-1])
        next_value_chunks.append(v[1:])
        reward_chunks.append(np.asarray(ep.get_rewards(), dtype=np.float32))
        end = np.zeros(n, dtype=bool)
        end[-1] = True
        end_chunks.append(end)
        offset += n + 1
    values = np.concatenate(value_chunks)
    next_values = np.concatenate(next_value_chunks)
    rewards = np.concatenate(reward_chunks)
    chunk_end = np.concatenate(end_chunks)
    # RLlib's columns of the chunks' ends: the last step of a terminated episode is terminated;
    # every other chunk's last step is truncated (a time limit, or cut for the batch: its value
    # is bootstrapped), as RLlib's learner pipeline marks it.
    chunk_terminated = np.repeat(
        [ep.is_terminated for ep in episodes], [len(ep) for ep in episodes]
    )
    terminateds = chunk_end & chunk_terminated
    truncateds = chunk_end & ~chunk_terminated
    # TD residuals, then the exponentially weighted sum of them, restarted at each chunk end.
    deltas = rewards + cfg.gamma * next_values - values
    decay = cfg.gamma * (cfg.lambda_ if cfg.use_gae else 1.0)
    # (A loop over Python floats: indexing numpy arrays element by element costs 5x more.)
    advantages_list = deltas.tolist()
    ends = chunk_end.tolist()
    running = 0.0
    for t in range(len(advantages_list) - 1, -1, -1):
        if ends[t]:
            running = 0.0
        running = advantages_list[t] + decay * running
        advantages_list[t] = running
    advantages = np.asarray(advantages_list, dtype=deltas.dtype)
    value_targets = advantages + values
    batch = {
        "obs": tree_concat(obs_chunks),
        "actions": np.concatenate([ep.get_actions() for ep in episodes]),
        Columns.REWARDS: rewards,
        Columns.TERMINATEDS: terminateds,
        Columns.TRUNCATEDS: truncateds,
        "action_logp": np.concatenate(
            [ep.get_extra_model_outputs("action_logp") for ep in episodes]
        ).astype(np.float32),
        "action_dist_inputs": np.concatenate(
            [ep.get_extra_model_outputs("action_dist_inputs") for ep in episodes]
        ),
        "advantages": advantages.astype(np.float32),
        "value_targets": value_targets.astype(np.float32),
    }
    if next_observations:
        batch[Columns.NEXT_OBS] = tree_concat(next_obs_chunks)
    # The module's other outputs the episodes recorded (a user's "my_value"), as RLlib's
    # learner pipeline adds them: a user's loss reads them from the batch.
    batch.update(extra_output_columns(episodes, skip=batch))
    return batch


def standardize_advantages(batch: dict[str, np.ndarray]) -> None:
    """Standardizes the batch's advantages in place, over the whole train batch (as RLlib)."""
    adv = batch["advantages"]
    batch["advantages"] = ((adv - adv.mean()) / max(1e-4, float(adv.std()))).astype(np.float32)


def shuffled_minibatches(
    batch: dict[str, np.ndarray],
    cfg: PPOConfig,
    rng: np.random.Generator,
    num_total_minibatches: int = 0,
) -> Iterator[dict[str, np.ndarray]]:
    """`num_epochs` passes over `batch` in minibatches of `minibatch_size` rows, each pass in
    an order drawn from `rng` (with `shuffle_batch_per_epoch`). A full minibatch is gathered
    into the same preallocated arrays each time (valid until the next one is drawn); a
    remainder under half a minibatch is left out, since it would weigh as much as a full one.

    `num_total_minibatches` > 0 (data-parallel learners, each on its shard: RLlib's
    `num_total_minibatches`) yields exactly that many minibatches instead, passing over the
    batch as often as that takes, so that every learner takes as many steps as the others."""
    size = len(batch["advantages"])
    minibatch_size = min(cfg.minibatch_size or size, size)
    minibatch = {
        key: np.empty((minibatch_size,) + value.shape[1:], value.dtype)
        for key, value in batch.items()
    }
    yielded = 0
    epoch = 0
    while (
        (epoch < cfg.num_epochs)
        if num_total_minibatches <= 0
        else (yielded < num_total_minibatches)
    ):
        epoch += 1
        order = rng.permutation(size) if cfg.shuffle_batch_per_epoch else np.arange(size)
        for start in range(0, size, minibatch_size):
            if 0 < num_total_minibatches <= yielded:
                return
            idx = order[start : start + minibatch_size]
            if len(idx) < minibatch_size // 2 and start > 0:
                continue
            yielded += 1
            if len(idx) == minibatch_size:
                for key, value in batch.items():
                    value.take(idx, axis=0, out=minibatch[key])
                yield minibatch
            else:
                yield {key: value[idx] for key, value in batch.items()}


def _minibatch_rows(minibatch: dict[str, np.ndarray]) -> int:
    return len(minibatch["advantages"])


def mean_size(sizes: list[int]) -> float:
    """RLlib's `module_train_batch_size_mean`: the mean number of steps (rows) of the batches
    the module took a gradient step on in one update (its learner logs each minibatch's)."""
    return sum(sizes) / len(sizes)


class _EveryModule:
    """RLlib's `entropy_coeff_schedulers_per_module` of a learner of one module: that module's
    scheduler, under any module id (RLlib's makes one per module id from its config)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def __getitem__(self, module_id: Any) -> Scheduler:
        return self._scheduler


class PPOLearnerState:
    """What PPO's learners (numpy and torch) keep besides weights and optimizer: the adaptive
    KL coefficient and the minibatch shuffler's random stream (`Learner`'s extra state); and,
    as RLlib's (not checkpointed there either), the entropy coefficient's scheduler
    (`entropy_coeff`: a number or RLlib's schedule `[[timestep, coeff], ...]` in env steps
    sampled). An update's loss reads its current value, the value set after the update before
    (RLlib's `after_gradient_based_update`), reported as `curr_entropy_coeff`."""

    extra_state_keys: tuple[str, ...] = ("kl_coeff", "rng")
    kl_coeff: float
    rng: np.random.Generator
    entropy_coeff_scheduler: Scheduler

    def start_entropy_coeff(self, config: PPOConfig) -> None:
        self.entropy_coeff_scheduler = Scheduler(config.entropy_coeff, setting="entropy_coeff")

    @property
    def entropy_coeff_schedulers_per_module(self) -> Any:
        """RLlib's: the entropy coefficient's `Scheduler` by module id
        (`.get_current_value()`). A user's learner may set its own mapping (RLlib's
        `PPOLearner.build` makes a `LambdaDefaultDict` of them): the losses and the step after
        each update then read and step that one."""
        given = self.__dict__.get("_entropy_coeff_schedulers")
        return given if given is not None else _EveryModule(self.entropy_coeff_scheduler)

    @entropy_coeff_schedulers_per_module.setter
    def entropy_coeff_schedulers_per_module(self, schedulers: Any) -> None:
        self.__dict__["_entropy_coeff_schedulers"] = schedulers

    def _entropy_scheduler(self) -> Any:
        """The scheduler this learner's module's coefficient comes from."""
        module_id = getattr(self, "module_id", DEFAULT_MODULE_ID)
        return self.entropy_coeff_schedulers_per_module[module_id]

    @property
    def entropy_coeff(self) -> float:
        """The entropy coefficient the next loss uses."""
        return float(self._entropy_scheduler().get_current_value())

    def update_entropy_coeff(self, num_env_steps_sampled_lifetime: int) -> float:
        """RLlib's step of the scheduler after an update's gradient steps."""
        return float(self._entropy_scheduler().update(num_env_steps_sampled_lifetime))

    def _update_module_kl_coeff(self, *, module_id: Any, config: Any, kl_loss: float) -> None:
        """RLlib's hook after an update's epochs, with `use_kl_loss`: adapts the KL coefficient
        towards `config.kl_target` on the update's mean KL `kl_loss` (x1.5 above twice the
        target, x0.5 below half). A subclass's override takes effect (it sets `kl_coeff`)."""
        self.kl_coeff = adapted_kl_coeff(self.kl_coeff, kl_loss, config)

    def get_extra_state(self) -> dict:
        return {"kl_coeff": self.kl_coeff, "rng": generator_state(self.rng)}

    def check_extra_state(self, state: dict, where: str) -> None:
        require_number(state["kl_coeff"], f"{where}['kl_coeff']", minimum=0.0)
        require_generator_state(state["rng"], f"{where}['rng']")

    def set_extra_state(self, state: dict) -> None:
        self.kl_coeff = float(state["kl_coeff"])
        set_generator_state(self.rng, state["rng"])


class PPOLearner(PPOLearnerState, NumpyLearner):
    config: PPOConfig
    loss_name = "PPO"

    def __init__(self, config: PPOConfig, spaces: SpaceInfo | None, module: Any = None):
        """`module`: the module to train (a multi-agent run's, built from its spec); None
        builds the config's for `spaces`."""
        super().__init__(
            config, module if module is not None else config.build_module(spaces, seed=config.seed)
        )
        self.kl_coeff = float32_coeff(config.kl_coeff)
        self.start_entropy_coeff(config)
        self.rng = np.random.default_rng(seeding.derived_stream(config.seed, SHUFFLE_SEED_WORD))
        #: Updates run on one or two BLAS threads, by measurement, unless the user sized the
        #: pools; a seeded run's on two only where a step gives the same bits on one
        #: (`step_bits`), so that its weights do not depend on the timing (see
        #: AdaptiveBlasThreads).
        self.update_threads = AdaptiveBlasThreads(seeded=config.seed is not None)

    # -- 1. from episodes to a train batch ---------------------------------------------------
    def build_train_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        """The train batch (see `build_train_batch`), valued by this learner's module."""
        return build_train_batch(
            episodes, self.config, self.module.spaces.preprocess, self.module.values
        )

    # -- 2. the loss and its gradient on one minibatch ---------------------------------------
    def loss_and_grads(self, mb: dict[str, np.ndarray]) -> tuple[list[np.ndarray], dict]:
        """Gradients of the PPO loss (`loss.numpy_loss`, `loss.numpy_loss_gradients`) w.r.t.
        every module parameter, and the loss statistics (`total_loss` is the value whose
        gradient is returned)."""
        module = self.module
        coeffs = {"entropy_coeff": self.entropy_coeff, "kl_coeff": self.kl_coeff}
        dist_inputs, values, cache = module.forward_train(mb["obs"])
        dist = module.dist.loss_grads(dist_inputs, mb["actions"], mb["action_dist_inputs"])
        loss = numpy_loss(mb, dist, values, self.config, **coeffs)
        d_dist_inputs, d_values = numpy_loss_gradients(loss, dist, self.config, **coeffs)
        dtype = dist_inputs.dtype
        grads = module.backward(
            cache, d_dist_inputs.astype(dtype, copy=False), d_values.astype(dtype, copy=False)
        )
        return grads, loss.stats

    def step_bits(self, mb: dict[str, np.ndarray]) -> bytes:
        """What a minibatch step computes before the optimizer changes anything, as bytes: the
        gradient, its squared norm and the loss statistics (a seeded run compares them on one
        and on two BLAS threads, `AdaptiveBlasThreads`)."""
        _, stats = self.loss_and_grads(mb)
        gradient = self.module.gradient_buffer()[0]
        numbers = np.array([*stats.values(), np.dot(gradient, gradient)], dtype=np.float64)
        return gradient.tobytes() + numbers.tobytes()

    def _minibatch_step(self, mb: dict[str, np.ndarray]) -> dict[str, float]:
        _, stats = self.loss_and_grads(mb)
        # Clip the gradient (grad_clip_by), check it, then take an Adam step. The per-parameter
        # gradients are views of the module's flat gradient buffer.
        stats["gradients_default_optimizer_global_norm"] = self.apply_gradients(stats["total_loss"])
        return stats

    # -- 3. epochs of minibatches ------------------------------------------------------------
    def _updates_independently(self) -> bool:
        """This class's own update (not a subclass's, whose loss may reach further)."""
        return type(self) is PPOLearner

    def update(
        self,
        episodes: list[SingleAgentEpisode],
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        num_total_minibatches: int = 0,
        minibatch_rng: np.random.Generator | None = None,
    ) -> UpdateResults:
        """One PPO update on the given episodes; returns the loss statistics of its last
        minibatch (RLlib logs them with `window=1`), the KL coefficient after its adaptation,
        the learning rate and the steps trained. `num_env_steps_sampled_lifetime` places a
        learning-rate schedule. Data-parallel learners (`trainer.algorithms.data_parallel`)
        give each its `num_total_minibatches` (`shuffled_minibatches`) and the generator its
        minibatches are drawn from (else this learner's own, `rng`)."""
        with self.update_threads() as paced:
            return self._update_on_episodes(
                episodes,
                num_env_steps_sampled_lifetime,
                paced,
                num_total_minibatches,
                minibatch_rng or self.rng,
            )

    def _update_on_episodes(
        self,
        episodes: list[SingleAgentEpisode],
        num_env_steps_sampled_lifetime: int | None,
        paced: Callable[..., Iterator[dict[str, np.ndarray]]],
        num_total_minibatches: int,
        rng: np.random.Generator,
    ) -> UpdateResults:
        cfg = self.config
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        batch = self.build_train_batch(episodes)
        standardize_advantages(batch)
        step_stats: dict[str, float] = {}
        minibatch_sizes = []
        minibatches = shuffled_minibatches(batch, cfg, rng, num_total_minibatches)
        for minibatch in paced(minibatches, rows=_minibatch_rows, probe=self.step_bits):
            minibatch_sizes.append(_minibatch_rows(minibatch))
            step_stats = self._minibatch_step(minibatch)
        # As RLlib: the statistics of the last minibatch (its learner logs them per minibatch
        # with window=1), and the KL coefficient adapted towards kl_target on that minibatch's
        # KL, the policy's distance from the behaviour policy after all epochs.
        results: UpdateResults = dict(step_stats)
        if cfg.use_kl_loss:  # (on the learners' mean KL: every replica adapts alike)
            kl = self.mean_over_learners(float(results[MEAN_KL_LOSS]))
            self._update_module_kl_coeff(
                module_id=getattr(self, "module_id", DEFAULT_MODULE_ID), config=cfg, kl_loss=kl
            )
        results[CURR_KL_COEFF] = self.kl_coeff
        if num_env_steps_sampled_lifetime is not None:  # (None: the torch learner steps it)
            self.update_entropy_coeff(num_env_steps_sampled_lifetime)
        results[CURR_ENTROPY_COEFF] = self.entropy_coeff
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR] = self.optimizer.lr
        results["num_env_steps_trained"] = len(batch["advantages"])
        if minibatch_sizes:
            results[MODULE_TRAIN_BATCH_SIZE_MEAN] = mean_size(minibatch_sizes)
        return results
