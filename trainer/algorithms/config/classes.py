"""What an algorithm trains with, declared once: `AlgorithmClasses`, the classes of its numpy
and torch learners and default modules, named by import path ("module:Class").

An algorithm's config class holds its declaration as `_CLASSES` (its registry entry reads it as
`entry.classes`); nothing else names those classes. From it, the base config answers RLlib's
methods (`get_default_learner_class`, `default_module_class`, `default_torch_module_class`,
`trainer.algorithms.config.framework`) and the base Algorithm assembles the learner
(`Algorithm.learner_for`, `trainer.algorithms.algorithm`).

The classes are named by path, not imported: a learner reads its settings off its algorithm's
config (it imports the config's module, so that module cannot import it), and the torch classes
import torch, which only a config that runs on torch asks for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AlgorithmClasses:
    """One algorithm's learners and default modules, each an import path "module:Class" (None:
    none of that kind; an algorithm with torch classes only answers them whatever the
    framework)."""

    #: The numpy learner: `Learner(config, spaces)` builds its module for `spaces` (a
    #: `SpaceInfo`); `Learner(config, None, module=module)` trains a module built already (a
    #: multi-agent run's, from its spec).
    numpy_learner: str | None = None
    #: The torch learner: `TorchLearner(config, module, module_id=...)`.
    torch_learner: str | None = None
    #: The default numpy module: `Module(spaces, model_config, seed=..., **kwargs)` (the kwargs:
    #: the config's `_numpy_module_kwargs`).
    numpy_module: str | None = None
    #: The default torch module (a `TorchRLModule` subclass).
    torch_module: str | None = None
    #: Whether the numpy learner builds its target networks as it builds its module: in a
    #: multi-agent run it gets the module's builder too (`build=`), which it calls again.
    numpy_targets_from_build: bool = False
    #: RLlib's import path of the torch learner where a `training(learner_class=...)` must
    #: subclass it (its update takes what only this algorithm feeds it); None: any TorchLearner.
    required_learner_base: str | None = None
    #: Why it must (the end of the refusal), or "".
    required_learner_reason: str = ""
    #: The algorithm's losses, where its learners are the generic ones of a loss function
    #: (`trainer.algorithms.loss_learner`): "module:function" each. numpy:
    #: `loss(batch, module, config) -> (loss, {statistic: value})`, the module's gradient
    #: written by its backward pass; torch: `loss(batch, fwd_out, config, *, action_dist_class)
    #: -> (loss tensor, {statistic: value})`.
    numpy_loss: str | None = None
    torch_loss: str | None = None
    #: What their train batch holds of one complete episode besides its observations and
    #: actions: "module:function", `columns(episode, config) -> {column: array}`.
    episode_columns: str | None = None
    #: What stands in for the default torch learner and the EnvRunners' default torch module
    #: until a torch object is asked for, so that a default torch run need not import torch:
    #: "module:object", the object answering `defers(config)`, `learner(config, spaces,
    #: build)` and `module_view(config, spaces, build)` (each None where the config needs the
    #: torch objects; `build()` builds them). None: the torch objects are built at once.
    deferred_torch: str | None = None


__all__ = ["AlgorithmClasses"]
