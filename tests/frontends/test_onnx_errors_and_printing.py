"""The ONNX importer's errors and output form: every node it cannot handle named (operator,
index, outputs) in one ``ImporterError``; a malformed, truncated, random or empty file an
``ImporterError``, never another exception; imported graphs as ``let`` bindings in node
order, printed one node a line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontends.onnx import ImporterError, from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics import RelayError, parse, pretty  # noqa: E402
from semantics.expr import Let  # noqa: E402

F = TensorProto.FLOAT


def vi(name, dims):
    return helper.make_tensor_value_info(name, F, dims)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def residual_cnn():
    """conv → relu → conv → add (a residual) → relu → global pool → flatten → gemm."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in [("w1", (4, 4, 3, 3)), ("b1", (4,)), ("w2", (4, 4, 3, 3)),
                          ("fc", (3, 4)), ("fcb", (3,))]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    return model(nodes, [vi("x", ["batch", 4, 6, 6])], [vi("y", ["batch", 3])], inits)


# --- one error naming every node ----------------------------------------------------------------

def test_unsupported_nodes_are_named_by_operator_index_and_outputs_in_one_error():
    m = model([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Unique", ["a"], ["b"]),
               helper.make_node("Det", ["b"], ["c"], name="det"),
               helper.make_node("Relu", ["c"], ["d"])],
              [vi("x", [2, 2])], [vi("d", [])])
    with pytest.raises(ImporterError) as info:
        from_onnx(m)
    msg = info.value.message
    assert "2 unsupported node(s)" in msg
    assert "Unique node 1 (outputs ['b'])" in msg
    assert "Det node 2 'det' (outputs ['c'])" in msg


def test_nodes_that_fail_to_convert_are_all_reported_together():
    # Two Reshapes whose shapes are run-time data (not shapes of tensors): both named; the
    # Relu reading the first one's output is a consequence and is not reported.
    m = model([helper.make_node("Reshape", ["x", "s"], ["a"]),
               helper.make_node("Relu", ["a"], ["b"]),
               helper.make_node("Reshape", ["x", "s"], ["c"]),
               helper.make_node("Add", ["b", "c"], ["y"])],
              [vi("x", [2, 3]), helper.make_tensor_value_info("s", TensorProto.INT64, [1])],
              [vi("y", [6])])
    with pytest.raises(ImporterError) as info:
        from_onnx(m)
    msg = info.value.message
    assert "2 nodes failed" in msg
    assert "Reshape node 0 (outputs ['a'])" in msg and "Reshape node 2 (outputs ['c'])" in msg
    assert "Relu" not in msg and "Add" not in msg
    assert "Reshape shape must be known at import time" in msg


@given(m=st.integers(1, 4), k=st.integers(1, 5), k2=st.integers(1, 5), n=st.integers(1, 4),
       batch=st.integers(1, 3))
@settings(max_examples=25, deadline=None)
def test_a_type_error_inside_a_converter_names_the_node(m, k, k2, n, batch):
    # (batch, m, k) x (k2, n) with a symbolic batch: a product whose inner dims differ is an
    # ImporterError naming the MatMul node and both dims (never a bare RelayTypeError); one
    # whose inner dims agree imports and computes numpy's matmul for any batch.
    net = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
                [vi("x", ["batch", m, k]), vi("w", [k2, n])], [vi("y", None)])
    if k != k2:
        with pytest.raises(ImporterError) as info:
            from_onnx(net)
        msg = info.value.message
        assert "MatMul node 0 'proj' (outputs ['y'])" in msg
        assert f"dimensions {k} and {k2} are different" in msg
        return
    mod, _ = from_onnx(net)
    rng = np.random.default_rng(m * 100 + k)
    x = rng.standard_normal((batch, m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(evaluate(mod, x, w)), x @ w, rtol=1e-5, atol=1e-6)


def test_a_relay_type_error_raised_by_a_converter_is_an_importer_error(monkeypatch):
    import dataclasses

    from frontends.onnx.importer import CONVERTERS
    from semantics.errors import RelayTypeError

    def broken(ctx, node, ins, attrs):
        raise RelayTypeError("Tensor[(3), float32] is not Tensor[(4), float32]")

    monkeypatch.setitem(CONVERTERS, "Relu", dataclasses.replace(CONVERTERS["Relu"], fn=broken))
    net = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [3])], [vi("y", [3])])
    with pytest.raises(ImporterError) as info:
        from_onnx(net)
    msg = info.value.message
    assert "Relu node 0 (outputs ['y'])" in msg and "RelayTypeError" in msg
    assert "is not Tensor[(4), float32]" in msg and "malformed" not in msg


# --- malformed files ----------------------------------------------------------------------------

@given(cut=st.integers(0, 10 ** 6))
@settings(max_examples=40, deadline=None)
def test_every_truncation_of_a_real_model_is_an_importer_error_or_imports(cut):
    data = residual_cnn().SerializeToString()
    cut %= len(data)
    try:
        mod, params = from_onnx(data[:cut])
    except ImporterError:
        return
    # Protobuf may accept a prefix that ends between fields: then it is a smaller valid
    # model, and it imported (and type-checked, as from_onnx's calls are typed).
    assert "main" in mod.functions


@given(data=st.binary(min_size=0, max_size=300))
@settings(max_examples=60, deadline=None)
def test_random_bytes_are_an_importer_error(data):
    try:
        from_onnx(data)
    except ImporterError:
        return
    raise AssertionError("random bytes imported")


@pytest.mark.parametrize("data", [
    b"",
    helper.make_tensor("t", F, [2], [1.0, 2.0]).SerializeToString(),   # another message
    helper.make_graph([], "g", [], []).SerializeToString(),
    b"\x08\x07" * 3,
], ids=["empty", "tensor-proto", "graph-proto", "varint-only"])
def test_files_that_are_not_models_are_importer_errors(tmp_path, data):
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    for source in (data, str(path)):
        with pytest.raises(ImporterError) as info:
            from_onnx(source)
        assert isinstance(info.value, RelayError)


# --- readable output ----------------------------------------------------------------------------

def test_imported_graph_is_a_let_chain_in_node_order_printed_one_node_a_line():
    mod, params = from_onnx(residual_cnn())
    body = mod["main"].body
    names = []
    while isinstance(body, Let):
        names.append(body.var.name_hint)
        body = body.body
    assert names == ["c1", "r1", "c2", "s", "r2", "p", "f", "y"]
    text = pretty(mod)
    main = text[text.index("def @main"):]
    lines = [ln.strip() for ln in main.splitlines()[1:-1] if ln.strip()]
    assert [ln.split(" = ")[0] for ln in lines[:8]] == [f"let %{n}" for n in names]
    assert max(ln.count("nn.conv2d(") for ln in lines) == 1
    # The text parses back to the same program.
    x = np.random.default_rng(1).standard_normal((2, 4, 6, 6)).astype(np.float32)
    again = parse(text)
    np.testing.assert_allclose(np.asarray(evaluate(again, x, *params.values())),
                               np.asarray(evaluate(mod, x, *params.values())), rtol=1e-6)
