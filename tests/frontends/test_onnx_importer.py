"""``frontends.onnx.from_onnx``: parameters and inputs, symbolic dims, the one error naming
every unsupported node, ``If`` → ``if``, ``Loop`` → a recursive function (against
onnxruntime), sequences → ``List``, and random element-wise graphs against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontends.onnx import ImporterError, from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics import RelayError, parse, pretty  # noqa: E402
from semantics.expr import Function, Let  # noqa: E402
from semantics.shapes import shape_var  # noqa: E402
from semantics.visitor import post_order  # noqa: E402
from typechecker import check, type_of  # noqa: E402

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def run_ort(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_relay(m, *inputs):
    mod, params = from_onnx(m)
    return evaluate(mod, *inputs, *params.values())


def test_params_are_initializers_named_as_in_the_graph_after_the_data_inputs():
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.ones(2, np.float32)
    shape = np.array([-1], np.int64)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"]),
               helper.make_node("Add", ["y", "b"], ["z"]),
               helper.make_node("Reshape", ["z", "shape"], ["out"])],
              [helper.make_tensor_value_info("x", F, [4, 3])],
              [helper.make_tensor_value_info("out", F, [8])],
              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
               numpy_helper.from_array(shape, "shape")])
    mod, params = from_onnx(m)
    assert list(params) == ["w", "b"]          # the shape is read at import time only
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "b"]
    np.testing.assert_array_equal(params["w"], w)
    check(mod)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    got = evaluate(mod, x, *params.values())
    np.testing.assert_allclose(got, (x @ w + b).reshape(-1), rtol=1e-6)
    # The printed module re-parses to the same program (the text `relay import` writes).
    again = parse(pretty(mod))
    np.testing.assert_allclose(evaluate(again, x, *params.values()), got)


def test_symbolic_input_dims_become_shape_variables():
    m = model([helper.make_node("Relu", ["x"], ["y"])],
              [helper.make_tensor_value_info("x", F, ["batch", 3])],
              [helper.make_tensor_value_info("y", F, ["batch", 3])])
    mod, _ = from_onnx(m)
    (x,) = mod["main"].params
    assert tuple(x.type_annotation.shape) == (shape_var("batch"), 3)
    ty = type_of(mod["main"])
    assert tuple(ty.ret_type.shape) == (shape_var("batch"), 3)
    for n in (1, 5):
        x = np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(evaluate(mod, x), np.maximum(x, 0))


def test_every_unsupported_node_is_named_in_one_error():
    m = model([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Unique", ["a"], ["b"], name="first"),
               helper.make_node("Det", ["b"], ["c"], name="second"),
               helper.make_node("Relu", ["c"], ["d"], bogus=3)],
              [helper.make_tensor_value_info("x", F, [2, 2])],
              [helper.make_tensor_value_info("d", F, [])])
    with pytest.raises(ImporterError) as info:
        from_onnx(m)
    msg = info.value.message
    assert isinstance(info.value, RelayError)
    assert "3 unsupported node(s)" in msg
    assert "Unique" in msg and "'first'" in msg and "Det" in msg and "'second'" in msg
    assert "bogus" in msg


def test_dynamic_value_needed_statically_is_a_relay_error():
    m = model([helper.make_node("Reshape", ["x", "s"], ["y"])],
              [helper.make_tensor_value_info("x", F, [2, 3]),
               helper.make_tensor_value_info("s", TensorProto.INT64, [1])],
              [helper.make_tensor_value_info("y", F, [6])])
    with pytest.raises(ImporterError, match="Reshape shape must be known at import time"):
        from_onnx(m)
    mod, _ = from_onnx(m, const_inputs={"s": np.array([6], np.int64)})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate(mod, x), x.reshape(6))


def _if_model():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                              [helper.make_tensor_value_info("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [3])])
    return model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                 [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                  helper.make_tensor_value_info("x", F, [3])],
                 [helper.make_tensor_value_info("y", F, [3])])


@pytest.mark.parametrize("cond", [True, False])
def test_if_becomes_relay_if_and_matches_onnxruntime(cond):
    m = _if_model()
    mod, _ = from_onnx(m)
    assert "if (" in pretty(mod)
    x = np.array([1.5, -2.0, 3.0], np.float32)
    c = np.array(cond)
    (want,) = run_ort(m, {"c": c, "x": x})
    np.testing.assert_allclose(evaluate(mod, c, x), want)


def _loop_model():
    """y = x; for i < n while sum(y) < limit: y = y * 2 + i."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["y_in", "two"], ["y2"]),
         helper.make_node("Add", ["y2", "fi"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", F, [3])],
        [numpy_helper.from_array(np.float32(2.0), "two")])
    return model([helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body)],
                 [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                  helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                  helper.make_tensor_value_info("x", F, [3]),
                  helper.make_tensor_value_info("limit", F, [])],
                 [helper.make_tensor_value_info("y", F, [3])])


def _has_recursive_let(fn) -> bool:
    for node in post_order(fn):
        if isinstance(node, Let) and isinstance(node.value, Function):
            if any(n is node.var for n in post_order(node.value.body)):
                return True
    return False


@given(n=st.integers(0, 6), start=st.lists(st.floats(-3, 3, width=32), min_size=3, max_size=3),
       limit=st.floats(-10, 200, width=32))
