"""Trusting a checkpoint from someone else: `trust_checkpoint(path)` re-signs its pickled config
(`class_and_config.pkl`) with this user's key, after verifying every file, so that
`Algorithm.from_checkpoint(path)` unpickles it as it does the user's own. Nothing is unpickled
here; what is trusted is described (algorithm class, file, size, SHA-256, who signed it) for the
user to read. `python -m trainer trust PATH` runs it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from trainer.checkpoints.format import (
    CLASS_AND_CONFIG_FILE,
    CONFIG_FILE,
    METADATA_FILE,
    CheckpointError,
)
from trainer.checkpoints.json_files import sealed_json
from trainer.checkpoints.reader import Checkpoint, open_checkpoint
from trainer.checkpoints.signing import (
    SIGNATURE_KEY,
    check_signature,
    key_file_path,
    key_id,
    load_key,
    sign,
)
from trainer.util.files import fsync_dir, replace_file


@dataclass(frozen=True)
class TrustReport:
    """What `trust_checkpoint` found and did."""

    path: str
    algorithm_class: str
    file: str
    size: int
    sha256: str
    signature_before: str
    re_signed: bool

    def __str__(self) -> str:
        lines = [
            f"checkpoint {self.path}",
            f"  algorithm   {self.algorithm_class}",
            f"  file        {self.file} ({self.size:,} bytes)",
            f"  sha256      {self.sha256}",
            f"  signature   {self.signature_before}",
        ]
        key = load_key()
        if self.re_signed:
            lines.append(
                f"trusted: re-signed {self.file} with your key ({key_file_path()}, key id "
                f"{key_id(key)}); Algorithm.from_checkpoint(path) now unpickles it"
            )
        else:
            lines.append(f"already trusted: {self.file} is signed with your key; nothing changed")
        return "\n".join(lines)


def _algorithm_class(checkpoint: Checkpoint) -> str:
    """The class the checkpoint says it holds: metadata.json's name, with config.json's import
    path when it has one (read as data; nothing is imported)."""
    name = str(checkpoint.metadata.get("algorithm_class"))
    try:
        data = checkpoint.read_json(CONFIG_FILE)
    except CheckpointError:
        data = None
    import_path = data.get("algorithm_class") if isinstance(data, dict) else None
    return f"{name} ({import_path})" if isinstance(import_path, str) else name


def trust_checkpoint(path: str | os.PathLike) -> TrustReport:
    """Verifies the checkpoint at `path` whole and signs its pickled config with this user's
    key (metadata.json is rewritten atomically, sealed). Raises `CheckpointError` for a damaged
    checkpoint or one without a pickled config."""
    checkpoint = open_checkpoint(path)
    if CLASS_AND_CONFIG_FILE not in checkpoint.files:
        raise CheckpointError(
            checkpoint.path, f"has no {CLASS_AND_CONFIG_FILE}: there is no pickled config to trust"
        )
    data = checkpoint.class_and_config_bytes()
    entry = checkpoint.files[CLASS_AND_CONFIG_FILE]
    status = check_signature(data, checkpoint.metadata.get(SIGNATURE_KEY))
    report = TrustReport(
        path=checkpoint.path,
        algorithm_class=_algorithm_class(checkpoint),
        file=CLASS_AND_CONFIG_FILE,
        size=entry["size"],
        sha256=entry["sha256"],
        signature_before=status.reason,
        re_signed=not status.valid,
    )
    if status.valid:
        return report
    metadata = {**checkpoint.metadata, SIGNATURE_KEY: sign(data)}
    try:
        replace_file(os.path.join(checkpoint.path, METADATA_FILE), sealed_json(metadata))
        fsync_dir(checkpoint.path)
    except OSError as error:
        raise CheckpointError(
            checkpoint.path, f"cannot rewrite {METADATA_FILE} with the signature: {error}"
        ) from None
    return report
