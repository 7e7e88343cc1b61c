# The callbacks doc's "Example 1: on_train_result", as written but for the import and the
# learning starting after 3000 sampled steps, not 1000 (the test checks the buffer written, not
# the learning; the last iteration still trains).
import ormsgpack

from trainer.algorithms.dqn import DQNConfig


def _write_buffer_if_necessary(algorithm, metrics_logger, result):
    # Write the buffer contents only every ith iteration.
    if algorithm.training_iteration % 2 == 0:
        # python dict
        buffer_contents = algorithm.local_replay_buffer.get_state()

        # binary
        msgpacked = ormsgpack.packb(
            buffer_contents,
            option=ormsgpack.OPT_SERIALIZE_NUMPY,
        )

        # Open some file and write the buffer contents into it using `ormsgpack`.
        with open("replay_buffer_contents.msgpack", "wb") as f:
            f.write(msgpacked)


config = (
    DQNConfig()
    .environment("CartPole-v1")
    .callbacks(
        on_train_result=_write_buffer_if_necessary,
    )
    .training(num_steps_sampled_before_learning_starts=3000)
)
dqn = config.build()

# Train n times. Expect buffer to be written every ith iteration.
for _ in range(4):
    print(dqn.train())
