"""Checkpoints written by RLlib 2.60, read here without Ray and without running their pickles.

RLlib writes a checkpoint as nested folders, one per `Checkpointable` component:

    algorithm/                       rllib_checkpoint.json, algorithm_state.{pkl,msgpack}
        class_and_ctor_args.pkl      the class and its constructor arguments (always a pickle)
        learner_group/learner/rl_module/<module id>/   module_state.{pkl,msgpack}
        env_runner/env_to_module_connector/<piece>/    state.{pkl,msgpack}

Each folder has a `metadata.json` naming `ray_version` and `checkpoint_version`. A state file is
a pickle, or with `save_to_path(use_msgpack=True)` msgpack with msgpack_numpy's arrays; the
`class_and_ctor_args.pkl` files are pickles either way.

The pickles are read by `SafeUnpickler`: numpy arrays and random generators, gymnasium spaces
and plain containers are rebuilt; every other global (RLlib's classes, a cloudpickled lambda, a
callbacks class) becomes a placeholder type (`RLlibObject`) that records its module, name and the
arguments it was called with. Nothing is imported and no code of the file runs, so reading
needs no trust. RLlib's classes are then mapped onto this project's by the launcher's table
(`trainer.launcher.table`, the same map that serves `ray.rllib` imports to unmodified scripts);
a setting whose value is code RLlib pickled (an `env_to_module_connector` lambda, a callbacks
class of the user's) is not run: the connector pieces are rebuilt from their own checkpoint
folders, and anything else that is code is named in the error or the warning that leaves it
out.

Data flow: `load_rllib_module(path)` -> module spec (ctor args) + state -> this project's module
with the state set; `load_rllib_algorithm(path)` -> config state -> `AlgorithmConfig` -> built
algorithm -> module weights, connector statistics and counters set.
"""

from __future__ import annotations

import base64
import copy
import functools
import importlib
import io
import json
import os
import pickle
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.algorithms.registry import entries
from trainer.checkpoints.format import CheckpointError
from trainer.checkpoints.rllib_layout import (
    CLASS_AND_CTOR_ARGS_FILE,
    RLLIB_CHECKPOINT_FILE,
    RLLIB_METADATA_FILE,
    ModuleRead,
    RLlibModuleClass,
    is_rllib_checkpoint,
)
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.core.models import MODEL_DEFAULTS
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec
from trainer.launcher.finder import resolve_rllib_name
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

#: Every component folder's metadata file.
METADATA_FILE = RLLIB_METADATA_FILE
#: RLlib's package: its classes are mapped onto this project's (`our_object`).
RLLIB_PACKAGE = "ray.rllib."
#: The state files' stems (`<stem>.pkl` or `<stem>.msgpack`).
ALGORITHM_STATE = "algorithm_state"
MODULE_STATE = "module_state"
STATE = "state"
#: The component folders of an Algorithm checkpoint.
LEARNER_MODULES = ("learner_group", "learner", "rl_module")
ENV_RUNNER = "env_runner"
ENV_TO_MODULE = "env_to_module_connector"
#: The RLlib version whose layout this reader knows.
RLLIB_VERSION = "2.60.0"
#: The module id of a single-agent run.
DEFAULT_MODULE_ID = "default_policy"
#: The end of the keys of RLlib's default torch modules' states that are constants here (each
#: MLP head's log-std clip value, a buffer RLlib registers), not parameters.
CONSTANT_STATE_SUFFIX = ".log_std_clip_param_const"


# -- pickles, read without running them ---------------------------------------------------------
class RLlibObject:
    """What a pickle's global that is not rebuilt here stands for: its type records the
    global's module and name (`rllib_path`), an instance the arguments it was called with and
    the state pickle gave it. Any call, any state: nothing runs."""

    rllib_module = ""
    rllib_name = ""
    #: What pickle gave the instance: the call's arguments and `__setstate__`'s state.
    args: tuple
    kwargs: dict
    state: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> RLlibObject:
        instance = object.__new__(cls)
        instance.__dict__["args"] = args
        instance.__dict__["kwargs"] = kwargs
        instance.__dict__["state"] = None
        return instance

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.__dict__["state"] = state

    def __call__(self, *args: Any, **kwargs: Any) -> RLlibObject:
        return type(self)(*args, **kwargs)

    @classmethod
    def rllib_path(cls) -> str:
        return f"{cls.rllib_module}.{cls.rllib_name}"

    def __repr__(self) -> str:
        return f"<{self.rllib_path()} (not loaded)>"


_PLACEHOLDERS: dict[tuple[str, str], type[RLlibObject]] = {}


