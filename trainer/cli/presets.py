"""Presets for the main job, as rl-zoo keeps its hyperparameters: RLlib's own tuned-example
settings where RLlib 2.60 ships one, else settings tuned here, labelled as such.

`python -m trainer` applies the preset of (algorithm, env) and says on its first line where it
came from: the RLlib file, or "tuned here"; `--preset none` keeps RLlib's plain defaults. Where
settings tuned here solve sooner than RLlib's tuned example for the same task (an algorithm's
`faster_presets`), they are the default (`--preset fast`) and RLlib's example is
`--preset rllib`.
Settings are data (builder method -> keyword arguments); everything a preset does not set is
the algorithm's default, as in RLlib. What RLlib's example scripts' own command-line defaults
set (`add_rllib_example_script_args`) is left as RLlib's default here too:
`num_env_runners=2`, one learner, no GPU.

RLlib 2.60 has tuned examples for PPO and DQN on CartPole-v1 and for PPO on Pendulum-v1
(`rllib/tuned_examples/ppo/`, `rllib/tuned_examples/dqn/`); none for Acrobot-v1,
MountainCar-v0 or LunarLander-v3. Those have presets tuned here on this project (PPO, and DQN
since their actions are discrete), to reach gymnasium's reward threshold (Acrobot -100,
MountainCar -110, LunarLander 200) within a minute on two cores: `bench/compare.py` times
them against Stable-Baselines3. DQN on Pendulum has none (its actions are continuous).
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.presets import Preset
from trainer.algorithms.registry import entries

#: The `--preset` choices: the fastest preset known (the default), RLlib's tuned example (else
#: the preset tuned here), none.
PRESET_FAST = "fast"
PRESET_RLLIB = "rllib"
PRESET_NONE = "none"


def _all_presets(field: str) -> dict[tuple[str, str], Preset]:
    """(algorithm, env) -> preset, from every registered algorithm's `field` (`presets` or
    `faster_presets`), grouped by env (in the order the envs first appear, each env's
    algorithms in registry order)."""
    found = {
        (entry.name, env): preset
        for entry in entries()
        for env, preset in getattr(entry, field).items()
    }
    envs = list(dict.fromkeys(env for _, env in found))
    return {key: found[key] for env in envs for key in found if key[1] == env}


#: (algorithm, env) -> preset: the registered algorithms' presets (RLlib's tuned examples
#: where RLlib has one).
PRESETS: dict[tuple[str, str], Preset] = _all_presets("presets")
#: (algorithm, env) -> preset tuned here that solves sooner than the one in PRESETS.
FASTER_PRESETS: dict[tuple[str, str], Preset] = _all_presets("faster_presets")


def find_preset(algo: str, env: Any, choice: str = PRESET_FAST) -> Preset | None:
    """The preset of (algo, env) for `--preset choice` (fast: the faster preset tuned here
    where there is one, else as rllib; rllib: RLlib's tuned example, else the preset tuned
    here), None when there is none (`none`, or an env given as a class)."""
    if not isinstance(env, str) or choice == PRESET_NONE:
        return None
    if choice == PRESET_FAST and (algo, env) in FASTER_PRESETS:
        return FASTER_PRESETS[algo, env]
    return PRESETS.get((algo, env))


def other_choices(algo: str, env: Any, choice: str) -> str:
    """The header's note on the other `--preset` choices for (algo, env)."""
    if not isinstance(env, str) or (algo, env) not in FASTER_PRESETS:
        return "--preset none for RLlib's defaults"
    if choice == PRESET_FAST:
        return (
            f"--preset rllib for RLlib's tuned example {PRESETS[algo, env].source}, "
            "--preset none for RLlib's defaults"
        )
    return "--preset fast for the faster settings tuned here, --preset none for RLlib's defaults"


def no_preset_line(algo: str, env: Any) -> str:
    """The CLI's first line when (algo, env) has no preset."""
    known = ", ".join(f"{a} on {e}" for a, e in PRESETS)
    return (
        f"no preset: neither RLlib 2.60 nor this project has tuned settings for {algo} on "
        f"{env!r} (presets: {known}); RLlib's default settings"
    )
