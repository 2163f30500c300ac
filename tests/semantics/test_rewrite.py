"""Tests of the rewriting toolkit (semantics/rewrite.py) and the scope-aware walk.

Properties over generated well-typed programs (conformance kit):

* a fresh copy is alpha-equal to its source, shares no binder with it and
  keeps its sharing (same number of distinct nodes);
* the mutator with hooks that change nothing returns the very same objects;
* substitution agrees with evaluation: ``main`` applied to its inputs,
  ``let %p = v; body`` and ``substitute(body, {p: v})`` give the same value;

plus examples of each hook, capture avoidance, shadowing, the conservative
treatment of a variable bound at two sites, and 20,000-deep inputs through
every toolkit function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from conformance.harness import ORACLE_FUEL, values_equal
from conformance.strategies.programs import Program, well_typed_modules
from interpreter import evaluate
from interpreter.values import ConstructorValue
from semantics import alpha_equal, parse, pretty
from semantics.analysis import bound_vars, free_vars
from semantics.errors import RelayRuntimeError
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    PatternTuple,
    PatternVar,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from semantics.module import IRModule
from semantics.rewrite import LetList, ScopedMutator, fresh_copy, map_functions, substitute
from semantics.types import TensorType
from semantics.visitor import post_order, shared

N = 20_000
I32 = TensorType((), "int32")
EXAMPLES = 30  # generating and running a program is slow; 4 properties share it


def add(a: Expr, b: Expr) -> Expr:
    return Call(Op("add"), (a, b))


def ids(vs: list[Var]) -> set[int]:
    return {id(v) for v in vs}


# --- properties over generated programs -------------------------------------------------------

@settings(max_examples=EXAMPLES)
@given(well_typed_modules())
def test_fresh_copy_is_alpha_equal_shares_no_binder_and_keeps_sharing(program: Program) -> None:
    for name, fn in program.module.functions.items():
        copy = fresh_copy(fn)
        assert alpha_equal(fn, copy), name
        assert not ids(bound_vars(fn)) & ids(bound_vars(copy)), name
        assert ids(free_vars(copy)) == ids(free_vars(fn))
        assert len(post_order(copy)) == len(post_order(fn))
        assert len(shared(copy)) == len(shared(fn))
        if bound_vars(fn):
            assert copy is not fn


@settings(max_examples=EXAMPLES)
@given(well_typed_modules())
def test_fresh_module_evaluates_like_the_original(program: Program) -> None:
    copied = map_functions(program.module, lambda name, fn: fresh_copy(fn))  # type: ignore
    assert alpha_equal(program.module, copied)
    assert _run(copied, program.inputs) == _run(program.module, program.inputs)


class _Unchanged(ScopedMutator):
    """Overrides every hook, changing nothing: the slow path must still return the input."""

    def pre(self, node: Expr) -> Expr:
        return node

    def descend(self, node: Expr) -> bool:
        return True

    def bind(self, var: Var, site: Expr | Clause) -> Var:
        return var

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        return new


@settings(max_examples=EXAMPLES)
@given(well_typed_modules())
def test_mutators_that_change_nothing_return_the_same_objects(program: Program) -> None:
    for fn in program.module.functions.values():
        assert ScopedMutator().mutate(fn) is fn
        assert _Unchanged().mutate(fn) is fn
        assert substitute(fn, {Var("unused"): const(1)}) is fn
    assert map_functions(program.module, lambda name, fn: fn) is program.module


@settings(max_examples=EXAMPLES)
@given(well_typed_modules())
def test_substitution_agrees_with_evaluation_under_let(program: Program) -> None:
    mod = program.module
    main = mod["main"]
    args = [_annotated(_value_expr(v, mod), p) for v, p in zip(program.inputs, main.params)]
    mapping: dict[Var, Expr] = dict(zip(main.params, args))
    let_form = main.body
    for p, a in reversed(list(mapping.items())):
        let_form = Let(p, a, let_form)
    substituted = substitute(main.body, mapping)
    assert not ids(free_vars(substituted)) & ids(main.params)
    expected = _run(mod, program.inputs)
    for body in (let_form, substituted):
        nullary = Function((), body, main.ret_type, main.type_params, main.attrs)
        assert _run(mod.with_function("main", nullary), ()) == expected, pretty(body)


@settings(max_examples=EXAMPLES)
@given(well_typed_modules())
def test_substituting_an_inner_binder_for_a_parameter_never_captures(program: Program) -> None:
    # Replace each free use of a parameter by a variable that the body itself binds:
    # without renaming, that binder would capture the replacement.
    for fn in program.module.functions.values():
        inner = bound_vars(fn.body)
        if not fn.params or not inner:
            continue
        p, b = fn.params[0], inner[-1]
        out = substitute(fn.body, {p: b})
        assert id(b) not in ids(bound_vars(out))
        used = id(p) in ids(free_vars(fn.body))
        assert (id(b) in ids(free_vars(out))) == used
        assert id(p) not in ids(free_vars(out))
        back = substitute(out, {b: p})
        assert alpha_equal(back, fn.body, map_free_vars=False)


def _run(mod: IRModule, inputs: tuple[Any, ...]) -> tuple[str, Any]:
    """The outcome of ``main``: its value (compared via values_equal) or its error message."""
    try:
        return ("value", _Value(evaluate(mod, *inputs, fuel=ORACLE_FUEL)))
    except RelayRuntimeError as err:
        return ("error", err.message)


class _Value:
    def __init__(self, v: Any):
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Value) and values_equal(self.v, other.v, exact_floats=True)[0]

    def __repr__(self) -> str:
        return repr(self.v)


def _annotated(e: Expr, param: Var) -> Expr:
    """``e`` passed through an identity function on ``param``'s type when it is not a tensor.

    A nullary constructor of a polymorphic ADT (``Nil``) needs its type from the
    context; the identity's annotated parameter supplies it. The result is still
    a closed, pure, terminating expression.
    """
    if param.type_annotation is None or isinstance(param.type_annotation, TensorType):
        return e
    t = Var("v", param.type_annotation)
    return Call(Function((t,), t), (e,))


def _value_expr(v: Any, mod: IRModule) -> Expr:
    """A closed expression denoting the first-order value ``v`` (an input of ``main``)."""
    if isinstance(v, tuple):
        return Tuple(tuple(_value_expr(x, mod) for x in v))
    if isinstance(v, ConstructorValue):
        return Call(mod.constructors[v.name], tuple(_value_expr(x, mod) for x in v.fields))
    return Constant(np.asarray(v))


# --- the mutator's hooks ----------------------------------------------------------------------

def test_bind_hook_renames_uses_in_scope_including_recursive_let_and_patterns() -> None:
    mod = parse("""
    def @main(%x: int32) -> int32 {
      let %f = fn (%n: int32) -> int32 { if (less(%n, 1)) { %n } else { %f(subtract(%n, 1)) } };
      let %p = (%x, %f(%x));
      match (%p) { (%a, %b) => add(%a, %b) }
    }""")
    fn = mod["main"]

    class Upper(ScopedMutator):
        def bind(self, var: Var, site: Expr | Clause) -> Var:
            return Var(var.name_hint.upper(), var.type_annotation)

    out = Upper().mutate(fn)
    assert isinstance(out, Function)
    assert [v.name_hint for v in bound_vars(out)] == ["X", "F", "N", "P", "A", "B"]
    assert free_vars(out) == []
    assert alpha_equal(fn, out)
    assert "%x" not in pretty(out) and "%F(subtract(%N, 1))" in pretty(out)


def test_bind_sees_every_site_once_with_its_binding_node() -> None:
    x, y, a = Var("x"), Var("y"), Var("a")
    match = Match(Tuple((x, x)), (Clause(PatternTuple((PatternVar(a), PatternVar(y))), a),))
    fn = Function((x,), Let(y, x, match))
    sites: list[tuple[str, str]] = []

    class Record(ScopedMutator):
        def bind(self, var: Var, site: Expr | Clause) -> Var:
            sites.append((var.name_hint, type(site).__name__))
            return var

    assert Record().mutate(fn) is fn
    assert sites == [("x", "Function"), ("y", "Let"), ("a", "Clause"), ("y", "Clause")]


def test_pre_replaces_before_children_and_descend_prunes() -> None:
    x = Var("x")
    inner = add(x, const(1))
    e = Tuple((If(const(True), inner, const(2)), Function((), inner)))
    seen: list[str] = []

    class FoldIf(ScopedMutator):
        def pre(self, node: Expr) -> Expr:
            if isinstance(node, If):
                return node.true_branch
            return node

        def descend(self, node: Expr) -> bool:
            return not isinstance(node, Function)

        def visit_call(self, new: Expr, old: Expr) -> Expr:
            seen.append("call")
            return Call(Op("subtract"), new.args)  # type: ignore[attr-defined]

    out = FoldIf().mutate(e)
    assert isinstance(out, Tuple)
    assert isinstance(out.fields[0], Call) and out.fields[0].op.name == "subtract"  # type: ignore
    assert out.fields[1] is e.fields[1]  # pruned: left as it is
    assert seen == ["call"]


def test_visit_hooks_rewrite_bottom_up_and_results_are_shared() -> None:
    x = Var("x")
    shared_node = add(x, x)
    e = Function((x,), Tuple((shared_node, shared_node)))

    class AddToMul(ScopedMutator):
        def visit_call(self, new: Expr, old: Expr) -> Expr:
            return Call(Op("multiply"), new.args)  # type: ignore[attr-defined]

    out = AddToMul().mutate(e)
    assert isinstance(out, Function) and isinstance(out.body, Tuple)
    first, second = out.body.fields
    assert first is second and first.op.name == "multiply"  # type: ignore[attr-defined]
    assert out.params == e.params


def test_a_variable_bound_at_two_sites_is_renamed_per_scope() -> None:
    # Ill-formed (one Var object bound twice) but must still rewrite correctly: the
    # shared node ``add(x, x)`` lies under two different bindings of ``x``.
    x = Var("x")
    body = add(x, x)
    e = Tuple((Let(x, const(1), body), Let(x, const(2), body)))
    out = fresh_copy(e)
    assert isinstance(out, Tuple)
    l1, l2 = out.fields
    assert isinstance(l1, Let) and isinstance(l2, Let)
    assert l1.var is not l2.var and l1.var is not x
    assert l1.body.args == (l1.var, l1.var)  # type: ignore[attr-defined]
    assert l2.body.args == (l2.var, l2.var)  # type: ignore[attr-defined]


# --- substitution -----------------------------------------------------------------------------

def test_substitute_avoids_capture() -> None:
    x, q = Var("x"), Var("q")
    e = Function((q,), add(x, q))
    out = substitute(e, {x: q})
    assert isinstance(out, Function)
    (p,) = out.params
    assert p is not q and p.name_hint == "q"
    assert out.body.args[0] is q and out.body.args[1] is p  # type: ignore[attr-defined]
    assert free_vars(out) == [q]


def test_substitute_respects_shadowing_and_recursive_let() -> None:
    x, y = Var("x"), Var("y")
    # fn (%x) { %x } binds the very object being substituted: the inner use is not free.
    e = Tuple((x, Function((x,), x)))
    out = substitute(e, {x: y})
    assert isinstance(out, Tuple)
    assert out.fields[0] is y and out.fields[1] is e.fields[1]
    f = Var("f")
    rec = Let(f, Function((y,), Call(f, (y,))), Call(f, (x,)))
    out2 = substitute(rec, {f: const(0), x: const(3)})
    assert isinstance(out2, Let) and out2.var is f
    assert isinstance(out2.body, Call) and out2.body.op is f


def test_substitute_agrees_with_evaluation_on_an_example() -> None:
    mod = parse("""
    def @main(%x: int32, %y: int32) -> int32 {
      let %g = fn (%z: int32) -> int32 { multiply(%z, %x) };
      %0 = add(%g(%y), %x);
      add(%0, %0)
    }""")
    main = mod["main"]
    x, y = main.params
    body = substitute(main.body, {x: const(3), y: const(4)})
    assert free_vars(body) == []
    assert evaluate(body) == evaluate(mod, 3, 4) == 30


# --- LetList and map_functions ----------------------------------------------------------------

def test_let_list_builds_a_normal_form() -> None:
    x = Var("x", I32)
    ll = LetList()
    a = ll.push(add(x, x), "a")
    b = ll.push(Call(Op("multiply"), (a, a)), "b")
    assert len(ll) == 2
    e = ll.get(b)
    assert isinstance(e, Let) and e.var is a and isinstance(e.body, Let) and e.body.var is b
    assert e.body.body is b
    assert evaluate(Function((x,), e), 3) == 36
    built = LetList.with_(lambda l2: TupleGetItem(Tuple((l2.push(const(7), "c"),)), 0))
    assert evaluate(built) == 7


def test_map_functions_rewrites_every_function_and_keeps_types() -> None:
    mod = parse("""
    type L { Nil, C(int32, L) }
    def @id(%a: int32) -> int32 { %a }
    def @main(%x: int32) -> int32 { @id(%x) }""")
    names: list[str] = []

    def f(name: str, fn: Function) -> Function:
        names.append(name)
        return fresh_copy(fn)  # type: ignore[return-value]

    out = map_functions(mod, f)
    assert out is not mod and names == ["id", "main"]
    assert out.types == mod.types and alpha_equal(out, mod)
    assert out["id"] is not mod["id"] and mod["id"].params[0] is not out["id"].params[0]
    with pytest.raises(TypeError, match="map_functions: @id"):
        map_functions(mod, lambda name, fn: fn.body)


# --- depth and width --------------------------------------------------------------------------

def _let_chain(n: int) -> Function:
    x0 = Var("x0", I32)
    ll = LetList()
    v: Expr = x0
    for i in range(n):
        v = ll.push(add(v, x0), f"x{i + 1}")
    return Function((x0,), ll.get(v))


def _graph(n: int) -> Function:
    x = Var("x", I32)
    nodes: list[Expr] = [x]
    for _ in range(n):
        nodes.append(add(nodes[-1], nodes[len(nodes) // 2]))
    return Function((x,), nodes[-1])


@pytest.mark.parametrize("build", [_let_chain, _graph], ids=["let-chain", "graph"])
def test_every_toolkit_function_handles_20000_deep_inputs(build: Any) -> None:
    fn = build(N)
    (x,) = fn.params
    assert ScopedMutator().mutate(fn) is fn
    assert _Unchanged().mutate(fn) is fn
    copy = fresh_copy(fn)
    assert alpha_equal(fn, copy)
    assert len(post_order(copy)) == len(post_order(fn))
    y = Var("y", I32)
    sub = substitute(fn.body, {x: y})
    assert free_vars(sub) == [y]
    assert alpha_equal(Function((y,), sub), fn)
    mod = IRModule({"main": fn})
    assert alpha_equal(map_functions(mod, lambda name, f: fresh_copy(f)), mod)  # type: ignore
    assert evaluate(copy, 1, check=False) == evaluate(fn, 1, check=False)
