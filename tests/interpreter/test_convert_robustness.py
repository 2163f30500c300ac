"""Argument conversion on hostile inputs (interpreter/convert.py): cycles, reference cells,
dimension equations the solver cannot invert, numbers that overflow their dtype."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreter import ConstructorValue, RefValue, evaluate
from semantics import RelayRuntimeError, parse

LIST_ID = "def @main(%xs: List[int32]) -> List[int32] { %xs }"


def _error(program: str, *args) -> str:
    with pytest.raises(RelayRuntimeError) as info:
        evaluate(parse(program), *args)
    return info.value.message


# --- cycles ----------------------------------------------------------------------------------

def test_cyclic_dict_list_is_an_error_not_a_hang():
    cell: dict = {"Cons": [1, None]}
    cell["Cons"][1] = cell
    message = _error(LIST_ID, cell)
    assert message.startswith("argument %xs (at Cons.1): the value contains itself")


def test_cyclic_constructor_value_is_an_error():
    tail: dict = {"Cons": [2, None]}
    head = ConstructorValue("Cons", (1, tail))
    tail["Cons"][1] = head
    assert "the value contains itself" in _error(LIST_ID, head)


def test_cycle_through_a_non_spine_field_is_an_error():
    tree: dict = {"Rose": [1, None]}
    tree["Rose"][1] = {"Cons": [tree, {"Nil": []}]}    # the tree is its own child
    message = _error("def @main(%t: Tree[int32]) -> int32 { @size(%t) }", tree)
    assert message.startswith("argument %t (at Rose.1 → Cons.0): the value contains itself")


def test_cyclic_tuple_argument_is_an_error():
    inner: list = [1, None]
    inner[1] = inner
    message = _error("def @main(%p: (int32, (int32, int32))) { %p.0 }", inner)
    assert message.startswith("argument %p (at .1): the value contains itself")


def test_cyclic_untyped_tuple_is_an_error():
    box: list = []
    value = (1, box)
    box.append(value)
    assert "contains itself" in _error("def @main(%p) { %p }", value)


def test_cyclic_nested_list_for_a_tensor_is_an_error():
    rows: list = [1]
    rows.append(rows)
    message = _error("def @main(%x: Tensor[(2), int32]) { %x }", rows)
    assert "the list contains itself" in message


def test_shared_but_acyclic_parts_are_fine():
    nil = {"Nil": []}
    shared = {"Cons": [1, nil]}
    pair = evaluate(parse("def @main(%a: List[int32], %b: List[int32]) { (%a, %b) }"),
                    shared, shared)
    assert pair[0] == pair[1]


# --- reference cells -------------------------------------------------------------------------

def test_ref_contents_are_checked_against_the_declared_type():
    message = _error("def @main(%r: Ref[int32]) -> int32 { ref_read(%r) }", RefValue("x"))
    assert message.startswith("argument %r (at ref contents): expected int32, got a Python str")


def test_ref_contents_are_converted_and_the_cell_is_shared_with_the_caller():
    cell = RefValue(3)
    program = "def @main(%r: Ref[int64]) -> int64 { ref_write(%r, ref_read(%r) + 1i64); " \
              "ref_read(%r) }"
    result = evaluate(parse(program), cell)
    assert result.dtype == np.dtype("int64") and int(result) == 4
    assert isinstance(cell.value, np.ndarray) and cell.value.dtype == np.dtype("int64")
    assert int(cell.value) == 4     # the program wrote into the caller's cell


def test_ref_contents_of_a_list_type_are_converted():
    cell = RefValue({"Cons": [1, {"Nil": []}]})
    result = evaluate(parse("def @main(%r: Ref[List[int32]]) { @length(ref_read(%r)) }"), cell)
    assert int(result) == 1
    assert isinstance(cell.value, ConstructorValue)


def test_same_cell_at_two_types_is_an_error():
    cell = RefValue(1)
    message = _error("def @main(%a: Ref[int32], %b: Ref[float32]) { 0 }", cell, cell)
    assert "the same reference cell is passed as Ref[int32] and as Ref[float32]" in message


def test_a_cycle_through_a_reference_is_a_value():
    program = """
    type Knot { Tie(Ref[Knot]), Loose }
    def @main(%r: Ref[Knot]) -> bool {
      match (ref_read(%r)) { Tie(%s) => True, Loose => False }
    }
    """
    cell = RefValue(None)
    cell.value = ConstructorValue("Tie", (cell,))
    assert bool(evaluate(parse(program), cell)) is True
    assert isinstance(cell.value, ConstructorValue) and cell.value.fields[0] is cell


# --- dimension equations ---------------------------------------------------------------------

def test_dimension_equation_the_solver_cannot_invert_is_a_runtime_error():
    message = _error("def @main[n](%x: Tensor[(n % 3), float32]) { %x }",
                     np.zeros(2, np.float32))
    assert message.startswith("argument %x: a dimension is 2")
    assert "cannot be solved for n" in message


def test_uninvertible_equation_is_checked_once_another_binds_its_variable():
    program = "def @main[n](%x: Tensor[(n % 3), float32], %y: Tensor[(n), float32]) { %x }"
    ok = evaluate(parse(program), np.zeros(2, np.float32), np.zeros(5, np.float32))
    assert ok.shape == (2,)
    message = _error(program, np.zeros(2, np.float32), np.zeros(4, np.float32))
    assert "a dimension is 2, expected Mod(n, 3) = 1" in message


@given(st.integers(min_value=0, max_value=20))
def test_invertible_compound_dimension_binds_its_variable(n):
    program = "def @main[n](%x: Tensor[(2 * n + 1), float32]) { %x }"
    out = evaluate(parse(program), np.zeros(2 * n + 1, np.float32))
    assert out.shape == (2 * n + 1,)


# --- numbers that overflow -------------------------------------------------------------------

@pytest.mark.parametrize("arg", [[1e40], [[1.0], [-1e39]], 1e40])
def test_float32_overflow_is_named(arg):
    shape = "(1)" if isinstance(arg, list) and not isinstance(arg[0], list) else \
        ("(2, 1)" if isinstance(arg, list) else "()")
    message = _error(f"def @main(%x: Tensor[{shape}, float32]) {{ %x }}", arg)
    assert "overflows float32" in message
    assert "rectangular" not in message


def test_float16_overflow_is_named():
    assert "overflows float16" in _error("def @main(%x: Tensor[(2), float16]) { %x }",
                                         [1.0, 70000.0])


def test_infinities_are_not_overflow():
    out = evaluate(parse("def @main(%x: Tensor[(2), float32]) { %x }"),
                   [float("inf"), -float("inf")])
    assert list(out) == [np.inf, -np.inf]


def test_int_overflow_in_a_list_is_named():
    message = _error("def @main(%x: Tensor[(2), int32]) { %x }", [1, 2**70])
    assert "not representable as int32" in message and "rectangular" not in message


def test_ragged_list_is_still_called_not_rectangular():
    assert "not a rectangular list" in _error("def @main(%x: Tensor[(2), int32]) { %x }",
                                              [1, [2]])


@given(st.floats(min_value=3.5e38, max_value=1e300))
def test_every_finite_float_beyond_float32_is_an_overflow_error(value):
    message = _error("def @main(%x: Tensor[(1), float32]) { %x }", [value])
    assert "overflows float32" in message
