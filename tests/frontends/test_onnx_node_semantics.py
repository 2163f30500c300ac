"""The ONNX node semantics the importer expresses in existing Relay operators, checked by
Hypothesis against the ONNX package's reference implementation (``onnx.reference``) on
random shapes and attributes: 3-D pooling as two 2-D poolings, MaxPool's ``Indices`` output,
``Mod`` with ``fmod=0`` on floats (numpy's ``%``, special values included), ``Pad`` mode
``wrap``, training-mode ``BatchNormalization``, recurrent layers with ``layout=1`` and LSTM
peepholes, float16 products accumulated in float32, and a ``Slice`` by a loop counter inside
a ``Loop`` (a run-time start with a static length; out of range is a run-time error); and
the operators built from existing ones (``LpPool``, ``RMSNormalization``,
``GroupNormalization``, ``Swish``, ``CenterCropPad``, ``SpaceToDepth`` modes,
``GatherElements`` and the NLL / softmax cross-entropy losses, ``BitShift``,
``CumSum``/``CumProd``, ``ReverseSequence``, ``Compress``). Where
the reference is wrong (MaxPool indices on its stride-1 path, a Loop without a condition
input) onnxruntime is the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from frontends.onnx import ImporterError, from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.errors import RelayRuntimeError  # noqa: E402
from semantics.expr import Call  # noqa: E402
from semantics.visitor import post_order  # noqa: E402
from typechecker import check  # noqa: E402

F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def both(m, feeds):
    """(Relay oracle results, ONNX reference results) as lists of arrays."""
    mod, params = from_onnx(m)
    check(mod)
    got = evaluate(mod, *feeds.values(), *params.values())
    got = [np.asarray(g) for g in got] if isinstance(got, tuple) else [np.asarray(got)]
    want = ReferenceEvaluator(m).run(None, feeds)
    return got, [np.asarray(w) for w in want]


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# --- pooling ------------------------------------------------------------------------------

@st.composite
def pool3d_cases(draw):
    kind = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    kernel = [draw(st.integers(1, 3)) for _ in range(3)]
    strides = [draw(st.integers(1, 2)) for _ in range(3)]
    dil = [draw(st.integers(1, 2)) for _ in range(3)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel] * 2
    pads[3:] = [draw(st.integers(0, k - 1)) for k in kernel]
    ceil = draw(st.integers(0, 1))
    spatial = [draw(st.integers((k - 1) * d + 1, (k - 1) * d + 4))
               for k, d in zip(kernel, dil)]
    attrs = dict(kernel_shape=kernel, strides=strides, pads=pads, ceil_mode=ceil)
    if kind == "AveragePool":
        attrs["count_include_pad"] = draw(st.integers(0, 1))
        if draw(st.booleans()):
            dil = [1, 1, 1]
    attrs["dilations"] = dil
    return kind, [draw(st.integers(1, 2)), draw(st.integers(1, 2))] + spatial, attrs, \
        draw(st.integers(0, 2 ** 16))


@given(pool3d_cases())
@settings(max_examples=40, deadline=None)
def test_3d_pooling_matches_the_onnx_reference(case):
    kind, shape, attrs, seed = case
    m = model([helper.make_node(kind, ["x"], ["y"], **attrs)], [vi("x", F, shape)],
              [vi("y", F, None)], opset=19)
    x = rand(np.random.default_rng(seed), shape)
    try:
        want = ReferenceEvaluator(m).run(None, {"x": x})
    except Exception:   # noqa: BLE001 - an attribute combination the reference rejects
        assume(False)
    got, _ = both(m, {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


@given(kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pad=st.integers(0, 1), storage_order=st.integers(0, 1), ties=st.booleans(),
       hw=st.tuples(st.integers(3, 6), st.integers(3, 6)), seed=st.integers(0, 2 ** 16))
@settings(max_examples=40, deadline=None)
def test_max_pool_indices_match_the_onnx_reference(kernel, strides, pad, storage_order, ties,
                                                   hw, seed):
    assume(pad < min(kernel))
    shape = [2, 3, *hw]
    rng = np.random.default_rng(seed)
    # With ties the first maximum in window order wins, as in the reference's loop.
    x = (rng.integers(0, 3, shape) if ties else rng.standard_normal(shape)).astype(np.float32)
    m = model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=list(kernel),
                                strides=list(strides), pads=[pad] * 4,
                                storage_order=storage_order)],
              [vi("x", F, shape)], [vi("y", F, None), vi("i", TensorProto.INT64, None)])
    got, want = both(m, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].dtype == np.int64
    # The spec: indices into the whole flattened input, in [0, N*C*H*W). onnxruntime does
    # so; the reference does too except on its stride-1 path (plane-relative indices there).
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got[1], sess.run(None, {"x": x})[1])
    if strides != (1, 1):
        np.testing.assert_array_equal(got[1], want[1])


# --- element-wise and padding ------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 7.0, 1e-3]


@given(a=st.lists(st.sampled_from(SPECIAL) | st.floats(-50, 50, width=32), min_size=1,
                  max_size=12),
       b=st.lists(st.sampled_from(SPECIAL) | st.floats(-50, 50, width=32), min_size=1,
                  max_size=12),
       dtype=st.sampled_from([np.float16, np.float32, np.float64]))
@settings(max_examples=60, deadline=None)
def test_float_mod_fmod_0_is_numpys_remainder_with_its_signs(a, b, dtype):
    n = min(len(a), len(b))
    x, y = np.asarray(a[:n], dtype), np.asarray(b[:n], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([helper.make_node("Mod", ["x", "y"], ["z"], fmod=0)],
              [vi("x", elem, [n]), vi("y", elem, [n])], [vi("z", elem, [n])])
    mod, _ = from_onnx(m)
    got = np.asarray(evaluate(mod, x, y))
    with np.errstate(all="ignore"):
        want = np.mod(x, y)
    np.testing.assert_array_equal(got, want)                    # NaNs in the same places
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]),
                                  np.signbit(want[~np.isnan(want)]))


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
@settings(max_examples=40, deadline=None)
def test_wrap_padding_matches_numpy_and_the_reference(shape, data):
    r = len(shape)
    pads = [data.draw(st.integers(0, 6)) for _ in range(2 * r)]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")],
              [vi("x", F, shape)], [vi("y", F, None)],
              [numpy_helper.from_array(np.asarray(pads, np.int64), "pads")], opset=19)
    got, want = both(m, {"x": x})
    np.testing.assert_array_equal(got[0], np.pad(x, list(zip(pads[:r], pads[r:])), "wrap"))
    np.testing.assert_array_equal(got[0], want[0])


# --- normalization and recurrent layers --------------------------------------------------

@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       momentum=st.floats(0.0, 1.0), eps=st.sampled_from([1e-5, 1e-2]),
       seed=st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_training_batch_norm_returns_the_running_statistics(shape, momentum, eps, seed):
    rng = np.random.default_rng(seed)
    c = shape[1]
    feeds = {"x": rand(rng, shape), "s": rand(rng, [c]), "b": rand(rng, [c]),
             "mean": rand(rng, [c]), "var": np.abs(rand(rng, [c]))}
    m = model([helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"],
                                ["y", "rm", "rv"], training_mode=1, momentum=momentum,
                                epsilon=eps)],
              [vi(k, F, list(v.shape)) for k, v in feeds.items()],
              [vi("y", F, None), vi("rm", F, None), vi("rv", F, None)], opset=15)
    got, want = both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@given(kind=st.sampled_from(["RNN", "GRU", "LSTM"]),
       direction=st.sampled_from(["forward", "reverse", "bidirectional"]),
       layout=st.integers(0, 1), peepholes=st.booleans(), seq=st.integers(1, 3),
       batch=st.integers(1, 2), seed=st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_recurrent_layouts_and_peepholes_match_the_reference(kind, direction, layout, peepholes,
                                                             seq, batch, seed):
    rng = np.random.default_rng(seed)
    hidden, size = 3, 2
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    xs = [batch, seq, size] if layout else [seq, batch, size]
    hs = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    feeds = {"X": rand(rng, xs), "W": rand(rng, [dirs, gates * hidden, size]),
             "R": rand(rng, [dirs, gates * hidden, hidden]),
             "B": rand(rng, [dirs, 2 * gates * hidden]), "h0": rand(rng, hs)}
    names = ["X", "W", "R", "B", "", "h0"]
    outs = ["Y", "Y_h"]
    if kind == "LSTM":
        feeds["c0"] = rand(rng, hs)
        names.append("c0")
        outs.append("Y_c")
        if peepholes:
            feeds["P"] = rand(rng, [dirs, 3 * hidden])
            names.append("P")
    m = model([helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction,
                                layout=layout)],
              [vi(k, F, list(v.shape)) for k, v in feeds.items()],
              [vi(o, F, None) for o in outs], opset=14)
    got, want = both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_float16_convolution_accumulates_in_float32():
    rng = np.random.default_rng(0)
    x = rng.random((1, 8, 6, 6)).astype(np.float16)
    w = rng.random((4, 8, 3, 3)).astype(np.float16)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"])],
              [vi("x", F16, list(x.shape)), vi("w", F16, list(w.shape))], [vi("y", F16, None)])
    mod, _ = from_onnx(m)
    convs = [n for n in post_order(mod["main"].body) if isinstance(n, Call)
             and getattr(n.op, "name", "") == "nn.conv2d"]
    assert [c.attrs["out_dtype"] for c in convs] == ["float32"]
    got = np.asarray(evaluate(mod, x, w))
    assert got.dtype == np.float16
    exact = ReferenceEvaluator(model([helper.make_node("Conv", ["x", "w"], ["y"])],
                                     [vi("x", F, list(x.shape)), vi("w", F, list(w.shape))],
                                     [vi("y", F, None)])).run(
        None, {"x": x.astype(np.float32), "w": w.astype(np.float32)})[0]
    # One rounding of the float32 sum: within half a float16 ulp of it.
    np.testing.assert_allclose(got.astype(np.float32), exact, rtol=2 ** -11)


# --- Slice by a loop counter ---------------------------------------------------------------

def counter_slice_loop(table: np.ndarray, width: int) -> object:
    """``for i in range(n): y += sum(table[i : i + width])`` as an ONNX Loop."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["table"], value=numpy_helper.from_array(table)),
         helper.make_node("Constant", [], ["w"],
                          value=numpy_helper.from_array(np.int64(width))),
         helper.make_node("Add", ["i", "w"], ["end"]),
         helper.make_node("Unsqueeze", ["i", "zero"], ["start1"]),
         helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
         helper.make_node("Slice", ["table", "start1", "end1"], ["part"]),
         helper.make_node("ReduceSum", ["part"], ["s"], keepdims=0),
         helper.make_node("Add", ["y_in", "s"], ["y_out"])],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("y_in", F, [])],
        [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F, [])],
        [numpy_helper.from_array(np.asarray([0], np.int64), "zero")])
    return model([helper.make_node("Loop", ["n", "", "y0"], ["y"], body=body)],
                 [vi("n", TensorProto.INT64, []), vi("y0", F, [])], [vi("y", F, [])])


