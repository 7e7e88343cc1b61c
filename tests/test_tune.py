"""Ray Tune with this project's algorithms as trainables (`trainer.tune`), on a real local Ray:
a grid with 2 trials at a time, ASHA stopping the bad trials, PBT exploiting another trial's
checkpoint with its exact weights, `Tuner.restore` after the driver was SIGKILLed mid-search.
Tune's own run folder, checkpoints and results are what the tests read."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from trainer import DQN, PPO, Algorithm, ConfigError, DQNConfig, PPOConfig
from trainer.callbacks import RLlibCallback
from trainer.core.module_checkpoint import load_module
from trainer.testing import env_runner_pids

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
tune = pytest.importorskip("trainer.tune", reason="needs Ray Tune: pip install 'localrl[tune]'")
# On the session's Ray (`ray_session`, tests/conftest.py: 4 CPUs, and this folder on the path
# of its workers, whose trial actors import this file's env creator and callbacks by name).
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

RETURN = "env_runners/episode_return_mean"
MODULE_DIR = Path("learner_group", "learner", "rl_module", "default_policy")


def scaled_cartpole(env_config: dict) -> gym.Env:
    """CartPole whose rewards are multiplied by env_config["scale"]: trials of a small scale
    score low whatever they learn, so schedulers rank trials the same in every run."""
    return gym.wrappers.TransformReward(
        gym.make("CartPole-v1"), lambda reward: reward * env_config["scale"]
    )


def tiny_ppo(**training) -> PPOConfig:
    """A PPO config whose iteration takes a fraction of a second, in the trial's actor."""
    settings = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1}
    settings.update(training)
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


