"""The shared binder, use and recursion helpers of semantics/visitor.py and the typed
mutator hooks (issue 28: defined once, used by every pass)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings

from conformance.strategies.programs import Program, well_typed_modules
from semantics.expr import (
    Call,
    Clause,
    Expr,
    Function,
    Let,
    Match,
    Op,
    PatternTuple,
    PatternVar,
    Tuple,
    TupleGetItem,
    Var,
    children,
    const,
)
from semantics.rewrite import copy_subgraph
from semantics.visitor import (
    ExprMutator,
    binders,
    count_uses,
    enclosing_functions,
    kind_cases,
    post_order,
    rebound_vars,
    run_recursive,
)


def add(a: Expr, b: Expr) -> Expr:
    return Call(Op("add"), (a, b))


def test_binders_of_each_binding_form() -> None:
    x, y, a, b = (Var(s) for s in "x y a b".split())
    assert binders(Let(x, const(1), x)) == (x,)
    assert binders(Function((x, y), add(x, y))) == (x, y)
    clause = Clause(PatternTuple((PatternVar(a), PatternVar(b))), add(a, b))
    assert binders(Match(Tuple((x, y)), (clause,))) == (a, b)
    assert binders(add(x, y)) == ()
    assert binders(x) == ()


def test_rebound_vars_names_only_variables_bound_at_two_sites() -> None:
    x, y = Var("x"), Var("y")
    # x is bound by the let and again as a parameter of the inner function; y once.
    e = Let(x, const(1), Let(y, Function((x,), x), Call(y, (x,))))
    assert rebound_vars(e) == {id(x)}
    assert rebound_vars(Let(x, const(1), x)) == set()
    order = post_order(e)
    assert rebound_vars(e, order=order) == {id(x)}


def test_count_uses_with_a_given_order_equals_the_walk() -> None:
    x = Var("x")
    s = add(x, x)
    e = Function((x,), Tuple((s, s)))
    assert count_uses(e, order=post_order(e)) == count_uses(e)
    assert count_uses(e)[id(s)] == 2 and count_uses(e)[id(x)] == 2


def test_enclosing_functions_maps_each_node_to_its_innermost_function() -> None:
    x, y = Var("x"), Var("y")
    inner_body = add(y, x)
    inner = Function((y,), inner_body)
    outer = Function((x,), Call(inner, (x,)))
    owner = enclosing_functions(outer)
    assert owner[id(inner_body)] == id(inner)
    assert owner[id(outer.body)] == id(outer)
    assert owner[id(inner)] == id(outer)


def test_run_recursive_answers_ready_values_and_non_generator_roots() -> None:
    def fact(n: int) -> Generator[Any, Any, int]:
        if n == 0:
            one = yield 1                  # a ready value comes straight back
            return one
        rest = yield fact(n - 1)
        return n * rest

    assert run_recursive(fact(5)) == 120
    assert run_recursive(7) == 7
    assert run_recursive(fact(5000)) > 0   # deeper than Python's recursion limit


def test_run_recursive_propagates_errors_to_the_waiting_generator() -> None:
    def fails() -> Generator[Any, Any, int]:
        raise ValueError("inner")
        yield  # pragma: no cover - makes this a generator

    def catches() -> Generator[Any, Any, str]:
        try:
            yield fails()
        except ValueError as exc:
            return f"caught {exc}"
        return "not reached"

    assert run_recursive(catches()) == "caught inner"
    with pytest.raises(ValueError, match="inner"):
        run_recursive(fails())


class _Doubler(ExprMutator):
    """Typed hooks: ``new`` has the node's own kind, so its fields need no cast."""

    def __init__(self) -> None:
        self.seen_values: list[Expr] = []

    def visit_call(self, new: Call, old: Call) -> Expr:
        if isinstance(new.op, Op) and new.op.name == "add":
            return Call(Op("multiply"), new.args, new.attrs, span=new.span)
        return new

    def visit_let(self, new: Let, old: Let) -> Expr:
        done = self.rewritten(old.value)
        assert done is not None
        self.seen_values.append(done)
        return new


def test_typed_hooks_and_rewritten_see_the_rewritten_value_of_a_let() -> None:
    x, y = Var("x"), Var("y")
    e = Let(y, add(x, x), y)
    m = _Doubler()
    out = m.mutate(e)
    assert isinstance(out, Let) and isinstance(out.value, Call)
    assert isinstance(out.value.op, Op) and out.value.op.name == "multiply"
    assert m.seen_values == [out.value]


