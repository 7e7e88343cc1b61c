"""RLlib's example `rllib/examples/evaluation/evaluation_parallel_to_training.py` (Ray 2.60,
Apache-2.0): evaluation running in parallel to training, with a callback that asserts each
evaluation ran exactly the configured duration.

Changed from RLlib: the imports only; the driver is `trainer.testing`'s
`run_rllib_example_script_experiment`, which runs the trials through Ray Tune where Tune is
installed and real Ray is in use, else in this process (`trainer/example_scripts.py`). Run it as
`python -m trainer.examples.evaluation.evaluation_parallel_to_training [--evaluation-duration
auto] [--evaluation-parallel-to-training] [--stop-iters N]`.
"""
from typing import Optional

from trainer.metrics import TRAINING_ITERATION  # was: from ray.air.constants import ...
from trainer.algorithms.algorithm import Algorithm  # was: from ray.rllib.algorithms.algorithm import ...
from callbacks import DefaultCallbacks  # was: from ray.rllib.algorithms.callbacks import ...
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole  # was: ray.rllib....
from trainer.metrics import (  # was: from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_EPISODES,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from trainer.metrics import MetricsLogger  # was: from ray.rllib.utils.metrics.metrics_logger ...
from trainer.testing import (  # was: from ray.rllib.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)
ResultDict = dict  # was: from ray.rllib.utils.typing import ResultDict
from trainer import get_trainable_cls, register_env  # was: from ray.tune.registry import ...

parser = add_rllib_example_script_args(default_reward=500.0)
parser.set_defaults(
    evaluation_num_env_runners=2,
    evaluation_interval=1,
    evaluation_duration_unit="timesteps",
)
parser.add_argument(
    "--evaluation-parallel-to-training-wo-thread",
    action="store_true",
    help="A debugging setting that disables using a threadpool when evaluating in "
    "parallel to training. Use for testing purposes only!",
)


class AssertEvalCallback(DefaultCallbacks):
    def on_train_result(
        self,
        *,
        algorithm: Algorithm,
        metrics_logger: Optional[MetricsLogger] = None,
        result: ResultDict,
        **kwargs,
    ):
        # The eval results can be found inside the main `result` dict
        # (old API stack: "evaluation").
        eval_results = result.get(EVALUATION_RESULTS, {})
        # In there, there is a sub-key: ENV_RUNNER_RESULTS.
        eval_env_runner_results = eval_results.get(ENV_RUNNER_RESULTS)
        # Make sure we always run exactly the given evaluation duration,
        # no matter what the other settings are (such as
        # `evaluation_num_env_runners` or `evaluation_parallel_to_training`).
        if eval_env_runner_results and NUM_EPISODES in eval_env_runner_results:
            num_episodes_done = eval_env_runner_results[NUM_EPISODES]
            if algorithm.config.enable_env_runner_and_connector_v2:
                num_timesteps_reported = eval_env_runner_results[NUM_ENV_STEPS_SAMPLED]
            else:
                num_timesteps_reported = eval_results["timesteps_this_iter"]

            # We run for automatic duration (as long as training takes).
            if algorithm.config.evaluation_duration == "auto":
                # If duration=auto: Expect at least as many timesteps as workers
                # (each worker's `sample()` is at least called once).
                # UNLESS: All eval workers were completely busy during the auto-time
                # with older (async) requests and did NOT return anything from the async
                # fetch.
                assert (
                    num_timesteps_reported == 0
                    or num_timesteps_reported
                    >= algorithm.config.evaluation_num_env_runners
                )
            # We count in episodes.
            elif algorithm.config.evaluation_duration_unit == "episodes":
                # Compare number of entries in episode_lengths (this is the
                # number of episodes actually run) with desired number of
                # episodes from the config.
                assert num_episodes_done == algorithm.config.evaluation_duration, (
                    num_episodes_done,
                    algorithm.config.evaluation_duration,
                )
                print(
                    "Number of run evaluation episodes: " f"{num_episodes_done} (ok)!"
                )
            # We count in timesteps.
            else:
                num_timesteps_wanted = algorithm.config.evaluation_duration
                delta = num_timesteps_wanted - num_timesteps_reported
                # Expect roughly the same (desired // num-eval-workers).
                assert abs(delta) < 20, (
                    delta,
                    num_timesteps_wanted,
                    num_timesteps_reported,
                )
                print(
                    "Number of run evaluation timesteps: "
                    f"{num_timesteps_reported} (ok)!"
                )


if __name__ == "__main__":
    args = parser.parse_args()

    # Register our environment with tune.
    if args.num_agents > 0:
        register_env(
            "env",
            lambda _: MultiAgentCartPole(config={"num_agents": args.num_agents}),
        )

    base_config = (
        get_trainable_cls(args.algo)
        .get_default_config()
        .environment("env" if args.num_agents > 0 else "CartPole-v1")
        # Use a custom callback that asserts that we are running the
        # configured exact number of episodes per evaluation OR - in auto
        # mode - run at least as many episodes as we have eval workers.
        .callbacks(AssertEvalCallback)
        .evaluation(
            # Parallel evaluation+training config.
            # Switch on evaluation in parallel with training.
            evaluation_parallel_to_training=args.evaluation_parallel_to_training,
            # Use two evaluation workers. Must be >0, otherwise,
            # evaluation will run on a local worker and block (no parallelism).
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            # Evaluate every other training iteration (together
            # with every other call to Algorithm.train()).
            evaluation_interval=args.evaluation_interval,
            # Run for n episodes/timesteps (properly distribute load amongst
            # all eval workers). The longer it takes to evaluate, the more sense
            # it makes to use `evaluation_parallel_to_training=True`.
            # Use "auto" to run evaluation for roughly as long as the training
            # step takes.
            evaluation_duration=args.evaluation_duration,
            # "episodes" or "timesteps".
            evaluation_duration_unit=args.evaluation_duration_unit,
            # Switch off exploratory behavior for better (greedy) results.
            evaluation_config={
                "explore": False,
                "metrics_num_episodes_for_smoothing": 5,
            },
        )
        .debugging(
            _evaluation_parallel_to_training_wo_thread=(
                args.evaluation_parallel_to_training_wo_thread
            ),
        )
    )

    # Add a simple multi-agent setup.
    if args.num_agents > 0:
        base_config.multi_agent(
            policies={f"p{i}" for i in range(args.num_agents)},
            policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}",
        )

    stop = {
        TRAINING_ITERATION: args.stop_iters,
        f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": (
            args.stop_reward
        ),
        NUM_ENV_STEPS_SAMPLED_LIFETIME: args.stop_timesteps,
    }

    run_rllib_example_script_experiment(
        base_config,
        args,
        stop=stop,
        success_metric={
            f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": (
                args.stop_reward
            ),
        },
    )
