"""``relay fmt FILE [-i]``: parse a module and print it in canonical form."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fmt", help="print a Relay file in canonical form")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("-i", "--in-place", action="store_true", help="rewrite the file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from relay.cli import read_source
    from semantics import parse, pretty

    text = read_source(args.file)
    mod = parse(text, source_name=args.file)
    out = pretty(mod)
    if not out.endswith("\n"):
        out += "\n"
    if args.in_place and args.file != "-":
        with open(args.file, "w", encoding="utf-8") as f:
            f.write(out)
    else:
        sys.stdout.write(out)
    return 0
