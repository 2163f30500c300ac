"""Parse and type-check TVM's own Relay programs: the text programs of a TVM checkout's tests.

Usage::

    python tools/tvm_corpus.py /path/to/tvm/tests/python/relay [--list]

The corpus is every Python string constant under the given directory that carries the
text-format header ``#[version = "0.0.5"]`` (TVM's tests write their programs that way),
each distinct text once.  A text whose first definition is not ``def``/``type`` is an
expression (``parse_expr``), else a module (``parse``); then ``typechecker.check``.  A
program passes when both succeed.  Failures are grouped by reason:

* ``metadata from Python``: the text uses ``meta[...]`` and TVM's test hands the table to
  ``tvm.relay.parse`` from Python (no ``#[metadata]`` section in the text);
* ``device planning``: ``virtual_device`` annotations, ``on_device``, ``device_copy``
  (TVM's heterogeneous-device planning, which this implementation does not model);
* otherwise the first line of the error.

Only the standard library and this repository are used; the TVM checkout is read, never
imported.  ``docs/architecture.md`` (Text format) records the last measurement.
"""

from __future__ import annotations

import argparse
import ast
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HEADER = '#[version = "0.0.5"]'
METADATA = "metadata from Python"
DEVICES = "device planning"
_DEVICE_WORDS = ("virtual_device", "on_device", "device_copy")


@dataclass(frozen=True)
class Program:
    """One corpus program: its text and where it was first found (``file:line``)."""

    text: str
    where: str


@dataclass
class Result:
    """The outcome over the corpus: passed programs and failures by reason."""

    total: int = 0
    passed: int = 0
    failures: list[tuple[Program, str]] = field(default_factory=list)

    def by_reason(self) -> Counter[str]:
        return Counter(reason for _, reason in self.failures)

    def summary(self) -> str:
        lines = [f"{self.passed} of {self.total} TVM programs parse and type-check"]
        for reason, n in sorted(self.by_reason().items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:4d}  {reason}")
        return "\n".join(lines)


def collect(root: Path) -> list[Program]:
    """Every distinct header-carrying string constant of the ``*.py`` files under ``root``."""
    seen: dict[str, Program] = {}
    for path in sorted(root.rglob("*.py")):
        try:
            with warnings.catch_warnings():       # old escapes in the tests' strings
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    HEADER in node.value and node.value not in seen:
                where = f"{path.relative_to(root)}:{node.lineno}"
                seen[node.value] = Program(node.value, where)
    return list(seen.values())


def is_expression(text: str) -> bool:
    """Whether the program (after its header and comments) is an expression, not a module."""
    for line in text.split(HEADER, 1)[-1].splitlines():
        word = line.strip()
        if word and not word.startswith("//"):
            return not (word.startswith("def ") or word.startswith("type "))
    return False


def reason_of(text: str, error: Exception) -> str:
    """The failure's group (see the module docstring)."""
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "`meta[...]` is used but the text has no `#[metadata]` section" in message:
        return METADATA
    if any(w in text for w in _DEVICE_WORDS):
        return DEVICES
    return f"{type(error).__name__}: {message.split(': error: ', 1)[-1]}"


def check(program: Program) -> str | None:
    """None when the program parses and type-checks, else the reason it does not."""
    import typechecker
    from semantics.errors import RelayError
    from semantics.parser import parse, parse_expr

    try:
        if is_expression(program.text):
            typechecker.type_of(parse_expr(program.text, open_terms=False))
        else:
            typechecker.check(parse(program.text))
    except RelayError as err:
        return reason_of(program.text, err)
    return None


def run(root: Path) -> Result:
    """Check every program of the corpus under ``root``."""
    result = Result()
    for program in collect(root):
        result.total += 1
        reason = check(program)
        if reason is None:
            result.passed += 1
        else:
            result.failures.append((program, reason))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="a TVM checkout's tests/python/relay directory")
    ap.add_argument("--list", action="store_true", help="list every failure with its place")
    args = ap.parse_args(argv)
    if not args.root.is_dir():
        print(f"error: {args.root} is not a directory", file=sys.stderr)
        return 2
    result = run(args.root)
    print(result.summary())
    if args.list:
        for program, reason in result.failures:
            print(f"{program.where}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
