"""This project against Stable-Baselines3 on the classic-control suite, interleaved over seeds.

Tasks: PPO on CartPole-v1, Acrobot-v1, MountainCar-v0, Pendulum-v1, LunarLander-v3,
MountainCarContinuous-v0 and LunarLanderContinuous-v3; DQN on the discrete ones (CartPole-v1,
Acrobot-v1, MountainCar-v0, LunarLander-v3); SAC on the continuous ones (Pendulum-v1,
MountainCarContinuous-v0, LunarLanderContinuous-v3); TQC on Pendulum-v1 and MountainCarContinuous-v0 against
Stable-Baselines3-contrib's TQC. The LunarLander tasks need Box2D (`pip install "gymnasium[box2d]"`); without it they are left out
with a line saying so.

Settings: here the main job's preset for (algorithm, env) (`trainer/cli/presets.py`: settings
tuned here where they solve sooner than RLlib's tuned example, else RLlib's tuned example where
RLlib 2.60 ships one, else settings tuned here, labelled as such; `--preset rllib`: RLlib's
tuned example wherever it has one); for
Stable-Baselines3 rl-zoo's entry for the env (rl-baselines3-zoo `hyperparams/ppo.yml`,
`hyperparams/dqn.yml`, `hyperparams/sac.yml` and `hyperparams/tqc.yml`, copied below as data in `RL_ZOO`, with rl-zoo's
own conversions: `lin_X` is a linear schedule from X to 0, `normalize: true` wraps the envs in
`VecNormalize` with the entry's gamma, `n_envs` envs in a `DummyVecEnv`; every other key, e.g.
SAC's `use_sde`, `train_freq`, `gradient_steps`, `learning_starts`, `ent_coef` and
`policy_kwargs`, is the algorithm's keyword argument as it stands).

Targets: the mean return of the last 100 training episodes (Stable-Baselines3's
`ep_info_buffer`; here taken over the iterations' results, `ReturnWindow`, since
`episode_return_mean` covers one iteration's episodes only) at the env's usual "solved" line:
gymnasium's `reward_threshold` for Acrobot (-100), MountainCar (-110), MountainCarContinuous
(90), LunarLander and LunarLanderContinuous (200); CartPole 450 (gymnasium's 475 is meant for a
greedy evaluation; the training episodes of an exploring policy get there late and unevenly);
Pendulum -300 for PPO (gymnasium has no threshold; -300 is RLlib's stop in its tuned PPO
example) and -200 for SAC (a policy that swings up from every start). Each env-step cap is at
least twice rl-zoo's `n_timesteps` for the entry, so that Stable-Baselines3 has room to get
there, and every run also stops at a wall-clock cap (`--max-seconds`, default 600 s): a capped
run counts as not reached, and the ratio is then a bound (`>=`: Stable-Baselines3 was capped;
`<=`: this project was; `?`: both).

Each run is timed from before the algorithm is built to the iteration (or SB3 rollout) where
the target is reached. For each seed the two libraries run back to back, so the machine's drift
hits both alike.

Prints one line per run, then the table of median wall times, env steps and the ratio
(Stable-Baselines3 / this project; above 1 means this project is faster). Without
Stable-Baselines3 installed (`pip install stable-baselines3`, which pulls torch; or the
project's `compare` extra) only this project runs.

`--sb3-threads N` runs Stable-Baselines3 on N torch threads (default: torch's own, one per
core). This project's PPO updates take a second BLAS thread where it is faster (by timing),
its DQN and SAC updates run on one; on a busy machine torch's threads wait
on each other: an SB3 SAC update (Pendulum, 256x256) took 24 ms on 2 threads and 10 ms on 1
on 2 busy cores.

Run: python bench/compare.py [--seeds 0 1 2] [--tasks ppo_cartpole dqn_acrobot ...]
     [--max-seconds 600] [--sb3-threads N] [--preset fast|rllib]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Task:
    """One (algorithm, env) with the return to reach and the env steps it may take."""

    algo: str
    env: str
    target: float
    max_env_steps: int


TASKS = {
    "ppo_cartpole": Task("PPO", "CartPole-v1", 450.0, 300_000),
    "dqn_cartpole": Task("DQN", "CartPole-v1", 450.0, 200_000),
    "ppo_acrobot": Task("PPO", "Acrobot-v1", -100.0, 2_000_000),
    "dqn_acrobot": Task("DQN", "Acrobot-v1", -100.0, 200_000),
    "ppo_mountaincar": Task("PPO", "MountainCar-v0", -110.0, 2_000_000),
    "dqn_mountaincar": Task("DQN", "MountainCar-v0", -110.0, 300_000),
    "ppo_pendulum": Task("PPO", "Pendulum-v1", -300.0, 600_000),
    "ppo_lunarlander": Task("PPO", "LunarLander-v3", 200.0, 3_000_000),
    "ppo_mountaincar_continuous": Task("PPO", "MountainCarContinuous-v0", 90.0, 200_000),
    "ppo_lunarlander_continuous": Task("PPO", "LunarLanderContinuous-v3", 200.0, 3_000_000),
    "dqn_lunarlander": Task("DQN", "LunarLander-v3", 200.0, 300_000),
    "sac_pendulum": Task("SAC", "Pendulum-v1", -200.0, 60_000),
    "sac_mountaincar_continuous": Task("SAC", "MountainCarContinuous-v0", 90.0, 100_000),
    "sac_lunarlander_continuous": Task("SAC", "LunarLanderContinuous-v3", 200.0, 1_000_000),
    "tqc_pendulum": Task("TQC", "Pendulum-v1", -200.0, 60_000),
    "tqc_mountaincar_continuous": Task("TQC", "MountainCarContinuous-v0", 90.0, 100_000),
}

#: Where the Stable-Baselines3 settings come from.
RL_ZOO_SOURCE = "DLR-RM/rl-baselines3-zoo hyperparams/{algo}.yml"

#: rl-zoo's MountainCarContinuous-v0 entry, the same in `sac.yml` and `tqc.yml`.
_MOUNTAINCAR_CONTINUOUS_ZOO: dict[str, Any] = {
    "n_timesteps": 5e4,
    "policy": "MlpPolicy",
    "learning_rate": 3e-4,
    "buffer_size": 50000,
    "batch_size": 512,
    "ent_coef": 0.1,
    "train_freq": 32,
    "gradient_steps": 32,
    "gamma": 0.9999,
    "tau": 0.01,
    "learning_starts": 0,
    "use_sde": True,
    "policy_kwargs": {"log_std_init": -3.67, "net_arch": [64, 64]},
}

#: rl-zoo's entries, as in its files (`hyperparams/ppo.yml`, `hyperparams/dqn.yml`,
#: `hyperparams/sac.yml`): the keys are the file's, `policy_kwargs` written as the dict its
#: string evaluates to. An entry's missing keys are the algorithm's defaults (SAC's: a 256x256
#: actor and critics, buffer 1M, batch 256, learning_starts 100, train_freq 1,
#: gradient_steps 1, ent_coef "auto", tau 0.005, gamma 0.99).
RL_ZOO: dict[tuple[str, str], dict[str, Any]] = {
    ("PPO", "CartPole-v1"): {
        "n_envs": 8,
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "n_steps": 32,
        "batch_size": 256,
        "gae_lambda": 0.8,
        "gamma": 0.98,
        "n_epochs": 20,
        "ent_coef": 0.0,
        "learning_rate": "lin_0.001",
        "clip_range": "lin_0.2",
    },
    ("PPO", "Acrobot-v1"): {
        "normalize": True,
        "n_envs": 16,
        "n_timesteps": 1e6,
        "policy": "MlpPolicy",
        "n_steps": 256,
        "gae_lambda": 0.94,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
    ("PPO", "MountainCar-v0"): {
        "normalize": True,
        "n_envs": 16,
        "n_timesteps": 1e6,
        "policy": "MlpPolicy",
        "n_steps": 16,
        "gae_lambda": 0.98,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
    ("PPO", "Pendulum-v1"): {
        "n_envs": 4,
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "n_steps": 1024,
        "gae_lambda": 0.95,
        "gamma": 0.9,
        "n_epochs": 10,
        "ent_coef": 0.0,
        "learning_rate": 1e-3,
        "clip_range": 0.2,
        "use_sde": True,
        "sde_sample_freq": 4,
    },
    ("PPO", "LunarLander-v3"): {
        "n_envs": 16,
        "n_timesteps": 1e6,
        "policy": "MlpPolicy",
        "n_steps": 1024,
        "batch_size": 64,
        "gae_lambda": 0.98,
        "gamma": 0.999,
        "n_epochs": 4,
        "ent_coef": 0.01,
    },
    ("PPO", "MountainCarContinuous-v0"): {
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 20000,
        "policy": "MlpPolicy",
        "batch_size": 256,
        "n_steps": 8,
        "gamma": 0.9999,
        "learning_rate": 7.77e-05,
        "ent_coef": 0.00429,
        "clip_range": 0.1,
        "n_epochs": 10,
        "gae_lambda": 0.9,
        "max_grad_norm": 5,
        "vf_coef": 0.19,
        "use_sde": True,
        "policy_kwargs": {"log_std_init": -3.29, "ortho_init": False},
    },
    # rl-zoo's LunarLanderContinuous entry (written for -v2; -v3 is the same task in gymnasium).
    ("PPO", "LunarLanderContinuous-v3"): {
        "n_envs": 16,
        "n_timesteps": 1e6,
        "policy": "MlpPolicy",
        "n_steps": 1024,
        "batch_size": 64,
        "gae_lambda": 0.98,
        "gamma": 0.999,
        "n_epochs": 4,
        "ent_coef": 0.01,
    },
    ("DQN", "CartPole-v1"): {
        "n_timesteps": 5e4,
        "policy": "MlpPolicy",
        "learning_rate": 2.3e-3,
        "batch_size": 64,
        "buffer_size": 100000,
        "learning_starts": 1000,
        "gamma": 0.99,
        "target_update_interval": 10,
        "train_freq": 256,
        "gradient_steps": 128,
        "exploration_fraction": 0.16,
        "exploration_final_eps": 0.04,
        "policy_kwargs": {"net_arch": [256, 256]},
    },
    ("DQN", "MountainCar-v0"): {
        "n_timesteps": 1.2e5,
        "policy": "MlpPolicy",
        "learning_rate": 4e-3,
        "batch_size": 128,
        "buffer_size": 10000,
        "learning_starts": 1000,
        "gamma": 0.98,
        "target_update_interval": 600,
        "train_freq": 16,
        "gradient_steps": 8,
        "exploration_fraction": 0.2,
        "exploration_final_eps": 0.07,
        "policy_kwargs": {"net_arch": [256, 256]},
    },
    ("DQN", "LunarLander-v3"): {
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "learning_rate": 6.3e-4,
        "batch_size": 128,
        "buffer_size": 50000,
        "learning_starts": 0,
        "gamma": 0.99,
        "target_update_interval": 250,
        "train_freq": 4,
        "gradient_steps": -1,
        "exploration_fraction": 0.12,
        "exploration_final_eps": 0.1,
        "policy_kwargs": {"net_arch": [256, 256]},
    },
    ("DQN", "Acrobot-v1"): {
        "n_timesteps": 1e5,
        "policy": "MlpPolicy",
        "learning_rate": 6.3e-4,
        "batch_size": 128,
        "buffer_size": 50000,
        "learning_starts": 0,
        "gamma": 0.99,
        "target_update_interval": 250,
        "train_freq": 4,
        "gradient_steps": -1,
        "exploration_fraction": 0.12,
        "exploration_final_eps": 0.1,
        "policy_kwargs": {"net_arch": [256, 256]},
    },
    ("SAC", "Pendulum-v1"): {
        "n_timesteps": 20000,
        "policy": "MlpPolicy",
        "learning_rate": 1e-3,
    },
    ("SAC", "MountainCarContinuous-v0"): _MOUNTAINCAR_CONTINUOUS_ZOO,
    # rl-zoo's `hyperparams/tqc.yml` (sb3-contrib's TQC: 25 quantiles, 2 critics, the top 2
    # of each dropped, by default).
    ("TQC", "Pendulum-v1"): {
        "n_timesteps": 20000,
        "policy": "MlpPolicy",
        "learning_rate": 1e-3,
    },
    ("TQC", "MountainCarContinuous-v0"): _MOUNTAINCAR_CONTINUOUS_ZOO,
    ("SAC", "LunarLanderContinuous-v3"): {
        "n_timesteps": 5e5,
        "policy": "MlpPolicy",
        "batch_size": 256,
        "learning_rate": "lin_7.3e-4",
        "buffer_size": 1000000,
        "ent_coef": "auto",
        "gamma": 0.99,
        "tau": 0.01,
        "train_freq": 1,
        "gradient_steps": 1,
        "learning_starts": 10000,
        "policy_kwargs": {"net_arch": [400, 300]},
    },
}


def linear_schedule(initial: float) -> Callable[[float], float]:
    """rl-zoo's `lin_X`: X times the fraction of training remaining (1 -> 0)."""

    def schedule(progress_remaining: float) -> float:
        return progress_remaining * initial

    return schedule


