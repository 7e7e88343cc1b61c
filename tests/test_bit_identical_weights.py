"""Seeded runs of every algorithm train exactly the weights recorded in
tests/data/bit_identical/.

A refactoring of the algorithms, learners, config or sampling must not change what a seeded run
computes: each case of tests/bit_identical_cases.py (every registered algorithm: PPO, DQN, SAC,
IMPALA, APPO, VPG, and BC, MARWIL, CQL, IQL learning from recorded steps; numpy and torch
learners, single- and multi-agent, sampling here and in an EnvRunner process, a MeanStdFilter)
trains two iterations, and every module weight, the learner's state (optimizer moments, RNG,
counters) and the filter's statistics must equal the recorded arrays bit for bit. On a machine
or library versions other than the recording's (the fingerprint stored with each file), float
results may differ in the last bits, and floats are compared with a tight tolerance instead;
integers always exactly.

A deliberate change of training re-records: `python tests/bit_identical_cases.py --record`.
"""

from __future__ import annotations

import numpy as np
import pytest
from bit_identical_cases import CASES, data_path, fingerprint, load, run_case

RTOL = 1e-4
ATOL = 1e-6


def _differences(
    expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], exact: bool
) -> list[str]:
    """One line per key whose array differs (or is missing or new)."""
    lines = [f"missing: {key}" for key in sorted(expected.keys() - actual.keys())]
    lines += [f"new: {key}" for key in sorted(actual.keys() - expected.keys())]
    for key in sorted(expected.keys() & actual.keys()):
        want, got = expected[key], np.asarray(actual[key])
        if want.shape != got.shape:
            lines.append(f"{key}: shape {got.shape}, recorded {want.shape}")
            continue
        floats = want.dtype.kind == "f" and got.dtype.kind == "f"
        if exact or not floats:
            same = np.array_equal(want, got) and (not floats or want.dtype == got.dtype)
        else:
            same = np.allclose(got, want, rtol=RTOL, atol=ATOL)
        if not same:
            if floats:
                worst = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                lines.append(f"{key}: max abs difference {worst:.3g} ({got.dtype}, {want.dtype})")
            else:
                lines.append(f"{key}: {got.ravel()[:4]}..., recorded {want.ravel()[:4]}...")
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_seeded_run_trains_the_recorded_weights(case):
    if "torch" in case:
        pytest.importorskip("torch")
    assert data_path(case).exists(), (
        f"no recording for {case}: python tests/bit_identical_cases.py --record {case}"
    )
    expected, recorded_on = load(case)
    here = fingerprint()
    exact = recorded_on == here
    mode = (
        "bit-identical (np.array_equal; same machine and libraries as the recording)"
        if exact
        else f"tolerant (np.allclose rtol={RTOL}, atol={ATOL}; floats only): recorded on "
        f"{recorded_on}, running on {here}"
    )
    differences = _differences(expected, run_case(case), exact)
    assert not differences, (
        f"{case}: {len(differences)} of {len(expected)} recorded arrays differ, compared "
        f"{mode}:\n  "
        + "\n  ".join(differences[:20])
        + "\nA deliberate change of training re-records: "
        f"python tests/bit_identical_cases.py --record {case}"
    )


def test_a_recording_differs_from_another_seeds_run():
    """The comparison can fail: another seed's arrays are not the recorded ones."""
    case = "ppo_single_numpy_local"
    expected, _ = load(case)
    make = CASES[case]
    CASES[case] = lambda: make().debugging(seed=12345)
    try:
        other = run_case(case)
    finally:
        CASES[case] = make
    differences = _differences(expected, other, exact=False)
    assert any(key.startswith("module/") for key in differences), differences
