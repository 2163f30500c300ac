"""Reductions (semantics/ops/reduce.py) against a plain-Python reduction over index tuples,
plus hand tables for the edge cases, and the relation-soundness properties for the family."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops import (
    fast_arrays,
    op_call,
    op_invalid_call_args,
    reduce_attrs,
    small_shapes,
)
from semantics import ops
from semantics.errors import RelayRuntimeError, RelayTypeError

FAMILY_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "reduce")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")


def ref(name, *args, **attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ops.get(name).reference(*args, **attrs)


def wrap(v: int, dtype: str) -> int:
    bits = int(dtype[4:]) if dtype.startswith("u") else int(dtype[3:])
    v %= 1 << bits
    if not dtype.startswith("u") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def chosen_axes(attrs: dict, ndim: int) -> list[int]:
    """The reduced axes, computed from the attributes independently of the implementation."""
    axis = attrs.get("axis")
    if axis is None:
        return list(range(ndim))
    listed = [axis] if isinstance(axis, int) else list(axis)
    if not listed:
        return list(range(ndim))
    listed = [a % ndim for a in listed]
    if attrs.get("exclude", False):
        return [i for i in range(ndim) if i not in listed]
    return sorted(listed)


def py_reduce(x: np.ndarray, attrs: dict, fold: Callable[[list], object]):
    """Group the elements of ``x`` by the kept index and fold each group (row-major order)."""
    axes = chosen_axes(attrs, x.ndim)
    kept = [i for i in range(x.ndim) if i not in axes]
    groups: dict[tuple, list] = {}
    for kept_idx in itertools.product(*(range(x.shape[i]) for i in kept)):
        groups[kept_idx] = []
    for idx in itertools.product(*(range(d) for d in x.shape)):
        groups[tuple(idx[i] for i in kept)].append(x[idx].item())
    keepdims = attrs.get("keepdims", False)
    shape = [1 if i in axes else x.shape[i] for i in range(x.ndim)] if keepdims else \
        [x.shape[i] for i in kept]
    return [fold(g) for g in groups.values()], tuple(shape)


def check(out, values, shape, dtype, *, close=False):
    assert type(out) is np.ndarray
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    got = [v.item() for v in out.reshape(-1)]
    assert len(got) == len(values)
    for g, e in zip(got, values):
        if isinstance(e, float) and math.isnan(e):
            assert math.isnan(g)
        elif close:
            assert math.isclose(g, e, rel_tol=1e-3, abs_tol=1e-6), (got, values)
        else:
            assert g == e, (got, values)


@st.composite
def reduce_case(draw, dtypes, *, min_rank=0, max_rank=4, min_dim=0):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(small_shapes(min_rank=min_rank, max_rank=max_rank, min_dim=min_dim))
    x = draw(fast_arrays(dtype, shape, exact=dtype in FLOATS, dense=True))
    return x, draw(reduce_attrs(len(shape)))


@settings(max_examples=60)
@given(reduce_case(INTS + FLOATS))
def test_sum(case):
    x, attrs = case
    dtype = x.dtype.name
    if dtype in INTS:
        values, shape = py_reduce(x, attrs, lambda g: wrap(sum(g), dtype))
    else:
        values, shape = py_reduce(x, attrs, lambda g: float(sum(g)))
    check(ref("sum", x, **attrs), values, shape, dtype)


@settings(max_examples=60)
@given(st.sampled_from(INTS + FLOATS), st.data())
def test_prod(dtype, data):
    if dtype in INTS:
        shape = data.draw(small_shapes(max_rank=3))
        x = data.draw(fast_arrays(dtype, shape, dense=True))
        fold = lambda g: wrap(math.prod(g), dtype)  # noqa: E731
    else:                     # factors in {-1, 1, 2}, at most 8 of them: exact in float16
        shape = data.draw(small_shapes(max_rank=3, max_dim=2))
        x = data.draw(fast_arrays(dtype, shape, exact=True, bound=2, dense=True)).clip(-1, 2)
        x = np.where(x == 0, 1, x).astype(dtype)
        fold = lambda g: float(math.prod(g))  # noqa: E731
    attrs = data.draw(reduce_attrs(len(shape)))
    values, out_shape = py_reduce(x, attrs, fold)
    check(ref("prod", x, **attrs), values, out_shape, dtype)


def _extreme(dtype: str, high: bool):
    if dtype in FLOATS:
        return math.inf if high else -math.inf
    info = np.iinfo(dtype)
    return int(info.max) if high else int(info.min)


def _py_max(g, dtype):
    if any(isinstance(v, float) and math.isnan(v) for v in g):
        return math.nan
    return max(g, default=_extreme(dtype, False))


def _py_min(g, dtype):
    if any(isinstance(v, float) and math.isnan(v) for v in g):
        return math.nan
    return min(g, default=_extreme(dtype, True))


@settings(max_examples=60)
@given(st.sampled_from(("max", "min")), st.sampled_from(INTS + FLOATS), st.data())
def test_max_min(name, dtype, data):
    shape = data.draw(small_shapes())
    x = data.draw(fast_arrays(dtype, shape, dense=True))      # NaN, inf, extremes included
    attrs = data.draw(reduce_attrs(len(shape)))
    fold = _py_max if name == "max" else _py_min
    values, out_shape = py_reduce(x, attrs, lambda g: fold(g, dtype))
    check(ref(name, x, **attrs), values, out_shape, dtype)


@settings(max_examples=40)
@given(st.sampled_from(("all", "any")), st.data())
def test_all_any(name, data):
    shape = data.draw(small_shapes())
    x = data.draw(fast_arrays("bool", shape, dense=True))
    attrs = data.draw(reduce_attrs(len(shape)))
    values, out_shape = py_reduce(x, attrs, all if name == "all" else any)
    check(ref(name, x, **attrs), values, out_shape, "bool")


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@settings(max_examples=60)
@given(st.one_of(reduce_case(INTS, max_rank=3, min_dim=1), reduce_case(FLOATS)))
def test_mean(case):
    x, attrs = case
    dtype = x.dtype.name
    if dtype in INTS:
        values, shape = py_reduce(
            x, attrs, lambda g: wrap(_trunc_div(wrap(sum(g), dtype), wrap(len(g), dtype)),
                                     dtype))
        check(ref("mean", x, **attrs), values, shape, dtype)
    else:
        values, shape = py_reduce(x, attrs, lambda g: math.fsum(g) / len(g) if g else math.nan)
        check(ref("mean", x, **attrs), values, shape, dtype, close=True)


def test_mean_integer_count_wraps_like_tvm():
    x = np.full(200, 2, np.int8)               # sum 400 wraps to -112, count 200 to -56
    assert ref("mean", x).item() == wrap(_trunc_div(-112, -56), "int8") == 2
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        ref("mean", np.ones(256, np.uint8))     # the count wraps to 0
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        ref("mean", np.zeros((2, 0), np.int32), axis=1)
    out = ref("mean", np.zeros((2, 0), np.float32), axis=1)
    assert out.shape == (2,) and np.isnan(out).all()


def test_mean_float16_accumulates_in_float32():
    x = np.array([2048.0, 1.0, 1.0], np.float16)   # in float16, 2048 + 1 rounds back to 2048
    out = ref("mean", x)
    assert out.dtype == np.float16 and out.shape == ()
    assert out.item() == float(np.float16(2050 / 3)) == 683.5
    # the float32 total 120000 is divided before rounding back (a float16 total would be inf)
    assert ref("mean", np.array([60000.0, 60000.0], np.float16)).item() == 60000.0
    out = ref("variance", np.array([[200.0, -200.0]], np.float16),
              np.zeros((1, 1), np.float16), axis=1)
    assert out.item() == 40000.0                    # the float16 sum 80000 would overflow


def _py_arg(g, pick_max: bool, last: bool) -> int:
    if not g:
        return -1
    order = range(len(g) - 1, -1, -1) if last else range(len(g))
    best = None
    for i in order:
        v = g[i]
        if isinstance(v, float) and math.isnan(v):
            return i                      # NaN wins (the first one met)
        if best is None or (v > g[best] if pick_max else v < g[best]):
            best = i
    return best


@settings(max_examples=60)
@given(st.sampled_from(("argmax", "argmin")), st.sampled_from(INTS + FLOATS), st.booleans(),
       st.data())
def test_argmax_argmin(name, dtype, last, data):
    shape = data.draw(small_shapes(min_rank=1))
    x = data.draw(fast_arrays(dtype, shape, exact=True, bound=2, dense=True))  # many ties
    attrs = data.draw(reduce_attrs(len(shape)))
    attrs["select_last_index"] = last
    values, out_shape = py_reduce(x, attrs, lambda g: _py_arg(g, name == "argmax", last))
    check(ref(name, x, **attrs), values, out_shape, "int32")


def test_argmax_hand_table():
    x = np.array([[[1, 9], [9, 0]], [[3, 3], [2, 3]]], np.int32)
    assert ref("argmax", x, axis=[1, 2]).tolist() == [1, 0]
    assert ref("argmax", x, axis=[1, 2], select_last_index=True).tolist() == [2, 3]
    assert ref("argmin", x, axis=0, keepdims=True).tolist() == [[[0, 1], [1, 0]]]
    assert ref("argmax", x).item() == 1 and ref("argmax", x).dtype == np.int32
    assert ref("argmax", np.array([1.0, np.nan, 5.0], np.float32)).item() == 1
    assert ref("argmax", np.zeros((2, 0), np.float32), axis=1).tolist() == [-1, -1]


@settings(max_examples=40)
@given(reduce_case(FLOATS, min_rank=1), st.booleans(), st.integers(-4, 4))
def test_variance(case, unbiased, center):
    x, attrs = case
    dtype = x.dtype.name
    mean = np.full([1] * x.ndim, center, dtype)
    attrs["unbiased"] = unbiased

    def fold(g):
        n = len(g) - (1 if unbiased else 0)
        s = math.fsum((v - center) ** 2 for v in g)
        if n == 0:
            return math.nan if s == 0 else math.inf
        return s / n

    values, shape = py_reduce(x, attrs, fold)
    check(ref("variance", x, mean, **attrs), values, shape, dtype, close=True)


def test_variance_hand_table():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    mean = np.array([[2.5], [2.0]], np.float32)
    assert ref("variance", x, mean, axis=1).tolist() == [1.25, 0.0]
    out = ref("variance", x, mean, axis=[1], unbiased=True, keepdims=True)
    assert out.shape == (2, 1) and math.isclose(out[0, 0], 5 / 3, rel_tol=1e-6)
    # the mean is taken as given, not recomputed
    assert ref("variance", x, np.zeros((2, 1), np.float32), axis=1).tolist() == [7.5, 4.0]


def test_reductions_of_scalars_and_empty_axes():
    s = np.array(5, np.int16)
    for name in ("sum", "prod", "max", "min", "mean"):
        out = ref(name, s)
        assert type(out) is np.ndarray and out.shape == () and out.dtype == np.int16
        assert out.item() == 5
    empty = np.zeros((0, 3), np.float32)
    assert ref("sum", empty, axis=0).tolist() == [0.0] * 3
    assert ref("prod", empty, axis=0).tolist() == [1.0] * 3
    assert ref("max", empty, axis=0).tolist() == [-math.inf] * 3
    assert ref("min", np.zeros((0,), np.uint8)).item() == 255
    assert ref("all", np.zeros((0,), bool)).item() is True
    assert ref("any", np.zeros((0,), bool)).item() is False


def test_integer_sum_wraps():
    assert ref("sum", np.array([100, 100], np.int8)).item() == -56
    assert ref("prod", np.array([16, 16], np.uint8)).item() == 0


def test_axis_forms_are_equivalent():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = ref("sum", x, axis=1)
    assert ref("sum", x, axis=[1]).tolist() == a.tolist()
    assert ref("sum", x, axis=[-2]).tolist() == a.tolist()
    assert ref("sum", x, axis=[0, 2], exclude=True).tolist() == a.tolist()
    assert ref("sum", x, axis=[]).item() == sum(range(24))
    with pytest.raises(RelayRuntimeError, match="out of range"):
        ref("sum", x, axis=3)


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
