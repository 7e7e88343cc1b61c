"""Ray Tune from RLlib scripts and the command line: an RLlib-style Tune script run unmodified
through `python -m trainer run` (real Ray chosen by the launcher, `ray.tune` served by
`trainer.tune`), `run_rllib_example_script_experiment` running its trials through Tune (a real
`ResultGrid`), and `python -m trainer tune --config FILE` (a search from a TOML file; its
bad-input errors are checked without Ray)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainer import launcher
from trainer.cli import main as cli_main
from trainer.cli.config_file import ConfigFileError
from trainer.cli.search_file import read_search_file
from trainer.launcher.finder import real_tune_available
from trainer.launcher.script import uses_tune_runner

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 300
needs_tune = pytest.mark.skipif(
    not real_tune_available(), reason="needs Ray Tune (pip install 'localrl[tune]')"
)


# -- which scripts get real Ray (no Ray started) -------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "from ray import tune\ntune.Tuner('PPO').fit()",
        "import ray.tune as t\nt.run('PPO')",
        "from ray.tune import Tuner\ndef main():\n    Tuner('PPO')",
        "from ray.tune.schedulers import ASHAScheduler\nscheduler = ASHAScheduler()",
        "from ray import train\ntrain.report({})",
        "import ray\nray.tune.Tuner('PPO')",
        "import ray.tune.logger\ncallbacks = [ray.tune.logger.TBXLoggerCallback()]",
        "from ray import tune as tn\nspace = tn.uniform(0.1, 0.2)",
        "from ray.air.integrations.wandb import WandbLoggerCallback as W\ncallbacks = [W()]",
        "from ray.tune.schedulers import *",
    ],
)
def test_a_script_using_tunes_experiment_runner_is_seen(source):
    assert uses_tune_runner(source)


@pytest.mark.parametrize(
    "source",
    [
        "from ray import tune\nlr = tune.grid_search([1, 2])",
        "from ray.tune.registry import get_trainable_cls, register_env",
        "from ray.tune.result import TRAINING_ITERATION",
        "from ray.air.constants import TRAINING_ITERATION",
        "import ray\nray.init()\nrun = 3\nx.Tuner()",
        "this is not python (",
        # imports alone: under Ray's stand-in they import, their names fail when used
        "import ray.tune.logger\nimport ray\nray.init(include_dashboard=True)",
        "import ray.tune.logger\nprint(ray.tune.logger.pretty_print({'a': 1}))",  # served
        "from ray.tune import Tuner",
        "from ray.tune.schedulers import ASHAScheduler",
        "from ray import train\n",
        "from ray.air.integrations.wandb import WandbLoggerCallback",
    ],
)
def test_registry_grid_search_result_keys_and_unused_imports_keep_rays_stand_in(source):
    assert not uses_tune_runner(source)


@pytest.mark.ray
@needs_tune
def test_with_real_ray_ray_tune_is_tunes_own_seen_through_the_front():
    """`install(real_ray=True)` (what the launcher does for a Tune script): `ray.tune` and
    `ray.tune.registry` look public names up in trainer.tune first, everything else is Tune's;
    `uninstall()` puts Tune's own modules back."""
    import trainer
    import trainer.tune

    launcher.install(real_ray=True)
    try:
        import ray
        import ray.tune.progress_reporter
        from ray import tune
        from ray.tune.registry import _global_registry, get_trainable_cls, register_env

        assert tune.Tuner is trainer.tune.Tuner and tune.register_env is trainer.tune.register_env
        assert register_env is trainer.tune.register_env
        assert get_trainable_cls("PPO") is trainer.PPO  # the Algorithm, as in RLlib
        assert tune.CLIReporter is ray.tune.progress_reporter.CLIReporter  # Tune's own
        assert tune.schedulers.ASHAScheduler.__module__.startswith("ray.tune.schedulers")
        assert type(_global_registry).__module__ == "ray.tune.registry"
        assert ray.tune is tune and hasattr(ray, "get_runtime_context")  # real Ray
        from ray.rllib.algorithms.ppo import PPOConfig

        assert PPOConfig is trainer.PPOConfig
    finally:
        launcher.uninstall()
    import ray.tune

    assert ray.tune.Tuner is not trainer.tune.Tuner
    assert sys.modules["ray.tune"] is ray.tune