@given(size=st.integers(1, 8), width=st.integers(0, 3), n=st.integers(0, 8),
       seed=st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_slice_by_a_loop_counter_is_exact_in_range_and_traps_outside(size, width, n, seed):
    table = np.random.default_rng(seed).standard_normal(size).astype(np.float32)
    m = counter_slice_loop(table, width)
    if width > size:      # never in range: refused at import time
        with pytest.raises(ImporterError, match="run-time Slice of length"):
            from_onnx(m)
        return
    mod, _ = from_onnx(m)
    check(mod)
    feeds = {"n": np.asarray(n, np.int64), "y0": np.asarray(0.5, np.float32)}
    if width == 0 or n == 0 or n - 1 + width <= size:
        got = evaluate(mod, *feeds.values())
        # onnxruntime here: the reference evaluator runs no iteration when the Loop's
        # condition input is omitted.
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)[0]
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    else:
        # ONNX would clamp to a shorter slice, whose shape Relay cannot type statically.
        with pytest.raises(RelayRuntimeError, match="take"):
            evaluate(mod, *feeds.values())


# --- operators expressed in existing ones: LpPool, RMS/group normalization, Swish, crops ----

@given(rank=st.integers(1, 3), p=st.integers(1, 4), data=st.data())
@settings(max_examples=30, deadline=None)
def test_lp_pool_matches_the_onnx_reference(rank, p, data):
    kernel = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [data.draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [data.draw(st.integers(0, k - 1)) for k in kernel * 2]
    spatial = [data.draw(st.integers(k, k + 3)) for k in kernel]
    shape = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3))] + spatial
    attrs = dict(kernel_shape=kernel, strides=strides, p=p)
    if data.draw(st.booleans()):
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = data.draw(st.sampled_from(["VALID", "SAME_UPPER", "SAME_LOWER"]))
    m = model([helper.make_node("LpPool", ["x"], ["y"], **attrs)], [vi("x", F, shape)],
              [vi("y", F, None)], opset=22)
    x = rand(np.random.default_rng(data.draw(st.integers(0, 2 ** 16))), shape)
    got, want = both(m, {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
@settings(max_examples=30, deadline=None)
def test_rms_normalization_matches_the_onnx_reference(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = rand(rng, shape)
    w = rand(rng, shape[axis % len(shape):])
    m = model([helper.make_node("RMSNormalization", ["x", "w"], ["y"], axis=axis,
                                epsilon=data.draw(st.sampled_from([1e-5, 0.1])))],
              [vi("x", F, shape), vi("w", F, list(w.shape))], [vi("y", F, None)], opset=23)
    got, want = both(m, {"x": x, "w": w})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


@given(groups=st.integers(1, 3), per=st.integers(1, 2),
       spatial=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 2 ** 16))
@settings(max_examples=20, deadline=None)
def test_group_normalization_normalizes_each_group(groups, per, spatial, seed):
    rng = np.random.default_rng(seed)
    c = groups * per
    shape = [2, c] + spatial
    x, scale, bias = rand(rng, shape), rand(rng, [c]), rand(rng, [c])
    m = model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                num_groups=groups, epsilon=1e-5)],
              [vi("x", F, shape), vi("s", F, [c]), vi("b", F, [c])], [vi("y", F, None)],
              opset=21)
    mod, _ = from_onnx(m)
    got = np.asarray(evaluate(mod, x, scale, bias))
    g = x.astype(np.float64).reshape(2, groups, -1)
    norm = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    extra = (1,) * len(spatial)
    want = norm.reshape(shape) * scale.reshape((c,) + extra) + bias.reshape((c,) + extra)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
