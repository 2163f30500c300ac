"""Issue #33 item 9: a residual holding a nullary constructor survives print/parse.

The parser reads ``None`` as the call ``None()`` (TVM's convention); the partial evaluator
used to leave the bare ``Constructor`` node in its residual, which prints the same text, so
the residual parsed back was not alpha-equal to itself.
"""

from __future__ import annotations

import pytest

import typechecker
from interpreter import evaluate
from pe import partial_evaluate
from semantics import alpha_equal, parse, pretty

PROGRAMS = [
    "def @main(%x: bool) -> Option[int32] { None }",
    "def @main(%x: bool) { if (%x) { None } else { Some(1) } }",
    "type T { A, B(int32), }\ndef @main(%x: bool) -> T { if (%x) { A } else { B(1) } }",
    "type T { A, B(int32), }\ndef @main(%x: bool) { (A, %x) }",
    "def @main(%x: bool) { Some(if (%x) { Nil } else { Cons(1, Nil) }) }",
]


@pytest.mark.parametrize("src", PROGRAMS)
def test_pe_residual_with_a_nullary_constructor_round_trips(src):
    out = partial_evaluate(parse(src))
    again = parse(pretty(out))
    assert alpha_equal(out, again)
    typechecker.check(again)
    for flag in (True, False):
        assert repr(evaluate(out, flag)) == repr(evaluate(again, flag)) \
            == repr(evaluate(parse(src), flag))
