"""The numpy references of the nn family against independent computations.

conv2d and the pools against naive loops written here (every layout, stride,
padding form, dilation, group count, depthwise, integer wrapping); dense,
bias_add, softmax, log_softmax, batch_norm, leaky_relu, pad by hand formulas;
invalid runtime calls as RelayRuntimeError.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops_nn import conv2d_call, fast_array, pool2d_call
from semantics import ops
from semantics.errors import RelayRuntimeError

RNG = np.random.default_rng(1234)


def ref(name, *args, **attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ops.get(name).reference(*args, **attrs)


def wrap(value: int, dtype: str) -> int:
    """Two's-complement wrapping of a Python int to an integer dtype."""
    info = np.iinfo(np.dtype(dtype))
    bits = info.bits
    v = value % (1 << bits)
    if info.min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def four(padding):
    if len(padding) == 1:
        return (padding[0],) * 4
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)


def two(v):
    return (v[0], v[0]) if len(v) == 1 else tuple(v)


def to_canonical(a, layout, canonical):
    """``a`` (laid out as ``layout``) in the permutation ``canonical``; a blocked ``layout``
    (``NCHW4c``) is first unpacked by numpy reshapes written here."""
    block = re.fullmatch(r"([A-Z]+)(\d+)c", layout)
    if block:
        letters, b = block.group(1), int(block.group(2))
        c = letters.index("C")
        a = np.moveaxis(a, -1, c + 1)                   # the block next to its outer axis
        a = a.reshape(a.shape[:c] + (a.shape[c] * b,) + a.shape[c + 2:])
        layout = letters
    return np.transpose(a, [layout.index(c) for c in canonical])


def from_nchw(a, layout):
    """An NCHW array laid out as ``layout`` (maybe blocked: the inverse of to_canonical)."""
    block = re.fullmatch(r"([A-Z]+)(\d+)c", layout)
    if not block:
        return to_canonical(a, "NCHW", layout)
    letters, b = block.group(1), int(block.group(2))
    a = to_canonical(a, "NCHW", letters)
    c = letters.index("C")
    a = a.reshape(a.shape[:c] + (a.shape[c] // b, b) + a.shape[c + 1:])
    return np.moveaxis(a, c + 1, -1)


# --- conv2d -----------------------------------------------------------------------------------

def naive_conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="",
                 **_):
    """Direct definition with Python numbers: out[n, o, y, x] = sum over the group's
    channels and the kernel taps that land inside the (unpadded) input."""
    x = to_canonical(data, data_layout, "NCHW")
    w = to_canonical(weight, kernel_layout, "OIHW")
    out_dtype = out_dtype or data.dtype.name
    N, C, H, W = x.shape
    out_c, in_c, KH, KW = w.shape
    sh, sw = two(strides)
    dh, dw = two(dilation)
    pt, pl, pb, pr = four(padding)
    OH = (H + pt + pb - dh * (KH - 1) - 1) // sh + 1
    OW = (W + pl + pr - dw * (KW - 1) - 1) // sw + 1
    integer = np.dtype(out_dtype).kind in "iu"
    out = np.zeros((N, out_c, OH, OW), dtype=object)
    per_group = out_c // groups
    for nn_, o, y, xx in itertools.product(range(N), range(out_c), range(OH), range(OW)):
        g = o // per_group
        acc = 0
        for c, ky, kx in itertools.product(range(in_c), range(KH), range(KW)):
            iy, ix = y * sh - pt + ky * dh, xx * sw - pl + kx * dw
            if 0 <= iy < H and 0 <= ix < W:
                a, b = x[nn_, g * in_c + c, iy, ix], w[o, c, ky, kx]
                acc += (int(a) * int(b)) if integer else float(a) * float(b)
        out[nn_, o, y, xx] = wrap(acc, out_dtype) if integer else acc
    res = np.array(out.tolist(), dtype=np.int64 if integer else np.float64).reshape(out.shape)
    res = res.astype(out_dtype)
    return to_canonical(res, "NCHW", out_layout or data_layout)


def check_close(actual, expected, dtype):
    assert actual.dtype == np.dtype(dtype) and actual.shape == expected.shape
    if np.dtype(dtype).kind in "iub":
        np.testing.assert_array_equal(actual, expected)
    else:
        tol = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-10}[np.dtype(dtype).name]
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=tol, atol=tol)


