"""The main job, `python -m trainer`, driven through its entry point."""

import re

import pytest

from trainer.__main__ import main


@pytest.mark.parametrize("argv", [
    ["--algo", "ppo", "--num-env-runners", "1", "--train-batch-size", "200",
     "--minibatch-size", "100", "--num-epochs", "1", "--hiddens", "16"],
    ["--algo", "dqn", "--hiddens", "16", "--seed", "0"],
])
def test_main_job_prints_one_line_per_iteration_and_stops(argv, capsys):
    assert main(argv + ["--stop-iters", "2"]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^iter +\d+ \| env steps +\d+ \| return mean", out, re.M)) == 2
    assert "stopped: reached --stop-iters 2 after 2 iterations" in out


def test_main_job_rejects_bad_settings_naming_them(capsys):
    with pytest.raises(SystemExit):
        main(["--lr", "-1"])
    assert "lr=-1.0" in capsys.readouterr().err
