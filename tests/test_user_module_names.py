"""A user's own `callbacks.py` and `checkpoints.py` next to their script (common names in RLlib
projects) cannot break `import trainer`: the trainer imports its own code only from inside the
`trainer` package; the top-level `callbacks` and `checkpoints` packages are public aliases."""

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow
def test_a_users_callbacks_py_and_checkpoints_py_do_not_shadow_the_trainer(tmp_path):
    (tmp_path / "callbacks.py").write_text(
        textwrap.dedent("""
        from trainer.callbacks import RLlibCallback

        class CountEpisodes(RLlibCallback):
            def on_episode_end(self, *, metrics_logger, **kwargs):
                metrics_logger.log_value("my_episodes", 1, reduce="sum")
    """)
    )
    (tmp_path / "checkpoints.py").write_text("KEEP_LAST = 2  # the user's own settings module\n")
    (tmp_path / "train.py").write_text(
        textwrap.dedent("""
        import checkpoints  # the user's module, not the trainer's
        from callbacks import CountEpisodes  # the user's module too

        from trainer import PPOConfig
        from trainer.algorithms.algorithm import Algorithm

        assert checkpoints.KEEP_LAST == 2
        config = (PPOConfig().environment("CartPole-v1").callbacks(CountEpisodes)
                  .env_runners(num_env_runners=1)
                  .training(train_batch_size=200, minibatch_size=100, num_epochs=1))
        with config.build() as algo:
            result = algo.train()
            path = algo.save_to_path("ckpt")
        with Algorithm.from_checkpoint(path) as restored:
            print("episodes", result["env_runners"]["my_episodes"], restored.iteration)
    """)
    )
    done = subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    episodes, iteration = done.stdout.split()[1:]
    assert float(episodes) > 0 and iteration == "1"


def test_module_paths_from_before_the_subpackages_still_import_the_same_modules():
    import importlib

    import trainer
    from trainer.compat.moved_modules import MOVED_MODULES

    for old, new in MOVED_MODULES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    from trainer.config import AlgorithmConfig
    from trainer.exploration import EpsilonGreedy  # the README's porting table until now

    assert EpsilonGreedy is trainer.EpsilonGreedy and AlgorithmConfig is trainer.AlgorithmConfig
    assert importlib.util.find_spec("trainer.no_such_module") is None