def placeholder(module: str, name: str) -> type[RLlibObject]:
    """The placeholder type of the global `module.name` (one per global)."""
    key = (module, name)
    if key not in _PLACEHOLDERS:
        _PLACEHOLDERS[key] = type(
            name.rpartition(".")[2] or name,
            (RLlibObject,),
            {"rllib_module": module, "rllib_name": name, "__module__": __name__},
        )
    return _PLACEHOLDERS[key]


def rllib_path(value: Any) -> str | None:
    """ "module.name" of a placeholder (a type or an instance), else None."""
    if isinstance(value, type) and issubclass(value, RLlibObject):
        return value.rllib_path()
    if isinstance(value, RLlibObject):
        return type(value).rllib_path()
    return None


#: The globals a pickle may use to rebuild data: numpy's array, scalar, dtype and generator
#: reconstructors, and plain containers.
_REBUILT: dict[str, tuple[str, ...]] = {
    "builtins": ("set", "frozenset", "complex", "slice", "range", "bytearray", "bytes"),
    "collections": ("OrderedDict", "deque"),
    "_codecs": ("encode",),
    "numpy": ("dtype", "ndarray"),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy.core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.core.numeric": ("_frombuffer",),
    "numpy.random._pickle": ("__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"),
    "numpy.random._pcg64": ("PCG64", "PCG64DXSM"),
    "numpy.random._mt19937": ("MT19937",),
    "numpy.random._philox": ("Philox",),
    "numpy.random._sfc64": ("SFC64",),
    "numpy.random.bit_generator": ("__pyx_unpickle_SeedSequence", "SeedSequence"),
}
#: gymnasium's spaces, rebuilt (their own `__setstate__` runs: gymnasium's code).
_SPACES_MODULE = "gymnasium.spaces."


class SafeUnpickler(pickle.Unpickler):
    """Rebuilds numpy data, gymnasium spaces and plain containers; every other global becomes
    a placeholder type (`placeholder`). No module is imported for a global outside
    `_REBUILT` and gymnasium's spaces."""

    def find_class(self, module: str, name: str) -> Any:
        if name in _REBUILT.get(module, ()):
            return super().find_class(module, name)
        if module.startswith(_SPACES_MODULE) and name[:1].isupper() and "." not in name:
            return super().find_class(module, name)
        return placeholder(module, name)


def load_pickle(path: str) -> Any:
    """The pickle at `path`, read by `SafeUnpickler`."""
    try:
        with open(path, "rb") as file:
            return SafeUnpickler(file).load()
    except (OSError, pickle.UnpicklingError, EOFError, TypeError, ValueError) as error:
        raise CheckpointError(path, f"could not be read as RLlib's pickle: {error}") from None


def _msgpack_arrays(value: Any) -> Any:
    """msgpack_numpy's encoded arrays ({"nd": True, "type", "shape", "data"}) as arrays."""
    if isinstance(value, dict):
        keys = {k.decode() if isinstance(k, bytes) else k: v for k, v in value.items()}
        if keys.get("nd") is True and "data" in keys and "type" in keys:
            dtype = np.dtype(keys["type"])
            return np.frombuffer(keys["data"], dtype=dtype).reshape(keys["shape"]).copy()
        if keys.get("nd") is False and "data" in keys and "type" in keys:  # a numpy scalar
            return np.frombuffer(keys["data"], dtype=np.dtype(keys["type"]))[0]
        return {_msgpack_key(k): _msgpack_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_msgpack_arrays(v) for v in value]
    return value


def _msgpack_key(key: Any) -> Any:
    return key.decode() if isinstance(key, bytes) else key


def load_msgpack(path: str) -> Any:
    """A msgpack state file RLlib wrote (msgpack_numpy's arrays decoded here)."""
    try:
        import msgpack  # RLlib writes these with msgpack (ray[rllib] installs it)
    except ImportError:
        raise CheckpointError(
            path, "is msgpack with msgpack_numpy's arrays: reading it needs `pip install msgpack`"
        ) from None
    try:
        with open(path, "rb") as file:
            data = msgpack.unpackb(file.read(), raw=False, strict_map_key=False)
    except (OSError, ValueError) as error:
        raise CheckpointError(path, f"could not be read as msgpack: {error}") from None
    return _msgpack_arrays(data)


def read_state(folder: str, stem: str) -> Any:
    """The state file `<stem>.pkl` or `<stem>.msgpack` in `folder`, or None without one."""
    for suffix, reader in ((".msgpack", load_msgpack), (".pkl", load_pickle)):
        path = os.path.join(folder, stem + suffix)
        if os.path.isfile(path):
            return reader(path)
    return None


