"""RLlib's `SelfPlayCallback`: "main" plays a two-player game against "random" at first; each
time its win rate passes `win_rate_threshold`, a frozen copy of it (`main_v1`, `main_v2`, ...)
joins the league, and "main" plays the frozen copies from then on.

Results get `league_size` (main, random and the copies), which RLlib's example stops on; the
EnvRunners log `win_rate` (main's wins over the last 100 games)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from trainer.callbacks import RLlibCallback
from trainer.core.rl_module import RLModuleSpec

ENV_RUNNER_RESULTS = "env_runners"


class SelfPlayCallback(RLlibCallback):
    def __init__(self, win_rate_threshold: float):
        super().__init__()
        #: 0: "random"; n: the n-th frozen copy of "main".
        self.current_opponent = 0
        self.win_rate_threshold = win_rate_threshold
        #: (module, opponent) -> games, as the mapping function assigns them.
        self._matching_stats: defaultdict[tuple[str, str], int] = defaultdict(int)

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        """Logs whether "main" won this game (its last reward is 1)."""
        main_agent = 0 if episode.module_for(0) == "main" else 1
        rewards = episode.get_rewards()
        if main_agent in rewards:
            won = rewards[main_agent][-1] == 1.0
            metrics_logger.log_value("win_rate", won, reduce="mean", window=100)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        """Adds a frozen copy of "main" once its win rate passes the threshold."""
        win_rate = result[ENV_RUNNER_RESULTS].get("win_rate", 0.0)
        print(f"Iter={algorithm.iteration} win-rate={win_rate} -> ", end="")
        if win_rate > self.win_rate_threshold:
            self.current_opponent += 1
            new_module_id = f"main_v{self.current_opponent}"
            print(f"adding new opponent to the mix ({new_module_id}).")
            main_module = algorithm.get_module("main")
            algorithm.add_module(
                module_id=new_module_id,
                module_spec=RLModuleSpec.from_module(main_module),
                new_agent_to_module_mapping_fn=self._mapping_fn(),
            )
            algorithm.set_state(
                {
                    "learner_group": {
                        "learner": {"rl_module": {new_module_id: main_module.get_state()}}
                    }
                }
            )
        else:
            print("not good enough; will keep learning ...")
        result["league_size"] = self.current_opponent + 2
        print(f"Matchups:\n{dict(self._matching_stats)}")

    def _mapping_fn(self) -> Any:
        """Main against a frozen copy drawn at random; main plays first in half the games
        (by the episode id)."""
        copies = self.current_opponent
        stats = self._matching_stats

        def agent_to_module_mapping_fn(agent_id: Any, episode: Any, **kwargs: Any) -> str:
            opponent = f"main_v{np.random.choice(range(1, copies + 1))}"
            if hash(episode.id_) % 2 == agent_id:
                stats[("main", opponent)] += 1
                return "main"
            return opponent

        return agent_to_module_mapping_fn