def test_mutators_need_no_recursion_on_depth() -> None:
    x = Var("x")
    e: Expr = x
    for _ in range(20_000):
        e = add(e, x)
    out = _Doubler().mutate(e)
    assert isinstance(out, Call) and isinstance(out.op, Op) and out.op.name == "multiply"


@settings(max_examples=30, deadline=None)
@given(well_typed_modules())
def test_rebound_vars_agrees_with_a_count_of_binding_sites(program: Program) -> None:
    for fn in program.module.functions.values():
        sites: dict[int, int] = {}
        for node in post_order(fn):
            for v in binders(node):
                sites[id(v)] = sites.get(id(v), 0) + 1
        assert rebound_vars(fn) == {k for k, n in sites.items() if n > 1}
        # every node is counted once per parent edge
        edges = sum(len(children(n)) for n in post_order(fn))
        assert sum(count_uses(fn).values()) == edges


def test_mutate_with_a_memo_keeps_sharing_across_roots_and_walks_each_node_once() -> None:
    x = Var("x")
    shared_node = add(x, x)
    f = Function((x,), Tuple((shared_node, x)))
    g = Function((x,), add(shared_node, x))
    calls: list[Expr] = []

    class Count(_Doubler):
        def visit_call(self, new: Call, old: Call) -> Expr:
            calls.append(old)
            return super().visit_call(new, old)

    memo: dict[int, Expr] = {}
    m = Count()
    nf, ng = m.mutate(f, memo), m.mutate(g, memo)
    assert isinstance(nf, Function) and isinstance(ng, Function)
    assert isinstance(nf.body, Tuple) and isinstance(ng.body, Call)
    assert nf.body.fields[0] is ng.body.args[0]  # one rewrite of the shared node
    assert [id(c) for c in calls].count(id(shared_node)) == 1
    # without a memo each walk starts afresh
    again = Count().mutate(g)
    assert isinstance(again, Function) and isinstance(again.body, Call)
    assert again.body.args[0] is not nf.body.fields[0]


def test_kind_cases_names_the_per_kind_methods_an_object_has() -> None:
    class Cases:
        def size_call(self, e: Call) -> int:
            return len(e.args)

        def size_tuple(self, e: Tuple) -> int:
            return len(e.fields)

        def size_tuple_getitem(self, e: Expr) -> int:
            return -1

    table = kind_cases(Cases(), "size_")
    assert set(table) == {Call, Tuple, TupleGetItem}
    x = Var("x")
    assert table[Call](add(x, x)) == 2
    assert table[Tuple](Tuple((x,))) == 1
    assert table[TupleGetItem](TupleGetItem(x, 0)) == -1


def test_copy_subgraph_rebuilds_members_over_new_operands() -> None:
    x, y, alias = Var("x"), Var("y"), Var("a")
    a = add(x, y)
    b = add(a, alias)          # ``alias`` stands for ``a`` (a let-bound name of it)
    c = Tuple((b, const(1.0)))
    seen: list[Expr] = []
    p = {id(x): Var("p0"), id(y): Var("p1")}

    def operand(e: Expr) -> Expr:
        seen.append(e)
        return a if e is alias else p.get(id(e), e)

    na, nb, nc = copy_subgraph([a, b, c], operand)
    assert seen[:3] == [x, y, alias]  # in reading order, once each
    assert isinstance(na, Call) and na.args == (p[id(x)], p[id(y)])
    assert isinstance(nb, Call) and nb.args[0] is na and nb.args[1] is na
    assert isinstance(nc, Tuple) and nc.fields[0] is nb
    # every copy is a new node, even one whose operands did not change
    (same,) = copy_subgraph([c], lambda e: e)
    assert same is not c and isinstance(same, Tuple) and same.fields == c.fields


def test_copy_subgraph_needs_no_recursion_on_depth() -> None:
    x, p = Var("x"), Var("p")
    chain: list[Expr] = []
    e: Expr = x
    for _ in range(20_000):
        e = add(e, const(1))
        chain.append(e)
    copies = copy_subgraph(chain, lambda o: p if o is x else o)
    assert len(copies) == 20_000
    first = copies[0]
    assert isinstance(first, Call) and first.args[0] is p
    last = copies[-1]
    assert isinstance(last, Call) and last.args[0] is copies[-2]
