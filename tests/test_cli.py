"""The main job, `python -m trainer`, driven through its entry point."""

import json
import re

import pytest

from trainer.__main__ import main


@pytest.mark.parametrize("argv", [
    ["--algo", "ppo", "--num-env-runners", "1", "--train-batch-size", "200",
     "--minibatch-size", "100", "--num-epochs", "1", "--hiddens", "16"],
    ["--algo", "dqn", "--hiddens", "16", "--seed", "0"],
])
def test_main_job_prints_one_line_per_iteration_and_stops(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["--stop-iters", "2"]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^iter +\d+ \| env steps +\d+ \| return mean", out, re.M)) == 2
    assert "stopped: reached --stop-iters 2 after 2 iterations" in out
    # The run folder under localrl_results/ holds the checkpoint written at the end.
    [run] = (tmp_path / "localrl_results").iterdir()
    assert (run / "checkpoint_000002" / "metadata.json").is_file()


_SMALL_PPO = ["--train-batch-size", "200", "--minibatch-size", "100", "--num-epochs", "1",
              "--hiddens", "16", "--num-env-runners", "1", "--seed", "3"]


def test_main_job_keeps_checkpoints_and_resumes_from_the_latest(capsys, tmp_path):
    run = tmp_path / "run"
    assert main(_SMALL_PPO + ["--stop-iters", "3", "--output-dir", str(run),
                              "--checkpoint-frequency", "1", "--num-to-keep", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("checkpoint " + str(run)) == 3
    index = json.loads((run / "checkpoints.json").read_text())
    names = sorted(p.name for p in run.iterdir() if p.is_dir())
    # The best by mean return, plus the latest.
    best = max(index["checkpoints"], key=lambda e: e["score"])["name"]
    assert names == sorted({best, "checkpoint_000003"})
    assert main(["--stop-iters", "5", "--resume", "--output-dir", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"resumed from {run / 'checkpoint_000003'} at iteration 3" in out
    assert "train_batch_size=200" in out  # the run's own settings
    assert re.findall(r"^iter +(\d+)", out, re.M) == ["4", "5"]
    assert (run / "checkpoint_000005").is_dir()


def test_resume_without_a_checkpoint_says_so(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["--resume", "--output-dir", str(tmp_path / "empty")])
    assert "has no checkpoint to resume from" in capsys.readouterr().err


def test_main_job_rejects_bad_settings_naming_them(capsys):
    with pytest.raises(SystemExit):
        main(["--lr", "-1"])
    assert "lr=-1.0" in capsys.readouterr().err