@dataclass(frozen=True)
class Sb3Settings:
    """An rl-zoo entry split as rl-zoo splits it: the algorithm's keyword arguments, then what
    builds the vectorized env (`n_envs`, `normalize`)."""

    kwargs: dict[str, Any]
    n_envs: int
    normalize: bool


def sb3_settings(algo: str, env: str) -> Sb3Settings:
    """rl-zoo's entry for (algo, env) as Stable-Baselines3 takes it. Raises KeyError naming the
    pair when rl-zoo has none."""
    if (algo, env) not in RL_ZOO:
        raise KeyError(f"rl-zoo has no {algo} entry for {env!r} (it has: {sorted(RL_ZOO)})")
    entry = dict(RL_ZOO[algo, env])
    n_envs = int(entry.pop("n_envs", 1))
    normalize = bool(entry.pop("normalize", False))
    entry.pop("n_timesteps")  # rl-zoo's budget: the task's cap decides here
    kwargs: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, str) and value.startswith("lin_"):
            value = linear_schedule(float(value[len("lin_") :]))
        kwargs[key] = value
    return Sb3Settings(kwargs, n_envs, normalize)


#: The fewest finished episodes whose mean return counts as reaching a target (both libraries
#: average the last 100; early on, fewer).
MIN_EPISODES = 10