class ConcurrentTrials(tune.Callback):
    """Counts the trials running at once (Tune's callbacks run in the driver)."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.most = 0

    def on_trial_start(self, iteration, trials, trial, **info):
        self.running.add(trial.trial_id)
        self.most = max(self.most, len(self.running))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.running.discard(trial.trial_id)


def run_config(tmp_path: Path, **settings) -> tune.RunConfig:
    return tune.RunConfig(storage_path=str(tmp_path), verbose=0, **settings)


def meet_the_other_trial_of_the_pair(folder: str, *, algorithm, **kwargs) -> None:
    """Trials 0 and 1 (2 and 3) wait, when built, until both have been built: they can only
    both finish if they run at the same time."""
    if algorithm.trial_id == "default":  # not in a trial: built from a trial's checkpoint
        return
    index = int(algorithm.trial_id.rsplit("_", 1)[1])
    Path(folder, str(index)).touch()
    pair = {str(index - index % 2), str(index - index % 2 + 1)}
    deadline = time.monotonic() + 60
    while not pair <= set(os.listdir(folder)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"trial {index} ran alone: the other of {sorted(pair)} never came")
        time.sleep(0.05)


def test_a_grid_of_four_runs_two_at_a_time_with_checkpoints_in_the_trial_folders(tmp_path):
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    config = tiny_ppo(
        lr=tune.grid_search([1e-3, 3e-4]), num_epochs=tune.grid_search([1, 2])
    ).callbacks(on_algorithm_init=functools.partial(meet_the_other_trial_of_the_pair, meeting))
    concurrent = ConcurrentTrials()
    results = tune.Tuner(
        "PPO",
        param_space=config,
        # reuse_actors: trials 2 and 3 run in the actors of 0 and 1 (fewer processes to start).
        tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=True),
        run_config=run_config(
            tmp_path,
            name="grid",
            stop={"training_iteration": 1},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            callbacks=[concurrent],
        ),
    ).fit()
    assert results.num_errors == 0 and len(results) == 4
    assert sorted((r.config["lr"], r.config["num_epochs"]) for r in results) == [
        (3e-4, 1),
        (3e-4, 2),
        (1e-3, 1),
        (1e-3, 2),
    ]
    # Never more than two at once. (That each pair ran together is the meeting's proof: a
    # trial finishes only once its pair's other trial was built. Tune's driver may report a
    # trial's start after the other's end on a busy machine: a fresh-clone CI run saw 1.)
    assert 1 <= concurrent.most <= 2
    for result in results:
        assert result.metrics["training_iteration"] == 1
        assert result.metrics["num_env_steps_sampled_lifetime"] == 200
        # Tune's run folder: the trial's own folder holds its results and our checkpoint.
        trial_folder = Path(result.path)
        assert trial_folder.parent == tmp_path / "grid"
        assert (trial_folder / "progress.csv").is_file()
        assert (trial_folder / "result.json").is_file()
        assert any(trial_folder.glob("events.out.tfevents.*"))  # TensorBoard
        checkpoint = Path(result.checkpoint.path)
        assert checkpoint.parent == trial_folder
        assert (checkpoint / "metadata.json").is_file() and (checkpoint / MODULE_DIR).is_dir()
    # A checkpoint is the trial's algorithm: it restores here with its iteration and settings.
    last = max(results, key=lambda result: (result.config["lr"], result.config["num_epochs"]))
    algorithm = PPO.from_checkpoint(last.checkpoint.path)
    try:
        assert algorithm.iteration == 1
        assert (algorithm.config.lr, algorithm.config.num_epochs) == (1e-3, 2)
    finally:
        algorithm.stop()
    best = results.get_best_result(RETURN, "max")
    assert best.metrics["env_runners"]["episode_return_mean"] == max(
        r.metrics["env_runners"]["episode_return_mean"] for r in results
    )


class RecordWorkingFolder(RLlibCallback):
    """Logs, from each EnvRunner, whether it runs in the folder the driver ran in when Ray
    started (where Ray starts an RLlib trial's EnvRunner actors), and, from the Algorithm,
    whether it runs in the trial's folder (where Tune moves a trial's actor)."""

    def __init__(self, driver_folder):
        super().__init__()
        self.driver_folder = driver_folder

    def on_episode_end(self, *, metrics_logger, env_runner, **kwargs):
        if env_runner.worker_index > 0:
            in_driver_folder = os.getcwd() == self.driver_folder
            metrics_logger.log_value("in_driver_folder", float(in_driver_folder), reduce="min")

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["algorithm_folder"] = os.getcwd()


def test_a_trials_env_runners_start_in_the_drivers_folder_as_under_ray(tmp_path):
    """Ray starts an RLlib trial's EnvRunner actors in the driver's working folder (where Ray
    was started), while Tune moves the trial's own actor into the trial's folder: env and
    callback code in an EnvRunner that reads a file by a relative path finds it where it
    would under Ray."""
    config = (
        tiny_ppo()
        .env_runners(num_env_runners=1)
        .callbacks(functools.partial(RecordWorkingFolder, os.getcwd()))
    )
    results = tune.Tuner(
        "PPO",
        param_space=config,
        run_config=run_config(tmp_path, name="folders", stop={"training_iteration": 1}),
    ).fit()
    assert results.num_errors == 0
    metrics = results[0].metrics
    assert metrics["env_runners"]["in_driver_folder"] == 1.0
    # The trial's working folder (Tune's, under the Ray session) is named like its results.
    assert Path(metrics["algorithm_folder"]).name == Path(results[0].path).name


def test_algorithm_classes_and_configs_are_trainables_and_ray_tune_refuses_them(tmp_path):
    ppo_config = tiny_ppo()
    # reuse_actors: the second trial runs in the first one's actor, its algorithm rebuilt
    # from its own config (reset_config).
    ppo = tune.Tuner(
        ppo_config.algo_class,
        param_space=ppo_config.copy().training(lr=tune.grid_search([1e-3, 1e-4])),
        tune_config=tune.TuneConfig(reuse_actors=True, max_concurrent_trials=1),
        run_config=run_config(tmp_path, name="ppo", stop={"training_iteration": 1}),
    ).fit()
    assert ppo[0].metrics["pid"] == ppo[1].metrics["pid"]
    assert [r.metrics["training_iteration"] for r in ppo] == [1, 1]
    assert [r.metrics["num_env_steps_sampled_lifetime"] for r in ppo] == [200, 200]
    # tune.run with DQN's class and config (the `config=` of tune.run).
    dqn_config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(num_steps_sampled_before_learning_starts=32, train_batch_size=32)
        .reporting(min_sample_timesteps_per_iteration=64)
    )
    dqn = tune.run(
        DQN,
        config=dqn_config,
        stop={"training_iteration": 1},
        storage_path=str(tmp_path),
        name="dqn",
        verbose=0,
    )
    assert ppo.num_errors == 0
    assert dqn.trials[0].status == "TERMINATED"
    assert dqn.trials[0].last_result["num_env_steps_sampled_lifetime"] >= 64
    assert tune.as_trainable(PPO) is tune.as_trainable("PPO") is tune.as_trainable(ppo_config)
    assert issubclass(tune.as_trainable(PPO), tune.Trainable)
    assert tune.get_trainable_cls("DQN") is not None
    assert tune.get_trainable_cls("DQN").algorithm_class is DQN
    assert isinstance(tune.get_trainable_cls("DQN").get_default_config(), DQNConfig)
    # Ray Tune itself takes only its Trainables: the classes here go through trainer.tune.
    import ray.tune

    with pytest.raises(TypeError, match="convertable to Trainable"):
        ray.tune.Tuner(PPO, param_space=ppo_config.to_dict()).fit()


class ReportRunnersTrialIds(RLlibCallback):
    """Puts the tune_trial_id of each of the trial's EnvRunners into the result."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        trial_ids = algorithm.env_runner_group.foreach_env_runner(lambda r: r.tune_trial_id)
        result["runner_trial_ids"] = " ".join(map(str, trial_ids))


