"""`DreamerV3Config`: DreamerV3's settings (RLlib 2.60's, with its defaults and meanings) and its
classes (its torch learner and default torch module, by import path; the `DreamerV3` algorithm
of `dreamerv3.py` too).

DreamerV3 (Hafner et al. 2023, "Mastering Diverse Domains through World Models") learns a world
model (an RSSM with discrete latents) from replayed `batch_size_B` x `batch_length_T` sequences,
and its actor and critic from trajectories of `horizon_H` steps dreamed by that model. Three
optimizers train the three parts (`world_model_lr`, `actor_lr`, `critic_lr`, each with its own
global-norm clip); `lr` and `train_batch_size` stay None, as RLlib requires. `training_ratio` is
how many replayed steps are trained on per env step sampled. `model_size` picks the networks'
sizes from RLlib's table (`MODEL_SIZES`: the paper's XS to XL, and RLlib's smaller debug sizes).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.config.training import check_lr
from trainer.algorithms.replay import updated_buffer_config
from trainer.algorithms.settings import Setting, setting
from trainer.capabilities import OTHER_SETTINGS
from trainer.compat.rllib_settings import NoEffect
from trainer.core.rl_module import RLModuleSpec
from trainer.errors import UnsupportedSetting
from trainer.util.checks import int_at_least, is_bool, number_above, number_in, one_of
from trainer.util.import_paths import resolve_import_path

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: DreamerV3's Algorithm (`dreamerv3.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.dreamerv3.dreamerv3:DreamerV3"
#: DreamerV3's learner and default module (`AlgorithmClasses`), torch only, named by import
#: path: the learner reads its settings off a `DreamerV3Config`, and importing DreamerV3
#: imports no torch. A `learner_class` must subclass the DreamerV3 torch learner (its update
#: takes replayed B x T sequences).
CLASSES = AlgorithmClasses(
    torch_learner="trainer.algorithms.dreamerv3.torch_learner:DreamerV3TorchLearner",
    torch_module="trainer.algorithms.dreamerv3.torch_module:DreamerV3TorchRLModule",
    required_learner_base=(
        "ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_learner.DreamerV3TorchLearner"
    ),
    required_learner_reason="DreamerV3's learner trains on replayed B x T sequences",
)


class ModelSize(NamedTuple):
    """One row of RLlib's model-size table (`ray.rllib.algorithms.dreamerv3.utils`; the
    paper's table B for XS to XL)."""

    #: Units of every dense hidden layer.
    dense_units: int
    #: Hidden layers of the MLPs (encoder, decoder, predictors, actor, critic).
    dense_layers: int
    #: Units of the sequence model's GRU (the size of the deterministic state h).
    gru_units: int
    #: Categorical distributions in a stochastic state z ...
    z_categoricals: int
    #: ... and classes of each.
    z_classes: int
    #: The CNN encoder's channel multiplier (image observations).
    cnn_multiplier: int


#: RLlib's model sizes: its debug sizes ("nano" to "XXS") and the paper's (XS to XL).
MODEL_SIZES: dict[str, ModelSize] = {
    "nano": ModelSize(16, 1, 16, 4, 4, 2),
    "micro": ModelSize(32, 1, 32, 8, 8, 4),
    "mini": ModelSize(64, 1, 64, 16, 16, 8),
    "XXS": ModelSize(128, 1, 128, 32, 32, 16),
    "XS": ModelSize(256, 1, 256, 32, 32, 24),
    "S": ModelSize(512, 2, 512, 32, 32, 32),
    "M": ModelSize(640, 3, 1024, 32, 32, 48),
    "L": ModelSize(768, 4, 2048, 32, 32, 64),
    "XL": ModelSize(1024, 5, 4096, 32, 32, 96),
}

#: The one replay buffer type DreamerV3 runs with (RLlib's check).
BUFFER_TYPE = "EpisodeReplayBuffer"


def _must_be_none(what: str) -> Any:
    def check(value: Any) -> str | None:
        return None if value is None else f"None ({what})"

    return check


def _check_symlog_obs(value: Any) -> str | None:
    if value == "auto" or isinstance(value, bool):
        return None
    return '"auto" (symlog unless the observations are images), True or False'


