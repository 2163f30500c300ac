"""Checking stays linear in program size (issue 19).

``let %x{i+1} = fn () { %x{i} };`` used to take quadratic time: every binding's
generalization rescanned the whole type built so far; a chain of functions whose
relation constraints stay unsolved (``fn (%x) { add(%x, %x) }``) rescanned every pending
constraint per binding. Generalization works by levels (no environment scan), walks a
type only when it has something to quantify, and looks only at the constraints filed
deeper than the current level; the type walks are memoized and skip subterms already
known to be closed.

The 20,000-binding programs just have to finish (CI has a global timeout); the
linearity itself is asserted on a deterministic count — the number of type nodes the
type walks expand — never on a timing.
"""

from __future__ import annotations

import pytest

import semantics.type_visitor as tv
from semantics import parse_expr
from semantics.types import FuncType, TensorType
from typechecker import check, type_of


def _fn_chain(n: int) -> str:
    lines = ["let %x0 = fn () { 1 };"] + [f"let %x{i + 1} = fn () {{ %x{i} }};"
                                          for i in range(n)]
    return "\n".join(lines) + f"\n%x{n}"


def _poly_chain(n: int) -> str:
    # every binding is polymorphic in its own parameter
    lines = ["let %x0 = fn (%a) { %a };"] + [f"let %x{i + 1} = fn (%a) {{ %x{i}(%a) }};"
                                             for i in range(n)]
    return "\n".join(lines) + f"\n%x{n}(1)"


def _restricted_chain(n: int) -> str:
    # every function keeps an unsolved relation (monomorphism restriction) until its use
    defs = [f"let %f{i} = fn (%x) {{ add(%x, %x) }};" for i in range(n)]
    uses = [f"let %y{i} = %f{i}(1f);" for i in range(n)]
    return "\n".join(defs + uses) + "\n%y0"


def _ref_chain(n: int) -> str:
    lines = ["let %x0 = 1;"] + [f"let %x{i + 1} = ref(%x{i});" for i in range(n)]
    return "\n".join(lines) + f"\n%x{n}"


def _cons_chain(n: int) -> str:
    lines = ["let %x0 = 1;"] + [f"let %x{i + 1} = Cons(%x{i}, Nil);" for i in range(n)]
    return "\n".join(lines) + f"\n%x{n}"


def _expanded_nodes(monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    count = [0]
    original = tv.type_kids

    def counting(t, with_type_data=False):
        count[0] += 1
        return original(t, with_type_data)

    e = parse_expr(text)
    monkeypatch.setattr(tv, "type_kids", counting)
    try:
        check(e)
    finally:
        monkeypatch.setattr(tv, "type_kids", original)
    return count[0]


def test_twenty_thousand_function_bindings_check():
    t = type_of(parse_expr(_fn_chain(20_000)))
    depth = 0
    while type(t) is FuncType:
        assert not t.type_params and not t.arg_types
        t = t.ret_type
        depth += 1
    assert depth == 20_001 and type(t) is TensorType


def test_twenty_thousand_polymorphic_bindings_check():
    t = type_of(parse_expr(_poly_chain(20_000)))
    assert type(t) is TensorType and t.dtype == "int32"


def test_twenty_thousand_restricted_bindings_check():
    t = type_of(parse_expr(_restricted_chain(20_000)))
    assert type(t) is TensorType and t.dtype == "float32"


@pytest.mark.parametrize("program", [_fn_chain, _poly_chain, _restricted_chain, _ref_chain,
                                     _cons_chain])
def test_type_walks_grow_linearly(monkeypatch, program):
    small = _expanded_nodes(monkeypatch, program(1_000))
    large = _expanded_nodes(monkeypatch, program(4_000))
    # four times the program: at most about four times the work (quadratic would be 16x)
    assert large <= 5 * max(small, 1), (small, large)