def read_ctor_args(folder: str) -> tuple[Any, tuple, dict]:
    """(class placeholder, args, kwargs) from a folder's `class_and_ctor_args.pkl`."""
    path = os.path.join(folder, CLASS_AND_CTOR_ARGS_FILE)
    if not os.path.isfile(path):
        raise CheckpointError(folder, f"has no {CLASS_AND_CTOR_ARGS_FILE}: not RLlib's layout")
    data = load_pickle(path)
    try:
        args, kwargs = data["ctor_args_and_kwargs"]
        return data["class"], tuple(args), dict(kwargs)
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(
            path, "does not hold RLlib 2.60's {'class', 'ctor_args_and_kwargs'}"
        ) from None


def check_version(folder: str) -> None:
    """Refuses a layout other than RLlib 2.x's new API stack (checkpoint_version 2.x)."""
    for name in (RLLIB_CHECKPOINT_FILE, METADATA_FILE):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as file:
                    metadata = json.load(file)
            except (OSError, ValueError) as error:
                raise CheckpointError(path, f"is not JSON: {error}") from None
            version = str(metadata.get("checkpoint_version", ""))
            if not version.startswith("2."):
                raise CheckpointError(
                    folder,
                    f"is an RLlib checkpoint of layout version {version!r} (Ray "
                    f"{metadata.get('ray_version')}); this project reads RLlib "
                    f"{RLLIB_VERSION}'s new API stack layout (version 2.x)",
                )
            return


# -- RLlib's names, this project's objects --------------------------------------------------------
def our_object(value: Any, where: str) -> Any:
    """This project's object for RLlib's global a placeholder names (by the launcher's table),
    raising `CheckpointError` where there is none."""
    path = rllib_path(value)
    if path is None:
        return value
    module, _, name = path.rpartition(".")
    found = resolve_rllib_name(module, name)
    if found is None:
        raise CheckpointError(
            where,
            f"names {path}, which this project does not have (a class of your own is "
            "imported only from a checkpoint saved here; RLlib's pickle is not run)",
        )
    return found


def _space_of(value: Any, where: str) -> Any:
    if value is not None and not isinstance(value, gym.Space):
        raise CheckpointError(where, f"holds {value!r} where RLlib stores a gymnasium space")
    return value


# -- modules --------------------------------------------------------------------------------------
@functools.cache
def module_reads() -> dict[str, ModuleRead]:
    """RLlib's module classes that the algorithms' modules read under other names (each
    folder's `AlgorithmEntry.rllib_module_reads`), by RLlib's import path."""
    return {path: read for entry in entries() for path, read in entry.rllib_module_reads.items()}


@functools.cache
def module_classes() -> dict[str, RLlibModuleClass]:
    """How the algorithms' module classes are written as RLlib's (each folder's
    `AlgorithmEntry.rllib_module_classes`), by "module:qualname"."""
    return {name: info for entry in entries() for name, info in entry.rllib_module_classes.items()}


def _module_read(cls: Any) -> ModuleRead | None:
    return module_reads().get(rllib_path(cls) or "")


def module_spec(folder: str) -> Any:
    """This project's module spec for an RLlib module folder (an RLModule's or a
    MultiRLModule's)."""
    cls, _, kwargs = read_ctor_args(folder)
    read = _module_read(cls)
    module_class = our_object(
        placeholder(*read.as_class.rpartition(".")[::2]) if read else cls, folder
    )
    specs = kwargs.get("rl_module_specs")
    if specs is not None:  # a MultiRLModule: its modules' specs are each module's own folder's
        module_ids = [
            module_id for module_id in specs if os.path.isdir(os.path.join(folder, str(module_id)))
        ]
        return MultiRLModuleSpec(
            multi_rl_module_class=module_class,
            rl_module_specs={
                module_id: module_spec(os.path.join(folder, str(module_id)))
                for module_id in module_ids
            },
        )
    model_config = kwargs.get("model_config") or {}
    if rllib_path(model_config) is not None:  # a DefaultModelConfig: its fields
        model_config = dict(
            (model_config.state or {}) if isinstance(model_config, RLlibObject) else {}
        )
    catalog = kwargs.get("catalog_class")
    catalog_path = rllib_path(catalog) or ""
    if (
        catalog_path.startswith(RLLIB_PACKAGE)
        and resolve_rllib_name(*catalog_path.rpartition(".")[::2]) is None
    ):
        catalog = None  # one of RLlib's own catalogs (DQN's, SAC's): the module's default here
    if read is not None:
        model_config = {**model_config, **read.model_config}
        catalog = None  # RLlib's catalog of its own class; the module here builds its own
    return RLModuleSpec(
        module_class=module_class,
        observation_space=_space_of(kwargs.get("observation_space"), folder),
        action_space=_space_of(kwargs.get("action_space"), folder),
        inference_only=bool(kwargs.get("inference_only") or False),
        model_config=dict(model_config),
        catalog_class=None if catalog is None else our_object(catalog, folder),
    )


