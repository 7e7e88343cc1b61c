"""The `resources()` section: RLlib's resource settings, without effect on one machine."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class ResourcesSection(ConfigBase):
    """RLlib's resource settings (`resources()`)."""

    def resources(self, **settings: Any) -> Self:
        """RLlib's resource settings (`num_gpus`, `placement_strategy`, ...): no effect on one
        machine; values other than RLlib's defaults warn at build."""
        self._reject_unknown("resources", settings, [])
        return self
