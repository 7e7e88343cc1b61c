"""The command line, end to end: `python -m trainer ARGS` as a user runs it, through
`trainer.cli.main(argv)` in this process (`run_cli`, tests/cli_in_process.py: same exit
status and output as the subprocess). A subprocess where a test needs a fresh interpreter:
signals (Ctrl-C, SIGTERM), a terminal, the `localrl` console script, missing extras (blocked
imports) and import side effects."""

import importlib.util
import json
import logging
import os
import pty
import queue
import re
import select
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest
from cli_in_process import run_cli

from trainer.cli import main
from trainer.testing import env_runner_pids

pytestmark = pytest.mark.cli

#: Why a test that needs an optional extra skips without it.
NEEDS_VIDEO = "needs the video extra (pip install -e '.[video]'): Pillow, imageio-ffmpeg, pygame"
NEEDS_TENSORBOARD = "needs the tensorboard extra (pip install -e '.[tensorboard]'): tensorboardX"

#: A PPO run small enough for a few iterations in a second or two.
SMALL_PPO = [
    "--train-batch-size",
    "200",
    "--minibatch-size",
    "100",
    "--num-epochs",
    "1",
    "--hiddens",
    "16",
    "--num-env-runners",
    "1",
    "--seed",
    "3",
]


# A subprocess: the tests that use `Cli` send signals (SIGINT, SIGTERM) to the command's
# process, which here would be pytest's; their resumes read the same merged output.
class Cli:
    """`python -m trainer ARGS` with its output read line by line on a thread. A process that
    does not finish in time is aborted with every thread's stack in its output (faulthandler)."""

    def __init__(self, *args: str, cwd, env=None):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainer", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})},
        )
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout: float = 90) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        self.process.kill()
        raise AssertionError(f"no line matching {pattern!r} in:\n{self.output}")

    def finish(self, timeout: float = 120) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)  # faulthandler prints the stacks
            self.process.wait(timeout=30)
            self._read_rest()
            raise AssertionError(f"still running after {timeout} s:\n{self.output}") from None
        self._read_rest()
        return code

    def _read_rest(self) -> None:
        # The output ends (None) once the process and its children have closed it.
        while (line := self._queue.get(timeout=60)) is not None:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)