CONV_CASES = [
    # (data shape, weight shape, attrs)
    ((1, 3, 5, 5), (4, 3, 3, 3), {}),
    ((2, 3, 6, 7), (4, 3, 3, 2), {"strides": [2, 1], "padding": [1]}),
    ((1, 2, 7, 7), (3, 2, 3, 3), {"padding": [1, 2], "dilation": [2]}),
    ((1, 2, 6, 6), (2, 2, 2, 3), {"padding": [0, 1, 2, 1], "strides": [2], "dilation": [1, 2]}),
    ((1, 4, 5, 5), (6, 2, 3, 3), {"groups": 2, "padding": [1]}),
    ((2, 3, 5, 4), (6, 1, 3, 3), {"groups": 3, "padding": [1, 1]}),            # depthwise x2
    ((1, 5, 5, 3), (3, 3, 3, 4), {"data_layout": "NHWC", "kernel_layout": "HWIO",
                                  "padding": [1], "channels": 4, "kernel_size": [3, 3]}),
    ((1, 5, 5, 3), (3, 3, 3, 1), {"data_layout": "NHWC", "kernel_layout": "HWOI",
                                  "groups": 3, "strides": [2, 2]}),            # depthwise NHWC
    ((1, 3, 5, 5), (4, 3, 1, 1), {"out_layout": "NHWC"}),
    ((2, 2, 4, 4), (2, 3, 2, 2), {"data_layout": "NCHW", "kernel_layout": "IOHW"}),
    ((0, 2, 4, 4), (3, 2, 2, 2), {}),
    ((1, 0, 4, 4), (3, 0, 2, 2), {}),
]


@pytest.mark.parametrize("dtype, out_dtype", [("float32", ""), ("float64", ""),
                                              ("int32", ""), ("int8", "int32")])
