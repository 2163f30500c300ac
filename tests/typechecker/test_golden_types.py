"""Type-checker goldens: ``tests/typechecker/cases/*.relay`` with the verdict inline.

Each file is a module with exactly one of

* ``// expect-type: TYPE`` — the printed type (scheme) of the entry global (``@main``
  unless ``// entry: NAME``), as ``relay check`` prints it;
* ``// error: Kind: message prefix`` — the checker (or, for names that resolve at parse
  time, the parser) rejects the module with that error class and message start; the
  error carries a span inside the file.

Every file is also round-tripped through the printer: the re-parsed module gets the same
verdict. Files are read and compared through ``tests/golden.py``; ``pytest
--update-golden`` rewrites a disagreeing expectation with the actual verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import check_directive, directives, files

from semantics import RelayError, RelayTypeError, parse, pretty
from typechecker.api import global_types

CASES, IDS = files(Path(__file__).with_name("cases"))


def verdict(text: str, name: str, entry: str) -> tuple[str, str, RelayError | None]:
    """("type", printed type, None) or ("error", "Kind: message", the error)."""
    try:
        mod = parse(text, source_name=name)
        types = global_types(mod)
    except RelayError as err:
        return "error", f"{type(err).__name__}: {err.message}", err
    return "type", pretty(types[entry]), None


def test_there_are_enough_cases():
    assert len(CASES) >= 25
    kinds = [("error" in directives(p.read_text(encoding="utf-8"))) for p in CASES]
    assert sum(kinds) >= 10 and len(kinds) - sum(kinds) >= 10


@pytest.mark.parametrize("path", CASES, ids=IDS)
def test_type_checker_golden(path: Path):
    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    assert ("expect-type" in spec) != ("error" in spec), "exactly one of expect-type / error"
    entry = spec.get("entry", "main").lstrip("@")
    kind, got, err = verdict(text, path.name, entry)
    if kind == "type":
        check_directive(path, "expect-type", got, drop=("error",))
    else:
        check_directive(path, "error", got, prefix=True, drop=("expect-type",))
        assert err is not None and err.span is not None, f"{got}: no source span"
        assert err.span.source == path.name and 1 <= err.span.line <= text.count("\n") + 1


@pytest.mark.parametrize("path", [p for p in CASES if not directives(
    p.read_text(encoding="utf-8")).get("error", "").startswith("ParseError")],
    ids=[i for p, i in zip(CASES, IDS) if not directives(
        p.read_text(encoding="utf-8")).get("error", "").startswith("ParseError")])
def test_type_checker_golden_round_trips(path: Path):
    text = path.read_text(encoding="utf-8")
    entry = directives(text).get("entry", "main").lstrip("@")
    mod = parse(text, source_name=path.name)
    again = pretty(mod)
    first = verdict(text, path.name, entry)[:2]
    second = verdict(again, path.name, entry)[:2]
    if first[0] == "error":
        assert second[0] == "error" and second[1].split(":")[0] == first[1].split(":")[0]
        assert isinstance(first[1], str) and RelayTypeError.__name__ in first[1]
    else:
        assert second == first
