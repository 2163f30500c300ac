"""Float comparisons of a tensor with itself on IEEE special values (``lower/tensor.py``).

TVM's simplifier rewrites ``x == x``, ``x <= x`` and ``x >= x`` to true whatever the dtype; for
a NaN the answer is false. The lowering guards the reflexive comparisons with ``isnan``; these
tests compile each comparison of a tensor with itself (and with a copy that fusion makes the same
expression) and compare with the oracle.
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
