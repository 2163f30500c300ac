"""The one reference contract (``semantics.ops.reference``): ``compute(out_type, *arrays,
**attrs)`` wrapped into a total, exact-typed ``impl`` with memoized relation verdicts; the
type of a runtime value; the unary dtype rules; the vectorized erf."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics import ops, types_equal
from semantics.errors import InternalError, RelayRuntimeError, RelayTypeError
from semantics.ops import relations as R
from semantics.ops.reference import cast_array, reference, value_type
from semantics.ops.registry import Relation
from semantics.ops.tensor import erf_float64
from semantics.shapes import ANY, canon_dim, dim_add, dim_mul, exact_div, floor_div, shape_var
from semantics.types import TensorType, TupleType


def counting(relation: Relation) -> tuple[Relation, list[int]]:
    calls = [0]

    def fn(arg_types, attrs, solver):
        calls[0] += 1
        return relation(arg_types, attrs, solver)

    return Relation(relation.name, fn), calls


def test_compute_receives_the_result_type_first():
    seen = []

    def compute(out, x, y):
        seen.append(out)
        return np.add(x, y)

    impl = reference("add", R.BROADCAST, compute)
    impl(np.zeros((2, 1), np.float32), np.zeros(3, np.float32))
    (out,) = seen
    assert isinstance(out, TensorType) and out.shape == (2, 3) and out.dtype == "float32"


def test_relation_verdicts_are_memoized_per_signature_and_attrs():
    rel, calls = counting(R.BROADCAST)
    impl = reference("add", rel, lambda out, x, y: np.add(x, y))
    a, b = np.zeros(3, np.int32), np.ones(3, np.int32)
    for _ in range(5):
        impl(a, b)
    assert calls[0] == 1
    impl(np.zeros(4, np.int32), np.ones(4, np.int32))              # new shape
    impl(np.zeros(3, np.int64), np.ones(3, np.int64))              # new dtype
    assert calls[0] == 3
    clip, ccalls = counting(R.CLIP)
    cimpl = reference("clip", clip, lambda out, x, a_min, a_max: x.copy())
    cimpl(a, a_min=0.0, a_max=1.0)
    cimpl(a, a_min=0.0, a_max=1.0)
    cimpl(a, a_min=0.0, a_max=2.0)                                   # new attributes
    assert ccalls[0] == 2


def test_unhashable_attributes_and_tuples_still_work():
    op = ops.get("nn.pad")
    x = np.arange(3, dtype=np.int32)
    out = op.impl(x, np.array(0, np.int32), pad_width=([1, 2],), pad_mode="constant")
    assert out.tolist() == [0, 0, 1, 2, 0, 0]
    cat = ops.get("concatenate").impl
    parts = (np.zeros(2, np.int8), np.ones(1, np.int8))
    assert cat(parts, axis=0).tolist() == [0, 0, 1]
    assert cat(parts, axis=0).tolist() == [0, 0, 1]                 # memoized tuple signature


def test_zero_d_results_are_arrays_and_inputs_are_converted():
    add = ops.get("add").impl
    out = add(np.array(2, np.int32), np.array(3, np.int32))
    assert type(out) is np.ndarray and out.shape == () and out.item() == 5
    out = add(np.int32(2), np.array(3, np.int32))                    # a numpy scalar
    assert type(out) is np.ndarray and out.item() == 5
    swapped = np.array([1, 2], dtype=">i4")                         # non-native byte order
    assert add(swapped, swapped).tolist() == [2, 4]
    assert add(swapped, swapped).tolist() == [2, 4]


def test_ill_typed_calls_and_numpy_failures_are_runtime_errors():
    add = ops.get("add").impl
    with pytest.raises(RelayRuntimeError, match="operator add: .*dtypes differ"):
        add(np.zeros(2, np.int32), np.zeros(2, np.float32))
    with pytest.raises(RelayRuntimeError, match="expected a tensor argument, got str"):
        add("a", np.zeros(2, np.int32))
    with pytest.raises(RelayRuntimeError, match="not a Relay tensor"):
        add(np.array(["a"]), np.array(["b"]))

    def boom(out, x):
        raise ValueError("numpy said no")

    with pytest.raises(RelayRuntimeError, match="operator boom failed: numpy said no"):
        reference("boom", R.IDENTITY, boom)(np.zeros(1, np.float32))


def test_results_are_checked_against_the_relation():
    bad = reference("bad", R.IDENTITY, lambda out, x: x.astype(np.float64))
    with pytest.raises(InternalError, match="dtype"):
        bad(np.zeros(2, np.float32))
    with pytest.raises(InternalError, match="shape"):
        reference("bad", R.IDENTITY, lambda out, x: x[:1])(np.zeros(2, np.float32))
    with pytest.raises(InternalError, match="not an ndarray"):
        reference("bad", R.IDENTITY, lambda out, x: [1.0])(np.zeros(1, np.float32))


def test_no_numpy_warnings_escape():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ops.get("divide").impl(np.array([1.0, 0.0], np.float32),
                                     np.array([0.0, 0.0], np.float32))
        assert np.isinf(out[0]) and np.isnan(out[1])
        assert ops.get("log").impl(np.array(-1.0, np.float32)).item() != 0.0


def test_error_state_is_restored_after_each_call():
    before = np.geterr()
    seen = []

    def compute(out, x):
        seen.append(np.geterr())
        raise ValueError("fail inside")

    with pytest.raises(RelayRuntimeError):
        reference("f", R.IDENTITY, compute)(np.zeros(1, np.float32))
    assert set(seen[0].values()) == {"ignore"} and np.geterr() == before
    ops.get("add").impl(np.zeros(1, np.float32), np.zeros(1, np.float32))
    assert np.geterr() == before


def test_raw_compute_is_exposed_for_benchmarks():
    impl = ops.get("add").impl
    raw = impl.__wrapped__
    assert raw(np.array(1, np.int32), np.array(2, np.int32)) == 3
    assert impl.compute.__name__ == "add"


def test_value_type():
    t = value_type((np.zeros((2, 3), np.int8), np.float32(1.0)))
    assert isinstance(t, TupleType)
    a, b = t.fields
    assert (a.shape, a.dtype, b.shape, b.dtype) == ((2, 3), "int8", (), "float32")
    assert value_type(np.zeros(2, ">f8")).dtype == "float64"
    with pytest.raises(RelayRuntimeError, match="expected a tensor argument"):
        value_type([1, 2], "add")
    with pytest.raises(RelayRuntimeError, match="not a Relay tensor"):
        value_type(np.zeros(2, np.complex64), "add")


# --- unary dtype rules (TVM) ----------------------------------------------------------------

TRANSCENDENTAL = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos")
ROUNDING = ("floor", "ceil", "round", "trunc")


@pytest.mark.parametrize("name", TRANSCENDENTAL)
def test_transcendental_math_on_bool_is_a_type_error(name):
    op = ops.get(name)
    with pytest.raises(RelayTypeError, match="numeric dtype|float dtype"):
        op.relation((TensorType((2,), "bool"),), op.normalize_attrs({}))
    with pytest.raises(RelayRuntimeError, match="numeric dtype|float dtype"):
        op.impl(np.zeros(2, "bool"))


@pytest.mark.parametrize("name", TRANSCENDENTAL)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_transcendental_math_on_integers_is_float64_cast_back(name, dtype):
    """As TVM's relation, any numeric dtype (issue #33): computed in float64, then ``cast``."""
    op = ops.get(name)
    t = TensorType((4,), dtype)
    assert types_equal(op.relation((t,), op.normalize_attrs({})), t)
    x = np.array([0, 1, 7, 100], dtype)
    with np.errstate(all="ignore"):
        want = cast_array(ops.get(name).impl(x.astype(np.float64)), dtype)
    got = op.impl(x)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ROUNDING)
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint64", "int64"])
def test_rounding_is_the_identity_on_integers(name, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, -1 if info.min else 0, 0, 7, info.max], dtype)
    out = ops.get(name).impl(x)
    assert out.dtype == x.dtype and out.tolist() == x.tolist() and out is not x
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation((TensorType((2,), "bool"),), op.normalize_attrs({}))


