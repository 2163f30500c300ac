"""Issue #33 item 9: FoldConstant folds operator calls that take no arguments."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import passes
from interpreter import evaluate
from semantics import parse
from semantics.expr import Constant


@pytest.mark.parametrize("text, expected", [
    ('exp(zeros(shape=[2], dtype="float32"))', np.ones(2, np.float32)),
    ('zeros(shape=[2, 3], dtype="int8")', np.zeros((2, 3), np.int8)),
    ('ones(shape=[], dtype="float64") + 1f64', np.float64(2)),
])
def test_calls_without_arguments_fold_to_a_constant(text, expected):
    mod = parse("def @main() { " + text + " }")
    out = passes.fold_constant(mod)
    body = out["main"].body
    assert isinstance(body, Constant), body
    assert body.data.dtype == expected.dtype
    np.testing.assert_array_equal(body.data, expected)
    np.testing.assert_array_equal(evaluate(mod), body.data)


def test_a_nullary_call_beyond_the_size_limit_is_left_and_never_computed(monkeypatch):
    # 10^10 float32 elements: computing it at compile time would need 40 GB
    fc = sys.modules["passes.fold_constant"]  # (the package rebinds the name to the pass)

    def computed(call):
        raise AssertionError(f"{call.op.name} computed at compile time")

    monkeypatch.setattr(fc, "_evaluate", computed)
    mod = parse('def @main() { zeros(shape=[100000, 100000], dtype="float32") }')
    out = passes.fold_constant(mod)
    assert not isinstance(out["main"].body, Constant)


def test_a_large_weight_transformed_elementwise_folds_but_a_broadcast_does_not():
    # Quantizing a 512x512x3x3 weight (2.4M elements, beyond MAX_FOLDED_ELEMENTS) must fold:
    # left in the program it ran at every call (most of int8 ResNet-18's time). A result no
    # larger than its largest constant argument does not grow the program; a broadcast of a
    # small constant to a large shape does, and stays a call.
    from semantics.expr import Call, Op

    fc = sys.modules["passes.fold_constant"]
    n = fc.MAX_FOLDED_ELEMENTS + 7
    w = np.arange(n, dtype=np.float32) - n / 2
    quantize = Call(Op("cast"), (Call(Op("clip"), (Call(Op("round"), (Call(
        Op("divide"), (Constant(w), Constant(np.float32(0.5)))),)),),
        attrs={"a_min": -127.0, "a_max": 127.0}),), attrs={"dtype": "int8"})
    from semantics.expr import Function
    from semantics.module import IRModule

    mod = IRModule({"main": Function((), quantize)})
    out = passes.fold_constant(mod)
    body = out["main"].body
    assert isinstance(body, Constant) and body.data.dtype == np.int8
    np.testing.assert_array_equal(body.data, evaluate(mod))
    big = parse(f'def @main() {{ broadcast_to(1f, shape=[{n}]) }}')
    assert not isinstance(passes.fold_constant(big)["main"].body, Constant)