def _scalar_as_array(value: Any) -> Any:
    """A 0-d parameter RLlib saved as a number (DreamerV3's percentile EMAs, after training)
    as the 0-d float32 array its tensor was; anything else as it is."""
    if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
        return np.asarray(value, dtype=np.float32)
    return value


def module_state(folder: str) -> dict:
    """A module folder's state (numpy arrays by the state-dict names of the module here: RLlib's,
    or as `module_reads()` renames them), without the constants RLlib keeps as buffers
    (`CONSTANT_STATE_SUFFIX`) and what `module_reads()` drops."""
    state = read_state(folder, MODULE_STATE)
    if not isinstance(state, dict):
        raise CheckpointError(folder, f"has no {MODULE_STATE}.pkl or {MODULE_STATE}.msgpack")
    state = {
        k: _scalar_as_array(v)
        for k, v in state.items()
        if not str(k).endswith(CONSTANT_STATE_SUFFIX)
    }
    read = _module_read(read_ctor_args(folder)[0])
    if read is None:
        return state
    renamed = {}
    for key, value in state.items():
        if key.startswith(read.dropped):
            continue
        for old, new in read.renamed.items():
            if key.startswith(old):
                key = new + key[len(old) :]
                break
        renamed[key] = value
    return renamed


#: The prefixes of a module's target networks here (SAC's and its kin's, DQN's).
TARGET_PREFIXES = ("target_", "_target_")


def _with_target_copies(state: dict, own: dict) -> dict:
    """`state` with the target networks the module here holds and RLlib's saved module lacks
    (RLlib's learner makes them, `make_target_networks`; a module saved on its own has none):
    copies of their main networks, as `make_target_networks` makes them."""
    copies = {}
    for key in own:
        if key in state:
            continue
        for prefix in TARGET_PREFIXES:
            main = key[len(prefix) :] if key.startswith(prefix) else None
            if main is not None and main in state:
                copies[key] = state[main]
                break
    return {**state, **copies}


def set_module_state(module: Any, folder: str) -> None:
    """Sets `module` (built from `module_spec(folder)`) to the folder's state; for a
    MultiRLModule each module from its own folder."""
    if isinstance(module, MultiRLModule):
        for module_id in module.keys():
            sub = os.path.join(folder, str(module_id))
            if os.path.isdir(sub):
                set_module_state(module[module_id], sub)
        return
    state = _with_target_copies(module_state(folder), module.get_state())
    own = module.get_state()
    read = _module_read(read_ctor_args(folder)[0])
    kept = read.kept if read is not None else ()
    expected = {key for key in own if not key.startswith(kept)} if kept else set(own)
    if set(state) != expected:
        raise CheckpointError(
            folder,
            f"holds the weights {sorted(set(state) - expected)} this module lacks and lacks "
            f"{sorted(expected - set(state))}: RLlib's module and this project's differ "
            "(model config or module class)",
        )
    module.set_state({**own, **state} if kept else state)


def load_rllib_module(path: str | os.PathLike) -> Any:
    """The module of an RLlib module checkpoint folder, built here and restored."""
    folder = os.path.abspath(os.fspath(path))
    check_version(folder)
    module = module_spec(folder).build()
    set_module_state(module, folder)
    return module


# -- connector pieces -----------------------------------------------------------------------------
def _rllib_array(value: Any) -> np.ndarray:
    """An array RLlib's `RunningStat.to_state` wrote: base64 of zlib of numpy's .npy format
    (read without pickle)."""
    if isinstance(value, np.ndarray):
        return value
    raw = zlib.decompress(base64.b64decode(value))
    return np.load(io.BytesIO(raw), allow_pickle=False)


def mean_std_filter_state(state: Any, where: str) -> dict:
    """This project's `MeanStdFilter` state from RLlib's (`{agent: {"running_stats": [...]}}`,
    one running statistic of a single-agent Box observation)."""
    try:
        [(_, filter_state)] = state.items()
        [stats] = filter_state["running_stats"]
        mean = _rllib_array(stats["mean_array"]).astype(np.float64)
        m2 = _rllib_array(stats["sum_sq_diff_array"]).astype(np.float64)
        count = int(stats["num_pushes"])
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise CheckpointError(
            where,
            f"holds a MeanStdFilter state this project cannot read ({error}): one filter of "
            "a single Box observation is read (a multi-agent or nested one is not)",
        ) from None
    return {"synced": {"n": count, "mean": mean, "m2": m2}}


