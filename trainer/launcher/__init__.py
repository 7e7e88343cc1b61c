"""Running unmodified RLlib 2.60 scripts on this project.

    python -m trainer run my_rllib_script.py --stop-iters 5

runs the script as `python my_rllib_script.py --stop-iters 5` would, with `import ray...`
answered by this project: `ray.rllib.*` module paths import stand-in modules whose names are
this project's classes and functions (`trainer.launcher.table` is the mapping, one row per
module), `ray.tune`'s registry, `get_trainable_cls`, `grid_search` and result keys are served by
`trainer.launcher.tune_api`, and `import ray` gets `trainer.launcher.ray_api` (init, shutdown,
remote, get, wait, put, get_actor, named actors). An RLlib name with no counterpart fails at
the import with `RLlibNotAvailable` (an `ImportError` and a `trainer.errors.NotSupported`,
whose `.capability` says what it needs: torch RLModules, Ray Tune, ...); the names of RLlib's
other algorithms and of Tune's experiment runner import, and fail so when used. A script that
uses Tune's runner (in its own code or its folder's modules) runs on real Ray where Ray Tune
is installed (`trainer.launcher.script.wants_real_ray`).

In a notebook, or at the top of a script:

    import trainer.launcher
    trainer.launcher.install()      # from here on, `import ray...` is served by this project
    from ray.rllib.algorithms.ppo import PPOConfig

`install(real_ray=True)` (the command line's `--ray`, or `LOCALRL_RLLIB_LAUNCHER=ray`) keeps the
installed Ray for `import ray` (needed by `env_runners(backend="ray")`) and maps only
`ray.rllib`, `ray.tune` and `ray.air`. Processes the script starts that import `trainer`
(every EnvRunner) install the same hook (the mode travels in `LOCALRL_RLLIB_LAUNCHER`).
"""

from trainer.launcher.finder import (
    ENV_VAR,
    RLlibFinder,
    RLlibNotAvailable,
    install,
    install_from_environment,
    installed_finder,
    plan_for,
    uninstall,
)
from trainer.launcher.script import REPORT_ENV_VAR, run_script

__all__ = [
    "ENV_VAR",
    "REPORT_ENV_VAR",
    "RLlibFinder",
    "RLlibNotAvailable",
    "install",
    "install_from_environment",
    "installed",
    "installed_finder",
    "plan_for",
    "run_script",
    "uninstall",
]


def installed() -> bool:
    """Whether the hook is on `sys.meta_path` in this process."""
    return installed_finder() is not None
