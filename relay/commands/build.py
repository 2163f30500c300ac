"""``relay build FILE -o DIR [-O0..-O3] [--executor vm|graph|aot] [--params P.npz]`` and the
TVM side of ``relay run FILE --backend tvm [--params P.npz]`` (ARCHITECTURE.md §7).

``relay build`` compiles a program with ``backends.tvm.build`` (optimization at the
chosen level, fusion, one kernel per fused group — the numpy fallback where a group does
not lower) and saves the build to ``DIR`` (``Executable.save``: the fused program, the
kernels, and for ``--executor aot`` the generated Python module); it prints one summary
line. ``relay run --backend tvm`` builds in memory (the VM executor) and runs the entry
on the arguments, printing the result as the interpreter's ``relay run`` does.
``--params`` names a ``.npz`` archive of ``main``'s weights by parameter name.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="compile a Relay program with the TVM backend")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the directory to write the build to")
    for level in range(4):
        p.add_argument(f"-O{level}", dest="opt_level", action="store_const", const=level,
                       help=f"optimization level {level}" + (" (default)" if level == 3 else ""))
    p.add_argument("--executor", choices=("vm", "graph", "aot"), default="vm",
                   help="vm: the whole language; graph: first-order dataflow with memory "
                        "planning; aot: a generated Python module (default: vm)")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (bound as constants)")
    p.set_defaults(func=build_command, opt_level=3)


def load_params(path: str | None) -> dict[str, np.ndarray] | None:
    """The arrays of a ``.npz`` archive by name (None without a path).

    Raises:
        RelayRuntimeError: the file is not a readable ``.npz`` archive.
    """
    from semantics.errors import RelayRuntimeError

    if path is None:
        return None
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise ValueError("not an .npz archive (a single .npy array)")
            return {name: np.array(archive[name]) for name in archive.files}
    except (OSError, ValueError, AttributeError, EOFError, zipfile.BadZipFile, KeyError,
            TypeError) as exc:
        # an empty file is EOFError, a truncated archive BadZipFile (or OSError/ValueError)
        reason = str(exc) or type(exc).__name__
        raise RelayRuntimeError(f"--params: cannot read {path}: {reason}") from None


def build_command(args: argparse.Namespace) -> int:
    from backends.tvm import build
    from relay.cli import read_source
    from semantics.parser import parse

    mod = parse(read_source(args.file), source_name=args.file)
    exe = build(mod, params=load_params(args.params), opt_level=args.opt_level,
                executor=args.executor)
    exe.save(args.output)
    print(f"built {args.output}: executor {exe.executor}, -O{exe.opt_level}, "
          f"{exe.kernels.compiled} compiled kernels, {len(exe.fallbacks)} numpy fallbacks")
    return 0


def run_tvm(mod: Any, values: list[Any], entry: str, params_path: str | None) -> Any:
    """``relay run --backend tvm``: build ``mod`` (VM executor) and run ``entry``."""
    from backends.tvm import build

    exe = build(mod, params=load_params(params_path), executor="vm")
    return exe.run(entry, *values)
