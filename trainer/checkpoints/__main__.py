"""`python -m checkpoints inspect PATH [--json]`: what a checkpoint holds, after verifying it.

Prints the metadata (format, library, algorithm, iteration, time, env, spaces, network size),
every file with its size, and each msgpack component with its top-level keys. Exits with status
1 and the reason when the checkpoint is missing or damaged. Reads msgpack and JSON only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from trainer.checkpoints import METADATA_FILE, CheckpointError, open_checkpoint
from trainer.checkpoints.format import CLASS_AND_CONFIG_FILE
from trainer.checkpoints.reader import read_metadata_bytes
from trainer.checkpoints.signing import SIGNATURE_KEY, KeyFileError, check_signature, key_file_path
from trainer.core.spaces import space_from_dict


def _size(num_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if num_bytes < 1024 or unit == "GB":
            return f"{num_bytes:.0f} {unit}" if unit == "B" else f"{num_bytes:.1f} {unit}"
        num_bytes /= 1024
    return f"{num_bytes} B"


#: Components' entries in seconds end so (`time_total_s`): shown as "5.66 s".
SECONDS_SUFFIX = "_s"


def _summary(value: Any, key: str = "") -> str:
    """A short description of one component's top-level entry `key`."""
    if isinstance(value, float) and not isinstance(value, bool):
        return f"{value:.2f} s" if key.endswith(SECONDS_SUFFIX) else f"{value:.6g}"
    if isinstance(value, dict):
        if "shape" in value and "data" in value:
            return f"array {value['shape']}"
        return f"{{{', '.join(sorted(value)[:6])}{', ...' if len(value) > 6 else ''}}}"
    if isinstance(value, list):
        return f"list of {len(value)}"
    return repr(value)


def _describe_spaces(spaces: dict) -> str:
    if spaces.get("action_space") is not None:  # a composite action space, as data
        try:
            actions = str(space_from_dict(spaces["action_space"]))
        except (TypeError, ValueError, KeyError):
            actions = "a composite space (unreadable)"
    elif spaces.get("action_discrete_n"):
        actions = f"Discrete({spaces['action_discrete_n']})"
    else:
        actions = f"Box({spaces.get('action_dim')})"
    return f"observations of size {spaces.get('obs_dim')}, actions {actions}"


def inspect(path: str, as_json: bool = False) -> str:
    checkpoint = open_checkpoint(path)
    try:
        return _describe(checkpoint, as_json)
    except (TypeError, KeyError, ValueError, AttributeError) as error:
        # Verified files whose fields have the wrong type (a crafted metadata.json).
        raise CheckpointError(
            checkpoint.path,
            f"{METADATA_FILE} holds a field of the wrong type ({type(error).__name__}: {error})",
        ) from None


def _signature_status(checkpoint: Any) -> str:
    """Whose key signed the pickled config, without creating a key."""
    if CLASS_AND_CONFIG_FILE not in checkpoint.files:
        return "no pickled config"
    entry = checkpoint.metadata.get(SIGNATURE_KEY)
    if entry is not None and not os.path.exists(key_file_path()):
        return f"signed; you have no key yet ({key_file_path()})"
    try:
        status = check_signature(checkpoint.class_and_config_bytes(), entry)
    except KeyFileError as error:
        return f"not checked: {error}"
    return status.reason


def _describe(checkpoint: Any, as_json: bool) -> str:
    meta = checkpoint.metadata
    components = {}
    for component in checkpoint.components:
        raw = checkpoint.load_plain(component)
        components[component] = (
            {key: _summary(item, key) for key, item in raw.items()}
            if isinstance(raw, dict)
            else _summary(raw)
        )
    if as_json:
        return json.dumps(
            {"path": checkpoint.path, "metadata": meta, "components": components},
            indent=2,
            default=str,
        )
    shapes = meta.get("parameter_shapes") or {}
    num_parameters = sum(math.prod(shape) for shape in shapes.values())
    spaces = meta.get("spaces") or {}
    # A multi-agent checkpoint's spaces are by module id.
    by_module = spaces if spaces and all(isinstance(v, dict) for v in spaces.values()) else None
    described = (
        "; ".join(f"{module_id}: {_describe_spaces(s)}" for module_id, s in by_module.items())
        if by_module is not None
        else _describe_spaces(spaces)
    )
    lines = [
        f"checkpoint {checkpoint.path}",
        f"  format      {meta['format']} v{meta['format_version']} "
        f"(written by localrl {meta.get('library_version')})",
        f"  algorithm   {meta.get('algorithm_class')}"
        + (
            f" (a {meta.get('algorithm')})"
            if meta.get("algorithm") != meta.get("algorithm_class")
            else ""
        ),
        f"  progress    iteration {meta.get('training_iteration')}, "
        f"{meta.get('num_env_steps_sampled_lifetime')} env steps",
        f"  saved       {meta.get('time')}",
        f"  env         {meta.get('env')}",
        f"  spaces      {described}",
        f"  network     {num_parameters:,} parameters in {len(shapes)} arrays",
    ]
    modules = meta.get("module_checkpoints")
    if isinstance(modules, dict):
        # The modules' weights, each a module checkpoint of its own (RLModule.from_checkpoint,
        # restore_from_path with component=, RLModuleSpec(load_state_path=)).
        ids = sorted(map(str, modules.get("metadata_sha256") or {}))
        lines.append(f"  modules     {modules.get('path')}/<module_id> ({', '.join(ids)})")
    lines.append(f"  config      {_signature_status(checkpoint)}")
    lines += [
        "  files (all sizes and SHA-256 checksums verified)",
    ]
    # metadata.json lists the other files' sizes and checksums, not its own: its size is read.
    total = metadata_size = len(read_metadata_bytes(checkpoint.path))
    for name, entry in sorted(checkpoint.files.items()):
        total += entry["size"]
        lines.append(f"    {name:<32} {_size(entry['size']):>10}")
    lines.append(f"    {METADATA_FILE:<32} {_size(metadata_size):>10}")
    lines.append(f"    {'total':<32} {_size(total):>10}")
    lines.append("  components")
    for component, keys in components.items():
        if isinstance(keys, dict):
            lines.append(f"    {component}: " + ", ".join(f"{k}={v}" for k, v in keys.items()))
        else:
            lines.append(f"    {component}: {keys}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m checkpoints", description="Work with localrl checkpoints."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    inspect_parser = commands.add_parser(
        "inspect", help="verify a checkpoint and print what it holds"
    )
    inspect_parser.add_argument("path")
    inspect_parser.add_argument("--json", action="store_true", help="print JSON instead")
    args = parser.parse_args(argv)
    try:
        print(inspect(args.path, as_json=args.json))
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
