"""How a module class names the function that describes its networks for the export
(`export_describer`, a dotted path), and that function's type: the piece the description
(`trainer.export.description`, which re-exports it) and the torch modules' side of the export
(`trainer.export.torch_modules`, which description imports only for a torch module) both
import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainer.core.policy_description import PolicyDescription
from trainer.util.import_paths import resolve_import_path

#: The class attribute by which a module class names the function that describes its
#: networks: "module:function", called as `function(module, description)` to fill in the
#: description's encoder, LSTM, heads, log-std and distribution (an ExportError for a module
#: it cannot express). Read through the class's bases, so a subclass reaches its base's
#: describer, which decides whether the subclass computes what the base does. A dotted path,
#: resolved by `describer_of`: the algorithms' folders sit below the export and never import it.
DESCRIBER_ATTRIBUTE = "export_describer"

Describer = Callable[[Any, PolicyDescription], None]


def describer_of(module: Any) -> Describer | None:
    """The function that describes `module`'s networks: the one its class (or a base) names
    by `export_describer`; None for a module class that names none."""
    path = getattr(type(module), DESCRIBER_ATTRIBUTE, None)
    return None if path is None else resolve_import_path(path)


__all__ = ["DESCRIBER_ATTRIBUTE", "Describer", "describer_of"]
