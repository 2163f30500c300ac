"""Argument conversion and validation (interpreter/convert.py)."""

from __future__ import annotations

import numpy as np
import pytest
from interp_util import assert_tensor, run

from interpreter import Closure, ConstructorValue, RefValue, evaluate
from interpreter.export import export_value
from interpreter.values import value_str
from semantics import RelayRuntimeError, parse, parse_expr


def bad(program, *args, **kwargs) -> str:
    with pytest.raises(RelayRuntimeError) as info:
        run(program, *args, **kwargs)
    return info.value.message


SCALARS = """
def @i32(%x: int32) -> int32 { %x }
def @i64(%x: int64) -> int64 { %x }
def @u8(%x: uint8) -> uint8 { %x }
def @f32(%x: float32) -> float32 { %x }
def @f16(%x: float16) -> float16 { %x }
def @b(%x: bool) -> bool { %x }
"""


@pytest.mark.parametrize("entry, arg, dtype", [
    ("i32", 7, "int32"), ("i64", 2 ** 40, "int64"), ("u8", 255, "uint8"),
    ("f32", 1.5, "float32"), ("f32", 2, "float32"), ("f16", 0.5, "float16"),
    ("b", True, "bool"), ("i32", np.int32(3), "int32"), ("i32", np.array(3, np.int32), "int32"),
    ("i32", 4.0, "int32"),
])
def test_python_scalars_take_the_declared_dtype(entry, arg, dtype):
    assert_tensor(run(SCALARS, arg, entry=entry), arg, dtype)


@pytest.mark.parametrize("entry, arg, why", [
    ("i32", 2 ** 31, "not representable as int32"),
    ("u8", -1, "not representable as uint8"),
    ("i32", 1.5, "not representable as int32"),
    ("i32", True, "not representable as int32"),
    ("b", 1, "not representable as bool"),
    ("i32", np.int64(3), "dtype int64 is not int32"),
    ("f32", np.array(1.0), "dtype float64 is not float32"),
    ("i32", "3", "got a Python str"),
    ("i32", (1,), "got a tuple"),
])
def test_scalar_mismatches_name_the_parameter(entry, arg, why):
    message = bad(SCALARS, arg, entry=entry)
    assert message.startswith("argument %x: expected ")
    assert why in message


TENSORS = """
def @fixed(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] { %x }
def @anydim(%x: Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32] { %x }
def @same(%x: Tensor[(n), float32], %y: Tensor[(n), float32]) -> Tensor[(n), float32] {
  add(%x, %y)
}
def @twice(%x: Tensor[(n), int32], %y: Tensor[(n * 2), int32]) -> int32 { 0 }
"""


def test_tensor_arguments():
    x = np.ones((2, 3), np.float32)
    assert run(TENSORS, x, entry="fixed") is x  # arguments are not copied
    assert_tensor(run(TENSORS, [[1, 2, 3], [4, 5, 6]], entry="fixed"),
                  [[1, 2, 3], [4, 5, 6]], "float32")
    for rows in (0, 1, 5):
        assert run(TENSORS, np.zeros((rows, 3), np.float32), entry="anydim").shape == (rows, 3)


@pytest.mark.parametrize("arg, why", [
    (np.ones((3, 2), np.float32), "dimension 0 is 3, expected 2"),
    (np.ones((2, 3, 1), np.float32), "rank 3, expected rank 2"),
    (np.ones((2, 3), np.float64), "dtype float64 is not float32"),
    ([[1, 2], [3]], "not a rectangular list"),
    (1.0, "rank 0, expected rank 2"),
])
def test_tensor_mismatches(arg, why):
    message = bad(TENSORS, arg, entry="fixed")
    assert message.startswith("argument %x: expected Tensor[(2, 3), float32]")
    assert why in message


def test_any_dimension_still_checks_rank_and_other_dims():
    assert "dimension 1 is 4, expected 3" in bad(TENSORS, np.ones((2, 4), np.float32),
                                                 entry="anydim")


def test_symbolic_dimensions_bind_consistently():
    a = np.arange(3, dtype=np.float32)
    assert_tensor(run(TENSORS, a, a, entry="same"), 2 * a, "float32")
    message = bad(TENSORS, a, np.arange(4, dtype=np.float32), entry="same")
    assert message.startswith("argument %y: expected Tensor[(n), float32]")
    assert "n = 3 from argument %x" in message


def test_compound_symbolic_dimensions():
    assert_tensor(run(TENSORS, np.zeros(3, np.int32), np.zeros(6, np.int32), entry="twice"),
                  0, "int32")
    message = bad(TENSORS, np.zeros(3, np.int32), np.zeros(5, np.int32), entry="twice")
    assert message.startswith("argument %y")