def test_ray_backend_runners_are_placed_in_the_trials_placement_group(tmp_path):
    # The trial reserves all 4 CPUs of the session's Ray (its main process and one EnvRunner
    # of 3): an actor placed outside its placement group would wait for a free CPU forever.
    # Each runner (the local one and the Ray actor) has the trial's id, as RLlib's runners have.
    config = (
        tiny_ppo()
        .env_runners(backend="ray", num_env_runners=1, num_cpus_per_env_runner=3)
        .callbacks(ReportRunnersTrialIds)
    )
    assert ray.cluster_resources()["CPU"] == 4
    bundles = tune.as_trainable(PPO).default_resource_request(config.to_dict()).bundles
    assert bundles == [{"CPU": 1.0}, {"CPU": 3.0}]
    assert tune.as_trainable(PPO).default_resource_request(
        tiny_ppo().env_runners(num_env_runners=2, num_cpus_per_env_runner=3)
    ).bundles == [{"CPU": 4.0}]  # worker processes: one bundle, at most this Ray's 4 CPUs
    assert PPO.default_resource_request(config).bundles == bundles  # RLlib's classmethod too
    results = tune.Tuner(
        PPO,
        param_space=config,
        run_config=run_config(tmp_path, name="on_ray", stop={"training_iteration": 2}),
    ).fit()
    assert results.num_errors == 0, results.errors
    assert results[0].metrics["num_env_steps_sampled_lifetime"] == 400
    trial_id = results[0].metrics["trial_id"]
    assert results[0].metrics["runner_trial_ids"] == f"{trial_id} {trial_id}"


