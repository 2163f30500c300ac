"""``relay check FILE``: type-check a module and print the type of every global it defines.

Output is one line per global, in definition order::

    @main: fn (Tensor[(1, 10), float32]) -> Tensor[(1, 20), float32]

Prelude definitions the file uses (merged in by the parser) are checked but
not listed unless ``--all`` is given. A type error prints the error (with
its source line and caret) and exits with status 1.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="type-check a Relay file and print each global's type")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("--all", action="store_true",
                   help="also list the prelude definitions the file uses")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from relay.cli import read_source
    from semantics import parse, pretty
    from typechecker.api import global_types

    text = read_source(args.file)
    mod = parse(text, source_name=args.file)
    types = global_types(mod)
    prelude_fns = _prelude_functions()
    for name, fn in mod.functions.items():
        if not args.all and prelude_fns.get(name) is fn:
            continue
        sys.stdout.write(f"@{name}: {pretty(types[name])}\n")
    return 0


def _prelude_functions() -> dict:
    try:
        from semantics.prelude import prelude_module
    except ImportError:
        return {}
    return dict(prelude_module().functions)
