"""The numpy export: a folder with the description as JSON (`policy.json`), the weights and
filter constants (`weights.npz`), and the standalone reader (`policy_reader.py`, a copy of
`trainer.export.reader`), which needs numpy alone:

    from policy_reader import load
    action = load(folder).greedy_action(obs)
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

from trainer.export import reader
from trainer.export.description import PolicyDescription

SPEC_FILE = reader.SPEC_FILE
WEIGHTS_FILE = reader.WEIGHTS_FILE
#: The reader's name in the export folder (not `reader.py`, a name too common to import by).
READER_FILE = "policy_reader.py"


def write_numpy(description: PolicyDescription, export_dir: str) -> str:
    """Writes policy.json, weights.npz and policy_reader.py into `export_dir` (made if
    missing); returns the folder."""
    os.makedirs(export_dir, exist_ok=True)
    with open(os.path.join(export_dir, SPEC_FILE), "w") as handle:
        json.dump(description.spec, handle, indent=1)
        handle.write("\n")
    np.savez(os.path.join(export_dir, WEIGHTS_FILE), **description.arrays)  # type: ignore[arg-type]
    source = reader.__file__
    assert source is not None, "the reader is a file of this package"
    shutil.copyfile(source, os.path.join(export_dir, READER_FILE))
    return export_dir
