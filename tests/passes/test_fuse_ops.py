"""FuseOps: examples, structural properties over generated programs, differential checks.

The structural invariants (checked by :func:`assert_fused`): no operator call is left
outside a ``Primitive=1`` function; every primitive function is called directly, contains
only operator calls, tuples, projections, its parameters and constants, holds at least
one operator call and no function (no nesting), and is closed (its free variables are its
parameters); no operator call is duplicated or lost; the result type checks with the
same type. The goldens (``golden/fuse_ops``) pin the exact groups of the classic cases.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import passes
from conformance import assert_equivalent
from conformance.strategies.programs import FLOAT_DTYPES, Program, ProgramConfig, well_typed_modules
from interpreter import evaluate
from passes.fuse_ops import MAX_FUSED_OPS, _Graph, _Partitioner, is_primitive
from passes.purity import EffectAnalysis
from semantics import alpha_equal, parse, pretty
from semantics.analysis import free_vars
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.visitor import post_order
from typechecker import infer

GOLDEN = Path(__file__).parent / "golden" / "fuse_ops"
FLOAT = ProgramConfig(float_mode=True, dtypes=FLOAT_DTYPES, max_let_chain=5, min_op_bindings=3)
EFFECTFUL = ProgramConfig(effects=3, max_let_chain=4)
_PRIMITIVE_BODY = (Call, Op, Tuple, TupleGetItem, Var, Constant)


# --- the structural checker ---------------------------------------------------------------------

def _roots(p: IRModule | Expr) -> list[Expr]:
    return list(p.functions.values()) if isinstance(p, IRModule) else [p]


def _op_calls(p: IRModule | Expr) -> int:
    seen: set[int] = set()
    for root in _roots(p):
        for node in post_order(root):
            if type(node) is Call and type(node.op) is Op and not _copyable(node):
                seen.add(id(node))
    return len(seen)


def _copyable(node: Call) -> bool:
    """A data-movement call with a tuple result (``split``): FuseOps may copy it into each
    of its consumer groups (see ``passes.fuse_ops._copied_groups``)."""
    from semantics import ops
    from semantics.ops.registry import OpPattern

    return ops.get(node.op.name).pattern == OpPattern.INJECTIVE and type(
        node.checked_type).__name__ == "TupleType"


def _copyable_names(p: IRModule | Expr) -> set[str]:
    return {node.op.name for root in _roots(p) for node in post_order(root)
            if type(node) is Call and type(node.op) is Op and _copyable(node)}


def primitives(p: IRModule | Expr) -> list[Function]:
    out: dict[int, Function] = {}
    for root in _roots(p):
        for node in post_order(root):
            if is_primitive(node):
                out[id(node)] = node  # type: ignore[assignment]
    return list(out.values())


def _op_name(node: Expr) -> str:
    return node.op.name if type(node) is Call and type(node.op) is Op else ""


def _group_sizes(p: IRModule | Expr) -> list[tuple[int, int]]:
    """(operator calls, dataflow nodes) of each primitive function."""
    sizes = []
    for prim in primitives(p):
        nodes = post_order(prim.body)
        ops = sum(1 for n in nodes if type(n) is Call)
        sizes.append((ops, sum(1 for n in nodes if type(n) in (Call, Tuple, TupleGetItem))))
    return sizes


def assert_fused(before: IRModule | Expr, after: IRModule | Expr, *, same_ops: bool = True
                 ) -> None:
    """The structural invariants of FuseOps' output (module docstring).

    ``same_ops``: also check that no operator call was duplicated or lost (not after a
    pipeline whose other passes fold, merge or drop operator calls).
    """
    for root in _roots(after):
        if is_primitive(root):
            continue
        for node in post_order(root, lambda e: not is_primitive(e)):
            if type(node) is Call and type(node.op) is Op:
                raise AssertionError(f"operator call outside a primitive function: {node!r}")
            for kid in children(node):
                if is_primitive(kid):
                    assert type(node) is Call and node.op is kid, \
                        f"primitive function not called directly: {node!r}"
    for prim in primitives(after):
        body = post_order(prim.body)
        for node in body:
            assert type(node) in _PRIMITIVE_BODY, f"{type(node).__name__} in {prim!r}"
            if type(node) is Call:
                assert type(node.op) is Op, f"non-operator call in {prim!r}"
        assert any(type(n) is Call for n in body), f"primitive without an operator: {prim!r}"
        params = {id(p) for p in prim.params}
        assert {id(v) for v in free_vars(prim.body)} <= params, f"open primitive: {prim!r}"
        assert all(p.type_annotation is not None for p in prim.params), repr(prim)
    if same_ops:
        assert _op_calls(after) == _op_calls(before), "an operator call was duplicated or lost"
        assert _copyable_names(infer(after) if isinstance(after, IRModule) else after) \
            >= _copyable_names(before), "a data-movement call was lost"


def _same_type(before: IRModule, after: IRModule) -> None:
    tb, ta = infer(before), infer(after)
    assert isinstance(tb, IRModule) and isinstance(ta, IRModule)
    for name in tb.functions:
        # Equal, except that a `?` dim may have become static (FoldConstant in the pipeline
        # folds e.g. a constant `arange` to its concrete shape).
        want = re.escape(pretty(tb[name].checked_type)).replace(r"\?", r"(?:\?|\d+)")
        assert re.fullmatch(want, pretty(ta[name].checked_type)), name


# --- examples -------------------------------------------------------------------------------------

def test_registered_under_both_names_and_exported():
    assert passes.get_pass("FuseOps") is passes.get_pass("fuse_ops")
    assert passes.get_pass("fuse_ops").opt_level == 1
    assert callable(passes.fuse_ops) and callable(passes.count_primitive_functions)


def test_diamond_fuses_into_one_group_and_shares_its_head():
    mod = parse("""
    def @main(%x: Tensor[(2, 2), float32]) {
      %0 = add(%x, 1f);
      %1 = exp(%0);
      %2 = sqrt(%0);
      multiply(%1, %2)
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert _group_sizes(out) == [(4, 4)]
    (prim,) = primitives(out)
    # The head is one node used twice inside the group (evaluated once).
    heads = [n for n in post_order(prim.body) if _op_name(n) == "add"]
    assert len(heads) == 1
    x = np.array([[0.5, 1.0], [2.0, 3.0]], dtype="float32")
    np.testing.assert_allclose(evaluate(out, x), evaluate(mod, x), rtol=1e-6)


def test_a_value_used_outside_its_chain_is_a_group_result_not_duplicated():
    mod = parse("""
    def @main(%x: Tensor[(3), float32]) {
      %0 = exp(%x);
      %1 = negative(%0);
      (%1, %0)
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert sorted(_group_sizes(out)) == [(1, 1), (1, 1)]  # exp is a root: used by the tuple


def test_tuple_output_split_then_elementwise():
    mod = parse("""
    def @main(%x: Tensor[(3, 4), float32]) {
      %0 = split(%x, indices_or_sections=3, axis=0);
      (add(%0.0, %0.1), %0.2)
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    # split's post-dominator is the result tuple: split stays alone; the projections fuse
    # into their consumer; the lone projection %0.2 stays outside.
    assert sorted(_group_sizes(out)) == [(1, 1), (1, 3)]
    x = np.arange(12, dtype="float32").reshape(3, 4)
    got, want = evaluate(out, x), evaluate(mod, x)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_a_split_read_by_two_cell_groups_is_copied_into_both():
    """The LSTM cell: the gates' split feeds two elementwise groups (c2, and h2 through c2):
    each reads the gates through its own copy of the split, no split kernel runs."""
    mod = parse("""
    def @main(%x: Tensor[(1, 3), float32], %w: Tensor[(8, 3), float32],
              %c: Tensor[(1, 2), float32]) {
      let %s = split(nn.dense(%x, %w, units=8), indices_or_sections=4, axis=1);
      let %c2 = add(multiply(sigmoid(%s.1), %c), multiply(sigmoid(%s.0), tanh(%s.2)));
      let %h2 = multiply(sigmoid(%s.3), tanh(%c2));
      (%h2, %c2)
    }""")
    out = infer(passes.fuse_ops(mod))
    assert_fused(infer(mod), out)
    prims = primitives(out)
    assert len(prims) == 3                      # dense; c2 with a split; h2 with a split
    assert sum(1 for p in prims for n in post_order(p.body) if _op_name(n) == "split") == 2
    assert not any(all(_op_name(n) in ("split", "") for n in post_order(p.body))
                   for p in prims)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype("float32") for s in ((1, 3), (8, 3), (1, 2))]
    for a, b in zip(evaluate(out, *args), evaluate(mod, *args)):
        np.testing.assert_array_equal(a, b)


def test_residual_block():
    mod = parse("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32],
              %b: Tensor[(2), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1]);
      %1 = nn.relu(nn.bias_add(%0, %b));
      %2 = nn.conv2d(%1, %w, padding=[1, 1]);
      nn.relu(add(%2, %x))
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert sorted(_group_sizes(out)) == [(3, 3), (3, 3)]
    for prim in primitives(out):
        convs = [n for n in post_order(prim.body) if _op_name(n) == "nn.conv2d"]
        assert len(convs) == 1  # one anchor each
    _same_type(mod, out)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type_annotation.shape).astype("float32")
            for p in mod["main"].params]
    np.testing.assert_allclose(evaluate(out, *args), evaluate(mod, *args), rtol=1e-5, atol=1e-6)


