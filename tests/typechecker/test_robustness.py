"""Depth, sharing and random programs: no recursion limit, DAG-linear work, only RelayTypeError."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tc_util import check, infer, pretty, type_of

from semantics.errors import RelayTypeError
from semantics.expr import Call, Function, Let, Op, Tuple, TupleGetItem, Var, const
from semantics.module import IRModule
from semantics.types import TensorType
from semantics.visitor import post_order

F2 = TensorType((2,), "float32")
DEPTH = 20_000


def let_chain(depth: int) -> Function:
    x0 = Var("x0", F2)
    body_vars = [x0]
    lets = []
    for i in range(1, depth + 1):
        v = Var(f"x{i}")
        lets.append((v, Call(Op("add"), (body_vars[-1], const(np.ones(2, "float32"))))))
        body_vars.append(v)
    body = body_vars[-1]
    for v, value in reversed(lets):
        body = Let(v, value, body)
    return Function((x0,), body)


def test_20000_deep_let_chain():
    fn = let_chain(DEPTH)
    assert pretty(type_of(fn)) == "fn (Tensor[(2), float32]) -> Tensor[(2), float32]"
    out = infer(fn)
    last = out
    count = 0
    node = out.body
    while isinstance(node, Let):
        assert node.var.checked_type is not None and node.value.checked_type is not None
        count += 1
        node = node.body
    assert count == DEPTH and last.checked_type is not None


def test_20000_deep_let_chain_in_a_module():
    check(IRModule({"main": let_chain(DEPTH)}))


def test_20000_node_nested_graph():
    x = Var("x", F2)
    e = x
    for i in range(DEPTH):
        e = Call(Op("negative" if i % 2 else "exp"), (e,))
    fn = Function((x,), Tuple((e, TupleGetItem(Tuple((e, x)), 1))))
    out = infer(fn)
    assert all(n.checked_type is not None for n in post_order(out))


def test_20000_deep_non_operator_nesting():
    e = const(1)
    for _ in range(DEPTH):
        e = TupleGetItem(Tuple((e,)), 0)
    assert pretty(type_of(e)) == "int32"


def test_doubling_chain_is_linear():
    x = Var("x", F2)
    e = x
    for _ in range(60):
        e = Call(Op("add"), (e, e))
    fn = Function((x,), e)
    out = infer(fn)
    nodes = post_order(out)
    assert len(nodes) < 200
    # sharing is preserved in the annotated program
    assert out.body.args[0] is out.body.args[1]


def test_input_is_not_mutated_and_nodes_are_rebuilt():
    x = Var("x", F2)
    shared = Call(Op("exp"), (x,))
    fn = Function((x,), Tuple((shared, shared)))
    out = infer(fn)
    assert fn.checked_type is None and shared.checked_type is None and x.checked_type is None
    assert out is not fn and out.body.fields[0] is out.body.fields[1]
    assert out.params[0].checked_type is not None
    assert out.params[0] is not x


# --- random programs: only RelayTypeError, and well-typed ones are fully annotated -------------

def _ast_strategies():
    from conformance.strategies import ast_exprs, ast_modules

    return st.one_of(ast_exprs(), ast_modules())


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_ast_strategies())
def test_random_programs_raise_only_type_errors(p):
    try:
        out = infer(p)
    except RelayTypeError:
        return
    roots = list(out.functions.values()) if isinstance(out, IRModule) else [out]
    for root in roots:
        for node in post_order(root):
            assert node.checked_type is not None
    check(p)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_ast_strategies())
def test_check_and_type_of_agree_with_infer(p):
    results = []
    for fn in (check, infer) if isinstance(p, IRModule) else (check, type_of, infer):
        try:
            fn(p)
            results.append(None)
        except RelayTypeError as err:
            results.append(err.message)
    assert len(set(results)) == 1, results