@dataclass
class Run:
    seconds: float
    env_steps: int
    reached: bool


#: The episodes both libraries' means are over (Stable-Baselines3's `ep_info_buffer`).
WINDOW = 100


class ReturnWindow:
    """The mean return of the last WINDOW episodes, from each iteration's results.

    This project's `episode_return_mean` averages only the episodes that ended in the
    iteration (its stats are cleared at each reduce; the smoothing window caps how many of
    them): with few episodes per iteration, as SAC's 100-step iterations end at most one
    200-step Pendulum episode, it is one lucky episode's return. Here
    each iteration's mean counts as its new episodes (`num_episodes_lifetime`'s increase),
    the oldest group cut to fit the window: exact while an iteration's episodes fit the
    EnvRunners' windows (their mean of means weighs each runner's episodes alike)."""

    def __init__(self) -> None:
        self.groups: deque[tuple[float, int]] = deque()  # (mean return, episodes)
        self.episodes = 0
        self.lifetime = 0

    def add(self, runners: dict[str, Any]) -> None:
        lifetime = int(runners.get("num_episodes_lifetime", 0))
        new, self.lifetime = lifetime - self.lifetime, lifetime
        mean = runners.get("episode_return_mean", math.nan)
        if new <= 0 or mean != mean:
            return
        self.groups.append((float(mean), new))
        self.episodes += new
        while self.episodes - self.groups[0][1] >= WINDOW:
            self.episodes -= self.groups.popleft()[1]

    def mean(self) -> float:
        """The mean over the last WINDOW episodes (all of them while fewer); -inf before the
        first."""
        if not self.groups:
            return -math.inf
        excess = max(0, self.episodes - WINDOW)  # the oldest group's episodes out of the window
        total = sum(mean * count for mean, count in self.groups)
        total -= self.groups[0][0] * excess
        return total / (self.episodes - excess)


