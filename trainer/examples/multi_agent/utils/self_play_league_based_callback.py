"""RLlib's `SelfPlayLeagueBasedCallback` (AlphaStar's league, small): main policies, main
exploiters and league exploiters, some trainable and some frozen.

The league starts as "main" (trainable) against frozen "main_0", "main_exploiter_0" and
"league_exploiter_0" (the example makes the last two random modules). The EnvRunners log
`win_rate_<module>` for games between one trainable and one frozen module. When a trainable
module's win rate passes `win_rate_threshold`:

- the first time it is main's: "league_exploiter_1" and "main_exploiter_1" become trainable,
  and they and "main_0" take main's weights;
- otherwise a copy of the module joins the league (frozen; an exploiter's copy stays
  trainable with probability 0.3).

Then every EnvRunner gets the new matchmaking (a league exploiter against any module of the
other kind, a main exploiter against main or a frozen main) and every learner the new set of
trainable modules. Results get `league_size`, which RLlib's example stops on.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pprint import pprint
from typing import Any

import numpy as np

from trainer.callbacks import RLlibCallback
from trainer.core.rl_module import RLModuleSpec

ENV_RUNNER_RESULTS = "env_runners"


class SelfPlayLeagueBasedCallback(RLlibCallback):
    def __init__(self, win_rate_threshold: float):
        super().__init__()
        self.main_policies = {"main", "main_0"}
        self.main_exploiters = {"main_exploiter_0", "main_exploiter_1"}
        self.league_exploiters = {"league_exploiter_0", "league_exploiter_1"}
        self.trainable_policies = {"main"}
        self.non_trainable_policies = {"main_0", "league_exploiter_0", "main_exploiter_0"}
        self.win_rate_threshold = win_rate_threshold
        self.win_rates: dict[str, float] = {}
        self._matching_stats: defaultdict[tuple[str, str], int] = defaultdict(int)

    def on_episode_end(
        self, *, episode: Any, env_runner: Any = None, metrics_logger: Any = None, **kwargs: Any
    ) -> None:
        """Logs each module's win in a game of one trainable against one frozen module."""
        trainable = env_runner.config.policies_to_train
        learning = sum(episode.module_for(aid) in trainable for aid in (0, 1))
        if learning == 0:
            raise AssertionError(
                f"agent 0 -> {episode.module_for(0)}, agent 1 -> {episode.module_for(1)}: "
                f"two frozen modules matched (policies_to_train={trainable})"
            )
        if learning == 1:
            for aid, rewards in episode.get_rewards().items():
                won = rewards[-1] == 1.0
                metrics_logger.log_value(
                    f"win_rate_{episode.module_for(aid)}", won, reduce="mean", window=100
                )

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        """Grows the league for each trainable module past the threshold (module doc)."""
        changed = False
        runner_results = result[ENV_RUNNER_RESULTS]
        for key in [k for k in runner_results if k.startswith("win_rate_")]:
            module_id = key[len("win_rate_") :]
            self.win_rates[module_id] = runner_results[key]
            if module_id in self.non_trainable_policies:
                continue
            print(
                f"Iter={algorithm.iteration} {module_id}'s win-rate="
                f"{self.win_rates[module_id]} -> ",
                end="",
            )
            if self.win_rates[module_id] <= self.win_rate_threshold:
                print("not good enough; will keep learning ...")
                continue
            self._grow(algorithm, module_id)
            changed = True
        result["league_size"] = len(self.non_trainable_policies) + len(self.trainable_policies)
        if changed:
            self._print_league()

    def _grow(self, algorithm: Any, module_id: str) -> None:
        is_main = re.match(r"^main(_\d+)?$", module_id) is not None
        multi_rl_module = algorithm.env_runner.module
        if is_main and len(self.trainable_policies) == 1:
            # Main beats random: the exploiters start training, from main's weights.
            self.trainable_policies |= {"league_exploiter_1", "main_exploiter_1"}
            main_state = multi_rl_module["main"].get_state()
            for copy in ("main_0", "league_exploiter_1", "main_exploiter_1"):
                multi_rl_module[copy].set_state(main_state)
            algorithm.env_runner_group.sync_weights(
                policies=["main_0", "league_exploiter_1", "main_exploiter_1"]
            )
            algorithm.learner_group.set_weights(multi_rl_module.get_state())
        else:
            keep_training = (not is_main) and bool(np.random.choice([True, False], p=[0.3, 0.7]))
            new_id = self._new_member(module_id)
            (self.trainable_policies if keep_training else self.non_trainable_policies).add(new_id)
            print(f"adding new opponents to the mix ({new_id}).")
            algorithm.add_module(
                module_id=new_id,
                module_spec=RLModuleSpec.from_module(multi_rl_module["main"]),
            )
            state = multi_rl_module[module_id].get_state()
            algorithm.set_state({"learner_group": {"learner": {"rl_module": {new_id: state}}}})
        mapping_fn = self._mapping_fn()
        trainable = set(self.trainable_policies)
        algorithm.env_runner_group.foreach_env_runner(
            lambda env_runner: env_runner.config.multi_agent(
                policy_mapping_fn=mapping_fn, policies_to_train=trainable
            ),
            local_env_runner=True,
        )
        algorithm.learner_group.foreach_learner(
            func=lambda learner: learner.config.multi_agent(policies_to_train=trainable),
            timeout_seconds=0.0,
        )

    def _new_member(self, module_id: str) -> str:
        """The id of a copy of `module_id`, added to its group."""
        if module_id in self.main_policies:
            new_id = re.sub(r"(main)(_\d+)?$", rf"\1_{len(self.main_policies) - 1}", module_id)
            self.main_policies.add(new_id)
        elif module_id in self.main_exploiters:
            new_id = re.sub(r"_\d+$", f"_{len(self.main_exploiters)}", module_id)
            self.main_exploiters.add(new_id)
        else:
            new_id = re.sub(r"_\d+$", f"_{len(self.league_exploiters)}", module_id)
            self.league_exploiters.add(new_id)
        return new_id

    def _mapping_fn(self) -> Any:
        """Matchmaking: each game draws its kind, then one exploiter (kept for the game's two
        agents) and its opponent; the exploiter plays first in half the games."""
        trainable = set(self.trainable_policies)
        frozen = set(self.non_trainable_policies)
        league_exploiters = len(self.league_exploiters)
        main_exploiters = len(self.main_exploiters)
        frozen_mains = sorted(self.main_policies - {"main"})
        stats = self._matching_stats
        game: dict[str, Any] = {"calls": 0, "exploiter": None, "kind": None}

        def agent_to_module_mapping_fn(agent_id: Any, episode: Any, **kwargs: Any) -> str:
            if game["calls"] >= 2:  # a new game: two calls per game, one per agent
                game.update(calls=0, exploiter=None, kind=None)
            game["calls"] += 1
            if game["kind"] is None:
                game["kind"] = int(np.random.choice([1, 2]))
            if game["kind"] == 1:  # a league exploiter against any module of the other kind
                if game["exploiter"] is None:
                    game["exploiter"] = f"league_exploiter_{np.random.randint(league_exploiters)}"
                pool = trainable if game["exploiter"] not in trainable else frozen
                opponent = str(np.random.choice(sorted(pool)))
            else:  # a main exploiter against main, or a frozen main while it trains
                if game["exploiter"] is None:
                    game["exploiter"] = f"main_exploiter_{np.random.randint(main_exploiters)}"
                if game["exploiter"] not in trainable:
                    opponent = "main"
                else:
                    opponent = str(np.random.choice(frozen_mains))
            if hash(episode.id_) % 2 == agent_id:
                stats[(game["exploiter"], opponent)] += 1
                return game["exploiter"]
            return opponent

        return agent_to_module_mapping_fn

    def _print_league(self) -> None:
        print("--- League ---")
        print("Matchups:")
        pprint(dict(self._matching_stats))
        for title, members in (
            ("Trainable policies (win-rates):", self.trainable_policies),
            ("Frozen policies:", self.non_trainable_policies),
        ):
            print(title)
            for module_id in sorted(members):
                print(f"\t{module_id}: {self.win_rates.get(module_id, 0.0)}")
        print()
