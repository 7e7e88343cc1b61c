"""The `checkpointing()` section: when a `CheckpointManager` saves and which checkpoints it keeps."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.util.checks import int_at_least, is_bool, one_of, optional

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _is_result_key(v: Any) -> str | None:
    if isinstance(v, str) and v and all(v.split("/")):
        return None
    return 'a result key, nested with "/" (for example "env_runners/episode_return_mean")'


#: The settings of `checkpointing()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
CHECKPOINTING_SETTINGS: dict[str, Setting] = settings_of(
    "checkpointing",
    {
        # used by `checkpoints.CheckpointManager` (and the main job)
        "checkpoint_frequency": (
            0,
            int_at_least(0),
            "a CheckpointManager saves every this many iterations (0: never)",
        ),
        "num_to_keep": (
            None,
            optional(int_at_least(1)),
            "keep the best this many, plus the latest (None: all)",
        ),
        "checkpoint_score_attribute": (
            None,
            optional(_is_result_key),
            'the result key that ranks checkpoints, nested with "/"',
        ),
        "checkpoint_score_order": (
            "max",
            one_of("max", "min"),
            "which end of the score is best",
        ),
        "checkpoint_at_end": (False, is_bool, "also save after the last iteration"),
    },
)


class CheckpointingSection(ConfigBase):
    """When checkpoints are saved and kept (`checkpointing()`)."""

    checkpoint_frequency: int
    num_to_keep: int | None
    checkpoint_score_attribute: str | None
    checkpoint_score_order: str
    checkpoint_at_end: bool

    def checkpointing(
        self,
        *,
        checkpoint_frequency: int = NotProvided,
        num_to_keep: int | None = NotProvided,
        checkpoint_score_attribute: str | None = NotProvided,
        checkpoint_score_order: str = NotProvided,
        checkpoint_at_end: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """When a `checkpoints.CheckpointManager` (the main job uses one) saves, and which
        checkpoints it keeps."""
        values = {
            "checkpoint_frequency": checkpoint_frequency,
            "num_to_keep": num_to_keep,
            "checkpoint_score_attribute": checkpoint_score_attribute,
            "checkpoint_score_order": checkpoint_score_order,
            "checkpoint_at_end": checkpoint_at_end,
        }
        self._reject_unknown("checkpointing", unknown, values)
        return self._set("checkpointing", values)