@pytest.mark.ray
@needs_tune
def test_with_real_tune_rllibs_algorithm_names_are_this_projects_algorithms():
    from trainer.algorithms.dreamerv3 import DreamerV3

    launcher.install(real_ray=True)
    try:
        from ray.tune.registry import get_trainable_cls

        assert get_trainable_cls("DreamerV3") is DreamerV3
    finally:
        launcher.uninstall()


@pytest.mark.slow
@pytest.mark.ray
@needs_tune
def test_an_algorithm_restores_from_a_tune_checkpoint(tmp_path):
    """RLlib's scripts restore `best_result.checkpoint` (a Tune `Checkpoint`) with
    `algo.restore(...)`, as RLlib's Algorithm (a Tune Trainable) takes it."""
    from ray.tune import Checkpoint

    from trainer import PPOConfig
    from trainer.testing import check

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)  # a quick iteration
    )
    with config.build() as trained:
        trained.train()
        trained.save_to_path(str(tmp_path / "checkpoint"))
        weights = trained.get_weights()
    with config.build() as restored:
        restored.restore(Checkpoint.from_directory(str(tmp_path / "checkpoint")))
        assert restored.training_iteration == 1
        check(restored.get_weights(), weights)  # the trained weights


# -- the search file's errors (no Ray started) ---------------------------------------------------
GOOD_SEARCH = """
algo = "PPO"
env = "CartPole-v1"
metric = "env_runners/episode_return_mean"
mode = "max"
[config]
train_batch_size = 200
lr = {grid_search = [1e-3, 1e-4]}
[config.rl_module.model_config]
fcnet_hiddens = {choice = [[8], [16]]}
[stop]
training_iteration = 2
"""


