"""RLlib's example RLModule classes (`ray.rllib.examples.rl_modules.classes`) that need no
torch: `RandomRLModule` (and `StatefulRandomRLModule`) in `random_rlm`, and the
rock-paper-scissors heuristics `AlwaysSameHeuristicRLM` and `BeatLastHeuristicRLM` in
`rock_paper_scissors_heuristic_rlm`."""

from trainer.examples.rl_modules.classes.random_rlm import RandomRLModule, StatefulRandomRLModule
from trainer.examples.rl_modules.classes.rock_paper_scissors_heuristic_rlm import (
    AlwaysSameHeuristicRLM,
    BeatLastHeuristicRLM,
)

__all__ = [
    "AlwaysSameHeuristicRLM",
    "BeatLastHeuristicRLM",
    "RandomRLModule",
    "StatefulRandomRLModule",
]