@pytest.mark.parametrize("dshape, wshape, attrs", CONV_CASES)
def test_conv2d_against_naive_loops(dshape, wshape, attrs, dtype, out_dtype):
    lo, hi = (-4, 5) if np.dtype(dtype).kind in "iu" else (-3, 3)
    x = RNG.integers(lo, hi, size=dshape).astype(dtype)
    w = RNG.integers(lo, hi, size=wshape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x = x + RNG.random(dshape).astype(dtype)
    full = dict(attrs, out_dtype=out_dtype) if out_dtype else attrs
    got = ref("nn.conv2d", x, w, **full)
    check_close(got, naive_conv2d(x, w, **full), out_dtype or dtype)


def test_conv2d_int8_accumulates_and_wraps_in_the_output_dtype():
    x = np.full((1, 4, 1, 1), 127, dtype="int8")
    w = np.full((1, 4, 1, 1), 127, dtype="int8")
    got = ref("nn.conv2d", x, w)                       # 4 * 127 * 127 = 64516 wraps in int8
    assert got.dtype == np.int8 and int(got[0, 0, 0, 0]) == wrap(4 * 127 * 127, "int8")
    got = ref("nn.conv2d", x, w, out_dtype="int32")
    assert got.dtype == np.int32 and int(got[0, 0, 0, 0]) == 64516
    big = np.full((1, 1, 1, 1), 2 ** 62, dtype="int64")
    got = ref("nn.conv2d", big, np.full((1, 1, 1, 1), 4, dtype="int64"))
    assert int(got[0, 0, 0, 0]) == wrap(2 ** 64, "int64") == 0


def test_conv2d_float16_stays_float16():
    x = RNG.random((1, 2, 4, 4)).astype("float16")
    w = RNG.random((2, 2, 3, 3)).astype("float16")
    got = ref("nn.conv2d", x, w, padding=[1])
    check_close(got, naive_conv2d(x, w, padding=[1]), "float16")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_conv2d_random_configurations_against_naive_loops(data):
    (dt, wt), attrs = data.draw(conv2d_call())
    x = data.draw(fast_array(dt.dtype, dt.shape, True))
    w = data.draw(fast_array(wt.dtype, wt.shape, True))
    got = ref("nn.conv2d", x, w, **attrs)
    full = ops.get("nn.conv2d").normalize_attrs(attrs)
    check_close(got, naive_conv2d(x, w, **dict(full)), full["out_dtype"] or dt.dtype)


# --- pools ---------------------------------------------------------------------------------------

def naive_pool(data, pool_size, strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False, count_include_pad=None, **_):
    """TVM's pooling by definition: taps outside the data are padding (lowest value for max,
    zero for avg); avg divides by the taps inside the data (or the explicitly padded data)."""
    avg = count_include_pad is not None
    x = to_canonical(data, layout, "NCHW")
    N, C, H, W = x.shape
    kh, kw = two(pool_size if not isinstance(pool_size, int) else [pool_size])
    sh, sw = two(strides)
    dh, dw = two(dilation)
    pt, pl, pb, pr = four(padding)
    extra = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    OH = (H + pt + pb + extra[0] - dh * (kh - 1) - 1) // sh + 1
    OW = (W + pl + pr + extra[1] - dw * (kw - 1) - 1) // sw + 1
    dtype = x.dtype
    integer = dtype.kind in "iu"
    lowest = np.iinfo(dtype).min if integer else np.finfo(dtype).min
    out = np.zeros((N, C, OH, OW), dtype=dtype)
    for n_, c, y, xx in itertools.product(range(N), range(C), range(OH), range(OW)):
        vals, outside, in_padded = [], False, 0
        for ky, kx in itertools.product(range(kh), range(kw)):
            iy, ix = y * sh - pt + ky * dh, xx * sw - pl + kx * dw
            if 0 <= iy < H and 0 <= ix < W:
                vals.append(x[n_, c, iy, ix])
            else:
                outside = True
            if -pt <= iy < H + pb and -pl <= ix < W + pr:
                in_padded += 1
        if not avg:
            best = max(vals + ([lowest] if outside else []), key=float) if vals else lowest
            out[n_, c, y, xx] = best
            continue
        count = max(in_padded if count_include_pad else len(vals), 1)
        if integer:
            total = wrap(sum(int(v) for v in vals), dtype.name)
            q = abs(total) // count * (1 if total >= 0 else -1)      # truncating division
            out[n_, c, y, xx] = q
        else:
            out[n_, c, y, xx] = sum(float(v) for v in vals) / count
    return from_nchw(out, out_layout or layout)


POOL_CASES = [
    ((1, 2, 5, 5), {"pool_size": [2, 2]}),
    ((1, 2, 5, 5), {"pool_size": [3, 3], "strides": [2, 2], "padding": [1]}),
    ((2, 1, 6, 7), {"pool_size": [3, 2], "strides": [2, 3], "padding": [1, 0, 2, 1]}),
    ((1, 2, 5, 5), {"pool_size": [3, 3], "strides": [2, 2], "ceil_mode": True}),
    ((1, 1, 6, 6), {"pool_size": [2, 2], "strides": [3, 3], "ceil_mode": True,
                    "padding": [1]}),
    ((1, 2, 7, 7), {"pool_size": [2, 2], "dilation": [2, 3], "padding": [1, 2]}),
    ((1, 4, 4, 2), {"pool_size": [2, 2], "layout": "NHWC", "strides": [2]}),
    ((1, 4, 4, 2), {"pool_size": [3], "layout": "NHWC", "out_layout": "NCHW", "padding": [1]}),
    ((1, 1, 2, 2), {"pool_size": [3, 3], "padding": [2]}),     # windows entirely in padding
    ((1, 1, 5, 5), {"pool_size": [2, 2], "strides": [2, 2], "ceil_mode": True}),  # into extra
    ((1, 1, 5, 4), {"pool_size": [2, 3], "strides": [2, 2], "ceil_mode": True,
                    "padding": [0, 1, 1, 0]}),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "float16"])
@pytest.mark.parametrize("shape, attrs", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg_exclude", "avg_include"])
def test_pools_against_naive_loops(shape, attrs, dtype, kind):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        x = RNG.integers(int(info.min), int(info.max), size=shape, endpoint=True).astype(dtype)
    else:
        x = (RNG.standard_normal(shape) * 3).astype(dtype)
    if kind == "max":
        got = ref("nn.max_pool2d", x, **attrs)
        expected = naive_pool(x, **attrs)
    else:
        full = dict(attrs, count_include_pad=(kind == "avg_include"))
        got = ref("nn.avg_pool2d", x, **full)
        expected = naive_pool(x, **full)
    check_close(got, expected, dtype)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), avg=st.booleans())
