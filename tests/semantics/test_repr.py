"""``repr`` of expressions, patterns and types: a depth-capped sketch, never the printer.

The syntax layer imports nothing textual (docs/architecture.md#layers): ``repr`` of a
20,000-deep program costs as much as ``repr`` of a small one and shows its first levels.
"""

from __future__ import annotations

import time

import pytest

import semantics.printer
import semantics.printing.types
from semantics import parse_expr, parse_type
from semantics.expr import SUMMARY_WIDTH, Let, Var, const


@pytest.fixture
def no_printer(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("repr used the printer")

    monkeypatch.setattr(semantics.printer, "pretty", refuse)
    monkeypatch.setattr(semantics.printing.types, "type_summary", refuse)


def test_repr_sketches_the_first_levels(no_printer):
    e = parse_expr("let %x = 1; let %y = (%x, 2f, 3i64, True, 5, 6); %y.1")
    assert repr(e) == "<Let let %x = 1; let %y = (%x, 2.0, 3:int64, True, …2 more); %y.1>"
    m = parse_expr("match? (Cons(1, Nil)) { Cons(%h, _) => %h }")
    assert repr(m) == "<Match match? (Cons(1, Nil())) { 1 clause(s) }>"
    assert repr(m.clauses[0].lhs) == "<PatternConstructor Cons(%h, _)>"
    f = parse_expr("fn (%r: Ref[float32]) { %r := !%r * 2f; grad(fn (%z: float32) { %z }) }")
    assert repr(f).startswith("<Function fn (%r) { ")


def test_repr_of_types(no_printer):
    t = parse_type("fn [A](Tensor[(n, 3), float32], (int32,), Ref[List[A]]) -> (A, A, A, A, A)")
    assert repr(t) == ("<FuncType fn [A](Tensor[(n, 3), float32], (int32,), Ref[List[A]]) -> "
                       "(A, A, A, A, …1 more)>")
    assert repr(parse_type("float32")) == "<TensorType float32>"


def test_repr_of_a_deep_program_is_short_and_cheap(no_printer):
    body = Var("x")
    for i in range(20_000):
        body = Let(Var(f"x{i}"), const(i), body)
    start = time.perf_counter()
    text = repr(body)
    assert time.perf_counter() - start < 0.05
    assert text.startswith("<Let let %x19999 = 19999; let %x19998 = 19998; ")
    assert len(text) <= SUMMARY_WIDTH + 20 and "…" in text
