"""``Resize``/``Upsample``, ``AffineGrid``, ``Col2Im``, ``GatherND``, ``ScatterND``,
``ScatterElements``/``Scatter``, the bitwise operators, ``DFT``, ``MelWeightMatrix`` and the
window functions, composed from registry operators: checked by Hypothesis against the ONNX
package's reference implementation (``onnx.reference``) or numpy on random shapes,
attributes and data, and type-checked."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from frontends.onnx import ImporterError, from_onnx  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.errors import RelayRuntimeError  # noqa: E402
from typechecker import check  # noqa: E402

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=19):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def both(m, feeds):
    mod, params = from_onnx(m)
    check(mod)
    got = np.asarray(evaluate(mod, *feeds.values(), *params.values()))
    want = np.asarray(ReferenceEvaluator(m).run(None, feeds)[0])
    return got, want


def elem_of(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# --- Resize --------------------------------------------------------------------------------

COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
          "asymmetric", "tf_crop_and_resize"]


@st.composite
def resize_cases(draw):
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 6)),
             draw(st.integers(1, 6))]
    attrs = {"mode": mode, "coordinate_transformation_mode": draw(st.sampled_from(COORDS))}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(
            ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    else:
        attrs["antialias"] = draw(st.integers(0, 1))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
        attrs["exclude_outside"] = draw(st.integers(0, 1))
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        attrs["extrapolation_value"] = draw(st.sampled_from([0.0, 7.5]))
    by_sizes = draw(st.booleans())
    if by_sizes:
        target = [draw(st.integers(1, 9)) for _ in range(2)]
        if draw(st.booleans()):
            attrs["keep_aspect_ratio_policy"] = draw(st.sampled_from(["not_larger",
                                                                      "not_smaller"]))
    else:
        target = [draw(st.sampled_from([0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0]))
                  for _ in range(2)]
    return shape, attrs, by_sizes, target, draw(st.integers(0, 2 ** 16))


@given(resize_cases())
@settings(max_examples=60, deadline=None)
def test_resize_matches_the_reference(case):
    shape, attrs, by_sizes, target, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    attrs = dict(attrs, axes=[2, 3])
    inits = [numpy_helper.from_array(np.array([0.1, 0.2, 0.9, 0.75], np.float32), "roi")]
    if by_sizes:
        inits.append(numpy_helper.from_array(np.array(target, np.int64), "sizes"))
        inputs = ["x", "roi", "", "sizes"]
    else:
        inits.append(numpy_helper.from_array(np.array(target, np.float32), "scales"))
        inputs = ["x", "roi", "scales"]
    m = model([helper.make_node("Resize", inputs, ["y"], **attrs)], [vi("x", F, shape)],
              [vi("y", F, None)], inits)
    got, want = both(m, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@given(st.sampled_from(["int32", "uint8"]), st.sampled_from(["nearest", "linear"]),
       st.integers(0, 2 ** 16))
@settings(max_examples=10, deadline=None)
def test_resize_of_integers_rounds_and_saturates_as_the_reference(dtype, mode, seed):
    x = np.random.default_rng(seed).integers(0, 250, (1, 1, 3, 4)).astype(dtype)
    scales = numpy_helper.from_array(np.array([1, 1, 1.7, 0.8], np.float32), "scales")
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)],
              [vi("x", elem_of(dtype), [1, 1, 3, 4])], [vi("y", elem_of(dtype), None)],
              [scales])
    got, want = both(m, {"x": x})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_upsample_and_resize10_use_asymmetric_floor_coordinates():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    want = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    scales = numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")
    up = model([helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")],
               [vi("x", F, [1, 1, 2, 3])], [vi("y", F, None)], [scales], opset=9)
    r10 = model([helper.make_node("Resize", ["x", "scales"], ["y"], mode="nearest")],
                [vi("x", F, [1, 1, 2, 3])], [vi("y", F, None)], [scales], opset=10)
    for m in (up, r10):
        mod, params = from_onnx(m)
        np.testing.assert_array_equal(evaluate(mod, x, *params.values()), want)


def test_resize_needs_static_scales():
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
              [vi("x", F, [1, 1, 2, 2]), vi("scales", F, [4])], [vi("y", F, None)])
    with pytest.raises(ImporterError, match=r"Resize node 0 .*known at import time"):
        from_onnx(m)


# --- GatherND and the scatters -------------------------------------------------------------

@given(st.integers(0, 1), st.integers(1, 2), st.integers(0, 2 ** 16), st.data())
@settings(max_examples=30, deadline=None)
def test_gather_nd_matches_the_reference(batch_dims, k, seed, data):
    rng = np.random.default_rng(seed)
    shape = [data.draw(st.integers(1, 4)) for _ in range(batch_dims + k + 1)]
    lead = [data.draw(st.integers(1, 3))]
    ishape = shape[:batch_dims] + lead + [k]
    dims = np.array(shape[batch_dims:batch_dims + k])
    idx = rng.integers(-dims, dims, size=ishape).astype(np.int64)
    x = rng.standard_normal(shape).astype(np.float32)
    m = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
              [vi("x", F, shape), vi("i", TensorProto.INT64, ishape)], [vi("y", F, None)])
    got, want = both(m, {"x": x, "i": idx})
    np.testing.assert_array_equal(got, want)


@given(st.sampled_from(["none", "add", "mul", "max", "min"]),
       st.sampled_from(["float32", "int32"]), st.integers(1, 2), st.integers(0, 2 ** 16),
       st.data())
@settings(max_examples=40, deadline=None)
def test_scatter_nd_matches_the_reference(reduction, dtype, k, seed, data):
    rng = np.random.default_rng(seed)
    shape = [data.draw(st.integers(1, 4)) for _ in range(k + 1)]
    n_pos = int(np.prod(shape[:k]))
    count = data.draw(st.integers(1, n_pos if reduction == "none" else 2 * n_pos))
    flat = (rng.permutation(n_pos)[:count] if reduction == "none"
            else rng.integers(0, n_pos, count))
    idx = np.stack(np.unravel_index(flat, shape[:k]), axis=-1).astype(np.int64)
    x = rng.integers(-5, 5, shape).astype(dtype)
    upd = rng.integers(-5, 5, [count] + shape[k:]).astype(dtype)
    e = elem_of(dtype)
    m = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
              [vi("x", e, shape), vi("i", TensorProto.INT64, list(idx.shape)),
               vi("u", e, list(upd.shape))], [vi("y", e, None)])
    got, want = both(m, {"x": x, "i": idx, "u": upd})
    np.testing.assert_array_equal(got, want)


@given(st.sampled_from(["none", "add", "mul", "max", "min"]), st.integers(0, 2 ** 16),
       st.data())
@settings(max_examples=40, deadline=None)
def test_scatter_elements_matches_the_reference(reduction, seed, data):
    rng = np.random.default_rng(seed)
    rank = data.draw(st.integers(1, 3))
    shape = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    axis = data.draw(st.integers(-rank, rank - 1))
    ishape = [data.draw(st.integers(1, d)) for d in shape]
    n = shape[axis]
    if reduction == "none":   # distinct targets along the axis, as ONNX requires
        ishape[axis] = min(ishape[axis], n)
        idx = np.moveaxis(np.stack([rng.permutation(n)[:ishape[axis]] for _ in range(
            int(np.prod(ishape)) // ishape[axis])]).reshape(
            [d for j, d in enumerate(ishape) if j != axis % rank] + [ishape[axis]]), -1, axis)
    else:
        idx = rng.integers(0, n, ishape)
    idx = np.where(rng.random(idx.shape) < 0.3, idx - n, idx).astype(np.int64)
    x = rng.standard_normal(shape).astype(np.float32)
    upd = rng.standard_normal(ishape).astype(np.float32)
    m = model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis,
                                reduction=reduction)],
              [vi("x", F, shape), vi("i", TensorProto.INT64, ishape), vi("u", F, ishape)],
              [vi("y", F, None)])
    got, want = both(m, {"x": x, "i": idx, "u": upd})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_index_out_of_range_is_a_runtime_error():
    m = model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)],
              [vi("x", F, [3]), vi("i", TensorProto.INT64, [1]), vi("u", F, [1])],
              [vi("y", F, None)])
    mod, _ = from_onnx(m)
    with pytest.raises(RelayRuntimeError):
        evaluate(mod, np.zeros(3, np.float32), np.array([3], np.int64),
                 np.ones(1, np.float32))


# --- bitwise -------------------------------------------------------------------------------

@given(st.sampled_from(["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]),
       st.sampled_from(["int8", "int32", "int64", "uint8", "uint16", "uint64"]),
       st.integers(0, 2 ** 16))
@settings(max_examples=30, deadline=None)
def test_bitwise_operators_match_the_reference(op, dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (3,), dtype=dtype, endpoint=True)
    e = elem_of(dtype)
    unary = op == "BitwiseNot"
    m = model([helper.make_node(op, ["a"] if unary else ["a", "b"], ["y"])],
              [vi("a", e, [2, 3])] + ([] if unary else [vi("b", e, [3])]), [vi("y", e, None)])
    got, want = both(m, {"a": a} if unary else {"a": a, "b": b})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# --- window functions ----------------------------------------------------------------------

@given(st.sampled_from(["HannWindow", "HammingWindow", "BlackmanWindow"]), st.integers(1, 40),
       st.integers(0, 1), st.sampled_from([TensorProto.FLOAT, TensorProto.DOUBLE]))
@settings(max_examples=30, deadline=None)
def test_window_functions_match_the_reference(op, size, periodic, out_type):
    n = numpy_helper.from_array(np.array(size, np.int64), "n")
    m = model([helper.make_node(op, ["n"], ["y"], periodic=periodic,
                                output_datatype=out_type)],
              [], [vi("y", out_type, None)], [n], opset=17)
    got, want = both(m, {})
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@given(st.integers(0, 1), st.integers(0, 1), st.integers(1, 2), st.integers(1, 7),
       st.integers(0, 3), st.integers(0, 2 ** 16))
@settings(max_examples=40, deadline=None)
def test_dft_matches_numpy(inverse, onesided, channels, n_in, extra, seed):
    rng = np.random.default_rng(seed)
    if inverse and onesided:
        channels = 2
    x = rng.standard_normal((2, n_in, 3, channels))
    n = max(1, n_in + extra - 1)       # shorter (truncated), equal or longer (zero-padded)
    length = numpy_helper.from_array(np.array(n, np.int64), "n")
    m = model([helper.make_node("DFT", ["x", "n"], ["y"], axis=1, inverse=inverse,
                                onesided=onesided)],
              [vi("x", TensorProto.DOUBLE, list(x.shape))], [vi("y", TensorProto.DOUBLE, None)],
              [length], opset=17)
    mod, _ = from_onnx(m)
    check(mod)
    got = np.asarray(evaluate(mod, x))
    z = x[..., 0] + 1j * x[..., 1] if channels == 2 else x[..., 0]
    if inverse and onesided:
        want = np.fft.irfft(z, n=n, axis=1)[..., None]
    else:
        f = np.fft.ifft(z, n=n, axis=1) if inverse else np.fft.fft(z, n=n, axis=1)
        f = f[:, :n // 2 + 1] if onesided else f
        want = np.stack([f.real, f.imag], axis=-1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@given(st.integers(2, 3), st.integers(0, 1), st.integers(0, 2 ** 16), st.data())
@settings(max_examples=20, deadline=None)
def test_affine_grid_matches_the_reference(k, align_corners, seed, data):
    spatial = [data.draw(st.integers(1, 4)) for _ in range(k)]
    theta = np.random.default_rng(seed).standard_normal((2, k, k + 1)).astype(np.float32)
    size = numpy_helper.from_array(np.array([2, 1] + spatial, np.int64), "size")
    m = model([helper.make_node("AffineGrid", ["theta", "size"], ["g"],
                                align_corners=align_corners)],
              [vi("theta", F, [2, k, k + 1])], [vi("g", F, None)], [size], opset=20)
    got, want = both(m, {"theta": theta})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@given(st.integers(1, 2), st.integers(0, 2 ** 16), st.data())
@settings(max_examples=20, deadline=None)
def test_col2im_matches_the_reference(k, seed, data):
    image = [data.draw(st.integers(2, 5)) for _ in range(k)]
    block = [data.draw(st.integers(1, 2)) for _ in range(k)]
    dil = [data.draw(st.integers(1, 2)) for _ in range(k)]
    strides = [data.draw(st.integers(1, 2)) for _ in range(k)]
    pads = [data.draw(st.integers(0, 1)) for _ in range(2 * k)]
    locs = [(image[d] + pads[d] + pads[k + d] - (dil[d] * (block[d] - 1) + 1)) // strides[d] + 1
            for d in range(k)]
    assume(min(locs) >= 1)
    x = np.random.default_rng(seed).standard_normal(
        (2, 3 * int(np.prod(block)), int(np.prod(locs)))).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(image, np.int64), "image"),
             numpy_helper.from_array(np.array(block, np.int64), "block")]
    m = model([helper.make_node("Col2Im", ["x", "image", "block"], ["y"], dilations=dil,
                                pads=pads, strides=strides)],
              [vi("x", F, list(x.shape))], [vi("y", F, None)], inits)
    got, want = both(m, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@given(st.integers(1, 10), st.sampled_from([8, 16, 32, 64]), st.sampled_from([8000, 16000]),
       st.floats(0, 500), st.floats(1000, 4000))
@settings(max_examples=20, deadline=None)
def test_mel_weight_matrix_matches_the_reference(bins, dft_length, rate, low, high):
    values = {"b": np.int64(bins), "d": np.int64(dft_length), "r": np.int64(rate),
              "lo": np.float32(low), "hi": np.float32(high)}
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in values.items()]
    m = model([helper.make_node("MelWeightMatrix", list(values), ["w"])], [],
              [vi("w", F, None)], inits, opset=17)
    got, want = both(m, {})
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
