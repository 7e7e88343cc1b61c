"""RLlib's `check` (served from `trainer.test_utils_checks`) compares plain numbers itself when
they are clearly within the tolerance, and leaves every other pair to numpy's assertions: the
outcome is numpy's for every pair, near the tolerance and at NaN and infinity included."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from trainer.test_utils_checks import check

BASES = [0.0, 1.0, -3.5, 1e6, 1e-9, 7, np.float64(2.25), np.int64(-4)]
#: Offsets around the tolerances used below: well inside, near, at and past them.
OFFSETS = [0.0, 1e-12, 1e-9, 4e-7, 5e-7, 7.5e-6, 1.4e-5, 1.5e-5, 1.6e-5, 1e-3, 0.5, math.inf]
TOLERANCES = [
    {"decimals": 5},
    {"decimals": 2},
    {"atol": 1e-5},
    {"rtol": 1e-6},
    {"atol": 1e-8, "rtol": 1e-5},
]


def _numpy_passes(x, y, decimals=5, atol=None, rtol=None) -> bool:
    try:
        if atol is None and rtol is None:
            np.testing.assert_almost_equal(x, y, decimal=decimals)
        else:
            np.testing.assert_allclose(x, y, atol=atol or 0.0, rtol=rtol or 1e-7)
    except AssertionError:
        return False
    return True


def _check_passes(x, y, **tolerance) -> bool:
    try:
        check(x, y, **tolerance)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("tolerance", TOLERANCES, ids=str)
def test_check_agrees_with_numpy_on_every_pair_of_plain_numbers(tolerance):
    pairs = [
        (base, base + offset if not isinstance(base, np.int64) else float(base) + offset)
        for base, offset in itertools.product(BASES, OFFSETS)
    ]
    pairs += [(math.nan, math.nan), (math.nan, 1.0), (math.inf, math.inf), (-math.inf, math.inf)]
    pairs += [(np.float32(1.0), 1.0 + 4e-6), (1, 1), (2, 3)]
    for x, y in pairs:
        for a, b in ((x, y), (y, x)):
            assert _check_passes(a, b, **tolerance) == _numpy_passes(a, b, **tolerance), (
                a,
                b,
                tolerance,
            )


def test_check_false_still_asserts_a_difference_of_plain_numbers():
    check(1.0, 2.0, false=True)
    with pytest.raises(AssertionError):
        check(1.0, 1.0 + 1e-9, false=True)