class ReportLearnerActors(RLlibCallback):
    """Puts how many learners trained, and whether their replicas are equal, into the
    result."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        import pickle

        states = algorithm.learner_replicas.replica_states()
        result["num_learner_replicas"] = len(states)
        first = pickle.dumps(states[0]["module"])
        result["replicas_equal"] = all(pickle.dumps(s["module"]) == first for s in states)


def test_ray_backend_learners_are_placed_in_the_trials_placement_group(tmp_path):
    # The trial reserves all 4 CPUs (the main process's 1, RLlib's two learner bundles of 1.5):
    # the learner actor (learner 1; learner 0 is the trial's own) must run in that group.
    config = (
        tiny_ppo()
        .env_runners(backend="ray", num_env_runners=0)
        .learners(num_learners=2, num_cpus_per_learner=1.5)
        .callbacks(ReportLearnerActors)
    )
    bundles = tune.as_trainable(PPO).default_resource_request(config.to_dict()).bundles
    assert bundles == [{"CPU": 1.0}, {"CPU": 1.5}, {"CPU": 1.5}]
    results = tune.Tuner(
        PPO,
        param_space=config,
        run_config=run_config(tmp_path, name="learners", stop={"training_iteration": 2}),
    ).fit()
    assert results.num_errors == 0, results.errors
    assert results[0].metrics["num_learner_replicas"] == 2
    assert results[0].metrics["replicas_equal"]


def test_search_spaces_are_set_in_the_config_and_refused_by_a_plain_build():
    config = tiny_ppo(lr=tune.uniform(1e-4, 1e-3), gamma=tune.choice([0.9, 0.99]))
    assert config.search_settings().keys() == {"lr", "gamma"}
    with pytest.raises(ConfigError, match=r"(lr|gamma)=.*Ray Tune search space.*trainer.tune"):
        config.build()
    # A choice's values are checked when it is set, as a grid's are.
    with pytest.raises(ConfigError, match=r"lr must be a number >= 0"):
        tiny_ppo(lr=tune.choice([1e-3, -1.0]))


def test_asha_stops_the_bad_trials_early(tmp_path):
    tune.register_env("scaled_cartpole", scaled_cartpole)
    config = tiny_ppo().environment(
        "scaled_cartpole", env_config={"scale": tune.grid_search([1.0, 0.1, 0.01, 0.001])}
    )
    max_t = 4
    results = tune.Tuner(
        PPO,
        param_space=config,
        tune_config=tune.TuneConfig(
            metric=RETURN,
            mode="max",
            # One trial at a time, each in the actor of the one before it (one process to
            # start, not four): ASHA compares each trial at its rungs with the trials before.
            max_concurrent_trials=1,
            reuse_actors=True,
            scheduler=tune.schedulers.ASHAScheduler(
                time_attr="training_iteration", max_t=max_t, grace_period=1, reduction_factor=2
            ),
        ),
        run_config=run_config(tmp_path, name="asha"),
    ).fit()
    assert results.num_errors == 0
    iterations = {r.config["env_config"]["scale"]: r.metrics["training_iteration"] for r in results}
    assert iterations[1.0] == max_t
    stopped_early = [scale for scale, done in iterations.items() if done < max_t]
    assert len(stopped_early) >= 2 and 1.0 not in stopped_early, iterations
    assert results.get_best_result().config["env_config"]["scale"] == 1.0


class RecordRestoredWeights(RLlibCallback):
    """Writes the module weights and lr an algorithm has right after it loaded a checkpoint (as
    PBT's exploit does in the trial's actor) into env_config["record_to"], named by trial."""

    def on_checkpoint_loaded(self, *, algorithm, **kwargs):
        folder = Path(algorithm.config.env_config["record_to"])
        index = len(list(folder.glob(f"{algorithm.trial_id}_*.npz")))
        name = f"{algorithm.trial_id}_{index}"
        np.savez(folder / f"{name}.npz", **algorithm.get_module().get_state())
        (folder / f"{name}.json").write_text(json.dumps({"lr": algorithm.config.lr}))


def module_weights(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return dict(data)


def checkpoint_weights(checkpoint: Path) -> dict[str, np.ndarray]:
    return load_module(checkpoint / MODULE_DIR).get_state()


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_pbt_exploit_loads_the_donors_checkpointed_weights_and_keeps_its_new_lr(tmp_path):
    tune.register_env("scaled_cartpole", scaled_cartpole)
    records = tmp_path / "restored"
    records.mkdir()
    config = (
        tiny_ppo(lr=1e-3)
        .environment(
            "scaled_cartpole",
            env_config={"scale": tune.grid_search([1.0, 0.001]), "record_to": str(records)},
        )
        .callbacks(RecordRestoredWeights)
    )
    mutations = {"lr": [1e-4, 2e-4, 5e-4]}
    results = tune.Tuner(
        PPO,
        param_space=config,
        tune_config=tune.TuneConfig(
            metric=RETURN,
            mode="max",
            scheduler=tune.schedulers.PopulationBasedTraining(
                time_attr="training_iteration",
                perturbation_interval=2,
                hyperparam_mutations=mutations,
                quantile_fraction=0.5,
                resample_probability=1.0,
                # Both trials reach each perturbation point before PBT compares them: trial
                # 1 exploits trial 0 at iteration 2 in every run.
                synch=True,
            ),
        ),
        run_config=run_config(tmp_path, name="pbt", stop={"training_iteration": 4}),
    ).fit()
    assert results.num_errors == 0
    # Trial 0 (scale 1) is the better one; PBT clones its whole config into trial 1 (scale
    # and all), so the trials are told apart by their ids.
    first, second = sorted(results, key=lambda result: result.metrics["trial_id"])
    checkpoints = {
        trial.metrics["trial_id"]: [checkpoint_weights(c) for c in Path(trial.path).glob("c*_*")]
        for trial in (first, second)
    }
    exploits = []
    for weights_file in records.glob("*.npz"):
        trial_id = weights_file.name.rsplit("_", 1)[0]
        weights = module_weights(weights_file)
        # Every load (PBT's pauses resume a trial from its own checkpoints too) has exactly
        # the weights of a checkpoint.
        loaded_from = [
            owner
            for owner, saved in checkpoints.items()
            if any(same_weights(weights, one) for one in saved)
        ]
        assert loaded_from, f"{weights_file.name}: weights of no checkpoint"
        if loaded_from == [first.metrics["trial_id"]] != [trial_id]:
            exploits.append(json.loads(weights_file.with_suffix(".json").read_text())["lr"])
    # PBT's log: one line per exploit, [target, donor, ..., old config, new config].
    logged = [json.loads(line) for line in (tmp_path / "pbt" / "pbt_global.txt").open()]
    assert exploits and len(exploits) == len(logged)
    # The exploiting trial runs on with its own (mutated) lr: the donor's (1e-3) is not loaded.
    assert sorted(exploits) == sorted(line[-1]["lr"] for line in logged)
    assert all(lr in mutations["lr"] for lr in exploits)


DRIVER = textwrap.dedent(
    """
    import os, sys, time
    import ray
    from trainer import tune
    from trainer import PPOConfig

    address, storage, marker, kill_me = sys.argv[1:]

    def hand_over(path, text):
        # Written whole before it exists: the test reads it as soon as it does.
        with open(path + ".part", "w") as part:
            part.write(text)
        os.replace(path + ".part", path)

    class Progress(tune.Callback):
        def on_trial_complete(self, iteration, trials, trial, **info):
            if not os.path.exists(marker):
                hand_over(marker, trial.trial_id)

        def on_trial_result(self, iteration, trials, trial, result, **info):
            # The second trial is two iterations in: stop here, to be killed mid-search (not
            # in the test's process: Tuner.restore brings back the run's callbacks too).
            if (
                os.environ.get("KILL_ME_MID_SEARCH")
                and trial.trial_id.endswith("_00001")
                and result["training_iteration"] >= 2
            ):
                hand_over(kill_me, str(result["pid"]))
                time.sleep(600)

    ray.init(address=address, configure_logging=False)
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)  # a worker process of each trial's actor
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1,
                  lr=tune.grid_search([1e-3, 3e-4, 1e-4]))
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )
    tune.Tuner(
        "PPO",
        param_space=config,
        # reuse_actors: a trial runs in the actor of the one before it (fewer processes).
        tune_config=tune.TuneConfig(max_concurrent_trials=1, reuse_actors=True),
        run_config=tune.RunConfig(
            storage_path=storage, name="killed", verbose=0, callbacks=[Progress()],
            stop={"training_iteration": ITERATIONS},
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1, num_to_keep=2),
        ),
    ).fit()
    """
)
ITERATIONS = 3


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_tuner_restore_finishes_a_search_whose_driver_was_sigkilled(tmp_path):
    marker, kill_me = tmp_path / "first_trial_done", tmp_path / "kill_me"
    experiment = tmp_path / "killed"
    # The driver joins the session's Ray, as a script joins a running cluster.
    # TUNE_GLOBAL_CHECKPOINT_S=0: it writes the experiment's state at every step.
    driver = subprocess.Popen(
        [
            sys.executable,
            "-c",
            DRIVER.replace("ITERATIONS", str(ITERATIONS)),
            ray.get_runtime_context().gcs_address,
            str(tmp_path),
            str(marker),
            str(kill_me),
        ],
        env={**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "0", "KILL_ME_MID_SEARCH": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stderr: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr.append(driver.stderr.read()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: kill_me.exists() or driver.poll() is not None, 120, "the second trial")
        assert marker.exists() and kill_me.exists(), f"driver ended ({driver.poll()}): {stderr}"
        actor = int(kill_me.read_text())
        runners = env_runner_pids(actor)
        assert alive(actor) and len(runners) == 1  # the trial's actor and its EnvRunner
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        # Ray ends the dead driver's trial actors; their EnvRunner processes end with them.
        wait_for(lambda: not any(map(alive, [actor, *runners])), 30, "the trial's processes")
    finally:
        if driver.poll() is None:
            driver.kill()
    assert tune.Tuner.can_restore(str(experiment))
    results = tune.Tuner.restore(str(experiment), trainable=PPO).fit()
    assert results.num_errors == 0 and len(results) == 3
    by_lr = {r.config["lr"]: r.metrics for r in results}
    assert all(m["training_iteration"] == ITERATIONS for m in by_lr.values())
    first, second, third = by_lr[1e-3], by_lr[3e-4], by_lr[1e-4]
    # The first trial had finished: not run again. The second resumed from its checkpoint,
    # the third started from scratch.
    assert first["trial_id"] == marker.read_text()
    assert 0 < second["iterations_since_restore"] < ITERATIONS
    assert third["iterations_since_restore"] == ITERATIONS
    # The restored algorithm counts on from its checkpoint.
    assert second["num_env_steps_sampled_lifetime"] == ITERATIONS * 200


def test_importing_trainer_tune_without_ray_tune_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "trainer.tune" or m.startswith("trainer.tune.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray.tune", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'localrl\[tune\]'"):
        import trainer.tune  # noqa: F401


def test_a_sac_grid_search_runs_each_trial(tmp_path):
    """Tune's "SAC": a grid over the actor's rate, each trial SAC's off-policy loop."""
    from trainer import SACConfig

    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=0)
        .training(
            num_steps_sampled_before_learning_starts=32,
            train_batch_size_per_learner=32,
            actor_lr=tune.grid_search([1e-3, 3e-4]),
        )
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=64)
        .rl_module(model_config={"fcnet_hiddens": [16], "fusionnet_hiddens": [16]})
    )
    results = tune.Tuner(
        "SAC",
        param_space=config,
        # The second trial runs in the first one's actor (one process to start, not two).
        tune_config=tune.TuneConfig(max_concurrent_trials=1, reuse_actors=True),
        run_config=run_config(tmp_path, name="sac", stop={"training_iteration": 1}),
    ).fit()
    assert results.num_errors == 0
    assert sorted(r.config["actor_lr"] for r in results) == [3e-4, 1e-3]
    for result in results:
        # One iteration of 64 steps sampled: past the 32 before learning starts, it updates.
        assert result.metrics["training_iteration"] == 1
        assert result.metrics["learners"]["default_policy"]["qf_loss"] >= 0.0


