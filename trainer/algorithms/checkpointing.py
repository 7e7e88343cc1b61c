"""An `Algorithm` as a checkpoint directory (the format is `checkpoints`), and back.

Saving: `Algorithm.get_state()` gives one state per component; each becomes a msgpack file; the
class and config become `config.json` (plain data, code by import path: `trainer.checkpoints.config_data`)
and one cloudpickle file; `metadata.json` records what a loader must check before touching the
running algorithm: the algorithm, the spaces and the network's parameter shapes, and the HMAC of
the pickled config made with this user's key (`trainer.checkpoints.signing`). Loading verifies
every file first (`open_algorithm_checkpoint`), then reads msgpack and JSON; `class_and_config.pkl`
is unpickled when its signature verifies (a checkpoint this user saved or trusted with `python
-m trainer trust PATH`, as RLlib loads its own) or on the explicit opt-in `allow_pickle=True`
(`--trust-pickle` on the command line), never otherwise.

The learner's modules are also written as RLlib lays them out, real module checkpoints inside
the algorithm's (`trainer.core.module_checkpoint`): `learner_group/learner/rl_module/` is a
MultiRLModule checkpoint and `learner_group/learner/rl_module/<module_id>/` each module's, so
RLlib's ways of restoring one module of N work on an Algorithm checkpoint:
`algo.restore_from_path(<that dir>, component="learner_group/learner/rl_module/p0")`,
`RLModuleSpec(load_state_path=<that dir>)`, `MultiRLModuleSpec(load_state_path=<checkpoint>/
learner_group/learner/rl_module, modules_to_load={"p0"})` and `RLModule.from_checkpoint`. They
are written into the same temporary directory as the rest, so the save stays one atomic step.
The weights are stored there only (learner.msgpack keeps the optimizer state): metadata.json
records the SHA-256 of each module checkpoint's metadata.json, which checksums that module's
files, and a restore reads the weights back after checking it. A checkpoint written before the
module directories existed holds the weights in learner.msgpack and loads as before.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import tempfile
import time
import warnings
from typing import Any, Protocol, TypeVar

import cloudpickle

from trainer.checkpoints import (
    CLASS_AND_CONFIG_FILE,
    CONFIG_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    STATE_FILE_SUFFIX,
    Checkpoint,
    CheckpointError,
    open_checkpoint,
    write_checkpoint,
)
from trainer.checkpoints.codec import NotPlainData, pack
from trainer.checkpoints.config_data import (
    ConfigDataError,
    config_from_data,
    config_to_data,
    resolve_import_path,
)
from trainer.checkpoints.format import METADATA_FILE, library_version
from trainer.checkpoints.location import local_path, staged_for_upload
from trainer.checkpoints.reader import MAX_METADATA_BYTES, read_confined
from trainer.checkpoints.signing import (
    SIGNATURE_KEY,
    KeyFileError,
    SignatureCheck,
    check_signature,
    sign,
)
from trainer.checkpoints.writer import file_digest
from trainer.connectors.checkpoint import (
    CONNECTOR_CHECKPOINTS_KEY,
    verify_connector_checkpoints,
    write_connector_checkpoints,
)
from trainer.core.models import (
    DEFAULT_MODULE_ID,
    FlatParameterModule,
    SpaceInfo,
    StateConversionError,
)
from trainer.core.module_checkpoint import (
    MULTI_RL_MODULE_KIND,
    RL_MODULE_KIND,
    _constructor,
    save_module,
)
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.rl_module import RLModuleAPI, RLModuleSpec, validate_module_id
from trainer.core.spaces import space_to_dict
from trainer.util.state_checks import StateError


class SavedAlgorithm(Protocol):
    """What the functions here read of the Algorithm they save and load (the algorithm module
    imports this one, so it is not named here): its config and learner (whose modules are
    saved, checked and loaded), its counters and its state."""

    @property
    def config(self) -> Any: ...

    @property
    def learner(self) -> Any: ...

    @property
    def iteration(self) -> int: ...

    @property
    def num_env_steps_sampled_lifetime(self) -> int: ...

    def get_state(self) -> dict: ...

    def check_state(self, state: dict) -> None: ...


#: The algorithm `load_class_and_config`'s caller names as the base of the class it loads.
_Algorithm = TypeVar("_Algorithm")


def runner_states(state: dict, prefix: str) -> dict[int, dict]:
    """{worker index: state} of an Algorithm state's components named `<prefix><index>`
    (`env_runner_1`, `eval_env_runner_2`, ...)."""
    return {
        int(key[len(prefix) :]): value
        for key, value in state.items()
        if key.startswith(prefix) and key[len(prefix) :].isdigit()
    }


logger = logging.getLogger("trainer")

#: What every algorithm checkpoint has; runner, evaluation and replay states are optional.
REQUIRED_COMPONENTS = ("algorithm", "learner", "metrics")


def algorithm_family(cls: type) -> str:
    """The built-in algorithm a class is (a user's subclass of PPO is a PPO)."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("trainer.algorithms."):
            return klass.__name__
    return cls.__name__


def describe_spaces(spaces: Any) -> dict:
    """What the networks were built for, as JSON data."""
    return {
        "obs_dim": spaces.obs_dim,
        "obs_discrete_n": spaces.obs_discrete_n,
        "action_discrete_n": spaces.action_discrete_n,
        "action_dim": spaces.action_dim,
        "action_low": None if spaces.action_low is None else spaces.action_low.tolist(),
        "action_high": None if spaces.action_high is None else spaces.action_high.tolist(),
        **(
            {"action_space": space_to_dict(spaces.composite_action_space)}
            if getattr(spaces, "composite_action_space", None) is not None
            else {}
        ),
    }


def parameter_shapes(module: Any) -> dict[str, list[int]]:
    return {
        name: list(param.shape)
        for name, param in zip(module.parameter_names(), module.parameters(), strict=True)
    }


def describe_learner_modules(module: Any) -> tuple[dict, dict[str, list[int]]]:
    """(spaces, parameter shapes) of the learner's module as JSON data; of a multi-agent
    algorithm's modules (`ModulesView`), spaces by module id and shapes as
    "module_id/parameter"."""
    if hasattr(module, "spaces"):
        return describe_spaces(module.spaces), parameter_shapes(module)
    spaces, shapes = {}, {}
    for module_id, sub in module.items():
        if hasattr(sub, "spaces"):
            spaces[str(module_id)] = describe_spaces(sub.spaces)
            sub_shapes = parameter_shapes(sub)
        else:  # a TorchRLModule of a learner that trains a whole MultiRLModule
            sub_spaces = SpaceInfo.from_spaces(
                sub.observation_space, sub.action_space, nested_obs=True
            )
            spaces[str(module_id)] = describe_spaces(sub_spaces)
            sub_shapes = {name: list(param.shape) for name, param in sub.named_parameters()}
        shapes.update({f"{module_id}/{name}": shape for name, shape in sub_shapes.items()})
    return spaces, shapes


def default_checkpoint_path(algorithm: SavedAlgorithm) -> str:
    """A new directory in the system's temporary folder (RLlib's behaviour for path=None)."""
    return tempfile.mkdtemp(prefix=f"localrl_{type(algorithm).__name__}_checkpoint_")


def save_algorithm(
    algorithm: SavedAlgorithm,
    path: str | os.PathLike | None,
    *,
    state: dict | None = None,
    filesystem: Any = None,
) -> str:
    """Writes `algorithm`'s checkpoint (of `state`, default its current state) at `path`: a
    local path or `file://` URI, or with `filesystem` a path on that pyarrow filesystem
    (written locally first, then copied there; see `trainer.checkpoints.location`)."""
    if filesystem is not None and path is not None:
        with staged_for_upload(path, filesystem) as local:
            _save_locally(algorithm, local, state)
        return os.fspath(path)
    path = local_path(path) if path is not None else default_checkpoint_path(algorithm)
    return _save_locally(algorithm, path, state)


#: RLlib's component path of the learner's modules inside an Algorithm checkpoint
#: (COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE).
MODULES_COMPONENT = "learner_group/learner/rl_module"
#: The metadata.json entry naming the module checkpoints and their metadata's SHA-256.
MODULE_CHECKPOINTS_KEY = "module_checkpoints"
#: In that entry: the SHA-256 of the MultiRLModule checkpoint's own metadata.json.
MULTI_DIGEST_KEY = "multi_rl_module_metadata_sha256"


def _trains_modules_jointly(algorithm: SavedAlgorithm) -> bool:
    """Whether the algorithm's one learner trains a whole MultiRLModule (its state's "module"
    is every module's weights by "<module_id>.<key>"), not one learner per module."""
    return bool(getattr(algorithm.learner, "is_multi_module", False))


def learner_module_weights(algorithm: SavedAlgorithm, learner_state: dict) -> dict[str, Any]:
    """{module_id: weights} of the learner's modules in a learner state (single-agent: the one
    module under "default_policy")."""
    if _trains_modules_jointly(algorithm):
        joint = learner_state["module"]
        return {
            module_id: {
                key[len(str(module_id)) + 1 :]: value
                for key, value in joint.items()
                if key.startswith(f"{module_id}.")
            }
            for module_id in algorithm.learner.module.keys()
        }
    if algorithm.config.is_multi_agent:
        return {module_id: sub["module"] for module_id, sub in learner_state.items()}
    return {DEFAULT_MODULE_ID: learner_state["module"]}


def _with_module_weights(algorithm: SavedAlgorithm, learner_state: dict, weights: dict) -> None:
    """Puts the module checkpoints' `weights` ({module_id: weights}) back into a learner state
    read without them (see `learner_module_weights`)."""
    if _trains_modules_jointly(algorithm):
        learner_state["module"] = {
            f"{module_id}.{key}": value
            for module_id, module_weights in weights.items()
            if isinstance(module_weights, dict)
            for key, value in module_weights.items()
        }
        return
    for module_id, module_weights in weights.items():
        target = learner_state.get(module_id) if algorithm.config.is_multi_agent else learner_state
        if isinstance(target, dict):
            target["module"] = module_weights


def learner_modules_as_multi_rl_module(algorithm: SavedAlgorithm) -> Any:
    """The learner's modules in one `MultiRLModule` (the very module objects; nothing is
    copied), as RLlib's learner holds them: a learner that trains a whole MultiRLModule holds
    it already (its own class, which a module checkpoint names)."""
    if _trains_modules_jointly(algorithm):
        return algorithm.learner.module
    multi = MultiRLModule()
    module = algorithm.learner.module
    items = module.items() if hasattr(module, "items") else [(DEFAULT_MODULE_ID, module)]
    for module_id, sub in items:
        multi.add_module(module_id, getattr(sub, "rl_module", sub))  # a torch module's view
    return multi


def _without_module_weights(algorithm: SavedAlgorithm, learner_state: dict) -> dict:
    """The learner state less the modules' weights (those are in the module checkpoints)."""
    if algorithm.config.is_multi_agent and not _trains_modules_jointly(algorithm):
        return {
            module_id: {key: value for key, value in sub.items() if key != "module"}
            for module_id, sub in learner_state.items()
        }
    return {key: value for key, value in learner_state.items() if key != "module"}


def _module_writer(algorithm: SavedAlgorithm, state: dict, metadata: dict) -> Any:
    """Writes `learner_group/learner/rl_module` (see the module docstring) into a checkpoint's
    temporary directory, and records in `metadata` (before it is written) the SHA-256 of each
    module checkpoint's metadata.json, which checksums that module's files: the algorithm's
    metadata.json thus covers them too. None when `state` has no learner component."""
    if "learner" not in state:
        return None
    weights = learner_module_weights(algorithm, state["learner"])

    def write(directory: str) -> None:
        connectors = write_connector_checkpoints(directory, algorithm)
        if connectors is not None:
            metadata[CONNECTOR_CHECKPOINTS_KEY] = connectors
        modules_dir = os.path.join(directory, *MODULES_COMPONENT.split("/"))
        save_module(learner_modules_as_multi_rl_module(algorithm), modules_dir, state=weights)
        metadata[MODULE_CHECKPOINTS_KEY] = {
            "path": MODULES_COMPONENT,
            MULTI_DIGEST_KEY: _digest_of(os.path.join(modules_dir, METADATA_FILE)),
            "metadata_sha256": {
                str(module_id): _digest_of(os.path.join(modules_dir, str(module_id), METADATA_FILE))
                for module_id in weights
            },
        }

    return write


def _digest_of(file_path: str) -> str:
    with open(file_path, "rb") as handle:
        return file_digest(handle.read())


def _save_locally(algorithm: SavedAlgorithm, path: str, state: dict | None) -> str:
    if state is None:
        state = algorithm.get_state()
    else:
        try:
            algorithm.check_state(state)
        except Exception as error:
            raise CheckpointError(path, f"state= does not fit this algorithm: {error}") from None
    files = {}
    metadata: dict[str, Any] = {}
    write_modules = _module_writer(algorithm, state, metadata)
    for component, component_state in state.items():
        if component == "learner" and write_modules is not None:
            # The weights are stored once, in the module checkpoints.
            component_state = _without_module_weights(algorithm, component_state)
        try:
            files[component + STATE_FILE_SUFFIX] = pack(component_state)
        except NotPlainData as error:
            raise CheckpointError(
                path,
                f"the state of {component!r} cannot be stored: "
                f"{error.where.replace('state', component, 1)}: "
                f"{error.problem}",
            ) from None
        uncaptured = (
            (component_state.get("sampling") or {}).get("uncaptured")
            if isinstance(component_state, dict)
            else None
        )
        for env_index, reason in (uncaptured or {}).items():
            logger.warning(
                "checkpoint %s: %s, sub-env %s: its state cannot be captured (%s); "
                "its episode will restart on restore",
                path,
                component,
                env_index,
                reason,
            )
    config_data = config_to_data(algorithm.config, type(algorithm))
    files[CONFIG_FILE] = json.dumps(config_data, indent=1).encode()
    files[CLASS_AND_CONFIG_FILE] = cloudpickle.dumps((type(algorithm), algorithm.config))
    try:
        metadata[SIGNATURE_KEY] = sign(files[CLASS_AND_CONFIG_FILE])
    except KeyFileError as error:
        # A save is not refused for the key: it is written unsigned, and loading its pickled
        # config then needs `python -m trainer trust PATH` or allow_pickle=True.
        logger.warning("checkpoint %s: its config is not signed: %s", path, error)
    spaces, shapes = describe_learner_modules(algorithm.learner.module)
    metadata |= {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "algorithm_class": type(algorithm).__name__,
        "algorithm": algorithm_family(type(algorithm)),
        "training_iteration": (state.get("algorithm") or {}).get("iteration", algorithm.iteration),
        "num_env_steps_sampled_lifetime": algorithm.num_env_steps_sampled_lifetime,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "env": algorithm.config.env
        if isinstance(algorithm.config.env, str)
        else repr(algorithm.config.env),
        "spaces": spaces,
        "parameter_shapes": shapes,
    }
    started = time.perf_counter()
    written = write_checkpoint(path, files, metadata, write_subdirectories=write_modules)
    logger.info(
        "saved checkpoint %s (iteration %d, %.1f KB, %.0f ms)",
        written,
        algorithm.iteration,
        sum(len(data) for data in files.values()) / 1024,
        (time.perf_counter() - started) * 1000,
    )
    return written


def check_compatible(algorithm: SavedAlgorithm, checkpoint: Checkpoint) -> None:
    """Raises `CheckpointError` unless the checkpoint is of this algorithm, its spaces and its
    network shapes."""
    meta = checkpoint.metadata
    family = algorithm_family(type(algorithm))
    if meta.get("algorithm") != family:
        saved_class = meta.get("algorithm_class")
        of = (
            meta.get("algorithm")
            if saved_class in (None, meta.get("algorithm"))
            else (f"{meta.get('algorithm')} (class {saved_class})")
        )
        raise CheckpointError(
            checkpoint.path,
            f"a checkpoint of {of} cannot be loaded into "
            f"{type(algorithm).__name__} (a {family}): "
            f"metadata.json says algorithm={meta.get('algorithm')!r}",
        )
    spaces, current = describe_learner_modules(algorithm.learner.module)
    if meta.get("spaces") != spaces:
        raise CheckpointError(
            checkpoint.path,
            f"incompatible spaces: the checkpoint was made for "
            f"{meta.get('spaces')}, this algorithm's env has "
            f"{spaces}",
        )
    saved = meta.get("parameter_shapes") or {}
    if not isinstance(saved, dict):
        raise CheckpointError(
            checkpoint.path,
            f"metadata.json is damaged: parameter_shapes is a {type(saved).__name__}, not a map",
        )
    if saved != current:
        differences = [
            f"{name}: checkpoint {saved.get(name)}, here {current.get(name)}"
            for name in sorted(set(saved) | set(current))
            if saved.get(name) != current.get(name)
        ]
        raise CheckpointError(
            checkpoint.path,
            "incompatible network shapes (check model_config): " + "; ".join(differences[:4]),
        )


def open_algorithm_checkpoint(path: str) -> Checkpoint:
    """The Algorithm checkpoint at `path`, verified whole before anything is loaded: its
    metadata.json (sealed), every file it lists, and each module checkpoint it records (whose
    metadata.json must have the recorded SHA-256 and whose files are checked against it): their
    weights are read now, into `checkpoint.module_weights`; and the connector pipelines'
    directories it records (`trainer.connectors.checkpoint`)."""
    checkpoint = open_checkpoint(path)
    modules = checkpoint.metadata.get(MODULE_CHECKPOINTS_KEY)
    if modules is not None:
        checkpoint.module_weights = _read_module_weights(checkpoint, modules)
    verify_connector_checkpoints(
        checkpoint.path, checkpoint.metadata.get(CONNECTOR_CHECKPOINTS_KEY)
    )
    return checkpoint


def load_algorithm_state(algorithm: SavedAlgorithm, checkpoint: Checkpoint) -> dict:
    """Every component's state from a verified checkpoint, after the compatibility checks."""
    check_compatible(algorithm, checkpoint)
    for component in REQUIRED_COMPONENTS:
        if not checkpoint.has(component):
            raise CheckpointError(
                checkpoint.path,
                f"has no {component}{STATE_FILE_SUFFIX} (components: {checkpoint.components})",
            )
    state = {component: checkpoint.load(component) for component in checkpoint.components}
    weights = checkpoint.module_weights
    if weights is None and checkpoint.metadata.get(MODULE_CHECKPOINTS_KEY) is not None:
        weights = _read_module_weights(checkpoint, checkpoint.metadata[MODULE_CHECKPOINTS_KEY])
    if weights is not None and isinstance(state["learner"], dict):  # else the learner's check
        _with_module_weights(algorithm, state["learner"], weights)
    return state


def _check_digest(checkpoint: Checkpoint, directory: str, digest: str, what: str) -> None:
    if file_digest(read_confined(directory, METADATA_FILE, MAX_METADATA_BYTES)) != digest:
        raise CheckpointError(
            checkpoint.path,
            f"{what} was altered: its {METADATA_FILE} "
            f"({os.path.relpath(os.path.join(directory, METADATA_FILE), checkpoint.path)}) "
            "does not match the SHA-256 the checkpoint's metadata.json recorded",
        )


def _read_module_weights(checkpoint: Checkpoint, modules: Any) -> dict[str, Any]:
    """{module_id: weights} of each module checkpoint the metadata names, each checked against
    the SHA-256 of its metadata.json recorded in the checkpoint's (and, when recorded, the
    MultiRLModule checkpoint's metadata.json too)."""
    digests = modules.get("metadata_sha256") if isinstance(modules, dict) else None
    multi_digest = modules.get(MULTI_DIGEST_KEY) if isinstance(modules, dict) else None
    if (
        not isinstance(modules, dict)
        or modules.get("path") != MODULES_COMPONENT
        or not isinstance(digests, dict)
        or not all(isinstance(v, str) for v in digests.values())
        or not (multi_digest is None or isinstance(multi_digest, str))
    ):
        raise CheckpointError(
            checkpoint.path, f"metadata.json has no valid {MODULE_CHECKPOINTS_KEY!r} entry"
        )
    root = os.path.realpath(checkpoint.path)
    modules_dir = os.path.join(checkpoint.path, *MODULES_COMPONENT.split("/"))
    if os.path.commonpath([root, os.path.realpath(modules_dir)]) != root:
        raise CheckpointError(checkpoint.path, f"{MODULES_COMPONENT} leads outside the checkpoint")
    if multi_digest is not None:
        _check_digest(checkpoint, modules_dir, multi_digest, "the MultiRLModule checkpoint")
        _module_checkpoint(modules_dir)
    weights = {}
    for module_id, digest in digests.items():
        try:
            validate_module_id(module_id, error=True)
        except ValueError as error:
            raise CheckpointError(checkpoint.path, str(error)) from None
        module_path = os.path.join(modules_dir, module_id)
        if os.path.commonpath([root, os.path.realpath(module_path)]) != root:
            raise CheckpointError(
                checkpoint.path, f"module checkpoint {module_id!r} leads outside the checkpoint"
            )
        _check_digest(checkpoint, module_path, digest, f"module checkpoint {module_id!r}")
        weights[module_id] = _module_checkpoint(module_path).load(RLModuleAPI.STATE_FILE_NAME)
    return weights


#: How a user trusts a checkpoint's pickled config (named in refusals).
TRUST_HINT = (
    "if you trust this checkpoint, run `python -m trainer trust {path}` (re-signs its pickled "
    "config with your key) or pass allow_pickle=True (--trust-pickle on the command line)"
)


def pickle_signature(checkpoint: Checkpoint) -> SignatureCheck:
    """Whether the checkpoint's pickled config is signed with this user's key (a key file that
    cannot be used is a reason it is not)."""
    if CLASS_AND_CONFIG_FILE not in checkpoint.files:
        return SignatureCheck(False, f"it has no {CLASS_AND_CONFIG_FILE}")
    try:
        return check_signature(
            checkpoint.class_and_config_bytes(), checkpoint.metadata.get(SIGNATURE_KEY)
        )
    except KeyFileError as error:
        return SignatureCheck(False, f"your signing key cannot be used: {error}")


def load_class_and_config(
    checkpoint: Checkpoint,
    *,
    algorithm_base: type[_Algorithm],
    config_base: type,
    allow_pickle: bool = False,
) -> tuple[type[_Algorithm], Any]:
    """The algorithm class and config a checkpoint was saved with. As RLlib does, from the
    pickled `class_and_config.pkl` (it carries lambdas and classes defined in `__main__`) when
    its signature verifies with this user's key (a checkpoint this user saved or trusted), or
    whatever it holds with `allow_pickle` (unpickling a planted file runs its code: only for
    checkpoints you trust). Otherwise from `config.json`: plain data, code re-imported by path,
    refused with how to trust the checkpoint when that cannot rebuild the config, whose classes
    must derive from `algorithm_base` and `config_base` (`Algorithm` and `AlgorithmConfig`: the
    caller names them, as this module sits below the algorithm module that uses it)."""
    if allow_pickle:
        return unpickle_class_and_config(checkpoint)
    signature = pickle_signature(checkpoint)
    unpickling_error = None
    if signature.valid:
        try:
            return unpickle_class_and_config(checkpoint)
        except CheckpointError as error:
            # Its code moved since the save, say: config.json may still rebuild it.
            unpickling_error = error
    hint = TRUST_HINT.format(path=checkpoint.path)
    data = checkpoint.read_json(CONFIG_FILE)
    if data is None:
        if unpickling_error is not None:
            raise unpickling_error
        raise CheckpointError(
            checkpoint.path,
            f"has no {CONFIG_FILE} (it predates stored configs), and its pickled config is "
            f"not unpickled since {signature.reason}: pass config= to from_checkpoint, or, " + hint,
        )
    try:
        return config_from_data(data, config_base=config_base, algorithm_base=algorithm_base)
    except ConfigDataError as error:
        if unpickling_error is not None:
            raise unpickling_error from None
        raise CheckpointError(
            checkpoint.path,
            f"its config cannot be rebuilt without "
            f"unpickling: {error}. Its pickled config ({CLASS_AND_CONFIG_FILE}) is not "
            f"unpickled since {signature.reason}. Pass config= to from_checkpoint, or, " + hint,
        ) from None


def unpickle_class_and_config(checkpoint: Checkpoint) -> tuple[type, Any]:
    data = checkpoint.class_and_config_bytes()
    try:
        algorithm_class, config = cloudpickle.loads(data)
    except Exception as error:  # noqa: BLE001 - whatever the pickle raises is reported
        raise CheckpointError(
            checkpoint.path,
            f"{CLASS_AND_CONFIG_FILE} cannot be unpickled "
            f"({type(error).__name__}: {error}); pass "
            "config= to from_checkpoint",
        ) from None
    if not isinstance(algorithm_class, type):
        raise CheckpointError(
            checkpoint.path,
            f"{CLASS_AND_CONFIG_FILE} does not hold an algorithm class and its config (its "
            f"first item is a {type(algorithm_class).__name__})",
        )
    return algorithm_class, config


def _module_ids_of(checkpoint: Checkpoint) -> list[str]:
    ids = checkpoint.metadata.get("modules")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise CheckpointError(checkpoint.path, "metadata.json has no valid 'modules' list")
    return ids


def _module_checkpoint(path: str) -> Checkpoint:
    """The verified module checkpoint (an RLModule's or a MultiRLModule's) at `path`."""
    checkpoint = open_checkpoint(path)
    kind = checkpoint.metadata.get("kind")
    if kind not in (RL_MODULE_KIND, MULTI_RL_MODULE_KIND):
        raise CheckpointError(
            path,
            f"not a module checkpoint (metadata.json says kind={kind!r}): with component=, "
            f"path is that component's directory, such as <checkpoint>/{MODULES_COMPONENT}/p0",
        )
    return checkpoint


def resolve_component_path(path: str, component: str) -> str:
    """The directory of `component`: `path` itself (RLlib: with `component`, `path` is the
    component's checkpoint), or, when `path` is an Algorithm checkpoint holding it,
    `path/component` (which must stay inside it: a symlink out of the checkpoint is not
    followed)."""
    inner = os.path.join(path, *component.split("/"))
    root = os.path.realpath(path)
    if os.path.isdir(inner) and os.path.commonpath([root, os.path.realpath(inner)]) == root:
        try:
            kind = open_checkpoint(path, components=[]).metadata.get("kind")
        except CheckpointError:
            kind = "unknown"
        if kind is None:  # an Algorithm checkpoint (its metadata has no module kind)
            return inner
    return path


def read_module_states(algorithm: SavedAlgorithm, path: str, component: str) -> dict[Any, dict]:
    """{module_id: weights} that `restore_from_path(path, component=component)` loads: one
    module ("learner_group/learner/rl_module/<module_id>") or every module both the checkpoint
    and the algorithm's learner hold ("learner_group/learner/rl_module"). Each is checked
    against the learner's module; nothing is changed."""
    normalized = component.strip("/")
    if normalized != MODULES_COMPONENT and not normalized.startswith(MODULES_COMPONENT + "/"):
        raise ValueError(
            f"restore_from_path(component={component!r}): an Algorithm restores the learner's "
            f"modules alone: {MODULES_COMPONENT!r} (all of them) or "
            f"'{MODULES_COMPONENT}/<module_id>' (one); restore a whole checkpoint without "
            "component="
        )
    module_id = normalized[len(MODULES_COMPONENT) + 1 :] or None
    if module_id is not None and "/" in module_id:
        raise ValueError(
            f"restore_from_path(component={component!r}): a module's parts do not restore "
            f"alone; name the module, '{MODULES_COMPONENT}/{module_id.split('/')[0]}'"
        )
    if module_id is not None:
        validate_module_id(module_id, error=True)
    path = resolve_component_path(path, normalized)
    checkpoint = _module_checkpoint(path)
    held = learner_modules_as_multi_rl_module(algorithm)
    if module_id is not None:
        if checkpoint.metadata["kind"] == "rl_module":
            paths = {module_id: path}
        elif module_id in (saved := _module_ids_of(checkpoint)):
            # A MultiRLModule's checkpoint holding the module named (what RLlib's scripts
            # give a single-agent spec's load_state_path): that module's directory.
            paths = {module_id: os.path.join(path, module_id)}
        else:
            raise CheckpointError(
                path,
                f"holds a MultiRLModule without module {module_id!r}, which component="
                f"{component!r} names (it holds {sorted(map(str, saved))})",
            )
    else:
        if checkpoint.metadata["kind"] != "multi_rl_module":
            raise CheckpointError(
                path, f"holds one module, but component={component!r} names all of them"
            )
        paths = {
            saved: os.path.join(path, saved)
            for saved in _module_ids_of(checkpoint)
            if saved in held
        }
    states: dict[Any, dict] = {}
    for name, module_path in paths.items():
        if name not in held:
            raise CheckpointError(
                path,
                f"component={component!r}: this algorithm's learners hold no module {name!r} "
                f"(they hold {sorted(map(str, held.keys()))})",
            )
        sub = checkpoint if module_path == path else _module_checkpoint(module_path)
        state_name = RLModuleAPI.STATE_FILE_NAME
        if not sub.has(state_name):
            raise CheckpointError(module_path, f"has no {state_name}{STATE_FILE_SUFFIX}")
        state = _state_for_module(held[name], sub, sub.load(state_name), module_path, name)
        state = _with_weights_kept(held[name], state, module_path, name)
        try:
            held[name].check_weights(state, f"module {name!r}")
        except StateError as error:
            raise CheckpointError(
                module_path, f"does not fit this algorithm's module {name!r}: {error}"
            ) from None
        states[name] = state
    return states


def _with_weights_kept(module: Any, state: Any, path: str, name: Any) -> Any:
    """A torch module's checkpoint that holds part of the module's weights (and nothing it
    lacks: RLlib's BC-then-PPO example loads a policy into a module with a new value branch)
    completed with the module's current values of the others, which it keeps, saying so;
    any other state as it is (checked whole after)."""
    state_dict = getattr(module, "state_dict", None)
    if getattr(module, "framework", None) != "torch" or not callable(state_dict):
        return state
    if not isinstance(state, dict) or not state:
        return state
    own = module.get_state()
    missing = [key for key in own if key not in state]
    if not missing or not set(state) <= set(own):
        return state
    warnings.warn(
        f"module {name!r}: {path} holds {len(state)} of the module's {len(own)} weights; "
        f"{', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''} keep their current "
        "values (a checkpoint of part of the module loads as RLlib loads it)",
        stacklevel=3,
    )
    return {**{key: own[key] for key in missing}, **state}


def _state_for_module(module: Any, checkpoint: Any, state: Any, path: str, name: Any) -> Any:
    """`state` (read from the module checkpoint `checkpoint` at `path`) as `module` takes it:
    a numpy module's state for a torch module as the numpy module class converts it
    (`FlatParameterModule.state_for_torch_module`; refused, naming what differs, when the
    networks differ); any other state as it is."""
    if getattr(module, "framework", None) != "torch" or not isinstance(state, dict):
        return state
    try:
        saved_class = resolve_import_path(str(checkpoint.metadata.get("module_class")))
    except Exception:  # noqa: BLE001 - not the numpy module then; checked as it is
        return state
    if not (isinstance(saved_class, type) and issubclass(saved_class, FlatParameterModule)):
        return state
    model_config = _constructor(checkpoint.metadata, path).get("model_config") or {}
    try:
        return saved_class.state_for_torch_module(
            state, model_config, module, where=f"module {name!r}"
        )
    except StateConversionError as error:
        raise CheckpointError(
            path,
            f"holds the numpy module {saved_class.__qualname__}, which does not convert "
            f"into this algorithm's torch module {name!r}: {error}",
        ) from None


def _learner_module_ids(algorithm: SavedAlgorithm) -> list[Any]:
    module = algorithm.learner.module
    return list(module.keys()) if hasattr(module, "keys") else [DEFAULT_MODULE_ID]


def configured_module_states(algorithm: SavedAlgorithm) -> dict[Any, dict]:
    """{module_id: weights} the config's module specs ask to load when the learners are built
    (RLlib's `LearnerGroup.load_module_state`): the MultiRLModuleSpec's `load_state_path`
    (every module it and the learners hold, or its `modules_to_load`), then each
    RLModuleSpec's own `load_state_path`, which takes precedence. Paths are module
    checkpoints, such as an Algorithm checkpoint's `learner_group/learner/rl_module[/<id>]`."""
    spec = algorithm.config.__dict__.get("_rl_module_spec")
    multi_path, modules_to_load, paths = None, None, {}
    if isinstance(spec, MultiRLModuleSpec):
        multi_path, modules_to_load = spec.load_state_path, spec.modules_to_load
        specs = spec.rl_module_specs
        if isinstance(specs, RLModuleSpec):  # one spec for every module
            specs = {module_id: specs for module_id in _learner_module_ids(algorithm)}
        paths = {mid: s.load_state_path for mid, s in (specs or {}).items() if s.load_state_path}
    elif isinstance(spec, RLModuleSpec) and spec.load_state_path:
        paths = {module_id: spec.load_state_path for module_id in _learner_module_ids(algorithm)}
    if modules_to_load and not multi_path:
        raise ValueError(
            f"MultiRLModuleSpec(modules_to_load={sorted(map(str, modules_to_load))}) needs "
            "load_state_path= (the MultiRLModule checkpoint to load them from)"
        )
    states: dict[Any, dict] = {}
    if multi_path:
        if modules_to_load is None:
            states.update(read_module_states(algorithm, local_path(multi_path), MODULES_COMPONENT))
        for module_id in sorted(modules_to_load or (), key=str):
            states.update(
                read_module_states(
                    algorithm,
                    os.path.join(local_path(multi_path), str(module_id)),
                    f"{MODULES_COMPONENT}/{module_id}",
                )
            )
    for module_id, path in paths.items():
        states.update(
            read_module_states(algorithm, local_path(path), f"{MODULES_COMPONENT}/{module_id}")
        )
    return states
