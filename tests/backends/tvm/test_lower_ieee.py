"""Lowerings that TVM's algebraic simplifier would make wrong on IEEE special values.

* ``x == x``, ``x <= x`` and ``x >= x`` are rewritten to true whatever the dtype; for a NaN the
  answer is false. The lowering (``lower/tensor.py``) guards the reflexive comparisons with
  ``isnan``; each comparison of a tensor with itself (and with a copy that fusion makes the
  same expression) is compared with the oracle.
* ``x + 0`` is rewritten to ``x``, but ``-0.0 + 0.0`` is ``+0.0``: ``nn.batch_norm`` with
  ``epsilon=0`` over a variance of ``-0.0`` divides by ``+0`` (``lower/nn.py``). The operators
  ``add`` and ``multiply`` with zero constants are checked too (``inf * 0`` is NaN, ``-1 * 0``
  is ``-0.0``): their constants reach the kernels as buffers, not literals the simplifier
  could fold. (At ``-O3``,
  SimplifyInference rewrites ``batch_norm`` into ``x * S + T``, which rounds differently and
  gives NaN where a zero standard deviation meets a zero mean: see its design note.)
"""

from __future__ import annotations

import numpy as np
import pytest

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
