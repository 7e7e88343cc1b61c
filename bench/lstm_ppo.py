"""Recurrent PPO: RLlib's tuned `stateless_cartpole_ppo.py` to its target.

StatelessCartPole (CartPole without the velocities: a memoryless policy cannot balance it) with
RLlib's tuned settings: `framework("torch")`, the default module with `use_lstm=True`,
`vf_share_layers=True`, `max_seq_len=20` (RLlib's defaults otherwise: fcnet [256, 256],
lstm_cell_size 256), a MeanStdFilter on the observations, lr 3e-4, 6 epochs, vf_loss_coeff 0.05,
3 EnvRunners. Stop when `env_runners/episode_return_mean` reaches RLlib's target (350) or the
step or time budget runs out. Wall time includes the build.

`--small` trains a smaller network (fcnet [64], lstm_cell_size 64) with the same settings
otherwise, a quick check that the recurrent path learns.

Run: python bench/lstm_ppo.py [--seeds 0 1 2] [--max-steps 2000000] [--max-seconds 1800] [--small]
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainer import PPOConfig
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.examples.envs.classes.stateless_cartpole import StatelessCartPole

#: RLlib's `default_reward` and `default_timesteps` in the tuned example.
STOP_RETURN = 350.0
STOP_ENV_STEPS = 2_000_000


def tuned_config(seed: int, *, small: bool = False) -> PPOConfig:
    """RLlib's tuned_examples/ppo/stateless_cartpole_ppo.py."""
    model_config: dict = {"vf_share_layers": True, "use_lstm": True, "max_seq_len": 20}
    if small:
        model_config.update(fcnet_hiddens=[64], lstm_cell_size=64)
    return (
        PPOConfig()
        .environment(StatelessCartPole)
        .framework("torch")
        .env_runners(num_env_runners=3, env_to_module_connector=lambda env: MeanStdFilter())
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.05)
        .rl_module(model_config=model_config)
        .debugging(seed=seed)
    )


def train_to_stop(
    seed: int, *, small: bool, max_steps: int, max_seconds: float
) -> tuple[float, float, int, bool]:
    """(seconds including the build, best return, env steps, whether the target was reached)."""
    start = time.perf_counter()
    algo = tuned_config(seed, small=small).build()
    best = float("-inf")
    try:
        while True:
            result = algo.train()
            episode_return = result["env_runners"].get("episode_return_mean", float("nan"))
            best = max(best, episode_return)
            steps = result["num_env_steps_sampled_lifetime"]
            elapsed = time.perf_counter() - start
            print(f"  seed {seed}: {steps} env steps, return {episode_return:.1f}, {elapsed:.0f} s")
            if episode_return >= STOP_RETURN:
                return elapsed, best, steps, True
            if steps >= max_steps or elapsed >= max_seconds:
                return elapsed, best, steps, False
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-steps", type=int, default=STOP_ENV_STEPS)
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    times = []
    for seed in args.seeds:
        seconds, best, steps, reached = train_to_stop(
            seed, small=args.small, max_steps=args.max_steps, max_seconds=args.max_seconds
        )
        times.append(seconds if reached else float("inf"))
        print(
            f"seed {seed}: best return {best:.0f} after {steps} env steps in {seconds:.1f} s "
            f"(build included){'' if reached else ' (target not reached)'}"
        )
    print(
        f"median {statistics.median(times):.1f} s to return {STOP_RETURN:.0f} "
        f"({'small network' if args.small else 'RLlib tuned network'}, 2 cores shared)"
    )


if __name__ == "__main__":
    main()