def test_level_zero_makes_every_operator_its_own_primitive_function():
    mod = parse("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]) {
      let %c = nn.conv2d(%x, %w, padding=[1, 1]);
      let %s = split(%c, indices_or_sections=2, axis=1);
      nn.relu(add(%s.0, %s.1))
    }""")
    out = passes.fuse_ops(mod, fuse_opt_level=0)
    assert_fused(mod, out)
    assert _group_sizes(out) == [(1, 1)] * 4
    fused = passes.fuse_ops(mod)
    assert sorted(_group_sizes(fused)) == [(1, 1), (3, 5)]  # split, projections, add, relu


def test_let_bound_dataflow_fuses_and_its_lets_disappear():
    mod = parse("""
    def @main(%x: Tensor[(2), float32]) {
      let %a = add(%x, %x);
      let %b = exp(%a);
      let %c = multiply(%b, %a);
      %c
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert _group_sizes(out) == [(3, 3)]
    body = out["main"].body
    assert type(body) is Let and body.var.name_hint == "c"  # only the root's let is left


def test_fusion_inside_a_recursive_global():
    mod = parse("""
    def @loop(%i: int32, %h: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32])
        -> Tensor[(1, 4), float32] {
      if (%i <= 0) { %h } else {
        let %h2 = tanh(add(nn.dense(%h, %w), %h));
        @loop(%i - 1, %h2, %w)
      }
    }
    def @main(%h: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) { @loop(3, %h, %w) }
    """)
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert sorted(_group_sizes(out["loop"])) == [(1, 1), (1, 1), (3, 3)]
    h = np.full((1, 4), 0.25, dtype="float32")
    w = np.eye(4, dtype="float32") * 0.5
    np.testing.assert_allclose(evaluate(out, h, w), evaluate(mod, h, w), rtol=1e-6)


def test_fusion_inside_a_recursive_closure_and_an_adt_recursion():
    mod = parse("""
    type List[A] { Cons(A, List[A]), Nil, }
    def @total(%l: List[Tensor[(2), float32]]) -> Tensor[(2), float32] {
      match (%l) {
        Cons(%h, %t) => nn.relu(add(exp(%h), @total(%t))),
        Nil => zeros(shape=[2], dtype="float32"),
      }
    }
    def @main(%x: Tensor[(2), float32]) {
      let %loop = fn (%i: int32, %h: Tensor[(2), float32]) -> Tensor[(2), float32] {
        if (%i <= 0) { %h } else { %loop(%i - 1, tanh(add(multiply(%h, 2f), %x))) }
      };
      @total(Cons(%loop(3, %x), Cons(%x, Nil)))
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    # In the closure: multiply -> add -> tanh is one group. In @total, exp is evaluated
    # before the recursive call (which may fail or diverge), so it does not move past it.
    assert (3, 3) in _group_sizes(out["main"])
    assert sorted(_group_sizes(out["total"])) == [(1, 1), (1, 1), (2, 2)]
    _same_type(mod, out)
    x = np.array([0.1, -0.2], dtype="float32")
    np.testing.assert_allclose(evaluate(out, x), evaluate(mod, x), rtol=1e-6)


def test_no_fusion_across_an_effect_or_into_a_branch():
    mod = parse("""
    def @main(%r: Ref[int32], %x: int32) {
      let %a = negative(%x);
      let %u = (%r := 1);
      let %b = if (%x > 0) { add(%a, 1) } else { 0 };
      multiply(%b, 2)
    }""")
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert _group_sizes(out) == [(1, 1)] * 4  # negative, greater, add, multiply: alone


def test_max_depth_bounds_every_group():
    n = 600
    text = "def @main(%x: float32) {\n  %0 = exp(%x);\n"
    text += "".join(f"  %{i} = tanh(%{i - 1});\n" for i in range(1, n))
    text += f"  %{n - 1}\n}}"
    mod = parse(text)
    out = passes.fuse_ops(mod)
    sizes = [s for _, s in _group_sizes(out)]
    assert sorted(sizes) == [n - 2 * MAX_FUSED_OPS, MAX_FUSED_OPS, MAX_FUSED_OPS]
    small = passes.fuse_ops(mod, max_depth=7)
    assert max(s for _, s in _group_sizes(small)) == 7
    assert passes.count_primitive_functions(small) == math.ceil(n / 7)
    with pytest.raises(ValueError, match="max_depth"):
        passes.fuse_ops(mod, max_depth=0)


def test_expressions_and_untyped_programs():
    fn = parse("def @main(%x: float32) { exp(negative(%x)) }")["main"]
    out = passes.fuse_ops(fn)
    assert isinstance(out, Function) and passes.count_primitive_functions(out) == 1
    ill = parse("def @main(%x: float32) { add(%x, (%x, %x)) }")
    assert passes.fuse_ops(ill) is ill  # fusion reads types: an ill-typed program is kept
    with pytest.raises(TypeError):
        passes.fuse_ops(42)


def test_existing_primitive_functions_are_kept_and_the_pass_is_idempotent():
    mod = parse("""
    def @main(%x: Tensor[(2), float32]) {
      %0 = exp(add(%x, 1f));
      (%0, nn.relu(%0))
    }""")
    once = passes.fuse_ops(mod)
    twice = passes.fuse_ops(once)
    assert alpha_equal(twice, once), pretty(twice)
    assert passes.count_primitive_functions(twice) == passes.count_primitive_functions(once) == 2


# --- deep programs --------------------------------------------------------------------------------

def test_20000_node_graph_and_20000_let_chain():
    n = 20_000
    graph = ["def @main(%x: float32) {", "  %0 = add(%x, 1f);"]
    graph += [f"  %{i} = add(%{i - 1}, %x);" for i in range(1, n)]
    graph += [f"  %{n - 1}", "}"]
    chain = ["def @main(%x0: int32) {"]
    chain += [f"  let %x{i + 1} = add(%x{i}, 1);" for i in range(n)]
    chain += [f"  %x{n}", "}"]
    for text, arg in (("\n".join(graph), np.float32(0.5)), ("\n".join(chain), 3)):
        mod = parse(text)
        out = passes.fuse_ops(mod)
        assert passes.count_primitive_functions(out) == math.ceil(n / MAX_FUSED_OPS)
        assert all(s <= MAX_FUSED_OPS for _, s in _group_sizes(out))
        assert_fused(mod, out)
        infer(out)
        assert evaluate(out, arg) == evaluate(mod, arg)
    # The whole pipeline (FuseOps included) on these inputs: tests/passes/test_manager.py.


# --- properties over generated programs -----------------------------------------------------------

_SETTINGS = settings(max_examples=60, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.filter_too_much])


@_SETTINGS
@given(program=well_typed_modules(FLOAT))
def test_structure_types_and_idempotence_on_generated_programs(program: Program):
    mod = program.module
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    _same_type(mod, out)
    again = passes.fuse_ops(out)
    assert alpha_equal(again, out), pretty(again)


@_SETTINGS
@given(program=well_typed_modules())
def test_levels_and_depth_bounds_on_generated_programs(program: Program):
    mod = program.module
    level0 = passes.fuse_ops(mod, fuse_opt_level=0)
    assert_fused(mod, level0)
    assert all(ops == size == 1 for ops, size in _group_sizes(level0))
    shallow = passes.fuse_ops(mod, max_depth=2)
    assert_fused(mod, shallow)
    assert all(size <= 2 for _, size in _group_sizes(shallow))
    _same_type(mod, shallow)


@_SETTINGS
@given(program=well_typed_modules(FLOAT))
def test_the_pipeline_ends_fully_fused(program: Program):
    mod = program.module
    out = passes.optimize(mod, 2)  # FuseOps runs last
    assert_fused(mod, out, same_ops=False)
    _same_type(mod, out)


def _naive_post_dominators(g: _Graph) -> tuple[list[int], list[int]]:
    """TVM's LeastCommonAncestor walk, step by step (the reference for binary lifting)."""
    n = len(g.nodes)
    parent, depth, pattern = [-1] * n, [1] * n, [8] * n
    for i in range(n - 1, -1, -1):
        if g.extern[i]:
            continue
        pat, par = max(0, g.outputs[i][0][1]), g.outputs[i][0][0]
        for c, edge in g.outputs[i][1:]:
            r = c
            while par != r:
                if par < 0 or r < 0:
                    par = -1
                    break
                if depth[par] < depth[r]:
                    pat, r = max(pat, pattern[r]), parent[r]
                elif depth[r] < depth[par]:
                    pat, par = max(pat, pattern[par]), parent[par]
                else:
                    pat = max(pat, pattern[par], pattern[r])
                    par, r = parent[par], parent[r]
            pat = max(pat, edge)
            if par < 0:
                break
        parent[i], pattern[i] = par, pat
        depth[i] = depth[par] + 1 if par >= 0 else 1
    return parent, pattern


def _ladder(n: int) -> IRModule:
    lines = ["def @main(%x: float32) {", "  %0 = exp(%x);"]
    lines += [f"  %{i} = add(%{i - 1}, 1f);" for i in range(1, n)]
    lines += ["  %s0 = add(%0, %1);"]
    lines += [f"  %s{i} = add(%s{i - 1}, %{i + 1});" for i in range(1, n - 1)]
    lines += [f"  %s{n - 2}", "}"]
    return parse("\n".join(lines))


def _mixed_ladder(n: int) -> IRModule:
    """A chain whose nodes all feed a far-away sum, with every pattern kind on the way."""
    steps = ["exp(%{p})", "transpose(%{p})", "nn.relu(%{p})",
             "add(%{p}, sum(%{p}, axis=[1], keepdims=True))", "reverse(%{p}, axis=0)",
             "nn.dense(%{p}, %{p})"]
    lines = ["def @main(%x: Tensor[(2, 2), float32]) {", "  %0 = exp(%x);"]
    lines += [f"  %{i} = " + steps[i % len(steps)].format(p=i - 1) + ";" for i in range(1, n)]
    lines += ["  %s0 = add(%0, %1);"]
    lines += [f"  %s{i} = add(%s{i - 1}, %{i + 1});" for i in range(1, n - 1)]
    lines += [f"  %s{n - 2}", "}"]
    return parse("\n".join(lines))


def _check_post_dominators(mod: IRModule) -> None:
    typed = infer(mod)
    assert isinstance(typed, IRModule)
    for fn in typed.functions.values():
        g = _Graph(fn, EffectAnalysis(typed))
        if g.nodes:
            assert _Partitioner(g, 2, MAX_FUSED_OPS)._post_dominators() == \
                _naive_post_dominators(g)


def test_post_dominators_match_the_step_by_step_walk():
    _check_post_dominators(_ladder(300))
    _check_post_dominators(_mixed_ladder(300))
    for name in ("diamond", "tuple_fields", "residual", "rnn_loop", "concat_tuple"):
        path = GOLDEN / f"{name}.in.relay"
        _check_post_dominators(parse(path.read_text(encoding="utf-8")))


@_SETTINGS
@given(program=well_typed_modules(FLOAT))
def test_post_dominators_match_on_generated_programs(program: Program):
    _check_post_dominators(program.module)


class _RandomDag:
    """A stand-in for :class:`_Graph` (what the partitioner reads), edges drawn at random."""

    def __init__(self, n: int, edges: list[list[tuple[int, int]]], extern: list[bool]):
        self.nodes = list(range(n))
        self.outputs = edges
        self.extern = [e or not outs for e, outs in zip(extern, edges)]
        self.pattern = [0] * n


@st.composite
def _random_dags(draw: st.DrawFn) -> _RandomDag:
    n = draw(st.integers(1, 30))
    kinds = st.sampled_from([0, 1, 2, 3, 4, 7, 8])
    edges = []
    for i in range(n):
        if i + 1 < n:
            later = st.tuples(st.integers(i + 1, n - 1), kinds)
            edges.append(draw(st.lists(later, min_size=1, max_size=3)))
        else:
            edges.append([])
    extern = draw(st.lists(st.integers(0, 19).map(lambda v: v == 0), min_size=n, max_size=n))
    return _RandomDag(n, edges, extern)


@settings(max_examples=500, deadline=None, database=None)
@given(dag=_random_dags())
def test_post_dominators_match_on_random_dags(dag: _RandomDag):
    got = _Partitioner(dag, 2, MAX_FUSED_OPS)._post_dominators()  # type: ignore[arg-type]
    assert got == _naive_post_dominators(dag)  # type: ignore[arg-type]


def test_far_post_dominators_still_fuse_correctly():
    mod = _ladder(2_000)
    out = passes.fuse_ops(mod)
    assert_fused(mod, out)
    assert evaluate(out, np.float32(0.5)) == evaluate(mod, np.float32(0.5))


def test_differential_float_mode():
    assert_equivalent(passes.fuse_ops, max_examples=80, config=FLOAT, name="fuse_ops (float)")


def test_differential_exact_effects_levels_and_depths():
    assert_equivalent(passes.fuse_ops, max_examples=40, config=EFFECTFUL, name="fuse_ops")
    assert_equivalent(lambda m: passes.fuse_ops(m, 0), max_examples=30, name="fuse_ops(level 0)")
    assert_equivalent(lambda m: passes.fuse_ops(m, max_depth=2), max_examples=30, config=FLOAT,
                      name="fuse_ops(max_depth=2)")
