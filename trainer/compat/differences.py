"""The deliberate differences from RLlib 2.60 (placeholder, filled below)."""
from __future__ import annotations


def api_keys() -> set[str]:
    return set()
