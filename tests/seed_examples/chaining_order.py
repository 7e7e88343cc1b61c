# The callbacks doc's chaining example, imports changed; the config is built and trained twice.
from callbacks import RLlibCallback
from trainer.algorithms.ppo import PPOConfig

config = PPOConfig().environment("CartPole-v1")


class MyCallbacks(RLlibCallback):
    def on_train_result(self, *, algorithm, metrics_logger, result, **kwargs):
        print("RLlibCallback subclass")


class MyDebugCallbacks(RLlibCallback):
    def on_train_result(self, *, algorithm, metrics_logger, result, **kwargs):
        print("debug subclass")


# Define the callbacks order through the config.
# Subclasses first, then individual `on_train_result` (or other events) callables:
config.callbacks(
    callbacks_class=[MyDebugCallbacks, MyCallbacks],  # <- note: debug class first
    on_train_result=[
        lambda algorithm, **kw: print("lambda 1"),
        lambda algorithm, **kw: print("lambda 2"),
    ],
)
algo = config.build()
for _ in range(2):
    algo.train()
algo.stop()
