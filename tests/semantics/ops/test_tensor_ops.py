"""Elementwise/broadcast operators (semantics/ops/tensor.py) against independent computations:
Python integers and the math module, element by element, plus hand-written tables; and the
relation-soundness properties for the whole family."""

from __future__ import annotations

import itertools
import math
import struct
import warnings
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops import fast_arrays, op_call, op_invalid_call_args
from semantics import ops
from semantics.errors import RelayRuntimeError, RelayTypeError
from semantics.types import TensorType

FAMILY_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "tensor")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")


def ref(name, *args, **attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no numpy warning may escape
        return ops.get(name).reference(*args, **attrs)


def wrap(v: int, dtype: str) -> int:
    """Python int -> the value the two's-complement dtype holds."""
    bits = int(dtype.lstrip("uint")) if dtype.startswith("u") else int(dtype[3:])
    v %= 1 << bits
    if not dtype.startswith("u") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def to_float(v: float, dtype: str) -> float:
    """Round a Python float to float16/32/64 with the struct module (no numpy)."""
    if dtype == "float64":
        return v
    code = "e" if dtype == "float16" else "f"
    try:
        return struct.unpack(code, struct.pack(code, v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def elements(a: np.ndarray):
    return [x.item() for x in a.reshape(-1)]


def check_exact(out, expected_values, dtype, shape):
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.dtype(dtype) and out.shape == tuple(shape)
    got = elements(out)
    for g, e in zip(got, expected_values):
        if isinstance(e, float) and math.isnan(e):
            assert math.isnan(g)
        else:
            assert g == e, (got, expected_values)


# --- integer arithmetic wraps ---------------------------------------------------------------

INT_OPS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "maximum": max,
    "minimum": min,
}


@settings(max_examples=40)
@given(st.sampled_from(sorted(INT_OPS)), st.sampled_from(INT_DTYPES), st.data())
def test_integer_binary_ops_wrap(name, dtype, data):
    a = data.draw(fast_arrays(dtype, (3,), dense=True))
    b = data.draw(fast_arrays(dtype, (2, 1), dense=True))
    out = ref(name, a, b)
    expected = [wrap(INT_OPS[name](x, y), dtype)
                for y, x in itertools.product(elements(b), elements(a))]
    check_exact(out, expected, dtype, (2, 3))


def test_wrapping_examples():
    i8 = np.int8
    assert ref("add", np.array(127, i8), np.array(1, i8)).item() == -128
    assert ref("subtract", np.array(0, np.uint8), np.array(1, np.uint8)).item() == 255
    assert ref("multiply", np.array(16, i8), np.array(16, i8)).item() == 0
    assert ref("negative", np.array(-128, i8)).item() == -128
    assert ref("abs", np.array([-128, -5, 7], i8)).tolist() == [-128, 5, 7]
    assert ref("negative", np.array([1, 0], np.uint16)).tolist() == [65535, 0]
    big = np.iinfo(np.int64).min
    assert ref("divide", np.array(big), np.array(-1)).item() == big
    assert ref("mod", np.array(big), np.array(-1)).item() == 0
    assert ref("floor_divide", np.array(big), np.array(-1)).item() == big
    assert ref("floor_mod", np.array(big), np.array(-1)).item() == 0


# --- integer division: exhaustive int8 tables -----------------------------------------------

def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


DIVISION = {
    "divide": trunc_div,
    "mod": lambda a, b: a - b * trunc_div(a, b),
    "floor_divide": lambda a, b: a // b,
    "floor_mod": lambda a, b: a % b,
}


@pytest.mark.parametrize("name", sorted(DIVISION))
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_integer_division_exhaustive_8bit(name, dtype):
    info = np.iinfo(dtype)
    a = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)
    divisors = [d for d in (1, 2, 3, 7, 100, 127, 255, -1, -2, -3, -7, -128, -127)
                if info.min <= d <= info.max]
    for d in divisors:
        out = ref(name, a, np.array(d, dtype=dtype))
        expected = [wrap(DIVISION[name](int(x), d), dtype) for x in range(info.min, info.max + 1)]
        check_exact(out, expected, dtype, a.shape)


@settings(max_examples=40)
@given(st.sampled_from(sorted(DIVISION)), st.sampled_from(INT_DTYPES), st.data())
def test_integer_division_random(name, dtype, data):
    a = data.draw(fast_arrays(dtype, (4,), dense=True))
    b = data.draw(fast_arrays(dtype, (4,), dense=True).filter(lambda v: bool(np.all(v != 0))))
    out = ref(name, a, b)
    expected = [wrap(DIVISION[name](x, y), dtype) for x, y in zip(elements(a), elements(b))]
    check_exact(out, expected, dtype, (4,))


def test_division_hand_table():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    assert ref("divide", a, b).tolist() == [3, -3, -3, 3]
    assert ref("mod", a, b).tolist() == [1, -1, 1, -1]
    assert ref("floor_divide", a, b).tolist() == [3, -4, -4, 3]
    assert ref("floor_mod", a, b).tolist() == [1, 1, -1, -1]


@pytest.mark.parametrize("name", sorted(DIVISION))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_by_zero_traps(name, dtype):
    a = np.array([1, 2, 3], dtype)
    b = np.array([1, 0, 1], dtype)
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        ref(name, a, b)
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        ref(name, np.array(5, dtype), np.array(0, dtype))


def test_zero_divisor_not_used_by_empty_result_does_not_trap():
    out = ref("divide", np.zeros((0, 2), np.int32), np.array([0, 1], np.int32))
    assert out.shape == (0, 2) and out.dtype == np.int32


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_division_is_ieee(dtype):
    a = np.array([1.0, -1.0, 0.0, 5.0], dtype)
    b = np.array([0.0, 0.0, 0.0, 2.0], dtype)
    out = ref("divide", a, b)
    assert out.dtype == np.dtype(dtype)
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and out[3] == 2.5
    fd = ref("floor_divide", np.array([7.0, -7.0, 1.0], dtype), np.array([2.0, 2.0, 0.0], dtype))
    assert fd.tolist() == [3.0, -4.0, math.inf]
    fm = ref("floor_mod", np.array([7.0, -7.0, 7.0], dtype), np.array([2.0, 2.0, -2.0], dtype))
    assert fm.tolist() == [1.0, 1.0, -1.0]
    md = ref("mod", np.array([7.0, -7.0, 7.5], dtype), np.array([2.0, 2.0, -2.0], dtype))
    assert md.tolist() == [1.0, -1.0, 1.5]
    assert np.isnan(ref("mod", np.array(1.0, dtype), np.array(0.0, dtype)))


def test_float_floor_divide_follows_tvm_formula_and_floor_mod_is_exact():
    # TVM lowers floor_divide to floor(a / b): 1 / 0.1 rounds to 10 exactly.
    assert ref("floor_divide", np.array(1.0), np.array(0.1)).item() == 10.0
    # floor_mod is the exact remainder: 1 - 9 * 0.1000000000000000055... = 0.0999...
    # (TVM's a - floor(a / b) * b would give 0; fused into an FMA, -5.55e-17).
    assert ref("floor_mod", np.array(1.0), np.array(0.1)).item() == 0.09999999999999995
    a = np.array([-5.35304109e16, 7.0, -7.0, 0.0, -0.0, 3.0, -3.0])
    b = np.array([-4.24999994, -2.0, 2.0, -1.0, 1.0, np.inf, np.inf])
    got = ref("floor_mod", a, b)
    assert got.tolist() == np.remainder(a, b).tolist()
    assert got[0] == -1.3261495978940427 and np.signbit(got[3]) and not np.signbit(got[4])


@given(a=st.floats(width=64), b=st.floats(width=64))
def test_float_floor_mod_is_fmod_moved_to_the_sign_of_the_divisor(a: float, b: float) -> None:
    with np.errstate(all="ignore"):
        got = ref("floor_mod", np.array(a), np.array(b)).item()
        r = math.fmod(a, b) if b != 0 and not math.isinf(a) else math.nan
    if math.isnan(r) or math.isnan(a) or math.isnan(b):
        assert math.isnan(got)
    elif r == 0:
        assert got == 0 and math.copysign(1, got) == math.copysign(1, b)
    elif (r < 0) != (b < 0):
        assert got == r + b
    else:
        assert got == r


# --- power ------------------------------------------------------------------------------------

def int_power(a: int, b: int, dtype: str) -> int:
    if b >= 0:
        return wrap(a ** b, dtype)
    if a == 1:
        return 1
    if a == -1:
        return 1 if b % 2 == 0 else -1
    return 0


@settings(max_examples=40)
@given(st.sampled_from(INT_DTYPES), st.data())
def test_integer_power(dtype, data):
    a = data.draw(fast_arrays(dtype, (5,), dense=True).filter(lambda v: bool(np.all(v != 0))))
    lo = -4 if not dtype.startswith("u") else 0
    e = np.array(data.draw(st.lists(st.integers(lo, 70), min_size=5, max_size=5)), dtype)
    out = ref("power", a, e)
    expected = [int_power(x, y, dtype) for x, y in zip(elements(a), elements(e))]
    check_exact(out, expected, dtype, (5,))


def test_integer_power_table():
    a = np.array([2, -1, -1, 1, 5, 0, 3], np.int32)
    e = np.array([-1, -3, -4, -5, -2, 0, 40], np.int32)
    assert ref("power", a, e).tolist() == [0, -1, 1, 1, 0, 1, wrap(3 ** 40, "int32")]
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        ref("power", np.array([0, 2], np.int8), np.array([-1, 1], np.int8))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_power(dtype):
    a = np.array([2.0, 9.0, -8.0, 0.0, -2.0], dtype)
    e = np.array([0.5, 0.5, 1 / 3, -1.0, 3.0], dtype)
    out = ref("power", a, e)
    assert out.dtype == np.dtype(dtype)
    assert out[0] == to_float(math.sqrt(2.0), dtype) and out[1] == 3.0 and np.isnan(out[2])
    assert out[3] == np.inf and out[4] == -8.0


# --- unary math against the math module -------------------------------------------------------

def _sigmoid(x: float) -> float:
    if x < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


UNARY_MATH = {
    "exp": lambda x: math.exp(x) if x < 700 else math.inf,
    "log": math.log,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "tanh": math.tanh,
    "sigmoid": _sigmoid,
    "erf": math.erf,
    "sin": math.sin,
    "cos": math.cos,
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "trunc": lambda x: float(math.trunc(x)),
    "round": lambda x: float(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP)),
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}
ULPS = {"float16": 2 ** -10, "float32": 2 ** -23, "float64": 2 ** -50}