# --- erf ------------------------------------------------------------------------------------

def _ulps(got: float, want: float) -> float:
    return abs(got - want) / math.ulp(abs(want)) if want else abs(got) / math.ulp(0.0)


@settings(max_examples=200)
@given(st.one_of(st.floats(-7.0, 7.0), st.floats(-0.2, 0.2),
                 st.integers(0, 6 * 32).map(lambda k: k / 32.0 + 1e-13),
                 st.integers(0, 6 * 32).map(lambda k: k / 32.0 - 1e-13)))
def test_erf_float64_is_within_two_ulps_of_math_erf(v):
    got = float(erf_float64(np.array([v]))[0])
    assert _ulps(got, math.erf(v)) <= 2.0, (v, got, math.erf(v))


def test_erf_special_values_and_shapes():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -30.0, 5.95])
    y = erf_float64(x)
    assert y[0] == 0.0 and np.signbit(y[1]) and y[2] == 1.0 and y[3] == -1.0
    assert np.isnan(y[4]) and y[5] == math.erf(1e-300) and y[6] == -1.0 and y[7] == 1.0
    assert erf_float64(np.array(0.5)).shape == ()
    assert erf_float64(np.zeros((2, 0, 3))).shape == (2, 0, 3)


# --- dim helpers (semantics.shapes) ---------------------------------------------------------

def test_dim_helpers():
    n = shape_var("n")
    assert canon_dim(np.int64(3)) == 3 and type(canon_dim(np.int64(3))) is int
    assert canon_dim(n - n + 2) == 2 and canon_dim(ANY) is ANY
    assert dim_add(2, 3) == 5 and dim_add(n, n) == 2 * n and dim_add(n, ANY) is ANY
    assert dim_mul(2, 3) == 6 and dim_mul(n, 0) == 0
    assert exact_div(2 * n, 2) == n and exact_div(7, 2) is None and exact_div(n, 2) is None
    assert floor_div(7, 2) == 3 and floor_div(ANY, 2) is ANY
