"""The RLlib launcher: `python -m trainer run SCRIPT ARGS` runs unmodified RLlib scripts (real
scripts written here and one of the Ray 2.60 wheel's own examples), and the notebook switch
`trainer.launcher.install()` in this process. The command runs in this process through
`trainer.cli.main` (tests/cli_in_process.py puts back the hook, `sys.path`, `sys.argv` and the
script's modules after it), or in a subprocess where a script needs a fresh interpreter: real Ray
imported, the environment a process starts with."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
from cli_in_process import run_cli

import trainer
from trainer import capabilities, launcher
from trainer.launcher import RLlibNotAvailable, table
from trainer.launcher.finder import RLlibStandIn, real_tune_available
from trainer.launcher.script import script_uses_tune_runner

pytestmark = pytest.mark.cli

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 240


def run_script(
    tmp_path: Path,
    body: str,
    *args: str,
    launcher_flags: tuple[str, ...] = (),
    timeout: float = RUN_TIMEOUT_S,
    environment: dict[str, str] | None = None,
    in_subprocess: bool = False,
) -> subprocess.CompletedProcess:
    """`python -m trainer run [LAUNCHER_FLAGS] SCRIPT ARGS` for a script of `body`: in this
    process (`run_cli`), or with `in_subprocess` in a fresh interpreter."""
    script = tmp_path / "rllib_script.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(REPO), **(environment or {})}
    env.pop(launcher.ENV_VAR, None)
    argv = ["run", *launcher_flags, str(script), *args]
    if not in_subprocess:
        return run_cli(*argv, cwd=tmp_path, env=env, timeout=timeout)
    return subprocess.run(
        [sys.executable, "-m", "trainer", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- the command ------------------------------------------------------------------------------
@pytest.mark.slow
def test_script_runs_as_main_with_its_argv_and_rllib_imports(tmp_path):
    result = run_script(
        tmp_path,
        """
        import sys
        import ray
        from ray import tune
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.algorithms.dqn import DQNConfig
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN
        from ray.tune.registry import get_trainable_cls, register_env
        from ray.air.constants import TRAINING_ITERATION
        from ray.tune.result import TIME_TOTAL_S

        if __name__ == "__main__":
            print("argv", sys.argv[1:], "path0", sys.path[0] == __file__.rsplit("/", 1)[0])
            import trainer
            assert PPOConfig is trainer.PPOConfig and DQNConfig is trainer.DQNConfig
            assert get_trainable_cls("PPO") is trainer.PPO
            print("keys", ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN, TRAINING_ITERATION,
                  TIME_TOTAL_S)
            print("grid", tune.grid_search([1, 2]))
            ray.init()
            print("initialized", ray.is_initialized())
            ray.shutdown()
        """,
        "--stop-iters",
        "3",
        "positional",
    )
    assert result.returncode == 0, result.stderr
    assert "argv ['--stop-iters', '3', 'positional'] path0 True" in result.stdout
    assert "keys env_runners episode_return_mean training_iteration time_total_s" in result.stdout
    assert "grid {'grid_search': [1, 2]}" in result.stdout
    assert "initialized True" in result.stdout


@pytest.mark.slow
def test_script_trains_ppo_with_env_runner_processes(tmp_path):
    """A whole RLlib-style script: a registered env, a callback class of the script's own,
    EnvRunner worker processes, named actors reached from env code in those processes. With
    `OMP_NUM_THREADS` set, as job schedulers and containers set it: the BLAS thread setup must
    not read Ray's internals through the stand-in `ray` module."""
    result = run_script(
        tmp_path,
        """
        import gymnasium as gym
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.callbacks.callbacks import RLlibCallback
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME
        from ray.tune.registry import register_env

        @ray.remote
        class Counter:
            def __init__(self):
                self.resets = 0
            def inc(self):
                self.resets += 1
            def get(self):
                return self.resets

        class CountingCartPole(gym.Wrapper):
            def __init__(self, config):
                super().__init__(gym.make("CartPole-v1"))
            def reset(self, **kwargs):
                ray.get_actor("resets").inc.remote()
                return self.env.reset(**kwargs)

        class Iterations(RLlibCallback):
            def on_train_result(self, *, algorithm, result, **kwargs):
                print("callback saw iteration", result["training_iteration"])

        if __name__ == "__main__":
            ray.init()
            counter = Counter.options(name="resets").remote()
            register_env("counting-cartpole", lambda cfg: CountingCartPole(cfg))
            config = (PPOConfig().environment("counting-cartpole")
                      .env_runners(num_env_runners=2, rollout_fragment_length=50)
                      .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
                      .callbacks(Iterations))
            algo = config.build()
            result = algo.train()
            algo.stop()
            print("sampled", result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
            print("resets counted", ray.get(counter.get.remote()) >= 2)
            ray.shutdown()
        """,
        environment={"OMP_NUM_THREADS": "1"},
        # A fresh process: OMP_NUM_THREADS in the environment it starts with (/proc/self/environ)
        in_subprocess=True,
    )
    assert result.returncode == 0, result.stderr
    assert "callback saw iteration 1" in result.stdout
    assert "sampled 200" in result.stdout
    assert "resets counted True" in result.stdout


