"""`tune --config FILE`: a Ray Tune search described in a TOML (or JSON) file.

    algo = "PPO"                                  # a registered algorithm (default PPO)
    env = "CartPole-v1"
    metric = "env_runners/episode_return_mean"    # what "best" means (and schedulers use)
    mode = "max"
    num_samples = 1                               # each grid point this many times
    max_concurrent_trials = 2
    name = "cartpole-lr"                          # the run folder: storage_path/name
    storage_path = "~/ray_results"

    [config]                                      # the algorithm's settings, as `train --config`
    train_batch_size = 500
    lr = {grid_search = [1e-3, 1e-4]}             # a search space: one TOML table
    [config.training]
    num_epochs = {choice = [4, 8]}

    [stop]                                        # Tune's stop criteria (result keys)
    training_iteration = 10

    [scheduler]                                   # optional: "asha" or "pbt"
    type = "asha"
    max_t = 10
    grace_period = 2

    [checkpoint]                                  # Tune's CheckpointConfig
    checkpoint_frequency = 1
    num_to_keep = 2

Search spaces (`SEARCH_SPACES`): `{grid_search = [...]}`, `{choice = [...]}`,
`{uniform = [low, high]}`, `{loguniform = [low, high]}`, `{quniform = [low, high, q]}`,
`{randint = [low, high]}`, `{qrandint = [low, high, q]}`, `{lograndint = [low, high]}`,
`{randn = [mean, sd]}`. PBT's `hyperparam_mutations` take the same tables, or a list of values.

Reading the file (`read_search_file`) checks everything (names, values, types) without
importing Ray; `SearchFile.tuner()` builds the Tune objects. Every error names the file, the
key, the value and what is allowed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from trainer.algorithms.registry import DEFAULT_ALGORITHM, get_trainable_cls
from trainer.cli.config_file import (
    BUILDER_TABLES,
    ConfigFileError,
    apply_config_file,
    read_config_file,
)

#: A search space's TOML key -> (how many numbers it takes (None: a list of values), Tune's
#: function of the same name).
SEARCH_SPACES: dict[str, int | None] = {
    "grid_search": None,
    "choice": None,
    "uniform": 2,
    "loguniform": 2,
    "quniform": 3,
    "randint": 2,
    "qrandint": 3,
    "lograndint": 2,
    "randn": 2,
}
#: The file's top-level keys (besides the tables below) and what each must be.
TOP_LEVEL_KEYS = {
    "algo": "an algorithm's registered name (PPO, DQN, ...)",
    "env": "an env id or a registered env name",
    "metric": "a result key, e.g. 'env_runners/episode_return_mean'",
    "mode": "'max' or 'min'",
    "num_samples": "a whole number >= 1",
    "max_concurrent_trials": "a whole number >= 1",
    "name": "the run folder's name",
    "storage_path": "the folder that holds run folders",
    "verbose": "0, 1, 2 or 3 (Tune's progress output)",
    "num_cpus": "the CPUs Ray may use (default: all of this machine's)",
}
TABLES = ("config", "stop", "scheduler", "checkpoint")
#: Each scheduler's settings (besides `type`; `metric` and `mode` come from the top level).
SCHEDULER_SETTINGS = {
    "asha": ("time_attr", "max_t", "grace_period", "reduction_factor", "brackets"),
    "pbt": (
        "time_attr",
        "perturbation_interval",
        "burn_in_period",
        "hyperparam_mutations",
        "quantile_fraction",
        "resample_probability",
        "perturbation_factors",
    ),
}
CHECKPOINT_SETTINGS = {
    "checkpoint_frequency": int,
    "checkpoint_at_end": bool,
    "num_to_keep": int,
    "checkpoint_score_attribute": str,
    "checkpoint_score_order": str,
}


@dataclass(frozen=True)
class SearchSpace:
    """One search space of the file: Tune's `kind(*arguments)` (grid_search/choice: one list)."""

    kind: str
    arguments: tuple

    def first_value(self) -> Any:
        """A value the space can take (to check the setting accepts such values)."""
        if SEARCH_SPACES[self.kind] is None:
            return self.arguments[0][0]
        value = self.arguments[0]
        return int(value) if self.kind.endswith("randint") else value

    def to_tune(self, tune: Any) -> Any:
        return getattr(tune, self.kind)(*self.arguments)


