"""The numpy fallback kernel on its own: every operator, through ``FallbackKernel``, computes
what its reference computes — with and without ``out=`` — and fails as the oracle fails."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from opcase import draw_call, primitive

from backends.tvm.fallback import FallbackKernel, OpKernel
from interpreter.values import compare_values
from semantics import RelayRuntimeError, ops, parse_expr
from semantics.errors import InternalError


def _layout(result):
    leaves = list(result) if isinstance(result, tuple) else [result]
    return [np.empty(r.shape, r.dtype) for r in leaves]


@settings(max_examples=150)
@given(data=st.data(), name=st.sampled_from(ops.list_ops()))
def test_fallback_kernel_computes_the_reference(data, name):
    drawn = draw_call(data.draw, name)
    assume(drawn is not None)
    call, values = drawn
    expected = ops.get(name).reference(*values, **dict(call.attrs))
    kernel = FallbackKernel(primitive(call))
    got = kernel(*values)
    equal, why = compare_values(expected, got, exact_floats=True)
    assert equal, why
    out = _layout(got)
    written = kernel(*values, out=out)
    equal, why = compare_values(expected, written, exact_floats=True)
    assert equal, why
    for buffer, value in zip(out, written if isinstance(written, tuple) else (written,)):
        assert buffer is value


def test_a_fused_group_runs_in_evaluation_order():
    fn = parse_expr("fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32], Primitive=1) "
                    "{ let %t = (exp(%a), %b); multiply(%t.0, negative(%t.1)) }")
    # A let is no dataflow: the fallback rejects it as the fuser never produces it.
    with pytest.raises(InternalError, match="fallback kernel:"):
        FallbackKernel(fn)
    fn = parse_expr("fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32], Primitive=1) "
                    "{ %0 = (exp(%a), %b); multiply(%0.0, negative(%0.1)) }")
    k = FallbackKernel(fn)
    a, b = np.array([0, 1], "float32"), np.array([2, 3], "float32")
    np.testing.assert_allclose(k(a, b), np.exp(a) * -b, rtol=1e-6)
    assert k.ops == ["exp", "negative", "multiply"]
    assert k.name == "fallback_exp_negative_multiply"


def test_shapes_are_not_fixed():
    k = FallbackKernel(parse_expr("fn (%a: Tensor[(?), int32], Primitive=1) { %a * 2 }"))
    for n in (0, 3, 7):
        np.testing.assert_array_equal(k(np.arange(n, dtype="int32")), 2 * np.arange(n))


def test_operator_failures_are_runtime_errors():
    k = FallbackKernel(parse_expr("fn (%a: int32, %b: int32, Primitive=1) { %a / %b }"))
    assert k(np.int32(7), np.int32(-2)) == -3
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        k(np.array(1, "int32"), np.array(0, "int32"))


def test_wrong_arity_and_bad_out_buffers():
    k = FallbackKernel(parse_expr("fn (%a: Tensor[(2), float32], Primitive=1) { exp(%a) }"))
    with pytest.raises(RelayRuntimeError, match="wrong number of arguments"):
        k()
    with pytest.raises(InternalError, match="does not fit"):
        k(np.zeros(2, "float32"), out=[np.zeros(3, "float32")])


def test_op_kernel_remembers_the_verdict_per_signature():
    k = OpKernel("add")
    x = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(k(x, x), 2 * x)
    assert k.last is not None
    np.testing.assert_array_equal(k(x[:2], x[:2]), 2 * x[:2])   # a new signature decides again
    with pytest.raises(RelayRuntimeError, match="wrong number of arguments"):
        k(x)
