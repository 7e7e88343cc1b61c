"""RLlib's results of a call on a group of actors (`ray.rllib.utils.actor_manager`):
`RemoteCallResults`, what `LearnerGroup.foreach_learner` returns. Iterating gives one
`CallResult` per learner (`.get()` its value, `.ok`, `.actor_id`), in learner order;
`ignore_errors()` / `ignore_ray_errors()` iterate the successful ones. The learners here answer
in process, so a call's exception propagates at the call (as RLlib's local learner group lets
it) and every result is ok."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class ResultOrError:
    """A call's result, or the error it raised (`ok` tells which; `get()` gives either)."""

    def __init__(self, result: Any = None, error: Exception | None = None):
        self._result = result
        self._error = error

    @property
    def ok(self) -> bool:
        return self._error is None

    def get(self) -> Any:
        return self._result if self._error is None else self._error


@dataclass
class CallResult:
    """One actor's (here: one learner's) result: its index, the result or error, a tag."""

    actor_id: int | None
    result_or_error: ResultOrError
    tag: str | None

    @property
    def ok(self) -> bool:
        return self.result_or_error.ok

    def get(self) -> Any:
        return self.result_or_error.get()


class RemoteCallResults:
    """The results of one call on every learner (see the module docstring)."""

    def __init__(self) -> None:
        self.result_or_errors: list[CallResult] = []

    def add_result(self, actor_id: int | None, result_or_error: ResultOrError, tag: Any) -> None:
        self.result_or_errors.append(CallResult(actor_id, result_or_error, tag))

    @classmethod
    def of_values(cls, values: list[Any]) -> RemoteCallResults:
        """The results of a call whose values are `values`, one per learner in order."""
        results = cls()
        for index, value in enumerate(values):
            results.add_result(index, ResultOrError(result=value), None)
        return results

    def __iter__(self) -> Iterator[CallResult]:
        return iter(copy.copy(self.result_or_errors))

    def __len__(self) -> int:
        return len(self.result_or_errors)

    def ignore_errors(self) -> Iterator[CallResult]:
        return iter([result for result in self.result_or_errors if result.ok])

    def ignore_ray_errors(self) -> Iterator[CallResult]:
        return self.ignore_errors()  # (no Ray actor errors: the learners are in process)

    def values(self) -> list[Any]:
        """Every learner's value, in order (this project's shorthand)."""
        return [result.get() for result in self.result_or_errors]