@settings(max_examples=30, deadline=None)
def test_center_crop_pad_matches_the_onnx_reference(shape, data):
    axes = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    sizes = [data.draw(st.integers(1, 7)) for _ in axes]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
    m = model([helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=axes)],
              [vi("x", F, shape)], [vi("y", F, None)],
              [numpy_helper.from_array(np.asarray(sizes, np.int64), "shape")], opset=18)
    got, want = both(m, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_invert_depth_to_space(mode):
    x = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6)
    m = model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode),
               helper.make_node("DepthToSpace", ["y"], ["z"], blocksize=2, mode=mode)],
              [vi("x", F, [2, 3, 4, 6])], [vi("y", F, None), vi("z", F, None)], opset=28)
    mod, _ = from_onnx(m)
    y, z = evaluate(mod, x)
    np.testing.assert_array_equal(np.asarray(z), x)
    want = ReferenceEvaluator(model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2,
                                                      mode=mode)],
                                    [vi("x", F, [2, 3, 4, 6])], [vi("y", F, None)],
                                    opset=28)).run(None, {"x": x})[0]
    np.testing.assert_array_equal(np.asarray(y), want)


@given(alpha=st.floats(-2, 2, width=32),
       x=st.lists(st.floats(-20, 20, width=32), min_size=1, max_size=8))
