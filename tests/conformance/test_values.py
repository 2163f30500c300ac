"""Value strategies, value comparison, PRESERVATION's ``value_has_type`` and the wire encoding."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.external import decode_value, dumps, encode_value
from conformance.harness import show_value, value_has_type, values_equal
from conformance.strategies.types import dtypes, shapes, tensor_types
from conformance.strategies.values import scalars, tensors, values_of
from interpreter import ConstructorValue, RefValue
from semantics import parse
from semantics.shapes import ANY, shape_var
from semantics.types import RefType, TensorType, TupleType, TypeCall

MOD = parse("""
type Lst[A] { LNil, LCons(A, Lst[A]), }
type Pair { MkPair(Tensor[(2,), int8], float32), }
def @main() { 0 }
""")


@settings(max_examples=100)
@given(st.data())
def test_values_of_tensor_types_have_the_type(data: st.DataObject) -> None:
    t = data.draw(tensor_types(dtype=dtypes(), max_rank=2))
    v = data.draw(values_of(t))
    assert isinstance(v, np.ndarray) and v.dtype.name == t.dtype
    assert value_has_type(v, t)


def test_symbolic_dims_are_instantiated_consistently() -> None:
    n = shape_var("n")
    t = TupleType((TensorType((n,), "int32"), TensorType((n, 2 * n), "float32"),
                   TensorType((ANY,), "bool")))

    @settings(max_examples=50, database=None)
    @given(values_of(t))
    def check(v: tuple) -> None:  # type: ignore[type-arg]
        assert v[1].shape == (v[0].shape[0], 2 * v[0].shape[0])
        assert value_has_type(v, t)

    check()


@settings(max_examples=100)
@given(st.data())
def test_adt_values_have_their_type(data: st.DataObject) -> None:
    lst = MOD.types["Lst"]
    t = TypeCall(lst.header, (MOD.types["Pair"].header,))
    v = data.draw(values_of(t, MOD))
    assert isinstance(v, ConstructorValue) and v.name in ("LNil", "LCons")
    assert value_has_type(v, t, MOD)


def test_value_has_type_rejects_wrong_values() -> None:
    t = TensorType((2,), "int32")
    assert not value_has_type(np.zeros(2, np.int64), t)
    assert not value_has_type(np.zeros(3, np.int32), t)
    assert not value_has_type((np.zeros(2, np.int32),), t)
    n = shape_var("n")
    pair = TupleType((TensorType((n,), "int32"), TensorType((n,), "int32")))
    assert not value_has_type((np.zeros(2, np.int32), np.zeros(3, np.int32)), pair)
    assert value_has_type((np.zeros(3, np.int32), np.zeros(3, np.int32)), pair)
    lst = TypeCall(MOD.types["Lst"].header, (TensorType((), "int32"),))
    bad = ConstructorValue("LCons", (np.float32(1), ConstructorValue("LNil", ())))
    assert not value_has_type(bad, lst, MOD)
    assert not value_has_type(ConstructorValue("MkPair", ()), lst, MOD)
    assert value_has_type(RefValue(np.int8(1)), RefType(TensorType((), "int8")))
    assert not value_has_type(RefValue(np.int16(1)), RefType(TensorType((), "int8")))


def test_values_equal_semantics() -> None:
    f32 = np.float32
    assert values_equal(np.array([np.nan, 1.0], f32), np.array([np.nan, 1.0], f32))[0]
    assert values_equal(np.array(1.0, f32), np.array(1.0 + 1e-7, f32))[0]
    assert not values_equal(np.array(1.0, f32), np.array(1.0 + 1e-7, f32),
                            exact_floats=True)[0]
    assert not values_equal(np.array(np.inf, f32), np.array(-np.inf, f32))[0]
    assert not values_equal(np.array(1, np.int32), np.array(1, np.int64))[0]
    assert not values_equal(np.array(3, np.int32), np.array(4, np.int32))[0]
    assert not values_equal((np.int32(1),), (np.int32(1), np.int32(2)))[0]
    ok, why = values_equal((np.array([1, 2], np.int32),), (np.array([1, 3], np.int32),))
    assert not ok and "result.0" in why and "element [1]" in why
    a = ConstructorValue("Cons", (np.int32(1), ConstructorValue("Nil", ())))
    b = ConstructorValue("Cons", (np.int32(1), ConstructorValue("Nil", ())))
    assert values_equal(a, b)[0]
    assert not values_equal(a, ConstructorValue("Nil", ()))[0]
    assert values_equal(RefValue(np.int32(5)), RefValue(np.int32(5)))[0]
    assert not values_equal(RefValue(np.int32(5)), RefValue(np.int32(6)))[0]


def test_values_equal_and_show_value_on_deep_lists() -> None:
    v: object = ConstructorValue("Nil", ())
    for i in range(20_000):
        v = ConstructorValue("Cons", (np.int32(i), v))
    assert values_equal(v, v)[0]
    assert show_value(v).startswith("Cons(19999, Cons(19998")
    encoded = encode_value(v)
    assert json.loads(dumps(encode_value(ConstructorValue("Nil", ())))) == {"adt": "Nil",
                                                                            "fields": []}
    assert dumps(encoded).startswith('{"adt": "Cons", "fields": [{"tensor"')
    back = decode_value(encoded)
    assert values_equal(v, back)[0]


@settings(max_examples=200)
@given(st.one_of(tensors(), st.tuples(tensors(), tensors(max_rank=0))))
def test_wire_encoding_round_trips_exactly(v: object) -> None:
    back = decode_value(json.loads(json.dumps(encode_value(v))))
    equal, why = values_equal(v, back, exact_floats=True)
    assert equal, why
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        assert np.array_equal(np.signbit(v), np.signbit(back))  # -0.0 survives


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_special_floats_are_generated(dtype: str) -> None:
    seen: set[str] = set()

    @settings(max_examples=200, database=None)
    @given(scalars(dtype))
    def collect(x: np.ndarray) -> None:
        f = float(x)
        seen.add("nan" if np.isnan(f) else "inf" if np.isinf(f) else
                 "-0" if f == 0 and np.signbit(f) else "finite")

    collect()
    assert {"nan", "inf", "-0", "finite"} <= seen


def test_shapes_include_symbolic_and_any() -> None:
    kinds: set[str] = set()

    @settings(max_examples=200, database=None)
    @given(shapes())
    def collect(s: tuple) -> None:  # type: ignore[type-arg]
        for d in s:
            kinds.add("any" if d is ANY else "int" if isinstance(d, int) else "sym")

    collect()
    assert kinds == {"any", "int", "sym"}
