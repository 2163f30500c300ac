"""ADTs and pattern matching: the prelude's lists and trees, nested patterns, clause order."""

from __future__ import annotations

import numpy as np
import pytest
from interp_util import assert_tensor, run

from interpreter import ConstructorValue
from interpreter.values import value_str
from semantics import RelayRuntimeError, parse_expr


def py_list(values, dtype="int32"):
    """A Python list as a prelude List value (built iteratively)."""
    out = ConstructorValue("Nil")
    for v in reversed(values):
        out = ConstructorValue("Cons", (np.array(v, dtype=dtype), out))
    return out


def to_py(v):
    """A prelude List value as a Python list of scalars."""
    out = []
    while v.name == "Cons":
        out.append(v.fields[0].item())
        v = v.fields[1]
    assert v.name == "Nil"
    return out


LISTS = """
def @inc(%x: int32) -> int32 { %x + 1 }
def @is_even(%x: int32) -> bool { floor_mod(%x, 2) == 0 }
def @plus(%a: int32, %b: int32) -> int32 { %a + %b }
def @minus(%a: int32, %b: int32) -> int32 { %a - %b }
def @main(%xs: List[int32]) { @map(@inc, %xs) }
"""


def entry(body, ret=""):
    return LISTS.replace("def @main(%xs: List[int32]) { @map(@inc, %xs) }",
                         f"def @main(%xs: List[int32]){ret} {{ {body} }}")


@pytest.mark.parametrize("body, expected", [
    ("@map(@inc, %xs)", [2, 3, 4, 5]),
    ("@filter(@is_even, %xs)", [2, 4]),
    ("@rev(%xs)", [4, 3, 2, 1]),
    ("@concat(%xs, @rev(%xs))", [1, 2, 3, 4, 4, 3, 2, 1]),
])
def test_list_functions_returning_lists(body, expected):
    assert to_py(run(entry(body), py_list([1, 2, 3, 4]))) == expected


@pytest.mark.parametrize("body, expected", [
    ("@length(%xs)", 4),
    ("@foldl(@minus, 0, %xs)", ((((0 - 1) - 2) - 3) - 4)),
    ("@foldr(@minus, 0, %xs)", 1 - (2 - (3 - (4 - 0)))),
    ("@sum(%xs)", 10),
    ("@nth(%xs, 2)", 3),
    ("@hd(%xs)", 1),
])
def test_list_functions_returning_scalars(body, expected):
    assert_tensor(run(entry(body), py_list([1, 2, 3, 4])), expected, "int32")


def test_empty_list():
    assert_tensor(run(entry("@length(%xs)"), ConstructorValue("Nil")), 0, "int32")
    assert to_py(run(entry("@map(@inc, %xs)"), ConstructorValue("Nil"))) == []


def test_list_built_in_relay():
    v = run(parse_expr("@map(fn (%x: int32) { %x * 10 }, Cons(1, Cons(2, Nil)))"))
    assert value_str(v) == "Cons(10, Cons(20, Nil))"


def test_constructor_as_a_function_value():
    # @concat folds with Cons itself: a constructor passed as a function.
    v = run(parse_expr("@foldr(Cons, Cons(9, Nil), Cons(1, Cons(2, Nil)))"))
    assert value_str(v) == "Cons(1, Cons(2, Cons(9, Nil)))"


TREES = """
def @leaf(%x: int32) -> Tree[int32] { Rose(%x, Nil) }
def @main() -> (int32, Tree[int32]) {
  let %t = Rose(1, Cons(@leaf(2), Cons(Rose(3, Cons(@leaf(4), Nil)), Nil)));
  (@size(%t), @tmap(fn (%x: int32) { %x * 2 }, %t))
}
"""


def test_tree_size_and_map():
    size, tree = run(TREES)
    assert_tensor(size, 4, "int32")
    assert value_str(tree) == \
        "Rose(2, Cons(Rose(4, Nil), Cons(Rose(6, Cons(Rose(8, Nil), Nil)), Nil)))"


def test_tree_argument():
    leaf = ConstructorValue("Rose", (np.int32(5), ConstructorValue("Nil")))
    tree = ConstructorValue("Rose", (7, ConstructorValue("Cons", (leaf, ConstructorValue("Nil")))))
    v = run("def @main(%t: Tree[int32]) -> int32 { @size(%t) }", tree)
    assert_tensor(v, 2, "int32")


OPTION_PAIRS = """
type Shape { Circle(float32), Rect(float32, float32), Dot, }
def @area(%s: Shape) -> float32 {
  match (%s) {
    Circle(%r) => 3f * %r * %r,
    Rect(%w, %h) => %w * %h,
    Dot => 0f,
  }
}
def @classify(%p: (Option[int32], List[int32])) -> int32 {
  match (%p) {
    (None, Nil) => 0,
    (Some(%x), Cons(%y, Cons(_, _))) => %x + %y + 100,
    (Some(%x), Cons(%y, _)) => %x + %y,
    (Some(_), _) => -1,
    (_, Cons(%z, _)) => %z * 10,
  }
}
"""


@pytest.mark.parametrize("shape, expected", [
    (ConstructorValue("Circle", (2.0,)), 12.0),
    (ConstructorValue("Rect", (2.0, 3.5)), 7.0),
    (ConstructorValue("Dot"), 0.0),
])
def test_user_adt_match(shape, expected):
    assert_tensor(run(OPTION_PAIRS, shape, entry="area"), expected, "float32")


@pytest.mark.parametrize("option, xs, expected", [
    (ConstructorValue("None"), [], 0),
    (ConstructorValue("Some", (5,)), [1, 2], 106),   # the earlier, more specific clause wins
    (ConstructorValue("Some", (5,)), [1], 6),
    (ConstructorValue("Some", (5,)), [], -1),
    (ConstructorValue("None"), [3, 4], 30),
])
def test_nested_tuple_patterns_wildcards_and_clause_order(option, xs, expected):
    v = run(OPTION_PAIRS, (option, py_list(xs)), entry="classify")
    assert_tensor(v, expected, "int32")


def test_first_matching_clause_wins_even_if_later_ones_match():
    v = run(parse_expr("match (Some(3)) { _ => 1, Some(%x) => %x }"))
    assert_tensor(v, 1, "int32")


def test_variable_pattern_binds_whole_value():
    v = run(parse_expr("match ((1, 2)) { %p => (%p.1, %p.0) }"))
    assert value_str(v) == "(2, 1)"


def test_match_question_failure_is_a_runtime_error():
    with pytest.raises(RelayRuntimeError) as info:
        run(parse_expr("match? (Nil) { Cons(%x, _) => %x }"))
    assert info.value.message.startswith("non-exhaustive match")
    assert (info.value.span.line, info.value.span.column) == (1, 1)


def test_prelude_hd_of_empty_list_fails():
    with pytest.raises(RelayRuntimeError) as info:
        run(entry("@hd(%xs)"), ConstructorValue("Nil"))
    assert info.value.message == "non-exhaustive match: no clause for Nil"


def test_deep_list_argument_and_result():
    # @map is not tail recursive: 10,000 nested calls; @rev is a tail-recursive fold.
    n = 10_000
    xs = py_list(list(range(n)))
    v = run(entry("@rev(@map(@inc, %xs))"), xs)
    assert to_py(v) == list(range(n, 0, -1))
    text = value_str(v)
    assert text.startswith(f"Cons({n}, Cons({n - 1}, ") and text.endswith("Nil" + ")" * n)
    assert v == py_list(list(range(n, 0, -1)))
    assert v != py_list(list(range(n, 1, -1)) + [7])
