"""Text-format throughput: lexing, parsing and printing large programs.

Builds programs of N bindings (half graph bindings ``%k = op(...)``, half let
bindings ``let %yk: T = op(...)``, with TVM-style ``/* ty=... */`` comments),
plus a deeply nested expression and a 60-doubling DAG, then reports the
median of ``--repeat`` runs of each phase and the throughput in lines and
tokens per second. Printing uses :func:`semantics.printer.pretty` when that
module is available (and the round trip parse(pretty(p)) is timed too).

Usage: ``python bench/parse.py [--sizes 1000,20000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semantics.lexer import tokenize  # noqa: E402
from semantics.parser import parse, parse_expr  # noqa: E402

OPS = ("add", "multiply", "subtract", "maximum")


def binding_program(n: int) -> str:
    """``def @main`` with ``n`` bindings: graph bindings first, then a let chain."""
    ty = "Tensor[(16, 16), float32]"
    lines = ["#[version = \"0.0.5\"]",
             f"def @main(%x: {ty}, %w: {ty}) -> {ty} {{",
             f"  %0 = add(%x, %w) /* ty={ty} */;"]
    graph = n // 2
    for k in range(1, graph):
        op = OPS[k % len(OPS)]
        rhs = f"%{k - 1}, %{k // 2}" if k % 3 else f"%{k - 1}, 0.5f /* ty=float32 */"
        lines.append(f"  %{k} = {op}({rhs}) /* ty={ty} */;")
    lines.append(f"  let %y0: {ty} = %{graph - 1};")
    for k in range(1, n - graph):
        op = OPS[k % len(OPS)]
        lines.append(f"  let %y{k}: {ty} = {op}(%y{k - 1}, %x);")
    lines.append(f"  %y{n - graph - 1}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def nested_expression(depth: int) -> str:
    return "negative(" * depth + "%x" + ")" * depth


def doubling_chain(n: int) -> str:
    lines = ["%0 = add(%x, %x);"] + [f"%{i} = add(%{i - 1}, %{i - 1});" for i in range(1, n)]
    return "\n".join(lines) + f"\n%{n - 1}"


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` runs and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def cpu_timed(fn: Callable[[], object], repeat: int) -> float:
    """Minimum CPU time of ``repeat`` runs (robust on a shared, loaded machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,20000", help="comma-separated binding counts")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    pretty = None
    if importlib.util.find_spec("semantics.printer") is not None:
        from semantics.printer import pretty

    header = (f"{'program':<24}{'lines':>8}{'tokens':>9}{'lex s':>8}{'parse s':>9}"
              f"{'cpu s':>8}{'lines/s':>10}{'tokens/s':>11}{'print s':>9}{'reparse s':>11}")
    print(header)
    print("-" * len(header))
    cases: list[tuple[str, str, Callable[[str], object]]] = []
    for n in sizes:
        cases.append((f"bindings n={n}", binding_program(n), parse))
    cases.append(("nested calls d=5000", nested_expression(5000), parse_expr))
    cases.append(("60 doublings (DAG)", doubling_chain(60), parse_expr))
    for name, text, parser in cases:
        lines = text.count("\n") + 1
        lex_time, toks = timed(lambda t=text: tokenize(t), args.repeat)
        n_tokens = len(toks.kinds) - 4  # type: ignore[attr-defined]
        parse_time, program = timed(lambda t=text, p=parser: p(t), args.repeat)
        cpu_time = cpu_timed(lambda t=text, p=parser: p(t), args.repeat)
        print_col = reparse_col = "-"
        if pretty is not None:
            print_time, printed = timed(lambda p=program: pretty(p), args.repeat)
            reparse_time, _ = timed(lambda s=printed, p=parser: p(s), args.repeat)
            print_col, reparse_col = f"{print_time:.3f}", f"{reparse_time:.3f}"
        print(f"{name:<24}{lines:>8}{n_tokens:>9}{lex_time:>8.3f}{parse_time:>9.3f}"
              f"{cpu_time:>8.3f}{lines / cpu_time:>10,.0f}{n_tokens / cpu_time:>11,.0f}"
              f"{print_col:>9}{reparse_col:>11}")
    print(f"\n(parse s: median wall time of {args.repeat} runs, lexing included; cpu s: "
          "minimum CPU time, on which lines/s and tokens/s are based)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
