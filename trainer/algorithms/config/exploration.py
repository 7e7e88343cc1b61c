"""The `exploration()` section: whether and how the EnvRunners explore."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.core.exploration import check_exploration_config
from trainer.errors import ConfigError

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _check_exploration_config(v: Any) -> str | None:
    if isinstance(v, dict) and "type" not in v:
        return None  # updates the algorithm's default; checked merged in exploration()
    try:
        check_exploration_config(v, setting="exploration_config")
    except ValueError as error:
        return f"a valid exploration config ({error})"
    return None


#: The settings of `exploration()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
EXPLORATION_SETTINGS: dict[str, Setting] = settings_of(
    "exploration",
    {
        # {} means the algorithm's default (see `get_exploration_config`)
        "exploration_config": (
            {},
            _check_exploration_config,
            '{"type": ..., **args}: a type of '
            "trainer.core.exploration or an Exploration subclass; "
            'without "type", updates the algorithm\'s default',
        ),
    },
)


class ExplorationSection(ConfigBase):
    """Whether and how the EnvRunners explore (`exploration()`)."""

    exploration_config: dict[str, Any]

    def exploration(
        self, *, explore: bool = NotProvided, exploration_config: dict = NotProvided, **unknown: Any
    ) -> Self:
        """Whether and how the EnvRunners explore."""
        self._reject_unknown("exploration", unknown, ["explore", "exploration_config"])
        if (
            exploration_config is not NotProvided
            and isinstance(exploration_config, dict)
            and exploration_config
            and "type" not in exploration_config
        ):
            try:
                check_exploration_config(
                    {**self._default_exploration_config(), **exploration_config},
                    setting=f"{type(self).__name__}.exploration(exploration_config=...)",
                )
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        return self._set(
            "exploration", {"explore": explore, "exploration_config": exploration_config}
        )

    def _default_exploration_config(self) -> dict:
        """The algorithm's exploration when `exploration_config` is not set."""
        return {"type": "StochasticSampling", "random_timesteps": 0}

    def get_exploration_config(self) -> dict:
        """The exploration the EnvRunners use: the user's `exploration_config` if it names a
        type, else the algorithm's default updated with it."""
        if "type" in self.exploration_config:
            return dict(self.exploration_config)
        return {**self._default_exploration_config(), **self.exploration_config}

    def _validate_exploration(self, name: str) -> None:
        try:
            check_exploration_config(
                self.get_exploration_config(), setting=f"{name} exploration_config"
            )
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
