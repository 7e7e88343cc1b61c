"""Runs one benchmark script on this tree and on an earlier commit, interleaved, and compares
the "ratio" each prints: the earlier commit is the baseline, measured in the same run.

The earlier commit is checked out into a temporary git worktree; each run of the script imports
that tree's code (`PYTHONPATH` first, which the worker processes inherit). Runs alternate
(this tree, the commit, this tree, ...) so that drift of the machine's speed hits both alike.

    python bench/against_commit.py HEAD~1 bench/sampling.py [--rounds 3] [-- --steps 40000]

Prints each run's ratio line; per tree, the best of its ratios (the run least disturbed by the
rest of the machine, as timeit does) and the change; and the median over the rounds of each
round's change (this tree's ratio over the commit's, the two runs next to each other in time).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATIO_LINE = re.compile(r"ratio\s+([0-9.]+)")


def run(tree: Path, script: Path, args: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    completed = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{script} failed in {tree}:\n{completed.stderr[-3000:]}")
    lines = [line for line in completed.stdout.splitlines() if RATIO_LINE.search(line)]
    if not lines:
        raise SystemExit(f"{script} printed no 'ratio' line in {tree}:\n{completed.stdout}")
    return float(RATIO_LINE.search(lines[-1]).group(1)), lines[-1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the baseline commit (e.g. HEAD~1)")
    parser.add_argument("script", help="a bench script that prints 'ratio X'")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--same-script",
        action="store_true",
        help="run this tree's script on both trees' code (for a script the "
        "earlier commit does not have)",
    )
    argv = sys.argv[1:]
    # Everything after "--" is the script's.
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    script_args = argv[split + 1 :]
    with tempfile.TemporaryDirectory(prefix="localrl_baseline_") as scratch:
        baseline = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(baseline), args.commit],
            check=True,
            capture_output=True,
            timeout=120,
        )
        try:
            commit = subprocess.run(
                ["git", "-C", str(baseline), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            results: dict[str, list[float]] = {"this tree": [], f"commit {commit}": []}
            for round_index in range(args.rounds):
                for name, tree in (("this tree", ROOT), (f"commit {commit}", baseline)):
                    script = (ROOT if args.same_script else tree) / args.script
                    ratio, line = run(tree, script, script_args)
                    results[name].append(ratio)
                    print(f"round {round_index + 1}, {name:>16}: {line}", flush=True)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
                capture_output=True,
                timeout=120,
            )
    (mine, theirs) = (max(r) for r in results.values())
    print(
        f"best ratio: this tree {mine:.2f}, {list(results)[1]} {theirs:.2f}, "
        f"change {mine / theirs:.3f}x"
    )
    # Each round's two runs are neighbours in time: their quotient cancels the machine's drift,
    # and the median of the quotients is not pulled by one disturbed run as the best is (a
    # floor measured during a slow spell inflates a ratio).
    pairs = sorted(a / b for a, b in zip(*results.values(), strict=True))
    print(
        f"median change over the rounds' pairs: {statistics.median(pairs):.3f}x "
        f"(from {pairs[0]:.3f}x to {pairs[-1]:.3f}x)"
    )


if __name__ == "__main__":
    main()
