"""The `offline_data()` section: offline RL is not supported here; samples come from envs."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class OfflineDataSection(ConfigBase):
    """RLlib's offline-data settings (`offline_data()`)."""

    def offline_data(self, **settings: Any) -> Self:
        """RLlib's offline-data settings (`input_`, `output`, the Ray Data read and write
        options, ...): offline RL is not supported here. RLlib's defaults (sample from the env,
        write nothing) are accepted; reading or writing recorded data is refused at the call,
        and the other options warn at build when set."""
        self._reject_unknown("offline_data", settings, [])
        return self

    @property
    def is_online(self) -> bool:
        """Samples come from envs (always here: offline data is not supported)."""
        return True

    @property
    def is_offline(self) -> bool:
        return False
