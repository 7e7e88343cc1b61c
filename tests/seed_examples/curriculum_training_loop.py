# The advanced-API doc's second curriculum example (the Algorithm API between train() calls),
# imports changed. Tune's function trainable becomes the same loop in plain Python: `train_fn`
# stops after 3 iterations (the third is the first on the top task, where the curriculum stays)
# instead of when Tune stops it, and prints what it would report.
# YourEnv is filled in: 50-step episodes rewarded 3 + 2 * task per step (150, 250, 350). One SGD
# epoch per iteration, not 30 (the test checks the returns and tasks, not the learning).
import gymnasium as gym
import numpy as np

from trainer import TaskSettableEnv
from trainer.algorithms.ppo import PPO


class YourEnv(TaskSettableEnv):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.task = 0
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        self.episode_task = self.task
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 3.0 + 2.0 * self.episode_task, False, self.t >= 50, {}

    def get_task(self):
        return self.task

    def set_task(self, task):
        self.task = task


def train_fn(config):
    algo = PPO(config=config, env=YourEnv)
    for _ in range(3):  # Tune's stop criterion
        result = algo.train()
        print(f"report: episode_reward_mean={result['episode_reward_mean']:.1f}")
        if result["episode_reward_mean"] > 200:
            task = 2
        elif result["episode_reward_mean"] > 100:
            task = 1
        else:
            task = 0
        algo.workers.foreach_worker(lambda ev: ev.foreach_env(lambda env: env.set_task(task)))  # noqa: B023 (as in the doc; runs at once)
        print(f"task={task}")
    algo.stop()


num_gpus = 0
num_workers = 2

train_fn(
    {
        "num_gpus": num_gpus,
        "num_workers": num_workers,
        "num_epochs": 1,
    }
)
