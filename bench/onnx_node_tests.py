"""Run every ONNX node test case (``onnx.backend.test.case.node.collect_testcases()``)
through ``frontends.onnx.from_onnx`` and the reference interpreter.

Prints the pass rate over the supported cases (those whose operators the importer knows),
the failures grouped by operator with their reasons, and the cases that are not supported
grouped by operator. ``--write-list`` rewrites ``tests/frontends/onnx_node_passing.txt``,
the checked-in list of passing cases that ``tests/frontends/test_onnx_node_cases.py`` keeps
from regressing. Usage::

    PYTHONPATH=. python bench/onnx_node_tests.py [--write-list] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

LIST = pathlib.Path(__file__).resolve().parents[1] / "tests/frontends/onnx_node_passing.txt"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-list", action="store_true")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from frontends.onnx.node_tests import collect, run_case

    start = time.perf_counter()
    outcomes = [run_case(c) for c in collect() if args.only in c.name]
    total = time.perf_counter() - start
    by_status = collections.Counter(o.status for o in outcomes)
    supported = [o for o in outcomes if o.status != "unsupported"]
    passed = [o for o in supported if o.status == "pass"]
    print(f"{len(outcomes)} cases in {total:.1f} s: {dict(by_status)}")
    if supported:
        print(f"supported: {len(supported)}; passing: {len(passed)} "
              f"({100.0 * len(passed) / len(supported):.1f}%); "
              f"of them with inputs frozen as constants: {sum(o.frozen for o in passed)}")
    failing: dict[str, list[str]] = collections.defaultdict(list)
    for o in supported:
        if o.status != "pass":
            failing[o.op].append(f"{o.name} [{o.status}] {o.reason}")
    print("\nsupported operators, failing cases:")
    for op in sorted(failing):
        print(f"  {op} ({len(failing[op])})")
        for line in failing[op]:
            print(f"    {line}")
    unsupported = collections.Counter(o.op for o in outcomes if o.status == "unsupported")
    reasons = {}
    for o in outcomes:
        if o.status == "unsupported":
            reasons.setdefault(o.op, o.reason)
    print("\nunsupported (by operator: cases, first reason):")
    for op, n in sorted(unsupported.items()):
        print(f"  {op} ({n}): {reasons[op]}")
    if args.write_list:
        LIST.write_text("".join(f"{o.name}\n" for o in sorted(passed, key=lambda o: o.name)))
        print(f"\nwrote {len(passed)} names to {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
