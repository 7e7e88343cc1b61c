# The callbacks doc's stateful RLlibCallback example, imports changed.
from callbacks import RLlibCallback
from trainer.algorithms.ppo import PPOConfig


class EpisodeReturn(RLlibCallback):
    def __init__(self):
        super().__init__()
        # Keep some global state in between individual callback events.
        self.overall_sum_of_rewards = 0.0

    def on_episode_end(self, *, episode, **kwargs):
        self.overall_sum_of_rewards += episode.get_return()
        print(f"Episode done. R={episode.get_return()} Global SUM={self.overall_sum_of_rewards}")


ppo = PPOConfig().environment("CartPole-v1").callbacks(EpisodeReturn).build()
ppo.train()
ppo.stop()