def _search_space(value: Any, where: str) -> SearchSpace | None:
    """The search space a one-key table stands for, or None for any other value."""
    if not (isinstance(value, dict) and len(value) == 1):
        return None
    kind, arguments = next(iter(value.items()))
    if kind not in SEARCH_SPACES:
        return None
    count = SEARCH_SPACES[kind]
    if count is None:
        if not isinstance(arguments, list) or not arguments:
            raise ConfigFileError(f"{where} = {{{kind} = {arguments!r}}}: give a non-empty list")
        return SearchSpace(kind, (list(arguments),))
    numbers = arguments if isinstance(arguments, list) else None
    if (
        numbers is None
        or len(numbers) != count
        or any(isinstance(n, bool) or not isinstance(n, (int, float)) for n in numbers)
    ):
        shape = {2: "[low, high]", 3: "[low, high, q]"}[count]
        if kind == "randn":
            shape = "[mean, sd]"
        raise ConfigFileError(f"{where} = {{{kind} = {arguments!r}}}: give {count} numbers {shape}")
    if kind != "randn" and not numbers[0] < numbers[1]:
        raise ConfigFileError(f"{where} = {{{kind} = {arguments!r}}}: low must be less than high")
    if kind.startswith("log") and numbers[0] <= 0:
        raise ConfigFileError(f"{where} = {{{kind} = {arguments!r}}}: low must be > 0")
    return SearchSpace(kind, tuple(numbers))


@dataclass
class SearchFile:
    """A checked search file: the algorithm's config (plain settings applied), the search
    spaces by their `to_dict()` path, and Tune's settings."""

    path: str
    algo: str
    config: Any
    spaces: dict[tuple[str, ...], SearchSpace]
    stop: dict[str, float]
    metric: str | None = None
    mode: str | None = None
    num_samples: int = 1
    max_concurrent_trials: int | None = None
    name: str | None = None
    storage_path: str | None = None
    verbose: int = 1
    num_cpus: int | None = None
    scheduler: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] = field(default_factory=dict)

    def param_space(self, tune: Any) -> dict[str, Any]:
        """The config's `to_dict()` with Tune's search spaces at their settings."""
        space = self.config.to_dict()
        for path, search in self.spaces.items():
            target = space
            for part in path[:-1]:
                target[part] = dict(target.get(part) or {})
                target = target[part]
            target[path[-1]] = search.to_tune(tune)
        return space

    def tuner(self, tune: Any) -> Any:
        """Tune's `Tuner` for this search (`tune`: `trainer.tune`)."""
        run_config = tune.RunConfig(
            name=self.name,
            storage_path=self.storage_path,
            stop=self.stop or None,
            verbose=self.verbose,
            checkpoint_config=tune.CheckpointConfig(**self.checkpoint),
        )
        tune_config = tune.TuneConfig(
            metric=self.metric,
            mode=self.mode,
            num_samples=self.num_samples,
            max_concurrent_trials=self.max_concurrent_trials,
            scheduler=self._scheduler(tune),
        )
        return tune.Tuner(
            self.config.algo_class,
            param_space=self.param_space(tune),
            run_config=run_config,
            tune_config=tune_config,
        )

    def _scheduler(self, tune: Any) -> Any:
        if not self.scheduler:
            return None
        settings = dict(self.scheduler)
        kind = settings.pop("type")
        if kind == "asha":
            return tune.schedulers.ASHAScheduler(**settings)
        mutations = settings.pop("hyperparam_mutations", {})
        settings["hyperparam_mutations"] = {
            key: value.to_tune(tune) if isinstance(value, SearchSpace) else value
            for key, value in mutations.items()
        }
        if "perturbation_factors" in settings:
            settings["perturbation_factors"] = tuple(settings["perturbation_factors"])
        return tune.schedulers.PopulationBasedTraining(**settings)