def test_a_grid_over_envs_in_the_environment_section_runs_a_trial_per_env(tmp_path):
    """RLlib's benchmark scripts search over envs: `environment(env=tune.grid_search([...]))`.
    Each option is checked when set; each trial gets one env."""
    with pytest.raises(ConfigError, match="NoSuchEnv-v0"):
        tiny_ppo().environment(env=tune.grid_search(["CartPole-v1", "NoSuchEnv-v0"]))
    config = tiny_ppo().environment(env=tune.grid_search(["CartPole-v1", "Acrobot-v1"]))
    results = tune.Tuner(
        "PPO",
        param_space=config,
        # The second trial runs in the first one's actor, its algorithm rebuilt for its env.
        tune_config=tune.TuneConfig(max_concurrent_trials=1, reuse_actors=True),
        run_config=run_config(tmp_path, name="envs", stop={"training_iteration": 1}),
    ).fit()
    assert results.num_errors == 0
    assert sorted(r.config["env"] for r in results) == ["Acrobot-v1", "CartPole-v1"]
    assert all(r.metrics["training_iteration"] == 1 for r in results)


def test_appo_runs_under_tune_with_its_learner_thread_in_each_trial(tmp_path):
    """An APPO trial samples on its EnvRunner processes while its learner thread learns, and
    ends with a checkpoint that restores its target network."""
    from trainer.algorithms.appo import APPOConfig

    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
        .training(lr=tune.grid_search([1e-3]), train_batch_size_per_learner=200)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        # (each iteration waits for a learner update: asynchronous, one of 0.3 s may end before
        # the learner thread's first on a loaded machine)
        .reporting(min_time_s_per_iteration=0.3, min_train_timesteps_per_iteration=1)
    )
    results = tune.Tuner(
        "APPO",
        param_space=config,
        tune_config=tune.TuneConfig(max_concurrent_trials=1),
        run_config=run_config(
            tmp_path,
            name="appo",
            stop={"training_iteration": 2},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
        ),
    ).fit()
    assert results.num_errors == 0 and len(results) == 1
    assert [r.config["lr"] for r in results] == [1e-3]
    for result in results:
        assert result.metrics["training_iteration"] == 2
        learners = result.metrics["learners"]
        assert learners["__all_modules__"]["num_env_steps_trained_lifetime"] > 0
        assert result.metrics["env_runners"]["weights_seq_no"] >= 1
        algo = Algorithm.from_checkpoint(result.checkpoint.path)
        try:
            assert type(algo).__name__ == "APPO"
            assert "target" in algo.get_state(components="learner")["learner"]
        finally:
            algo.stop()