TUPLES = """
def @pair(%p: (int32, (float32, bool))) -> float32 { %p.1.0 }
def @unit(%u: ()) -> () { %u }
"""


def test_tuple_arguments():
    assert_tensor(run(TUPLES, (1, (2.5, True)), entry="pair"), 2.5, "float32")
    assert_tensor(run(TUPLES, [1, [2.5, False]], entry="pair"), 2.5, "float32")
    assert run(TUPLES, (), entry="unit") == ()


def test_tuple_mismatch_names_the_field():
    message = bad(TUPLES, (1, (2.5, 3)), entry="pair")
    assert message.startswith("argument %p (at .1 → .1): expected bool")
    assert "wrong" not in message
    assert bad(TUPLES, (1,), entry="pair").startswith("argument %p: expected (int32, (float32")


ADTS = """
def @total(%xs: List[int32]) -> int32 { @sum(%xs) }
def @first(%o: Option[float32]) -> float32 { match (%o) { Some(%x) => %x, None => -1f } }
"""


def test_constructor_values_are_resolved_by_name_and_fields_converted():
    xs = ConstructorValue("Cons", (1, ConstructorValue("Cons", (2, ConstructorValue("Nil")))))
    assert_tensor(run(ADTS, xs, entry="total"), 3, "int32")
    assert_tensor(run(ADTS, ConstructorValue("Some", (2,)), entry="first"), 2.0, "float32")
    assert_tensor(run(ADTS, ConstructorValue("None"), entry="first"), -1.0, "float32")


def test_json_style_constructor_dicts():
    xs = {"Cons": [1, {"Cons": [2, {"Nil": []}]}]}
    assert_tensor(run(ADTS, xs, entry="total"), 3, "int32")
    assert_tensor(run(ADTS, {"Some": 4.0}, entry="first"), 4.0, "float32")
    assert_tensor(run(ADTS, {"None": None}, entry="first"), -1.0, "float32")


@pytest.mark.parametrize("arg, why", [
    (ConstructorValue("Some", (1,)), "Some builds a Option, not a List"),
    (ConstructorValue("Cons", (1,)), "Cons takes 2 fields, got 1"),
    (ConstructorValue("Bogus", ()), "unknown constructor Bogus"),
    (7, "expected List[int32], got the Python int 7"),
])
def test_adt_mismatches(arg, why):
    message = bad(ADTS, arg, entry="total")
    assert message.startswith("argument %xs")
    assert why in message


def test_wrong_field_deep_in_a_list_names_where():
    xs = ConstructorValue("Nil")
    for v in [np.float32(1.0), 2, 3, 4, 5, 6]:  # the bad element is the last one
        xs = ConstructorValue("Cons", (v, xs))
    message = bad(ADTS, xs, entry="total")
    assert message.startswith("argument %xs (at … → Cons.1 → Cons.1 → Cons.0): expected int32")


def test_function_and_reference_arguments():
    src = """
    def @apply(%f: fn (int32) -> int32, %x: int32) -> int32 { %f(%x) }
    def @bump(%r: Ref[int32]) -> () { %r := !%r + 1 }
    """
    double = evaluate(parse_expr("fn (%y: int32) -> int32 { %y * 2 }"))
    assert isinstance(double, Closure)
    assert_tensor(run(src, double, 21, entry="apply"), 42, "int32")
    r = RefValue(np.int32(1))
    run(src, r, entry="bump")
    assert_tensor(r.value, 2, "int32")
    assert bad(src, 3, 1, entry="apply").startswith("argument %f: expected fn (int32) -> int32")


def test_unannotated_parameters_take_default_dtypes():
    f = parse_expr("fn (%x, %y) { (%x, %y) }")
    v = evaluate(f, 3, 2.5, check=False)
    assert value_str(v) == "(3, 2.5f)"
    v = evaluate(f, [1, 2], (True, 2 ** 40), check=False)
    assert v[0].dtype == np.int32 and v[1][1].dtype == np.int64


def test_type_parameter_arguments():
    src = "def @id[A](%x: A) -> A { %x }"
    assert value_str(run(src, (1, 2.0), entry="id")) == "(1, 2.0f)"


def test_argument_of_a_lanes_dtype_cannot_be_evaluated():
    mod = parse("def @main(%x: float32x4) -> float32x4 { %x }")
    with pytest.raises(RelayRuntimeError, match="cannot be evaluated"):
        evaluate(mod, np.zeros(4, np.float32), check=False)


def test_export_value_copies_read_only_arrays_only():
    ro = np.arange(3)
    ro.setflags(write=False)
    rw = np.arange(2)
    out = export_value((ro, rw, ConstructorValue("Some", (ro,))))
    assert out[0].flags.writeable and out[1] is rw and out[2].fields[0].flags.writeable
    plain = (rw, ConstructorValue("Nil"))
    assert export_value(plain) is plain