def _split_spaces(
    table: dict[str, Any], prefix: tuple[str, ...], where: str
) -> tuple[dict[str, Any], dict[tuple[str, ...], SearchSpace]]:
    """The table without its search spaces, and the search spaces by their key path."""
    plain: dict[str, Any] = {}
    spaces: dict[tuple[str, ...], SearchSpace] = {}
    for key, value in table.items():
        path = (*prefix, key)
        search = _search_space(value, f"{where}{'.'.join(path)}")
        if search is not None:
            spaces[path] = search
        elif isinstance(value, dict):
            inner, inner_spaces = _split_spaces(value, path, where)
            plain[key] = inner
            spaces.update(inner_spaces)
        else:
            plain[key] = value
    return plain, spaces


#: Builder-method arguments stored under another name in `to_dict()`.
TO_DICT_NAMES = {"model_config": "model"}


def _setting_path(path: tuple[str, ...], builder_tables: tuple[str, ...]) -> tuple[str, ...]:
    """A search space's key path in the file's [config] -> its path in `to_dict()`:
    `training.lr` is `lr`, `rl_module.model_config.fcnet_hiddens` is `model.fcnet_hiddens`."""
    if len(path) > 1 and path[0] in builder_tables:
        path = path[1:]
    return (TO_DICT_NAMES.get(path[0], path[0]), *path[1:])


