"""``relay grad FILE [--entry NAME] [--mode forward]``: print the gradient program.

The output is a module whose ``@main`` is the gradient of the global ``NAME`` (default
``main``; Type-Gradient: ``fn(T1..Tn) -> (O, (T1..Tn))``), computed by :func:`ad.grad_module`;
in reverse mode the lifted globals it calls are printed beside it (``@g__rev``). It re-parses
and type-checks like any program.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("grad", help="print the gradient program of a global")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("--entry", default="main", metavar="NAME",
                   help="the global to differentiate (default: main)")
    p.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                   help="reverse mode (closures and references, default) or forward mode")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ad import grad_module
    from relay.cli import read_source
    from semantics import RelayTypeError, parse, pretty

    text = read_source(args.file)
    mod = parse(text, source_name=args.file)
    entry = args.entry.lstrip("@")
    if entry not in mod.functions:
        raise RelayTypeError(f"grad: the program has no global @{entry}")
    out = pretty(grad_module(mod, entry, args.mode))
    if not out.endswith("\n"):
        out += "\n"
    sys.stdout.write(out)
    return 0
