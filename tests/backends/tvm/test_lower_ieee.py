"""Lowerings that TVM's algebraic simplifier would make wrong on IEEE special values.

* ``x == x``, ``x <= x`` and ``x >= x`` are rewritten to true whatever the dtype; for a NaN the
  answer is false. The lowering (``lower/tensor.py``) guards the float comparisons with
  ``isnan``; each comparison of a tensor with itself (and with a copy that fusion makes the
  same expression) is compared with the oracle.
* ``x + 0`` is rewritten to ``x``, but ``-0.0 + 0.0`` is ``+0.0``: ``nn.batch_norm`` with
  ``epsilon=0`` over a variance of ``-0.0`` divides by ``+0`` (``lower/nn.py``). The operators
  ``add`` and ``multiply`` with zero constants are checked too (``inf * 0`` is NaN, ``-1 * 0``
  is ``-0.0``): their constants reach the kernels as buffers, not literals the simplifier
  could fold. At ``-O3`` SimplifyInference rewrites ``batch_norm`` into the operator's own
  arithmetic, which keeps the ±inf of a zero standard deviation (issue 33).
* A negated comparison fused into one kernel (``logical_not(a < b)``, ``where`` of it) is
  rewritten by TVM into the complementary comparison (``a >= b``), false for NaN: float
  comparisons are compiled with explicit ``isnan`` tests of both operands.
* ``a - floor(a / b) * b`` is not the floored remainder when ``a / b`` rounds, and LLVM
  contracts it into an FMA that rounds differently again: ``floor_mod`` of floats is the
  exact remainder (``fmod`` corrected by the sign of ``b``) in the reference and the kernel.
* TVM legalizes float64 ``tanh`` as a ratio of exponentials that is 0 for tiny ``x``.
* ``0.0 * w`` is rewritten to ``0.0``: a convolution tap the simplifier proves to be in the
  padding contributed 0 where IEEE gives NaN for an infinite or NaN weight (found by a
  HypoFuzz campaign on the TVM backend, issue 31). The padding zero is a load of a hidden
  constant (``lower/base.padding_zero``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.tvm import build
from interpreter import evaluate

COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_a_tensor_compared_with_itself(dtype: str, opt_level: int) -> None:
    n = len(SPECIAL)
    calls = ", ".join(f"{op}(%x, %x)" for op in COMPARISONS)
    # %y is %x through an elementwise identity: after fusion both operands are one expression
    same = ", ".join(f"{op}(%x, %y)" for op in COMPARISONS)
    one = {"float16": "1f16", "float32": "1f", "float64": "1f64"}[dtype]
    text = (f"def @main(%x: Tensor[({n}), {dtype}]) {{\n"
            f"  let %y = multiply(%x, {one});\n"
            f"  ({calls}, {same})\n}}\n")
    x = np.array(SPECIAL, dtype=dtype)
    want = evaluate(text, x)
    got = build(text, opt_level=opt_level, executor="vm")(x)
    for w, g, name in zip(want, got, COMPARISONS * 2):
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_batch_norm_with_zero_epsilon_over_negative_zero_variance(dtype: str) -> None:
    ones = {"float16": "ADwAPAA8ADw=", "float32": "AACAPwAAgD8AAIA/AACAPw=="}[dtype]
    text = (f"def @main(%x: Tensor[(4), {dtype}], %m: Tensor[(4), {dtype}], "
            f"%v: Tensor[(4), {dtype}]) {{\n"
            f"  nn.batch_norm(%x, meta[relay.Constant][0], meta[relay.Constant][0], %m, %v, "
            f"axis=0, epsilon=0).0\n}}\n"
            f'#[metadata]\n{{"relay.Constant": [{{"dtype": "{dtype}", "shape": [4], '
            f'"data": "{ones}"}}]}}\n')
    x = np.array([-1, 1, -2, 2], dtype)
    m = np.zeros(4, dtype)
    v = np.array([-0.0, -0.0, 0.0, 4], dtype)
    want = evaluate(text, x, m, v)
    np.testing.assert_array_equal(want, np.array([-np.inf, np.inf, -np.inf, 2], dtype))
    np.testing.assert_array_equal(build(text, opt_level=0, executor="vm")(x, m, v), want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_adding_zero_and_multiplying_by_zero_literals(dtype: str, opt_level: int) -> None:
    suffix = {"float16": "f16", "float32": "f", "float64": "f64"}[dtype]
    n = len(SPECIAL)
    text = (f"def @main(%x: Tensor[({n}), {dtype}]) {{\n"
            f"  (add(%x, 0{suffix}), add(0{suffix}, %x), multiply(%x, 0{suffix}), "
            f"multiply(%x, -0{suffix}), multiply(%x, 1{suffix}))\n}}\n")
    x = np.array(SPECIAL, dtype=dtype)
    want = evaluate(text, x)
    got = build(text, opt_level=opt_level, executor="vm")(x)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
        np.testing.assert_array_equal(g, w)


REMAINDER_EDGES = [0.0, -0.0, 1.0, -1.0, 3.5, -3.5, 4.25, -4.25, 1e-30, -5.35304109e16, 7e15,
                   np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_floor_mod_is_the_exact_floored_remainder(dtype: str) -> None:
    with np.errstate(over="ignore"):     # 5e16 is inf in float16
        edges = np.array(REMAINDER_EDGES).astype(dtype)
    a, b = np.meshgrid(edges, edges)
    a, b = a.ravel(), b.ravel()
    n = a.size
    text = (f"def @main(%a: Tensor[({n}), {dtype}], %b: Tensor[({n}), {dtype}]) {{\n"
            f"  floor_mod(%a, %b)\n}}\n")
    with np.errstate(all="ignore"):
        want = evaluate(text, a, b)
        np.testing.assert_array_equal(want, np.remainder(a, b))
        # (-5.35304109e16 mod -4.25 is -1.326...; the rounded formula gives 0, its FMA -2.25)
        got = build(text, opt_level=0, executor="vm")(a, b)
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)                  # the sign of a zero is part of the result
    assert np.array_equal(np.signbit(got[number]), np.signbit(want[number]))


_FLOOR_MOD_KERNEL: dict[str, object] = {}


@settings(max_examples=60, deadline=None)
@given(a=st.floats(width=64), b=st.floats(width=64))
def test_floor_mod_kernel_matches_numpy_remainder(a: float, b: float) -> None:
    if "vm" not in _FLOOR_MOD_KERNEL:
        _FLOOR_MOD_KERNEL["vm"] = build(
            "def @main(%a: Tensor[(2), float64], %b: Tensor[(2), float64]) {\n"
            "  floor_mod(%a, %b)\n}\n", opt_level=0, executor="vm")
    x, y = np.array([a, -a]), np.array([b, b])
    got = _FLOOR_MOD_KERNEL["vm"](x, y)  # type: ignore[operator]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.remainder(x, y))


def test_float64_tanh_of_tiny_values_is_the_value() -> None:
    x = np.array([3.4e-208, -1e-30, 1e-10, -1e-5, 0.5, -20.0, 0.0, -0.0, np.inf, np.nan])
    text = "def @main(%x: Tensor[(10), float64]) { tanh(%x) }"
    got = build(text, opt_level=0, executor="vm")(x)
    np.testing.assert_allclose(got, np.tanh(x), rtol=1e-15, atol=0)
    assert np.array_equal(np.signbit(got[:-1]), np.signbit(np.tanh(x[:-1])))


# --- issue 33 item 1: negated comparisons and batch_norm under -O3 -----------------------

SUFFIX = {"float16": "f16", "float32": "f", "float64": "f64"}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("opt_level", [1, 3])
def test_negated_comparisons_fused_with_nan_operands(dtype: str, opt_level: int) -> None:
    """``logical_not(a < b)`` fused into one kernel: TVM's simplifier turns it into
    ``a >= b``, false for a NaN operand where the negation is true. Every comparison,
    negated directly, through ``where`` and in the scalar form, against the oracle."""
    a, b = np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype))
    a, b = a.ravel(), b.ravel()
    n = a.size
    one, zero = f"1{SUFFIX[dtype]}", f"0{SUFFIX[dtype]}"
    negated = ", ".join(f"logical_not({op}(%a, %b))" for op in COMPARISONS)
    selected = ", ".join(f"where(logical_not({op}(%a, %b)), {one}, {zero})"
                         for op in COMPARISONS)
    scalar = ", ".join(f"logical_not({op}(%s, %t))" for op in COMPARISONS)
    text = (f"def @main(%a: Tensor[({n}), {dtype}], %b: Tensor[({n}), {dtype}], "
            f"%s: {dtype}, %t: {dtype}) {{\n"
            f"  ({negated}, {selected}, {scalar}, logical_not(%a < %b), "
            f"logical_not(%s >= %t))\n}}\n")
    fn = build(text, opt_level=opt_level, executor="vm")
    names = [*COMPARISONS * 3, "infix <", "infix >="]
    for s, t in ((0.0, np.nan), (np.nan, 1.0), (np.nan, np.nan), (-0.0, 0.0)):
        args = (a, b, np.array(s, dtype), np.array(t, dtype))
        want = evaluate(text, *args)
        got = fn(*args)
        for w, g, name in zip(want, got, names, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} with s={s}, t={t}")


@pytest.mark.parametrize("executor", ["vm", "graph"])
def test_the_issue_negated_less_than_nan(executor: str) -> None:
    text = ("def @main(%x: Tensor[(1), float32], %y: Tensor[(1), float32]) {"
            " logical_not(%x < %y) }")
    got = build(text, opt_level=1, executor=executor)(np.float32([0]), np.float32([np.nan]))
    np.testing.assert_array_equal(got, [True])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("bind", [False, True])
def test_batch_norm_with_zero_standard_deviation_after_simplify_inference(
        dtype: str, opt_level: int, bind: bool) -> None:
    """``epsilon=0`` over a zero variance: the oracle divides by zero (±inf, NaN for
    ``x == mean``); SimplifyInference (-O3) must compute the same, with the statistics as
    parameters or bound (folded at compile time)."""
    text = (f"def @main(%x: Tensor[(2, 3), {dtype}], %g: Tensor[(3), {dtype}], "
            f"%b: Tensor[(3), {dtype}], %m: Tensor[(3), {dtype}], %v: Tensor[(3), {dtype}]) {{\n"
            f"  nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=0).0\n}}\n")
    x = np.array([[1, -1, 0], [2, 0, -3]], dtype)
    g = np.array([1, 2, -1], dtype)
    b = np.array([0, 1, 0.5], dtype)
    m = np.array([0, 0, 1], dtype)
    v = np.array([0, -0.0, 4], dtype)
    with np.errstate(all="ignore"):
        want = evaluate(text, x, g, b, m, v)
        assert np.isinf(want[0, 0]) and np.isinf(want[0, 1])
        if bind:
            params = {"g": g, "b": b, "m": m, "v": v}
            got = build(text, opt_level=opt_level, executor="vm", params=params)(x)
        else:
            got = build(text, opt_level=opt_level, executor="vm")(x, g, b, m, v)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("executor", ["vm", "aot", "graph"])
def test_relu_of_special_values_matches_the_oracle_bitwise(dtype: str, executor: str) -> None:
    # The reference is numpy.maximum(x, 0): relu(-0.0) is +0.0 for float32/float64 (numpy
    # returns the second operand on a tie), NaN stays NaN. A kernel computing
    # ``x >= 0 ? x : 0`` returned -0.0 (found by the conformance kit's signed-zero check).
    n = len(SPECIAL)
    text = (f"def @main(%x: Tensor[({n}), {dtype}]) {{\n"
            f"  nn.relu(negative(negative(%x)))\n}}\n")
    x = np.array(SPECIAL, dtype=dtype)
    want = evaluate(text, x)
    got = build(text, opt_level=3, executor=executor)(x)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)


def test_float16_log_softmax_rounds_its_sum_as_the_reference() -> None:
    # The reference sums exp(x - max) in float16: 1 + 4.5e-5 is 1.0 there and the maximum's
    # log_softmax is exactly 0. A float32 sum gave -4.5e-5 instead, which reordered ties for
    # an argmax after it (max_pool2d_pick picked another element: found by the kit).
    x = np.array([[0.0, -10.0], [3.0, -20.0], [-7.0, 5.0], [1.0, 1.0]], dtype="float16")
    text = "def @main(%x: Tensor[(4, 2), float16]) { nn.log_softmax(%x) }"
    want = evaluate(text, x)
    got = build(text, opt_level=0, executor="graph")(x)
    np.testing.assert_array_equal(np.asarray(got)[:3].max(axis=1), np.zeros(3, np.float16))
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=1e-3, atol=1e-3)
    assert (np.asarray(want)[:3].max(axis=1) == 0).all()


@pytest.mark.parametrize("layouts", [
    'kernel_layout="HWOI", out_layout="NHWC"',     # the default path: bounds test per load
    'kernel_layout="OIHW"',                         # the NCHW plan: a padded stage
    'data_layout="NHWC", kernel_layout="HWIO"',
])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_padded_taps_times_non_finite_weights_are_nan(layouts: str, opt_level: int) -> None:
    """The HypoFuzz counterexample: strides 2, 3 and padding 1 put every tap of the first
    output column in the padding; ``0 * -inf`` is NaN in the oracle."""
    nhwc = "NHWC" in layouts.split(",")[0]
    dshape = (2, 4, 1, 2) if nhwc else (2, 2, 4, 1)
    wshape = {"HWOI": (1, 1, 4, 1), "OIHW": (4, 1, 1, 1), "HWIO": (1, 1, 1, 4)}[
        layouts.split('kernel_layout="')[1][:4]]
    text = (f"def @main(%x: Tensor[{dshape}, float32], %w: Tensor[{wshape}, float32]) {{"
            f" nn.conv2d(%x, %w, strides=[2, 3], padding=[1], groups=2, kernel_size=[1, 1],"
            f" {layouts}) }}")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(dshape).astype("float32")
    w = np.array([-np.inf, 4.5, np.nan, np.inf], "float32").reshape(wshape)
    want = evaluate(text, x, w)
    for executor in ("vm", "graph"):
        got = build(text, opt_level=opt_level, executor=executor)(x, w)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got, want)
