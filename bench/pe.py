"""Benchmark of the partial evaluator on reverse-mode AD output (paper §4.3, issue 12).

Usage::

    python bench/pe.py [--repeat N] [--check]

Workloads: the gradients (``ad.grad``, the paper's Fig. 4 reverse mode: a backpropagator
reference of closures, a ``(T, Ref[T])`` pair per tensor) of

* ``mlp``: the MLP 784-512-10 (``nn.dense``, bias ``add``, ``tanh``, ``sum`` loss);
* ``lstm``: one LSTM cell, input and hidden 128 (four gates built by a local closure);

the workload definitions are those of ``bench/ad.py`` (float32, batch 1, seeded weights).
For each it prints the program size in AST nodes (shared nodes once) before and after
``partial_evaluate`` (PE + DCE), the time PE itself takes, the oracle's evaluation time of
the gradient before and after (median of ``--repeat`` runs; each program is type-checked
once and the timed runs skip the checker), and the speed-up (same run: only ratios mean
anything on a shared machine). ``--check`` also asserts the results agree and that the
speed-up reaches the issue's target of 3×.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import ad  # noqa: E402
from interpreter import evaluate  # noqa: E402
from interpreter.values import values_equal  # noqa: E402
from pe import partial_evaluate  # noqa: E402
from semantics import parse_expr  # noqa: E402
from semantics.module import IRModule  # noqa: E402

TARGET = 3.0


def _workloads() -> Any:
    """``bench/ad.py`` as a module (its MLP and LSTM texts and timing helpers)."""
    spec = importlib.util.spec_from_file_location("bench_ad", os.path.join(HERE, "ad.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true",
                        help="assert equal results and a speed-up of at least 3x")
    args = parser.parse_args(argv)
    import numpy as np

    w = _workloads()
    rng = np.random.default_rng(0)
    print(f"{'workload':8} {'size AD':>8} {'size PE':>8} {'PE s':>7} {'eval AD s':>10} "
          f"{'eval PE s':>10} {'speed-up':>8}")
    ok = True
    for name, text in (("mlp", w.MLP), ("lstm", w.LSTM)):
        f = parse_expr(text)
        xs = w.inputs(f, rng)
        g = ad.grad(f)
        start = time.perf_counter()
        gp = partial_evaluate(g)
        pe_seconds = time.perf_counter() - start
        before = w.timed(w.runner(g, xs), args.repeat)
        after = w.timed(w.runner(gp, xs), args.repeat)
        speedup = before / after
        print(f"{name:8} {w.size(g):8d} {w.size(gp):8d} {pe_seconds:7.2f} {before:10.4f} "
              f"{after:10.4f} {speedup:7.1f}x")
        if args.check:
            same = values_equal(evaluate(IRModule.from_expr(g), *xs),
                                evaluate(IRModule.from_expr(gp), *xs))
            if not same:
                print(f"  {name}: the partially evaluated gradient computes something else")
            if speedup < TARGET:
                print(f"  {name}: speed-up {speedup:.1f}x is below the target {TARGET}x")
            ok = ok and same and speedup >= TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
