"""The quantization operators: ``right_shift``, ``left_shift``, ``bitwise_and/or/xor`` and
``annotation.simulated_quantize`` — registry completeness, relation soundness on the
conformance kit's calls, the documented semantics (shift amounts out of range, simQ's
roundings, seeded stochastic rounding), parsing under TVM's printed name, and the
straight-through gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from conformance.strategies.ops import INVALID_CALLS, VALID_CALLS, covered_ops, op_call
from interpreter import evaluate
from semantics import RelayTypeError, ops, parse, parse_expr, pretty
from semantics.ops.annotation import simulated_quantize_array, uniform_draws
from semantics.ops.reference import value_type
from semantics.ops.registry import OpPattern, Relation
from semantics.types import TensorType

QUANT_OPS = ("right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
             "annotation.simulated_quantize")
SIMQ = ops.get("annotation.simulated_quantize")


# --- registry -------------------------------------------------------------------------------

def test_the_families_hold_exactly_these_operators():
    mine = {n for n in ops.list_ops() if ops.get(n).family in ("bitwise", "annotation")}
    assert mine == set(QUANT_OPS)


@pytest.mark.parametrize("name", QUANT_OPS)
def test_operator_is_complete(name):
    op = ops.get(name)
    assert op.doc and "\n" not in op.doc and op.doc.endswith(".")
    assert isinstance(op.relation, Relation) and op.relation.name
    expected = OpPattern.ELEMWISE if name.startswith("annotation.") else OpPattern.BROADCAST
    assert op.pattern is expected
    assert name in covered_ops() and name in VALID_CALLS and name in INVALID_CALLS


@pytest.mark.parametrize("name", QUANT_OPS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reference_result_has_the_inferred_type(name, data):
    arg_types, attrs, arrays = data.draw(op_call(name))
    op = ops.get(name)
    out = op.relation(arg_types, op.normalize_attrs(attrs))
    got = op.reference(*arrays, **attrs)
    assert isinstance(out, TensorType)
    assert value_type(got) == out or (got.shape == tuple(out.shape) and
                                      got.dtype.name == out.dtype)


@pytest.mark.parametrize("name", QUANT_OPS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_invalid_calls_are_type_errors(name, data):
    arg_types, attrs = data.draw(INVALID_CALLS[name]())
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation(arg_types, op.normalize_attrs(attrs))


# --- shifts and bitwise logic ---------------------------------------------------------------

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _wrap(value: int, dtype: str) -> int:
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)


@settings(max_examples=200, deadline=None)
@given(dtype=st.sampled_from(INT_DTYPES), data=st.data())
def test_shifts_follow_the_documented_formulas_for_every_amount(dtype, data):
    info = np.iinfo(dtype)
    x = data.draw(st.integers(int(info.min), int(info.max)))
    s = data.draw(st.one_of(st.integers(int(info.min), int(info.max)),
                            st.integers(max(int(info.min), -3), min(int(info.max), 70))))
    amount = min(max(s, 0), 130)     # any amount past the width (64) gives the same value
    right = ops.get("right_shift").reference(np.array(x, dtype), np.array(s, dtype))
    left = ops.get("left_shift").reference(np.array(x, dtype), np.array(s, dtype))
    assert int(right) == x // 2 ** amount          # floor division: arithmetic shift
    assert int(left) == _wrap(x * 2 ** amount, dtype)
    assert right.dtype == np.dtype(dtype) and left.dtype == np.dtype(dtype)


def test_shift_edge_cases_named_in_the_docs():
    rs, ls = ops.get("right_shift").reference, ops.get("left_shift").reference
    i8 = np.int8
    assert rs(np.array([-128, -1, 127], i8), np.array([9, 100, 8], i8)).tolist() == [-1, -1, 0]
    assert rs(np.array([-5, 5], i8), np.array([-3, -3], i8)).tolist() == [-5, 5]
    assert ls(np.array([1, 3], i8), np.array([7, 8], i8)).tolist() == [-128, 0]
    assert rs(np.array([255], np.uint8), np.array([8], np.uint8)).tolist() == [0]
    # broadcasting like the other binary operators
    got = rs(np.arange(6, dtype=np.int32).reshape(2, 3) * 8, np.array([1, 2, 3], np.int32))
    assert got.tolist() == [[0, 2, 2], [12, 8, 5]]


def test_bitwise_on_integers_and_bools():
    a = np.array([0b1100, -1], np.int16)
    b = np.array([0b1010, 0x00FF], np.int16)
    assert ops.get("bitwise_and").reference(a, b).tolist() == [0b1000, 0x00FF]
    assert ops.get("bitwise_or").reference(a, b).tolist() == [0b1110, -1]
    assert ops.get("bitwise_xor").reference(a, b).tolist() == [0b0110, -256]
    t, f = np.array([True, True, False]), np.array([True, False, False])
    assert ops.get("bitwise_xor").reference(t, f).tolist() == [False, True, False]


def test_shifts_reject_bool_and_floats_with_the_relation_name():
    rel = ops.get("right_shift").relation
    with pytest.raises(RelayTypeError, match="BroadcastShift.*integer dtype"):
        rel((TensorType((2,), "float32"), TensorType((2,), "float32")),
            ops.get("right_shift").normalize_attrs({}))
    with pytest.raises(RelayTypeError, match="dtypes differ"):
        rel((TensorType((2,), "int8"), TensorType((2,), "int32")),
            ops.get("right_shift").normalize_attrs({}))


def test_text_format_round_trips_and_evaluates():
    text = ("def @main(%x: Tensor[(3), int32], %s: Tensor[(3), int32]) {\n"
            "  bitwise_xor(right_shift(add(%x, left_shift(1, %s)), %s), %x)\n}")
    mod = parse(text)
    again = parse(pretty(mod))
    x = np.array([100, -100, 7], np.int32)
    s = np.array([2, 3, 0], np.int32)
    want = ((x + (1 << s)) >> s) ^ x
    assert np.array_equal(evaluate(mod, x, s), want)
    assert np.array_equal(evaluate(again, x, s), want)


# --- simulated_quantize ----------------------------------------------------------------------

def _simq(x, scale, lo, hi, **attrs):
    return SIMQ.reference(np.asarray(x, np.float32), np.float32(scale), np.float32(lo),
                          np.float32(hi), **attrs)


def test_simq_roundings_on_ties_and_the_clip():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.2, -0.2, 100.0, -100.0], np.float32)
    assert _simq(x, 1.0, -127, 127).tolist() == [-3, -2, -1, 1, 2, 3, 0, 0, 100, -100]
    assert _simq(x, 1.0, -127, 127, rounding="floor").tolist() == [-3, -2, -1, 0, 1, 2, 0, -1,
                                                                   100, -100]
    assert _simq(x, 1.0, -127, 127, rounding="ceil").tolist() == [-2, -1, 0, 1, 2, 3, 1, 0,
                                                                  100, -100]
    assert _simq(x, 0.5, -8, 7).tolist() == [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0, 3.5,
                                             -4.0]


@settings(max_examples=200, deadline=None)
@given(x=st.floats(-200, 200, width=32), e=st.integers(-6, 3),
       rounding=st.sampled_from(("round", "floor", "ceil", "stochastic")),
       seed=st.integers(0, 2 ** 32 - 1))
def test_simq_is_on_the_grid_and_within_a_step_inside_the_clip_range(x, e, rounding, seed):
    step = 2.0 ** e
    got = float(_simq([x], step, -127, 127, rounding=rounding, seed=seed)[0])
    assert got / step == round(got / step) and -127 <= got / step <= 127
    if abs(x) <= 126 * step:
        bound = step / 2 if rounding == "round" else step
        assert abs(got - x) <= bound


def test_stochastic_rounding_is_unbiased_and_deterministic():
    x = np.full((20000,), 0.3, np.float32)
    a = _simq(x, 1.0, -127, 127, rounding="stochastic", seed=7)
    b = _simq(x, 1.0, -127, 127, rounding="stochastic", seed=7)
    c = _simq(x, 1.0, -127, 127, rounding="stochastic", seed=8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert set(np.unique(a).tolist()) == {0.0, 1.0}
    assert abs(a.mean() - 0.3) < 0.015          # 4.6 standard deviations of the mean
    u = uniform_draws((50000,), 0)
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01


def test_simq_computes_in_the_data_dtype():
    x = np.array([0.1, -3.3], np.float64)
    got = SIMQ.reference(x, np.float32(0.25), np.float32(-8), np.float32(7))
    assert got.dtype == np.float64
    assert np.array_equal(got, simulated_quantize_array(x, 0.25, -8, 7))


@pytest.mark.parametrize("attrs,message", [
    ({"kind": 4}, "attribute 'kind' must be one of 0 identity"),
    ({"rounding": "nearest"}, "attribute 'rounding' must be one of round, floor, ceil"),
    ({"seed": -1}, "attribute 'seed' must be in"),
    ({"sign": "yes"}, "attribute 'sign' expects a boolean"),
    ({"mode": 1}, "has no attribute 'mode'"),
])
def test_bad_simq_attributes_are_type_errors_naming_the_attribute(attrs, message):
    with pytest.raises(RelayTypeError, match=message):
        SIMQ.normalize_attrs(attrs)


def test_simq_relation_messages():
    rel = SIMQ.relation
    scalar = TensorType((), "float32")
    with pytest.raises(RelayTypeError, match="data must have a float dtype"):
        rel((TensorType((2,), "int8"), scalar, scalar, scalar), SIMQ.normalize_attrs({}))
    with pytest.raises(RelayTypeError, match="clip_max must be a float32 scalar"):
        rel((TensorType((2,), "float32"), scalar, scalar, TensorType((1,), "float32")),
            SIMQ.normalize_attrs({}))


def test_simq_parses_under_tvms_printed_name_and_prints_ours():
    text = ("def @main(%x: Tensor[(4), float32]) {\n"
            "  relay.op.annotation.simulated_quantize(%x, 0.5f, -8f, 7f, kind=1, "
            "rounding=\"floor\")\n}")
    mod = parse(text)
    shown = pretty(mod)
    assert "annotation.simulated_quantize(" in shown and "relay.op." not in shown
    x = np.array([0.3, -0.3, 9.0, -9.0], np.float32)
    assert evaluate(mod, x).tolist() == [0.0, -0.5, 3.5, -4.0]
    assert np.array_equal(evaluate(parse(shown), x), evaluate(mod, x))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_simq_gradient_is_the_straight_through_estimator(mode):
    f = parse_expr("fn (%x: Tensor[(3), float32]) {"
                   "  multiply(annotation.simulated_quantize(%x, 0.5f, -8f, 7f), %x) }")
    g = ad.grad(f, mode=mode)
    x = np.array([0.3, -1.2, 10.0], np.float32)
    value, (dx,) = evaluate(g, x)
    q = _simq(x, 0.5, -8, 7)
    assert np.allclose(value, q * x)
    assert np.allclose(dx, x + q)               # d/dx [simQ(x) * x] with d simQ/dx := 1
