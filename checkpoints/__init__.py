"""The public import path of the checkpoint format (`from checkpoints import CheckpointError`,
`python -m checkpoints inspect PATH`); the code lives in `trainer.checkpoints`, which the
trainer itself imports, so that a user's own `checkpoints.py` next to a script cannot break
`import trainer`. With such a file, import from `trainer.checkpoints` instead.
`checkpoints.codec`, `.format`, `.manager`, `.reader` and `.writer` are the very modules of
`trainer.checkpoints` (a test hook set on one is set on the other)."""

import sys as _sys

from trainer import checkpoints as _impl
from trainer.checkpoints import *  # noqa: F403
from trainer.checkpoints import (  # noqa: F401
    __all__,
    codec,
    format,
    manager,
    reader,
    writer,
)

for _name in ("codec", "format", "manager", "reader", "writer"):
    _sys.modules[f"{__name__}.{_name}"] = getattr(_impl, _name)
