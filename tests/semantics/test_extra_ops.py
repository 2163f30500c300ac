"""``semantics/ops/extra.py``: ``nn.lrn`` — relation, attribute schema, numpy reference
(against a direct per-channel loop and, when installed, ONNX's reference ``LRN``), and the
operator in Relay text through the type checker and the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from interpreter import evaluate
from semantics import RelayTypeError, ops, parse
from semantics.ops.registry import OpPattern
from semantics.types import TensorType
from typechecker import type_of

LRN = ops.get("nn.lrn")


def direct_lrn(x: np.ndarray, size: int, axis: int, alpha: float, beta: float,
               bias: float) -> np.ndarray:
    """The definition, one channel at a time (float64)."""
    xm = np.moveaxis(x.astype(np.float64), axis, 0)
    out = np.empty_like(xm)
    c = xm.shape[0]
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + size - 1 - (size - 1) // 2)
        s = np.sum(xm[lo:hi + 1] ** 2, axis=0)
        out[i] = xm[i] / (bias + alpha / size * s) ** beta
    return np.moveaxis(out, 0, axis)


def test_schema_and_family():
    assert LRN.num_inputs == 1
    assert LRN.family == "extra"
    assert LRN.pattern == OpPattern.OPAQUE
    attrs = LRN.normalize_attrs({})
    assert dict(attrs) == {"size": 5, "axis": 1, "alpha": 1e-4, "beta": 0.75, "bias": 2.0}
    with pytest.raises(RelayTypeError, match="size"):
        LRN.normalize_attrs({"size": 0})
    with pytest.raises(RelayTypeError, match="no attribute"):
        LRN.normalize_attrs({"depth": 3})


def test_relation_identity_on_floats_and_axis_checked():
    t = TensorType((1, 4, 3, 3), "float32")
    assert LRN.relation((t,), LRN.normalize_attrs({})) is t
    with pytest.raises(RelayTypeError):
        LRN.relation((TensorType((1, 4), "int32"),), LRN.normalize_attrs({}))
    with pytest.raises(RelayTypeError):
        LRN.relation((TensorType((1, 4), "float32"),), LRN.normalize_attrs({"axis": 2}))


@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=5),
                    elements=st.floats(-4, 4, width=32)),
       size=st.integers(1, 6), alpha=st.floats(1e-4, 1.0), beta=st.floats(0.1, 1.5),
       bias=st.floats(0.5, 3.0), data=st.data())
def test_reference_matches_the_definition(x, size, alpha, beta, bias, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    got = LRN.reference(x, size=size, axis=axis, alpha=alpha, beta=beta, bias=bias)
    assert got.dtype == np.float32 and got.shape == x.shape
    want = direct_lrn(x, size, axis, alpha, beta, bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", ["test_lrn", "test_lrn_default"])
def test_matches_the_onnx_node_tests(case):
    pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
    from onnx import helper
    from onnx.backend.test.case.node import collect_testcases

    (tc,) = [c for c in collect_testcases() if c.name == case]
    (node,) = tc.model.graph.node
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    (inputs, outputs), *_ = tc.data_sets
    got = LRN.reference(np.asarray(inputs[0]), size=attrs["size"], axis=1,
                        alpha=attrs.get("alpha", 1e-4), beta=attrs.get("beta", 0.75),
                        bias=attrs.get("bias", 1.0))
    np.testing.assert_allclose(got, outputs[0], rtol=1e-5, atol=1e-6)


def test_in_relay_text():
    src = """def @main(%x: Tensor[(1, 3, 2, 2), float32]) {
      nn.lrn(%x, size=3, alpha=0.001f, beta=0.5f, bias=1f)
    }"""
    mod = parse(src)
    ty = type_of(mod["main"])
    assert tuple(ty.ret_type.shape) == (1, 3, 2, 2) and ty.ret_type.dtype == "float32"
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    got = evaluate(mod, x)
    np.testing.assert_allclose(got, direct_lrn(x, 3, 1, 0.001, 0.5, 1.0), rtol=1e-5)