@settings(max_examples=60)
@given(st.sampled_from(sorted(UNARY_MATH)), st.sampled_from(FLOATS), st.data())
def test_unary_float_ops_against_math(name, dtype, data):
    lo = 1e-3 if name in POSITIVE_ONLY else -30.0
    values = data.draw(st.lists(st.floats(lo, 30.0), min_size=1, max_size=6))
    x = np.array(values, dtype=np.float64).astype(dtype)
    out = ref(name, x)
    assert out.dtype == np.dtype(dtype) and out.shape == x.shape
    for got, v in zip(elements(out), elements(x)):
        want = to_float(UNARY_MATH[name](v), dtype)
        if name in ("floor", "ceil", "trunc", "round"):
            assert got == want
        else:
            assert math.isclose(got, want, rel_tol=2 * ULPS[dtype], abs_tol=1e-300), (v, got, want)


@pytest.mark.parametrize("value, expected", [
    (0.5, 1.0), (1.5, 2.0), (2.5, 3.0), (-0.5, -1.0), (-2.5, -3.0), (0.49999999999999994, 0.0),
    (-0.49999999999999994, -0.0), (4503599627370497.0, 4503599627370497.0),
    (math.inf, math.inf), (-math.inf, -math.inf)])
def test_round_half_away_from_zero(value, expected):
    out = ref("round", np.array(value))
    assert out.item() == expected and out.shape == () and out.dtype == np.float64
    with np.errstate(over="ignore"):
        half = np.array(value, np.float16)
    assert ref("round", half).dtype == np.float16


