"""The `learners()` section: RLlib's learner settings; there is one learner, in the main process."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.learner_group import LearnerGroup, build_learner

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class LearnersSection(ConfigBase):
    """RLlib's learner settings (`learners()`)."""

    if TYPE_CHECKING:  # what this section reads of the others

        def training(self, *args: Any, **kwargs: Any) -> Self: ...

        is_multi_agent: Any

        def learner_only_module_specs(self) -> Any: ...

    def learners(
        self,
        *,
        learner_class: type | None = NotProvided,
        learner_config_dict: dict | None = NotProvided,
        learner_connector: Any = NotProvided,
        **settings: Any,
    ) -> Self:
        """RLlib's learner settings (`num_learners`, `num_gpus_per_learner`, ...): there is one
        learner in the main process; other values warn at build. `learner_class` is
        `training(learner_class=...)`'s, and `learner_connector` `training()`'s (RLlib takes
        them in both)."""
        self._reject_unknown("learners", settings, [])
        if learner_class is not NotProvided:
            self.training(learner_class=learner_class)
        if learner_config_dict is not NotProvided:
            self.training(learner_config_dict=learner_config_dict)
        if learner_connector is not NotProvided:
            self.training(learner_connector=learner_connector)
        return self

    def data_parallel_refusal(self) -> str | None:
        """Why `num_learners` (>= 2) trains on one learner here, or None: data-parallel
        learners train (`trainer.algorithms.data_parallel`), or `num_learners` is 0 or 1."""
        num_learners = getattr(self, "num_learners", 0)
        if not isinstance(num_learners, int) or num_learners < 2:
            return None
        algo_class = getattr(self, "algo_class", None)
        name = getattr(algo_class, "__name__", type(self).__name__)
        kinds = getattr(algo_class, "DATA_PARALLEL_LEARNERS", ())
        if not kinds:
            return (
                f"data-parallel learners are not built for {name} yet: it trains on one "
                "learner, in the main process"
            )
        if self.is_multi_agent and "multi-agent" not in kinds:
            return f"data-parallel learners train single-agent {name}; a multi-agent run trains on one learner"
        model = getattr(self, "model_config", None) or {}
        recurrent = isinstance(model, dict) and (
            model.get("use_lstm") or model.get("use_attention")
        )
        if recurrent and "recurrent" not in kinds:
            # (a recurrent module's minibatches are whole sequences, not yet counted per
            # learner)
            return f"a recurrent module's {name} trains on one learner here"
        if self.learner_only_module_specs():
            return f"{name} with learner-only modules trains on one learner here"
        if getattr(self, "num_gpus_per_learner", 0):
            return "data-parallel learners run on the CPU here; GPU learners are one learner"
        return None

    def build_learner(self, *, env: Any = None, spaces: dict | None = None) -> Any:
        """RLlib's builder: a new learner for `env`'s (or `spaces`') modules, built
        (`build()` called), on a copy of this config. An algorithm's config gives the learner
        its Algorithm builds (`config.learner_class` over the algorithm's module; a learner per
        module multi-agent); a config without an algorithm of its own (RLlib's testing
        config) gives `learner_class`, a torch learner, over the whole MultiRLModule of
        `get_multi_rl_module_spec(env=, spaces=)`. See `trainer.algorithms.learner_group`."""
        return build_learner(self, env=env, spaces=spaces)

    def build_learner_group(
        self,
        *,
        env: Any = None,
        spaces: dict | None = None,
        rl_module_spec: Any = None,
        placement_group: Any = None,
    ) -> LearnerGroup:
        """RLlib's builder: a `LearnerGroup` over one new learner (`build_learner`), in this
        process; `rl_module_spec` is the MultiRLModuleSpec of a learner of a whole
        MultiRLModule (an algorithm's learner takes its spaces). `placement_group` (Ray's) has
        no effect here."""
        return LearnerGroup(
            learner=build_learner(self, env=env, spaces=spaces, rl_module_spec=rl_module_spec)
        )
