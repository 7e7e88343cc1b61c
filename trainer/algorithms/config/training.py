"""The `training()` section: the learning settings every algorithm has, and an algorithm's own
(its config declares each in its class body, `setting(...)`, collected into `_ALGO_SETTINGS`):
`training()` takes both; an algorithm's config writes a `training()` override only for the
settings that need more than their check (DQN's `replay_buffer_config` merges)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.algorithms.config.base import ConfigBase, Flag, NotProvided
from trainer.algorithms.settings import Setting, UsualRange, in_range, inherited, settings_of
from trainer.capabilities import LEARNER_CONNECTORS
from trainer.connectors.connector_v2 import build_pipeline
from trainer.connectors.learner import holds_output_in_episodes, pieces_made_without_spaces
from trainer.core.models import MODEL_DEFAULTS
from trainer.core.schedules import Schedule
from trainer.errors import ConfigError, UnsupportedSetting
from trainer.util.checks import (
    finite_number,
    int_at_least,
    is_bool,
    is_dict,
    number_above,
    number_at_least,
    number_at_least_or_inf,
    number_in,
    one_of,
    optional,
)

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def schedule_check(setting: str, value_name: str) -> Callable[[Any], str | None]:
    """The check of a setting that takes a number >= 0 or RLlib's schedule
    `[[timestep, value_name], ...]` (`Schedule`)."""
    allowed = f"a number >= 0 or a schedule [[timestep, {value_name}], ...]"

    def check(v: Any) -> str | None:
        if isinstance(v, (list, tuple)):
            try:
                Schedule(v, setting=setting, low=0.0)
            except ValueError as error:
                return f"{allowed} ({error})"
            return None
        return None if number_at_least(0)(v) is None else allowed

    return check


check_lr = schedule_check("lr", "lr")


def _is_torch_learner_class(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, type) and "trainer.torch_rl.learner" in sys.modules:
        from trainer.torch_rl.learner import TorchLearner

        if issubclass(v, TorchLearner):
            return None
    return (
        "None or a subclass of a torch learner (trainer.torch_rl.learner.TorchLearner, "
        "e.g. RLlib's PPOTorchLearner or DQNTorchLearner); the numpy "
        "learners take no subclass"
    )


def _is_learner_connector_factory(v: Any) -> str | None:
    if v is None or callable(v):
        return None
    return (
        "None or a callable (input_observation_space, input_action_space) -> a ConnectorV2 "
        "piece, a list of pieces or a ConnectorPipelineV2"
    )


#: `training(optimizer={...})` keys: Adam's settings, in RLlib's and torch's spellings.
OPTIMIZER_KEYS = ("type", "eps", "adam_epsilon", "epsilon", "betas", "beta1", "beta2")


def _check_optimizer(v: Any) -> str | None:
    allowed = f"a dict with keys from {list(OPTIMIZER_KEYS)} (the learner's optimizer is Adam)"
    if not isinstance(v, dict):
        return allowed
    for key, value in v.items():
        if key not in OPTIMIZER_KEYS:
            return f"{allowed}; got {key!r} (set the learning rate with training(lr=...))"
        if key == "type" and str(value).lower() != "adam":
            return f"{allowed}; got type={value!r}"
        if key == "betas" and not (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(number_in(0.0, 1.0)(b) is None for b in value)
        ):
            return f"{allowed}; betas must be two numbers in [0, 1]"
        if key in ("beta1", "beta2") and number_in(0.0, 1.0)(value) is not None:
            return f"{allowed}; {key} must be a number in [0, 1]"
        if key in ("eps", "adam_epsilon", "epsilon") and number_above(0)(value) is not None:
            return f"{allowed}; {key} must be a number > 0"
    return None


#: The settings of `training()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
TRAINING_SETTINGS: dict[str, Setting] = settings_of(
    "training",
    {
        # RLlib checks no range for gamma; NaN and inf cannot train.
        "gamma": (
            0.99,
            finite_number,
            "discount factor",
            UsualRange(
                in_range(0, 1),
                "between 0 and 1",
                "a discount above 1 weighs later rewards more than earlier ones, so "
                "returns grow with the episode's length; below 0 it flips the sign of "
                "every other step's reward",
            ),
        ),
        # 0 trains nothing (a non-learning baseline: Adam's steps are 0); a negative rate
        # would climb the loss, and checkpoints hold only non-negative rates.
        "lr": (
            0.001,
            check_lr,
            "Adam's learning rate (0: the weights stay), or RLlib's "
            "schedule [[timestep, lr], ...], linear in env steps "
            "sampled",
        ),
        "train_batch_size": (
            32,
            int_at_least(1),
            "env steps per training step (train_batch_size_per_learner "
            "is the same setting: there is one learner)",
        ),
        "num_epochs": (1, int_at_least(1), "passes over each train batch"),
        "minibatch_size": (
            None,
            optional(int_at_least(1)),
            "rows per gradient step (None: the whole batch)",
        ),
        "shuffle_batch_per_epoch": (False, is_bool, "shuffle the batch before each epoch"),
        "grad_clip": (
            None,
            optional(number_at_least_or_inf(0)),
            "clip gradients at this (None: no clipping)",
            UsualRange(
                lambda value: value is None or value > 0,
                "above 0, or None",
                "0 scales every gradient to 0: the weights never change",
            ),
        ),
        "grad_clip_by": (
            "global_norm",
            one_of("value", "norm", "global_norm"),
            '"value": each element, "norm": each parameter tensor\'s L2 '
            'norm, "global_norm": all of them together',
        ),
        "learner_class": (
            None,
            _is_torch_learner_class,
            "a subclass of the algorithm's torch learner (PPOTorchLearner) to train "
            "with, e.g. overriding compute_loss_for_module; it makes the run torch's",
        ),
        "learner_config_dict": (
            {},
            is_dict,
            "your own settings for a custom learner (learner_class), read in it as "
            "self.config.learner_config_dict[...]",
        ),
        "learner_connector": (
            None,
            _is_learner_connector_factory,
            "(input_observation_space, input_action_space) -> learner connector pieces, "
            "run over each train batch's episodes before the learner makes its batch "
            "(pieces that rewrite episodes, e.g. RLlib's curiosity pieces; PPO, IMPALA, APPO)",
        ),
        "optimizer": (
            {},
            _check_optimizer,
            "Adam's eps (or adam_epsilon) and betas (or beta1, beta2)",
        ),
        "model": (
            dict(MODEL_DEFAULTS),
            is_dict,
            "the networks (RLlib's older place of rl_module(model_config=...))",
        ),
    },
)


class TrainingSection(ConfigBase):
    """Learning settings every algorithm has (`training()`)."""

    if TYPE_CHECKING:  # what this section reads of the others

        def _set_model(self, *args: Any, **kwargs: Any) -> None: ...

        @property
        def is_multi_agent(self) -> Flag: ...

        def get_default_learner_class(self) -> type: ...  # the framework section's

        num_learners: int  # the learners section's

        def data_parallel_refusal(self) -> str | None: ...

    gamma: float
    lr: float | list[list[float]]
    train_batch_size: int
    num_epochs: int
    minibatch_size: int | None
    shuffle_batch_per_epoch: bool
    grad_clip: float | None
    grad_clip_by: str
    #: (The given class, or None, is kept as `_learner_class`; the attribute is RLlib's property,
    #: see `learner_class` below: never None.)
    learner_class: type
    learner_config_dict: dict[str, Any]
    learner_connector: Callable[..., Any] | None
    optimizer: dict[str, Any]
    model: dict[str, Any]

    def training(
        self,
        *,
        gamma: float = NotProvided,
        lr: float = NotProvided,
        train_batch_size: int = NotProvided,
        train_batch_size_per_learner: int = NotProvided,
        num_epochs: int = NotProvided,
        minibatch_size: int | None = NotProvided,
        shuffle_batch_per_epoch: bool = NotProvided,
        grad_clip: float | None = NotProvided,
        grad_clip_by: str = NotProvided,
        model: dict = NotProvided,
        optimizer: dict = NotProvided,
        learner_class: type | None = NotProvided,
        learner_config_dict: dict | None = NotProvided,
        learner_connector: Callable | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Learning settings every algorithm has. `train_batch_size_per_learner` sets
        `train_batch_size`; with data-parallel learners it is each learner's share
        (`total_train_batch_size`)."""
        # The algorithm's own settings (its class body's `setting(...)`s), set after these.
        own = {name: unknown.pop(name) for name in self._own_keywords() if name in unknown}
        values = {
            "gamma": gamma,
            "lr": lr,
            "train_batch_size": train_batch_size,
            "num_epochs": num_epochs,
            "minibatch_size": minibatch_size,
            "shuffle_batch_per_epoch": shuffle_batch_per_epoch,
            "grad_clip": grad_clip,
            "grad_clip_by": grad_clip_by,
            "optimizer": optimizer,
            "learner_class": learner_class,
            "learner_config_dict": learner_config_dict,
            "learner_connector": learner_connector,
        }
        self._reject_unknown(
            "training",
            unknown,
            list(values) + list(self._ALGO_SETTINGS) + ["model", "train_batch_size_per_learner"],
            values,
        )
        if train_batch_size_per_learner is not NotProvided:
            self._set("training", {"train_batch_size": train_batch_size_per_learner})
            self.__dict__["_batch_size_per_learner"] = True
        elif train_batch_size is not NotProvided:
            self.__dict__["_batch_size_per_learner"] = False
        if model is not NotProvided:
            self._set_model("training", "model", model)
        if isinstance(learner_config_dict, dict):  # as RLlib: updates what was given before
            values["learner_config_dict"] = {**self.learner_config_dict, **learner_config_dict}
        return self._set("training", {**values, **own})

    @classmethod
    def _own_keywords(cls) -> list[str]:
        """The keywords `training()` takes beyond every algorithm's: the algorithm's own
        settings (`_ALGO_SETTINGS`; those that redefine a shared one, SAC's `lr`, keep its
        keyword)."""
        return [
            name
            for name, setting in cls._ALGO_SETTINGS.items()
            if setting.method == "training" and name not in _SHARED_KEYWORDS
        ]

    @classmethod
    def _give_training_its_settings(cls, declares: bool) -> None:
        """Gives `cls.training` RLlib's signature, the algorithm's own settings as keywords
        then `**kwargs` (`inspect.signature(PPOConfig.training)`), and where `cls` declares
        settings (`declares`) without writing `training()`, its docstring's introduction."""
        method: Any = cls.__dict__.get("training")
        signature = cls._training_signature(method or cls.training)
        if method is None:
            method = inherited(cls.training)
            if declares:
                method.__intro__ = cls._training_intro()
            setattr(cls, "training", method)  # noqa: B010 - mypy refuses to assign a method
        method.__signature__ = signature

    @classmethod
    def _training_signature(cls, written: Callable[..., Any]) -> inspect.Signature:
        """`self`, the own settings (`_own_keywords`), the other keywords `written` (the
        class's `training()` or its parent's) takes beyond every algorithm's, `**kwargs`."""
        own = cls._own_keywords()
        parameters = inspect.signature(written).parameters
        keyword = inspect.Parameter.KEYWORD_ONLY
        settings = [
            inspect.Parameter(
                name,
                keyword,
                default=NotProvided,
                annotation=parameters[name].annotation
                if name in parameters
                else _declared_type(cls, name),
            )
            for name in own
        ]
        others = [
            parameter
            for name, parameter in parameters.items()
            if parameter.kind is keyword and name not in _SHARED_KEYWORDS and name not in own
        ]
        return inspect.Signature(
            [
                inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                *settings,
                *others,
                inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD, annotation="Any"),
            ],
            return_annotation="Self",
        )

    @classmethod
    def _training_intro(cls) -> str:
        """The docstring's introduction, naming the config classes that declare settings from
        `cls` up: "Learning settings: APPO's own, IMPALA's and those every algorithm has."."""
        own, *parents = [
            f"{parent.__name__.removesuffix('Config')}'s"
            for parent in cls.__mro__
            if vars(parent).get("_ALGO_SETTINGS")
        ]
        listed = ", ".join([f"{own} own", *parents])
        return f"Learning settings: {listed} and those every algorithm has."

    # -- the learner class (RLlib's property over the setting) ------------------------------
    @property  # type: ignore[no-redef]
    def learner_class(self) -> type:
        """RLlib's property: the class `training(learner_class=...)` gave, else the algorithm's
        default (`get_default_learner_class()`: its numpy learner, or with torch its torch
        learner). `to_dict()` carries the given class only (None when none was given)."""
        given = self.__dict__.get("_learner_class")
        return given if given is not None else self.get_default_learner_class()

    @learner_class.setter
    def learner_class(self, value: type | None) -> None:
        # Reached through `ConfigBase.__setattr__`, which checked the value (and the freeze).
        self.__dict__["_learner_class"] = value

    @property
    def train_batch_size_per_learner(self) -> int:
        """Each learner's share of a training step's env steps: as given to
        `training(train_batch_size_per_learner=...)`, else `train_batch_size` over the
        data-parallel learners (RLlib's; `train_batch_size` itself with one learner)."""
        learners = self.num_learners if self.data_parallel_refusal() is None else 1
        if self.__dict__.get("_batch_size_per_learner") or learners < 2:
            return self.train_batch_size
        return self.train_batch_size // learners

    @train_batch_size_per_learner.setter
    def train_batch_size_per_learner(self, value: int) -> None:
        self.training(train_batch_size=value)

    @property
    def total_train_batch_size(self) -> int:
        """Env steps per training step over all learners: `train_batch_size`, or, given as
        `train_batch_size_per_learner` to data-parallel learners, that times `num_learners`
        (RLlib's)."""
        learners = self.num_learners if self.data_parallel_refusal() is None else 1
        if self.__dict__.get("_batch_size_per_learner") and learners >= 2:
            return self.train_batch_size * learners
        return self.train_batch_size

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: Any = None
    ) -> Any:
        """RLlib's builder: the `learner_connector` pieces as one pipeline for the given
        spaces (None without a `learner_connector`). The learners make their batches from the
        episodes themselves (RLlib's default pieces), so the pipeline holds the user's pieces
        only; `device` is accepted as RLlib's."""
        factory = self.learner_connector
        if factory is None:
            return None
        made = factory(input_observation_space, input_action_space)
        return build_pipeline(
            made, input_observation_space, input_action_space, setting="learner_connector"
        )

    def _validate_training(self, name: str) -> None:
        if self.learner_connector is not None and not _holds_output_in_episodes_only(
            self.learner_connector
        ):
            algo_class = getattr(self, "algo_class", None)
            if not getattr(algo_class, "RUNS_LEARNER_CONNECTOR", False):
                raise UnsupportedSetting(
                    f"{name}.training(learner_connector=...): learner connectors run with PPO, "
                    "IMPALA and APPO here (over the episodes, before the learner makes the "
                    "batch); "
                    f"{getattr(algo_class, '__name__', 'this algorithm')} takes only pieces "
                    "whose output the episodes hold already (FrameStackingLearner)",
                    LEARNER_CONNECTORS,
                )
        if self.minibatch_size is not None and self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"{name}: minibatch_size={self.minibatch_size} must be <= train_batch_size="
                f"{self.train_batch_size} (each epoch splits the train batch into minibatches)"
            )


#: The keywords of every algorithm's `training()`.
_SHARED_KEYWORDS = frozenset(inspect.signature(TrainingSection.training).parameters)


def _declared_type(config_cls: type, name: str) -> Any:
    """The type annotation of setting `name` on `config_cls` or a parent (as written)."""
    for cls in config_cls.__mro__:
        annotations = inspect.get_annotations(cls)
        if name in annotations:
            return annotations[name]
    return inspect.Parameter.empty


def _holds_output_in_episodes_only(factory: Any) -> bool:
    """Whether the `learner_connector` factory makes only pieces whose output the episodes hold
    already (`FrameStackingLearner`: where the algorithm runs no learner pieces, the EnvRunners
    stack the frames), which any algorithm may take. The factory is called without spaces, as such pieces need none; one that cannot be
    is not such a factory."""
    pieces = pieces_made_without_spaces(factory)
    if not pieces:
        return False
    return all(holds_output_in_episodes(piece) for piece in pieces)
