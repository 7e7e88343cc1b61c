"""`VPGConfig`: VPG's settings (every algorithm's, and `num_episodes_per_train_batch`) and its
classes (its learner, its loss and its default module, by import path).

VPG runs on torch: its default module is `VPGTorchRLModule` with a hidden layer of
`DEFAULT_HIDDEN_DIM` units, its learner `VPGTorchLearner` (the generic learner of a loss
function, with VPG's loss); a user's TorchRLModule returning `Columns.ACTION_DIST_INPUTS`
(`rl_module(rl_module_spec=...)`) or learner class (`training(learner_class=...)`) replaces
them. Multi-agent (`multi_agent(policies=..., policy_mapping_fn=...)`), one learner trains the
whole MultiRLModule, as RLlib's learner does (`_JOINT_MODULES`): its container class may run
its modules together (a `MultiRLModuleSpec(multi_rl_module_class=...)` whose forward runs a
shared encoder before each policy, RLlib's shared-encoder example), and the EnvRunners act
through that forward too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.settings import setting
from trainer.core.rl_module import RLModuleSpec
from trainer.errors import ConfigError
from trainer.util.checks import int_at_least
from trainer.util.import_paths import resolve_import_path

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: VPG's Algorithm (`vpg.py`, which imports this module), by import path.
ALGORITHM_CLASS = "trainer.algorithms.vpg.vpg:VPG"
#: VPG's learner, loss and default module (`AlgorithmClasses`), torch only, named by import
#: path: the learner reads its settings off a `VPGConfig`, and importing VPG imports no torch.
CLASSES = AlgorithmClasses(
    torch_learner="trainer.algorithms.vpg.torch_learner:VPGTorchLearner",
    torch_module="trainer.algorithms.vpg.torch_module:VPGTorchRLModule",
    torch_loss="trainer.algorithms.vpg.loss:vpg_loss",
    episode_columns="trainer.algorithms.vpg.loss:episode_columns",
)
#: The hidden layer's width of the default module (RLlib's example: `{"hidden_dim": 64}`).
DEFAULT_HIDDEN_DIM = 64


class VPGConfig(AlgorithmConfig):
    """VPG's config: every algorithm's settings, and `num_episodes_per_train_batch` (10), the
    complete episodes per training step. Defaults as RLlib's example: torch,
    `batch_mode="complete_episodes"`, `num_env_runners=1`."""

    num_episodes_per_train_batch: int = setting(
        10, int_at_least(1), "complete episodes per training step, spread over the EnvRunners"
    )

    _CLASSES = CLASSES
    _DEFAULT_OVERRIDES = {
        "framework_str": "torch",
        # The EnvRunners are asked for whole episodes anyway; for good measure, as RLlib's.
        "batch_mode": "complete_episodes",
        "num_env_runners": 1,
    }
    #: RLlib's test setting: the learner logs the mean of the module's weights.
    report_mean_weights: bool = True
    #: Multi-agent configs train: one learner over the whole MultiRLModule, whose container
    #: may run its modules together (`trainer.core.multi_rl_module.runs_modules_together`).
    _MULTI_AGENT_TRAINING = True
    _JOINT_MODULES = True

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or resolve_import_path(ALGORITHM_CLASS))

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """`VPGTorchRLModule` with a hidden layer of `DEFAULT_HIDDEN_DIM` units."""
        return RLModuleSpec(
            module_class=self.default_torch_module_class(),
            model_config={"hidden_dim": DEFAULT_HIDDEN_DIM},
        )

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        """The default module's `hidden_dim` (a user's spec's model config goes over it)."""
        return {"hidden_dim": DEFAULT_HIDDEN_DIM}

    def validate(self) -> None:
        """Every algorithm's checks, and VPG's: its multi-agent learner trains every module
        (`policies_to_train` is refused)."""
        super().validate()
        if self.is_multi_agent and self.policies_to_train is not None:
            raise ConfigError(
                f"VPGConfig.multi_agent(policies_to_train={self.policies_to_train!r}): VPG's "
                "learner trains every module of the MultiRLModule; leave policies_to_train "
                "out"
            )


__all__ = ["DEFAULT_HIDDEN_DIM", "VPGConfig"]
