"""``relay opt FILE [-O0..-O3 | --pass NAME ...] [--time] [--no-check]``: transform and print.

With ``-O<n>`` the standard pipeline of that level runs (``passes.optimize``; ``-O3`` when
neither ``-O`` nor ``--pass`` is given, the level ``relay build`` uses too);
with one or more ``--pass NAME`` exactly those passes run, in order (TVM's
names and ours are both accepted). Types are re-checked after every pass
unless ``--no-check``. ``--time`` prints a per-pass table (wall time, program
size before and after) on standard error, so the program on standard output
stays parseable. ``relay opt --list`` lists the passes (no file needed).
"""

from __future__ import annotations

import argparse
import sys

DEFAULT_LEVEL = 3
"""The optimization level without ``-O``: the same as ``relay build``'s."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("opt", help="run optimization passes and print the result")
    p.add_argument("file", nargs="?", default=None,
                   help="a .relay file ('-' for standard input); not needed with --list")
    for level in range(4):
        p.add_argument(f"-O{level}", dest="opt_level", action="store_const", const=level,
                       help=f"the standard pipeline at level {level}" + (
                           " (default)" if level == DEFAULT_LEVEL else ""))
    p.add_argument("--pass", dest="passes", action="append", metavar="NAME", default=None,
                   help="run this pass (repeatable; replaces -O)")
    p.add_argument("--time", action="store_true", help="print a per-pass timing table")
    p.add_argument("--no-check", action="store_true",
                   help="do not re-check types between passes")
    p.add_argument("--list", action="store_true", help="list the passes and exit")
    p.set_defaults(func=run, opt_level=None)


def run(args: argparse.Namespace) -> int:
    import passes
    from relay.cli import read_source
    from semantics import RelayError, parse, pretty

    if args.list:
        for p in passes.list_passes():
            level = "-" if p.opt_level is None else f"O{p.opt_level}"
            print(f"{p.func_name:28} {p.name:26} {level:4} {p.doc}")
        return 0
    if args.file is None:
        print("relay opt: error: the following arguments are required: file", file=sys.stderr)
        return 2
    if args.passes and args.opt_level is not None:
        print("relay opt: error: use either -O<n> or --pass, not both", file=sys.stderr)
        return 2
    records: list[passes.PassRecord] = []
    chosen = []
    for name in args.passes or ():
        try:
            chosen.append(passes.get_pass(name))
        except RelayError as err:
            print(f"relay opt: error: {err.message}", file=sys.stderr)
            return 2
    mod = parse(read_source(args.file), source_name=args.file)
    check = not args.no_check
    if chosen:
        out = passes.Sequential(chosen, check=check, on_pass=records.append)(mod)
    else:
        level = DEFAULT_LEVEL if args.opt_level is None else args.opt_level
        out = passes.optimize(mod, level, check=check, on_pass=records.append)
    text = pretty(out)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if args.time:
        _print_times(records)
    return 0


def _print_times(records: list) -> None:
    total = sum(r.seconds for r in records)
    lines = [f"{'pass':28} {'ms':>9} {'nodes before':>13} {'nodes after':>12}"]
    for r in records:
        lines.append(f"{r.name:28} {r.seconds * 1e3:9.2f} {r.size_before:13} {r.size_after:12}")
    lines.append(f"{'total':28} {total * 1e3:9.2f}")
    print("\n".join(lines), file=sys.stderr)
