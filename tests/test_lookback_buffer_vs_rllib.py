"""`InfiniteLookbackBuffer.get` and `set` against RLlib 2.60's own code, case by case.

RLlib cannot be imported here (no dm-tree, no torch), but its `infinite_lookback_buffer.py`
needs neither for what is compared: the module's source, from the installed Ray wheel (the
test extra), is executed with its few imports pointed at this project's equivalents
(`tree.map_structure`, `batch`, `get_dummy_batch_for_space`, `one_hot`, ...). Every
combination of buffer (length, lookback, list or numpy, with or without a space) and request
(int, list, slice with any step; `neg_index_as_lookback`; `fill`; `one_hot_discrete`) is then
asked of both classes, and the results (or the exception types) must be equal.
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from helpers import exec_rllib_source, rllib_source

from trainer.core import spaces as our_spaces
from trainer.env.lookback_buffer import InfiniteLookbackBuffer

pytestmark = pytest.mark.ray

POSITIONS = [None, -12, -9, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 9, 12]
INDICES = [-12, -9, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 9, 12]


def _load_rllib_class() -> type:
    """RLlib's class, from its source, with its imports served by stand-ins (only while the
    module body runs: `sys.modules` is left as it was)."""
    fake_modules = {
        "tree": {"map_structure": our_spaces.map_structure},
        "ray": {},
        "ray.rllib": {},
        "ray.rllib.utils": {},
        "ray.rllib.utils.spaces": {},
        "ray.util": {},
        "ray.rllib.utils.numpy": {
            "LARGE_INTEGER": 100000000,
            "one_hot": our_spaces.one_hot,
            "one_hot_multidiscrete": our_spaces.one_hot_multidiscrete,
        },
        "ray.rllib.utils.serialization": {
            "gym_space_from_dict": our_spaces.space_from_dict,
            "gym_space_to_dict": our_spaces.space_to_dict,
        },
        "ray.rllib.utils.spaces.space_utils": {
            "batch": our_spaces.batch,
            "get_base_struct_from_space": our_spaces.get_base_struct_from_space,
            "get_dummy_batch_for_space": our_spaces.get_dummy_batch_for_space,
        },
        "ray.util.annotations": {"DeveloperAPI": lambda cls: cls},
    }
    path = rllib_source("env/utils/infinite_lookback_buffer.py", module_level=True)
    namespace = exec_rllib_source(path, fake_modules, "rllib_infinite_lookback_buffer")
    return namespace["InfiniteLookbackBuffer"]


RLlibBuffer = _load_rllib_class()


def _outcome(method, *args, **kwargs):
    try:
        return "value", method(*args, **kwargs)
    except (IndexError, ValueError, AssertionError) as error:
        return "error", type(error).__name__


def _same(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same(a[k], b[k]) for k in a)
        )
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) != isinstance(b, np.ndarray):
        return False  # a list where RLlib gives an array, or the other way round
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return np.shape(a) == np.shape(b) and np.array_equal(np.asarray(a), np.asarray(b))


def _wraps_around_in_rllib(request, lookback: int, finalized: bool, kwargs: dict) -> bool:
    """An int (or list of ints) with `neg_index_as_lookback=True` and no fill that points left
    of the lookback buffer, on a numpy buffer."""
    if not (finalized and kwargs["neg_index_as_lookback"] and kwargs["fill"] is None):
        return False
    indices = request if isinstance(request, list) else [request]
    return all(isinstance(i, int) for i in indices) and any(lookback + i < 0 for i in indices)


def _buffers(size: int, lookback: int, finalized: bool, space):
    def make(cls):
        buffer = cls(data=list(range(size)), lookback=lookback, space=space)
        if finalized:
            buffer.finalize()
        return buffer

    return make(InfiniteLookbackBuffer), make(RLlibBuffer)


BUFFER_CASES = [
    (size, lookback, finalized, space)
    for size in (0, 1, 3, 6)
    for lookback in (0, 2, 4)
    if lookback <= size
    for finalized in (False, True)
    for space in (None, gym.spaces.Discrete(8))
]


def _requests():
    yield from INDICES
    yield from ([-7, 1], [2, -1], [0], [9, -12])
    for start, stop in itertools.product(POSITIONS, POSITIONS):
        for step in (None, 1, 2, -1, -2):
            yield slice(start, stop, step)


@pytest.mark.parametrize("size,lookback,finalized,space", BUFFER_CASES)
def test_get_matches_rllib(size, lookback, finalized, space):
    ours, theirs = _buffers(size, lookback, finalized, space)
    compared = rllib_asserts = 0
    for request in _requests():
        for neg_index_as_lookback, fill in itertools.product((False, True), (None, 7)):
            one_hots = (False, True) if space is not None else (False,)
            for one_hot_discrete in one_hots:
                kwargs = {
                    "neg_index_as_lookback": neg_index_as_lookback,
                    "fill": fill,
                    "one_hot_discrete": one_hot_discrete,
                }
                expected = _outcome(theirs.get, request, **kwargs)
                if _wraps_around_in_rllib(request, lookback, finalized, kwargs):
                    # The deliberate difference: RLlib's numpy fast path wraps such an index
                    # around to the end of the data (its list path raises IndexError); here
                    # both raise IndexError.
                    assert _outcome(ours.get, request, **kwargs) == ("error", "IndexError")
                    continue
                if expected == ("error", "AssertionError"):
                    # RLlib's internal assert (start >= 0) trips on reversed ranges of an
                    # empty buffer: nothing to match there.
                    rllib_asserts += 1
                    continue
                if expected[0] == "error":
                    # RLlib refuses (an index out of range): ours must refuse as well.
                    assert _outcome(ours.get, request, **kwargs)[0] == "error", (
                        request,
                        kwargs,
                        expected,
                    )
                    continue
                got = _outcome(ours.get, request, **kwargs)
                assert got[0] == "value" and _same(got[1], expected[1]), (
                    f"get({request!r}, {kwargs}) on data={list(range(size))} "
                    f"lookback={lookback} finalized={finalized}: RLlib gives {expected[1]!r}, "
                    f"this project {got[1]!r}"
                )
                compared += 1
    assert compared > 1000
    assert size == 0 or rllib_asserts == 0, rllib_asserts


@pytest.mark.parametrize(
    "size,lookback,finalized",
    [
        (size, lookback, finalized)
        for size in (3, 6)
        for lookback in (0, 2)
        for finalized in (False, True)
    ],
)
def test_set_matches_rllib(size, lookback, finalized):
    compared = 0
    for start, stop in itertools.product(POSITIONS, POSITIONS):
        for step, neg_index_as_lookback in itertools.product((None, 1, -1), (False, True)):
            at = slice(start, stop, step)
            ours, theirs = _buffers(size, lookback, finalized, None)
            # As many new items as RLlib's slice selects (else both must refuse the size).
            selected = len(
                np.asarray(theirs.data)[theirs._interpret_slice(at, neg_index_as_lookback)[0]]
            )
            new_data = [100 + i for i in range(selected)]
            expected = _outcome(
                theirs.set, new_data, at_indices=at, neg_index_as_lookback=neg_index_as_lookback
            )
            got = _outcome(
                ours.set, new_data, at_indices=at, neg_index_as_lookback=neg_index_as_lookback
            )
            assert got[0] == expected[0], (at, neg_index_as_lookback, expected, got)
            assert _same(list(np.asarray(ours.data)), list(np.asarray(theirs.data))), (
                at,
                neg_index_as_lookback,
            )
            compared += 1
    for index in INDICES:
        for neg_index_as_lookback in (False, True):
            ours, theirs = _buffers(size, lookback, finalized, None)
            expected = _outcome(
                theirs.set, -1, at_indices=index, neg_index_as_lookback=neg_index_as_lookback
            )
            got = _outcome(
                ours.set, -1, at_indices=index, neg_index_as_lookback=neg_index_as_lookback
            )
            assert got[0] == expected[0], (index, neg_index_as_lookback, expected, got)
            assert _same(list(np.asarray(ours.data)), list(np.asarray(theirs.data)))
            compared += 1
    assert compared > 1000


def test_the_issue_case_fills_two_items():
    """`get(slice(-10, -12), fill=0.0)`: both bounds left of the data, two apart."""
    buffer = InfiniteLookbackBuffer(data=[0.0, 1.0, 2.0, 3.0], lookback=2)
    assert buffer.get(slice(-10, -12), fill=0.0) == [0.0, 0.0]
    buffer.finalize()
    assert buffer.get(slice(-10, -12), fill=0.0).tolist() == [0.0, 0.0]
