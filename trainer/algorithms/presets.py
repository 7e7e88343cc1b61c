"""A preset for the main job (`python -m trainer`): where its settings came from (an RLlib
tuned example, or tuned here), the settings as data (builder method -> keyword arguments) and
its stop criteria. Each algorithm's folder holds its presets (`presets.py`, env name -> Preset),
registered through its `AlgorithmEntry`; `trainer.cli.presets` looks them up."""

from __future__ import annotations

import dataclasses
from typing import Any

from trainer.connectors import MeanStdFilter


def mean_std_filter(env: Any = None, spaces: Any = None, device: Any = None) -> MeanStdFilter:
    """RLlib's `lambda env, spaces, device: MeanStdFilter()`, as a named function so that the
    config pickles by reference."""
    return MeanStdFilter()


#: A preset's `source` when RLlib has no tuned example for it: its settings were tuned here.
TUNED_HERE = "tuned here"


@dataclasses.dataclass(frozen=True)
class Preset:
    """One preset: where it came from, its settings and its stop criteria."""

    #: The RLlib file in ray-project/ray it copies, or TUNED_HERE.
    source: str
    settings: dict[str, dict[str, Any]]  # builder method -> keyword arguments
    stop_reward: float  # the reward to stop at (RLlib's stop for its tuned examples)
    stop_timesteps: int  # the env-step budget (the script's default_timesteps)
    #: For settings tuned here that solve the task sooner than RLlib's tuned example for the
    #: same (algorithm, env): that example's file (the main job's `--preset rllib`).
    faster_than: str = ""

    @property
    def tuned_here(self) -> bool:
        """Whether the settings were tuned on this project (RLlib has no tuned example)."""
        return self.source == TUNED_HERE

    @property
    def evaluates(self) -> bool:
        """Whether the preset evaluates every iteration (its stop is then the evaluation's)."""
        return bool(self.settings.get("evaluation", {}).get("evaluation_interval"))

    def apply(self, config: Any) -> None:
        """Calls the config's builder methods with the preset's settings."""
        for method, kwargs in self.settings.items():
            getattr(config, method)(**kwargs)

    def describe(self) -> str:
        """Where the preset came from, then its settings."""
        shown = ", ".join(
            f"{key}={value!r}" if not callable(value) else f"{key}={value.__name__}"
            for kwargs in self.settings.values()
            for key, value in kwargs.items()
        )
        if self.faster_than:
            return (
                f"tuned here for time to solve (sooner than RLlib's tuned example "
                f"{self.faster_than}): {shown}"
            )
        if self.tuned_here:
            return f"tuned here (RLlib 2.60 has no tuned example for it): {shown}"
        return f"RLlib's tuned example {self.source}: {shown}"
