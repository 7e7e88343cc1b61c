# The advanced-API doc's global coordination example, imports changed (`ray` is localrl's
# named objects). The env increments the counter on every step; the driver reads it. One SGD
# epoch per iteration, not 30 (the test checks the counts, not the learning).
import gymnasium as gym

from trainer import named_objects as ray
from trainer.algorithms.ppo import PPOConfig


@ray.remote
class Counter:
    def __init__(self):
        self.count = 0

    def inc(self, n):
        self.count += n

    def get(self):
        return self.count


# on the driver
counter = Counter.options(name="global_counter").remote()
print(ray.get(counter.get.remote()))  # get the latest count


class CountingCartPole(gym.Wrapper):
    def __init__(self, config):
        super().__init__(gym.make("CartPole-v1"))

    def step(self, action):
        # in your envs
        counter = ray.get_actor("global_counter")
        counter.inc.remote(1)  # async call to increment the global count
        return self.env.step(action)


algo = PPOConfig().environment(CountingCartPole).training(num_epochs=1).build()
for _ in range(2):
    result = algo.train()
    print(
        f"count={ray.get(counter.get.remote())} "
        f"env_steps={result['num_env_steps_sampled_lifetime']}"
    )
algo.stop()