@pytest.mark.slow
def test_system_exit_codes_pass_through(tmp_path):
    assert run_script(tmp_path, "import sys\nsys.exit(7)\n").returncode == 7
    assert run_script(tmp_path, "import sys\nsys.exit(0)\n").returncode == 0
    assert run_script(tmp_path, "import sys\nsys.exit()\n").returncode == 0
    message = run_script(tmp_path, "import sys\nsys.exit('bad input')\n")
    assert message.returncode == 1 and "bad input" in message.stderr


@pytest.mark.slow
def test_exception_prints_the_scripts_traceback_and_exits_1(tmp_path):
    result = run_script(
        tmp_path,
        """
        def fail():
            raise ValueError("boom in the script")

        fail()
        """,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "rllib_script.py" in lines[1]  # the script's frame first, as `python SCRIPT` shows
    assert "runpy" not in result.stderr and "launcher/script.py" not in result.stderr
    assert lines[-1] == "ValueError: boom in the script"


CATALOG_AT_THE_TOP = """
import argparse
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.dreamerv3.dreamerv3_catalog import DreamerV3Catalog  # --catalog only
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

class MyCatalog(DreamerV3Catalog):  # defined, never made
    pass

parser = argparse.ArgumentParser()
parser.add_argument("--catalog", action="store_true")
args = parser.parse_args()
if args.catalog:
    catalog = DreamerV3Catalog(None, None, {})
config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=1, rollout_fragment_length=50)
    .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
)
with config.build() as algo:
    result = algo.train()
print("trained", result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
"""


@pytest.mark.slow
def test_a_module_imported_at_the_top_is_refused_only_when_used(tmp_path):
    """A script that imports a class with no counterpart here (RLlib's DreamerV3Catalog) at
    its top and trains PPO runs; the same script told to use it stops at `DreamerV3Catalog()`
    with the typed refusal, reported with its capability."""
    trained = run_script(tmp_path, CATALOG_AT_THE_TOP)
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "trained 100" in trained.stdout

    report = tmp_path / "report.json"
    script = tmp_path / "catalog.py"
    script.write_text(CATALOG_AT_THE_TOP)
    env = dict(os.environ, PYTHONPATH=str(REPO), LOCALRL_LAUNCHER_REPORT=str(report))
    env.pop(launcher.ENV_VAR, None)
    result = run_cli(
        "run", str(script), "--catalog", cwd=os.getcwd(), env=env, timeout=RUN_TIMEOUT_S
    )
    assert result.returncode == 1
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith(
        "trainer.errors.RLlibNotAvailable: ray.rllib.algorithms.dreamerv3.dreamerv3_catalog."
        "DreamerV3Catalog is not available in localrl"
    ), result.stderr[-3000:]
    assert "used: DreamerV3Catalog()" in last_line
    assert re.search(r'catalog\.py", line \d+.*\n +catalog = DreamerV3Catalog', result.stderr)
    written = json.loads(report.read_text())
    assert (written["outcome"], written["code"], written["type"], written["capability"]) == (
        "error",
        1,
        "RLlibNotAvailable",
        capabilities.TORCH,
    )


@pytest.mark.slow
def test_missing_script_and_bad_flags(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    missing = run_cli(
        "run", str(tmp_path / "no.py"), cwd=os.getcwd(), env=env, timeout=RUN_TIMEOUT_S
    )
    assert missing.returncode == 2 and "no such script" in missing.stderr
    no_script = run_cli("run", cwd=os.getcwd(), env=env, timeout=RUN_TIMEOUT_S)
    assert no_script.returncode == 2 and "script" in no_script.stderr


@pytest.mark.slow
def test_script_flags_named_like_the_launchers_go_to_the_script(tmp_path):
    result = run_script(tmp_path, "import sys\nprint(sys.argv[1:])\n", "--ray", "-h")
    assert result.returncode == 0, result.stderr
    assert "['--ray', '-h']" in result.stdout


@pytest.mark.slow
def test_ray_backend_under_the_stand_in_says_to_use_the_ray_flag(tmp_path):
    result = run_script(
        tmp_path,
        """
        from ray.rllib.algorithms.ppo import PPOConfig
        PPOConfig().env_runners(backend="ray")
        """,
    )
    assert result.returncode == 1
    assert "python -m trainer run --ray" in result.stderr


#: A test that runs the installed Ray (outside the launcher's hook, which this finder skips).
needs_installed_ray = pytest.mark.skipif(
    importlib.machinery.PathFinder.find_spec("ray") is None,
    reason="needs the installed Ray (the test extra)",
)


@pytest.mark.slow
@pytest.mark.ray
@needs_installed_ray
def test_ray_flag_keeps_the_installed_ray_and_maps_rllib(tmp_path):
    result = run_script(
        tmp_path,
        """
        import ray
        import ray.rllib.algorithms.ppo as ppo
        from ray.tune.registry import register_env
        import trainer
        print("real ray", hasattr(ray, "get_runtime_context"), ray.__file__ is not None)
        print("mapped", ppo.PPOConfig is trainer.PPOConfig)
        """,
        launcher_flags=("--ray",),
        in_subprocess=True,  # the installed Ray, once imported, stays in the process
    )
    assert result.returncode == 0, result.stderr
    assert "real ray True True" in result.stdout
    assert "mapped True" in result.stdout


needs_tune = pytest.mark.skipif(
    not real_tune_available(), reason="needs Ray Tune (pip install 'localrl[tune]')"
)


@pytest.mark.slow
@pytest.mark.ray
@needs_tune
def test_an_unused_tune_import_keeps_rays_stand_in(tmp_path):
    """`import ray.tune.logger` alone does not send the script to real Ray (where
    `ray.init(include_dashboard=True)` fails without the dashboard's packages)."""
    result = run_script(
        tmp_path,
        """
        import ray
        import ray.tune.logger

        ray.init(include_dashboard=True)
        print("stand-in", getattr(ray, "__localrl_shim__", False), ray.is_initialized())
        ray.shutdown()
        """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "stand-in True True" in result.stdout


@pytest.mark.slow
@pytest.mark.ray
@needs_tune
def test_a_tuner_in_a_module_of_the_scripts_folder_chooses_real_ray(tmp_path):
    (tmp_path / "experiment_helpers.py").write_text(
        textwrap.dedent(
            """
            from ray import tune
            from ray.tune.stopper import MaximumIterationStopper

            def tuner(param_space):
                return tune.Tuner(
                    "PPO",
                    param_space=param_space,
                    run_config=tune.RunConfig(stop=MaximumIterationStopper(1)),
                )
            """
        )
    )
    result = run_script(
        tmp_path,
        """
        import ray
        from experiment_helpers import tuner

        print("real ray", hasattr(ray, "get_runtime_context"), callable(tuner))
        """,
        in_subprocess=True,  # the installed Ray, once imported, stays in the process
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "real ray True True" in result.stdout


def test_tune_detection_follows_the_scripts_own_modules_and_packages(tmp_path):
    package = tmp_path / "experiments"
    package.mkdir()
    (package / "__init__.py").write_text("from .search import run_search\n")
    (package / "search.py").write_text(
        "import ray.tune as tune\n\ndef run_search():\n    return tune.Tuner('PPO').fit()\n"
    )
    (tmp_path / "unused_tune_import.py").write_text("import ray.tune.logger\n")
    script = tmp_path / "main.py"
    script.write_text("import experiments\n")
    assert script_uses_tune_runner(str(script))
    script.write_text("from experiments import search\n")
    assert script_uses_tune_runner(str(script))
    script.write_text("import unused_tune_import\nimport json\n")
    assert not script_uses_tune_runner(str(script))
    (tmp_path / "cycle_a.py").write_text("import cycle_b\n")
    (tmp_path / "cycle_b.py").write_text("import cycle_a\n")
    script.write_text("import cycle_a\n")
    assert not script_uses_tune_runner(str(script))  # an import cycle ends


def test_tune_detection_follows_the_scripts_modules_on_pythonpath(tmp_path, monkeypatch):
    """A project whose script imports a package of its own from a `PYTHONPATH` folder
    (`src/common/tuner.py` building a `tune.Tuner`, the script in `src/connect_four/`)."""
    (tmp_path / "src" / "common").mkdir(parents=True)
    (tmp_path / "src" / "app").mkdir()
    (tmp_path / "src" / "common" / "__init__.py").write_text("")
    (tmp_path / "src" / "common" / "tuner.py").write_text(
        "from ray import tune\n\ndef make():\n    return tune.Tuner('PPO')\n"
    )
    script = tmp_path / "src" / "app" / "train.py"
    script.write_text("from common.tuner import make\n")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert not script_uses_tune_runner(str(script))  # not found: Python would not find it
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(tmp_path / "src")]))
    assert script_uses_tune_runner(str(script))


@pytest.mark.slow
@pytest.mark.ray
def test_real_rllib_example_from_the_wheel_runs_unmodified(tmp_path):
    """RLlib 2.60's own `examples/envs/custom_gym_env.py` (SimpleCorridor through
    `get_trainable_cls`, `run_rllib_example_script_experiment`), one small iteration."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None:
        pytest.skip("needs the installed Ray wheel (the test extra) for its example files")
    example = Path(spec.submodule_search_locations[0]) / "rllib/examples/envs/custom_gym_env.py"
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path))  # ~/ray_results
    env.pop(launcher.ENV_VAR, None)
    # A subprocess: the wheel's example modules the script imports would stay in this process.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer",
            "run",
            str(example),
            "--stop-iters=1",
            "--num-env-runners=1",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^iter +1 \| ", result.stdout, re.MULTILINE), result.stdout


# -- the notebook switch, in this process ---------------------------------------------------
def test_notebook_switch_maps_rllib_modules_to_this_project(hook):
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.examples.envs.classes.simple_corridor import SimpleCorridor
    from ray.rllib.examples.utils import add_rllib_example_script_args
    from ray.rllib.utils.annotations import override
    from ray.rllib.utils.framework import try_import_torch

    from trainer.callbacks import RLlibCallback as OurCallback
    from trainer.examples.envs.classes.simple_corridor import SimpleCorridor as OurCorridor
    from trainer.testing import add_rllib_example_script_args as our_args

    assert PPOConfig is trainer.PPOConfig and AlgorithmConfig is trainer.AlgorithmConfig
    assert RLlibCallback is OurCallback and SimpleCorridor is OurCorridor
    assert DefaultModelConfig is trainer.DefaultModelConfig
    assert SingleAgentEpisode is trainer.SingleAgentEpisode
    assert add_rllib_example_script_args is our_args
    assert callable(override) and len(try_import_torch()) == 2
    import ray.rllib.algorithms.ppo as ppo_module

    assert "PPOConfig" in dir(ppo_module)
    star: dict = {}
    exec("from ray.rllib.utils.metrics import *", star)
    assert star["ENV_RUNNER_RESULTS"] == "env_runners"


def test_notebook_switch_ray_named_actors_and_remote_functions(hook):
    import ray

    assert not ray.is_initialized()
    ray.init()
    assert ray.is_initialized()
    with pytest.raises(RuntimeError, match="ray.init twice"):
        ray.init()
    ray.init(ignore_reinit_error=True)

    @ray.remote
    class Counter:
        def __init__(self, start):
            self.value = start

        def inc(self, by):
            self.value += by
            return self.value

    @ray.remote(num_cpus=1)
    def square(x):
        return x * x

    try:
        counter = Counter.options(name="launcher-test-counter").remote(10)
        ray.get([counter.inc.remote(1), counter.inc.remote(2)])
        assert ray.get(ray.get_actor("launcher-test-counter").inc.remote(0)) == 13
        refs = [square.remote(3), square.remote(ray.put(4))]
        ready, pending = ray.wait(refs, num_returns=2, timeout=5)
        assert ray.get(ready) == [9, 16] and pending == []
        # ray.ObjectRef: the class of every reference here (remote functions', named objects').
        assert all(isinstance(ref, ray.ObjectRef) for ref in refs)
        assert isinstance(counter.inc.remote(0), ray.ObjectRef)
        assert not isinstance(4, ray.ObjectRef)
        with pytest.raises(TypeError, match=r"square.remote\(\)"):
            square(2)
        from ray.exceptions import RayActorError, RayError

        ray.kill(counter)  # ends the actor: calls fail, its name is free, a second kill is a no-op
        with pytest.raises(RayError, match="killed"):
            ray.get(counter.inc.remote(0))
        ray.kill(counter)
        again = Counter.options(name="launcher-test-counter").remote(1)
        assert ray.get(again.inc.remote(1)) == 2
        with pytest.raises(ValueError, match="only supported for actors"):
            ray.kill(refs[0])
        assert ray.cluster_resources()["CPU"] >= 1

        assert issubclass(RayActorError, RayError)
    finally:
        ray.shutdown()
    assert not ray.is_initialized()


def test_notebook_switch_off_restores_the_installed_ray(hook):
    import ray as stand_in

    assert getattr(stand_in, "__localrl_shim__", False)
    launcher.uninstall()
    assert "ray" not in sys.modules or not getattr(sys.modules["ray"], "__localrl_shim__", False)
    assert os.environ.get(launcher.ENV_VAR) is None
    assert not launcher.installed()
    launcher.install()  # the fixture's uninstall() finds it on


@pytest.mark.ray
def test_notebook_switch_off_leaves_no_stand_in_on_the_installed_rays_modules():
    """With the installed Ray kept (`install(real_ray=True)`), importing a served path made its
    stand-in an attribute of the installed `ray`; switched off, `ray.rllib` is the installed
    RLlib again (or no attribute), so a later `import ray.rllib.x.y as z` reaches RLlib's own
    modules, not this project's."""
    ray = pytest.importorskip("ray")
    launcher.install(real_ray=True)
    try:
        importlib.import_module("ray.rllib.algorithms.ppo")
        assert isinstance(vars(ray).get("rllib"), RLlibStandIn)
    finally:
        launcher.uninstall()
    assert vars(ray).get("rllib") is sys.modules.get("ray.rllib")


def test_other_algorithms_and_tunes_runner_import_and_are_refused_when_used(hook):
    from ray.rllib.algorithms.dreamerv3 import dreamerv3_catalog as module
    from ray.rllib.algorithms.dreamerv3.dreamerv3_catalog import DreamerV3Catalog
    from ray.tune import CheckpointConfig, Tuner
    from ray.tune.logger import TBXLoggerCallback
    from ray.tune.stopper import MaximumIterationStopper

    from trainer.errors import NotSupported

    assert DreamerV3Catalog is module.DreamerV3Catalog  # one class, as in RLlib
    assert not isinstance(trainer.PPOConfig(), DreamerV3Catalog)

    class MyCatalog(DreamerV3Catalog):  # a script's subclass can be defined...
        pass

    uses = {  # ...and each use fails, naming the RLlib name, the capability and the use
        "DreamerV3Catalog()": (lambda: DreamerV3Catalog(), capabilities.TORCH),
        "MyCatalog()": (lambda: MyCatalog(), capabilities.TORCH),
        "Tuner()": (lambda: Tuner("PPO"), table.TUNE),
        "CheckpointConfig()": (lambda: CheckpointConfig(num_to_keep=1), table.TUNE),
        "TBXLoggerCallback()": (lambda: TBXLoggerCallback(), table.TUNE),
        "MaximumIterationStopper()": (lambda: MaximumIterationStopper(3), table.TUNE),
    }
    for use, (call, capability) in uses.items():
        with pytest.raises(RLlibNotAvailable) as refused:
            call()
        assert isinstance(refused.value, NotSupported) and isinstance(refused.value, ImportError)
        assert refused.value.capability == capability
        assert f"used: {use}" in str(refused.value)
    assert "localrl[tune]" in str(refused.value)
    with pytest.raises(RLlibNotAvailable, match="used: run()"):
        importlib.import_module("ray.tune").run("PPO")
    # a name RLlib does not have either is no placeholder: Python's own error, as under RLlib
    with pytest.raises(ImportError, match="cannot import name 'DreamerV3Catalg'"):
        from ray.rllib.algorithms.dreamerv3.dreamerv3_catalog import (  # noqa: F401
            DreamerV3Catalg,
        )
    # this project's Tune front needs real Tune (it would bind the placeholders)
    imported_before = sys.modules.pop("trainer.tune", None)
    try:
        with pytest.raises(ImportError, match="python -m trainer run --ray"):
            importlib.import_module("trainer.tune")
    finally:
        if imported_before is not None:
            sys.modules["trainer.tune"] = imported_before


def test_missing_names_import_and_refuse_when_used_with_name_capability_and_instead(hook):
    from ray.rllib.core.models.base import StatefulActorCriticEncoder

    with pytest.raises(RLlibNotAvailable) as catalog:
        StatefulActorCriticEncoder(None)
    assert catalog.value.capability == table.TORCH
    assert "used: StatefulActorCriticEncoder()" in str(catalog.value)

    from ray.rllib.policy.policy import PolicySpec  # the new stack's multi_agent() takes it

    assert PolicySpec(config={"lr": 0.1}).config == {"lr": 0.1}
    from ray.rllib.policy.policy import Policy

    with pytest.raises(RLlibNotAvailable) as policy:
        Policy.from_checkpoint("somewhere")
    assert policy.value.capability == table.OLD_API_STACK
    from ray.rllib.policy.sample_batch import SampleBatch

    # A container of columns; the old stack's operations on it refuse at the call.
    batch = SampleBatch({"obs": [1]})
    assert batch.count == 1
    with pytest.raises(RLlibNotAvailable) as sample_batch:
        batch.compress()
    assert sample_batch.value.capability == table.OLD_API_STACK

    from ray.rllib.env.wrappers.dm_env_wrapper import DMEnv

    with pytest.raises(RLlibNotAvailable) as dm_env:
        DMEnv(None)
    assert dm_env.value.capability == table.THIRD_PARTY_ENVS
    # DeepMind Control's tasks are served (the mujoco extra).
    from ray.rllib.env.wrappers.dm_control_wrapper import DMCEnv

    from trainer.env.wrappers import dm_control_wrapper

    assert DMCEnv is dm_control_wrapper.DMCEnv
    # Atari's wrappers are ours (on ALE's games with the atari extra, and on envs with ALE's
    # surface, localrl/TinyCatch-v0); without ale_py, gymnasium names it when asked for a game.
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    from trainer.env.wrappers import atari_wrappers

    assert wrap_atari_for_new_api_stack is atari_wrappers.wrap_atari_for_new_api_stack
    if importlib.util.find_spec("ale_py") is None:
        with pytest.raises(ModuleNotFoundError, match="ale_py"):
            gym.make("ale_py:ALE/Pong-v5")
    else:
        wrapped = wrap_atari_for_new_api_stack(gym.make("ale_py:ALE/Pong-v5"), dim=42, framestack=4)
        assert wrapped.observation_space.shape == (42, 42, 4)


def test_rllib_numpy_utils_convert_torch_tensors_in_nested_structures(hook):
    torch = pytest.importorskip("torch")
    import numpy as np
    from ray.rllib.utils.numpy import (
        LARGE_INTEGER,
        SMALL_NUMBER,
        convert_to_numpy,
        flatten_inputs_to_1d_tensor,
        huber_loss,
        one_hot,
        softmax,
    )
    from ray.rllib.utils.numpy import torch as rllib_torch

    assert rllib_torch is torch and SMALL_NUMBER == 1e-6 and LARGE_INTEGER == 100000000
    converted = convert_to_numpy(
        {
            "logits": torch.ones((2, 3), dtype=torch.float64, requires_grad=True),
            "pair": (torch.tensor(7), [torch.arange(3), "text"]),
        }
    )
    assert converted["logits"].dtype == np.float32 and converted["logits"].shape == (2, 3)
    assert converted["pair"][0] == 7 and isinstance(converted["pair"][0], int)
    assert converted["pair"][1][0].dtype == np.int32 and converted["pair"][1][1] == "text"
    kept = convert_to_numpy(torch.zeros(2, dtype=torch.float64), reduce_type=False)
    assert kept.dtype == np.float64
    np.testing.assert_array_equal(one_hot(torch.tensor([0, 2]), depth=3), [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(softmax(np.zeros(4)), np.full(4, 0.25))
    np.testing.assert_allclose(huber_loss(np.array([0.5, 3.0])), [0.125, 2.5])
    flat = flatten_inputs_to_1d_tensor(
        {"a": np.array([1, 0]), "b": np.array([[0.0, 0.1], [1.0, 1.1]])},
        spaces_struct={"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(-2, 2, (2,))},
    )
    np.testing.assert_allclose(flat, [[0, 1, 0.0, 0.1], [1, 0, 1.0, 1.1]])


def test_tunes_pretty_print_is_served_under_the_stand_in(hook):
    import numpy as np
    from ray.tune.logger import pretty_print

    result = {
        "training_iteration": np.int64(3),
        "env_runners": {"episode_return_mean": np.float32(21.5), "lengths": [1, 2]},
        "hist": [1, 2, 3, 4],
        "config": {"lr": 0.1},
        "skipped": None,
    }
    assert pretty_print(result) == (
        "env_runners:\n  episode_return_mean: 21.5\n  lengths:\n  - 1\n  - 2\n"
        "hist: [1, 2, 3, 4]\ntraining_iteration: 3\n"
    )
    assert "hist" not in pretty_print(result, exclude={"hist"})


def test_sample_batch_column_names_are_rllibs(hook):
    from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, SampleBatch, concat_samples

    from trainer.compat.rllib_utils import Columns

    assert (SampleBatch.OBS, SampleBatch.ACTIONS, SampleBatch.REWARDS) == (
        "obs",
        "actions",
        "rewards",
    )
    assert (SampleBatch.TERMINATEDS, SampleBatch.TRUNCATEDS, SampleBatch.NEXT_OBS) == (
        Columns.TERMINATEDS,
        Columns.TRUNCATEDS,
        "new_obs",
    )
    assert SampleBatch.VF_PREDS == "vf_preds" and SampleBatch.PREV_ACTIONS == "prev_actions"
    assert DEFAULT_POLICY_ID == "default_policy"
    # The batch classes are served as containers of columns; the old stack's operations not.
    with pytest.raises(RLlibNotAvailable, match="used: concat_samples()") as batch:
        concat_samples([])
    assert batch.value.capability == table.OLD_API_STACK


def test_names_rllib_removed_say_so_and_name_the_replacement(hook):
    from trainer.errors import NotSupported, RemovedFromRLlib

    with pytest.raises(RemovedFromRLlib) as removed:
        from ray.rllib.core.rl_module.rl_module import SingleAgentRLModuleSpec  # noqa: F401
    message = str(removed.value)
    assert "RLlib 2.60 no longer has it" in message and "use RLModuleSpec" in message
    assert "no counterpart in localrl" not in message
    assert isinstance(removed.value, ImportError) and not isinstance(removed.value, NotSupported)
    with pytest.raises(RemovedFromRLlib, match="use MultiRLModuleSpec"):
        from ray.rllib.core.rl_module import MultiAgentRLModuleSpec  # noqa: F401
    with pytest.raises(RemovedFromRLlib, match="multi_rl_module"):
        import ray.rllib.core.rl_module.marl_module  # noqa: F401


def test_unmapped_names_refuse_as_gaps_and_names_rllib_lacks_fail_as_python_fails(hook):
    # A module of RLlib's with no row in the table: it imports, its names refuse when used,
    # as a gap (no capability: nothing deliberate, just not served yet).
    from ray.rllib.algorithms.registry import ALGORITHMS_CLASS_TO_NAME, get_policy_class

    assert ALGORITHMS_CLASS_TO_NAME["Impala"] == "IMPALA"  # RLlib's constant, its value
    with pytest.raises(RLlibNotAvailable) as gap:
        get_policy_class("PPO")
    assert gap.value.capability is None and "trainer/launcher/table.py" in str(gap.value)
    assert "ray.rllib.algorithms.registry.get_policy_class" in str(gap.value)
    # Names and modules RLlib 2.60 does not have either: Python's errors.
    with pytest.raises(ImportError, match="cannot import name 'NOT_AN_RLLIB_CONSTANT'"):
        from ray.rllib.utils.metrics import NOT_AN_RLLIB_CONSTANT  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="ray.rllib.utils.not_a_module"):
        import ray.rllib.utils.not_a_module  # noqa: F401
    with pytest.raises(ModuleNotFoundError) as example:
        import ray.rllib.examples.envs.classes.not_an_example_env  # noqa: F401
    assert "trainer.examples.envs.classes.not_an_example_env does not exist" in str(example.value)


def test_multi_agent_env_names_resolve_to_this_projects_classes(hook):
    from ray.rllib import MultiAgentEnv as MultiAgentEnvFromRLlib
    from ray.rllib.env import GroupAgentsWrapper as GroupAgentsWrapperFromEnv
    from ray.rllib.env import MultiAgentEnv as MultiAgentEnvFromEnv
    from ray.rllib.env import ParallelPettingZooEnv, PettingZooEnv
    from ray.rllib.env.multi_agent_env import MultiAgentEnv, make_multi_agent
    from ray.rllib.env.wrappers.group_agents_wrapper import GroupAgentsWrapper
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv as PettingZooEnvFromWrappers
    from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole
    from ray.rllib.examples.envs.classes.multi_agent.rock_paper_scissors import (
        RockPaperScissors,
    )
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    import trainer.env.multi_agent_env as ours
    from trainer.env.multi_agent_checks import check_multiagent_environments as our_checker
    from trainer.env.wrappers import group_agents_wrapper, pettingzoo_env

    assert MultiAgentEnv is MultiAgentEnvFromEnv is MultiAgentEnvFromRLlib is ours.MultiAgentEnv
    assert make_multi_agent is ours.make_multi_agent
    assert (
        GroupAgentsWrapper is GroupAgentsWrapperFromEnv is group_agents_wrapper.GroupAgentsWrapper
    )
    assert PettingZooEnv is PettingZooEnvFromWrappers is pettingzoo_env.PettingZooEnv
    assert ParallelPettingZooEnv is pettingzoo_env.ParallelPettingZooEnv
    assert check_multiagent_environments is our_checker

    class MyMultiAgentEnv(MultiAgentEnv):  # a script's own class works as in RLlib
        def __init__(self, config=None):
            super().__init__()
            self.agents = self.possible_agents = ["a"]

    assert MyMultiAgentEnv().num_agents == 1
    assert MultiAgentCartPole({"num_agents": 3}).possible_agents == [0, 1, 2]
    assert make_multi_agent("CartPole-v1")({"num_agents": 2}).agents == [0, 1]
    check_multiagent_environments(RockPaperScissors({}))
    from ray.rllib.examples.envs.classes.multi_agent.footsies.footsies_env import FootsiesEnv

    with pytest.raises(RLlibNotAvailable) as footsies:
        FootsiesEnv({})
    assert footsies.value.capability == table.MULTI_AGENT


def test_every_mapped_rllib_module_imports(hook):
    for rllib_path, targets in table.MODULES.items():
        for target in targets:
            importlib.import_module(target)
        module = importlib.import_module(rllib_path)
        assert module.__name__ == rllib_path


def test_rllib_learner_api_and_example_learners_map_to_the_torch_learners(hook):
    pytest.importorskip("torch")
    from ray.rllib.core.learner.learner import DEFAULT_OPTIMIZER, Learner
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner
    from ray.rllib.examples.learners.classes.custom_ppo_loss_fn_learner import (
        PPOTorchLearnerWithWeightRegularizerLoss,
    )
    from ray.rllib.examples.learners.classes.separate_vf_lr_and_optimizer_learner import (
        PPOTorchLearnerWithSeparateVfOptimizer,
    )

    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

    assert DEFAULT_OPTIMIZER == "default_optimizer" and issubclass(TorchLearner, Learner)
    assert issubclass(PPOTorchLearnerWithWeightRegularizerLoss, PPOTorchLearner)
    assert issubclass(PPOTorchLearnerWithSeparateVfOptimizer, PPOTorchLearner)
    # The curiosity example's learner and module, with RLlib's module id.
    from ray.rllib.examples.learners.classes.intrinsic_curiosity_learners import (
        ICM_MODULE_ID,
        PPOTorchLearnerWithCuriosity,
    )
    from ray.rllib.examples.rl_modules.classes.intrinsic_curiosity_model_rlm import (
        IntrinsicCuriosityModel,
    )

    from trainer.core.apis import SelfSupervisedLossAPI

    assert ICM_MODULE_ID == "_intrinsic_curiosity_model"
    assert issubclass(PPOTorchLearnerWithCuriosity, PPOTorchLearner)
    assert issubclass(IntrinsicCuriosityModel, SelfSupervisedLossAPI)
    # A module of RLlib's examples with no counterpart imports; its names refuse when used.
    from ray.rllib.examples.rl_modules.classes.modelv2_to_rlm import ModelV2ToRLModule

    with pytest.raises(RLlibNotAvailable, match="old API stack"):
        ModelV2ToRLModule()


def test_try_import_torch_without_torch_fails_on_use_with_the_capability(hook):
    pytest.importorskip("numpy")
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: try_import_torch gives the real one")
    from ray.rllib.utils.framework import try_import_torch

    torch, nn = try_import_torch()
    assert not torch  # scripts test `if torch:`

    class Model(nn.Module):  # a script's own torch class can be defined...
        pass

    # ...and fails when used; torch.nn.init's names select numpy initializers, calling one fails
    for use in (lambda: torch.tensor([1.0]), lambda: torch.nn.init.xavier_uniform_([[1.0]]), Model):
        with pytest.raises(RLlibNotAvailable) as used:
            use()
        assert used.value.capability == table.TORCH


def test_tune_grid_variants_expand_every_combination():
    from trainer.launcher.tune_api import grid_search, grid_variants

    space = {
        "lr": grid_search([0.1, 0.01]),
        "gamma": 0.9,
        "model": {"hidden": grid_search([8, 16])},
    }
    variants = list(grid_variants(space))
    assert len(variants) == 4
    assert {(v["lr"], v["model"]["hidden"]) for v in variants} == {
        (0.1, 8),
        (0.1, 16),
        (0.01, 8),
        (0.01, 16),
    }
    assert all(v["gamma"] == 0.9 for v in variants)


# -- bench/rllib_examples.py ------------------------------------------------------------------
def _wheel_examples() -> Path:
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None:
        pytest.skip("needs the installed Ray wheel (the test extra) for its example files")
    return Path(spec.submodule_search_locations[0]) / "rllib" / "examples"


@pytest.mark.ray
def test_bench_ci_args_name_example_files_of_the_wheel():
    sys.path.insert(0, str(REPO))
    try:
        from bench.rllib_example_args import CI_ARGS
        from bench.rllib_examples import example_scripts
    finally:
        sys.path.remove(str(REPO))
    scripts = example_scripts(_wheel_examples())
    assert set(CI_ARGS) <= set(scripts)
    assert "envs/custom_gym_env.py" in scripts
    assert not any("/classes/" in s or s.endswith("__init__.py") for s in scripts)


@pytest.mark.slow
@pytest.mark.ray
def test_bench_classifies_a_typed_error_as_out_of_scope(tmp_path):
    _wheel_examples()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # A subprocess: bench/rllib_examples.py is a program of its own (not the trainer CLI).
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "rllib_examples.py"),
            "--only",
            "_old_api_stack/centralized_critic.py",
            "--no-write",
            "--timeout",
            "120",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    assert "out of scope" in result.stdout and table.OLD_API_STACK in result.stdout
    assert "1 runs of 1 examples: 0 pass, 0 fail, 1 out of scope" in result.stdout


def test_torch_init_stand_ins_select_the_numpy_initializers_without_torch():
    """RLlib examples pass `nn.init.xavier_uniform_` (from try_import_torch()) as model-config
    initializers; without torch the stand-in names the numpy initializer of the same name."""
    from trainer.compat.rllib_utils import try_import_torch
    from trainer.core.initializers import make_initializer
    from trainer.launcher.finder import RLlibNotAvailable

    torch, nn = try_import_torch()
    if torch:
        pytest.skip("torch is installed: nn.init is torch's own")
    initializer = make_initializer(
        nn.init.xavier_uniform_,
        None,
        where="model_config",
        key="fcnet_kernel_initializer",
        for_bias=False,
    )
    assert initializer.name == "xavier_uniform_"
    with pytest.raises(RLlibNotAvailable, match="torch.nn.init.xavier_uniform_"):
        nn.init.xavier_uniform_([[0.0]])
    with pytest.raises(RLlibNotAvailable, match="torch.nn.init.no_such_init_"):
        nn.init.no_such_init_  # noqa: B018


def test_a_recurrent_model_config_is_reported_as_needing_torch_modules():
    from trainer.algorithms.algorithm_config import ConfigError
    from trainer.algorithms.ppo import PPOConfig
    from trainer.launcher.script import _exception_report
    from trainer.launcher.table import TORCH

    config = PPOConfig().environment("CartPole-v1").rl_module(model_config={"use_lstm": True})
    with pytest.raises(ConfigError, match="use_lstm") as raised:
        config.framework("numpy").validate()  # torch builds it when no framework is chosen
    assert raised.value.capability == TORCH
    assert _exception_report(raised.value)["capability"] == TORCH


def test_bench_writes_the_readme_count_between_its_markers(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO))
    try:
        import bench.rllib_examples as bench
    finally:
        sys.path.remove(str(REPO))
    readme = tmp_path / "README.md"
    readme.write_text(
        "intro\n<!-- rllib examples: begin -->\nold\n<!-- rllib examples: end -->\nrest\n"
    )
    monkeypatch.setattr(bench, "README", readme)
    runs = [
        bench.Run("a.py", "a", [], ()),
        bench.Run("b.py", "b", [], ()),
        bench.Run("c.py", "c", [], ()),
    ]
    for run, result in zip(runs, ("pass", "fail", "out of scope"), strict=True):
        run.result = result
    bench.write_readme_summary(runs, "2026-11-23 19:00 UTC")
    text = readme.read_text()
    assert text.startswith("intro\n<!-- rllib examples: begin -->\nRLlib 2.60's own examples")
    assert "**1 of 2 in-scope runs pass**" in text and "old" not in text
    assert text.endswith("<!-- rllib examples: end -->\nrest\n")