def test_unary_float_special_values():
    x = np.array([0.0, -1.0, math.inf, math.nan], np.float32)
    log = ref("log", x)
    assert log[0] == -np.inf and np.isnan(log[1]) and log[2] == np.inf and np.isnan(log[3])
    sq = ref("sqrt", x)
    assert sq[0] == 0 and np.isnan(sq[1]) and sq[2] == np.inf
    assert ref("rsqrt", np.array(0.0, np.float32)).item() == np.inf
    assert ref("exp", np.array(12.0, np.float16)).item() == np.inf     # float16 overflow
    assert ref("exp", np.array(-np.inf, np.float32)).item() == 0.0
    assert ref("sigmoid", np.array([-1e4, 1e4], np.float32)).tolist() == [0.0, 1.0]
    assert ref("erf", np.array([np.inf, -np.inf], np.float64)).tolist() == [1.0, -1.0]
    assert np.isnan(ref("round", np.array(np.nan, np.float32)))


@pytest.mark.parametrize("name", sorted(UNARY_MATH))
def test_float16_stays_float16_and_0d_stays_0d(name):
    x = np.array(0.75, np.float16)
    out = ref(name, x)
    assert type(out) is np.ndarray and out.dtype == np.float16 and out.shape == ()
    want = to_float(UNARY_MATH[name](0.75), "float16")
    assert math.isclose(out.item(), want, rel_tol=2 ** -10)


