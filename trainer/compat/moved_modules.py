"""Import paths of modules that moved when `trainer` was cut into subpackages by job: the old
path still imports (the very module at its new place, so a class is the same class either way)
and warns once with the new path.

Old paths matter in two places: scripts written against the porting table (docs/rllib-names.md) before the
move (`trainer.exploration`, `trainer.spaces`, `trainer.lookback_buffer`, `trainer.env_runner`),
and checkpoints whose `config.json` names code by import path (`trainer.config:...`). A finder
on `sys.meta_path` maps them; nothing is imported until an old path is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import types
from typing import Any

logger = logging.getLogger("trainer")
_warned: set[str] = set()

#: Old module path -> where the module is now.
MOVED_MODULES = {
    "trainer.algorithm": "trainer.algorithms.algorithm",
    "trainer.algorithms.dqn_learner": "trainer.algorithms.dqn.dqn_learner",
    "trainer.algorithms.ppo_learner": "trainer.algorithms.ppo.ppo_learner",
    "trainer.callbacks.old_api": "trainer.compat.old_callbacks",
    "trainer.checkpointing": "trainer.algorithms.checkpointing",
    "trainer.checks": "trainer.util.checks",
    "trainer.config": "trainer.algorithms.algorithm_config",
    "trainer.config_data": "trainer.checkpoints.config_data",
    "trainer.curriculum": "trainer.env.curriculum",
    "trainer.env_runner": "trainer.runners.env_runner",
    "trainer.env_runner_group": "trainer.runners.env_runner_group",
    "trainer.env.sub_env_guard": "trainer.runners.sub_env_guard",
    "trainer.env_state": "trainer.env.env_state",
    "trainer.envs": "trainer.env.envs",
    "trainer.episode": "trainer.env.episode",
    "trainer.episode_list": "trainer.env.episode_list",
    "trainer.evaluation": "trainer.algorithms.evaluation",
    "trainer.exploration": "trainer.core.exploration",
    "trainer.initializers": "trainer.core.initializers",
    "trainer.log": "trainer.util.log",
    "trainer.lookback_buffer": "trainer.env.lookback_buffer",
    "trainer.models": "trainer.core.models",
    "trainer.named_object_server": "trainer.named_objects.server",
    "trainer.nn": "trainer.core.nn",
    "trainer.old_api": "trainer.compat.old_api",
    "trainer.parent_watch": "trainer.util.child_process",
    "trainer.pickling": "trainer.util.pickling",
    "trainer.q_module": "trainer.algorithms.dqn.q_module",
    "trainer.remote": "trainer.runners.process_runner",
    "trainer.replay_buffer": "trainer.algorithms.replay",
    "trainer.restart_policy": "trainer.runners.restart_policy",
    "trainer.rllib_settings": "trainer.compat.rllib_settings",
    "trainer.schedules": "trainer.core.schedules",
    "trainer.seeding": "trainer.util.seeding",
    "trainer.spaces": "trainer.core.spaces",
    "trainer.state_checks": "trainer.util.state_checks",
    "trainer.sub_env_guard": "trainer.runners.sub_env_guard",
    "trainer.worker_process": "trainer.runners.worker",
}


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, new_name: str):
        self.new_name = new_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        # The module at its new place, registered under the old name too (import machinery
        # puts what this returns into sys.modules[old name]).
        return importlib.import_module(self.new_name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # already executed under its new name


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds an old module path of `MOVED_MODULES` and loads the module from its new place."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new_name = MOVED_MODULES.get(fullname)
        if new_name is None:
            return None
        if fullname not in _warned:
            _warned.add(fullname)
            logger.warning(
                "DeprecationWarning: %s moved to %s; import it from there", fullname, new_name
            )
        return importlib.util.spec_from_loader(fullname, _MovedModuleLoader(new_name))


def install() -> None:
    """Puts the finder on `sys.meta_path` once (at `import trainer`)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
