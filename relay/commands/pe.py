"""``relay pe FILE [--no-dce] [--fuel N]``: partially evaluate a module and print it.

The module is type-checked first (a type error is reported like ``relay check``
does, exit 1), then every global is partially evaluated
(``pe.partial_evaluate``: static computations evaluated away, known closures
and globals unfolded, references with known contents read at compile time)
and, unless ``--no-dce``, dead code — references that never escape included —
is removed. The output is Relay text that re-parses and runs with ``relay run``.
"""

from __future__ import annotations

import argparse
import sys

from relay.commands.run import fuel_count


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pe", help="partially evaluate a Relay file and print the result")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("--no-dce", action="store_true",
                   help="keep the residual program as the partial evaluator leaves it")
    p.add_argument("--fuel", type=fuel_count, default=None, metavar="N",
                   help="node visits with unfolding allowed (the termination backstop)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pe import partial_evaluate
    from pe.evaluator import DEFAULT_FUEL
    from relay.cli import read_source
    from semantics import parse, pretty
    from typechecker import check

    mod = parse(read_source(args.file), source_name=args.file)
    check(mod)
    fuel = DEFAULT_FUEL if args.fuel is None else args.fuel
    out = partial_evaluate(mod, dce=not args.no_dce, fuel=fuel)
    text = pretty(out)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
