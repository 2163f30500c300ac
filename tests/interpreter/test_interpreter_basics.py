"""The seed examples of the Relay docs and the paper, and the core rules one by one."""

from __future__ import annotations

import numpy as np
import pytest
from interp_util import assert_tensor, run

from interpreter import Closure, ConstructorValue, RefValue, evaluate
from interpreter.values import OpValue, value_str
from semantics import parse, parse_expr
from semantics.expr import Call, Constant, Function, Let, Op, Tuple, TupleGetItem, Var, const
from semantics.types import scalar_type


def test_shadowing_from_the_docs():
    # let %a = 1; let %b = 2 * %a; let %a = %a + %a; %a + %b  has value 2 + 2 = 4
    v = run("def @main() { let %a = 1; let %b = 2 * %a; let %a = %a + %a; %a + %b }")
    assert_tensor(v, 4, "int32")


def test_shadowing_as_an_expression():
    assert_tensor(run(parse_expr("let %a = 1; let %b = 2 * %a; let %a = %a + %a; %a + %b")),
                  4, "int32")


def test_closure_keeps_the_value_it_captured():
    # The docs' example: %f closes over %x = 0; the later %x = 1 does not change it.
    src = """
    def @main() -> float32 {
      let %g = fn () {
        let %x = 0f;
        fn (%y: float32) { %y * %x }
      };
      let %f = %g();
      let %x = 1f;
      %f(%x)
    }"""
    assert_tensor(run(src), 0.0, "float32")


def test_closure_call_from_the_docs():
    src = """
    def @main() {
      let %c = 1f;
      let %f = fn (%x: float32, %y: float32) { %x + %y + %c };
      %f(10f, 11f)
    }"""
    assert_tensor(run(src), 22.0, "float32")


FACT = """
def @fact(%n: int32) -> int32 {
  if (%n <= 1) { 1 } else { %n * @fact(%n - 1) }
}
"""


def test_recursive_factorial():
    assert_tensor(run(FACT, 10, entry="fact"), 3628800, "int32")
    assert_tensor(run(FACT, 1, entry="fact"), 1, "int32")


ACKERMANN = """
def @ackermann(%m: Tensor[(), int32], %n: Tensor[(), int32]) -> Tensor[(), int32] {
  if (%m == 0) {
    %n + 1
  } else {
    if (%m > 0 && %n == 0) {
      @ackermann(%m - 1, 1)
    } else {
      @ackermann(%m - 1, @ackermann(%m, %n - 1))
    }
  }
}
"""


@pytest.mark.parametrize("m, n, expected", [(0, 0, 1), (1, 2, 4), (2, 3, 9), (3, 2, 29)])
def test_ackermann_from_the_docs(m, n, expected):
    assert_tensor(run(ACKERMANN, m, n, entry="ackermann"), expected, "int32")


EVEN_ODD = """
def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
"""


@pytest.mark.parametrize("n", [0, 1, 6, 7, 501])
def test_mutual_recursion(n):
    assert_tensor(run(EVEN_ODD, n, entry="even"), n % 2 == 0, "bool")
    assert_tensor(run(EVEN_ODD, n, entry="odd"), n % 2 == 1, "bool")


def test_let_rec_local_function():
    src = """
    def @main(%n: int32) -> int32 {
      let %sum_to = fn (%i: int32) -> int32 { if (%i == 0) { 0 } else { %i + %sum_to(%i - 1) } };
      %sum_to(%n)
    }"""
    assert_tensor(run(src, 100), 5050, "int32")


def test_let_value_sees_the_outer_binding():
    # Only a function literal is recursive; another let value sees the outer %x.
    assert_tensor(run("def @main() { let %x = 1; let %x = %x + 10; %x }"), 11, "int32")


def test_let_rec_closure_survives_shadowing_of_its_name():
    # The self binding is part of the closure: rebinding %f afterwards does not affect it.
    src = """
    def @main() -> int32 {
      let %f = fn (%i: int32) -> int32 { if (%i == 0) { 7 } else { %f(%i - 1) } };
      let %g = %f;
      let %f = fn (%i: int32) -> int32 { 100 };
      %g(3)
    }"""
    assert_tensor(run(src), 7, "int32")


def test_operators_are_first_class_values():
    src = """
    def @apply2(%f: fn (int32, int32) -> int32, %a: int32, %b: int32) -> int32 { %f(%a, %b) }
    def @main() -> (int32, int32) { (@apply2(add, 3, 4), @apply2(multiply, 3, 4)) }
    """
    a, b = run(src)
    assert_tensor(a, 7, "int32")
    assert_tensor(b, 12, "int32")