def test_sigmoid_float16_is_the_rounded_float64_value():
    # 1 / (1 + e**12) ~ 6.144e-06: representable in float16 (a subnormal).
    out = ref("sigmoid", np.array(-12.0, np.float16))
    assert out.item() == to_float(1 / (1 + math.exp(12.0)), "float16") != 0.0


# --- sign, abs, negative ----------------------------------------------------------------------

@settings(max_examples=30)
@given(st.sampled_from(INT_DTYPES + FLOATS), st.data())
def test_sign_abs_negative(dtype, data):
    x = data.draw(fast_arrays(dtype, (6,), exact=dtype in FLOATS, dense=True))
    values = elements(x)
    exp_sign = [(v > 0) - (v < 0) for v in values]
    exp_abs = [abs(v) for v in values]
    exp_neg = [-v for v in values]
    if dtype in INT_DTYPES:
        exp_abs = [wrap(v, dtype) for v in exp_abs]
        exp_neg = [wrap(v, dtype) for v in exp_neg]
        exp_sign = [wrap(v, dtype) for v in exp_sign]
    check_exact(ref("sign", x), exp_sign, dtype, (6,))
    check_exact(ref("abs", x), exp_abs, dtype, (6,))
    check_exact(ref("negative", x), exp_neg, dtype, (6,))


# --- logic and comparison ---------------------------------------------------------------------

def test_logical_truth_tables():
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    assert ref("logical_and", a, b).tolist() == [False, False, False, True]
    assert ref("logical_or", a, b).tolist() == [False, True, True, True]
    assert ref("logical_not", a).tolist() == [True, True, False, False]
    out = ref("logical_not", np.array(True))
    assert out.shape == () and out.dtype == np.bool_ and out.item() is False


COMPARE = {
    "equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b,
    "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
}


@settings(max_examples=40)
@given(st.sampled_from(sorted(COMPARE)), st.sampled_from(INT_DTYPES + FLOATS + ("bool",)),
       st.data())
def test_comparisons(name, dtype, data):
    a = data.draw(fast_arrays(dtype, (1, 3), dense=True))
    b = data.draw(fast_arrays(dtype, (2, 1), dense=True))
    out = ref(name, a, b)
    expected = [COMPARE[name](x, y) for y, x in itertools.product(elements(b), elements(a))]
    check_exact(out, expected, "bool", (2, 3))


def test_comparisons_with_nan():
    nan = np.array(np.nan, np.float32)
    one = np.array(1.0, np.float32)
    assert ref("equal", nan, nan).item() is False
    assert ref("not_equal", nan, nan).item() is True
    assert ref("less", nan, one).item() is False
    assert ref("greater_equal", nan, one).item() is False


# --- where, clip, cast, copy ------------------------------------------------------------------

def test_where_broadcasts_and_takes_any_condition_dtype():
    c = np.array([[1], [0]], np.int32)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array(-1.0, np.float32)
    out = ref("where", c, x, y)
    assert out.dtype == np.float32 and out.tolist() == [[1, 2, 3], [-1, -1, -1]]
    out = ref("where", np.array(True), np.array(5, np.int8), np.array(6, np.int8))
    assert out.shape == () and out.dtype == np.int8 and out.item() == 5
    out = ref("where", np.array([0.0, np.nan, -0.0]), np.zeros(3, np.uint8),
              np.ones(3, np.uint8))
    assert out.tolist() == [1, 0, 1]


def test_clip_float_and_int():
    x = np.array([-3.0, -0.5, 0.25, 7.0, np.nan], np.float32)
    out = ref("clip", x, a_min=-1.0, a_max=2.0)
    assert out.dtype == np.float32
    assert out[:4].tolist() == [-1.0, -0.5, 0.25, 2.0] and np.isnan(out[4])
    xi = np.array([-200, -2, 1, 2, 3, 100], np.int16)
    # Bounds truncate toward zero: [-1.7, 2.9] -> [-1, 2]
    assert ref("clip", xi, a_min=-1.7, a_max=2.9).tolist() == [-1, -1, 1, 2, 2, 2]
    # Out-of-range bounds saturate to the dtype.
    xu = np.array([0, 5, 255], np.uint8)
    assert ref("clip", xu, a_min=-1e9, a_max=1e9).tolist() == [0, 5, 255]
    # a_min > a_max: TVM's max(min(x, a_max), a_min) gives a_min everywhere.
    assert ref("clip", xi, a_min=5.0, a_max=0.0).tolist() == [5] * 6


def test_clip_rejects_nan_bound():
    with pytest.raises(RelayTypeError, match="bad attribute"):
        ops.get("clip").normalize_attrs({"a_min": float("nan"), "a_max": 1.0})


