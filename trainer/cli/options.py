"""Value types for command-line flags. argparse puts the flag's name in front of each message
("argument --env-config: not valid JSON: ..."), so these say what is wrong and what is allowed."""

from __future__ import annotations

import argparse
import json


def json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"key\": 1}}', not {text!r}"
        )
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be > 0")
    return value


def layer_sizes(text: str) -> list[int]:
    try:
        sizes = [int(size) for size in text.split(",") if size.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give layer sizes separated by commas, e.g. 64,64"
        ) from None
    if any(size <= 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be positive")
    return sizes


#: What a stop flag takes to drop its criterion (`--stop-reward none`).
NO_LIMIT = "none"


def float_or_none(text: str) -> float | str:
    """A number, or NO_LIMIT."""
    if text.strip().lower() == NO_LIMIT:
        return NO_LIMIT
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (or {NO_LIMIT!r})") from None