def run_localrl(
    task: Task,
    seed: int,
    max_seconds: float,
    framework: str | None = None,
    preset_choice: str = "fast",
    start: float | None = None,
) -> Run:
    """The preset of `task` (the main job's `--preset preset_choice`; on `framework` when
    given) from before its build (or from `start`, a `time.perf_counter()` taken earlier: a
    fresh process's first statement, its imports included) until the training return reaches
    the target (or a cap)."""
    import trainer
    from trainer.cli.presets import find_preset

    start = time.perf_counter() if start is None else start
    config = getattr(trainer, f"{task.algo}Config")().environment(task.env)
    preset = find_preset(task.algo, task.env, preset_choice)
    if preset is None:
        raise KeyError(f"no preset for {task.algo} on {task.env}")
    preset.apply(config)
    if framework is not None:
        config.framework(framework)
    # The preset's evaluation runner is not needed: the target is on the training return.
    config.evaluation(
        evaluation_interval=None,
        evaluation_num_env_runners=0,
        evaluation_parallel_to_training=False,
    )
    # Each EnvRunner's window at RLlib's default (RLlib's SAC examples smooth over 5): an
    # iteration's mean then covers its episodes (see ReturnWindow).
    config.reporting(metrics_num_episodes_for_smoothing=WINDOW)
    return train_until(config.debugging(seed=seed).build(), task, start, max_seconds)


