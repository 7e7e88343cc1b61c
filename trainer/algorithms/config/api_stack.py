"""The `api_stack()` section: RLlib's new API stack, the one that runs here."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.util.checks import is_bool
from trainer.util.deprecation import warn_once

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The settings of `api_stack()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
API_STACK_SETTINGS: dict[str, Setting] = settings_of(
    "api_stack",
    {
        "enable_rl_module_and_learner": (
            True,
            is_bool,
            "RLlib's new API stack, the only one here",
        ),
        "enable_env_runner_and_connector_v2": (
            True,
            is_bool,
            "RLlib's new API stack, the only one here",
        ),
    },
)


class APIStackSection(ConfigBase):
    """RLlib's API stack (`api_stack()`)."""

    enable_rl_module_and_learner: bool
    enable_env_runner_and_connector_v2: bool

    def api_stack(
        self,
        *,
        enable_rl_module_and_learner: bool = NotProvided,
        enable_env_runner_and_connector_v2: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """RLlib's new API stack (RLModule, Learner, EnvRunner, connectors) is the one that runs
        here. Older scripts that switch to RLlib's old stack (`False`) are accepted with one
        warning and run on the new stack, where the old stack's callback signatures, config
        keys and result keys work (`trainer.compat`); both settings then still read True,
        since that is what runs."""
        values = {
            "enable_rl_module_and_learner": enable_rl_module_and_learner,
            "enable_env_runner_and_connector_v2": enable_env_runner_and_connector_v2,
        }
        self._reject_unknown("api_stack", unknown, values)
        if any(value is False for value in values.values()):
            # One warning per process, whichever of the two settings a script turns off.
            warn_once(
                "api_stack(...=False) (RLlib's old API stack)",
                "RLlib's new API stack, which runs here either way (the old stack's "
                "callback signatures, config keys and result keys work on it), and "
                "remove the call",
            )
        return self._set(
            "api_stack", {name: True if value is False else value for name, value in values.items()}
        )