def _check_buffer(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"a dict {{'type': {BUFFER_TYPE!r}, 'capacity': <env steps>}}"
    if value.get("type", BUFFER_TYPE) != BUFFER_TYPE:
        return f"a dict whose 'type' is {BUFFER_TYPE!r} (DreamerV3 runs with no other buffer)"
    # (RLlib's Algorithm writes `metrics_num_episodes_for_smoothing` into the dict it builds
    # the buffer from, so its saved configs hold it: the buffer here has no use for it)
    unknown = sorted(set(value) - {"type", "capacity", "metrics_num_episodes_for_smoothing"})
    if unknown:
        return f"a dict of 'type' and 'capacity' only (got {unknown})"
    capacity = value.get("capacity")
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        return f"a dict whose 'capacity' is a whole number >= 1 (got {capacity!r})"
    return None


def reporting_setting(default: Any, check: Any, doc: str) -> Any:
    """One of DreamerV3's own settings of `reporting()` (as `setting` declares those of
    `training()`), typed Any for the same reason."""
    return Setting(default, check, "reporting", doc)


def _refuse_curiosity(value: Any) -> str | None:
    return None if value is False else "False (RLlib 2.60 keeps curiosity disabled)"


class DreamerV3Config(AlgorithmConfig):
    """DreamerV3's config. Defaults are RLlib 2.60's: `model_size="XS"`,
    `training_ratio=1024`, `batch_size_B=16`, `batch_length_T=64`, `horizon_H=15`,
    `gae_lambda=0.95`, `entropy_scale=3e-4`, `return_normalization_decay=0.99`,
    `world_model_lr=1e-4`, `actor_lr=3e-5`, `critic_lr=3e-5`, global-norm clips 1000 (world
    model) and 100 (actor, critic), `symlog_obs="auto"`, `gamma=0.997`,
    `replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 1000000}`, torch,
    `num_env_runners=0`, `rollout_fragment_length=1`,
    `metrics_num_episodes_for_smoothing=1`. `lr` and `train_batch_size` are not used."""

    model_size: str = setting(
        "XS",
        one_of(*MODEL_SIZES),
        "the networks' sizes (the paper's XS..XL, RLlib's nano..XXS): MODEL_SIZES",
    )
    training_ratio: float = setting(
        1024, number_above(0), "replayed steps trained on per env step sampled"
    )
    batch_size_B: int = setting(16, int_at_least(1), "rows of each replayed batch")
    batch_length_T: int = setting(64, int_at_least(1), "steps of each replayed row")
    horizon_H: int = setting(15, int_at_least(1), "steps of each dreamed trajectory")
    gae_lambda: float = setting(0.95, number_in(0, 1), "lambda of the dreamed lambda-returns")
    entropy_scale: float = setting(
        3e-4, number_in(0, float("inf")), "weight of the actor's entropy bonus (eta)"
    )
    return_normalization_decay: float = setting(
        0.99, number_in(0, 1), "decay of the EMAs of the returns' 5th and 95th percentiles"
    )
    train_critic: bool = setting(True, is_bool, "train the critic")
    train_actor: bool = setting(True, is_bool, "train the actor (needs train_critic)")
    intrinsic_rewards_scale: float = setting(
        0.1, number_in(0, float("inf")), "weight of intrinsic rewards (with use_curiosity)"
    )
    world_model_lr: float | list = setting(1e-4, check_lr, "the world model's Adam rate")
    actor_lr: float | list = setting(3e-5, check_lr, "the actor's Adam rate")
    critic_lr: float | list = setting(3e-5, check_lr, "the critic's Adam rate")
    world_model_grad_clip_by_global_norm: float = setting(
        1000.0, number_above(0), "the world model's gradient global-norm clip"
    )
    critic_grad_clip_by_global_norm: float = setting(
        100.0, number_above(0), "the critic's gradient global-norm clip"
    )
    actor_grad_clip_by_global_norm: float = setting(
        100.0, number_above(0), "the actor's gradient global-norm clip"
    )
    symlog_obs: str | bool = setting(
        "auto", _check_symlog_obs, 'symlog the observations ("auto": unless images)'
    )
    use_float16: bool = setting(
        False, one_of(False), "mixed float16 training (not built here: False only)"
    )
    use_curiosity: bool = setting(False, _refuse_curiosity, "curiosity (disabled, as RLlib's)")
    replay_buffer_config: dict[str, Any] = setting(
        {"type": BUFFER_TYPE, "capacity": 1_000_000},
        _check_buffer,
        f"type ({BUFFER_TYPE} only) and capacity (env steps)",
    )
    # RLlib's: DreamerV3 has neither a single rate nor a train batch size (typed as the shared
    # settings they redefine).
    lr: float | list[list[float]] = setting(
        None,
        _must_be_none("DreamerV3's rates are world_model_lr, actor_lr and critic_lr, RLlib's rule"),
        "not used: DreamerV3's rates are world_model_lr, actor_lr, critic_lr",
    )
    train_batch_size: int = setting(
        None,
        _must_be_none("set batch_size_B and batch_length_T instead, RLlib's rule"),
        "not used: a replayed batch is batch_size_B x batch_length_T steps",
    )
    # Reporting (RLlib's `reporting()` keywords).
    report_individual_batch_item_stats: bool = reporting_setting(
        False, is_bool, "also report each loss per batch item (the _B_T keys)"
    )
    report_dream_data: bool = reporting_setting(
        False, is_bool, "report the dreamed trajectories (of each row's t=0)"
    )
    report_images_and_videos: bool = reporting_setting(
        False, one_of(False), "report image and video data (not built here: False only)"
    )

    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect]]] = {
        "env_runners": {
            # RLlib's DreamerV3 default (its EnvRunners' filter states are not merged); the
            # EnvRunners' connector states are merged or not as every algorithm's here.
            "use_worker_filter_stats": NoEffect(False, "", fine=lambda v: True),
        },
    }
    _CLASSES = CLASSES
    _DEFAULT_OVERRIDES = {
        "framework_str": "torch",
        "gamma": 0.997,
        "num_env_runners": 0,
        "rollout_fragment_length": 1,
        "metrics_num_episodes_for_smoothing": 1,
    }

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def training(
        self,
        *,
        replay_buffer_config: dict = NotProvided,
        use_float16: bool = NotProvided,
        use_curiosity: bool = NotProvided,
        **kwargs: Any,
    ) -> Self:
        """Learning settings: DreamerV3's own and those every algorithm has. A
        `replay_buffer_config` updates the current one (its `capacity`). `use_float16` and
        `use_curiosity` are refused unless False: neither is built here (RLlib 2.60 refuses
        curiosity too)."""
        name = type(self).__name__
        if use_curiosity is not NotProvided and use_curiosity is not False:
            raise UnsupportedSetting(
                f"{name}.training(use_curiosity={use_curiosity!r}): curiosity is not "
                "available (RLlib 2.60 keeps it disabled: 'not fully supported and tested "
                "yet'); use_curiosity must be False",
                capability=OTHER_SETTINGS,
            )
        if use_float16 is not NotProvided and use_float16 is not False:
            raise UnsupportedSetting(
                f"{name}.training(use_float16={use_float16!r}): mixed float16 training is not "
                "built here; the DreamerV3 learner trains in float32, use_float16 must be "
                "False",
                capability=OTHER_SETTINGS,
            )
        super().training(**kwargs)
        if replay_buffer_config is not NotProvided and isinstance(replay_buffer_config, dict):
            replay_buffer_config = updated_buffer_config(
                self.replay_buffer_config, replay_buffer_config
            )
        return self._set(
            "training",
            {
                "replay_buffer_config": replay_buffer_config,
                "use_float16": use_float16,
                "use_curiosity": use_curiosity,
            },
        )

    def reporting(
        self,
        *,
        report_individual_batch_item_stats: bool = NotProvided,
        report_dream_data: bool = NotProvided,
        report_images_and_videos: bool = NotProvided,
        **kwargs: Any,
    ) -> Self:
        """Reporting settings every algorithm has, and DreamerV3's:
        `report_individual_batch_item_stats` (each loss per batch item, RLlib's `_B_T` /
        `_H_BxT` keys), `report_dream_data` (the dreamed trajectories, sliced to each row's
        first step) and `report_images_and_videos` (refused unless False: no image or video
        reports are built here)."""
        if report_images_and_videos is not NotProvided and report_images_and_videos is not False:
            raise UnsupportedSetting(
                f"{type(self).__name__}.reporting(report_images_and_videos="
                f"{report_images_and_videos!r}): image and video reports are not built here; "
                "report_images_and_videos must be False",
                capability=OTHER_SETTINGS,
            )
        super().reporting(**kwargs)
        return self._set(
            "reporting",
            {
                "report_individual_batch_item_stats": report_individual_batch_item_stats,
                "report_dream_data": report_dream_data,
                "report_images_and_videos": report_images_and_videos,
            },
        )

    @property
    def batch_size_B_per_learner(self) -> int:
        """`batch_size_B` per learner (RLlib's): `batch_size_B` is the total over the
        learners, split evenly over data-parallel ones."""
        if self.num_learners > 1 and self.data_parallel_refusal() is None:
            return self.batch_size_B // self.num_learners
        return self.batch_size_B

    def validate(self) -> None:
        """Every algorithm's checks (a multi-agent config is refused), and RLlib's for
        DreamerV3: on torch, `train_actor` needs `train_critic`."""
        super().validate()
        name = type(self).__name__
        # (Multi-agent configs are refused by every algorithm's checks: DreamerV3 does not
        # declare `_MULTI_AGENT_TRAINING`, as RLlib's is single-agent.)
        if self.framework_str != "torch":
            raise ConfigError(
                f"{name}: framework={self.framework_str!r}: DreamerV3 runs on torch only "
                "(framework('torch'))"
            )
        if (
            self.num_learners > 1
            and self.data_parallel_refusal() is None
            and self.batch_size_B % self.num_learners
        ):
            raise ConfigError(
                f"{name}: batch_size_B={self.batch_size_B} must be a multiple of "
                f"num_learners={self.num_learners}: each learner trains on batch_size_B / "
                "num_learners of the replayed sequences (RLlib's rule)"
            )
        if self.train_actor and not self.train_critic:
            raise ConfigError(
                f"{name}.training(train_actor=True, train_critic=False): the actor learns "
                "from the critic's values; set train_critic=True or train_actor=False"
            )

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """`DreamerV3TorchRLModule` (RLlib's layout: encoder, decoder, world_model, actor,
        critic, dreamer_model)."""
        return RLModuleSpec(module_class=self.default_torch_module_class())

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        """What RLlib's DreamerV3Config adds to the module's model config."""
        return {
            "gamma": self.gamma,
            "horizon_H": self.horizon_H,
            "model_size": self.model_size,
            "symlog_obs": self.symlog_obs,
            "use_float16": self.use_float16,
            "batch_length_T": self.batch_length_T,
        }


__all__ = ["BUFFER_TYPE", "CLASSES", "MODEL_SIZES", "DreamerV3Config", "ModelSize"]