def train_until(algo: Any, task: Task, start: float, max_seconds: float) -> Run:
    """Trains `algo` until its training return reaches the task's target, its env-step cap or
    `max_seconds` after `start` (a `time.perf_counter()`), then stops it."""
    returns = ReturnWindow()
    try:
        while True:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            seconds = time.perf_counter() - start
            returns.add(result["env_runners"])
            # As for Stable-Baselines3 below: a mean over the last WINDOW episodes, at least
            # MIN_EPISODES of them.
            if returns.lifetime >= MIN_EPISODES and returns.mean() >= task.target:
                return Run(seconds, steps, True)
            if steps >= task.max_env_steps or seconds >= max_seconds:
                return Run(seconds, steps, False)
    finally:
        algo.stop()


def sb3_model(task: Task, seed: int) -> Any:
    """Stable-Baselines3's algorithm with rl-zoo's settings for the task."""
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    settings = sb3_settings(task.algo, task.env)
    kwargs = dict(settings.kwargs)
    policy = kwargs.pop("policy")
    env = make_vec_env(task.env, n_envs=settings.n_envs, seed=seed)
    if settings.normalize:
        # rl-zoo: VecNormalize with the entry's gamma (observations and rewards).
        env = VecNormalize(env, gamma=kwargs.get("gamma", 0.99))
    classes = {"PPO": PPO, "DQN": DQN, "SAC": SAC}
    if task.algo == "TQC":
        from sb3_contrib import TQC  # (the compare extra: Stable-Baselines3-contrib)

        classes["TQC"] = TQC
    cls = classes[task.algo]
    return cls(policy, env, seed=seed, device="cpu", **kwargs)


