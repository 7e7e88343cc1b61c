"""A user's own `callbacks.py` and `checkpoints.py` next to their script (common names in RLlib
projects) cannot break `import trainer`: the trainer imports its own code only from inside the
`trainer` package; the top-level `callbacks` and `checkpoints` packages are public aliases."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

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


# -- under the launcher: the user's trainer, callbacks and checkpoints win for the user's code --
REPO = Path(__file__).resolve().parent.parent

USERS_MODULES = {
    "module": {
        "trainer.py": """
            from __future__ import annotations

            from dataclasses import dataclass
            from typing import ClassVar

            import gymnasium as gym

            @dataclass
            class TrainConfig:
                batch: int = 200
                KIND: ClassVar[str] = "ppo"

            def make_env():
                return gym.make("CartPole-v1")
        """,
        "callbacks.py": """
            from ray.rllib.callbacks.callbacks import RLlibCallback

            class CountEpisodes(RLlibCallback):
                def on_episode_end(self, *, metrics_logger, **kwargs):
                    import checkpoints  # in the worker: the user's module too
                    metrics_logger.log_value("my_episodes", checkpoints.ONE, reduce="sum")
        """,
        "checkpoints.py": "ONE = 1\n",
    },
    "package": {
        "trainer/__init__.py": "from .config import TrainConfig\nfrom .envs import make_env\n",
        "trainer/config.py": """
            from __future__ import annotations

            from dataclasses import dataclass
            from typing import ClassVar

            @dataclass
            class TrainConfig:
                batch: int = 200
                KIND: ClassVar[str] = "ppo"
        """,
        "trainer/envs.py": """
            import gymnasium as gym

            from . import config
            from trainer.config import TrainConfig

            assert config.TrainConfig is TrainConfig

            def make_env():
                return gym.make("CartPole-v1")
        """,
        "callbacks/__init__.py": "from callbacks.counting import CountEpisodes\n",
        "callbacks/counting.py": """
            from ray.rllib.callbacks.callbacks import RLlibCallback

            class CountEpisodes(RLlibCallback):
                def on_episode_end(self, *, metrics_logger, **kwargs):
                    from checkpoints import ONE  # in the worker: the user's package too
                    metrics_logger.log_value("my_episodes", ONE, reduce="sum")
        """,
        "checkpoints/__init__.py": "ONE = 1\n",
    },
}

USERS_SCRIPT = """
    import dataclasses
    import os
    import pickle
    import typing

    import callbacks
    import checkpoints
    import trainer
    from callbacks import CountEpisodes
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env
    from trainer import TrainConfig

    def users_env(env_config):
        from trainer import TrainConfig, make_env  # runs in the EnvRunner's worker process

        assert TrainConfig.KIND == "ppo"
        return make_env()

    register_env("users_env", users_env)
    for module in (trainer, callbacks, checkpoints):
        assert os.environ["USERS_FOLDER"] in module.__file__, module.__file__
    settings = TrainConfig()
    # The user's classes are found by their module's name: string annotations, pickle.
    assert [field.name for field in dataclasses.fields(TrainConfig)] == ["batch"]
    assert typing.get_type_hints(TrainConfig)["batch"] is int
    assert pickle.loads(pickle.dumps(settings)) == settings
    config = (
        PPOConfig()
        .environment("users_env")
        .callbacks(CountEpisodes)
        .env_runners(num_env_runners=1)
        .training(train_batch_size=settings.batch, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )
    algo = config.build()
    result = algo.train()
    path = algo.save_to_path(os.path.abspath("ckpt"))
    algo.stop()
    restored = Algorithm.from_checkpoint(path)
    print("RESULT", result["env_runners"]["my_episodes"], restored.iteration)
    restored.stop()
"""


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.parametrize(
    "form, place", [("module", "beside the script"), ("package", "on PYTHONPATH")]
)
def test_the_users_own_trainer_callbacks_and_checkpoints_win_in_script_and_workers(
    tmp_path, form, place
):
    """`python -m trainer run script.py` with the user's `trainer`, `callbacks` and
    `checkpoints` (modules or packages) beside the script or on `PYTHONPATH` (after this
    project's checkout there): the script and its EnvRunner's worker process import the
    user's, and training, checkpoints and restore still work. The working folder is the
    script's (or PYTHONPATH names the user's folder first), so `-m trainer` would find the
    user's `trainer` first on its own. Each form meets each place: the module form beside the
    script (and the package form in Ray's actors, below), the package form on PYTHONPATH."""
    work = tmp_path / "project"
    users = work if place == "beside the script" else tmp_path / "libs"
    work.mkdir()
    users.mkdir(exist_ok=True)
    _write(users, USERS_MODULES[form])
    (work / "script.py").write_text(textwrap.dedent(USERS_SCRIPT))
    # On PYTHONPATH before this project's checkout: found first by any plain import.
    path = ([str(users)] if place == "on PYTHONPATH" else []) + [str(REPO)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "USERS_FOLDER": str(users)}
    env.pop("LOCALRL_RLLIB_LAUNCHER", None)
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "script.py"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    episodes, iteration = done.stdout.split("RESULT")[1].split()
    assert float(episodes) > 0 and iteration == "1"


@pytest.mark.cli
@pytest.mark.parametrize("form", ["trainer.py", "trainer/__init__.py"])
def test_a_trainer_module_in_the_working_folder_does_not_hijack_python_m_trainer(tmp_path, form):
    """Python puts the working folder first on `sys.path` under `-m`; the installed
    `localrl_main_guard.pth` (setup.py) keeps `python -m trainer` this project's. The
    `localrl` command never looks in the working folder."""
    (tmp_path / form).parent.mkdir(exist_ok=True)
    (tmp_path / form).write_text("print('the user trainer ran')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    localrl = os.path.join(os.path.dirname(sys.executable), "localrl")
    for command in ([sys.executable, "-m", "trainer", "--help"], [localrl, "--help"]):
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "the user trainer ran" not in done.stdout
        assert "usage:" in done.stdout and " run " in done.stdout


def test_dash_m_module_reads_pythons_command_line():
    from _localrl_main_guard import dash_m_module

    assert dash_m_module(["python", "-m", "trainer", "run", "x.py"]) == "trainer"
    assert dash_m_module(["python", "-u", "-W", "error", "-mtrainer.cli"]) == "trainer.cli"
    assert dash_m_module(["python", "-X", "dev", "-Bm", "checkpoints"]) == "checkpoints"
    assert dash_m_module(["python", "-Wignore", "-m", "trainer"]) == "trainer"
    assert dash_m_module(["python", "-c", "import x", "-m", "trainer"]) is None
    assert dash_m_module(["python", "script.py", "-m", "trainer"]) is None
    assert dash_m_module(["python"]) is None


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
def test_the_users_own_modules_win_in_ray_actors_too(tmp_path):
    """With EnvRunners as Ray actors (`--ray`, `backend="ray"`): Ray's workers put the
    driver's script folder first on `sys.path`, where the user's `trainer` package is; the
    actor still gets this project's `trainer`, and the user's env creator and callbacks
    there get the user's modules."""
    pytest.importorskip("ray", reason="needs the Ray wheel (the test extra)")
    _write(tmp_path, USERS_MODULES["package"])
    script = USERS_SCRIPT.replace(
        ".env_runners(num_env_runners=1)", '.env_runners(num_env_runners=1, backend="ray")'
    ).replace(
        "    algo = config.build()",
        "    ray.init(num_cpus=1, include_dashboard=False)\n    algo = config.build()",
    )
    (tmp_path / "script.py").write_text("import ray\n" + textwrap.dedent(script))
    env = {**os.environ, "PYTHONPATH": str(REPO), "USERS_FOLDER": str(tmp_path)}
    env.pop("LOCALRL_RLLIB_LAUNCHER", None)
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "--ray", "script.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    episodes, iteration = done.stdout.split("RESULT")[1].split()
    assert float(episodes) > 0 and iteration == "1"
