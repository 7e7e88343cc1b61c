# The callbacks doc's first example, imports changed.
from trainer.algorithms.ppo import PPOConfig

ppo = config = (
    PPOConfig()
    .environment("CartPole-v1")
    .callbacks(
        on_episode_end=(lambda episode, **kw: print(f"Episode done. R={episode.get_return()}"))
    )
    .build()
)
ppo.train()
ppo.stop()
