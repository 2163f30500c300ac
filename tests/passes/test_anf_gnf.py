"""A-normal form (``to_anf``) and graph normal form (``to_gnf``): examples, properties, depth.

``is_anf`` below is an independent checker of the output shape: every scope (a
function body, an ``if`` branch, a clause body) is a chain of ``let`` s whose
values are compounds with atomic operands, ending in an atom, and no compound
node is reachable twice (all sharing has become ``let`` binding).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import passes
from conformance import assert_equivalent
from conformance.strategies.programs import ProgramConfig, well_typed_modules
from interpreter import evaluate
from interpreter.values import value_str
from semantics import alpha_equal, parse, pretty
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    RefWrite,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.visitor import post_order

to_anf = passes.to_anf
to_gnf = passes.to_gnf
_ATOMS = (Var, Constant, Op, Constructor, GlobalVar)


def is_anf(program: IRModule | Expr) -> bool:
    """Whether every function of ``program`` is in A-normal form (iterative)."""
    fns = list(program.functions.values()) if isinstance(program, IRModule) else [program]
    for fn in fns:
        parents: dict[int, int] = {}
        for node in post_order(fn):
            for kid in children(node):
                if not isinstance(kid, _ATOMS):
                    parents[id(kid)] = parents.get(id(kid), 0) + 1
        if isinstance(fn, Function) and fn.attrs.get("Primitive"):
            continue
        if any(n > 1 for n in parents.values()):
            return False
        scopes: list[Expr] = [fn.body] if isinstance(fn, Function) else [fn]
        while scopes:
            node = scopes.pop()
            while isinstance(node, Let):
                value = node.value
                if isinstance(value, Let):
                    return False
                if isinstance(value, If):
                    if not isinstance(value.cond, _ATOMS):
                        return False
                    scopes += [value.true_branch, value.false_branch]
                elif isinstance(value, Match):
                    if not isinstance(value.data, _ATOMS):
                        return False
                    scopes += [c.rhs for c in value.clauses]
                elif isinstance(value, Function):
                    if not value.attrs.get("Primitive"):  # fused kernels stay dataflow
                        scopes.append(value.body)
                elif not all(isinstance(k, _ATOMS) for k in children(value)):
                    return False
                node = node.body
            if isinstance(node, (If, Match)) or (isinstance(node, Call) and not isinstance(
                    node.op, (Op, Constructor))):
                # a tail call (or a branching whose branches may end in one) stays in place
                node = Let(Var("tail"), node, Var("tail"))
                scopes.append(node)
                continue
            if not isinstance(node, _ATOMS):
                return False
    return True


def run(program: IRModule, *args: object) -> str:
    return value_str(evaluate(program, *args))


def lets_in_order(e: Expr) -> list[Let]:
    """The lets of the top scope of ``e`` (a function's body spine), outermost first."""
    out = []
    node = e.body if isinstance(e, Function) else e
    while isinstance(node, Let):
        out.append(node)
        node = node.body
    return out


def tail_of(e: Expr) -> Expr:
    """The tail of the top scope of ``e`` (after its lets)."""
    node = e.body if isinstance(e, Function) else e
    while isinstance(node, Let):
        node = node.body
    return node


# --- to_anf: what it does -----------------------------------------------------------------------

LOOPS = """
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + %i) }
}
def @main(%n: int32) -> int32 {
  let %f = fn (%k: int32, %a: int32) -> int32 {
    if (%k == 0) { %a } else { %f(%k - 1, %a + 2) }
  };
  @loop(%n, 0) + %f(%n, 0)
}
"""


def test_tail_calls_stay_tail_calls_and_a_100000_iteration_loop_runs():
    """Issue 33: ANF bound a tail call (``let %x = @loop(...); %x``), and the loop then
    exhausted the stack. Calls of functions, ``if`` and ``match`` stay in tail position."""
    out = to_anf(parse(LOOPS))
    assert is_anf(out) and to_anf(out) is out
    tail = tail_of(out["loop"])
    assert isinstance(tail, If) and isinstance(tail_of(tail.false_branch), Call)
    assert evaluate(out, 100_000) == evaluate(parse(LOOPS), 100_000)
    assert evaluate(out, 100_000, 0, entry="loop", max_depth=2) == 705082704

def test_every_intermediate_result_is_let_bound_in_evaluation_order():
    mod = parse("def @main(%x: int32) { multiply(add(%x, 1), subtract(%x, 2)) }")
    out = to_anf(mod)
    assert is_anf(out)
    ops = [let.value.op.name for let in lets_in_order(out["main"])]
    assert ops == ["add", "subtract", "multiply"]
    assert run(out, 5) == run(mod, 5)


def test_effects_keep_their_order():
    mod = parse("""
    def @main() {
      let %r = ref(1);
      (ref_read(%r), ref_write(%r, add(ref_read(%r), 10)), ref_read(%r), %r := 3, !%r)
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    kinds = [type(let.value).__name__ for let in lets_in_order(out["main"])]
    assert kinds == ["RefCreate", "RefRead", "RefRead", "Call", "RefWrite", "RefRead",
                     "RefWrite", "RefRead", "Tuple"]
    assert run(out) == run(mod) == "(1, (), 11, (), 3)"


def test_bindings_stay_inside_branches_and_functions():
    mod = parse("""
    def @main(%x: int32) {
      let %f = fn (%y: int32) { add(multiply(%x, 2), %y) };
      if (less(%x, 3)) { %f(add(%x, 1)) } else { multiply(%x, add(%x, 2)) }
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    top = lets_in_order(out["main"])
    # At the top: %f, the condition, and the if in tail position; nothing of the branches or
    # of %f's body.
    assert [type(let.value).__name__ for let in top] == ["Function", "Call"]
    fn_body = lets_in_order(top[0].value)
    assert [let.value.op.name for let in fn_body] == ["multiply", "add"]
    branch = tail_of(out["main"])
    assert isinstance(branch, If)
    assert len(lets_in_order(branch.true_branch)) == 1      # the argument; the call is the tail
    assert isinstance(tail_of(branch.true_branch), Call)
    assert len(lets_in_order(branch.false_branch)) == 2
    for x in (1, 5):
        assert run(out, x) == run(mod, x)


def test_shadowing_and_nested_lets():
    mod = parse("""
    def @main() {
      let %x = 1;
      let %x = add(%x, 1);
      let %y = (let %x = multiply(%x, 10); add(%x, 1));
      (%x, %y)
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    assert run(out) == run(mod) == "(2, 21)"


def test_a_shared_node_is_bound_once():
    mod = parse("""
    def @main(%x: int32) {
      %0 = add(%x, 1);
      %1 = multiply(%0, %0);
      (%1, %0, %1)
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    assert [let.value.op.name for let in lets_in_order(out["main"])[:2]] == ["add", "multiply"]
    assert len(lets_in_order(out["main"])) == 3
    assert run(out, 2) == run(mod, 2)


def test_a_pure_shared_node_goes_to_the_scope_dominating_its_uses():
    mod = parse("""
    def @main(%x: int32) {
      %0 = multiply(%x, %x);
      if (less(%x, 3)) { add(%0, 1) } else { %0 }
    }""")
    out = to_anf(mod)
    top = lets_in_order(out["main"])
    assert [type(let.value).__name__ for let in top] == ["Call", "Call"]
    assert isinstance(tail_of(out["main"]), If)
    assert top[1].value.op.name == "multiply"
    for x in (1, 5):
        assert run(out, x) == run(mod, x)


def test_an_effectful_shared_node_is_bound_in_each_branch_that_reaches_it():
    # Only one branch runs per evaluation, so one binding per branch evaluates it once, at
    # the point where the oracle does (its first use in that branch).
    mod = parse("""
    def @main(%c: bool) {
      let %r = ref(0);
      %0 = ref_write(%r, add(ref_read(%r), 9));
      let %v = if (%c) { %0; 1 } else { %r := 5; %0; 2 };
      (%v, ref_read(%r))
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    writes = [n for n in post_order(out["main"]) if isinstance(n, RefWrite)]
    assert len(writes) == 3  # the shared write twice (one per branch) and `%r := 5`
    top = lets_in_order(out["main"])
    assert not any(isinstance(let.value, RefWrite) for let in top)
    for c in (True, False):
        assert run(out, c) == run(mod, c)


def test_an_effectful_node_used_in_sequence_is_bound_at_its_first_use():
    mod = parse("""
    def @main() {
      let %r = ref(0);
      %0 = ref_write(%r, add(ref_read(%r), 1));
      (ref_read(%r), %0, ref_read(%r), %0, ref_read(%r))
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    assert run(out) == run(mod) == "(0, (), 1, (), 1)"


def test_a_node_first_reached_in_a_branch_and_used_after_it_is_evaluated_once():
    # The oracle evaluates %0 in the branch when it runs, else at the later use: no single
    # binding expresses that; to_anf binds it once before the `if` (documented limitation).
    mod = parse("""
    def @main(%c: bool) {
      let %r = ref(0);
      %0 = ref_write(%r, add(ref_read(%r), 1));
      let %v = if (%c) { %0; 1 } else { 2 };
      (%v, %0, ref_read(%r))
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    writes = [n for n in post_order(out["main"]) if isinstance(n, RefWrite)]
    assert len(writes) == 1
    assert any(isinstance(let.value, RefWrite) for let in lets_in_order(out["main"]))
    assert run(out, True) == run(mod, True) == "(1, (), 1)"
    assert run(out, False) == run(mod, False) == "(2, (), 1)"


def test_a_node_shared_with_a_function_body_is_bound_in_each_activation():
    mod = parse("""
    def @main(%x: int32) {
      %0 = add(%x, 1);
      let %f = fn (%y: int32) { multiply(%0, %y) };
      (%0, %f(2), %f(3))
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    fn = lets_in_order(out["main"])[0].value
    assert isinstance(fn, Function)
    assert [let.value.op.name for let in lets_in_order(fn)] == ["add", "multiply"]
    assert run(out, 4) == run(mod, 4)


def test_a_node_normalized_twice_gets_fresh_binders():
    mod = parse("""
    def @main(%c: bool) {
      let %r = ref(1);
      %0 = (let %t = ref_read(%r); %r := add(%t, 1));
      if (%c) { %0; 1 } else { %0; 2 }
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    binders = [n.var for n in post_order(out["main"]) if isinstance(n, Let)]
    assert len({id(v) for v in binders}) == len(binders)
    for c in (True, False):
        assert run(out, c) == run(mod, c)


def test_to_anf_is_idempotent_and_keeps_anf_programs_as_they_are():
    mod = parse("def @main(%x: int32) { let %a = add(%x, 1); let %b = (%a, %x); %b }")
    assert to_anf(mod) is mod
    converted = to_anf(parse("def @main(%x: int32) { (add(%x, 1), if (%x > 0) { 1 } else { 2 }) }"))
    assert to_anf(converted) is converted


def test_fused_functions_are_kept_as_they_are():
    mod = parse("""
    def @main(%x: int32) {
      %0 = fn (%y: int32, Primitive=1) { add(multiply(%y, 2), 1) };
      %0(add(%x, 1))
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    fused = lets_in_order(out["main"])[0].value
    assert alpha_equal(fused, mod["main"].body.op)
    assert run(out, 3) == run(mod, 3)


def test_to_anf_on_an_expression():
    e = passes.to_anf(parse("def @main(%x: int32) { add(add(%x, 1), 2) }")["main"])
    assert isinstance(e, Function) and is_anf(e)


# --- to_gnf ------------------------------------------------------------------------------------

def test_pure_lets_become_shared_nodes():
    mod = parse("""
    def @main(%x: int32) {
      let %a = add(%x, 1);
      let %b = multiply(%a, %a);
      (%b, %a)
    }""")
    out = to_gnf(mod)
    assert alpha_equal(out, parse("""
    def @main(%x: int32) {
      %0 = add(%x, 1);
      (multiply(%0, %0), %0)
    }"""))
    assert run(out, 3) == run(mod, 3)


def test_reads_writes_failures_unused_recursive_and_captured_lets_stay():
    mod = parse("""
    def @main(%d: int32) {
      let %r = ref(1);
      let %before = ref_read(%r);
      let %w = ref_write(%r, 5);
      let %q = divide(7, %d);
      let %unused = add(1, 2);
      let %loop = fn (%n: int32) -> int32 {
        if (less_equal(%n, 0)) { 0 } else { add(%n, %loop(subtract(%n, 1))) }
      };
      let %c = multiply(2, 3);
      let %g = fn (%y: int32) { add(%y, %c) };
      (%before, %w, %q, ref_read(%r), %loop(3), %g(1), %g(2))
    }""")
    out = to_gnf(mod)
    kept = [let.var.name_hint for let in lets_in_order(out["main"])]
    assert kept == ["before", "w", "q", "unused", "loop", "c"]
    assert run(out, 2) == run(mod, 2)


def test_an_allocation_used_twice_stays_one_allocation():
    mod = parse("""
    def @main() {
      let %r = ref(0);
      let %w = ref_write(%r, 4);
      (%w, ref_read(%r))
    }""")
    out = to_gnf(mod)
    assert run(out) == run(mod) == "((), 4)"
    creates = [n for n in post_order(out["main"]) if type(n).__name__ == "RefCreate"]
    assert len(creates) == 1


def test_a_needed_annotation_keeps_its_let():
    mod = parse("""
    type Box[A] { Empty, Full(A) }
    def @main() {
      let %e: Box[int32] = Empty;
      match (%e) { Empty => 0, Full(%v) => %v }
    }""")
    out = to_gnf(mod)
    assert run(out) == run(mod)
    from typechecker import infer
    infer(out)


def test_to_gnf_keeps_programs_without_convertible_lets():
    mod = parse("def @main(%x: int32) { add(%x, 1) }")
    assert to_gnf(mod) is mod
    effects = parse("def @main() { let %r = ref(1); let %v = ref_read(%r); %v }")
    out = to_gnf(effects)
    assert to_gnf(out) is out


def test_round_trip_restores_the_graph():
    text = "def @main(%x: int32) {\n  %0 = add(%x, %x);\n"
    text += "".join(f"  %{i} = add(%{i - 1}, %{i - 1});\n" for i in range(1, 60))
    text += "  %59\n}"
    mod = parse(text)
    anf = to_anf(mod)
    assert len(lets_in_order(anf["main"])) == 60
    back = to_gnf(anf)
    assert alpha_equal(back, mod)
    assert int(evaluate(back, 1)) == int(evaluate(mod, 1))


# --- properties over generated programs ---------------------------------------------------------

_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(well_typed_modules())
def test_anf_output_is_in_anf_and_idempotent(program):
    before = pretty(program.module)
    out = to_anf(program.module)
    assert pretty(program.module) == before
    assert is_anf(out)
    assert to_anf(out) is out


@_SETTINGS
@given(well_typed_modules())
def test_gnf_is_idempotent(program):
    out = to_gnf(program.module)
    again = to_gnf(out)
    assert again is out or alpha_equal(again, out)


def test_round_trip_preserves_meaning():
    assert_equivalent(lambda m: to_gnf(to_anf(m)), max_examples=40, name="to_gnf . to_anf")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("pass_", [to_anf, to_gnf], ids=["to_anf", "to_gnf"])
def test_effect_heavy_programs(pass_, seed):
    assert_equivalent(pass_, max_examples=25, seed=seed,
                      config=ProgramConfig(effects=3, max_let_chain=4), name=pass_.name)


# --- depth (docs/architecture.md#robustness) ------------------------------------------------------

def _let_chain(n: int) -> str:
    lines = ["def @main(%x0: int32) {"]
    lines += [f"  let %x{i + 1} = add(%x{i}, 1);" for i in range(n)]
    lines += [f"  %x{n}", "}"]
    return "\n".join(lines)


def _graph(n: int) -> str:
    lines = ["def @main(%x: int32) {", "  %0 = add(%x, 1);"]
    lines += [f"  %{i} = add(%{i - 1}, %x);" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    return "\n".join(lines)


def _nested(n: int) -> str:
    return "def @main(%x: int32) {\n  " + "add(" * n + "%x" + ", 1)" * n + "\n}"


@pytest.mark.parametrize("make", [_let_chain, _graph, _nested], ids=["lets", "graph", "nested"])
def test_20000_deep_programs(make):
    mod = parse(make(20_000))
    expected = int(evaluate(mod, 1))
    anf = to_anf(mod)
    assert len(lets_in_order(anf["main"])) == 20_000
    assert int(evaluate(anf, 1)) == expected
    gnf = to_gnf(anf)
    assert not lets_in_order(gnf["main"])
    assert int(evaluate(gnf, 1)) == expected
    assert to_anf(anf) is anf


def test_a_shared_allocation_is_bound_once_in_the_dominating_scope():
    # Allocating earlier is unobservable; it stays one allocation per activation.
    mod = parse("""
    def @main(%c: bool) {
      %0 = ref(5);
      let %v = if (%c) { %0 := 1; 0 } else { 2 };
      (%v, !%0)
    }""")
    out = to_anf(mod)
    assert is_anf(out)
    creates = [n for n in post_order(out["main"]) if type(n).__name__ == "RefCreate"]
    assert len(creates) == 1
    assert type(lets_in_order(out["main"])[0].value).__name__ == "RefCreate"
    for c in (True, False):
        assert run(out, c) == run(mod, c)


def test_an_annotation_that_changes_the_type_keeps_its_let():
    mod = parse("""
    def @main(%x: Tensor[(3), float32]) {
      let %y: Tensor[(?), float32] = add(%x, %x);
      %y
    }""")
    assert to_gnf(mod) is mod


def test_to_gnf_with_a_variable_bound_twice():
    # The same Var object bound at two sites (as a careless rewrite may leave it).
    from semantics.expr import Call, Let, const
    x = Var("x")
    e = Let(x, const(1), Let(x, Call(Op("add"), (x, const(1))),
                             Call(Op("multiply"), (x, x))))
    out = to_gnf(e)
    assert int(evaluate(out)) == int(evaluate(e)) == 4
    assert not isinstance(out, Let)


# --- effectful graph sharing (the generators share pure nodes only) ----------------------------

@st.composite
def effectful_sharing(draw: st.DrawFn) -> IRModule:
    """``main(%c: int32)`` over one reference, with effectful and failable shared nodes.

    An effectful node is reused only where the oracle's evaluation point is unambiguous:
    in the scope it was first used in or a scope nested in it (its first use dominates), or
    at the top of the other branch of the ``if`` it was first used in (one branch runs).
    """
    from semantics.expr import Call, Let, RefCreate, RefRead, Tuple, TupleGetItem, const
    from semantics.types import TensorType

    c = Var("c", TensorType((), "int32"))
    r = Var("r")
    pool: list[tuple[Expr, tuple[tuple[int, int], ...], bool]] = []  # node, context, effectful
    ifs = [0]

    def reusable(ctx: tuple[tuple[int, int], ...], made: tuple[tuple[int, int], ...],
                 effectful: bool) -> bool:
        if not effectful or ctx[:len(made)] == made:
            return True
        i = next((k for k in range(min(len(ctx), len(made))) if ctx[k] != made[k]), None)
        return i is not None and len(ctx) == i + 1 and ctx[i][0] == made[i][0]

    def op(name: str, *args: Expr) -> Expr:
        return Call(Op(name), args)

    def build(depth: int, ctx: tuple[tuple[int, int], ...]) -> tuple[Expr, bool]:
        choices = [e for e in pool if reusable(ctx, e[1], e[2])]
        effectful = [e for e in choices if e[2]]
        siblings = [e for e in effectful if ctx[:len(e[1])] != e[1]]
        if siblings and draw(st.booleans()):  # one first used in the other branch
            node, _, eff = siblings[draw(st.integers(0, len(siblings) - 1))]
            return node, eff
        if effectful and draw(st.booleans()):  # reuse an effectful node (often)
            node, _, eff = effectful[draw(st.integers(0, len(effectful) - 1))]
            return node, eff
        kind = draw(st.integers(0, 9 if depth > 0 else 2))
        if kind == 0:
            return (c if draw(st.booleans()) else const(draw(st.integers(-3, 3)), "int32")), False
        if kind == 1 and choices:
            node, _, eff = choices[draw(st.integers(0, len(choices) - 1))]
            return node, eff
        if kind <= 2:
            return RefRead(r), True
        if kind == 3:
            (a, ea), (b, eb) = build(depth - 1, ctx), build(depth - 1, ctx)
            node, eff = op(draw(st.sampled_from(["add", "subtract", "multiply"])), a, b), ea or eb
        elif kind == 4:
            (a, ea), (b, eb) = build(depth - 1, ctx), build(depth - 1, ctx)
            node, eff = op("divide", a, b), True
        elif kind in (5, 9):
            (a, _), (b, _) = build(depth - 1, ctx), build(depth - 1, ctx)
            node, eff = TupleGetItem(Tuple((RefWrite(r, op("add", RefRead(r), a)), b)), 1), True
        elif kind == 6:
            ifs[0] += 1  # an `if` whose branches start with a write, then more
            n = ifs[0]
            (a, _), (b, _) = build(depth - 1, ctx), build(depth - 1, ctx)
            branches = []
            for i in (1, 2):
                (t, _) = build(depth - 1, ctx + ((n, i),))
                bump = RefWrite(r, op("add", RefRead(r), const(10 * i, "int32")))
                branches.append(Let(Var("_"), bump, t) if draw(st.booleans()) else t)
            node, eff = If(op("less", a, b), branches[0], branches[1]), True
        elif kind == 7:
            (a, ea) = build(depth - 1, ctx)
            v = Var("v")
            outer = len(pool)
            pool.append((v, ctx, False))
            (b, eb) = build(depth - 1, ctx)
            del pool[outer:]  # nothing mentioning %v escapes its scope
            node, eff = Let(v, a, b), ea or eb
        else:
            (a, ea), (b, eb) = build(depth - 1, ctx), build(depth - 1, ctx)
            node, eff = Let(Var("_"), a, b), ea or eb
        pool.append((node, ctx, eff))
        return node, eff

    body, _ = build(draw(st.integers(1, 5)), ())
    main = Function((c,), Let(r, RefCreate(const(1, "int32")), Tuple((body, RefRead(r)))))
    return IRModule({"main": main})


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(effectful_sharing(), st.integers(-3, 3))
def test_effectful_sharing_is_evaluated_where_the_oracle_does(mod, c):
    import numpy as np

    from conformance.harness import run_oracle

    expected = run_oracle(mod, [np.int32(c)])
    assert expected.error != "RelayTypeError", expected.describe()
    for out in (to_anf(mod), to_gnf(to_anf(mod)), to_gnf(mod)):
        got = run_oracle(out, [np.int32(c)])
        same = got.describe() == expected.describe() if expected.ok else got.error == expected.error
        assert same, f"{pretty(mod)}\n{pretty(out)}\n{expected.describe()} != {got.describe()}"
    anf = to_anf(mod)
    assert is_anf(anf) and to_anf(anf) is anf


def test_20000_nested_branches_sharing_one_node():
    # Every level uses %0: its dominating scope is found without walking the nesting depth.
    n = 20_000
    text = ("def @main(%c: bool, %x: int32) {\n  %0 = add(%x, 1);\n  "
            + "if (%c) { add(%0, " * n + "%0" + ") } else { %0 }" * n + "\n}")
    mod = parse(text)
    anf = to_anf(mod)
    assert type(lets_in_order(anf["main"])[0].value).__name__ == "Call"  # %0, bound once
    assert int(evaluate(anf, True, 1)) == int(evaluate(mod, True, 1)) == 2 * (n + 1)
    assert int(evaluate(to_gnf(anf), False, 1)) == 2