@settings(max_examples=30, deadline=None)
def test_swish_is_x_times_sigmoid_alpha_x(alpha, x):
    arr = np.asarray(x, np.float32)
    m = model([helper.make_node("Swish", ["x"], ["y"], alpha=alpha)], [vi("x", F, [len(x)])],
              [vi("y", F, None)], opset=24)
    mod, _ = from_onnx(m)
    a = np.float64(np.float32(alpha))
    want = arr / (1 + np.exp(-a * arr.astype(np.float64)))
    np.testing.assert_allclose(np.asarray(evaluate(mod, arr)), want, rtol=1e-5, atol=1e-6)


# --- GatherElements and the losses ---------------------------------------------------------

@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
@settings(max_examples=40, deadline=None)
def test_gather_elements_matches_the_reference_and_traps_out_of_range(shape, data):
    r = len(shape)
    axis = data.draw(st.integers(-r, r - 1))
    n = shape[axis % r]
    ishape = [data.draw(st.integers(1, d)) if k != axis % r else data.draw(st.integers(1, 4))
              for k, d in enumerate(shape)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    bad = data.draw(st.booleans())
    idx = rng.integers(-n, n, ishape).astype(np.int64)
    if bad:
        idx.reshape(-1)[0] = data.draw(st.sampled_from([n, -n - 1]))
    x = rand(rng, shape)
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
              [vi("x", F, shape), vi("i", TensorProto.INT64, ishape)], [vi("y", F, None)])
    mod, _ = from_onnx(m)
    if bad:
        with pytest.raises(RelayRuntimeError, match="take"):
            evaluate(mod, x, idx)
        return
    # No broadcasting: the other dims of the indices index the data's leading rows.
    rows = x[tuple(slice(None) if k == axis % r else slice(0, d) for k, d in enumerate(ishape))]
    want = np.take_along_axis(rows, np.where(idx < 0, idx + n, idx), axis=axis)
    np.testing.assert_array_equal(np.asarray(evaluate(mod, x, idx)), want)