def _whole_number(value: Any, key: str, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigFileError(f"{where}{key} = {value!r}: must be a whole number >= {minimum}")
    return value


def _check_scheduler(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}[scheduler] must be a table, not {table!r}")
    kind = table.get("type")
    if kind not in SCHEDULER_SETTINGS:
        raise ConfigFileError(
            f"{where}[scheduler] type = {kind!r}: must be one of "
            f"{', '.join(map(repr, SCHEDULER_SETTINGS))}"
        )
    settings: dict[str, Any] = {"type": kind}
    allowed = SCHEDULER_SETTINGS[kind]
    for key, value in table.items():
        if key == "type":
            continue
        if key not in allowed:
            raise ConfigFileError(
                f"{where}[scheduler] {key}: not a setting of the {kind!r} scheduler; "
                f"allowed: {', '.join(allowed)}"
            )
        if key == "hyperparam_mutations":
            value = _check_mutations(value, where)
        elif key == "time_attr":
            if not isinstance(value, str):
                raise ConfigFileError(f"{where}[scheduler] time_attr = {value!r}: a result key")
        elif key == "perturbation_factors":
            if not (
                isinstance(value, list)
                and len(value) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            ):
                raise ConfigFileError(
                    f"{where}[scheduler] perturbation_factors = {value!r}: two numbers"
                )
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigFileError(f"{where}[scheduler] {key} = {value!r}: must be a number > 0")
        settings[key] = value
    if kind == "asha":
        max_t, grace = settings.get("max_t", 100), settings.get("grace_period", 1)
        if grace > max_t:
            raise ConfigFileError(
                f"{where}[scheduler] grace_period = {grace!r}: must be <= max_t ({max_t!r})"
            )
        if settings.get("reduction_factor", 4) <= 1:
            raise ConfigFileError(
                f"{where}[scheduler] reduction_factor = {settings['reduction_factor']!r}: "
                "must be > 1"
            )
    if kind == "pbt" and not settings.get("hyperparam_mutations"):
        raise ConfigFileError(
            f"{where}[scheduler] hyperparam_mutations: the 'pbt' scheduler needs at least one "
            "setting to mutate, e.g. hyperparam_mutations = {lr = {uniform = [1e-4, 1e-3]}}"
        )
    return settings


def _check_mutations(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigFileError(
            f"{where}[scheduler] hyperparam_mutations = {table!r}: a table of setting = search "
            "space or list of values"
        )
    mutations: dict[str, Any] = {}
    for key, value in table.items():
        search = _search_space(value, f"{where}[scheduler] hyperparam_mutations.{key}")
        if search is not None:
            mutations[key] = search
        elif isinstance(value, list) and value:
            mutations[key] = list(value)
        else:
            raise ConfigFileError(
                f"{where}[scheduler] hyperparam_mutations.{key} = {value!r}: a search space "
                f"({', '.join(SEARCH_SPACES)}) or a non-empty list of values"
            )
    return mutations


def _check_checkpoint(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}[checkpoint] must be a table, not {table!r}")
    for key, value in table.items():
        kind = CHECKPOINT_SETTINGS.get(key)
        if kind is None:
            raise ConfigFileError(
                f"{where}[checkpoint] {key}: not a checkpoint setting; allowed: "
                f"{', '.join(CHECKPOINT_SETTINGS)}"
            )
        wrong_type = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
        if wrong_type or (kind is int and value < (1 if key == "num_to_keep" else 0)):
            raise ConfigFileError(
                f"{where}[checkpoint] {key} = {value!r}: must be a "
                + {int: "whole number >= 0", bool: "true or false", str: "string"}[kind]
                + (" (>= 1)" if key == "num_to_keep" else "")
            )
        if key == "checkpoint_score_order" and value not in ("max", "min"):
            raise ConfigFileError(f"{where}[checkpoint] {key} = {value!r}: 'max' or 'min'")
    return dict(table)


def _check_stop(table: Any, where: str) -> dict[str, float]:
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}[stop] must be a table of result keys, not {table!r}")
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigFileError(
                f"{where}[stop] {key} = {value!r}: must be a number (Tune stops a trial once "
                "the result key reaches it)"
            )
    return dict(table)


def read_search_file(path: str) -> SearchFile:
    """Reads and checks a search file (see the module docstring); no Ray is imported."""
    where = f"argument --config: {path}: "
    content = read_config_file(path)
    for key in content:
        if key not in TOP_LEVEL_KEYS and key not in TABLES:
            raise ConfigFileError(
                f"{where}{key}: not a key of a search file; allowed: "
                f"{', '.join([*TOP_LEVEL_KEYS, *(f'[{t}]' for t in TABLES)])} (the "
                "algorithm's settings go in [config])"
            )
    algo = content.get("algo", DEFAULT_ALGORITHM)
    try:
        algo_class = get_trainable_cls(algo) if isinstance(algo, str) else None
    except (ValueError, KeyError) as error:
        raise ConfigFileError(f"{where}algo = {algo!r}: {error}") from None
    if algo_class is None:
        raise ConfigFileError(f"{where}algo = {algo!r}: {TOP_LEVEL_KEYS['algo']}")
    config = algo_class.get_default_config()
    if "env" in content:
        if not isinstance(content["env"], str):
            raise ConfigFileError(f"{where}env = {content['env']!r}: {TOP_LEVEL_KEYS['env']}")
        config.environment(content["env"])
    table = content.get("config", {})
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}[config] must be a table of settings, not {table!r}")
    plain, found = _split_spaces(table, (), f"{where}[config] ")
    plain_stop = apply_config_file(config, plain, path)
    if plain_stop:
        raise ConfigFileError(f"{where}[config] stop: give the stop criteria as [stop]")
    settings = config.to_dict()
    spaces: dict[tuple[str, ...], SearchSpace] = {}
    for file_path, space in found.items():
        setting_path = _setting_path(file_path, BUILDER_TABLES)
        name = ".".join(file_path)
        if setting_path[0] not in settings:
            raise ConfigFileError(
                f"{where}[config] {name}: {setting_path[0]!r} is not a setting of "
                f"{algo_class.__name__} (`localrl settings` lists them)"
            )
        _check_setting_takes(config, setting_path, space, f"{where}[config] {name}")
        spaces[setting_path] = space
    search = SearchFile(
        path=path,
        algo=algo_class.__name__,
        config=config,
        spaces=spaces,
        stop=_check_stop(content.get("stop", {}), where),
        scheduler=_check_scheduler(content["scheduler"], where) if "scheduler" in content else {},
        checkpoint=_check_checkpoint(content.get("checkpoint", {}), where),
    )
    _apply_top_level(search, content, where)
    if search.scheduler and not (search.metric and search.mode):
        raise ConfigFileError(
            f"{where}[scheduler]: a scheduler needs metric and mode at the top of the file "
            "(e.g. metric = 'env_runners/episode_return_mean', mode = 'max')"
        )
    if search.scheduler.get("type") == "pbt":
        for key in search.scheduler["hyperparam_mutations"]:
            if key not in settings:
                raise ConfigFileError(
                    f"{where}[scheduler] hyperparam_mutations.{key}: not a setting of "
                    f"{algo_class.__name__}"
                )
    return search


