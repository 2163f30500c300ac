"""Benchmark of the conformance kit's generators: programs per second and average size.

Usage::

    python bench/generate.py [--examples N]

Prints one row per generator configuration: programs generated per second
(Hypothesis engine included, as a user of the kit experiences it), average
and largest size in AST nodes (every function of the module, shared nodes
counted once), and, for well-typed programs, oracle evaluations per second.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from semantics.module import IRModule  # noqa: E402
from semantics.visitor import post_order  # noqa: E402


def module_size(mod: IRModule) -> int:
    return sum(len(post_order(fn)) for fn in mod.functions.values())


def measure(strategy: Any, n: int, size_of: Callable[[Any], int],
            run: Callable[[Any], None] | None = None) -> tuple[float, float, int, float | None]:
    sizes: list[int] = []
    programs: list[Any] = []

    @settings(max_examples=n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x: Any) -> None:
        sizes.append(size_of(x))
        programs.append(x)

    start = time.perf_counter()
    collect()
    elapsed = time.perf_counter() - start
    eval_rate = None
    if run is not None:
        start = time.perf_counter()
        for p in programs:
            run(p)
        eval_rate = len(programs) / (time.perf_counter() - start)
    return len(sizes) / elapsed, sum(sizes) / len(sizes), max(sizes), eval_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args()

    from conformance.harness import run_oracle
    from conformance.strategies.ast import ast_exprs, ast_modules
    from conformance.strategies.programs import ProgramConfig, well_typed_modules

    def run(p: Any) -> None:
        run_oracle(p.module, p.inputs, check=False)

    rows = [
        ("ast_exprs()", ast_exprs(), lambda e: len(post_order(e)), None),
        ("ast_modules()", ast_modules(), module_size, None),
        ("well_typed_modules()", well_typed_modules(), lambda p: module_size(p.module), run),
        ("well_typed_modules(max_depth=3)", well_typed_modules(max_depth=3),
         lambda p: module_size(p.module), run),
        ("well_typed_modules(float_mode)", well_typed_modules(ProgramConfig(float_mode=True)),
         lambda p: module_size(p.module), run),
    ]
    print(f"{'generator':<34} {'programs/s':>10} {'avg nodes':>10} {'max nodes':>10} "
          f"{'evals/s':>9}")
    for name, strategy, size_of, runner in rows:
        rate, avg, biggest, evals = measure(strategy, args.examples, size_of, runner)
        shown = f"{evals:9.1f}" if evals is not None else f"{'-':>9}"
        print(f"{name:<34} {rate:10.1f} {avg:10.1f} {biggest:10d} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