def py_cast(v, src: str, dst: str):
    """The §5 cast rules written with Python numbers."""
    if dst == "bool":
        return bool(v != 0) if not (isinstance(v, float) and math.isnan(v)) else True
    if dst in INT_DTYPES:
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return 0
            v = math.trunc(v)
        return wrap(int(v), dst)
    return to_float(float(v), dst)


CAST_TABLE = [
    (300.7, "float32", "uint8", 44), (-1.5, "float32", "uint8", 255),
    (-1.9, "float64", "int8", -1), (float("nan"), "float32", "int32", 0),
    (float("inf"), "float64", "int64", 0), (-float("inf"), "float16", "uint16", 0),
    (2.0 ** 63, "float64", "int64", -2 ** 63), (2.0 ** 64 + 4096, "float64", "uint64", 4096),
    (1e20, "float64", "int64", wrap(10 ** 20, "int64")), (-(2.0 ** 70), "float64", "uint64", 0),
    (255, "int32", "int8", -1), (-1, "int64", "uint32", 2 ** 32 - 1),
    (70000, "int32", "float16", math.inf), (0.1, "float64", "float16", to_float(0.1, "float16")),
    (float("nan"), "float32", "bool", True), (-0.0, "float32", "bool", False),
    (True, "bool", "float32", 1.0), (7, "uint8", "bool", True),
]


@pytest.mark.parametrize("value, src, dst, expected", CAST_TABLE)
def test_cast_table(value, src, dst, expected):
    out = ref("cast", np.array(value, dtype=src), dtype=dst)
    assert type(out) is np.ndarray and out.shape == () and out.dtype == np.dtype(dst)
    assert out.item() == expected


@settings(max_examples=60)
@given(st.sampled_from(INT_DTYPES + FLOATS + ("bool",)),
       st.sampled_from(INT_DTYPES + FLOATS + ("bool",)), st.data())
def test_cast_random(src, dst, data):
    x = data.draw(fast_arrays(src, (5,), dense=True))
    if src in ("int64", "uint64") and dst in FLOATS:
        x = x // (1 << 12)          # keep exactly convertible through a Python float
    out = ref("cast", x, dtype=dst)
    expected = [py_cast(v, src, dst) for v in elements(x)]
    check_exact(out, expected, dst, (5,))


def test_copy_is_a_fresh_equal_array():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    out = ref("copy", x)
    assert out.dtype == x.dtype and out.tolist() == x.tolist()
    assert not np.shares_memory(out, x)


# --- 0-d in, 0-d out, exact dtype: every operator of the family -------------------------------

def _scalar_args(name):
    op = ops.get(name)
    dtype = {"logical_and": "bool", "logical_or": "bool", "logical_not": "bool"}.get(name, "int8")
    if name in UNARY_MATH:
        dtype = "float16"
    args = [np.array(3, dtype=dtype) for _ in range(op.num_inputs)]
    if name == "where":
        args[0] = np.array(True)
    attrs = {"clip": {"a_min": 0.0, "a_max": 2.0}, "cast": {"dtype": "uint16"}}.get(name, {})
    return args, attrs


@pytest.mark.parametrize("name", FAMILY_OPS)
def test_zero_d_in_zero_d_out(name):
    args, attrs = _scalar_args(name)
    out = ref(name, *args, **attrs)
    expected = ops.get(name).relation(tuple(TensorType((), a.dtype.name) for a in args),
                                      ops.get(name).normalize_attrs(attrs))
    assert type(out) is np.ndarray and out.shape == ()
    assert out.dtype.name == expected.dtype


# --- relation soundness -----------------------------------------------------------------------

def _dims_match(expected, actual):
    return len(expected) == len(actual) and all(
        not isinstance(d, int) or d == a for d, a in zip(expected, actual))


def check_sound(name, call):
    arg_types, attrs, values = call
    op = ops.get(name)
    inferred = op.relation(arg_types, op.normalize_attrs(attrs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = op.reference(*values, **attrs)
    assert isinstance(out, np.ndarray)
    assert out.dtype.name == inferred.dtype
    assert _dims_match(inferred.shape, out.shape)


def check_rejected(name, call):
    arg_types, attrs = call
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation(arg_types, op.normalize_attrs(attrs))


@pytest.mark.parametrize("name", FAMILY_OPS)
@settings(max_examples=20)
@given(data=st.data())
def test_relation_soundness(name, data):
    check_sound(name, data.draw(op_call(name)))


@pytest.mark.parametrize("name", FAMILY_OPS)
@settings(max_examples=15)
@given(data=st.data())
def test_relation_rejects_invalid(name, data):
    check_rejected(name, data.draw(op_invalid_call_args(name)))
