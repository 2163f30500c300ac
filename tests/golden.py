"""The one golden-file helper: inline expectations in ``.relay`` files, and ``--update-golden``.

Every golden suite reads its files through here (``tests/interpreter/test_golden.py``,
``tests/passes/test_pass_goldens.py``, ``tests/typechecker/test_golden_types.py``, and the
suites that re-run the interpreter's programs elsewhere):

* :func:`directives` — the ``// key: value`` lines of a golden program (``expect``,
  ``error``, ``expect-type``, ``args``, ``entry``, ``check``, ``fuel``, ``max_depth``);
* :func:`files` — a suite's golden files with their pytest ids;
* :func:`check_directive` — compare what a run gave with the file's inline expectation;
  under ``pytest --update-golden`` rewrite that line with what it gave instead;
* :func:`check_text` — the same for a whole expected file (a pass golden's
  ``.out.relay``).

``--update-golden`` is declared in ``tests/conftest.py``; a rewritten file is reported by
the test failing with "golden updated" (so a run that updates is never mistaken for a
green run: run again to confirm).

Expectations that are message *prefixes* (``// error: Kind: start of the message``) match
when the actual text starts with them; an update writes the full first line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

KEYS = ("expect", "error", "expect-type", "args", "entry", "check", "fuel", "max_depth")

_UPDATE = {"on": False}


def set_update(on: bool) -> None:
    """Called by ``tests/conftest.py`` with the value of ``--update-golden``."""
    _UPDATE["on"] = on


def updating() -> bool:
    return _UPDATE["on"]


def directives(text: str, keys: Iterable[str] = KEYS) -> dict[str, str]:
    """The ``// key: value`` expectations of a golden program (the first of each key)."""
    wanted = set(keys)
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("//"):
            continue
        key, sep, value = line[2:].strip().partition(":")
        key = key.strip()
        if sep and key in wanted and key not in found:
            found[key] = value.strip()
    return found


def files(folder: Path, pattern: str = "*.relay") -> tuple[list[Path], list[str]]:
    """The golden files of a suite, sorted, and their ids (names without ``.relay``)."""
    paths = sorted(folder.glob(pattern))
    ids = [p.relative_to(folder).as_posix().removesuffix(".relay") for p in paths]
    return paths, ids


def _rewrite_directive(path: Path, key: str, value: str) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"^(\s*//\s*){re.escape(key)}\s*:.*$", re.MULTILINE)
    line = value.splitlines()[0] if value else value
    if pattern.search(text):
        text = pattern.sub(lambda m: f"{m.group(1)}{key}: {line}", text, count=1)
    else:
        text = f"// {key}: {line}\n{text}"
    path.write_text(text, encoding="utf-8")


def check_directive(path: Path, key: str, got: str, *, prefix: bool = False,
                    drop: Iterable[str] = ()) -> None:
    """Assert that ``got`` is what the file's ``// key:`` line expects.

    Args:
        path: the golden file.
        key: the directive holding the expectation.
        got: what the run gave.
        prefix: the expectation is a prefix of ``got`` (error messages).
        drop: directives that contradict ``key`` (``expect`` when an error was given):
            an update removes them.
    Raises:
        AssertionError: on a mismatch, or after rewriting the file under
            ``--update-golden`` (with "golden updated").
    """
    spec = directives(path.read_text(encoding="utf-8"))
    expected = spec.get(key)
    first = got.splitlines()[0] if got else got
    ok = expected is not None and (first.startswith(expected) if prefix else first == expected)
    if ok:
        return
    if updating():
        for other in drop:
            text = path.read_text(encoding="utf-8")
            text = re.sub(rf"^\s*//\s*{re.escape(other)}\s*:.*\n", "", text,
                          flags=re.MULTILINE)
            path.write_text(text, encoding="utf-8")
        _rewrite_directive(path, key, got)
        pytest.fail(f"golden updated: {path.name}: // {key}: {first}")
    raise AssertionError(f"{path.name}: // {key}: expected {expected!r}, got {first!r}")


def check_text(path: Path, got: str, equal: bool, shown: str) -> None:
    """Assert that a whole expected file agrees (``equal``, decided by the caller, e.g.
    with ``alpha_equal``); under ``--update-golden`` write ``got`` into it instead.

    Args:
        path: the expected file (e.g. a pass golden's ``.out.relay``).
        got: the text to write on update (the printed actual program).
        equal: whether the actual result agrees with the file.
        shown: the actual result as printed in the failure message.
    """
    if equal:
        return
    if updating():
        path.write_text(got if got.endswith("\n") else got + "\n", encoding="utf-8")
        pytest.fail(f"golden updated: {path.name}")
    raise AssertionError(f"got:\n{shown}\nexpected ({path.name}):\n"
                         f"{path.read_text(encoding='utf-8')}")