def write(tmp_path: Path, text: str, name: str = "search.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_a_search_file_keeps_its_search_spaces_at_their_settings(tmp_path):
    search = read_search_file(write(tmp_path, GOOD_SEARCH))
    assert search.algo == "PPO" and search.config.env == "CartPole-v1"
    assert search.config.train_batch_size == 200
    assert {path: space.kind for path, space in search.spaces.items()} == {
        ("lr",): "grid_search",
        ("model", "fcnet_hiddens"): "choice",
    }
    assert search.stop == {"training_iteration": 2}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lrr = 1", "lrr: not a key of a search file; allowed: algo"),
        ("algo = 'PPPO'", "algo = 'PPPO'"),
        ("mode = 'best'\nmetric = 'x'", "mode = 'best': must be 'max' or 'min'"),
        ("metric = 'x'", "metric and mode: give both or neither"),
        ("num_samples = 0", "num_samples = 0: must be a whole number >= 1"),
        ("[config]\nlr = {uniform = [0.1]}", "lr = {uniform = [0.1]}: give 2 numbers [low, high]"),
        ("[config]\nlr = {uniform = [0.2, 0.1]}", "low must be less than high"),
        ("[config]\nlr = {loguniform = [0, 0.1]}", "low must be > 0"),
        ("[config]\nlr = {grid_search = []}", "give a non-empty list"),
        ("[config]\nnot_a_setting = {grid_search = [1, 2]}", "'not_a_setting' is not a setting"),
        ("[config]\nnum_env_runners = {grid_search = [-1, 2]}", "num_env_runners"),
        ("[config]\nlr = 'fast'", "lr"),
        ("[stop]\ntraining_iteration = 'ten'", "training_iteration = 'ten': must be a number"),
        ("[scheduler]\ntype = 'hyperband'", "type = 'hyperband': must be one of 'asha', 'pbt'"),
        (
            "metric = 'm'\nmode = 'max'\n[scheduler]\ntype = 'asha'\nmax_tt = 3",
            "max_tt: not a setting of the 'asha' scheduler; allowed: time_attr, max_t",
        ),
        (
            "metric = 'm'\nmode = 'max'\n[scheduler]\ntype = 'asha'\nmax_t = 2\ngrace_period = 5",
            "grace_period = 5: must be <= max_t (2)",
        ),
        ("[scheduler]\ntype = 'asha'", "a scheduler needs metric and mode"),
        ("metric = 'm'\nmode = 'max'\n[scheduler]\ntype = 'pbt'", "needs at least one setting"),
        (
            "metric = 'm'\nmode = 'max'\n[scheduler]\ntype = 'pbt'\n"
            "hyperparam_mutations = {no_such = [1, 2]}",
            "hyperparam_mutations.no_such: not a setting of PPO",
        ),
        ("[checkpoint]\nevery = 2", "every: not a checkpoint setting; allowed: checkpoint_freq"),
        ("[checkpoint]\nnum_to_keep = 0", "num_to_keep = 0: must be a whole number"),
    ],
)
def test_a_bad_search_file_names_the_key_the_value_and_what_is_allowed(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as raised:
        read_search_file(path)
    assert expected in str(raised.value)
    assert path in str(raised.value)


@pytest.mark.ray
@needs_tune
def test_a_search_files_schedulers_are_tunes(tmp_path):
    from trainer import tune

    base = 'metric = "env_runners/episode_return_mean"\nmode = "max"\n'
    pbt = read_search_file(
        write(
            tmp_path,
            base + "[scheduler]\ntype = 'pbt'\nperturbation_interval = 2\n"
            "hyperparam_mutations = {lr = {loguniform = [1e-5, 1e-3]}, num_epochs = [2, 4]}",
            "pbt.toml",
        )
    )._scheduler(tune)
    assert isinstance(pbt, tune.schedulers.PopulationBasedTraining)
    assert isinstance(pbt._hyperparam_mutations["lr"], tune.search.sample.Float)
    assert pbt._hyperparam_mutations["num_epochs"] == [2, 4]
    asha = read_search_file(
        write(tmp_path, base + "[scheduler]\ntype = 'asha'\nmax_t = 8", "asha.toml")
    )._scheduler(tune)
    assert isinstance(asha, tune.schedulers.ASHAScheduler) and asha._max_t == 8


def test_the_tune_command_exits_2_on_a_bad_file_before_starting_ray(tmp_path, capsys):
    path = write(tmp_path, "[config]\nlr = {uniform = [1, 2, 3]}")
    with pytest.raises(SystemExit) as exit_:
        cli_main(["tune", "--config", path])
    assert exit_.value.code == 2
    assert "lr = {uniform = [1, 2, 3]}: give 2 numbers" in capsys.readouterr().err
    assert "ray" not in sys.modules or not _ray_running()


def _ray_running() -> bool:
    import ray

    return ray.is_initialized()


def test_a_bad_example_trials_setting_is_refused(monkeypatch):
    from trainer.example_scripts import TRIALS_ENV_VAR, trials_run_through_tune

    monkeypatch.setenv(TRIALS_ENV_VAR, "threads")
    with pytest.raises(ValueError, match="LOCALRL_EXAMPLE_TRIALS='threads': must be one of"):
        trials_run_through_tune()
    monkeypatch.setenv(TRIALS_ENV_VAR, "in-process")
    assert not trials_run_through_tune()


# -- on real Ray ---------------------------------------------------------------------------------
TUNE_SCRIPT = """
import gymnasium as gym
import ray
from ray import tune
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN
from ray.tune.registry import register_env

register_env("my_cartpole", lambda env_config: gym.make("CartPole-v1"))
ray.init(num_cpus=2, include_dashboard=False)
config = (
    PPOConfig()
    .environment("my_cartpole")
    .env_runners(num_env_runners=0)
    .training(lr=tune.grid_search([1e-3, 1e-4]), train_batch_size=200, minibatch_size=100,
              num_epochs=1)
)
results = tune.Tuner(
    config.algo_class,
    param_space=config,
    run_config=tune.RunConfig(
        stop={"training_iteration": 2},
        checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
        verbose=1,
    ),
    tune_config=tune.TuneConfig(max_concurrent_trials=2),
).fit()
metric = f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
best = results.get_best_result(metric=metric, mode="max")
print("trials", len(results), "errors", results.num_errors)
print("iterations", sorted(r.metrics["training_iteration"] for r in results))
print("best lr", best.config["lr"], "checkpoint", sorted(os.listdir(best.checkpoint.path)))
print("real ray", hasattr(ray, "get_runtime_context"), type(results).__module__)
"""


@pytest.mark.ray
@pytest.mark.slow
@needs_tune
def test_an_rllib_tune_script_runs_unmodified_through_the_launcher(tmp_path):
    # The script starts a Ray of its own (its ray.init(num_cpus=2)): not the session's, which
    # it could join only without the num_cpus and with its HOME (Ray's auth token file).
    script = tmp_path / "tune_script.py"
    script.write_text("import os\n" + TUNE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path))  # ~/ray_results
    env.pop(launcher.ENV_VAR, None)
    result = subprocess.run(
        [sys.executable, "-m", "trainer", "run", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "trials 2 errors 0" in result.stdout
    assert "iterations [2, 2]" in result.stdout
    best = next(line for line in result.stdout.splitlines() if line.startswith("best lr"))
    assert "'metadata.json'" in best and ".msgpack'" in best, best  # the msgpack checkpoint
    assert "real ray True ray.tune.result_grid" in result.stdout
    # Tune's own run folder: one folder per trial, with its progress and results files
    runs = list((tmp_path / "ray_results").iterdir())
    assert len(runs) == 1
    trials = [p for p in runs[0].iterdir() if p.is_dir()]
    assert len(trials) == 2
    assert all((trial / "progress.csv").is_file() for trial in trials)
    assert all((trial / "result.json").is_file() for trial in trials)


@pytest.mark.ray
@pytest.mark.slow
@needs_tune
def test_the_example_driver_runs_its_trials_through_tune(ray_session, tmp_path, monkeypatch):
    from ray.tune import ResultGrid as TuneResultGrid

    from trainer import PPOConfig
    from trainer.example_scripts import TRIALS_ENV_VAR
    from trainer.testing import add_rllib_example_script_args, run_rllib_example_script_experiment
    from trainer.tune import grid_search

    monkeypatch.setenv(TRIALS_ENV_VAR, "tune")
    # Tune's default storage (~/ray_results, read when Ray Train's constants are imported)
    monkeypatch.setattr("ray.train.constants.DEFAULT_STORAGE_PATH", str(tmp_path / "ray_results"))
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(
            lr=grid_search([1e-3, 1e-4]), train_batch_size=200, minibatch_size=100, num_epochs=1
        )
    )
    args = add_rllib_example_script_args().parse_args(
        ["--stop-iters=2", "--stop-reward=1000", "--checkpoint-at-end", "--verbose=0"]
    )
    args.max_concurrent_trials = 2
    grid = run_rllib_example_script_experiment(config, args, keep_ray_up=True)
    assert isinstance(grid, TuneResultGrid)
    assert len(grid) == 2 and grid.num_errors == 0
    assert sorted(result.config["lr"] for result in grid) == [1e-4, 1e-3]
    assert all(result.metrics["training_iteration"] == 2 for result in grid)
    assert all(result.checkpoint is not None for result in grid)
    assert str(tmp_path / "ray_results") in grid.experiment_path
    # --as-test reads Tune's results: a target no trial reached fails, as in RLlib.
    args = add_rllib_example_script_args().parse_args(
        ["--stop-iters=1", "--stop-reward=1000", "--as-test"]
    )
    config.training(lr=1e-3)
    with pytest.raises(ValueError, match="of 1000.0 not reached! Best value reached is"):
        run_rllib_example_script_experiment(config, args, keep_ray_up=True)


@pytest.mark.ray
@pytest.mark.slow
@needs_tune
def test_the_tune_command_runs_a_search_from_a_toml_file(ray_session, tmp_path, capsys):
    path = write(
        tmp_path,
        f"""
        algo = "PPO"
        env = "CartPole-v1"
        metric = "env_runners/episode_return_mean"
        mode = "max"
        max_concurrent_trials = 2
        name = "lr-search"
        storage_path = "{tmp_path}"
        verbose = 0
        [config]
        train_batch_size = 200
        minibatch_size = 100
        num_epochs = 1
        num_env_runners = 0
        lr = {{grid_search = [1e-3, 1e-4]}}
        [stop]
        training_iteration = 2
        [scheduler]
        type = "asha"
        max_t = 2
        grace_period = 1
        [checkpoint]
        checkpoint_at_end = true
        """,
    )
    assert cli_main(["tune", "--config", path]) == 0
    out = capsys.readouterr().out
    assert "2 trials, 0 failed" in out
    assert "best trial: env_runners/episode_return_mean=" in out
    assert "(max) with {'lr': " in out
    assert f"run folder: {tmp_path / 'lr-search'}" in out
    trials = [p for p in (tmp_path / "lr-search").iterdir() if p.is_dir()]
    assert len(trials) == 2
    for trial in trials:
        assert any(p.name.startswith("checkpoint_") for p in trial.iterdir())
