"""References (the store Δ), evaluation order, and graph sharing (Semantics-Shared)."""

from __future__ import annotations

import numpy as np
from interp_util import assert_tensor, run

from interpreter import RefValue, evaluate
from interpreter.values import value_str
from semantics import parse_expr
from semantics.expr import Call, Function, Op, RefCreate, RefRead, RefWrite, Tuple, Var, const


def test_reference_aliasing():
    src = """
    def @main() -> (int32, int32) {
      let %r = ref(1);
      let %s = %r;
      %s := 2;
      let %t = ref(!%r);
      %t := 3;
      (!%r, !%t)
    }"""
    assert value_str(run(src)) == "(2, 3)"


def test_references_shared_by_closures():
    src = """
    def @main() -> (int32, int32) {
      let %counter = ref(0);
      let %inc = fn () -> int32 { %counter := !%counter + 1; !%counter };
      let %get = fn () -> int32 { !%counter };
      %inc(); %inc(); %inc();
      (%get(), %inc())
    }"""
    assert value_str(run(src)) == "(3, 4)"


def test_ref_write_evaluates_to_unit():
    assert run(parse_expr("let %r = ref(1f); %r := 2f")) == ()


def test_tuple_fields_left_to_right():
    src = """
    def @main() -> (int32, int32, int32) {
      let %r = ref(0);
      let %tick = fn () -> int32 { %r := !%r + 1; !%r };
      (%tick(), %tick(), %tick())
    }"""
    assert value_str(run(src)) == "(1, 2, 3)"


def test_callee_before_arguments_arguments_left_to_right():
    # The callee's effect (r * 10) happens before the arguments' (r + 1).
    src = """
    def @main() -> (int32, int32, int32) {
      let %r = ref(1);
      let %tick = fn () -> int32 { %r := !%r + 1; !%r };
      let %g = fn (%a: int32, %b: int32) -> (int32, int32, int32) { (%a, %b, !%r) };
      let %pick = fn () -> fn (int32, int32) -> (int32, int32, int32) { %r := !%r * 10; %g };
      %pick()(%tick(), %tick())
    }"""
    assert value_str(run(src)) == "(11, 12, 12)"


def test_ref_write_evaluates_reference_then_value():
    src = """
    def @main() -> (int32, int32) {
      let %log = ref(0);
      let %a = ref(0);
      let %which = fn () -> Ref[int32] { %log := !%log * 10 + 1; %a };
      let %val = fn () -> int32 { %log := !%log * 10 + 2; 5 };
      %which() := %val();
      (!%log, !%a)
    }"""
    assert value_str(run(src)) == "(12, 5)"


def test_let_value_before_body_and_store_threading():
    src = """
    def @main() -> int32 {
      let %r = ref(5);
      let %old = !%r;
      %r := 7;
      %old * 10 + !%r
    }"""
    assert_tensor(run(src), 57, "int32")


def test_reference_values_are_returned_by_identity():
    r = run(parse_expr("let %r = ref(1); (%r, %r)"))
    assert isinstance(r[0], RefValue) and r[0] is r[1]


def test_cyclic_reference_prints():
    src = """
    type Box { Box(Ref[Option[Box]]), }
    def @main() -> Box {
      let %r = ref(None);
      let %b = Box(%r);
      %r := Some(%b);
      %b
    }"""
    assert value_str(run(src)) == "Box(ref(Some(Box(ref(...)))))"


# --- sharing ------------------------------------------------------------------------------

SHARED_WRITE = """
def @main() -> (int32, (), ()) {
  let %r = ref(0);
  %0 = %r := !%r + 1;
  %1 = (%0, %0);
  (!%r, %1.0, %1.1)
}
"""


def test_a_shared_node_is_evaluated_once():
    # %0 is reachable along two edges; its write happens once, so the counter is 1 ...
    # ... at the time of the read, which comes first (left to right): 0.
    assert value_str(run(SHARED_WRITE)) == "(0, (), ())"
    src = SHARED_WRITE.replace("(!%r, %1.0, %1.1)", "(%1.0, %1.1, !%r)").replace(
        "-> (int32, (), ())", "-> ((), (), int32)")
    assert value_str(run(src)) == "((), (), 1)"


def test_shared_node_once_per_activation():
    src = """
    def @bump(%r: Ref[int32]) -> int32 {
      %0 = %r := !%r + 1;
      %1 = (%0, %0, %0);
      %2 = (%1, !%r);
      %2.1
    }
    def @main() -> (int32, int32, int32) {
      let %r = ref(0);
      (@bump(%r), @bump(%r), !%r)
    }"""
    assert value_str(run(src)) == "(1, 2, 2)"


def test_sharing_in_a_hand_built_dag():
    # The Python object `write` is used twice: a graph, not a tree.
    r = Var("r")
    write = RefWrite(r, Call(Op("add"), (RefRead(r), const(1))))
    body = Tuple((write, write, RefRead(r)))
    from semantics.expr import Let

    program = Let(r, RefCreate(const(0)), body)
    v = evaluate(program, check=False)
    assert value_str(v) == "((), (), 1)"


def test_shared_rule_is_reported():
    names = []
    run(SHARED_WRITE, trace=lambda name, node: names.append(name))
    assert names.count("Semantics-Shared") == 2  # the second use of %0 and of %1
    assert names.count("Semantics-Ref-Write") == 1


def test_doubling_chain_of_60_graph_bindings_is_linear():
    lines = ["def @main(%x: int64) -> int64 {", "  %0 = add(%x, %x);"]
    lines += [f"  %{i} = add(%{i - 1}, %{i - 1});" for i in range(1, 60)]
    lines += ["  %59", "}"]
    names = []
    v = run("\n".join(lines), 1, trace=lambda name, node: names.append(name))
    assert_tensor(v, 2 ** 60, "int64")
    assert names.count("Semantics-Call-Op") == 60
    assert names.count("Semantics-Shared") == 59


def test_shared_function_node_inside_closure():
    # A node shared between two calls of an inner function is evaluated once per call.
    x = Var("x")
    r = Var("r")
    bump = RefWrite(r, Call(Op("add"), (RefRead(r), const(1))))
    inner = Function((x,), Tuple((bump, bump, RefRead(r))))
    from semantics.expr import Let

    f = Var("f")
    program = Let(r, RefCreate(const(0)), Let(f, inner, Tuple((
        Call(f, (const(0),)), Call(f, (const(0),))))))
    v = evaluate(program, check=False)
    assert value_str(v) == "(((), (), 1), ((), (), 2))"


def test_sharing_of_pure_nodes_gives_equal_values():
    src = """
    def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
      %0 = exp(%x);
      %1 = add(%0, %0);
      multiply(%1, %0)
    }"""
    x = np.array([0.0, 1.0, -1.0], dtype=np.float32)
    e = np.exp(x)
    np.testing.assert_allclose(run(src, x), (e + e) * e, rtol=1e-6)
