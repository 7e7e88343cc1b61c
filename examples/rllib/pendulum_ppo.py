"""RLlib's tuned example `rllib/tuned_examples/ppo/pendulum_ppo.py` (Ray 2.60).

Changed from RLlib: the imports, and Tune's `run_rllib_example_script_experiment` replaced by a
plain `train()` loop with the same stop criteria (`--stop-reward`, `--stop-timesteps`,
`--stop-iters`). The config is as written in RLlib.
"""

import argparse

from trainer.algorithms.ppo import PPOConfig  # was: from ray.rllib.algorithms.ppo import PPOConfig
from trainer.connectors.env_to_module import MeanStdFilter  # was: ray.rllib.connectors.env_to_module
from trainer.core.models import DefaultModelConfig  # was: ray.rllib.core.rl_module.default_model_config

parser = argparse.ArgumentParser()
parser.add_argument("--stop-reward", type=float, default=-300.0)
parser.add_argument("--stop-timesteps", type=int, default=400_000)
parser.add_argument("--stop-iters", type=int, default=10_000)
parser.add_argument("--num-learners", type=int, default=0)
args = parser.parse_args()

config = (
    PPOConfig()
    .environment("Pendulum-v1")
    .env_runners(
        num_env_runners=2,
        num_envs_per_env_runner=20,
        env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
    )
    .training(
        train_batch_size_per_learner=1024,
        minibatch_size=128,
        lr=0.0002 * (args.num_learners or 1) ** 0.5,
        gamma=0.95,
        lambda_=0.5,
    )
    .rl_module(
        model_config=DefaultModelConfig(fcnet_activation="relu"),
    )
)


if __name__ == "__main__":
    algo = config.build()
    try:
        for _ in range(args.stop_iters):
            result = algo.train()
            runners = result["env_runners"]
            print(f"iter {result['training_iteration']:4d}  steps "
                  f"{result['num_env_steps_sampled_lifetime']:7d}  return "
                  f"{runners['episode_return_mean']:8.1f}", flush=True)
            if (runners["episode_return_mean"] >= args.stop_reward
                    or result["num_env_steps_sampled_lifetime"] >= args.stop_timesteps):
                break
    finally:
        algo.stop()
