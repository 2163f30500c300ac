"""Robustness (docs/architecture.md#robustness): 20,000-deep programs print, parse, compare,
hash and analyse without Python recursion; shared DAGs are handled in time linear in their size."""

from __future__ import annotations

import pytest

from semantics.alpha import alpha_equal, structural_hash
from semantics.analysis import all_vars, bound_vars, free_type_vars, free_vars
from semantics.expr import Call, Function, If, Let, Op, RefRead, Tuple, TupleGetItem, Var, const
from semantics.parser import parse_expr
from semantics.printer import pretty
from semantics.types import TensorType

N = 20_000
F32 = TensorType((), "float32")


def add(a, b):
    return Call(Op("add"), (a, b))


def let_chain(n=N, last=1.0):
    x = Var("x", F32)
    vs = [Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        prev = vs[i - 1] if i else x
        body = Let(vs[i], add(prev, const(last if i == n - 1 else 1.0)), body)
    return Function((x,), body), x


def graph_chain(n=N, shared=False):
    x = Var("x", F32)
    cur = x
    for _ in range(n):
        cur = add(cur, cur) if shared else add(cur, const(1.0))
    return Function((x,), cur)


def check_everything(fn):
    text = pretty(fn)
    back = parse_expr(text)
    assert alpha_equal(fn, back)
    assert alpha_equal(back, fn)
    assert structural_hash(fn) == structural_hash(back)
    assert pretty(back) == text
    return text, back


def test_let_chain():
    fn, x = let_chain()
    text, back = check_everything(fn)
    assert text.count("\n") == N + 2  # header, N lets, result, closing brace
    assert free_vars(fn) == []
    assert free_vars(fn.body)[0] is x
    assert len(bound_vars(fn)) == N + 1
    assert len(all_vars(back)) == N + 1
    assert free_type_vars(fn) == []


def test_let_chain_with_one_changed_constant_is_different():
    a, _ = let_chain()
    b, _ = let_chain()
    changed, _ = let_chain(last=2.0)
    assert alpha_equal(a, b)
    assert not alpha_equal(a, changed)
    assert structural_hash(a) != structural_hash(changed)


def test_operator_graph_chain():
    fn = graph_chain()
    text, back = check_everything(fn)
    assert free_vars(back) == []
    assert max(len(line) for line in text.splitlines()) < 400


def test_shared_operator_graph_chain():
    fn = graph_chain(shared=True)
    text, _ = check_everything(fn)
    assert text.count(" = add(") == N - 1


def test_doubling_chain_of_sixty_is_instant_and_linear():
    x = Var("x")
    cur = x
    for _ in range(60):
        cur = add(cur, cur)
    text = pretty(cur)
    assert len(text) < 2000  # the tree unfolding has 2**60 leaves
    back = parse_expr(text)
    assert alpha_equal(cur, back)
    assert structural_hash(cur) == structural_hash(back)
    assert free_vars(cur) == [x]


def test_deep_tuple_nesting():
    cur = Var("x")
    for i in range(N):
        cur = TupleGetItem(Tuple((cur, const(i))), 0) if i % 2 else Tuple((cur,))
    check_everything(Function((), cur))


def test_deep_ref_reads():
    r = Var("r")
    cur = r
    for _ in range(N):
        cur = RefRead(cur)
    text, back = check_everything(Function((r,), cur))
    assert back.body is not None


@pytest.mark.parametrize("depth", [1_000])
def test_nested_ifs_and_functions(depth):
    c = Var("c")
    cur = const(0)
    for i in range(depth):
        cur = If(c, const(i), cur) if i % 2 else Function((), cur)
    check_everything(Function((c,), cur))


def test_hash_and_equality_of_deep_chains_built_twice():
    a, b = graph_chain(), graph_chain()
    assert a is not b
    assert alpha_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert structural_hash(graph_chain(N - 1)) != structural_hash(a)
