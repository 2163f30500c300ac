"""Golden programs: ``tests/interpreter/programs/*.relay`` with their expectations inline.

Each file is a module whose comments say what running it must give:

* ``// expect: TEXT`` — the result, printed by ``interpreter.values.value_str``;
* ``// error: Kind: message prefix`` — the error class (``RelayRuntimeError``,
  ``RelayTypeError``, ``ParseError``) and the start of its message;
* optional ``// args: [JSON, ...]`` (converted as ``relay run`` converts its
  arguments), ``// entry: NAME``, ``// check: off``, ``// fuel: N``,
  ``// max_depth: N``.

The collector also round-trips every file through the printer: the
re-parsed program must be alpha-equal and give the same outcome.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from interp_util import GOLDEN_FILES as FILES
from interp_util import directives, golden_call

from interpreter import evaluate
from interpreter.values import value_str
from semantics import RelayError, alpha_equal, parse, pretty


def outcome(mod, spec: dict[str, str]) -> tuple[str, str]:
    """("value", text) or ("error", "Kind: message") of running ``mod`` as ``spec`` says."""
    args, kwargs = golden_call(spec)
    try:
        return "value", value_str(evaluate(mod, *args, **kwargs))
    except RelayError as err:
        return "error", f"{type(err).__name__}: {err.message}"


def test_there_are_enough_golden_programs():
    assert len(FILES) >= 25


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_program(path: Path):
    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    assert ("expect" in spec) != ("error" in spec), "exactly one of expect / error"
    mod = parse(text, source_name=path.name)
    kind, got = outcome(mod, spec)
    if "expect" in spec:
        assert (kind, got) == ("value", spec["expect"])
    else:
        assert kind == "error", f"expected an error, got the value {got}"
        assert got.startswith(spec["error"]), got
    # Round trip through the printer: same program, same outcome.
    again = parse(pretty(mod), source_name=path.name)
    assert alpha_equal(mod, again)
    assert outcome(again, spec) == (kind, got)