def test_pools_random_configurations_against_naive_loops(data, avg):
    (t,), attrs = data.draw(pool2d_call(avg))
    x = data.draw(fast_array(t.dtype, t.shape, True))
    name = "nn.avg_pool2d" if avg else "nn.max_pool2d"
    full = ops.get(name).normalize_attrs(attrs)
    check_close(ref(name, x, **attrs), naive_pool(x, **dict(full)), t.dtype)


def test_max_pool_pads_with_the_lowest_finite_value():
    x = np.full((1, 1, 1, 1), -np.inf, dtype="float32")
    got = ref("nn.max_pool2d", x, pool_size=[2, 2], padding=[1])
    assert got[0, 0, 0, 0] == np.finfo(np.float32).min     # TVM's min_value, not -inf


def test_avg_pool_integer_sum_wraps_and_division_truncates():
    x = np.array([[[[100, 100], [100, -7]]]], dtype="int8")    # sum 293 wraps to 37
    got = ref("nn.avg_pool2d", x, pool_size=[2, 2])
    assert int(got[0, 0, 0, 0]) == wrap(293, "int8") // 4
    y = np.array([[[[-7, 0], [0, 0]]]], dtype="int8")
    assert int(ref("nn.avg_pool2d", y, pool_size=[2, 2])[0, 0, 0, 0]) == -1   # trunc(-7/4)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_global_pools(layout, dtype):
    x = RNG.integers(-50, 50, size=(2, 3, 4, 5)).astype(dtype)      # NCHW values
    data = to_canonical(x, "NCHW", layout)
    gmax = ref("nn.global_max_pool2d", data, layout=layout)
    gavg = ref("nn.global_avg_pool2d", data, layout=layout)
    exp_max = np.zeros((2, 3, 1, 1), dtype=dtype)
    exp_avg = np.zeros((2, 3, 1, 1), dtype=dtype)
    for n_, c in itertools.product(range(2), range(3)):
        vals = [int(v) if dtype != "float32" else float(v) for v in x[n_, c].ravel()]
        exp_max[n_, c, 0, 0] = max(vals)
        if dtype == "float32":
            exp_avg[n_, c, 0, 0] = sum(vals) / len(vals)
        else:
            s = sum(vals)
            exp_avg[n_, c, 0, 0] = abs(s) // len(vals) * (1 if s >= 0 else -1)
    check_close(gmax, to_canonical(exp_max, "NCHW", layout), dtype)
    check_close(gavg, to_canonical(exp_avg, "NCHW", layout), dtype)


# --- dense, bias_add -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, out_dtype", [("float32", ""), ("float64", ""), ("int8", "int32"),
                                              ("int8", ""), ("uint8", "int16"), ("int32", "")])
def test_dense_by_hand(dtype, out_dtype):
    info_lo, info_hi = (-100, 100) if np.dtype(dtype).kind == "i" else (0, 200)
    x = RNG.integers(info_lo, info_hi, size=(2, 3, 4)).astype(dtype)
    wt = RNG.integers(info_lo, info_hi, size=(5, 4)).astype(dtype)
    attrs = {"out_dtype": out_dtype} if out_dtype else {}
    got = ref("nn.dense", x, wt, units=5, **attrs)
    odt = out_dtype or dtype
    expected = np.zeros((2, 3, 5), dtype=odt)
    for i, j, u in itertools.product(range(2), range(3), range(5)):
        s = sum(int(x[i, j, q]) * int(wt[u, q]) for q in range(4)) if np.dtype(dtype).kind != "f" \
            else sum(float(x[i, j, q]) * float(wt[u, q]) for q in range(4))
        expected[i, j, u] = wrap(s, odt) if np.dtype(odt).kind in "iu" else s
    check_close(got, expected, odt)


