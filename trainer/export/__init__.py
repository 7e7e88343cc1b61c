"""A trained policy exported for deployment, without this package: as an ONNX graph
(`onnx_export`, run by onnxruntime or any ONNX runtime) or as numpy weights with a small
standalone reader (`numpy_export`, `reader`). Both hold the module's inference path from raw
observations (a MeanStdFilter folded in as constants) to the action distribution's inputs and
the greedy action (`description`). `Algorithm.export_policy_model` / `export_model` and
`python -m trainer export` call `export_policy`.

onnx is imported only for an ONNX export, torch only for a torch module.
"""

from __future__ import annotations

import importlib
from typing import Any

from trainer.checkpoints.format import CheckpointError
from trainer.checkpoints.rllib_layout import RLLIB_CHECKPOINT_READER
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.policy_description import MODULE_ID
from trainer.export.description import (
    ExportError,
    PolicyDescription,
    describe_policy,
    module_of,
)
from trainer.export.numpy_export import write_numpy

#: The export formats: RLLIB is a module checkpoint in RLlib 2.60's layout, which RLlib's
#: `RLModule.from_checkpoint` loads (`trainer.compat.rllib_checkpoint.save_rllib_module`).
ONNX = "onnx"
NUMPY = "numpy"
RLLIB = "rllib"
FORMATS = (ONNX, NUMPY, RLLIB)
#: The ONNX writer, imported when used (it imports onnx).
ONNX_EXPORT_MODULE = "trainer.export.onnx_export"
#: The ONNX opset an export uses unless told (RLlib's `export_model` reads $ONNX_OPSET).
DEFAULT_OPSET = 17


def check_format(format: str) -> str:
    """`format` when it is one of FORMATS; an ExportError naming the allowed ones."""
    if format not in FORMATS:
        raise ExportError(f"format={format!r}: allowed formats are {', '.join(map(repr, FORMATS))}")
    return format


def export_policy(
    algorithm: Any,
    export_dir: str,
    *,
    format: str = ONNX,
    module_id: str = DEFAULT_MODULE_ID,
    opset: int = DEFAULT_OPSET,
) -> str:
    """Exports module `module_id` of `algorithm` into `export_dir` as `format` ("onnx":
    model.onnx for ONNX opset `opset`; "numpy": policy.json, weights.npz, policy_reader.py;
    "rllib": a module checkpoint RLlib 2.60 loads, the module alone); returns the path written
    (the ONNX file, or the folder). Bad arguments and modules the export cannot express raise
    ExportError before anything is written."""
    check_format(format)
    if format == RLLIB:
        module = module_of(algorithm, module_id)
        reader = importlib.import_module(RLLIB_CHECKPOINT_READER)
        try:
            return str(reader.save_rllib_module(module, export_dir))
        except CheckpointError as error:
            raise ExportError(str(error)) from None
    description = describe_policy(algorithm, module_id)
    if format == ONNX:
        onnx_export = importlib.import_module(ONNX_EXPORT_MODULE)
        return str(onnx_export.write_onnx(description, export_dir, opset))
    return write_numpy(description, export_dir)


__all__ = [
    "DEFAULT_OPSET",
    "FORMATS",
    "NUMPY",
    "MODULE_ID",
    "ONNX",
    "RLLIB",
    "ExportError",
    "PolicyDescription",
    "check_format",
    "describe_policy",
    "export_policy",
]
