"""Creation operators (semantics/ops/creation.py) against hand-computed values and Python loops,
and the relation-soundness properties for the family."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops import op_call, op_invalid_call_args
from semantics import ops
from semantics.errors import RelayRuntimeError, RelayTypeError
from semantics.shapes import ANY
from semantics.types import TensorType

FAMILY_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "creation")
ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64")


def ref(name, *args, **attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ops.get(name).reference(*args, **attrs)


@pytest.mark.parametrize("dtype", ALL)
def test_zeros_and_ones(dtype):
    z = ref("zeros", shape=[2, 3], dtype=dtype)
    o = ref("ones", shape=(4,), dtype=dtype)
    assert z.dtype == np.dtype(dtype) and z.shape == (2, 3)
    assert o.dtype == np.dtype(dtype) and o.shape == (4,)
    assert all(v == 0 for v in z.reshape(-1).tolist())
    assert all(v == 1 for v in o.tolist())


def test_zeros_defaults_and_scalars():
    out = ref("zeros", shape=[])
    assert type(out) is np.ndarray and out.shape == () and out.dtype == np.float32
    assert ref("ones", shape=[0, 3], dtype="int8").shape == (0, 3)
    with pytest.raises(RelayTypeError, match="bad attribute"):
        ops.get("zeros").normalize_attrs({"dtype": "float32"})        # shape is required
    with pytest.raises(RelayTypeError, match="nonnegative"):
        ops.get("ones").normalize_attrs({"shape": [2, -1]})


FULL_TABLE = [
    (2.7, "float32", "int8", 2), (-2.7, "float64", "int8", -2), (-1.5, "float32", "uint8", 255),
    (300.0, "float32", "uint8", 44), (float("nan"), "float32", "int32", 0),
    (7, "int32", None, 7), (-1, "int32", "uint16", 65535), (3, "int8", "float16", 3.0),
    (0.1, "float64", "float32", float(np.float32(0.1))), (True, "bool", "int64", 1),
    (0.0, "float32", "bool", False), (-0.5, "float32", "bool", True),
]


@pytest.mark.parametrize("value, src, dst, expected", FULL_TABLE)
def test_full_casts_the_fill_value(value, src, dst, expected):
    attrs = {"shape": [2, 2]} if dst is None else {"shape": [2, 2], "dtype": dst}
    out = ref("full", np.array(value, dtype=src), **attrs)
    assert out.dtype == np.dtype(dst or src) and out.shape == (2, 2)
    assert out.reshape(-1).tolist() == [expected] * 4


def test_full_like_and_friends():
    x = np.arange(6, dtype=np.int16).reshape(3, 2)
    out = ref("full_like", x, np.array(-3.9, np.float32))
    assert out.dtype == np.int16 and out.tolist() == [[-3, -3]] * 3
    assert ref("zeros_like", x).tolist() == [[0, 0]] * 3
    assert ref("ones_like", np.array([True, False])).tolist() == [True, True]
    o = ref("ones_like", np.array(2.5, np.float16))
    assert o.shape == () and o.dtype == np.float16 and o.item() == 1.0
    f = ref("full_like", np.array(1, np.uint8), np.array(258, np.int32))
    assert f.shape == () and f.dtype == np.uint8 and f.item() == 2


# --- arange ------------------------------------------------------------------------------------

def py_arange_int(start: int, stop: int, step: int) -> list[int]:
    out, v = [], start
    while (step > 0 and v < stop) or (step < 0 and v > stop):
        out.append(v)
        v += step
    return out


@settings(max_examples=60)
@given(st.sampled_from(("int8", "int16", "int32", "int64")), st.integers(-60, 60),
       st.integers(-60, 60), st.integers(-7, 7).filter(lambda s: s != 0))
def test_arange_int_matches_a_python_loop(dtype, start, stop, step):
    out = ref("arange", np.array(start, dtype), np.array(stop, dtype), np.array(step, dtype),
              dtype=dtype)
    assert out.dtype == np.dtype(dtype) and out.ndim == 1
    assert out.tolist() == py_arange_int(start, stop, step)


@pytest.mark.parametrize("start, stop, step, expected", [
    (0.0, 1.0, 0.25, [0.0, 0.25, 0.5, 0.75]),
    (0.0, 1.0, 0.3, [0.0, 0.3, 0.6, 0.9]),
    (2.5, 0.0, -1.0, [2.5, 1.5, 0.5]),
    (0.0, 0.0, 1.0, []),
    (5.0, 0.0, 1.0, []),
    (-1.0, 1.0, 0.5, [-1.0, -0.5, 0.0, 0.5]),
])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_arange_float(start, stop, step, expected, dtype):
    d = np.dtype(dtype)
    out = ref("arange", np.array(start, d), np.array(stop, d), np.array(step, d), dtype=dtype)
    assert out.dtype == d and out.shape == (len(expected),)
    # element i is start + step * i, each operation rounded in the dtype
    s, st_ = float(np.array(start, d)), float(np.array(step, d))
    want = [float(np.array(s, d) + np.array(st_, d) * np.array(i, d)) for i in range(len(expected))]
    assert out.tolist() == want
    assert all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(out.tolist(), expected))


def test_arange_uint_and_default_dtype():
    out = ref("arange", np.array(250, np.uint8), np.array(255, np.uint8), np.array(2, np.uint8),
              dtype="uint8")
    assert out.tolist() == [250, 252, 254]
    out = ref("arange", np.array(0, np.float32), np.array(3, np.float32),
              np.array(1, np.float32))
    assert out.dtype == np.float32 and out.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("start, stop, step, dtype", [
    (0, 5, 0, "int32"), (0.0, 5.0, 0.0, "float32"), (0.0, float("nan"), 1.0, "float32"),
    (0.0, float("inf"), 1.0, "float64"), (0.0, 1e12, 1.0, "float64"),
])
def test_arange_runtime_errors(start, stop, step, dtype):
    d = np.dtype(dtype)
    with pytest.raises(RelayRuntimeError, match="arange"):
        ref("arange", np.array(start, d), np.array(stop, d), np.array(step, d), dtype=dtype)


def test_arange_relation_is_dynamic():
    op = ops.get("arange")
    s = TensorType((), "int64")
    out = op.relation((s, s, s), op.normalize_attrs({"dtype": "int64"}))
    assert out.dtype == "int64" and len(out.shape) == 1 and out.shape[0] is ANY


def test_init_op_errors_on_inputs_and_full_on_non_scalar():
    with pytest.raises(RelayTypeError):
        ops.get("zeros").relation((TensorType((), "float32"),),
                                  ops.get("zeros").normalize_attrs({"shape": [1]}))
    full = ops.get("full")
    with pytest.raises(RelayTypeError, match="scalar"):
        full.relation((TensorType((2,), "float32"),), full.normalize_attrs({"shape": [1]}))
    with pytest.raises(RelayRuntimeError, match="scalar"):
        full.reference(np.zeros(2, np.float32), shape=[2])


def test_huge_creation_is_a_runtime_error_not_a_crash():
    with pytest.raises(RelayRuntimeError):
        ref("zeros", shape=[2 ** 40, 2 ** 40], dtype="float64")


# --- relation soundness -----------------------------------------------------------------------

def _dims_match(expected, actual):
    return len(expected) == len(actual) and all(
        not isinstance(d, int) or d == a for d, a in zip(expected, actual))


@pytest.mark.parametrize("name", FAMILY_OPS)
@settings(max_examples=20)
@given(data=st.data())
def test_relation_soundness(name, data):
    arg_types, attrs, values = data.draw(op_call(name))
    op = ops.get(name)
    inferred = op.relation(arg_types, op.normalize_attrs(attrs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = op.reference(*values, **attrs)
    assert isinstance(out, np.ndarray)
    assert out.dtype.name == inferred.dtype and _dims_match(inferred.shape, out.shape)


@pytest.mark.parametrize("name", FAMILY_OPS)
@settings(max_examples=15)
@given(data=st.data())
def test_relation_rejects_invalid(name, data):
    arg_types, attrs = data.draw(op_invalid_call_args(name))
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation(arg_types, op.normalize_attrs(attrs))