@given(kind=st.sampled_from(["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]),
       reduction=st.sampled_from(["none", "sum", "mean"]), weighted=st.booleans(),
       ignore=st.sampled_from([None, 0, 2, -1]),
       extra=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 2 ** 16))
@settings(max_examples=40, deadline=None)
def test_losses_match_the_onnx_reference(kind, reduction, weighted, ignore, extra, seed):
    rng = np.random.default_rng(seed)
    n, c = 3, 4
    x = rand(rng, [n, c, *extra])
    t = rng.integers(0, c, [n, *extra]).astype(np.int64)
    if ignore is not None:
        t.reshape(-1)[0] = ignore       # at least one ignored target
        t.reshape(-1)[-1] = 1           # and one that is not
    feeds = {"x": x, "t": t}
    names = ["x", "t"]
    if weighted:
        feeds["w"] = np.abs(rand(rng, [c])) + 0.1
        names.append("w")
    attrs: dict = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    assume(ignore != -1 or weighted)    # the reference's quirk, see below
    m = model([helper.make_node(kind, names, ["loss"], **attrs)],
              [vi(k, F if v.dtype == np.float32 else TensorProto.INT64, list(v.shape))
               for k, v in feeds.items()], [vi("loss", F, None)], opset=13)
    got, want = both(m, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_unweighted_mean_loss_divides_by_the_targets_not_ignored():
    """The spec's mean is over the targets not ignored. (The ONNX reference divides by all
    targets when ``ignore_index=-1`` and there are no weights — an exception in its code
    for -1 only; we follow the spec.)"""
    x = np.log(np.full((2, 3), 1 / 3, np.float32))
    t = np.asarray([-1, 2], np.int64)
    m = model([helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"],
                                ignore_index=-1)],
              [vi("x", F, [2, 3]), vi("t", TensorProto.INT64, [2])], [vi("loss", F, None)],
              opset=13)
    mod, _ = from_onnx(m)
    np.testing.assert_allclose(np.asarray(evaluate(mod, x, t)), np.log(3), rtol=1e-6)


@given(dtype=st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                              "uint64"]),
       direction=st.sampled_from(["LEFT", "RIGHT"]), n=st.integers(1, 12),
       seed=st.integers(0, 2 ** 16))
