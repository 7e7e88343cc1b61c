# The advanced-API doc's env_task_fn example, imports changed; "Train using Algorithm.train()
# and the above config stub". MyEnv is filled in: 20-step episodes, each step rewarded
# 1 / (1 + difficulty), so the returns show the task; one SGD epoch per iteration, not 30
# (the test checks the tasks, not the learning).
import gymnasium as gym
import numpy as np

from trainer import TaskSettableEnv
from trainer.algorithms.ppo import PPO


class MyEnv(TaskSettableEnv):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.current_difficulty = 0
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        self.episode_difficulty = self.current_difficulty
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = 1.0 / (1 + self.episode_difficulty)
        return np.zeros(1, np.float32), reward, False, self.t >= 20, {}

    def get_task(self):
        return self.current_difficulty

    def set_task(self, task):
        self.current_difficulty = task


def curriculum_fn(train_results, task_settable_env, env_ctx):
    # Very simple curriculum function.
    current_task = task_settable_env.get_task()
    new_task = current_task + 1
    return new_task


# Setup your Algorithm's config like so:
config = {
    "env": MyEnv,
    "env_task_fn": curriculum_fn,
    "num_epochs": 1,
}
# Train using `Tuner.fit()` or `Algorithm.train()` and the above config stub.
algo = PPO(config=config)
for _ in range(3):
    result = algo.train()
    tasks = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.foreach_env(lambda env: env.get_task()), local_env_runner=False
    )
    print(
        f"iteration {result['training_iteration']} "
        f"return {result['env_runners']['episode_return_max']:.3f} tasks {tasks}"
    )
algo.stop()
