"""Builds the package as setup.cfg describes it, plus one file beside the packages:
`localrl_main_guard.pth`, which makes Python import `_localrl_main_guard` at start-up. That
module does something only in a process started as `python -m trainer ...` or `python -m
checkpoints ...`: it makes that name this project's package, so that a user's own `trainer.py`
(or `trainer/`) in the working folder, which `-m` would find first, cannot stand in for it."""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

GUARD_PTH = "localrl_main_guard.pth"
GUARD_LINE = "import _localrl_main_guard\n"


class BuildPyWithGuard(build_py):
    """A regular install: the .pth goes into the wheel's root (site-packages)."""

    def run(self) -> None:
        super().run()
        Path(self.build_lib, GUARD_PTH).write_text(GUARD_LINE, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, GUARD_PTH)]


class EditableWheelWithGuard(editable_wheel):
    """An editable install (`pip install -e .`): the .pth goes into the editable wheel's root,
    beside the .pth files setuptools writes there."""

    def _install_namespaces(self, installation_dir: str, pth_prefix: str) -> None:
        super()._install_namespaces(installation_dir, pth_prefix)
        Path(installation_dir, GUARD_PTH).write_text(GUARD_LINE, encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithGuard, "editable_wheel": EditableWheelWithGuard})
