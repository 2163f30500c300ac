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