@settings(max_examples=40, deadline=None)
def test_bit_shift_matches_the_onnx_reference(dtype, direction, n, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    bits = info.bits
    lo = -3 if info.min < 0 else 0
    s = rng.integers(lo, bits + 3, n).astype(dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction)],
              [vi("x", elem, [n]), vi("s", elem, [n])], [vi("y", elem, None)])
    got, want = both(m, {"x": x, "s": s})
    assert got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])


@given(kind=st.sampled_from(["CumSum", "CumProd"]), dtype=st.sampled_from(["int32", "float64"]),
       shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), exclusive=st.integers(0, 1),
       reverse=st.integers(0, 1), data=st.data())
@settings(max_examples=40, deadline=None)
def test_cumulative_sum_and_product_match_the_reference(kind, dtype, shape, exclusive, reverse,
                                                        data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = (rng.integers(-50, 50, shape) if dtype == "int32" else
         rng.uniform(-2, 2, shape)).astype(dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([helper.make_node(kind, ["x", "axis"], ["y"], exclusive=exclusive,
                                reverse=reverse)],
              [vi("x", elem, shape)], [vi("y", elem, None)],
              [numpy_helper.from_array(np.asarray(axis, np.int64), "axis")], opset=26)
    got, want = both(m, {"x": x})
    if dtype == "int32":                     # wrapping arithmetic: exact in any order
        np.testing.assert_array_equal(got[0], want[0])
    else:
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)


@given(batch=st.integers(1, 4), steps=st.integers(1, 5), time_first=st.booleans(),
       data=st.data())
@settings(max_examples=30, deadline=None)
def test_reverse_sequence_matches_the_reference(batch, steps, time_first, data):
    lens = [data.draw(st.integers(1, steps)) for _ in range(batch)]
    shape = [steps, batch, 2] if time_first else [batch, steps, 2]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    m = model([helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                                batch_axis=1 if time_first else 0,
                                time_axis=0 if time_first else 1)],
              [vi("x", F, shape)], [vi("y", F, None)],
              [numpy_helper.from_array(np.asarray(lens, np.int64), "lens")])
    got, want = both(m, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), axis=st.none() | st.integers(
    -3, 2), data=st.data())
@settings(max_examples=30, deadline=None)
def test_compress_by_a_static_condition_matches_numpy(shape, axis, data):
    assume(axis is None or -len(shape) <= axis < len(shape))
    size = int(np.prod(shape)) if axis is None else shape[axis]
    cond = np.asarray(data.draw(st.lists(st.booleans(), min_size=1, max_size=size)))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    attrs = {} if axis is None else {"axis": axis}
    m = model([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)], [vi("x", F, shape)],
              [vi("y", F, None)], [numpy_helper.from_array(cond, "c")])
    mod, params = from_onnx(m)
    got = np.asarray(evaluate(mod, x, *params.values()))
    np.testing.assert_array_equal(got, np.compress(cond, x, axis=axis))
