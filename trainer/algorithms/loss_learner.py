"""The learners of an algorithm whose loss is a function, trained on complete episodes: the
algorithm's config names the loss (`AlgorithmClasses.numpy_loss`, `.torch_loss`) and what the
train batch holds of an episode (`AlgorithmClasses.episode_columns`), and these learners do the
rest. `LossNumpyLearner` is the numpy one (here); `LossTorchLearner` the torch one
(`trainer.algorithms.torch_loss_learner`, which needs torch).

One update, on the episodes of one training step:

1. the train batch (`episode_batch`): each episode's observations s_t (all but its last, the
   one after its last step; preprocessed as the EnvRunners fed them to the module), its actions
   a_t and the algorithm's columns of it (`columns(episode, config) -> {column: array}`),
   concatenated, and any other extra model output the module returned (a user's "my_value",
   `trainer.core.extra_outputs`);
2. `num_epochs` gradient steps on the whole batch: the loss and its gradient, clipped
   (`grad_clip`), checked and applied by the optimizer (Adam at `lr`, or its schedule).

The numpy loss computes the module's gradient itself, with the module's backward pass:
`loss(batch, module, config) -> (loss, {statistic: value})`, the gradient written into the
module's gradient buffer (`module.gradient_buffer()`, as `module.backward` writes it). The
results: the last step's statistics, `total_loss`, the gradient's norm, `curr_lr` and
`num_env_steps_trained`. A multi-agent run trains a learner per module (`Algorithm.learner_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.extra_outputs import extra_output_columns
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.env.episode import SingleAgentEpisode
from trainer.util.import_paths import resolve_import_path

#: `columns(episode, config) -> {column: array with one row per step}`.
EpisodeColumns = Callable[[SingleAgentEpisode, Any], dict[str, np.ndarray]]
#: `loss(batch, module, config) -> (loss, {statistic: value})`, the module's gradient written.
NumpyLossFn = Callable[[dict[str, np.ndarray], Any, Any], tuple[float, dict[str, Any]]]


def episode_batch(
    episodes: list[SingleAgentEpisode],
    columns: EpisodeColumns,
    config: Any,
    preprocess: Callable[[np.ndarray], np.ndarray],
) -> dict[str, np.ndarray]:
    """The steps of `episodes` as one batch: `Columns.OBS` (preprocessed), `Columns.ACTIONS`
    and the columns `columns(episode, config)` makes of each episode (see the module
    docstring); episodes without a step are left out."""
    episodes = [ep for ep in episodes if len(ep) > 0]
    made = [columns(ep, config) for ep in episodes]
    batch = {
        # Each episode holds one observation more than actions: the one after its last step.
        Columns.OBS: preprocess(np.concatenate([ep.get_observations()[:-1] for ep in episodes])),
        Columns.ACTIONS: np.concatenate([ep.get_actions() for ep in episodes]),
        **{
            name: np.concatenate([each[name] for each in made])
            for name in (made[0] if made else ())
        },
    }
    # The module's other outputs the episodes recorded (a user's "my_value"), as RLlib's
    # learner pipeline adds them.
    batch.update(extra_output_columns(episodes, skip=batch))
    return batch


def declared_functions(learner: str, config: Any, loss_role: str) -> tuple[Any, EpisodeColumns]:
    """The loss (`AlgorithmClasses.<loss_role>`) and the episode columns `config` names for
    the generic learner `learner`; TypeError where it names none."""
    classes = config._algorithm_classes()
    loss = getattr(classes, loss_role, None)
    columns = getattr(classes, "episode_columns", None)
    if loss is None or columns is None:
        raise TypeError(
            f"{learner}: {type(config).__name__} names no loss for it (its config's "
            f"AlgorithmClasses({loss_role}=..., episode_columns=...))"
        )
    return resolve_import_path(loss), resolve_import_path(columns)


class LossNumpyLearner(NumpyLearner):
    """The numpy learner of a loss function (see the module docstring): `LossNumpyLearner(config,
    spaces)` builds the config's module for `spaces`; `module=` trains one built already (a
    multi-agent run's)."""

    #: The algorithm's config (`num_epochs`, and what its loss and columns read).
    config: Any

    def __init__(self, config: Any, spaces: SpaceInfo | None, module: Any = None):
        #: The algorithm's loss and its columns of an episode (see the module docstring).
        self.loss: NumpyLossFn
        self.loss, self.episode_columns = declared_functions(
            type(self).__name__, config, "numpy_loss"
        )
        super().__init__(
            config, module if module is not None else config.build_module(spaces, seed=config.seed)
        )

    def build_train_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        return episode_batch(
            episodes, self.episode_columns, self.config, self.module.spaces.preprocess
        )

    def update(
        self,
        episodes: list[SingleAgentEpisode],
        /,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
    ) -> UpdateResults:
        """One update on complete `episodes` (see the module docstring)."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        batch = self.build_train_batch(episodes)
        results: UpdateResults = {}
        for _ in range(self.config.num_epochs):
            loss, stats = self.loss(batch, self.module, self.config)
            results = {**stats, "total_loss": float(loss)}
            results["gradients_default_optimizer_global_norm"] = self.apply_gradients(float(loss))
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR_KEY] = self.optimizer.lr
        results["num_env_steps_trained"] = len(batch[Columns.ACTIONS])
        return results


__all__ = ["LossNumpyLearner", "episode_batch"]