@settings(max_examples=25)
def test_loop_becomes_a_tail_recursive_function_and_matches_onnxruntime(n, start, limit):
    m = _loop_model()
    mod, _ = from_onnx(m)
    assert _has_recursive_let(mod["main"])
    check(mod)
    feeds = {"n": np.array(n, np.int64), "c": np.array(True), "x": np.array(start, np.float32),
             "limit": np.array(limit, np.float32)}
    (want,) = run_ort(m, feeds)
    got = evaluate(mod, *feeds.values())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_sequences_become_lists():
    m = model([helper.make_node("SequenceConstruct", ["a", "b", "a"], ["s"]),
               helper.make_node("SequenceAt", ["s", "one"], ["y"]),
               helper.make_node("SequenceLength", ["s"], ["n"])],
              [helper.make_tensor_value_info("a", F, [2]),
               helper.make_tensor_value_info("b", F, [2])],
              [helper.make_tensor_value_info("y", F, [2]),
               helper.make_tensor_value_info("n", TensorProto.INT64, [])],
              [numpy_helper.from_array(np.int64(1), "one")])
    mod, params = from_onnx(m)
    assert "Cons" in pretty(mod)
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    y, n = evaluate(mod, a, b, *params.values())
    np.testing.assert_array_equal(y, b)
    assert int(n) == 3


# --- random element-wise graphs against onnxruntime ----------------------------------------

UNARY = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Floor", "Ceil", "Softsign", "Erf"]
BINARY = ["Add", "Sub", "Mul", "Max", "Min"]


@st.composite
def elementwise_graphs(draw):
    """A chain of element-wise ONNX ops over two broadcastable float inputs."""
    rank = draw(st.integers(0, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    other = [d if draw(st.booleans()) else 1 for d in shape]
    names, nodes = ["a", "b"], []
    for k in range(draw(st.integers(1, 6))):
        out = f"t{k}"
        if draw(st.booleans()):
            nodes.append(helper.make_node(draw(st.sampled_from(UNARY)),
                                          [draw(st.sampled_from(names))], [out]))
        else:
            nodes.append(helper.make_node(draw(st.sampled_from(BINARY)),
                                          [draw(st.sampled_from(names)),
                                           draw(st.sampled_from(names))], [out]))
        names.append(out)
    m = model(nodes, [helper.make_tensor_value_info("a", F, shape),
                      helper.make_tensor_value_info("b", F, other)],
              [helper.make_tensor_value_info(names[-1], F, None)])
    elems = st.floats(-3, 3, width=32)
    from hypothesis.extra import numpy as hnp
    a = draw(hnp.arrays(np.float32, tuple(shape), elements=elems))
    b = draw(hnp.arrays(np.float32, tuple(other), elements=elems))
    return m, a, b


@given(elementwise_graphs())
@settings(max_examples=60)
def test_random_elementwise_graphs_match_onnxruntime(case):
    m, a, b = case
    (want,) = run_ort(m, {"a": a, "b": b})
    got = run_relay(m, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_pool_gemm_network_matches_onnxruntime():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    cb = rng.standard_normal(4).astype(np.float32)
    g = rng.standard_normal((5, 16)).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1],
                                strides=[2, 2]),
               helper.make_node("Relu", ["c"], ["r"]),
               helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
               helper.make_node("Flatten", ["p"], ["f"]),
               helper.make_node("Gemm", ["f", "g"], ["y"], transB=1, alpha=0.5),
               helper.make_node("Softmax", ["y"], ["out"])],
              [helper.make_tensor_value_info("x", F, [2, 3, 8, 8])],
              [helper.make_tensor_value_info("out", F, [2, 5])],
              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(cb, "cb"),
               numpy_helper.from_array(g, "g")])
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    (want,) = run_ort(m, {"x": x})
    np.testing.assert_allclose(run_relay(m, x), want, rtol=1e-4, atol=1e-5)


def test_loop_scan_outputs_with_a_static_trip_count_match_onnxruntime():
    """y_{i+1} = y_i * 0.5 + i, scanning y at every step, 4 iterations, no condition."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["y_in", "half"], ["h"]),
         helper.make_node("Add", ["h", "fi"], ["y_out"]),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])],
        [numpy_helper.from_array(np.float32(0.5), "half")])
    m = model([helper.make_node("Loop", ["n", "", "x"], ["y", "ys"], body=body)],
              [helper.make_tensor_value_info("x", F, [2])],
              [helper.make_tensor_value_info("y", F, [2]),
               helper.make_tensor_value_info("ys", F, [4, 2])],
              [numpy_helper.from_array(np.int64(4), "n")])
    mod, params = from_onnx(m)
    assert _has_recursive_let(mod["main"])
    x = np.array([1.0, -3.0], np.float32)
    want = run_ort(m, {"x": x})
    got = evaluate(mod, x, *params.values())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("n,limit", [(0, 100.0), (10, 100.0), (10, 1e6), (3, 1e6)])
def test_loop_scan_outputs_with_a_data_dependent_count_match_onnxruntime(n, limit):
    """Scan outputs are a list the iterations cons onto, stacked after the loop into a
    ``Tensor[(?, 3)]``."""
    m = _loop_model()
    body = m.graph.node[0].attribute[0].g
    body.output.append(helper.make_tensor_value_info("y_out", F, [3]))
    m.graph.node[0].output.append("ys")
    m.graph.output.append(helper.make_tensor_value_info("ys", F, None))
    mod, params = from_onnx(m)
    assert _has_recursive_let(mod["main"])
    feeds = {"n": np.array(n, np.int64), "c": np.array(True), "x": np.ones(3, np.float32),
             "limit": np.array(limit, np.float32)}
    want = run_ort(m, feeds)
    got = evaluate(mod, *feeds.values())
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
