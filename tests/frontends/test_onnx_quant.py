"""ONNX quantization operators (``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``, ``MatMulInteger``, ``QLinearMatMul``, ``ConvInteger``,
``QLinearConv``) against the ONNX package's reference implementation, on random data, scales
and zero points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from frontends.onnx import from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from typechecker import check  # noqa: E402


def run_both(nodes, inputs, outputs, inits, feeds, opset=19):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    mod, params = from_onnx(m)
    check(mod)
    got = evaluate(mod, *feeds.values(), *params.values())
    got = [np.asarray(g) for g in got] if isinstance(got, tuple) else [np.asarray(got)]
    return got, [np.asarray(w) for w in ReferenceEvaluator(m).run(None, feeds)]


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                         shape)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


@given(st.sampled_from(["uint8", "int8", "uint16", "int16"]), st.booleans(),
       st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_quantize_and_dequantize_match_the_reference(dtype, per_axis, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    info = np.iinfo(dtype)
    shape = (3,) if per_axis else ()
    scale = rng.uniform(0.05, 2, shape).astype(np.float32)
    zp = rng.integers(info.min // 2, info.max // 2, shape, endpoint=True).astype(dtype)
    got, want = run_both([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                          helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)],
                         [vi("x", np.float32, [2, 3, 4])],
                         [vi("q", dtype, None), vi("y", np.float32, None)],
                         [init("s", scale), init("z", zp)], {"x": x})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@given(st.integers(1, 8), st.floats(-50, 50), st.floats(0.1, 60), st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_dynamic_quantize_linear_matches_the_reference(n, center, spread, seed):
    x = (center + spread * np.random.default_rng(seed).standard_normal(n)).astype(np.float32)
    got, want = run_both([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
                         [vi("x", np.float32, [n])],
                         [vi("y", np.uint8, None), vi("s", np.float32, None),
                          vi("z", np.uint8, None)], [], {"x": x}, opset=11)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


@given(st.sampled_from(["uint8", "int8"]), st.integers(2, 3), st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_integer_products_match_the_reference(dtype, rank, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lead = (2,) if rank == 3 else ()
    a = rng.integers(info.min, info.max, lead + (3, 5), endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, lead + (5, 4), endpoint=True).astype(dtype)
    azp, bzp, yzp = (rng.integers(info.min // 4, info.max // 4, 1).astype(dtype)
                     for _ in range(3))
    scales = [init(n, rng.uniform(0.001, 0.1, 1).astype(np.float32)) for n in "pqr"]
    got, want = run_both(
        [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["c"]),
         helper.make_node("QLinearMatMul", ["a", "p", "az", "b", "q", "bz", "r", "yz"], ["y"])],
        [vi("a", dtype, list(a.shape)), vi("b", dtype, list(b.shape))],
        [vi("c", np.int32, None), vi("y", dtype, None)],
        [init("az", azp), init("bz", bzp), init("yz", yzp)] + scales, {"a": a, "b": b})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@given(st.sampled_from(["uint8", "int8"]), st.integers(0, 1), st.booleans(),
       st.integers(0, 2 ** 16))
@settings(max_examples=20, deadline=None)
def test_integer_convolutions_match_the_reference(dtype, pad, bias, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (1, 2, 5, 5), endpoint=True).astype(dtype)
    w = rng.integers(info.min, info.max, (3, 2, 3, 3), endpoint=True).astype(dtype)
    xzp = rng.integers(info.min // 4, info.max // 4, ()).astype(dtype)
    wzp = rng.integers(info.min // 4, info.max // 4, (3,)).astype(dtype)
    yzp = rng.integers(info.min // 4, info.max // 4, ()).astype(dtype)
    inits = [init("xz", xzp), init("wz", wzp), init("yz", yzp),
             init("xs", np.float32(rng.uniform(0.01, 0.1))),
             init("ws", rng.uniform(0.01, 0.1, 3).astype(np.float32)),
             init("ys", np.float32(rng.uniform(0.5, 4))),
             init("b", rng.integers(-500, 500, 3).astype(np.int32))]
    q_inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else [])
    got, want = run_both(
        [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["c"], pads=[pad] * 4),
         helper.make_node("QLinearConv", q_inputs, ["y"], pads=[pad] * 4)],
        [vi("x", dtype, [1, 2, 5, 5]), vi("w", dtype, [3, 2, 3, 3])],
        [vi("c", np.int32, None), vi("y", dtype, None)], inits, {"x": x, "w": w})
    for g, wnt in zip(got, want):
        assert g.dtype == wnt.dtype
        np.testing.assert_array_equal(g, wnt)
