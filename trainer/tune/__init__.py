"""Ray Tune, with this project's algorithms as trainables: `from trainer import tune` is used as
`from ray import tune` is with RLlib.

    from trainer import PPOConfig, tune

    config = PPOConfig().environment("CartPole-v1").training(lr=tune.grid_search([1e-3, 1e-4]))
    results = tune.Tuner("PPO", param_space=config,
                         run_config=tune.RunConfig(stop={"training_iteration": 5})).fit()

Everything `ray.tune` offers is here (its names and its submodules: `tune.schedulers`,
`tune.search`, `tune.stopper`, ...); the functions that take a trainable (`Tuner`,
`Tuner.restore`, `run`, `register_trainable`, `with_parameters`, `with_resources`) also take an
Algorithm class (PPO, DQN or a subclass), its name, or an AlgorithmConfig, and `param_space`
(`config` of `run`) an AlgorithmConfig. Plain `ray.tune` refuses this project's Algorithm
classes (they are not Tune Trainables): import Tune from here. Needs the `tune` extra:
`pip install 'localrl[tune]'`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

try:
    import ray.tune as _ray_tune
except ImportError as _error:  # ray[tune] missing, or one of its dependencies
    raise ImportError(
        f"trainer.tune needs Ray Tune ({_error}): pip install 'localrl[tune]'"
    ) from _error
if getattr(_ray_tune, "__localrl_shim__", False):  # the RLlib launcher's stand-in for Ray
    # (its Tune names import as placeholders: this module would bind them, and keep them)
    raise ImportError(
        "trainer.tune needs Ray Tune on real Ray; the RLlib launcher serves Ray's stand-in "
        "here (run the script with `python -m trainer run --ray`, or install(real_ray=True))"
    )

from ray.tune import *  # noqa: F403  (the front serves all of ray.tune's names)

# Named too (the star import serves them at run time): the type check sees these.
from ray.tune import (
    CheckpointConfig as CheckpointConfig,
)
from ray.tune import (
    CLIReporter as CLIReporter,
)
from ray.tune import (
    FailureConfig as FailureConfig,
)
from ray.tune import (
    ResultGrid,
)
from ray.tune import (
    RunConfig as RunConfig,
)
from ray.tune import (
    TuneConfig as TuneConfig,
)
from ray.tune import __all__ as _ray_tune_all
from ray.tune.registry import ENV_CREATOR
from ray.tune.registry import _global_registry as _tune_registry
from ray.tune.registry import get_trainable_cls as _tune_get_trainable_cls

from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.env import envs as _envs
from trainer.tune.trainable import (
    AlgorithmTrainable,
    as_trainable,
    config_dict,
    register_known_algorithms,
)

#: `ray.tune`'s submodules that scripts reach as attributes (`tune.schedulers.ASHAScheduler`)
#: or import (`from trainer.tune.schedulers import ASHAScheduler`).
SUBMODULES = (
    "analysis",
    "callback",
    "error",
    "execution",
    "experiment",
    "logger",
    "progress_reporter",
    "registry",
    "result",
    "result_grid",
    "schedulers",
    "search",
    "stopper",
    "trainable",
    "tune_config",
    "utils",
)
for _name in SUBMODULES:
    _module = importlib.import_module(f"ray.tune.{_name}")
    globals()[_name] = _module
    sys.modules.setdefault(f"{__name__}.{_name}", _module)


def param_space_of(param_space: Any) -> Any:
    """A Tuner's `param_space` (or `run`'s config) as Tune takes it: an AlgorithmConfig becomes
    its dict (as Tune does with RLlib's); anything else is passed on."""
    if isinstance(param_space, AlgorithmConfig):
        return config_dict(param_space)
    return param_space


def share_registered_envs() -> None:
    """Puts the env names registered in this process (`trainer.register_env`) in Tune's
    registry, which reaches every trial's actor (where `AlgorithmTrainable.setup` takes
    them back); and PPO and DQN under their names."""
    register_known_algorithms()
    for name, creator in _envs._REGISTRY.items():
        if not _tune_registry.contains(ENV_CREATOR, name):
            _tune_registry.register(ENV_CREATOR, name, creator)


def trainable_of(trainable: Any) -> Any:
    """What Tune runs for `trainable` (see `as_trainable`), with PPO, DQN and this process's
    env names registered in Tune's registry first."""
    share_registered_envs()
    return as_trainable(trainable)


class Tuner(_ray_tune.Tuner):
    """Ray Tune's Tuner; `trainable` may also be an Algorithm class, its name or an
    AlgorithmConfig, and `param_space` an AlgorithmConfig."""

    def __init__(
        self,
        trainable: Any = None,
        *,
        param_space: dict[str, Any] | AlgorithmConfig | None = None,
        tune_config: Any = None,
        run_config: Any = None,
        **internal: Any,
    ) -> None:
        if isinstance(trainable, AlgorithmConfig) and param_space is None:
            param_space = trainable
        if trainable is not None:
            trainable = trainable_of(trainable)
        space = param_space_of(param_space)
        super().__init__(
            trainable,
            param_space=space,
            tune_config=tune_config,
            run_config=run_config,
            **internal,
        )
        local = getattr(self, "_local_tuner", None)  # none with Ray Client
        if space is not None and local is not None and not internal:
            _save_param_space(local.get_run_config(), space)

    def fit(self) -> ResultGrid:
        share_registered_envs()  # Ray may have started since __init__ (a new registry)
        return super().fit()

    @classmethod
    def restore(cls, path: str, trainable: Any, *args: Any, **kwargs: Any) -> Tuner:
        """Ray Tune's `Tuner.restore`; `trainable` as in `Tuner()`, `param_space` too."""
        if len(args) > 3:  # param_space given in its place, after restart_errored
            args = (*args[:3], param_space_of(args[3]), *args[4:])
        elif kwargs.get("param_space") is not None:
            kwargs["param_space"] = param_space_of(kwargs["param_space"])
        else:
            kwargs["param_space"] = _saved_param_space(path, kwargs.get("storage_filesystem"))
        restored = super().restore(path, trainable_of(trainable), *args, **kwargs)
        local = getattr(restored, "_local_tuner", None)  # none with Ray Client
        return restored if local is None else cls(_tuner_internal=local)


#: The search's param_space, saved by `Tuner` next to Tune's tuner.pkl (which leaves it out).
PARAM_SPACE_FILE = "param_space.pkl"


def _save_param_space(run_config: Any, param_space: dict[str, Any]) -> None:
    """Saves the param_space in the experiment's folder: Tune's `Tuner.restore` rebuilds the
    functions and classes of a config dict (policy_mapping_fn, PolicySpec, callbacks) only
    from a param_space given again, and `Tuner.restore` here passes this one when none is
    given."""
    from ray import cloudpickle
    from ray.train._internal.storage import StorageContext

    storage = StorageContext(
        storage_path=run_config.storage_path,
        experiment_dir_name=run_config.name,
        storage_filesystem=run_config.storage_filesystem,
    )
    path = f"{storage.experiment_fs_path}/{PARAM_SPACE_FILE}"
    with storage.storage_filesystem.open_output_stream(path) as stream:
        stream.write(cloudpickle.dumps(param_space))


def _saved_param_space(path: str, filesystem: Any) -> dict[str, Any] | None:
    """The param_space `Tuner` saved in the experiment at `path`, or None."""
    import pyarrow.fs
    from ray import cloudpickle
    from ray.train._internal.storage import get_fs_and_path

    fs, fs_path = get_fs_and_path(path, filesystem)
    file_path = f"{fs_path}/{PARAM_SPACE_FILE}"
    if fs.get_file_info(file_path).type != pyarrow.fs.FileType.File:
        return None
    with fs.open_input_file(file_path) as stream:
        return cloudpickle.loads(stream.read())


def run(run_or_experiment: Any, *args: Any, config: Any = None, **kwargs: Any) -> Any:
    """Ray Tune's `tune.run`; `run_or_experiment` as `Tuner`'s trainable, `config` as its
    `param_space`."""
    if isinstance(run_or_experiment, AlgorithmConfig) and config is None:
        config = run_or_experiment
    return _ray_tune.run(
        trainable_of(run_or_experiment), *args, config=param_space_of(config), **kwargs
    )


def register_trainable(name: str, trainable: Any, warn: bool = True) -> None:
    """Ray Tune's `register_trainable`; `trainable` may be an Algorithm class or config."""
    _ray_tune.register_trainable(name, trainable_of(trainable), warn=warn)


def register_env(name: str, env_creator: Any) -> None:
    """Registers `env_creator(env_config) -> env` under `name` for this process's algorithms
    and, through Tune's registry, for every trial's."""
    _envs.register_env(name, env_creator)
    _ray_tune.register_env(name, env_creator)


def get_trainable_cls(name: str) -> Any:
    """Tune's trainable registered under `name`: PPO and DQN are this project's."""
    share_registered_envs()
    return _tune_get_trainable_cls(name)


def with_parameters(trainable: Any, **kwargs: Any) -> Any:
    """Ray Tune's `with_parameters`; `trainable` as in `Tuner()`."""
    return _ray_tune.with_parameters(trainable_of(trainable), **kwargs)


def with_resources(trainable: Any, resources: Any) -> Any:
    """Ray Tune's `with_resources`; `trainable` as in `Tuner()`."""
    return _ray_tune.with_resources(trainable_of(trainable), resources)


__all__ = [
    *_ray_tune_all,
    "AlgorithmTrainable",
    "as_trainable",
    "get_trainable_cls",
    *SUBMODULES,
]
