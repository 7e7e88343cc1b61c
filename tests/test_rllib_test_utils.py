"""`trainer.testing`'s ports of RLlib's test helpers (`check`, the example-script driver)."""

import numpy as np
import pytest

from trainer.testing import add_rllib_example_script_args, check


def test_check_compares_nested_values_with_tolerances():
    check({"a": [1.0, np.array([2.0, 3.0])], "b": "x"}, {"a": [1.0, np.array([2.0, 3.0])],
                                                         "b": "x"})
    check(1.0, 1.4, atol=0.5)
    check(1.0, 2.0, false=True)
    with pytest.raises(AssertionError):
        check(1.0, 1.001)
    with pytest.raises(AssertionError):
        check({"a": 1}, {"a": 1}, false=True)
    with pytest.raises(AssertionError):
        check({"a": 1}, {"b": 1})


def test_example_script_args_parse_rllib_command_lines():
    parser = add_rllib_example_script_args(default_reward=450.0)
    args = parser.parse_args(["--num-env-runners", "2", "--evaluation-duration", "auto",
                              "--no-tune", "--framework", "torch"])
    assert args.num_env_runners == 2 and args.evaluation_duration == "auto"
    assert args.stop_reward == 450.0 and args.algo == "PPO"
