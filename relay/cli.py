"""The ``relay`` command line (ARCHITECTURE.md §7).

Each sub-command lives in ``relay/commands/<name>.py`` and exposes
``register(subparsers)`` (adds its parser, with ``func`` set to a callable
``(args) -> int``). A sub-command appears only once its module exists, so a
command that does not work yet does not exist.

User errors (``RelayError``) print their message and exit 1; usage errors
exit 2 (argparse's convention); no traceback is shown for either.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

COMMANDS = ("run", "check", "fmt", "opt", "grad", "pe", "ops", "conformance")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relay", description="Relay IR reference implementation")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module_name = f"relay.commands.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from semantics.errors import RelayError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RelayError as err:
        print(str(err), file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush
        return 0
    except OSError as err:
        print(f"error: {err.strerror or err}: {getattr(err, 'filename', '')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