def test_dense_float_inputs_to_wider_float_and_empty_reduction():
    x = RNG.random((3, 0)).astype("float16")
    got = ref("nn.dense", x, np.zeros((2, 0), "float16"), out_dtype="float32")
    assert got.dtype == np.float32 and got.shape == (3, 2) and not got.any()


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_bias_add_by_hand(axis):
    x = RNG.integers(-9, 9, size=(2, 3, 4)).astype("int32")
    b = RNG.integers(-9, 9, size=(x.shape[axis],)).astype("int32")
    got = ref("nn.bias_add", x, b, axis=axis)
    expected = x.copy()
    ax = axis % 3
    for idx in itertools.product(*(range(d) for d in x.shape)):
        expected[idx] = x[idx] + b[idx[ax]]
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int32


def test_bias_add_wraps():
    got = ref("nn.bias_add", np.array([[120]], "int8"), np.array([10], "int8"))
    assert int(got[0, 0]) == wrap(130, "int8")


# --- softmax, activations, batch_norm, dropout, flatten ------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_softmax_and_log_softmax_by_hand(axis, dtype):
    x = (RNG.standard_normal((3, 4)) * 3).astype(dtype)
    sm = ref("nn.softmax", x, axis=axis)
    lsm = ref("nn.log_softmax", x, axis=axis)
    ax = axis % 2
    exp_sm = np.zeros(x.shape)
    exp_lsm = np.zeros(x.shape)
    for idx in itertools.product(*(range(d) for d in x.shape)):
        line = [float(x[idx[:ax] + (j,) + idx[ax + 1:]]) for j in range(x.shape[ax])]
        total = sum(math.exp(v) for v in line)
        exp_sm[idx] = math.exp(float(x[idx])) / total
        exp_lsm[idx] = float(x[idx]) - math.log(total)
    check_close(sm, exp_sm.astype(dtype), dtype)
    check_close(lsm, exp_lsm.astype(dtype), dtype)


def test_softmax_is_stable_and_ieee():
    x = np.array([1000.0, 1000.0], dtype="float32")
    np.testing.assert_allclose(ref("nn.softmax", x), [0.5, 0.5])
    assert np.isnan(ref("nn.softmax", np.array([np.nan, 1.0], "float32"))).all()
    assert ref("nn.softmax", np.zeros((0, 3), "float32")).shape == (0, 3)


def test_relu_and_leaky_relu():
    x = np.array([-2.0, -0.0, 0.5, np.inf, -np.inf], dtype="float32")
    np.testing.assert_array_equal(ref("nn.relu", x), [0, 0, 0.5, np.inf, 0])
    np.testing.assert_array_equal(ref("nn.leaky_relu", x, alpha=0.1),
                                  np.array([-0.2, -0.0, 0.5, np.inf, -np.inf], "float32"))
    assert ref("nn.leaky_relu", np.array(-4.0, "float32")).item() == -1.0   # default 0.25
    assert ref("nn.relu", np.array(-3, "int8")).shape == ()
    ints = np.array([-5, 7], dtype="int8")
    np.testing.assert_array_equal(ref("nn.leaky_relu", ints, alpha=2.7), [-10, 7])
    np.testing.assert_array_equal(ref("nn.leaky_relu", ints, alpha=0.25), [0, 7])
    assert ref("nn.leaky_relu", ints, alpha=100.0)[0] == wrap(-500, "int8")


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False),
                                           (False, False)])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_batch_norm_by_hand(center, scale, axis):
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    c = x.shape[axis]
    gamma, beta = RNG.standard_normal(c).astype("float32"), RNG.standard_normal(c).astype(
        "float32")
    mean, var = RNG.standard_normal(c).astype("float32"), RNG.random(c).astype("float32") + 0.5
    out, new_mean, new_var = ref("nn.batch_norm", x, gamma, beta, mean, var, axis=axis,
                                 epsilon=1e-3, center=center, scale=scale)
    expected = np.zeros(x.shape)
    ax = axis % 3
    for idx in itertools.product(*(range(d) for d in x.shape)):
        j = idx[ax]
        v = (float(x[idx]) - float(mean[j])) / math.sqrt(float(var[j]) + 1e-3)
        if scale:
            v *= float(gamma[j])
        if center:
            v += float(beta[j])
        expected[idx] = v
    check_close(out, expected.astype("float32"), "float32")
    np.testing.assert_array_equal(new_mean, mean)
    np.testing.assert_array_equal(new_var, var)


def test_batch_norm_negative_variance_is_nan_not_a_warning():
    one = np.ones(1, "float32")
    out, _, _ = ref("nn.batch_norm", np.ones((1, 1), "float32"), one, one, one, -one)
    assert np.isnan(out).all()


