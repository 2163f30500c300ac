"""Tests of the traversal base's scope-aware walk and sharing helpers (semantics/visitor.py)."""

from __future__ import annotations

from hypothesis import given, settings

from conformance.strategies.programs import Program, well_typed_modules
from interpreter.machine import shared_nodes
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    PatternTuple,
    PatternVar,
    Tuple,
    Var,
    children,
    const,
)
from semantics.visitor import count_uses, post_order, pre_order, shared, walk_scoped


def add(a: Expr, b: Expr) -> Expr:
    return Call(Op("add"), (a, b))


def _events(e: Expr) -> list[tuple[str, str, object]]:
    out: list[tuple[str, str, object]] = []
    walk_scoped(e,
                use=lambda v, bound: out.append(("use", v.name_hint, bound)),
                bind=lambda v, site: out.append(("bind", v.name_hint, type(site).__name__)))
    return out


def test_walk_scoped_reports_uses_and_binders_in_first_occurrence_order() -> None:
    x, y, f, n, a, b = (Var(s) for s in "x y f n a b".split())
    rec = Function((n,), Call(f, (n,)))
    clause = Clause(PatternTuple((PatternVar(a), PatternVar(b))), add(a, y))
    e = Let(y, add(x, x), Let(f, rec, Match(Tuple((y, y)), (clause,))))
    assert _events(e) == [
        ("use", "x", False), ("use", "x", False), ("bind", "y", "Let"),
        ("bind", "f", "Let"), ("bind", "n", "Function"), ("use", "f", True), ("use", "n", True),
        ("use", "y", True), ("use", "y", True),
        ("bind", "a", "Clause"), ("bind", "b", "Clause"), ("use", "a", True), ("use", "y", True),
    ]


def test_a_let_value_that_is_not_a_function_is_outside_the_binders_scope() -> None:
    x = Var("x")
    assert _events(Let(x, x, x)) == [("use", "x", False), ("bind", "x", "Let"),
                                     ("use", "x", True)]


def test_walk_scoped_enters_shared_nodes_once_and_can_prune() -> None:
    x = Var("x")
    s = add(x, x)
    e = Function((x,), Tuple((s, s, Function((), s))))
    entered: list[str] = []
    walk_scoped(e, enter=lambda node: entered.append(type(node).__name__))
    assert entered == ["Function", "Tuple", "Call", "Op", "Function"]
    uses: list[Var] = []
    walk_scoped(e, use=lambda v, bound: uses.append(v),
                enter=lambda node: not (isinstance(node, Function) and not node.params))
    assert uses == [x, x]


def test_walk_scoped_handles_a_20000_deep_let_chain() -> None:
    x = Var("x")
    body: Expr = x
    binders = [Var(f"v{i}") for i in range(20_000)]
    for v in reversed(binders):
        body = Let(v, add(x, const(1)), body)
    free: list[Var] = []
    count = [0]
    walk_scoped(body, use=lambda v, bound: None if bound else free.append(v),
                bind=lambda v, site: count.__setitem__(0, count[0] + 1))
    assert count[0] == 20_000 and set(map(id, free)) == {id(x)}


def test_pre_order_count_uses_and_shared() -> None:
    x = Var("x")
    s = add(x, x)
    inner = Function((), add(s, s))
    e = Tuple((s, inner))
    assert pre_order(e)[:3] == [e, s, s.op]  # type: ignore[attr-defined]
    assert set(map(id, pre_order(e))) == set(map(id, post_order(e)))
    uses = count_uses(e)
    assert uses[id(s)] == 3 and uses[id(x)] == 2
    assert set(map(id, shared(e))) == {id(s), id(x)}
    outer_only = count_uses(e, lambda n: not isinstance(n, Function))
    assert outer_only[id(s)] == 1 and id(inner.body) not in outer_only
    assert shared_nodes(e) == frozenset()
    assert shared_nodes(inner.body) == frozenset({s})


@settings(max_examples=30)
@given(well_typed_modules())
def test_shared_nodes_are_the_non_leaf_nodes_used_twice_outside_nested_functions(
        program: Program) -> None:
    for fn in program.module.functions.values():
        body = fn.body
        order = post_order(body, lambda n: not isinstance(n, Function))
        uses: dict[int, int] = {}
        for node in order:
            if not isinstance(node, Function):
                for kid in children(node):
                    uses[id(kid)] = uses.get(id(kid), 0) + 1
        expected = {id(n) for n in order if uses.get(id(n), 0) > 1
                    and not isinstance(n, (Var, GlobalVar, Constant, Op, Constructor))}
        assert {id(n) for n in shared_nodes(body)} == expected


def test_match_binders_are_reported_per_clause() -> None:
    a = Var("a")
    m = Match(const(1), (Clause(PatternVar(a), a), Clause(PatternVar(a), a)))
    assert [ev for ev in _events(m) if ev[0] == "bind"] == [("bind", "a", "Clause")] * 2
