"""The size budget ``make lint`` enforces: modules of at most 800 lines, functions of at most 80.

Usage: ``python tools/size_budget.py [ROOT] [--exceptions FILE] [--ratchet]``.

Measured: every ``*.py`` file below ``ROOT`` (default: the repository holding this
script) except under hidden folders, ``.venv``, ``build`` and ``__pycache__``; a module's
size is its number of lines, a function's is ``end_lineno - lineno + 1`` of its ``def``
(decorators excluded; nested functions are measured on their own too, and also count
inside the function that holds them).

The exceptions (``tools/size_budget_exceptions.txt``) are the files and functions that
were over budget when the budget was introduced, each with its size then, one a line::

    backends/tvm/exec/vm.py::VM._run 136

A function is named by its path and qualified name (``Class.method``,
``outer.inner``), so moving it within its file keeps its entry. Exceptions may only
shrink:

* a module or function over budget that is not listed fails the check;
* a listed one that has grown beyond its recorded size fails the check;
* a listed one that has shrunk (or is gone, or back within budget) is reported as a note;
  ``--ratchet`` rewrites the file with the smaller sizes and drops the entries no
  longer needed, so the next growth is caught from the new size.

Exit status: 0 within budget, 1 over budget (each violation on its own line, as
``path:line: message``), 2 on a malformed exceptions file.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

MODULE_LIMIT = 800
FUNCTION_LIMIT = 80
SKIP_DIRS = {".venv", "build", "__pycache__", "node_modules"}
HERE = Path(__file__).resolve().parent


def python_files(root: Path) -> list[Path]:
    """The measured files below ``root``, sorted."""
    out = []
    for p in root.rglob("*.py"):
        parts = p.relative_to(root).parts
        if any(part.startswith(".") or part in SKIP_DIRS for part in parts[:-1]):
            continue
        out.append(p)
    return sorted(out)


def function_sizes(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Qualified name -> (line, size) of every function (the largest of same-named ones)."""
    out: dict[str, tuple[int, int]] = {}
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    size = (child.end_lineno or child.lineno) - child.lineno + 1
                    if size > out.get(name, (0, 0))[1]:
                        out[name] = (child.lineno, size)
                stack.append((child, name + "."))
            else:
                stack.append((child, prefix))
    return out


def measure(root: Path) -> dict[str, tuple[str, int]]:
    """Every module and function over budget: key -> (location, size)."""
    over: dict[str, tuple[str, int]] = {}
    for path in python_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LIMIT:
            over[rel] = (f"{rel}:1", lines)
        for name, (line, size) in function_sizes(ast.parse(text, filename=rel)).items():
            if size > FUNCTION_LIMIT:
                over[f"{rel}::{name}"] = (f"{rel}:{line}", size)
    return over


def read_exceptions(path: Path) -> dict[str, int]:
    """The recorded exceptions: key -> size. Raises ValueError on a malformed line."""
    out: dict[str, int] = {}
    if not path.exists():
        return out
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, size = line.rpartition(" ")
        if not key or not size.isdigit():
            raise ValueError(f"{path}:{number}: expected 'PATH[::FUNCTION] LINES', got {raw!r}")
        out[key.strip()] = int(size)
    return out


def write_exceptions(path: Path, entries: dict[str, int]) -> None:
    header = [
        "# Modules over 800 lines and functions over 80 lines when tools/size_budget.py was",
        "# introduced, with their sizes then. They may only shrink (make lint fails if one",
        "# grows); `python tools/size_budget.py --ratchet` records a shrink.",
    ]
    body = [f"{key} {size}" for key, size in sorted(entries.items())]
    path.write_text("\n".join(header + body) + "\n", encoding="utf-8")


def check(root: Path, exceptions: dict[str, int]) -> tuple[list[str], list[str], dict[str, int]]:
    """(violations, notes, the tightened exceptions)."""
    over = measure(root)
    violations, notes = [], []
    tightened: dict[str, int] = {}
    for key, (where, size) in sorted(over.items()):
        kind, limit = ("function", FUNCTION_LIMIT) if "::" in key else ("module", MODULE_LIMIT)
        label = key.split("::", 1)[1] if "::" in key else key
        allowed = exceptions.get(key)
        if allowed is None:
            violations.append(f"{where}: {kind} {label} has {size} lines (budget {limit}); "
                              "split it")
        elif size > allowed:
            violations.append(f"{where}: {kind} {label} grew to {size} lines (its exception "
                              f"in tools/size_budget_exceptions.txt is {allowed}); "
                              "exceptions may only shrink")
        else:
            tightened[key] = size
            if size < allowed:
                notes.append(f"{where}: {kind} {label} shrank to {size} lines (recorded "
                             f"{allowed}); run tools/size_budget.py --ratchet")
    for key in sorted(set(exceptions) - set(over)):
        notes.append(f"{key}: within budget now; run tools/size_budget.py --ratchet to drop "
                     "its exception")
    return violations, notes, tightened


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=HERE.parent)
    ap.add_argument("--exceptions", type=Path, default=HERE / "size_budget_exceptions.txt")
    ap.add_argument("--ratchet", action="store_true",
                    help="rewrite the exceptions with today's smaller sizes")
    args = ap.parse_args(argv)
    try:
        exceptions = read_exceptions(args.exceptions)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    violations, notes, tightened = check(args.root.resolve(), exceptions)
    for note in notes:
        print(f"note: {note}")
    for v in violations:
        print(v)
    if args.ratchet and not violations:
        write_exceptions(args.exceptions, tightened)
        print(f"{args.exceptions}: {len(tightened)} exceptions recorded")
    if violations:
        print(f"size budget: {len(violations)} violation(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