def test_an_operator_as_the_result():
    v = run(parse_expr("let %f = subtract; %f"), check=False)  # its type is underdetermined
    assert isinstance(v, OpValue) and v.name == "subtract"
    assert_tensor(v(np.int32(5), np.int32(3)), 2, "int32")


def test_tuples_and_projection():
    v = run("def @main() { let %t = (1, (2f, True)); (%t.1.0, %t.0, %t.1) }")
    assert value_str(v) == "(2.0f, 1, (2.0f, True))"
    assert run(parse_expr("()")) == ()


def test_if_picks_one_branch_only():
    # The branch not taken is not evaluated: its effect never happens.
    src = """
    def @main() -> int32 {
      let %r = ref(0);
      let %x = if (True) { 1 } else { %r := 99; 2 };
      %x + !%r
    }"""
    assert_tensor(run(src), 1, "int32")


def test_sequencing_is_a_let():
    src = "def @main() { let %r = ref(1); %r := 5; !%r }"
    assert_tensor(run(src), 5, "int32")


def test_function_value_result_is_a_closure():
    v = run(parse_expr("fn (%x: int32) { %x }"))
    assert isinstance(v, Closure)
    assert value_str(v) == "<closure>"


def test_expression_applied_to_arguments():
    f = parse_expr("fn (%x: int32, %y: int32) { %x - %y }")
    assert_tensor(run(f, 10, 4), 6, "int32")
    # A non-function expression that evaluates to a closure is applied as well.
    g = parse_expr("let %k = 3; fn (%x: int32) { %x * %k }")
    assert_tensor(run(g, 5), 15, "int32")


def test_reference_result_is_a_ref_value():
    v = run(parse_expr("ref(3)"))
    assert isinstance(v, RefValue)
    assert_tensor(v.value, 3, "int32")
    assert value_str(v) == "ref(3)"


def test_dtypes_are_exact():
    v = run("def @main() { (1i64 + 2i64, 1.5f16 * 2f16, 255u8 + 1u8, 3.0f64) }")
    assert [x.dtype.name for x in v] == ["int64", "float16", "uint8", "float64"]
    assert_tensor(v[2], 0, "uint8")  # integer arithmetic wraps at the dtype's width
    assert all(x.ndim == 0 for x in v)


def test_results_are_writable_copies_of_constants():
    v = run(parse_expr("(1, 2f)"))
    assert all(x.flags.writeable for x in v)


def test_non_scalar_tensors():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    src = "def @main(%x: Tensor[(2, 3), float32]) { add(%x, %x) }"
    v = run(src, x)
    assert_tensor(v, 2 * x, "float32")
    assert value_str(v).startswith("array([[ 0.,  2.,  4.],")


def test_type_arguments_are_erased():
    v = run("""
    def @id[A](%x: A) -> A { %x }
    def @main() -> int32 { @id(5) }
    """)
    assert_tensor(v, 5, "int32")


def test_hand_built_ast_without_spans():
    x = Var("x", scalar_type("int32"))
    body = Let(x, const(20), Call(Op("add"), (x, const(22))))
    assert_tensor(evaluate(body, check=False), 42, "int32")
    t = Tuple((const(1), const(2.5)))
    assert value_str(evaluate(TupleGetItem(t, 1), check=False)) == "2.5f"
    f = Function((x,), Call(Op("multiply"), (x, x)))
    assert_tensor(evaluate(f, 7, check=False), 49, "int32")


def test_constant_node_result():
    c = Constant(np.arange(3, dtype=np.int64))
    assert_tensor(evaluate(c, check=False), [0, 1, 2], "int64")


def test_module_object_and_entry():
    mod = parse(FACT + "def @main() -> int32 { @fact(5) }")
    assert_tensor(run(mod), 120, "int32")
    assert_tensor(run(mod, 4, entry="fact"), 24, "int32")
    assert_tensor(run(mod, 4, entry="@fact"), 24, "int32")


def test_constructor_value_result():
    v = run(parse_expr("Cons(1, Cons(2, Nil))"))
    assert isinstance(v, ConstructorValue)
    assert v == ConstructorValue("Cons", (np.int32(1), ConstructorValue("Cons", (
        np.int32(2), ConstructorValue("Nil")))))
    assert value_str(v) == "Cons(1, Cons(2, Nil))"