def env_to_module_pieces(env_runner_folder: str) -> list:
    """The env-to-module pieces an RLlib EnvRunner added to its pipeline (each a subfolder of
    its `env_to_module_connector` folder: RLlib's default pieces have none), built here from
    their constructor arguments, with their state."""
    folder = os.path.join(env_runner_folder, ENV_TO_MODULE)
    if not os.path.isdir(folder):
        return []
    pieces = []
    for name in sorted(os.listdir(folder)):
        sub = os.path.join(folder, name)
        if not os.path.isdir(sub):
            continue
        cls, args, kwargs = read_ctor_args(sub)
        piece_class = our_object(cls, sub)
        if piece_class is not MeanStdFilter:
            raise CheckpointError(
                sub,
                f"is a {rllib_path(cls)} connector piece; of RLlib's pieces with state this "
                "project reads MeanStdFilter's",
            )
        options = {
            k: v
            for k, v in kwargs.items()
            if k in ("de_mean_to_zero", "de_std_to_one", "clip_by_value", "update_stats")
        }
        piece = MeanStdFilter(**options)
        state = read_state(sub, STATE)
        if state:
            piece.set_state(mean_std_filter_state(state, sub))
        pieces.append(piece)
    return pieces


class RestoredPieces:
    """An `env_to_module_connector` factory that gives each EnvRunner copies of the pieces read
    from an RLlib checkpoint (their statistics included); it pickles with them."""

    def __init__(self, pieces: list) -> None:
        self.pieces = pieces

    def __call__(self, env: Any = None, spaces: Any = None, device: Any = None) -> list:
        return copy.deepcopy(self.pieces)


# -- algorithms -----------------------------------------------------------------------------------
#: RLlib's config attributes that hold what this reader restores another way or that have no
#: setting here: the config's class, RLlib's internal flags, the module spec (the module
#: folders are read), the connector factories (their pieces are read), the logger's and the
#: old API stack's objects.
_NOT_SETTINGS = frozenset(
    {
        "class",
        "algo_class",
        "module_to_env_connector",
        "_module_to_env_connector",
        "_rl_module_spec",
        "_is_frozen",
        "_per_module_overrides",
        "logger_creator",
        "logger_config",
        "policy_map_cache",
        "sample_collector",
        "_torch_grad_scaler_class",
        "_torch_lr_scheduler_classes",
        "torch_compile_learner_what_to_compile",
        "policies",
        "policy_mapping_fn",
        "policies_to_train",
        "callbacks_class",
        "_use_msgpack_checkpoints",
        # The old API stack's model dict (the module folders' model configs build modules).
        "model",
        # RLlib's metric classes by reduce name (this project's MetricsLogger has its own).
        "stats_cls_lookup",
        # Applied after the rest (RLlib's train_batch_size would override it).
        "_train_batch_size_per_learner",
    }
)


