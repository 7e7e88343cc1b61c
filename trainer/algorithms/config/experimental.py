"""The `experimental()` section: torch lr schedulers; RLlib's other switches are accepted
without effect."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _check_lr_scheduler_classes(v: Any) -> str | None:
    """None, or callables (optimizer) -> torch lr scheduler: a list, or a dict of lists by
    module id (RLlib's `_torch_lr_scheduler_classes`)."""
    allowed = (
        "None, a list of torch lr scheduler classes (or functools.partial of them: "
        "called with the optimizer), or a dict {module_id: such a list}"
    )
    if v is None:
        return None
    lists = list(v.values()) if isinstance(v, dict) else [v]
    if isinstance(v, dict) and not all(isinstance(key, str) for key in v):
        return allowed
    for entry in lists:
        if not isinstance(entry, (list, tuple)) or not all(callable(f) for f in entry):
            return allowed
    return None


#: The settings of `experimental()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
EXPERIMENTAL_SETTINGS: dict[str, Setting] = settings_of(
    "experimental",
    {
        "_torch_lr_scheduler_classes": (
            None,
            _check_lr_scheduler_classes,
            "torch lr schedulers chained over each optimizer (classes or "
            "functools.partial of them, a list or {module_id: list}), stepped after "
            "each update; it makes the run torch's",
        ),
    },
)


class ExperimentalSection(ConfigBase):
    """RLlib's experimental switches (`experimental()`)."""

    _torch_lr_scheduler_classes: list | dict | None

    def experimental(
        self,
        *,
        _torch_lr_scheduler_classes: list | dict | None = NotProvided,
        **settings: Any,
    ) -> Self:
        """RLlib's experimental switches: `_torch_lr_scheduler_classes` is a setting; the others
        are accepted without effect (warned at build where set to another value than RLlib's
        default)."""
        self._reject_unknown("experimental", settings, ["_torch_lr_scheduler_classes"])
        return self._set(
            "experimental", {"_torch_lr_scheduler_classes": _torch_lr_scheduler_classes}
        )
