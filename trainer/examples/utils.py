"""RLlib's example-script helpers (`ray.rllib.examples.utils`), which most of its example scripts
import: the argument parser and the experiment runner. They live in `trainer.testing` (RLlib's
older home for them, `ray.rllib.utils.test_utils`); this module gives them RLlib 2.60's path."""

from trainer.testing import add_rllib_example_script_args, run_rllib_example_script_experiment

__all__ = ["add_rllib_example_script_args", "run_rllib_example_script_experiment"]