def _check_setting_takes(
    config: Any, setting_path: tuple[str, ...], search: SearchSpace, where: str
) -> None:
    """The setting accepts a value of the space (checked on a copy: a bad setting fails here,
    before any trial starts)."""
    trial = config.copy(copy_frozen=False) if hasattr(config, "copy") else copy.deepcopy(config)
    value: Any = search.first_value()
    top = setting_path[0]
    if len(setting_path) > 1:
        nested = copy.deepcopy(config.to_dict().get(top) or {})
        target = nested
        for part in setting_path[1:-1]:
            target = target.setdefault(part, {})
        target[setting_path[-1]] = value
        value = nested
    try:
        trial.update_from_dict({top: value})
        trial.validate()
    except Exception as error:  # noqa: BLE001 (the config's own message, with the key)
        raise ConfigFileError(
            f"{where}: a value of the search space ({value!r}): {error}"
        ) from None


def _apply_top_level(search: SearchFile, content: dict[str, Any], where: str) -> None:
    metric = content.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise ConfigFileError(f"{where}metric = {metric!r}: {TOP_LEVEL_KEYS['metric']}")
    mode = content.get("mode")
    if mode is not None and mode not in ("max", "min"):
        raise ConfigFileError(f"{where}mode = {mode!r}: must be 'max' or 'min'")
    if (metric is None) != (mode is None):
        raise ConfigFileError(f"{where}metric and mode: give both or neither")
    search.metric, search.mode = metric, mode
    if "num_samples" in content:
        search.num_samples = _whole_number(content["num_samples"], "num_samples", where)
    if "max_concurrent_trials" in content:
        search.max_concurrent_trials = _whole_number(
            content["max_concurrent_trials"], "max_concurrent_trials", where
        )
    if "num_cpus" in content:
        search.num_cpus = _whole_number(content["num_cpus"], "num_cpus", where)
    if "verbose" in content:
        verbose = content["verbose"]
        if verbose not in (0, 1, 2, 3) or isinstance(verbose, bool):
            raise ConfigFileError(f"{where}verbose = {verbose!r}: {TOP_LEVEL_KEYS['verbose']}")
        search.verbose = verbose
    for key in ("name", "storage_path"):
        if key in content:
            value = content[key]
            if not isinstance(value, str) or not value.strip():
                raise ConfigFileError(f"{where}{key} = {value!r}: {TOP_LEVEL_KEYS[key]}")
            setattr(search, key, value)
    if search.storage_path is not None:
        import os

        search.storage_path = os.path.abspath(os.path.expanduser(search.storage_path))
