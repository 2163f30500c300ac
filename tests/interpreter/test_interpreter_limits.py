"""Robustness (docs/architecture.md#robustness): deep programs, long loops, fuel and max_depth."""

from __future__ import annotations

import numpy as np
import pytest
from interp_util import assert_tensor, run

from interpreter import ConstructorValue, evaluate
from semantics import RelayRuntimeError, parse
from semantics.expr import Call, Let, Op, Tuple, TupleGetItem, Var, const
from semantics.types import scalar_type

NAT = """
type Nat { Z, S(Nat), }

// Tail recursive: constant space, however long the loop.
def @count(%n: Nat, %acc: Nat) -> Nat {
  match (%n) { Z => %acc, S(%m) => @count(%m, S(%acc)) }
}

// The same loop through a let-bound closure (tail calls of a closure).
def @count_local(%n: Nat) -> Nat {
  let %loop = fn (%k: Nat, %acc: Nat) -> Nat {
    match (%k) { Z => %acc, S(%m) => %loop(%m, S(%acc)) }
  };
  %loop(%n, Z)
}

// Not tail recursive: one nested call per S.
def @units(%n: Nat) -> List[()] {
  match (%n) { Z => Nil, S(%m) => Cons((), @units(%m)) }
}
"""

NAT_MOD = parse(NAT)


def nat(k: int) -> ConstructorValue:
    v = ConstructorValue("Z")
    for _ in range(k):
        v = ConstructorValue("S", (v,))
    return v


def nat_size(v: ConstructorValue) -> int:
    k = 0
    while v.name == "S":
        v = v.fields[0]
        k += 1
    return k


def test_tail_loop_of_100000_iterations_runs_in_constant_depth():
    # max_depth=2: every iteration is a tail call, so the loop never gets deeper than 1.
    v = run(NAT_MOD, nat(100_000), ConstructorValue("Z"), entry="count", max_depth=2)
    assert nat_size(v) == 100_000


def test_tail_calls_of_a_let_bound_closure_are_tail_calls():
    v = run(NAT_MOD, nat(20_000), entry="count_local", max_depth=3)
    assert nat_size(v) == 20_000


def test_integer_tail_loop():
    src = """
    def @loop(%i: int32, %acc: int32) -> int32 {
      if (%i == 0) { %acc } else { @loop(%i - 1, %acc + 2) }
    }"""
    assert_tensor(run(src, 3000, 0, entry="loop", max_depth=2), 6000, "int32")


def test_mutual_tail_recursion_is_constant_depth():
    src = """
    def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
    def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
    """
    assert_tensor(run(src, 2001, entry="even", max_depth=2), False, "bool")


def test_non_tail_recursion_up_to_the_default_max_depth():
    # @units(n) nests n + 1 activations: 100,000 is exactly the default bound.
    v = run(NAT_MOD, nat(99_999), entry="units")
    k = 0
    while v.name == "Cons":
        v = v.fields[1]
        k += 1
    assert k == 99_999


def test_non_tail_recursion_beyond_max_depth_is_stack_exhausted():
    with pytest.raises(RelayRuntimeError) as info:
        run(NAT_MOD, nat(100), entry="units", max_depth=50)
    err = info.value
    assert err.message == "stack exhausted: more than 50 nested calls"
    call_line = next(i for i, line in enumerate(NAT.split("\n"), 1) if "@units(%m)" in line)
    assert err.span is not None and err.span.line == call_line  # the call @units(%m)


FACT = "def @fact(%n: int32) -> int32 { if (%n <= 1) { 1 } else { %n * @fact(%n - 1) } }"


def test_depth_1000_is_fine_and_depth_200_exceeds_100():
    assert_tensor(run(FACT, 1000, entry="fact"), 0, "int32")  # 1000! wraps to 0 in int32
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        run(FACT, 200, entry="fact", max_depth=100)
    assert_tensor(run(FACT, 100, entry="fact", max_depth=100), 0, "int32")


def test_depth_is_counted_exactly():
    # fact(n) nests n activations.
    run(FACT, 10, entry="fact", max_depth=10)
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        run(FACT, 11, entry="fact", max_depth=10)


def test_let_chain_of_20000():
    n = 20_000
    lines = ["def @main() -> int32 {", "  let %x0 = 0;"]
    lines += [f"  let %x{i} = (%x{i - 1}, {i}).1;" for i in range(1, n + 1)]
    lines += [f"  %x{n}", "}"]
    assert_tensor(run("\n".join(lines)), n, "int32")


def test_let_chain_of_20000_built_directly():
    # Every let refers to the first variable: lookups must not walk the chain.
    x0 = Var("x0", scalar_type("float32"))
    body = x0
    vars_ = [Var(f"x{i}") for i in range(1, 20_001)]
    for v in reversed(vars_):
        body = Let(v, Tuple((x0, x0)), body)
    program = Let(x0, const(1.5), body)
    assert_tensor(evaluate(program, check=False), 1.5, "float32")


def test_operator_graph_of_20000():
    n = 20_000
    lines = ["def @main(%x: float32) -> float32 {", "  %0 = add(%x, 1f);"]
    lines += [f"  %{i} = add(%{i - 1}, 1f);" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    assert_tensor(run("\n".join(lines), 0.0), float(n), "float32")


def test_nested_expression_20000_deep():
    # A 20,000-deep non-tail nesting of projections and tuples: no Python recursion.
    e = const(7)
    for _ in range(20_000):
        e = TupleGetItem(Tuple((e,)), 0)
    assert_tensor(evaluate(e, check=False), 7, "int32")


def test_fuel_counts_rule_applications():
    src = "def @main() -> int32 { let %a = 1; %a + %a }"
    names = []
    run(src, trace=lambda name, node: names.append(name))
    # Global, Call, Const, Let, Op, Id, Id, Call-Op.
    assert len(names) == 8
    assert_tensor(run(src, fuel=8), 2, "int32")
    with pytest.raises(RelayRuntimeError) as info:
        run(src, fuel=7)
    assert info.value.message.startswith("out of fuel")


def test_fuel_stops_an_infinite_loop():
    src = "def @spin(%i: int32) -> int32 { @spin(%i + 1) }"
    with pytest.raises(RelayRuntimeError, match="out of fuel"):
        run(src, 0, entry="spin", fuel=5000)


def test_fuel_zero():
    with pytest.raises(RelayRuntimeError, match="out of fuel"):
        run("def @main() -> int32 { 1 }", fuel=0)


def test_hand_built_op_chain_with_sharing_of_leaves():
    x = Var("x", scalar_type("int64"))
    e = x
    for _ in range(20_000):
        e = Call(Op("add"), (e, const(1, "int64")))
    from semantics.expr import Function

    v = evaluate(Function((x,), e), np.int64(5), check=False)
    assert_tensor(v, 20_005, "int64")
