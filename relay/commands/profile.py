"""``relay profile FILE|DIR [ARG ...] [--params P.npz] [-O0..-O3] [--repeat N]``: time each kernel.

Builds the program with the TVM backend's graph executor (``backends.tvm.build(...,
executor="graph")``; a directory saved by ``relay build --executor graph -o DIR`` is loaded
instead) and runs ``main`` once on the arguments with every kernel call timed
(``Executable.profile``: one warm-up call and ``--repeat`` timed calls per kernel, on its
real inputs; the median is reported). Prints one row per kernel call in evaluation order —
its index, the kernel, its operators, its output shapes, the median time, its share of the
total and, for convolutions and dense products, GFLOP/s — then the total. Arguments are
given as for ``relay run`` (``.npy`` files or JSON literals).
"""

from __future__ import annotations

import argparse
import os
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="time each kernel of a program built with the TVM "
                                       "backend (graph executor)")
    p.add_argument("file", help="a .relay file ('-' for standard input), or a directory "
                                "written by `relay build --executor graph -o DIR`")
    p.add_argument("args", nargs="*", metavar="ARG",
                   help="main's arguments: .npy files or JSON literals (as for relay run)")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (bound as constants)")
    for level in range(4):
        p.add_argument(f"-O{level}", dest="opt_level", action="store_const", const=level,
                       help=f"optimization level {level}" + (" (default)" if level == 3 else ""))
    p.add_argument("--repeat", type=positive_int, default=10, metavar="N",
                   help="timed calls per kernel (the median is reported; default 10)")
    p.set_defaults(func=profile_command, opt_level=3)


def positive_int(text: str) -> int:
    """An argparse type: a positive integer (``relay profile --repeat``, ``relay tune``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def profile_command(args: argparse.Namespace) -> int:
    from backends.tvm import build, load
    from relay.cli import read_source
    from relay.commands.build import ProgressBar, load_params
    from relay.commands.run import _argument
    from semantics.errors import RelayRuntimeError
    from semantics.parser import parse

    if args.file != "-" and os.path.isdir(args.file):
        if args.params is not None:
            raise RelayRuntimeError("--params: a saved build has its parameters bound already")
        exe = load(args.file)
        if exe.executor != "graph":
            raise RelayRuntimeError(
                f"relay profile: {args.file} was built for the {exe.executor} executor; profile "
                f"a graph build (relay build --executor graph) or the .relay file itself")
    else:
        mod = parse(read_source(args.file), source_name=args.file)
        with ProgressBar("compiling kernels") as progress:
            exe = build(mod, params=load_params(args.params), opt_level=args.opt_level,
                        executor="graph", progress=progress)
    values = [_argument(i, a) for i, a in enumerate(args.args, start=1)]
    rows = exe.profile(*values, repeat=args.repeat)
    print(profile_table(rows))
    return 0


def profile_table(rows: list[Any]) -> str:
    """The per-kernel table of ``Executable.profile``'s rows, with a total line."""
    total = sum(r.seconds for r in rows)
    lines = [f"{'#':>4}  {'kernel':29} {'operators':40} {'output shape':18} {'ms':>9} "
             f"{'%':>6} {'GFLOP/s':>8}"]
    for r in rows:
        ops = "+".join(r.ops)
        ops = ops if len(ops) <= 40 else ops[:39] + "…"
        shape = ", ".join("x".join(str(d) for d in s) for s in r.shapes)
        shape = shape if len(shape) <= 18 else shape[:17] + "…"
        share = 100 * r.seconds / total if total > 0 else 0.0
        gflops = f"{r.gflops:8.1f}" if r.flops else f"{'':8}"
        lines.append(f"{r.step:4}  {r.kernel[:29]:29} {ops:40} {shape:18} "
                     f"{r.seconds * 1e3:9.3f} {share:6.1f} {gflops}")
    lines.append(f"{'':4}  {'total (' + str(len(rows)) + ' kernel calls)':29} {'':40} {'':18} "
                 f"{total * 1e3:9.3f} {100.0 if rows else 0.0:6.1f}")
    return "\n".join(lines)
