"""Every exception class of `trainer.errors` pickles with its type, message and attributes: an
error raised in an EnvRunner process or a Ray actor (Tune's trial actor) reaches the caller as
itself, not as Ray's "Failed to deserialize exception". Ray pickles exceptions as pickle does."""

from __future__ import annotations

import inspect
import pickle

import pytest

from trainer import errors

#: A value for each constructor parameter, by its name (an index, a failure) or by default a
#: string.
_VALUES = {
    "worker_index": 3,
    "failure": ValueError("inner"),
    "timeout_s": 1.5,
    "exitcode": -9,
}


def _error_classes() -> list[type[BaseException]]:
    return sorted(
        (
            cls
            for cls in vars(errors).values()
            if isinstance(cls, type)
            and issubclass(cls, BaseException)
            and cls.__module__ == errors.__name__
            and not cls.__name__.startswith("_")
        ),
        key=lambda cls: cls.__name__,
    )


def _made(cls: type[BaseException]) -> BaseException:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    args = [
        _VALUES.get(p.name, f"{p.name} text")
        for p in parameters
        if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty
    ]
    return cls(*args)


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda cls: cls.__name__)
def test_each_error_pickles_with_its_type_message_and_attributes(cls):
    error = _made(cls)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert str(copy) == str(error)
    assert {k: repr(v) for k, v in vars(copy).items()} == {
        k: repr(v) for k, v in vars(error).items()
    }


def test_a_checkpoint_error_keeps_its_path_and_cause():
    copy = pickle.loads(pickle.dumps(errors.CheckpointError("/tmp/ckpt", "a file is missing")))
    assert (copy.path, copy.cause) == ("/tmp/ckpt", "a file is missing")
    assert str(copy) == "checkpoint /tmp/ckpt: a file is missing"
