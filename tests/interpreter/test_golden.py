"""Golden programs: ``tests/interpreter/programs/*.relay`` with their expectations inline.

Each file is a module whose comments say what running it must give:

* ``// expect: TEXT`` — the result, printed by ``interpreter.values.value_str``;
* ``// error: Kind: message prefix`` — the error class (``RelayRuntimeError``,
  ``RelayTypeError``, ``ParseError``) and the start of its message;
* optional ``// args: [JSON, ...]`` (converted as ``relay run`` converts its
  arguments), ``// entry: NAME``, ``// check: off``, ``// fuel: N``,
  ``// max_depth: N``.

Files are read, and expectations compared (or rewritten under ``--update-golden``),
through the shared helper ``tests/golden.py``. The collector also round-trips every file
through the printer: the re-parsed program must be alpha-equal and give the same outcome.
Programs run type-checked unless they say ``// check: off``, and no golden is left out: an
ill-typed program must say so, by declaring the type error (``// error:
RelayTypeError: ...``) or by running unchecked (``// check: off``, which only
an ill-typed program may use); every other golden must type-check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import check_directive
from interp_util import GOLDEN_FILES as FILES
from interp_util import GOLDEN_IDS as IDS
from interp_util import directives, golden_call

from interpreter import evaluate
from interpreter.values import value_str
from semantics import RelayError, RelayTypeError, alpha_equal, parse, pretty
from typechecker.api import global_types


def outcome(mod, spec: dict[str, str]) -> tuple[str, str]:
    """("value", text) or ("error", "Kind: message") of running ``mod`` as ``spec`` says
    (type-checked first unless the program says ``// check: off``)."""
    args, kwargs = golden_call(spec)
    kwargs["check"] = spec.get("check", "on") != "off"
    try:
        return "value", value_str(evaluate(mod, *args, **kwargs))
    except RelayError as err:
        return "error", f"{type(err).__name__}: {err.message}"


def test_there_are_enough_golden_programs():
    assert len(FILES) >= 25


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_golden_program(path: Path):
    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    assert ("expect" in spec) != ("error" in spec), "exactly one of expect / error"
    mod = parse(text, source_name=path.name)
    kind, got = outcome(mod, spec)
    if kind == "value":
        check_directive(path, "expect", got, drop=("error",))
    else:
        check_directive(path, "error", got, prefix=True, drop=("expect",))
    # Round trip through the printer: same program, same outcome.
    again = parse(pretty(mod), source_name=path.name)
    assert alpha_equal(mod, again)
    assert outcome(again, spec) == (kind, got)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_golden_program_is_well_typed_unless_it_says_otherwise(path: Path):
    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    mod = parse(text, source_name=path.name)
    declares_type_error = spec.get("error", "").startswith("RelayTypeError")
    if declares_type_error or spec.get("check") == "off":
        with pytest.raises(RelayTypeError):
            global_types(mod)
    else:
        global_types(mod)
