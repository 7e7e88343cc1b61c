# The advanced-API doc's third curriculum example (on_train_result), imports changed. Tune's
# Tuner("PPO", param_space=...).fit() becomes PPO(config=param_space) trained for 3 iterations
# (the third is the first on the top task, where the curriculum stays), of one SGD epoch each,
# not 30 (the test checks the returns and tasks, not the learning).
import gymnasium as gym
import numpy as np

from callbacks import DefaultCallbacks
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


class MyCallbacks(DefaultCallbacks):
    def on_train_result(self, algorithm, result, **kwargs):
        if result["episode_reward_mean"] > 200:
            task = 2
        elif result["episode_reward_mean"] > 100:
            task = 1
        else:
            task = 0
        algorithm.workers.foreach_worker(lambda ev: ev.foreach_env(lambda env: env.set_task(task)))
        print(f"episode_reward_mean={result['episode_reward_mean']:.1f} task={task}")


algo = PPO(
    config={
        "env": YourEnv,
        "callbacks": MyCallbacks,
        "num_epochs": 1,
    }
)
for _ in range(3):
    algo.train()
algo.stop()