def run_sb3(task: Task, seed: int, max_seconds: float) -> Run:
    from stable_baselines3.common.callbacks import BaseCallback

    start = time.perf_counter()

    class StopAtTarget(BaseCallback):
        """Stops at the target (on the Monitor's raw returns, the last 100 episodes) or at the
        wall-clock cap."""

        reached = False

        def _on_step(self) -> bool:
            buffer = self.model.ep_info_buffer
            if buffer and len(buffer) >= MIN_EPISODES:
                mean = sum(info["r"] for info in buffer) / len(buffer)
                if mean >= task.target:
                    StopAtTarget.reached = True
                    return False
            return time.perf_counter() - start < max_seconds

    model = sb3_model(task, seed)
    model.learn(total_timesteps=task.max_env_steps, callback=StopAtTarget())
    return Run(time.perf_counter() - start, model.num_timesteps, StopAtTarget.reached)


def installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def box2d_available() -> bool:
    return installed("Box2D")


def summary(runs: list[Run]) -> str:
    reached = sum(run.reached for run in runs)
    return (
        f"{statistics.median(run.seconds for run in runs):7.1f} s "
        f"{statistics.median(run.env_steps for run in runs):9.0f} steps "
        f"({reached}/{len(runs)} reached)"
    )


def ratio_cell(ours: list[Run], theirs: list[Run]) -> str:
    """SB3's median over this project's; a bound when either side stopped at a cap."""
    if not theirs:
        return "nan"
    ratio = statistics.median(r.seconds for r in theirs) / statistics.median(
        r.seconds for r in ours
    )
    ours_capped = not all(r.reached for r in ours)
    theirs_capped = not all(r.reached for r in theirs)
    if ours_capped and theirs_capped:
        return f"?{ratio:.2f}"  # both capped: no bound either way
    # A library that stopped at the cap took at least that long.
    bound = ">=" if theirs_capped else "<=" if ours_capped else ""
    return f"{bound}{ratio:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=600.0,
        help="wall-clock cap of one run (default 600); a capped run counts as not reached",
    )
    parser.add_argument(
        "--sb3-threads",
        type=int,
        default=None,
        help="torch threads for Stable-Baselines3 (default: torch's own, one per core)",
    )
    parser.add_argument(
        "--preset",
        choices=["fast", "rllib"],
        default="fast",
        help="this project's settings: the main job's default preset (fast) or RLlib's tuned "
        "example where RLlib has one (rllib)",
    )
    args = parser.parse_args()
    with_sb3 = installed("stable_baselines3")
    if with_sb3 and args.sb3_threads is not None:
        import torch

        torch.set_num_threads(args.sb3_threads)
    if not with_sb3:
        print(
            "Stable-Baselines3 is not installed: only this project runs "
            "(pip install stable-baselines3)"
        )
    names = list(args.tasks)
    if not box2d_available():
        left_out = [name for name in names if TASKS[name].env.startswith("LunarLander")]
        if left_out:
            print(
                f"Box2D is not installed: {', '.join(left_out)} left out "
                '(pip install "gymnasium[box2d]")'
            )
        names = [name for name in names if name not in left_out]
    table = []
    for name in names:
        task = TASKS[name]
        ours, theirs = [], []
        for seed in args.seeds:
            ours.append(run_localrl(task, seed, args.max_seconds, preset_choice=args.preset))
            print(f"{name} seed {seed}: localrl {ours[-1]}", flush=True)
            if with_sb3:
                theirs.append(run_sb3(task, seed, args.max_seconds))
                print(f"{name} seed {seed}: SB3     {theirs[-1]}", flush=True)
        table.append((name, task, ours, theirs))
    print(
        f"\n{'task':<26} {'target':>7} | {'localrl (median)':<36} | "
        f"{'Stable-Baselines3 (median)':<36} | ratio SB3/localrl"
    )
    for name, task, ours, theirs in table:
        print(
            f"{name:<26} {task.target:>7g} | {summary(ours):<36} | "
            f"{summary(theirs) if theirs else 'not installed':<36} | {ratio_cell(ours, theirs)}"
        )


if __name__ == "__main__":
    main()
