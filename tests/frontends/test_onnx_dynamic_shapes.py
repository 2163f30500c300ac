"""Dynamic shapes in the ONNX importer: a graph input's symbolic dim (``dim_param``) flows
through ``Shape``, ``Gather`` on shapes, shape arithmetic, ``Reshape`` (0 and -1, run-time
shape tensors), ``Flatten``, ``Expand``, ``ConstantOfShape``, ``Range`` and ``Slice``; one
import runs for every batch on the oracle (against onnxruntime), and a dynamic-batch CNN
exported from PyTorch runs for batches 1, 3 and 8 on the oracle and the TVM VM."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontends.onnx import from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.shapes import shape_var  # noqa: E402
from typechecker import type_of  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def run_ort(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_matches_ort(m, feeds, mod=None, params=None):
    if mod is None:
        mod, params = from_onnx(m)
    got = evaluate(mod, *feeds.values(), *params.values())
    got = list(got) if isinstance(got, tuple) else [got]
    want = run_ort(m, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


# --- shape arithmetic → static reshape codes ---------------------------------------------------

def view_batch_minus_one():
    """``x.view(x.size(0), -1)`` as the TorchScript exporter writes it."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
             helper.make_node("Concat", ["b1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    inits = [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1])]
    return model(nodes, [vi("x", F, ["batch", 2, 3])], [vi("y", F, ["batch", 6])], inits)


@given(batch=st.integers(1, 6))
@settings(max_examples=6, deadline=None)
def test_shape_gather_concat_reshape_imports_once_for_every_batch(batch):
    m = view_batch_minus_one()
    mod, params = from_onnx(m)
    ret = type_of(mod["main"]).ret_type
    assert tuple(ret.shape) == (shape_var("batch"), 6)      # static codes, symbolic type
    x = np.arange(batch * 6, dtype=np.float32).reshape(batch, 2, 3)
    assert_matches_ort(m, {"x": x}, mod, params)


def shape_arith_model():
    """A reshape to ``[Shape(x)[0] * 2, Shape(x)[1] / 2]``, a ``Flatten`` of a symbolic
    tensor, and ``Reshape`` with ``0`` (copy) and ``-1``."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["s2"]),
             helper.make_node("Div", ["s2", "halve"], ["target"]),
             helper.make_node("Reshape", ["x", "target"], ["a"]),
             helper.make_node("Flatten", ["y"], ["b"], axis=1),
             helper.make_node("Reshape", ["y", "copy_infer"], ["c"])]
    inits = [ints("scale", [2, 1]), ints("halve", [1, 2]), ints("copy_infer", [0, -1])]
    return model(nodes, [vi("x", F, ["n", 4]), vi("y", F, ["n", 2, 3])],
                 [vi("a", F, None), vi("b", F, None), vi("c", F, None)], inits)


@given(n=st.integers(1, 5))
@settings(max_examples=5, deadline=None)
def test_shape_arithmetic_flatten_and_reshape_codes(n):
    rng = np.random.default_rng(n)
    feeds = {"x": rng.standard_normal((n, 4)).astype(np.float32),
             "y": rng.standard_normal((n, 2, 3)).astype(np.float32)}
    assert_matches_ort(shape_arith_model(), feeds)


def fills_model():
    """``Expand`` of a row to ``Shape(x)``, ``ConstantOfShape(Shape(x))``, a ``Range`` up to
    ``Shape(x)[0]`` and a ``Slice`` ending at ``Shape(x)[1] - 1``."""
    value = numpy_helper.from_array(np.asarray([2.5], np.float32), "value")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Expand", ["row", "s"], ["e"]),
             helper.make_node("ConstantOfShape", ["s"], ["c"], value=value),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Slice", ["s", "one1", "two1"], ["w"]),
             helper.make_node("Sub", ["w", "one1"], ["w1"]),
             helper.make_node("Slice", ["x", "zero1", "w1", "one1"], ["sl"])]
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.float32), "row"),
             ints("zero", 0), ints("one", 1), ints("zero1", [0]), ints("one1", [1]),
             ints("two1", [2])]
    return model(nodes, [vi("x", F, ["n", 4])],
                 [vi("e", F, None), vi("c", F, None), vi("r", I64, None),
                  vi("sl", F, None)], inits)


@given(n=st.integers(1, 5))
@settings(max_examples=5, deadline=None)
def test_expand_constant_of_shape_range_and_slice_to_symbolic_shapes(n):
    x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    assert_matches_ort(fills_model(), {"x": x})


def test_symbolic_results_keep_their_symbolic_types():
    mod, _ = from_onnx(fills_model(), freeze_params=True)
    e, c, r, sl = type_of(mod["main"]).ret_type.fields
    n = shape_var("n")
    assert tuple(e.shape) == (n, 4) and tuple(c.shape) == (n, 4)
    assert len(r.shape) == 1 and tuple(sl.shape) == (n, 3)


def runtime_slice_model():
    """``Slice`` with bounds read from data (graph inputs) and a negative step."""
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])]
    return model(nodes, [vi("x", F, ["n", 5]), vi("starts", I64, [1]), vi("ends", I64, [1]),
                         vi("axes", I64, [1]), vi("steps", I64, [1])], [vi("y", F, None)])


@given(n=st.integers(1, 4), start=st.integers(-8, 8), end=st.integers(-8, 8),
       axis=st.integers(0, 1), step=st.sampled_from([-2, -1, 1, 3]))
@settings(max_examples=40, deadline=None)
def test_slice_with_run_time_bounds_clamps_as_onnx(n, start, end, axis, step):
    m = runtime_slice_model()
    x = np.arange(n * 5, dtype=np.float32).reshape(n, 5)
    feeds = {"x": x, "starts": np.asarray([start], np.int64), "ends": np.asarray([end], np.int64)}
    mod, params = from_onnx(m, const_inputs={"axes": np.asarray([axis], np.int64),
                                             "steps": np.asarray([step], np.int64)})
    got = evaluate(mod, *feeds.values(), *params.values())
    want = run_ort(m, {**feeds, "axes": np.asarray([axis], np.int64),
                       "steps": np.asarray([step], np.int64)})[0]
    np.testing.assert_array_equal(np.asarray(got), want)


@given(n=st.integers(1, 4), start=st.integers(-6, 6), end=st.integers(-6, 6))
@settings(max_examples=30, deadline=None)
def test_static_slice_of_a_symbolic_axis_clamps_as_onnx(n, start, end):
    m = model([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])],
              [vi("x", F, ["n", 3])], [vi("y", F, None)],
              [ints("s", [start]), ints("e", [end]), ints("a", [0])])
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    assert_matches_ort(m, {"x": x})


@given(n=st.integers(1, 5), idx=st.integers(-5, 4))
@settings(max_examples=20, deadline=None)
def test_gather_on_a_symbolic_axis_takes_negative_indices_from_the_end(n, idx):
    if not -n <= idx < n:
        idx = idx % n
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
              [vi("x", F, ["n", 2]), vi("i", I64, [])], [vi("y", F, None)])
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    assert_matches_ort(m, {"x": x, "i": np.asarray(idx, np.int64)})


# --- a dynamic-batch CNN exported from PyTorch ---------------------------------------------------

def _cnn_onnx(view: bool, dynamo: bool = False):
    torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.pool = torch.nn.MaxPool2d(2)
            self.fc = torch.nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            h = self.pool(torch.relu(self.conv(x)))
            h = h.view(h.size(0), -1) if view else torch.flatten(h, 1)
            return self.fc(h)

    torch.manual_seed(0)
    net = CNN().eval()
    if dynamo:      # the torch.export-based exporter: the batch a torch.export.Dim
        pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
        batch = torch.export.Dim("batch", min=1, max=64)
        prog = torch.onnx.export(net, (torch.randn(2, 3, 8, 8),),
                                 dynamic_shapes={"x": {0: batch}}, dynamo=True)
        return torch, net, prog.model_proto.SerializeToString()
    buf = io.BytesIO()
    torch.onnx.export(net, (torch.randn(2, 3, 8, 8),), buf, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13, dynamo=False)
    return torch, net, buf.getvalue()


@pytest.mark.parametrize("view,dynamo", [(False, False), (True, False), (True, True)],
                         ids=["flatten", "view", "view-dynamo-exporter"])
def test_dynamic_batch_cnn_imports_once_and_runs_every_batch_on_the_oracle(view, dynamo):
    torch, net, data = _cnn_onnx(view, dynamo)
    mod, params = from_onnx(data)
    assert tuple(mod["main"].params[0].type_annotation.shape) == (shape_var("batch"), 3, 8, 8)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for batch in (1, 3, 8):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
        got = np.asarray(evaluate(mod, x, *params.values()))
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got, sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_dynamic_batch_cnn_runs_every_batch_on_the_tvm_vm():
    pytest.importorskip("tvm", reason="the TVM backend needs the `tvm` extra")
    from backends.tvm import build

    torch, net, data = _cnn_onnx(view=True)
    mod, params = from_onnx(data)
    exe = build(mod, params=params, executor="vm")
    assert not exe.fallbacks
    for batch in (1, 3, 8, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.asarray(exe(x)), want, rtol=1e-4, atol=1e-5)


# --- data-dependent results: TopK, NonZero ------------------------------------------------------

@given(n=st.integers(1, 3), extent=st.integers(1, 6), data=st.data())
@settings(max_examples=30, deadline=None)
def test_topk_matches_onnxruntime_ties_and_infinities_included(n, extent, data):
    k = data.draw(st.integers(0, extent), label="k")
    axis = data.draw(st.sampled_from([1, -1, 2]), label="axis")
    largest = data.draw(st.integers(0, 1), label="largest")
    pool = st.sampled_from([0.0, 1.0, -1.0, 2.5, np.inf, -np.inf])
    x = np.asarray(data.draw(st.lists(pool, min_size=n * extent * 2, max_size=n * extent * 2)),
                   np.float32).reshape(n, extent, 2) if axis == 1 else \
        np.asarray(data.draw(st.lists(pool, min_size=n * 2 * extent,
                                      max_size=n * 2 * extent)), np.float32).reshape(n, 2, extent)
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
              [vi("x", F, ["n", *x.shape[1:]])], [vi("v", F, None), vi("i", I64, None)],
              [ints("k", [k])])
    assert_matches_ort(m, {"x": x})


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 99),
       density=st.sampled_from([0.0, 0.3, 1.0]))
@settings(max_examples=30, deadline=None)
def test_nonzero_has_a_data_dependent_length_and_matches_onnxruntime(shape, seed, density):
    x = (np.random.default_rng(seed).random(shape) < density).astype(np.float32)
    m = model([helper.make_node("NonZero", ["x"], ["y"])], [vi("x", F, shape)],
              [vi("y", I64, None)])
    mod, params = from_onnx(m)
    ret = type_of(mod["main"]).ret_type
    assert len(ret.shape) == 2 and ret.shape[0] == len(shape)
    assert_matches_ort(m, {"x": x}, mod, params)


def test_symbolic_fills_topk_and_nonzero_run_on_the_tvm_vm():
    pytest.importorskip("tvm", reason="the TVM backend needs the `tvm` extra")
    from backends.tvm import build

    m = fills_model()
    mod, params = from_onnx(m, freeze_params=True)
    exe = build(mod, params=params, executor="vm")
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        for got, want in zip(exe(x), run_ort(m, {"x": x})):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    m = model([helper.make_node("NonZero", ["x"], ["nz"]),
               helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
              [vi("x", F, [3, 4])], [vi("nz", I64, None), vi("v", F, None), vi("i", I64, None)],
              [ints("k", [2])])
    mod, params = from_onnx(m, freeze_params=True)
    exe = build(mod, params=params, executor="vm")
    for seed in (0, 1):
        x = np.random.default_rng(seed).integers(0, 3, (3, 4)).astype(np.float32)
        for got, want in zip(exe(x), run_ort(m, {"x": x})):
            np.testing.assert_array_equal(np.asarray(got), want)


# --- a GPT-style block with a symbolic batch and sequence length --------------------------------

def _block_onnx(dynamo: bool):
    torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")

    class Block(torch.nn.Module):
        def __init__(self, d=16, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.ff = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                          torch.nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
            x = x + self.out(y)
            return x + self.ff(self.ln2(x))

    torch.manual_seed(0)
    net = Block().eval()
    example = (torch.randn(2, 5, 16),)
    if dynamo:
        pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
        dims = {0: torch.export.Dim("batch", min=1, max=64),
                1: torch.export.Dim("seq", min=2, max=64)}
        prog = torch.onnx.export(net, example, dynamic_shapes={"x": dims}, dynamo=True)
        return torch, net, prog.model_proto.SerializeToString()
    buf = io.BytesIO()
    torch.onnx.export(net, example, buf, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
                      opset_version=17, dynamo=False)
    return torch, net, buf.getvalue()


SHAPES = [(1, 2), (3, 5), (8, 7)]


@pytest.mark.parametrize("dynamo", [
    False, pytest.param(True, marks=pytest.mark.slow)],   # the dynamo export alone takes ~15 s
    ids=["torchscript-exporter", "dynamo-exporter"])
def test_transformer_block_with_symbolic_batch_and_sequence_on_the_oracle(dynamo):
    torch, net, data = _block_onnx(dynamo)
    mod, params = from_onnx(data)
    assert tuple(type_of(mod["main"]).ret_type.shape) == (shape_var("batch"), shape_var("seq"), 16)
    for b, t in SHAPES:
        x = np.random.default_rng(b).standard_normal((b, t, 16)).astype(np.float32)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.asarray(evaluate(mod, x, *params.values())), want,
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_transformer_block_with_symbolic_batch_and_sequence_on_the_tvm_vm():
    pytest.importorskip("tvm", reason="the TVM backend needs the `tvm` extra")
    from backends.tvm import build

    torch, net, data = _block_onnx(dynamo=False)
    mod, params = from_onnx(data)
    exe = build(mod, params=params, executor="vm")
    for b, t in SHAPES + SHAPES[:1]:
        x = np.random.default_rng(b).standard_normal((b, t, 16)).astype(np.float32)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.asarray(exe(x)), want, rtol=1e-4, atol=1e-5)


@given(n=st.integers(1, 5))
@settings(max_examples=4, deadline=None)
def test_size_of_a_symbolic_tensor_is_computed_at_run_time(n):
    m = model([helper.make_node("Size", ["x"], ["s"]),
               helper.make_node("Cast", ["s"], ["f"], to=F),
               helper.make_node("Mul", ["x", "f"], ["y"])],
              [vi("x", F, ["n", 3])], [vi("y", F, None)])
    assert_matches_ort(m, {"x": np.ones((n, 3), np.float32)})