def run_cli_in_subprocess(
    *args: str, cwd, timeout: float = 120, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`python -m trainer ARGS` in a fresh interpreter (`run_cli` runs it in this process)."""
    return subprocess.run(
        [sys.executable, "-m", "trainer", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _gone(pids: list[int], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{pid}") for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A 4-iteration PPO run, checkpoints at 2 and 4: shared by the read-only tests."""
    directory = tmp_path_factory.mktemp("cli") / "run"
    done = run_cli(
        *SMALL_PPO,
        "--stop-iters",
        "4",
        "--checkpoint-frequency",
        "2",
        "--output-dir",
        str(directory),
        cwd=directory.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return directory, done.stdout


@pytest.mark.slow
def test_train_prints_plain_rows_and_writes_the_run_folder(trained_run):
    run, out = trained_run
    # Not a terminal: one plain line per iteration, no status line or escape codes.
    assert re.findall(r"^iter +(\d+) \| env steps +\d+ \| return mean", out, re.M) == [
        "1",
        "2",
        "3",
        "4",
    ]
    assert "\x1b[" not in out and "\r" not in out
    assert re.search(r"^iter +4 .*\| left 0s \(4 iterations\)$", out, re.M)
    assert "stopped (reached 4 iterations) after 4 iterations, 800 env steps" in out
    params = json.loads((run / "params.json").read_text())
    assert (params["train_batch_size"], params["seed"], params["env"]) == (200, 3, "CartPole-v1")
    assert params["model"]["fcnet_hiddens"] == [16]
    assert params["callbacks_class"] == "trainer.callbacks.callback:RLlibCallback"
    assert json.loads((run / "run.json").read_text()) == {
        "algo": "PPO",
        "env": "CartPole-v1",
        "stop": {"iterations": 4},
    }
    lines = (run / "result.json").read_text().splitlines()
    results = [json.loads(line) for line in lines]  # strict JSON: NaN would fail here
    assert [r["training_iteration"] for r in results] == [1, 2, 3, 4]
    assert results[-1]["num_env_steps_sampled_lifetime"] == 800
    assert "episode_return_mean" in results[0]["env_runners"]
    header, *rows = (run / "progress.csv").read_text().splitlines()
    columns = header.split(",")
    assert columns[:3] == ["training_iteration", "time_total_s", "num_env_steps_sampled_lifetime"]
    assert "env_runners/episode_return_mean" in columns and "timers/training_step" in columns
    assert [row.split(",")[0] for row in rows] == ["1", "2", "3", "4"]
    assert sorted(p.name for p in run.glob("checkpoint_*")) == [
        "checkpoint_000002",
        "checkpoint_000004",
    ]
    if importlib.util.find_spec("matplotlib") is None:  # without the plot extra: no plot
        assert not (run / "learning_curve.png").exists()
    else:
        assert (run / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_no_arguments_prints_the_defaults_and_ctrl_c_saves_then_resume_continues(tmp_path):
    # The main job of the README: PPO on CartPole with RLlib's tuned-example settings.
    cli = Cli(cwd=tmp_path)
    cli.wait_for(r"^ready in ")
    workers = env_runner_pids(cli.process.pid)
    assert len(workers) == 3  # 2 training EnvRunners and the preset's evaluation EnvRunner
    # Ctrl-C during the first iteration (after it, that iteration's evaluation can already
    # have reached 475: an untrained greedy policy sometimes balances for 500 steps).
    cli.process.send_signal(signal.SIGINT)
    assert cli.finish() == 128 + signal.SIGINT, cli.output
    out = cli.output
    assert out.splitlines()[0].startswith(
        "preset: RLlib's tuned example rllib/tuned_examples/ppo/cartpole_ppo.py: gamma=0.99, "
        "lr=0.0003, num_epochs=6, vf_loss_coeff=0.01"
    )
    assert "\nPPO (numpy) on 'CartPole-v1': the preset's settings\n" in out
    assert (
        "stop at: evaluation mean return >= 475 or 200000 env steps or 200 iterations "
        "(default: the env's reward_threshold (evaluation) and the preset's 200000 env "
        "steps)"
    ) in out
    assert "SIGINT: finishing this iteration, then saving a checkpoint" in out
    # The iteration under way when Ctrl-C came is finished and saved.
    last = int(re.findall(r"^iter +(\d+)", out, re.M)[-1])
    [run] = (tmp_path / "localrl_results").iterdir()
    assert re.search(rf"^checkpoint {re.escape(str(run))}/checkpoint_{last:06d}$", out, re.M)
    assert f"stopped (SIGINT received) after {last} iterations" in out
    assert _gone(workers), "EnvRunner processes outlived the command"

    # --resume without --output-dir: the newest run, from its latest checkpoint, with the
    # run's own stop criteria (run.json). An untrained greedy policy sometimes balances for
    # 500 steps, so the saved iteration's evaluation may already have reached 475: then the
    # resume says so and trains nothing, and the run continues without the reward target.
    # (The resumes need no signal: they run in this process, `run_cli`.)
    reached = json.loads((run / "result.json").read_text().splitlines()[-1])
    if reached["evaluation"]["env_runners"]["episode_return_mean"] >= 475:
        done = run_cli("--resume", "--stop-iters", str(last + 1), cwd=tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output
        assert re.search(
            rf"^the run already reached its stop criterion at iteration {last} \(reached "
            r"evaluation mean return [\d.]+ >= 475\): nothing to train",
            output,
            re.M,
        ), output
        flags: tuple[str, ...] = ("--stop-reward", "none")
        stop_line = f"stop at: 200000 env steps or {last + 1} iterations (flags and run.json)"
    else:
        flags = ()
        stop_line = (
            f"stop at: evaluation mean return >= 475 or 200000 env steps or {last + 1} "
            "iterations (flags and run.json)"
        )
    resumed = run_cli("--resume", "--stop-iters", str(last + 1), *flags, cwd=tmp_path)
    output = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, output
    assert f"resumed from {run}/checkpoint_{last:06d} at iteration {last}" in output
    assert stop_line in output
    assert "preset:" not in output  # a resumed run keeps its own settings
    assert re.findall(r"^iter +(\d+)", output, re.M) == [str(last + 1)]
    results = [json.loads(line) for line in (run / "result.json").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == list(range(1, last + 2))
    assert results[-1]["iterations_since_restore"] == 1


@pytest.mark.slow
def test_second_ctrl_c_stops_at_once_without_saving(tmp_path):
    # RLlib's default PPO settings: iterations of a few seconds.
    cli = Cli("--output-dir", "run", "--preset", "none", cwd=tmp_path)
    cli.wait_for(r"^iter +1 \|")
    workers = env_runner_pids(cli.process.pid)
    cli.process.send_signal(signal.SIGINT)
    cli.wait_for(r"^SIGINT: finishing this iteration")
    cli.process.send_signal(signal.SIGINT)
    assert cli.finish() == 130, cli.output
    assert (
        "stopped (interrupted twice: stopped at once, without saving) after 1 iterations"
        in cli.output
    )
    assert not list((tmp_path / "run").glob("checkpoint_*"))
    assert _gone(workers)
    assert cli.output.splitlines()[0] == "preset: none (--preset none): RLlib's default settings"
    assert "\nPPO (numpy) on 'CartPole-v1': RLlib's default settings\n" in cli.output
    assert (
        "stop at: mean return >= 475 or 200 iterations (default: the env's reward_threshold)"
    ) in cli.output


@pytest.mark.slow
def test_sigterm_saves_like_ctrl_c(tmp_path):
    cli = Cli(*SMALL_PPO, "--output-dir", "run", "--checkpoint-frequency", "0", cwd=tmp_path)
    cli.wait_for(r"^iter +2 \|")
    cli.process.send_signal(signal.SIGTERM)
    assert cli.finish() == 128 + signal.SIGTERM, cli.output
    last = int(re.findall(r"^iter +(\d+)", cli.output, re.M)[-1])
    assert (tmp_path / "run" / f"checkpoint_{last:06d}" / "metadata.json").is_file()


@pytest.mark.slow
def test_a_terminal_gets_a_status_line_redrawn_in_place(tmp_path):
    # A subprocess: its stdin, stdout and stderr are a terminal (a pseudo-terminal's end).
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "trainer", *SMALL_PPO, "--stop-iters", "3", "--output-dir", "run"],
        cwd=tmp_path,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            output += chunk
        elif process.poll() is not None:
            break
    os.close(controller)
    assert process.wait(timeout=30) == 0
    text = output.decode()
    # Each row is written after erasing the status line, which is then drawn again under it.
    assert re.search(
        r"\r\x1b\[Kiter +3 \|[^\n]*\n\[#+\.*\] +\d+% \| \d+s left to 3 iterations "
        r"\| Ctrl-C: save and stop",
        text.replace("\r\n", "\n"),
    ), text
    assert text.rstrip().endswith(
        "continue:     python -m trainer --resume --output-dir run --stop-iters 6"
    )


@pytest.mark.slow
def test_evaluate_runs_episodes_greedy_or_exploring(trained_run):
    run, _ = trained_run
    greedy = [
        json.loads(
            run_cli(
                "evaluate", str(run), "--episodes", "3", "--seed", "7", "--json", cwd=run.parent
            ).stdout
        )
        for _ in range(2)
    ]
    assert greedy[0] == greedy[1]  # greedy actions and seeded resets: the same episodes
    summary = greedy[0]
    assert summary["checkpoint"] == str(run / "checkpoint_000004") or summary["checkpoint"] == str(
        run / "checkpoint_000002"
    )  # the run's best
    assert summary["num_episodes"] == 3 and summary["explore"] is False
    assert summary["episode_return_mean"] == pytest.approx(sum(summary["episode_returns"]) / 3)
    # CartPole pays 1 per step.
    assert summary["episode_returns"] == [float(n) for n in summary["episode_lengths"]]
    done = run_cli(
        "evaluate", str(run / "checkpoint_000002"), "--episodes", "2", "--explore", cwd=run.parent
    )
    assert done.returncode == 0, done.stderr
    assert "2 episodes, exploring actions" in done.stdout
    assert len(re.findall(r"^episode +\d: return +\d+\.\d\d, length \d+$", done.stdout, re.M)) == 2
    assert re.search(
        r"^mean return [\d.]+ ± [\d.]+ \(min [\d.]+, max [\d.]+\) over 2 episodes",
        done.stdout,
        re.M,
    )


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["gif", "mp4"])
def test_evaluate_records_a_video(trained_run, tmp_path, suffix):
    pytest.importorskip("pygame", reason=NEEDS_VIDEO)
    pytest.importorskip("PIL" if suffix == "gif" else "imageio_ffmpeg", reason=NEEDS_VIDEO)
    run, _ = trained_run
    video = tmp_path / f"episode.{suffix}"
    done = run_cli(
        "evaluate",
        str(run),
        "--episodes",
        "2",
        "--seed",
        "0",
        "--video",
        str(video),
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    # One frame after the reset and one per step, of the first episode only (--video-episodes 1).
    assert summary["video_frames"] == summary["episode_lengths"][0] + 1
    if suffix == "gif":
        from PIL import Image

        with Image.open(video) as image:
            assert image.size == (600, 400) and image.n_frames >= 2
    else:
        import imageio_ffmpeg

        frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(video))
        assert frames == summary["video_frames"]
        assert seconds == pytest.approx(frames / 50, abs=0.05)  # CartPole renders at 50 fps
    assert not list(tmp_path.glob("*.tmp*"))


@pytest.mark.slow
def test_inspect_a_run_folder_and_a_checkpoint(trained_run, tmp_path):
    run, _ = trained_run
    done = run_cli("inspect", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"run {run}" in done.stdout
    assert "PPO on CartPole-v1, stop at {'iterations': 4}" in done.stdout
    assert "4 iterations logged; the last: iteration 4, 800 env steps" in done.stdout
    assert re.search(r"checkpoint_000004  score +[\d.]+  \(latest", done.stdout)
    assert "files (all sizes and SHA-256 checksums verified)" in done.stdout
    as_json = json.loads(
        run_cli("inspect", str(run / "checkpoint_000002"), "--json", cwd=tmp_path).stdout
    )
    assert as_json["checkpoint"]["metadata"]["training_iteration"] == 2
    # A damaged copy is refused, naming the file.
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(run / "checkpoint_000002", damaged)
    with open(damaged / "learner.msgpack", "r+b") as handle:
        handle.seek(10)
        handle.write(b"\xff\xff")
    done = run_cli("inspect", str(damaged), cwd=tmp_path)
    assert done.returncode == 1
    assert "learner.msgpack" in done.stderr


@pytest.mark.slow
def test_config_file_in_toml_with_tables_callbacks_and_stop(tmp_path):
    (tmp_path / "my_callbacks.py").write_text(
        "from callbacks import RLlibCallback\n"
        "class CountEpisodes(RLlibCallback):\n"
        "    def on_episode_end(self, *, metrics_logger, **kwargs):\n"
        "        metrics_logger.log_value('episodes_seen', 1, reduce='sum')\n"
    )
    (tmp_path / "run.toml").write_text(
        "lr = 0.0003\n"
        "[training]\ntrain_batch_size = 200\nminibatch_size = 100\nnum_epochs = 1\n"
        "[rl_module.model_config]\nfcnet_hiddens = [8]\n"
        "[env_runners]\nnum_env_runners = 1\n"
        '[callbacks]\ncallbacks_class = "my_callbacks:CountEpisodes"\n'
        "[stop]\ntraining_iteration = 3\n"
    )
    done = run_cli("--config", "run.toml", "--lr", "0.001", "--output-dir", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stop at: 3 iterations (--config)" in done.stdout
    params = json.loads((tmp_path / "run" / "params.json").read_text())
    assert params["lr"] == 0.001  # the flag wins over the file
    assert (params["train_batch_size"], params["model"]["fcnet_hiddens"]) == (200, [8])
    assert params["callbacks_class"] == "my_callbacks:CountEpisodes"
    results = (tmp_path / "run" / "result.json").read_text().splitlines()
    assert len(results) == 3
    assert json.loads(results[-1])["env_runners"]["episodes_seen"] > 0


@pytest.mark.slow
def test_config_file_in_json_with_algo_and_flat_keys(tmp_path):
    (tmp_path / "dqn.json").write_text(
        json.dumps(
            {
                "algo": "DQN",
                "num_env_runners": 0,
                "model": {"fcnet_hiddens": [8]},
                "training": {"num_steps_sampled_before_learning_starts": 100},
                "stop": {"num_env_steps_sampled_lifetime": 1500},
            }
        )
    )
    done = run_cli("--config", "dqn.json", "--output-dir", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\nDQN (numpy) on 'CartPole-v1': the preset's settings, with " in done.stdout
    assert re.search(r"stopped \(reached \d+ env steps >= 1500\) after 2 iterations", done.stdout)


@pytest.mark.slow
def test_an_existing_run_folder_is_not_overwritten(trained_run):
    run, _ = trained_run
    done = run_cli(*SMALL_PPO, "--output-dir", str(run), cwd=run.parent)
    assert done.returncode == 2
    assert "argument --output-dir" in done.stderr and "continue it with --resume" in done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env-config", "{bad"], "argument --env-config: not valid JSON"),
        (["--env-config", "[1]"], "argument --env-config: must be a JSON object"),
        (["--lr", "-1"], "argument --lr: PPOConfig.training(lr=-1.0): lr must be a number >= 0"),
        (["--stop-iters", "x"], "argument --stop-iters: 'x' is not a whole number"),
        (["--num-to-keep", "0"], "argument --num-to-keep: 0 must be >= 1"),
        (["--algo", "a2c"], "argument --algo: invalid choice: 'A2C'"),
        (
            ["--env", "CartPoel-v1"],
            "argument --env: environment(env='CartPoel-v1'): no env of that name",
        ),
        (["--hiddens", "8,x"], "argument --hiddens: '8,x': give layer sizes"),
        (["--minibatch-size", "64", "--algo", "dqn"], "(set by --minibatch-size)"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["evalute", "x"], "unknown command 'evalute'; did you mean 'evaluate'?"),
        (["evaluate", "nowhere"], "argument checkpoint: checkpoint"),
        (
            ["evaluate", "nowhere", "--video", "out.avi"],
            "argument --video: 'out.avi': give a file ending in .gif or .mp4",
        ),
        (["evaluate", "nowhere", "--episodes", "0"], "argument --episodes: 0 must be >= 1"),
        (["--framework", "tf"], "argument --framework: invalid choice: 'tf' (choose from 'numpy'"),
        (["--stop-reward", "high"], "argument --stop-reward: 'high' is not a number (or 'none')"),
        (["--resume", "--output-dir", "nowhere"], "argument --resume: "),
    ],
)
def test_bad_flags_are_rejected_naming_the_flag(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        ("lr = [0.1\n", "toml", "not valid TOML"),
        ('{"lr": 0.1,}', "json", "not valid JSON"),
        (
            '{"lrr": 0.1}',
            "json",
            "lrr: PPOConfig.from_dict() got an unknown setting lrr=0.1. Did you mean 'lr'?",
        ),
        (
            "[training]\nnum_epochz = 3\n",
            "toml",
            "[training]: PPOConfig.training() got an unknown setting num_epochz=3",
        ),
        (
            '{"stop": {"episode_reward_mean": 1}}',
            "json",
            "[stop] episode_reward_mean: not a stop key",
        ),
        (
            '{"callbacks": "no_such_module:Thing"}',
            "json",
            "callbacks='no_such_module:Thing': cannot import it",
        ),
        (
            '{"algo": "A3C"}',
            "json",
            "algo='A3C'; allowed: APPO, BC, CQL, DQN, DreamerV3, IMPALA, IQL, MARWIL, PPO",
        ),
    ],
)
def test_bad_config_files_are_rejected_naming_the_file_and_key(
    content, suffix, message, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / f"c.{suffix}").write_text(content)
    with pytest.raises(SystemExit):
        main(["--config", f"c.{suffix}"])
    err = capsys.readouterr().err
    assert f"argument --config: c.{suffix}" in err and message in err, err


def test_resume_refuses_flags_that_change_settings(trained_run, capsys):
    run, _ = trained_run
    with pytest.raises(SystemExit):
        main(["--resume", "--output-dir", str(run), "--lr", "0.1"])
    assert "argument --lr: a resumed run keeps its own settings" in capsys.readouterr().err


@pytest.mark.slow
def test_without_matplotlib_the_run_goes_on_without_a_plot(tmp_path):
    done = run_without(
        ["matplotlib", "tensorboardX"],
        [*SMALL_PPO, "--stop-iters", "1", "--output-dir", "run"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "result.json").is_file()
    assert not (tmp_path / "run" / "learning_curve.png").exists()
    # Each says so once, naming the extra to install.
    assert (
        done.stdout.count(
            f"learning_curve.png: not drawn: matplotlib is not installed (pip install -e '{REPO}[plot]')"
        )
        == 1
    ), done.stdout
    assert (
        done.stdout.count(
            "TensorBoard event files: not written: tensorboardX is not installed "
            f"(pip install -e '{REPO}[tensorboard]')"
        )
        == 1
    ), done.stdout
    assert "tensorboard" not in next_lines(done.stdout)


@pytest.mark.slow
def test_log_level_reaches_the_standard_logging_module(tmp_path):
    done = run_cli(
        *SMALL_PPO, "--stop-iters", "1", "--output-dir", "run", "--log-level", "INFO", cwd=tmp_path
    )
    assert done.returncode == 0
    assert re.search(r"INFO trainer: started 1 EnvRunner process in [\d.]+ s", done.stderr)
    assert re.search(r"INFO trainer: saved checkpoint .*checkpoint_000001", done.stderr)
    quiet = run_cli(*SMALL_PPO, "--stop-iters", "1", "--output-dir", "run2", cwd=tmp_path)
    assert "INFO" not in quiet.stderr  # the default is WARN


@pytest.mark.slow
def test_the_localrl_console_script_is_the_same_program(trained_run, tmp_path):
    # A subprocess: the console script's own entry point and program name are under test.
    script = os.path.join(os.path.dirname(sys.executable), "localrl")
    assert os.path.exists(script), "pip install -e . installs the localrl command"
    done = subprocess.run(
        [script, "inspect", str(trained_run[0] / "checkpoint_000004")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "progress    iteration 4, 800 env steps" in done.stdout
    usage = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert usage.stdout.startswith("usage: localrl ")


def _result(iteration: int, seconds: float, steps: int, mean_return: float) -> dict:
    return {
        "training_iteration": iteration,
        "time_total_s": seconds,
        "num_env_steps_sampled_lifetime": steps,
        "env_runners": {"episode_return_mean": mean_return},
    }


def test_time_left_is_estimated_for_the_criterion_expected_first():
    from trainer.cli.stop import Progress, StopCriteria

    progress = Progress(StopCriteria(iterations=100, env_steps=10_000, mean_return=200.0))
    for i in range(1, 6):  # 2 s and 1000 env steps per iteration; return +10 per iteration
        progress.add(_result(i, 2.0 * i, 1000 * i, 10.0 * i))
    # env steps: 5000 left at 500/s = 10 s; iterations: 95 x 2 s; return: 150 at 5/s = 30 s.
    assert progress.time_left() == pytest.approx((10.0, "10000 env steps"))
    assert progress.fraction_done() == pytest.approx(0.5)
    trend = Progress(StopCriteria(iterations=100, mean_return=200.0))
    for i in range(1, 6):
        trend.add(_result(i, 2.0 * i, 1000 * i, 10.0 * i))
    assert trend.time_left() == pytest.approx((30.0, "~return 200"))
    # A return that does not improve gives no return estimate.
    flat = Progress(StopCriteria(mean_return=200.0))
    for i in range(1, 6):
        flat.add(_result(i, 2.0 * i, 1000 * i, 50.0))
    assert flat.time_left() is None


@pytest.mark.parametrize(
    "returns",
    [
        [21, 28, 36, 50, 85, 128, 110, 170, 150, 240, 230, 330, 300, 420],  # noisy, rising
        [9, 105, 294, 268, 406, 380, 300, 250, 240, 260, 420, 470],  # a fast rise, then a dip
    ],
)
def test_time_left_moves_steadily_from_row_to_row(returns):
    from trainer.cli.stop import Progress, StopCriteria

    # The main job's criteria, iterations of 0.6 to 0.9 s after a slow first one.
    progress = Progress(StopCriteria(evaluation_return=475, env_steps=200_000, iterations=200))
    seconds, shown = 0.0, []
    for i, mean_return in enumerate(returns, 1):
        seconds += 2.9 if i == 1 else (0.6, 0.8, 0.7, 0.9)[i % 4]
        result = _result(i, seconds, 4000 * i, 0.0)
        result["evaluation"] = {"env_runners": {"episode_return_mean": float(mean_return)}}
        progress.add(result)
        left = progress.time_left()
        shown.append(None if left is None else left[0])
    assert shown[0] is None and None not in shown[1:]
    for before, after in zip(shown[1:-1], shown[2:], strict=True):
        # An iteration (<= 0.9 s) passed: at most a third of what is left goes, or it doubles.
        assert (before - 0.9) / 3.5 <= after <= 2.5 * max(before, 0.9), shown


def test_progress_toward_a_negative_return_counts_from_the_first_return():
    from trainer.cli.stop import Progress, StopCriteria

    progress = Progress(StopCriteria(mean_return=-100.0))  # Acrobot: from -500 up to -100
    progress.add(_result(1, 1.0, 1000, -500.0))
    progress.add(_result(2, 2.0, 2000, -200.0))
    assert progress.fraction_done() == pytest.approx(0.75)
    assert StopCriteria(mean_return=-100.0).reason(_result(3, 3.0, 3000, -99.0)) == (
        "reached mean return -99.00 >= -100"
    )
    assert StopCriteria(mean_return=-100.0).reason(_result(3, 3.0, 3000, float("nan"))) is None


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(child) for child in handle.read().split()]


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_a_recording_leaves_no_video_and_no_ffmpeg(
    trained_run, tmp_path, signal_number
):
    pytest.importorskip("pygame", reason=NEEDS_VIDEO)
    pytest.importorskip("imageio_ffmpeg", reason=NEEDS_VIDEO)
    run, _ = trained_run
    cli = Cli(
        "evaluate",
        str(run),
        "--episodes",
        "1000",
        "--video",
        "long.mp4",
        "--video-episodes",
        "1000",
        cwd=tmp_path,
    )
    cli.wait_for(r"^episode +2:")
    encoders = _children(cli.process.pid)
    assert len(encoders) == 1  # ffmpeg, fed frame by frame
    cli.process.send_signal(signal_number)  # while pygame renders: SDL must leave it to us
    assert cli.finish() == 130  # the exit is the event: bounded, not timed (it takes ~0.3 s)
    assert "interrupted: no summary, no video written" in cli.output
    assert list(tmp_path.iterdir()) == []
    assert _gone(encoders)


@pytest.mark.slow
def test_presets_of_dqn_and_pendulum_are_rllibs_tuned_examples_and_resume_without_pickle(tmp_path):
    # DQN on CartPole: RLlib's cartpole_dqn.py (prioritized replay, n-step (2, 5), 256 + 256).
    done = run_cli("--algo", "DQN", "--stop-iters", "2", "--output-dir", "dqn", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(
        "preset: RLlib's tuned example rllib/tuned_examples/dqn/"
        "cartpole_dqn.py: lr=0.0005, train_batch_size_per_learner=32, "
        "replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer'"
    )
    params = json.loads((tmp_path / "dqn" / "params.json").read_text())
    assert params["n_step"] == [2, 5] and params["lr"] == 0.0005
    assert params["replay_buffer_config"]["type"] == "PrioritizedEpisodeReplayBuffer"
    # PPO on Pendulum with --preset rllib: RLlib's pendulum_ppo.py, with its MeanStdFilter
    # connector; RLlib's stop (-300) since Pendulum has no reward threshold.
    done = run_cli(
        "--env",
        "Pendulum-v1",
        "--preset",
        "rllib",
        "--stop-iters",
        "1",
        "--output-dir",
        "pendulum",
        "--num-envs-per-env-runner",
        "2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(
        "preset: RLlib's tuned example rllib/tuned_examples/ppo/pendulum_ppo.py: "
        "num_env_runners=2, num_envs_per_env_runner=20, env_to_module_connector="
        "mean_std_filter, train_batch_size_per_learner=1024, minibatch_size=128, lr=0.0002"
    )
    assert (
        "PPO (numpy) on 'Pendulum-v1': the preset's settings, with num_envs_per_env_runner=2"
        in (done.stdout)
    )
    run = tmp_path / "pendulum"
    assert json.loads((run / "run.json").read_text())["stop"] == {"iterations": 1}
    # The connector is a named function: the run resumes without unpickling anything.
    resumed = run_cli("--resume", "--output-dir", str(run), "--stop-iters", "2", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    results = [json.loads(line) for line in (run / "result.json").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1, 2]
    from trainer.algorithms.ppo import PPO

    algo = PPO.from_checkpoint(str(sorted(run.glob("checkpoint_*"))[-1]))
    try:
        connector = algo.env_runner_group.local_env_runner.env_to_module
        assert "MeanStdFilter" in repr(connector)
    finally:
        algo.stop()


@pytest.mark.slow
def test_envs_without_a_tuned_example_say_so_and_train_with_the_defaults(tmp_path):
    done = run_cli(
        "--env",
        "FrozenLake-v1",
        "--stop-iters",
        "1",
        "--train-batch-size",
        "200",
        "--minibatch-size",
        "100",
        "--num-epochs",
        "1",
        "--output-dir",
        "run",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(
        "no preset: neither RLlib 2.60 nor this project has tuned settings for PPO on "
        "'FrozenLake-v1' (presets: PPO on CartPole-v1, DQN on CartPole-v1, APPO on "
        "CartPole-v1, PPO on MultiAgentCartPole, PPO on Pendulum-v1, SAC on Pendulum-v1, APPO "
        "on Pendulum-v1, TQC on Pendulum-v1, PPO on Acrobot-v1, "
    )
    assert first.endswith("); RLlib's default settings")
    # Only the flags' settings differ from RLlib's defaults (lr stays RLlib's 5e-05).
    settings = done.stdout.splitlines()[1]
    assert settings.startswith("PPO (numpy) on 'FrozenLake-v1': RLlib's default settings, with "), (
        settings
    )
    assert "num_epochs=1" in settings and "lr=" not in settings
    # --preset changes settings: a resumed run keeps its own.
    resumed = run_cli("--resume", "--output-dir", "run", "--preset", "none", cwd=tmp_path)
    assert resumed.returncode == 2
    assert "argument --preset: a resumed run keeps its own settings" in resumed.stderr


def _tensorboard_scalars(run) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the run folder's event files, read as TensorBoard reads them (TFRecord
    framing around tensorboardX's Event protos), by tag."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(run.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            event = Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


@pytest.mark.slow
def test_the_run_folder_has_tensorboard_event_files_by_iteration_and_env_steps(tmp_path):
    pytest.importorskip("tensorboardX", reason=NEEDS_TENSORBOARD)
    done = run_cli(*SMALL_PPO, "--stop-iters", "3", "--output-dir", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "TensorBoard event files" in done.stdout
    scalars = _tensorboard_scalars(tmp_path / "run")
    results = [
        json.loads(line) for line in (tmp_path / "run" / "result.json").read_text().splitlines()
    ]
    by_iteration = scalars["ray/tune/env_runners/episode_return_mean"]
    assert [step for step, _ in by_iteration] == [1, 2, 3]
    for (_, value), result in zip(by_iteration, results, strict=True):
        assert value == pytest.approx(result["env_runners"]["episode_return_mean"], rel=1e-6)
    by_steps = scalars["env_steps/learners/default_policy/policy_loss"]
    assert [step for step, _ in by_steps] == [200, 400, 600]
    # Every number of the result dict, as Tune writes them.
    assert {
        "ray/tune/timers/training_step",
        "ray/tune/num_env_steps_sampled_lifetime",
        "ray/tune/fault_tolerance/num_healthy_workers",
        "env_steps/env_runners/episode_len_mean",
    } <= set(scalars)


def test_event_files_skip_values_tensorboard_cannot_draw_without_a_warning(tmp_path, caplog):
    """A NaN (the episode mean of an iteration in which no episode ended) or an infinity is
    left out of the event file, and tensorboardX logs nothing about it; the other numbers of
    the result are written."""
    pytest.importorskip("tensorboardX", reason=NEEDS_TENSORBOARD)
    from trainer.cli.tensorboard import EventWriter

    writer = EventWriter(str(tmp_path))
    with caplog.at_level(logging.DEBUG):
        for iteration in (1, 2):
            writer.write(
                {
                    "training_iteration": iteration,
                    "num_env_steps_sampled_lifetime": 100 * iteration,
                    "env_runners": {
                        "episode_return_mean": float("nan"),
                        "episode_len_mean": float("inf"),
                        "num_episodes": 0,
                    },
                }
            )
    writer.close()
    assert not [r for r in caplog.records if "NaN or Inf" in r.getMessage()]
    scalars = _tensorboard_scalars(tmp_path)
    assert scalars["ray/tune/env_runners/num_episodes"] == [(1, 0.0), (2, 0.0)]
    assert not any("episode_return_mean" in tag or "episode_len_mean" in tag for tag in scalars)


@pytest.mark.slow
def test_tensorboard_event_files_without_importing_torch_or_boto3(tmp_path):
    pytest.importorskip("tensorboardX", reason=NEEDS_TENSORBOARD)
    # Stand-ins for torch and boto3 that leave a file when imported: tensorboardX imports the
    # real ones where they are installed (torch took 1.1 s of the main job's start), for
    # features that event files of scalars do not use.
    fakes = tmp_path / "fakes"
    for name in ("torch", "boto3"):
        (fakes / name).mkdir(parents=True)
        (fakes / name / "__init__.py").write_text(
            f"open({str(tmp_path / (name + '.imported'))!r}, 'w').close()\n"
        )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fakes), os.environ.get("PYTHONPATH", "")]),
    }
    # A subprocess: PYTHONPATH's stand-ins must be what a fresh interpreter imports.
    argv = [*SMALL_PPO, "--stop-iters", "1", "--output-dir", "run"]
    done = run_cli_in_subprocess(*argv, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert _tensorboard_scalars(tmp_path / "run")["ray/tune/training_iteration"] == [(1, 1.0)]
    assert not list(tmp_path.glob("*.imported"))


def test_tensorboardx_import_keeps_modules_out_for_its_own_thread_only():
    pytest.importorskip("tensorboardX", reason=NEEDS_TENSORBOARD)
    from trainer.cli.tensorboard import _KeepOut, import_tensorboardx

    keep_out = _KeepOut()
    keep_out.threads.add(threading.get_ident())  # as import_tensorboardx() does
    for name in ("torch", "torch.nn", "boto3", "google.cloud", "google.cloud.storage"):
        with pytest.raises(ModuleNotFoundError, match="kept out of tensorboardX's import"):
            keep_out.find_spec(name)
    for name in ("torchvision", "google", "google.protobuf", "numpy"):
        assert keep_out.find_spec(name) is None
    # Another thread (the user's code meanwhile) imports whatever it likes.
    other_thread = []
    thread = threading.Thread(target=lambda: other_thread.append(keep_out.find_spec("torch")))
    thread.start()
    thread.join(5)
    assert other_thread == [None]
    # Only during the import: its finder stays on sys.meta_path, keeping nothing out.
    assert import_tensorboardx().SummaryWriter
    (installed,) = [finder for finder in sys.meta_path if isinstance(finder, _KeepOut)]
    assert installed.threads == set() and installed.find_spec("torch") is None


@pytest.mark.slow
def test_a_tensorboardx_that_needs_torch_is_imported_with_it(tmp_path):
    # A subprocess: stand-ins on PYTHONPATH for modules this process has imported already.
    # Stand-ins: a tensorboardX that imports torch unconditionally, and a torch.
    (tmp_path / "tensorboardX").mkdir()
    (tmp_path / "tensorboardX" / "__init__.py").write_text("import torch\n")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    code = (
        "import sys; from trainer.cli.tensorboard import import_tensorboardx; "
        "module = import_tensorboardx(); print(module.__file__, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / "tensorboardX" / "__init__.py"), "True"]


@pytest.mark.slow
def test_model_flags_add_to_each_other_and_to_the_preset(tmp_path):
    # --hiddens and --activation both apply (each used to replace the other's model config),
    # and over the CartPole preset they keep its vf_share_layers=True.
    done = run_cli(
        "--hiddens",
        "24",
        "--activation",
        "tanh",
        "--stop-iters",
        "1",
        "--train-batch-size",
        "200",
        "--minibatch-size",
        "100",
        "--output-dir",
        "run",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    model = json.loads((tmp_path / "run" / "params.json").read_text())["model"]
    assert (model["fcnet_hiddens"], model["fcnet_activation"], model["vf_share_layers"]) == (
        [24],
        "tanh",
        True,
    )


@pytest.mark.slow
def test_multi_agent_cartpole_trains_with_its_preset_and_evaluates_per_agent(tmp_path):
    """`--env MultiAgentCartPole`: RLlib's tuned multi-agent preset, one policy per agent (p0,
    p1), each module's return in the rows; its checkpoint evaluates, each agent acting with
    its own module, and the run resumes."""
    directory = tmp_path / "run"
    small = ["--train-batch-size", "400", "--minibatch-size", "100", "--num-epochs", "1"]
    done = run_cli(
        "--env", "MultiAgentCartPole", *small, "--stop-iters", "2", "--output-dir",
        str(directory), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "multi_agent_cartpole_ppo.py" in done.stdout.splitlines()[0]
    rows = [line for line in done.stdout.splitlines() if line.startswith("iter")]
    assert len(rows) == 2 and all(" p0 " in row and " p1 " in row for row in rows)
    evaluated = run_cli(
        "evaluate", str(directory / "checkpoint_000002"), "--episodes", "2", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    summary = json.loads(evaluated.stdout)
    assert summary["num_episodes"] == 2 and summary["episode_return_mean"] > 0
    resumed = run_cli("--resume", "--output-dir", str(directory), "--stop-iters", "3", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "after 3 iterations" in resumed.stdout


def test_a_pettingzoo_env_module_trains_one_policy_per_agent(tmp_path):
    pytest.importorskip("pettingzoo", reason="needs the pettingzoo extra")
    directory = tmp_path / "run"
    done = run_cli(
        "--env", "pettingzoo.classic.rps_v2", *SMALL_PPO, "--stop-iters", "1",
        "--output-dir", str(directory), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("iter"))
    assert "player_0" in row and "player_1" in row


# -- the newcomer's path: the README's commands, missing extras, the last lines ----------------
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The README's main-job command of the tour, and the folder it writes.
README_RUN = ["--output-dir", "runs/cartpole", "--stop-iters", "2"]
#: A pip command the last lines put before a command whose extra is not installed.
PIP_PREFIX = re.compile(r"^pip install -e '[^']*' && ")
NEXT_LABELS = ("evaluate", "video", "inspect", "tensorboard", "continue")


def run_without(modules: list[str], argv: list[str], cwd) -> subprocess.CompletedProcess:
    """`python -m trainer ARGV` with `modules` made unimportable, as if not installed: in a
    subprocess, since this process may have imported them already."""
    code = (
        "import sys\n"
        f"for name in {modules!r}:\n"
        "    sys.modules[name] = None\n"
        "from trainer.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def next_lines(output: str) -> dict[str, str]:
    """The main job's last lines, "label: command", by label."""
    found = re.findall(rf"^({'|'.join(NEXT_LABELS)}): +(.+)$", output, re.M)
    return dict(found)


@pytest.mark.parametrize(
    "blocked, argv, needs, extra",
    [
        (
            ["pygame"],
            ["evaluate", "RUN", "--episodes", "1", "--video", "cartpole.gif"],
            "--video (rendering CartPole-v1) needs pygame",
            "video",
        ),
        (["PIL"], ["evaluate", "RUN", "--video", "cartpole.gif"], "needs Pillow", "video"),
        (["torch"], ["--framework", "torch"], "--framework torch needs torch", "torch"),
        (
            ["pettingzoo"],
            ["--env", "pettingzoo.classic.rps_v2"],
            "--env pettingzoo.classic.rps_v2 needs pettingzoo",
            "pettingzoo",
        ),
        (["ray.tune"], ["tune", "--config", "search.toml"], "tune needs Ray Tune", "tune"),
        (["ray"], ["--backend", "ray"], "--backend ray needs ray", "ray"),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_extra(
    trained_run, tmp_path, blocked, argv, needs, extra
):
    run, _ = trained_run
    (tmp_path / "search.toml").write_text('env = "CartPole-v1"\n[stop]\ntraining_iteration = 1\n')
    done = run_without(blocked, [str(run) if a == "RUN" else a for a in argv], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert done.stderr.startswith("error: ") and needs in done.stderr, done.stderr
    # From this checkout (not the current folder): the editable install of the extra.
    assert done.stderr.rstrip().endswith(f"pip install -e '{REPO}[{extra}]'"), done.stderr
    assert not list(tmp_path.glob("*.gif"))


@pytest.mark.slow
def test_a_torch_checkpoint_without_torch_is_one_line_naming_the_extra(tmp_path):
    pytest.importorskip("torch", reason="needs the torch extra to write the checkpoint")
    argv = [*SMALL_PPO, "--num-env-runners", "0", "--framework", "torch", "--stop-iters", "1"]
    done = run_cli(*argv, "--output-dir", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for argv, needs in (
        (
            ["evaluate", "run"],
            f"error: checkpoint {tmp_path / 'run' / 'checkpoint_000001'} (PPOConfig.framework(",
        ),
        (["--resume", "--output-dir", "run", "--stop-iters", "2"], "error: --resume of run ("),
    ):
        without = run_without(["torch"], argv, tmp_path)
        assert without.returncode == 2, without.stdout + without.stderr
        assert without.stderr.startswith(needs) and without.stderr.count("\n") == 1
        assert without.stderr.rstrip().endswith(
            f"needs torch, which is not installed: pip install -e '{REPO}[torch]'"
        )


def test_the_tensorboard_extra_installs_tensorboard_itself():
    import configparser

    setup = configparser.ConfigParser()
    setup.read(os.path.join(REPO, "setup.cfg"))
    extra = setup["options.extras_require"]["tensorboard"].split()
    names = {re.split(r"[<>=\[]", requirement)[0] for requirement in extra}
    assert {"tensorboardX", "tensorboard"} <= names  # writes the event files; shows them


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """The README tour's main-job command, in a fresh folder."""
    cwd = tmp_path_factory.mktemp("readme")
    done = run_cli(*README_RUN, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return cwd, done.stdout


@pytest.mark.slow
def test_the_header_is_short_and_names_the_framework(readme_run):
    _, out = readme_run
    header = out[: out.index("\nready in ")]
    assert len(header) < 1000, header
    assert "=None" not in header and "fcnet_kernel_initializer" not in header
    # Only what differs from RLlib's defaults after the preset: here, nothing.
    assert "\nPPO (numpy) on 'CartPole-v1': the preset's settings\n" in header, header


def test_the_readme_shows_the_main_jobs_last_lines(readme_run):
    _, out = readme_run
    printed = {label: PIP_PREFIX.sub("", command) for label, command in next_lines(out).items()}
    assert list(printed) == list(NEXT_LABELS), out
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    shown = dict(re.findall(rf"^({'|'.join(NEXT_LABELS)}): +(.+)$", readme, re.M))
    assert shown == printed


@pytest.mark.slow
def test_the_printed_continue_command_resumes_when_pasted(readme_run):
    cwd, out = readme_run
    command = shlex.split(next_lines(out)["continue"])
    assert command[:3] == ["python", "-m", "trainer"], command
    resumed = run_cli(*command[3:], cwd=cwd)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert re.findall(r"^iter +(\d+)", resumed.stdout, re.M) == ["3", "4"]
    assert "stopped (reached 4 iterations) after 4 iterations" in resumed.stdout


@pytest.mark.slow
def test_resuming_a_run_that_met_its_criterion_says_so_and_trains_nothing(tmp_path):
    # A return CartPole's random policy reaches in the first iteration: the run is "solved".
    done = run_cli(*SMALL_PPO, "--stop-reward", "5", "--output-dir", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"stopped \(reached mean return [\d.]+ >= 5\) after 1 iterations", done.stdout)
    continue_line = next_lines(done.stdout)["continue"]
    assert continue_line == (
        "python -m trainer --resume --output-dir run --stop-reward none --stop-iters 2"
    )
    again = run_cli("--resume", "--output-dir", "run", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(
        r"^the run already reached its stop criterion at iteration 1 \(reached mean return "
        r"[\d.]+ >= 5\): nothing to train\. To train further, raise the criterion",
        again.stdout,
        re.M,
    ), again.stdout
    assert next_lines(again.stdout)["continue"] == continue_line
    assert not re.search(r"^iter ", again.stdout, re.M)
    assert len((tmp_path / "run" / "result.json").read_text().splitlines()) == 1
    further = run_cli(*shlex.split(continue_line)[3:], cwd=tmp_path)
    assert further.returncode == 0, further.stdout + further.stderr
    assert re.findall(r"^iter +(\d+)", further.stdout, re.M) == ["2"]


@pytest.mark.slow
def test_framework_flag_runs_torch_and_says_so(tmp_path):
    pytest.importorskip("torch", reason="needs the torch extra (pip install -e '.[torch]')")
    done = run_cli(
        *SMALL_PPO, "--framework", "torch", "--stop-iters", "1", "--output-dir", "run", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PPO (torch) on 'CartPole-v1': the preset's settings, with " in done.stdout
    assert json.loads((tmp_path / "run" / "params.json").read_text())["framework_str"] == "torch"


def test_inspect_formats_times_and_sizes_every_file(trained_run, tmp_path):
    run, _ = trained_run
    done = run_cli("inspect", str(run / "checkpoint_000004"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"algorithm: iteration=4, time_total_s=\d+\.\d\d s,", done.stdout), done.stdout
    size = re.search(r"^    metadata\.json +(\d+(\.\d)? K?B)$", done.stdout, re.M)
    assert size, done.stdout
    files = sorted(p for p in (run / "checkpoint_000004").iterdir() if p.is_file())
    total = re.search(r"^    total +([\d.]+) KB$", done.stdout, re.M)
    assert total and float(total.group(1)) == round(sum(p.stat().st_size for p in files) / 1024, 1)


def test_the_plot_waits_for_the_background_import_of_matplotlib_which_runs_once(monkeypatch):
    """Two threads importing matplotlib at once can meet a half-made module: the plot asking
    while the background import runs waits for it and gets its classes, never importing
    matplotlib alongside (a stand-in import that takes a while stands for matplotlib's)."""
    from trainer.cli import learning_curve
    from trainer.util.imports import OnceImport

    imported_on: list[str] = []
    started, release = threading.Event(), threading.Event()

    def slow_import():
        imported_on.append(threading.current_thread().name)
        started.set()
        release.wait(10)  # until the plot has asked
        return object, int

    monkeypatch.setattr(learning_curve, "_FIGURE_CLASSES", OnceImport("matplotlib", slow_import))
    learning_curve.import_in_background()
    assert started.wait(10)
    threading.Timer(0.2, release.set).start()
    assert learning_curve._FIGURE_CLASSES.get() == (object, int)
    assert imported_on == ["import-matplotlib"]


PLOT_AFTER_A_FAILED_BACKGROUND_IMPORT = """
import sys
from trainer.cli import learning_curve

class Fails:
    # matplotlib.colors "not found" (once, or always), in the middle of matplotlib/__init__.py:
    # as when the PathFinder was skipped (a finder taken out of sys.meta_path meanwhile).
    times = 1 if sys.argv[2] == "once" else 10**9

    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib.colors" and Fails.times > 0:
            Fails.times -= 1
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Fails())
learning_curve.import_in_background().join(60)
results = [{"num_env_steps_sampled_lifetime": 100, "env_runners": {"episode_return_mean": 1.0}}]
for _ in range(2):
    try:
        print(learning_curve.write_learning_curve(results, sys.argv[1], "title"))
    except Exception as error:
        print(type(error).__name__, error)
"""


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
@pytest.mark.parametrize("failing", ["once", "always"])
def test_the_plot_after_a_failed_background_import_imports_matplotlib_afresh(failing, tmp_path):
    """A failed import leaves matplotlib's submodules bound to a dead package in sys.modules:
    the plot does not import it again over them (CI's "module 'matplotlib' has no attribute
    'get_data_path'") but afresh, and draws; an import that fails again is the error, then
    named as the earlier failure. A fresh interpreter: this one has imported matplotlib."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PLOT_AFTER_A_FAILED_BACKGROUND_IMPORT,
            str(tmp_path / "p.png"),
            failing,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    if failing == "once":
        assert done.stdout.splitlines() == ["True", "True"]
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert done.stdout.splitlines() == [
            "ModuleNotFoundError No module named 'matplotlib.colors'",
            "ImportError importing matplotlib failed earlier in this process "
            "(ModuleNotFoundError: No module named 'matplotlib.colors')",
        ]
        assert not (tmp_path / "p.png").exists()


class _MetaPathKeepingItsFinders(list):
    """`sys.meta_path` that refuses to lose a finder. Another thread's import walks the list by
    index without a lock: a finder taken out meanwhile makes it skip the next one (PathFinder),
    and an installed module is not found: the main job's matplotlib import, on the thread
    beside tensorboardX's, could fail half-way when that import took its finder out."""

    def remove(self, value):
        raise AssertionError(f"{value!r} taken out of sys.meta_path")

    def pop(self, index=-1):
        raise AssertionError(f"{self[index]!r} taken out of sys.meta_path")

    def __delitem__(self, index):
        raise AssertionError(f"sys.meta_path[{index!r}] taken out")


def test_tensorboardx_import_takes_no_finder_out_of_sys_meta_path(monkeypatch):
    pytest.importorskip("tensorboardX", reason=NEEDS_TENSORBOARD)
    from trainer.cli.tensorboard import import_tensorboardx

    monkeypatch.setattr(sys, "meta_path", _MetaPathKeepingItsFinders(sys.meta_path))
    before = list(sys.meta_path)
    for _ in range(2):
        assert import_tensorboardx().SummaryWriter
    # At most its own finder, put first once: a walk under way asks one finder twice, skips none.
    assert sys.meta_path[len(sys.meta_path) - len(before) :] == before
    assert len(sys.meta_path) - len(before) <= 1
