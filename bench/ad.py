"""Benchmark of reverse-mode AD on the oracle: gradient time over forward time, program sizes.

Usage::

    python bench/ad.py [--repeat N] [--pe | --no-pe]

Workloads (float32, batch 1, random weights with a fixed seed):

* ``mlp``: the paper's MLP, 784-512-10 (``nn.dense``, bias ``add``, ``tanh``, ``sum`` loss);
* ``lstm``: one LSTM cell, input 128 and hidden 128 (four gates, each
  ``dense(x, W) + dense(h, U) + b``; ``sigmoid``/``tanh``; loss ``sum(h') + sum(c')``).

For each it prints the forward evaluation time, the gradient evaluation time (``ad.grad``'s
function on the same inputs, value and all gradients), their ratio (same run, median of
``--repeat`` runs; each program is type-checked once, the timed runs skip the checker), and
the program sizes in AST nodes (shared nodes once): the function, its
gradient, and — when ``pe.partial_evaluate`` is importable (or ``--pe``) — the gradient after
partial evaluation and dead-code elimination (with its evaluation time). Timings are of the
oracle (the big-step interpreter), so only the ratios mean anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import ad  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics import parse_expr  # noqa: E402
from semantics.expr import Expr  # noqa: E402
from semantics.module import IRModule  # noqa: E402
from semantics.visitor import post_order  # noqa: E402

MLP = """
fn (%x: Tensor[(1, 784), float32], %w1: Tensor[(512, 784), float32], %b1: Tensor[(512), float32],
    %w2: Tensor[(10, 512), float32], %b2: Tensor[(10), float32]) -> float32 {
  let %h = tanh(add(nn.dense(%x, %w1), %b1));
  let %o = add(nn.dense(%h, %w2), %b2);
  sum(%o * %o)
}
"""

LSTM = """
fn (%x: Tensor[(1, 128), float32], %h: Tensor[(1, 128), float32], %c: Tensor[(1, 128), float32],
    %wi: Tensor[(128, 128), float32], %ui: Tensor[(128, 128), float32], %bi: Tensor[(128), float32],
    %wf: Tensor[(128, 128), float32], %uf: Tensor[(128, 128), float32], %bf: Tensor[(128), float32],
    %wo: Tensor[(128, 128), float32], %uo: Tensor[(128, 128), float32], %bo: Tensor[(128), float32],
    %wg: Tensor[(128, 128), float32], %ug: Tensor[(128, 128), float32], %bg: Tensor[(128), float32]
    ) -> float32 {
  let %gate = fn (%w: Tensor[(128, 128), float32], %u: Tensor[(128, 128), float32],
                  %b: Tensor[(128), float32]) -> Tensor[(1, 128), float32] {
    add(add(nn.dense(%x, %w), nn.dense(%h, %u)), %b)
  };
  let %i = sigmoid(%gate(%wi, %ui, %bi));
  let %f = sigmoid(%gate(%wf, %uf, %bf));
  let %o = sigmoid(%gate(%wo, %uo, %bo));
  let %g = tanh(%gate(%wg, %ug, %bg));
  let %c2 = add(multiply(%f, %c), multiply(%i, %g));
  let %h2 = multiply(%o, tanh(%c2));
  add(sum(%h2), sum(%c2))
}
"""


def size(e: Expr) -> int:
    """AST nodes of ``e`` (shared nodes counted once)."""
    return len(post_order(e))


def inputs(f: Any, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for p in f.params:
        shape = tuple(int(d) for d in p.type_annotation.shape)
        scale = 1.0 / np.sqrt(shape[-1]) if len(shape) == 2 and shape[0] > 1 else 0.5
        out.append((rng.standard_normal(shape) * scale).astype(np.float32))
    return out


def timed(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def runner(fn: Expr, xs: list[np.ndarray]) -> Callable[[], Any]:
    """Evaluation of ``fn`` on ``xs`` as ``@main`` of a module: type-checked once here; the
    returned runs skip the checker (and the module is linked with the prelude once)."""
    mod = IRModule.from_expr(fn)
    evaluate(mod, *xs)
    return lambda: evaluate(mod, *xs, check=False)


def partial_evaluator() -> Callable[[Expr], Expr] | None:
    try:
        from pe import partial_evaluate  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return partial_evaluate  # type: ignore[no-any-return,unused-ignore]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--pe", dest="pe", action="store_true", default=None,
                       help="require the partial evaluator column")
    group.add_argument("--no-pe", dest="pe", action="store_false")
    args = parser.parse_args(argv)
    pe = partial_evaluator() if args.pe is not False else None
    if args.pe and pe is None:
        print("error: --pe given but pe.partial_evaluate is not importable", file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    header = (f"{'workload':8} {'fwd s':>8} {'grad s':>8} {'ratio':>6} {'size f':>7} "
              f"{'size grad':>9}")
    if pe is not None:
        header += f" {'size PE+DCE':>11} {'PE grad s':>9} {'PE ratio':>8}"
    print(header)
    for name, text in (("mlp", MLP), ("lstm", LSTM)):
        f = parse_expr(text)
        xs = inputs(f, rng)
        g = ad.grad(f)
        fwd = timed(runner(f, xs), args.repeat)
        bwd = timed(runner(g, xs), args.repeat)
        row = (f"{name:8} {fwd:8.4f} {bwd:8.4f} {bwd / fwd:6.2f} {size(f):7d} "
               f"{size(g):9d}")
        if pe is not None:
            gp = pe(g)
            pe_time = timed(runner(gp, xs), args.repeat)
            row += f" {size(gp):11d} {pe_time:9.4f} {pe_time / fwd:8.2f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