@pytest.mark.parametrize("dtype", ["float32", "bool", "int8"])
def test_dropout_is_identity_at_inference(dtype):
    x = RNG.integers(0, 2, size=(2, 3)).astype(dtype)
    out, mask = ref("nn.dropout", x, rate=0.3)
    np.testing.assert_array_equal(out, x)
    assert out.dtype == x.dtype and mask.dtype == x.dtype and mask.shape == x.shape
    assert (mask == 1).all()


def test_batch_flatten():
    x = np.arange(24, dtype="int32").reshape(2, 3, 4)
    got = ref("nn.batch_flatten", x)
    assert got.shape == (2, 12)
    for i, j in itertools.product(range(2), range(12)):
        assert got[i, j] == x[i, j // 4, j % 4]
    assert ref("nn.batch_flatten", np.zeros(3, "bool")).shape == (3, 1)


# --- pad -----------------------------------------------------------------------------------------

def naive_pad(x, value, widths, mode):
    out_shape = tuple(d + b + a for d, (b, a) in zip(x.shape, widths, strict=True))
    out = np.empty(out_shape, dtype=x.dtype)
    for idx in itertools.product(*(range(d) for d in out_shape)):
        src = []
        inside = True
        for i, (b, _), d in zip(idx, widths, x.shape, strict=True):
            j = i - b
            if 0 <= j < d:
                src.append(j)
                continue
            inside = False
            if mode == "edge":
                src.append(min(max(j, 0), d - 1))
            elif mode == "reflect":
                src.append(-j if j < 0 else 2 * (d - 1) - j)
        if inside or mode != "constant":
            out[idx] = x[tuple(src)]
        else:
            out[idx] = value
    return out


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("widths", [[[0, 0], [1, 2]], [[2, 1], [0, 3]], [[1, 1], [1, 1]]])
def test_pad_modes_by_index_mapping(mode, widths):
    x = np.arange(20, dtype="float32").reshape(4, 5)
    got = ref("nn.pad", x, np.array(-1.5, "float32"), pad_width=widths, pad_mode=mode)
    np.testing.assert_array_equal(got, naive_pad(x, -1.5, widths, mode))


def test_pad_value_is_an_input_converted_to_the_data_dtype():
    x = np.zeros((2,), "int32")
    got = ref("nn.pad", x, np.array(2.7, "float32"), pad_width=[[1, 1]])
    np.testing.assert_array_equal(got, [2, 0, 0, 2])
    got = ref("nn.pad", x, np.array(np.nan, "float32"), pad_width=[[1, 0]])
    assert got.dtype == np.int32 and got[0] == 0
    got = ref("nn.pad", np.zeros(1, "int8"), np.array(300, "int32"), pad_width=[[1, 0]])
    assert got[0] == wrap(300, "int8")
    assert ref("nn.pad", np.array(5.0, "float32"), np.array(0.0, "float32"),
               pad_width=[]).shape == ()


# --- runtime errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args, attrs", [
    ("nn.conv2d", (np.zeros((1, 3, 4, 4), "float32"), np.zeros((2, 2, 3, 3), "float32")), {}),
    ("nn.dense", (np.zeros((2, 3), "float32"), np.zeros((4, 2), "float32")), {}),
    ("nn.max_pool2d", (np.zeros((1, 1, 2, 2), "float32"),), {"pool_size": [3, 3]}),
    ("nn.pad", (np.zeros((2,), "float32"), np.zeros((1,), "float32")), {"pad_width": [[1, 1]]}),
    ("nn.pad", (np.zeros((2,), "float32"), np.zeros((), "float32")),
     {"pad_width": [[2, 0]], "pad_mode": "reflect"}),
    ("nn.softmax", (np.zeros((2,), "int32"),), {}),
    ("nn.relu", ((np.zeros(2, "float32"),),), {}),
    ("nn.relu", ("not a tensor",), {}),
    ("nn.relu", (np.zeros(2, "complex64"),), {}),
])
def test_invalid_runtime_calls_raise_relay_runtime_error(name, args, attrs):
    with pytest.raises(RelayRuntimeError):
        ops.get(name).reference(*args, **attrs)
