"""Docs pages generated from code (the settings table, the deliberate differences): written by
their module's `main`, or checked with `--check`."""

from __future__ import annotations

from pathlib import Path


def write_or_check(page: Path, text: str, argv: list[str], command: str) -> int:
    """Writes `text` to `page`; with `--check` in `argv`, writes nothing and returns 1 when the
    page differs from `text` (saying to run `command`). The exit code of a `main`."""
    if "--check" in argv:
        current = page.read_text() if page.exists() else ""
        if current != text:
            print(f"{page} is stale: run {command}")
            return 1
        return 0
    page.write_text(text)
    print(f"wrote {page}")
    return 0