def _holds_code(value: Any) -> bool:
    """Whether `value` holds a placeholder (code RLlib pickled, not run here)."""
    if isinstance(value, (RLlibObject, type)):
        return rllib_path(value) is not None
    if isinstance(value, dict):
        return any(_holds_code(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_code(v) for v in value)
    return False


def algorithm_config(folder: str, *, pieces_read: bool = False) -> tuple[type, Any, list[str]]:
    """(algorithm class, config, settings left out) from an RLlib Algorithm checkpoint's
    `class_and_ctor_args.pkl`: the settings whose values differ from this project's defaults,
    as plain data (a setting whose value is code, or that this project refuses, is left out
    and named). `pieces_read`: the env-to-module pieces were read from their folders, so the
    factory RLlib pickled is not needed."""
    cls, args, kwargs = read_ctor_args(folder)
    algorithm_class = our_object(cls, folder)
    rllib_config = args[0] if args else kwargs.get("config")
    if not isinstance(rllib_config, dict):
        raise CheckpointError(
            folder, "holds no config state (RLlib's AlgorithmConfig.get_state()) to build from"
        )
    config = algorithm_class.get_default_config()
    defaults = config.to_dict()
    known = set(defaults) | set(config._rllib_method_of())
    left_out: list[str] = []
    for key, value in rllib_config.items():
        name = key[1:] if key.startswith("_") and key[1:] in known else key
        if key in _NOT_SETTINGS or name not in known:
            continue
        if name == "model_config":
            continue  # the module folders' own model configs build the modules
        if name == "env_to_module_connector" and pieces_read:
            continue
        if _holds_code(value):
            left_out.append(f"{key} (code RLlib pickled: {value!r})")
            continue
        try:
            if name in defaults and _same(defaults[name], value):
                continue
            config.update_from_dict({name: value})
        except Exception as error:  # noqa: BLE001 - named in the warning, the rest applies
            left_out.append(f"{key}={value!r} ({type(error).__name__}: {error})")
    per_learner = rllib_config.get("_train_batch_size_per_learner")
    if isinstance(per_learner, int):
        config.training(train_batch_size_per_learner=per_learner)
    model_config = rllib_config.get("_model_config")
    if isinstance(model_config, dict) and model_config and not _holds_code(model_config):
        config.rl_module(model_config=model_config)
    return algorithm_class, config, left_out


def _same(ours: Any, theirs: Any) -> bool:
    try:
        return bool(ours == theirs)
    except (ValueError, TypeError):
        return False


def load_rllib_algorithm(
    path: str | os.PathLike,
    config: Any = None,
    *,
    adjust: Callable[[Any], None] | None = None,
) -> Any:
    """An algorithm built here from an RLlib 2.60 Algorithm checkpoint: its config (see
    `algorithm_config`; or `config`), its modules' weights, its MeanStdFilter statistics and its
    iteration and env-step counters. `adjust(config)` changes the config before the build
    (the command line's evaluation runs without EnvRunner processes)."""
    folder = os.path.abspath(os.fspath(path))
    check_version(folder)
    pieces = env_to_module_pieces(os.path.join(folder, ENV_RUNNER))
    if config is None:
        _, config, left_out = algorithm_config(folder, pieces_read=bool(pieces))
        if left_out:
            warnings.warn(
                f"RLlib checkpoint {folder}: settings not restored here: " + "; ".join(left_out),
                stacklevel=3,
            )
    if pieces:
        config.env_runners(env_to_module_connector=RestoredPieces(pieces))
    if adjust is not None:
        adjust(config)
    modules_folder = os.path.join(folder, *LEARNER_MODULES)
    if not os.path.isdir(modules_folder):
        raise CheckpointError(folder, f"has no {'/'.join(LEARNER_MODULES)} folder")
    spec = module_spec(modules_folder)
    states = {
        module_id: module_state(os.path.join(modules_folder, str(module_id)))
        for module_id in spec.rl_module_specs
    }
    if not config.is_multi_agent and set(states) != {DEFAULT_MODULE_ID}:
        raise CheckpointError(
            modules_folder,
            f"holds the modules {sorted(states)}; a single-agent config trains "
            f"{DEFAULT_MODULE_ID!r}",
        )
    algorithm = config.build_algo() if hasattr(config, "build_algo") else config.build()
    try:
        weights = states if config.is_multi_agent else states[DEFAULT_MODULE_ID]
        algorithm.set_weights(weights)
        algorithm_state = read_state(folder, ALGORITHM_STATE) or {}
        env_runner_state = read_state(os.path.join(folder, ENV_RUNNER), STATE) or {}
        _set_counters(algorithm, algorithm_state, env_runner_state)
        learner_state = read_state(os.path.join(folder, *LEARNER_MODULES[:2]), STATE) or {}
        problem = set_optimizer_state(
            algorithm, learner_state.get("optimizer"), list(states.get(DEFAULT_MODULE_ID, {}))
        )
        if problem:
            warnings.warn(
                f"RLlib checkpoint {folder}: the optimizer's moments start afresh: {problem}",
                stacklevel=2,
            )
    except BaseException:
        algorithm.stop()
        raise
    return algorithm


#: The name of RLlib's optimizer of a single-agent run in its learner state (`<module id>_<name>`).
RLLIB_DEFAULT_OPTIMIZER = f"{DEFAULT_MODULE_ID}_default_optimizer"
#: This project's torch learner's name of it.
DEFAULT_OPTIMIZER = "default_optimizer"


def set_optimizer_state(
    algorithm: Any, rllib_optimizers: Any, rllib_names: list[str]
) -> str | None:
    """Sets the learner's Adam moments from RLlib's optimizer state, for a single-agent torch
    learner; returns what kept it from doing so, or None once set. RLlib's is torch's state
    dict, by parameter index in the order of its module's `parameters()`: `rllib_names`, the
    module state's keys in RLlib's order (its state dict's, the constant buffers left out)."""
    if not isinstance(rllib_optimizers, dict) or not rllib_optimizers:
        return "the checkpoint holds no optimizer state"
    if set(rllib_optimizers) != {RLLIB_DEFAULT_OPTIMIZER}:
        return f"its optimizers {sorted(rllib_optimizers)} are read for one module's default one"
    module = algorithm.learner_module()
    if not hasattr(module, "named_parameters"):
        return "the module here is not a torch module"
    state = algorithm.learner.get_state()
    ours = (state.get("optimizer") or {}).get(DEFAULT_OPTIMIZER)
    try:
        per_index = rllib_optimizers[RLLIB_DEFAULT_OPTIMIZER]["state"]["state"]
    except (KeyError, TypeError):
        return "RLlib's optimizer state is not torch's state dict"
    names = rllib_names
    if not isinstance(ours, dict) or len(per_index) != len(names):
        return f"{len(per_index)} parameters' moments for {len(names)} parameters"
    shapes = {name: tuple(value.shape) for name, value in module.named_parameters()}
    if set(names) != set(shapes):
        return "RLlib's parameters and this module's differ in name"
    param_state = {}
    for index, name in enumerate(names):
        entry = per_index.get(index)
        if not isinstance(entry, dict) or {"exp_avg", "exp_avg_sq", "step"} - set(entry):
            return f"parameter {index} ({name}) has no Adam moments"
        if np.shape(entry["exp_avg"]) != shapes[name]:
            return (
                f"parameter {index} has the shape {np.shape(entry['exp_avg'])}, {name} "
                f"{shapes[name]} here"
            )
        param_state[name] = {
            "step": float(entry["step"]),
            "exp_avg": np.asarray(entry["exp_avg"], np.float32),
            "exp_avg_sq": np.asarray(entry["exp_avg_sq"], np.float32),
        }
    state["optimizer"][DEFAULT_OPTIMIZER] = {**ours, "param_state": param_state}
    algorithm.learner.set_state(state)
    return None


def _set_counters(algorithm: Any, algorithm_state: dict, env_runner_state: dict) -> None:
    """The iteration and env-step counters RLlib saved."""
    iteration = algorithm_state.get("training_iteration")
    if isinstance(iteration, int):
        algorithm.iteration = iteration
    steps = env_runner_state.get("num_env_steps_sampled_lifetime")
    if isinstance(steps, int) and steps > 0:
        algorithm.metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum")


# -- what a checkpoint holds ----------------------------------------------------------------------
def describe(path: str | os.PathLike) -> dict:
    """What an RLlib checkpoint folder holds, as plain data: RLlib's version and layout, and
    each component folder's class (RLlib's name), state file and, for a module, its spaces,
    model config and parameters (name -> shape); for an Algorithm its env and iteration."""
    folder = os.path.abspath(os.fspath(path))
    check_version(folder)
    info: dict[str, Any] = {"path": folder, "written_by": "RLlib"}
    for name in (RLLIB_CHECKPOINT_FILE, METADATA_FILE):
        meta = os.path.join(folder, name)
        if os.path.isfile(meta):
            with open(meta, encoding="utf-8") as file:
                metadata = json.load(file)
            info["ray_version"] = metadata.get("ray_version")
            info["checkpoint_version"] = metadata.get("checkpoint_version")
            break
    components = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        if CLASS_AND_CTOR_ARGS_FILE not in files:
            continue
        cls, args, kwargs = read_ctor_args(root)
        entry: dict[str, Any] = {
            "component": os.path.relpath(root, folder),
            "class": rllib_path(cls) or repr(cls),
            "state_file": next(
                (
                    f
                    for f in sorted(files)
                    if f.split(".")[0] in (STATE, MODULE_STATE, ALGORITHM_STATE)
                ),
                None,
            ),
        }
        if "observation_space" in kwargs and "rl_module_specs" not in kwargs:
            entry["observation_space"] = repr(kwargs.get("observation_space"))
            entry["action_space"] = repr(kwargs.get("action_space"))
            entry["model_config"] = repr(kwargs.get("model_config"))
            state = read_state(root, MODULE_STATE) or {}
            entry["parameters"] = {key: list(np.shape(value)) for key, value in state.items()}
        if root == folder and args and isinstance(args[0], dict):
            entry["env"] = repr(args[0].get("env"))
            entry["framework"] = args[0].get("framework_str")
            algorithm_state = read_state(folder, ALGORITHM_STATE) or {}
            entry["training_iteration"] = algorithm_state.get("training_iteration")
        components.append(entry)
    info["components"] = components
    return info


def describe_lines(info: dict) -> list[str]:
    """`describe`'s data as the command line prints it."""
    lines = [
        f"{info['path']}: written by RLlib {info.get('ray_version')} (layout "
        f"{info.get('checkpoint_version')}); read here without running its pickles"
    ]
    for entry in info["components"]:
        where = "." if entry["component"] == "." else entry["component"]
        lines.append(f"  {where}: {entry['class']}  [{entry['state_file'] or 'no state file'}]")
        if "env" in entry:
            lines.append(
                f"      env {entry['env']}, framework {entry['framework']}, "
                f"iteration {entry['training_iteration']}"
            )
        if "parameters" in entry:
            lines.append(
                f"      {entry['observation_space']} -> {entry['action_space']}, "
                f"model_config {entry['model_config']}"
            )
            for key, shape in entry["parameters"].items():
                lines.append(f"      {key} {tuple(shape)}")
    return lines


# -- writing module checkpoints RLlib loads -------------------------------------------------------
class _RLlibGlobal:
    """A reference to one of RLlib's classes by its import path, pickled as that global
    (RLlib imports it when it reads the file); Ray is not needed to write it."""

    def __init__(self, path: str) -> None:
        self.module, _, self.name = path.rpartition(".")


#: The standard library's pickler written in Python (its `save` can be extended per object).
_PythonPickler: Any = pickle._Pickler


class _RLlibPickler(_PythonPickler):
    """The standard pickler, writing `_RLlibGlobal`s as globals without importing them."""

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if isinstance(obj, _RLlibGlobal):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            self.memoize(obj)
            return
        super().save(obj, save_persistent_id)


def _class_name(module: Any) -> str:
    return f"{type(module).__module__}:{type(module).__qualname__}"


def _rllib_model_config(module: Any, info: RLlibModuleClass) -> dict:
    """The model config RLlib's module is built from: of RLlib's `DefaultModelConfig` keys those
    whose values differ from its defaults (`MODEL_DEFAULTS` mirrors them) and
    `vf_share_layers` always (RLlib's PPO config passes it); every other key the module holds
    (what RLlib's algorithm config adds), over RLlib's defaults of those (`auto_includes`)."""
    given = dict(getattr(module, "model_config", None) or {})
    written = dict(info.auto_includes)
    for key, value in given.items():
        if key not in MODEL_DEFAULTS or not _same(MODEL_DEFAULTS[key], value):
            written[key] = value
    if "vf_share_layers" in given:
        written["vf_share_layers"] = bool(given["vf_share_layers"])
    return written


def _resolve(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def save_rllib_module(module: Any, path: str | os.PathLike) -> str:
    """Writes `module` as RLlib 2.60 writes a module checkpoint: `metadata.json`,
    `class_and_ctor_args.pkl` naming RLlib's class and catalog, and `module_state.pkl` (numpy
    arrays by the state-dict names RLlib's module has), so that RLlib's
    `RLModule.from_checkpoint(path)` builds its own module with these weights. The module's
    class must be one an algorithm folder declares (`AlgorithmEntry.rllib_module_classes`: the
    default torch modules RLlib has, and the numpy modules of the same networks, written as
    their torch twins); a subclass is not (RLlib would build its base)."""
    folder = os.path.abspath(os.fspath(path))
    if isinstance(module, MultiRLModule):
        raise CheckpointError(
            folder, "is for one module: write each module of the MultiRLModule on its own"
        )
    info = module_classes().get(_class_name(module))
    if info is not None and info.torch_twin:
        try:
            module = _resolve(info.torch_twin)(module)
        except ImportError:
            raise CheckpointError(
                folder, "RLlib's modules are torch modules: writing one needs torch"
            ) from None
        info = module_classes().get(_class_name(module))
    if info is None or not info.rllib_class:
        raise CheckpointError(
            folder,
            f"cannot hold a {type(module).__qualname__} for RLlib: RLlib 2.60 builds the "
            "default modules of its algorithms (those of this project's that RLlib has, numpy "
            "or torch: " + ", ".join(sorted(n.partition(":")[2] for n in module_classes())) + ")",
        )
    state = {key: value.detach().cpu().numpy() for key, value in module.state_dict().items()}
    for key, value in info.constant_buffers.items():
        state.setdefault(key, np.array([value], np.float32))
    kwargs = {
        "observation_space": module.observation_space,
        "action_space": module.action_space,
        "inference_only": bool(getattr(module, "inference_only", False)),
        "learner_only": False,
        "model_config": _rllib_model_config(module, info),
        "catalog_class": None if info.catalog is None else _RLlibGlobal(info.catalog),
    }
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, CLASS_AND_CTOR_ARGS_FILE), "wb") as file:
        _RLlibPickler(file, protocol=4).dump(
            {"class": _RLlibGlobal(info.rllib_class), "ctor_args_and_kwargs": ((), kwargs)}
        )
    with open(os.path.join(folder, MODULE_STATE + ".pkl"), "wb") as file:
        pickle.dump(state, file, protocol=4)
    metadata = {
        "class_and_ctor_args_file": CLASS_AND_CTOR_ARGS_FILE,
        "state_file": MODULE_STATE,
        "ray_version": RLLIB_VERSION,
        "checkpoint_version": "2.1",
    }
    with open(os.path.join(folder, METADATA_FILE), "w", encoding="utf-8") as file:
        json.dump(metadata, file)
    return folder


__all__ = [
    "RLLIB_CHECKPOINT_FILE",
    "SafeUnpickler",
    "is_rllib_checkpoint",
    "load_rllib_algorithm",
    "load_rllib_module",
    "module_spec",
    "read_state",
    "save_rllib_module",
]
