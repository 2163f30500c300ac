"""Benchmark of the new-user path of docs/assignments.md: grading the simplifier slips.

Usage::

    python bench/assignment_slips.py [--seeds 0 1 2 3 4] [--max-examples 300]
                                     [--shrink-time 15] [--solution]

Runs ``relay conformance --pass examples/assignments/slips.py:SLIP`` (a fresh process, as a
student or a grading script would) for every slip of ``examples/assignments/slips.py`` and
every seed, reads its ``--json`` report, and prints per run: the exit status, when the first
failing program was found, how long minimising took, the program's size before and after,
and the wall time of the whole command; then min/median/max over the runs of the wall time
and of the time to the report (the command's own ``seconds``, without Python's start-up).
``--solution`` also grades the reference solution (it must exit with status 0). The load
average is printed before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

_SHRINK = re.compile(r"found after ([\d.]+) s; Hypothesis shrank it for ([\d.]+) s.*"
                     r"the reducer for ([\d.]+) s: size (\d+) -> (\d+)")


def grade(target: str, seed: int, examples: int, shrink_time: float) -> dict[str, object]:
    """One ``relay conformance --pass target`` run: its exit status, wall time and report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "relay", "conformance", "--pass", target,
               "--max-examples", str(examples), "--seed", str(seed),
               "--shrink-time", str(shrink_time), "--json", out]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": ROOT})
        wall = time.perf_counter() - t0
        report = json.load(open(out)) if os.path.exists(out) else {}
    row: dict[str, object] = {"target": target.split(":")[-1], "seed": seed,
                              "exit": proc.returncode, "wall": wall,
                              "seconds": report.get("seconds")}
    checks = report.get("checks") or [{}]
    cex = checks[0].get("counterexample") or {}
    m = _SHRINK.search(cex.get("shrink") or "")
    if m:
        row.update(found=float(m[1]), shrink=float(m[2]), reduce=float(m[3]),
                   size=f"{m[4]} -> {m[5]}")
    if proc.returncode not in (0, 1):
        row["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    return row


def _stats(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no runs"
    return (f"{name}: min {min(values):.1f} s, median {statistics.median(values):.1f} s, "
            f"max {max(values):.1f} s over {len(values)} runs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--max-examples", type=int, default=300)
    parser.add_argument("--shrink-time", type=float, default=15.0)
    parser.add_argument("--only", nargs="*", default=None, help="slip names to run")
    parser.add_argument("--solution", action="store_true",
                        help="also grade the reference solution (must pass)")
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(ROOT, "examples", "assignments"))
    from slips import SLIPS  # type: ignore[import-not-found]

    slips = [s for s in SLIPS if not args.only or s in args.only]
    print(f"load average before: {os.getloadavg()}")
    rows = []
    print(f"{'submission':<20} {'seed':>4} {'exit':>4} {'found':>6} {'shrink':>6} "
          f"{'reduce':>6} {'size':>12} {'report':>7} {'wall':>6}")
    for seed in args.seeds:
        targets = [f"examples/assignments/slips.py:{s}" for s in slips]
        if args.solution:
            targets.append("examples/assignments/simplifier_solution.py:simplify")
        for target in targets:
            r = grade(target, seed, args.max_examples, args.shrink_time)
            rows.append(r)

            def f(key: str, r: dict[str, object] = r) -> str:
                v = r.get(key)
                return f"{v:.1f}" if isinstance(v, float) else "-" if v is None else str(v)

            print(f"{r['target']!s:<20} {seed:>4} {r['exit']!s:>4} {f('found'):>6} "
                  f"{f('shrink'):>6} {f('reduce'):>6} {f('size'):>12} {f('seconds'):>7} "
                  f"{f('wall'):>6}" + (f"  ERROR {r['error']}" if "error" in r else ""),
                  flush=True)
    slip_rows = [r for r in rows if r["target"] != "simplify"]
    missed = [r for r in slip_rows if r["exit"] != 1]
    print(f"\nslips reported: {len(slip_rows) - len(missed)}/{len(slip_rows)}"
          + (f"; NOT reported: {[(r['target'], r['seed']) for r in missed]}" if missed else ""))
    print(_stats("time to report (the command's own seconds)",
                 [float(r["seconds"]) for r in slip_rows  # type: ignore[arg-type]
                  if r["exit"] == 1 and r["seconds"] is not None]))
    print(_stats("wall time of the command", [float(r["wall"]) for r in slip_rows]  # type: ignore[arg-type]
                 ))
    print(_stats("found after", [float(r["found"]) for r in slip_rows if "found" in r]  # type: ignore[arg-type]
                 ))
    for r in rows:
        if r["target"] == "simplify":
            print(f"solution, seed {r['seed']}: exit {r['exit']}, {float(r['wall']):.1f} s "  # type: ignore[arg-type]
                  "wall")
    print(f"load average after: {os.getloadavg()}")
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
