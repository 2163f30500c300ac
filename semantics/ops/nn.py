"""Operator family ``nn``: activations, convolution, dense, normalization, pooling, padding.

Operators (TVM names, attributes and defaults as TVM prints them, i.e. the C++
attribute defaults of ``include/tvm/relay/attrs/nn.h``): ``nn.relu``,
``nn.leaky_relu``, ``nn.softmax``, ``nn.log_softmax``, ``nn.dense``, ``nn.batch_matmul``,
``nn.bias_add``, ``nn.batch_norm``, ``nn.dropout``, ``nn.batch_flatten``,
``nn.conv2d``, ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d``,
``nn.global_max_pool2d``, ``nn.pad``. Relations: :mod:`semantics.ops.nn_relations`
(``Identity`` for the activations comes from :mod:`semantics.ops.relations`).

Reference semantics (numpy; every reference is wrapped by :func:`semantics.ops.reference.reference`,
so results have exactly the relation's dtype and shape and no numpy warning or
exception escapes):

* **Integer conv2d / dense / batch_matmul** accumulate exactly in int64 (two's complement, so
  products and sums are correct modulo 2**64) and the result is cast to
  ``out_dtype`` with wrapping — the same numbers TVM gets by casting the inputs
  to ``out_dtype`` and accumulating there (casts and ring arithmetic commute
  modulo 2**bits). Float conv2d / dense / batch_matmul compute in ``out_dtype``
  with numpy's (BLAS's) summation order: compare floats with a tolerance.
* **Pools** use TVM's window arithmetic (explicit padding, ``ceil_mode`` adds
  ``stride - 1`` of extra bottom/right padding). Max pooling pads with the
  dtype's lowest finite value, as TVM does. Average pooling divides the window
  sum by the number of taps inside the data (``count_include_pad=False``) or
  inside the explicitly padded input, excluding ``ceil_mode``'s extra padding
  (``True``), never by less than 1. Integer sums wrap at the dtype's width and
  the division truncates toward zero.
* **batch_norm** computes ``(x - mean) / sqrt(var + epsilon) * gamma + beta``
  in the data's dtype and returns ``(out, moving_mean, moving_var)`` (inference:
  the statistics pass through, as in TVM). **dropout** is the identity at
  inference and returns ``(data, mask)`` with a mask of ones.
* **nn.pad** takes the pad value as its second input (TVM >= 0.8), a scalar of
  any dtype converted to the data's dtype with :func:`relations.cast_array`.
  ``reflect`` mirrors without repeating the edge (pads up to ``dim - 1``).
* **leaky_relu** on integers multiplies by ``alpha`` converted to the dtype
  (truncated, as TVM's ``make_const``).

* **Blocked conv2d layouts** (``data_layout="NCHW16c"``, ``kernel_layout="OIHW16i16o"``,
  ``out_layout``): the reference unpacks data and weight to NCHW/OIHW with
  ``layout_transform``'s reference, runs the NCHW convolution and packs the result,
  so a blocked conv is bit-identical to the transformed unblocked one (any groups).

* **Blocked pool layouts** (``layout="NCHW16c"``, ``out_layout``; the four pools and the
  pool gradients): the reference unpacks to NCHW, pools and packs the result, so a blocked
  pool is bit-identical to the transformed unblocked one. Every channel is pooled on its
  own, so the block never mixes channels.

Not supported: ``nn.conv2d`` weight-type inference from ``channels``/``kernel_size``
(the weight needs a type), training-mode dropout/batch_norm, ``auto_pad`` forms. Fusion patterns
are current TVM's: softmax and log_softmax are ``OUT_ELEMWISE_FUSABLE`` (they
were ``OPAQUE`` up to TVM 0.8).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from semantics.dtypes import is_int, scalar
from semantics.ops import attr_checks as T
from semantics.ops import nn_relations as N
from semantics.ops.layouts import is_blocked
from semantics.ops.reference import cast_array, concrete_shape, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, register_op
from semantics.ops.registry import get as get_op
from semantics.ops.relations import NUMERIC, identity_relation
from semantics.types import TensorType, Type

FAMILY = "nn"


def _op(name: str, num_inputs: int, relation: Relation, pattern: OpPattern, compute: Any,
        doc: str, *attrs: AttrSpec) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=pattern,
                impl=reference(name, relation, compute), attrs=attrs, doc=doc,
                family=FAMILY)


def _dtype(out: Type) -> np.dtype:
    assert isinstance(out, TensorType)
    return np.dtype(out.dtype)


# --- activations ---------------------------------------------------------------------------------

def _relu(out: Type, data: np.ndarray) -> np.ndarray:
    return np.maximum(data, np.zeros((), dtype=data.dtype))


def _leaky_relu(out: Type, data: np.ndarray, alpha: float) -> np.ndarray:
    if is_int(data.dtype.name):
        slope = scalar(int(alpha), data.dtype.name)
    else:
        slope = np.asarray(alpha, dtype=data.dtype)
    return np.where(data > 0, data, data * slope).astype(data.dtype, copy=False)


def _softmax(out: Type, data: np.ndarray, axis: int) -> np.ndarray:
    if data.size == 0:
        return data.copy()
    shifted = data - np.max(data, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(out: Type, data: np.ndarray, axis: int) -> np.ndarray:
    if data.size == 0:
        return data.copy()
    shifted = data - np.max(data, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


NUMERIC_IDENTITY = identity_relation(NUMERIC)

_op("nn.relu", 1, NUMERIC_IDENTITY, OpPattern.ELEMWISE, _relu,
    "Rectified linear unit: max(x, 0).")

_op("nn.leaky_relu", 1, NUMERIC_IDENTITY, OpPattern.ELEMWISE, _leaky_relu,
    "x if x > 0 else alpha * x.",
    AttrSpec("alpha", "float", 0.25, check=T.check_at_least(0.0),
             doc="slope for negative inputs"))

_op("nn.softmax", 1, N.SOFTMAX, OpPattern.OUT_ELEMWISE_FUSABLE, _softmax,
    "exp(x - max) / sum(exp(x - max)) along axis (float tensors).",
    AttrSpec("axis", "int", -1))

_op("nn.log_softmax", 1, N.SOFTMAX, OpPattern.OUT_ELEMWISE_FUSABLE, _log_softmax,
    "x - max - log(sum(exp(x - max))) along axis (float tensors).",
    AttrSpec("axis", "int", -1))


# --- dense, bias_add, convolution ----------------------------------------------------------------

def _accumulator(out_dtype: np.dtype) -> np.dtype:
    """Integers accumulate exactly modulo 2**64 (int64); floats in the output dtype."""
    return np.dtype(np.int64) if out_dtype.kind in "iu" else out_dtype


def _dense(out: Type, data: np.ndarray, weight: np.ndarray, units: Any, out_dtype: str
           ) -> np.ndarray:
    odt = _dtype(out)
    acc = _accumulator(odt)
    return np.matmul(data.astype(acc, copy=False),
                     weight.astype(acc, copy=False).T).astype(odt, copy=False)


def _batch_matmul(out: Type, x: np.ndarray, y: np.ndarray, out_dtype: str, transpose_a: bool,
                  transpose_b: bool) -> np.ndarray:
    odt = _dtype(out)
    acc = _accumulator(odt)
    a = x.astype(acc, copy=False)
    b = y.astype(acc, copy=False)
    if transpose_a:
        a = a.transpose(0, 2, 1)
    if transpose_b:
        b = b.transpose(0, 2, 1)
    return np.matmul(a, b).astype(odt, copy=False)


def _bias_add(out: Type, data: np.ndarray, bias: np.ndarray, axis: int) -> np.ndarray:
    axis = axis + data.ndim if axis < 0 else axis
    shape = [1] * data.ndim
    shape[axis] = -1
    return data + bias.reshape(shape)


def _tap(x: np.ndarray, i: int, j: int, oh: int, ow: int, sh: int, sw: int) -> np.ndarray:
    """The strided slice of ``x`` (..., H, W) that kernel tap (i, j) (already dilated) reads:
    element (a, b) is ``x[..., i + a*sh, j + b*sw]``, for ``oh`` x ``ow`` outputs (>= 1)."""
    return x[..., i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]


def _conv2d(out: Type, data: np.ndarray, weight: np.ndarray, *, strides: Any, padding: Any,
            dilation: Any, groups: int, channels: Any, kernel_size: Any, data_layout: str,
            kernel_layout: str, out_layout: str, out_dtype: str) -> np.ndarray:
    """Convolution in any layout: blocked layouts are unpacked to NCHW/OIHW (and the result
    packed) with ``layout_transform``'s reference around :func:`_conv2d_nchw`."""
    odt = _dtype(out)
    layout = out_layout or data_layout
    out_axes = N.conv_layout(layout, "NCHW", "C")
    oshape = concrete_shape(out)
    names = [a for a, _ in out_axes]
    oh, ow = oshape[names.index("H")], oshape[names.index("W")]
    if is_blocked(data_layout) or is_blocked(kernel_layout) or is_blocked(layout):
        relayout = get_op("layout_transform").reference
        x = np.asarray(relayout(data, src_layout=data_layout, dst_layout="NCHW"))
        w = np.asarray(relayout(weight, src_layout=kernel_layout, dst_layout="OIHW"))
        res = _conv2d_nchw(x, w, oh, ow, odt, strides, padding, dilation, groups)
        return np.asarray(relayout(res, src_layout="NCHW", dst_layout=layout))
    x = np.transpose(data, [data_layout.index(c) for c in "NCHW"])
    w = np.transpose(weight, [kernel_layout.index(c) for c in "OIHW"])
    res = _conv2d_nchw(x, w, oh, ow, odt, strides, padding, dilation, groups)
    return np.ascontiguousarray(np.transpose(res, ["NCHW".index(c) for c in layout]))


def _conv2d_nchw(x: np.ndarray, w: np.ndarray, oh: int, ow: int, odt: np.dtype, strides: Any,
                 padding: Any, dilation: Any, groups: int) -> np.ndarray:
    """Convolution of NCHW data and OIHW weights as one matrix product per group over the
    unfolded input (im2col), giving an ``odt`` NCHW result with ``oh`` x ``ow`` outputs.

    The strided slice of the padded input each kernel tap ``(i, j)`` reads is copied into
    the columns matrix ``(N, G, C/G * KH * KW, OH*OW)`` (rows ordered channel, tap row, tap
    column — the weights' own OIHW order), which one matrix product per group multiplies by
    the weights ``(G, O/G, C/G * KH * KW)``. A depthwise conv (one input channel per group)
    multiplies elementwise and accumulates taps in row-major order instead. Integers
    accumulate exactly in int64; floats in the output dtype, in BLAS order within the
    product. (Measured against one product per tap: 1.1-10x faster on ResNet-18's layers,
    and BLAS threads get one large product instead of many small ones.)
    """
    acc = _accumulator(odt)
    x = x.astype(acc, copy=False)
    w = w.astype(acc, copy=False)
    batch = x.shape[0]
    out_c, cg, kh, kw = w.shape
    og = out_c // groups
    res = np.zeros((batch, groups, og, oh * ow), dtype=acc)
    if res.size and cg:
        pt, pl, pb, pr = N.pad4(padding)
        sh, sw = N.pair(strides)
        dh, dw = N.pair(dilation)
        if pt or pl or pb or pr:
            x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        xg = x.reshape(batch, groups, cg, x.shape[2], x.shape[3])
        wg = w.reshape(groups, og, cg, kh, kw)
        if cg == 1:
            for i in range(kh):
                for j in range(kw):
                    patch = _tap(xg, i * dh, j * dw, oh, ow, sh, sw).reshape(
                        batch, groups, 1, oh * ow)
                    res += wg[:, :, 0, i, j][None, :, :, None] * patch
        else:
            cols = np.empty((batch, groups, cg, kh, kw, oh, ow), dtype=acc)
            for i in range(kh):
                for j in range(kw):
                    cols[:, :, :, i, j] = _tap(xg, i * dh, j * dw, oh, ow, sh, sw)
            res = np.matmul(wg.reshape(groups, og, cg * kh * kw),
                            cols.reshape(batch, groups, cg * kh * kw, oh * ow))
    res = res.reshape(batch, out_c, oh, ow).astype(odt, copy=False)
    return res


_CONV_ATTRS = (
    AttrSpec("strides", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("padding", "ints", (0, 0), check=T.check_ints_len(1, 2, 4, minimum=0),
             doc="1 value, (top/bottom, left/right) or (top, left, bottom, right)"),
    AttrSpec("dilation", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("groups", "int", 1, check=T.check_at_least(1)),
    AttrSpec("channels", "optional_int", None, check=T.check_at_least(1)),
    AttrSpec("kernel_size", "optional_ints", None, check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("data_layout", "str", "NCHW", check=N.check_conv_layout("NCHW", "C"),
             doc="a permutation of NCHW, optionally channel-blocked (NCHW16c)"),
    AttrSpec("kernel_layout", "str", "OIHW", check=N.check_conv_layout("OIHW", "OI"),
             doc="a permutation of OIHW, optionally with I/O blocks (OIHW16i16o)"),
    AttrSpec("out_layout", "str", "", check=N.check_conv_layout("NCHW", "C", allow_empty=True),
             doc="\"\" = data_layout; may be channel-blocked"),
    AttrSpec("out_dtype", "str", "", check=T.check_optional_dtype),
)
CONV_ATTRS = _CONV_ATTRS
"""The attribute schema of ``nn.conv2d`` (shared with the Winograd convolution)."""

_op("nn.dense", 2, N.DENSE, OpPattern.OUT_ELEMWISE_FUSABLE, _dense,
    "data (..., k) times the transpose of weight (units, k); integers accumulate exactly and "
    "wrap to out_dtype.",
    AttrSpec("units", "optional_int", None, check=T.check_at_least(0)),
    AttrSpec("out_dtype", "str", "", check=T.check_optional_dtype))

_op("nn.batch_matmul", 2, N.BATCH_MATMUL, OpPattern.OUT_ELEMWISE_FUSABLE, _batch_matmul,
    "Batched matrix product of x (b, M, K) and y (b, N, K) (y transposed by default; "
    "transpose_a/transpose_b choose the layouts); batch dims broadcast, integers accumulate "
    "exactly and wrap to out_dtype.",
    AttrSpec("out_dtype", "str", "", check=T.check_optional_dtype),
    AttrSpec("transpose_a", "bool", False, doc="x is (b, K, M)"),
    AttrSpec("transpose_b", "bool", True, doc="y is (b, N, K); False: (b, K, N)"))

_op("nn.bias_add", 2, N.BIAS_ADD, OpPattern.BROADCAST, _bias_add,
    "Add a 1-d bias along axis of data.",
    AttrSpec("axis", "int", 1))

_op("nn.conv2d", 2, N.CONV2D, OpPattern.OUT_ELEMWISE_FUSABLE, _conv2d,
    "2-d convolution with strides, padding, dilation and groups (depthwise when groups = "
    "channels); layouts NCHW/NHWC (any NCHW permutation) with OIHW/HWIO/HWOI kernels, or "
    "TVM's blocked NCHW{c}c with OIHW{i}i{o}o kernels.",
    *_CONV_ATTRS)


# --- normalization, dropout, flatten -------------------------------------------------------------

def _batch_norm(out: Type, data: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                mean: np.ndarray, var: np.ndarray, *, axis: int, epsilon: float, center: bool,
                scale: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    axis = axis + data.ndim if axis < 0 else axis
    shape = [1] * data.ndim
    shape[axis] = -1
    eps = np.asarray(epsilon, dtype=data.dtype)
    res = (data - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if scale:
        res = res * gamma.reshape(shape)
    if center:
        res = res + beta.reshape(shape)
    return res.astype(data.dtype, copy=False), mean.copy(), var.copy()


def _dropout(out: Type, data: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    return data.copy(), np.ones_like(data)


def _batch_flatten(out: Type, data: np.ndarray) -> np.ndarray:
    return data.reshape(concrete_shape(out))


_op("nn.batch_norm", 5, N.BATCH_NORM, OpPattern.OPAQUE, _batch_norm,
    "Inference batch normalization of (data, gamma, beta, moving_mean, moving_var) along axis; "
    "returns (out, moving_mean, moving_var).",
    AttrSpec("axis", "int", 1),
    AttrSpec("epsilon", "float", 1e-5),
    AttrSpec("center", "bool", True, doc="add beta"),
    AttrSpec("scale", "bool", True, doc="multiply by gamma"))

_op("nn.dropout", 1, N.DROPOUT, OpPattern.OPAQUE, _dropout,
    "Dropout at inference: returns (data, mask of ones).",
    AttrSpec("rate", "float", 0.5, check=lambda v: None if 0.0 <= v <= 1.0
             else f"must be in [0, 1], got {v}"))

_op("nn.batch_flatten", 1, N.BATCH_FLATTEN, OpPattern.INJECTIVE, _batch_flatten,
    "Flatten all but the first dimension: (d0, d1 * ... * dn).")


# --- pooling -------------------------------------------------------------------------------------

def to_nchw(data: np.ndarray, layout: str) -> np.ndarray:
    """``data``, laid out as ``layout`` (a permutation of NCHW, maybe blocking C), as NCHW."""
    if is_blocked(layout):
        relayout = get_op("layout_transform").reference
        return np.asarray(relayout(data, src_layout=layout, dst_layout="NCHW"))
    return np.transpose(data, [layout.index(c) for c in "NCHW"])


def from_nchw(res: np.ndarray, layout: str) -> np.ndarray:
    """An NCHW array laid out as ``layout`` (the inverse of :func:`to_nchw`), contiguous."""
    if is_blocked(layout):
        relayout = get_op("layout_transform").reference
        return np.ascontiguousarray(relayout(res, src_layout="NCHW", dst_layout=layout))
    return np.ascontiguousarray(np.transpose(res, ["NCHW".index(c) for c in layout]))


def spatial_extents(shape: tuple[int, ...], layout: str) -> tuple[int, int]:
    """(H, W) of a tensor of ``shape`` laid out as ``layout`` (only C may be blocked)."""
    letters = [a for a, _ in N.conv_layout(layout, "NCHW", "C", "pool")]
    return shape[letters.index("H")], shape[letters.index("W")]


def _lowest(dtype: np.dtype) -> Any:
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _tap_counts(size: int, kernel: int, dilation: int, stride: int, pad_lo: int, pad_hi: int,
                out: int, include_pad: bool) -> np.ndarray:
    """Per output position: how many window taps fall in the data (or the padded data)."""
    taps = (np.arange(out)[:, None] * stride - pad_lo) + np.arange(kernel)[None, :] * dilation
    lo, hi = (-pad_lo, size + pad_hi) if include_pad else (0, size)
    return ((taps >= lo) & (taps < hi)).sum(axis=1)


def _divide_sums(sums: np.ndarray, counts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Window sums / counts in ``dtype``: floats divide, integers wrap then truncate."""
    if dtype.kind == "f":
        quotient = sums.astype(dtype, copy=False) / counts.astype(dtype, copy=False)
        return quotient.astype(dtype, copy=False)
    wrapped = sums.astype(dtype, copy=False)
    if dtype.kind == "u":
        return (wrapped // counts.astype(dtype, copy=False)).astype(dtype, copy=False)
    s = wrapped.astype(np.int64)
    q = s // counts
    q = q + ((s % counts != 0) & (s < 0))
    return q.astype(dtype, copy=False)


def _pool2d(out: Type, data: np.ndarray, *, pool_size: Any, strides: Any, dilation: Any,
            padding: Any, layout: str, out_layout: str, ceil_mode: bool,
            count_include_pad: bool | None = None) -> np.ndarray:
    avg = count_include_pad is not None
    x = to_nchw(data, layout)
    kh, kw = N.pair(pool_size)
    sh, sw = N.pair(strides)
    dh, dw = N.pair(dilation)
    pt, pl, pb, pr = N.pad4(padding)
    olayout = out_layout or layout
    oh, ow = spatial_extents(concrete_shape(out), olayout)
    eh, ew = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    if not avg:
        # A running maximum over the strided slice of each window tap (max is exact, so
        # the order does not matter; NaN propagates through np.maximum).
        if oh == 0 or ow == 0:
            return from_nchw(np.empty((*x.shape[:2], oh, ow), x.dtype), olayout)
        xp = x
        if pt or pl or pb + eh or pr + ew:
            xp = np.pad(x, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)),
                        constant_values=_lowest(x.dtype))
        best = _tap(xp, 0, 0, oh, ow, sh, sw).copy()
        for i in range(kh):
            for j in range(kw):
                if i or j:
                    np.maximum(best, _tap(xp, i * dh, j * dw, oh, ow, sh, sw), out=best)
        return from_nchw(best, olayout)
    xa = x.astype(np.int64) if x.dtype.kind in "iu" else x
    xp = np.pad(xa, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)))
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    sums = win.sum(axis=(4, 5))
    ch = _tap_counts(x.shape[2], kh, dh, sh, pt, pb, oh, bool(count_include_pad))
    cw = _tap_counts(x.shape[3], kw, dw, sw, pl, pr, ow, bool(count_include_pad))
    counts = np.maximum(ch[:, None] * cw[None, :], 1)
    return from_nchw(_divide_sums(sums, counts, x.dtype), olayout)


def _max_pool2d(out: Type, data: np.ndarray, **attrs: Any) -> np.ndarray:
    return _pool2d(out, data, **attrs)


def _avg_pool2d(out: Type, data: np.ndarray, **attrs: Any) -> np.ndarray:
    return _pool2d(out, data, **attrs)


def _global_pool(out: Type, data: np.ndarray, layout: str, out_layout: str, avg: bool
                 ) -> np.ndarray:
    x = to_nchw(data, layout)
    if avg:
        xa = x.astype(np.int64) if x.dtype.kind in "iu" else x
        sums = xa.sum(axis=(2, 3), keepdims=True)
        counts = np.array(x.shape[2] * x.shape[3], dtype=np.int64)
        res = _divide_sums(sums, counts, x.dtype)
    else:
        res = x.max(axis=(2, 3), keepdims=True)
    return from_nchw(res, out_layout or layout)


def _global_avg_pool2d(out: Type, data: np.ndarray, layout: str, out_layout: str
                       ) -> np.ndarray:
    return _global_pool(out, data, layout, out_layout, avg=True)


def _global_max_pool2d(out: Type, data: np.ndarray, layout: str, out_layout: str
                       ) -> np.ndarray:
    return _global_pool(out, data, layout, out_layout, avg=False)


def _pool_attrs(avg: bool) -> tuple[AttrSpec, ...]:
    specs: tuple[AttrSpec, ...] = (
        AttrSpec("pool_size", "ints", required=True, check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("strides", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("dilation", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("padding", "ints", (0, 0), check=T.check_ints_len(1, 2, 4, minimum=0),
                 doc="1 value, (top/bottom, left/right) or (top, left, bottom, right)"),
        AttrSpec("layout", "str", "NCHW", check=N.check_conv_layout("NCHW", "C"),
                 doc="may block C (NCHW16c)"),
        AttrSpec("out_layout", "str", "", check=N.check_conv_layout("NCHW", "C", allow_empty=True),
                 doc="\"\" = layout; may block C"),
        AttrSpec("ceil_mode", "bool", False),
    )
    if avg:
        specs += (AttrSpec("count_include_pad", "bool", False),)
    return specs


_GLOBAL_POOL_ATTRS = (
    AttrSpec("layout", "str", "NCHW", check=N.check_conv_layout("NCHW", "C"),
             doc="may block C (NCHW16c)"),
    AttrSpec("out_layout", "str", "", check=N.check_conv_layout("NCHW", "C", allow_empty=True),
             doc="\"\" = layout; may block C"),
)

_op("nn.max_pool2d", 1, N.POOL2D, OpPattern.OUT_ELEMWISE_FUSABLE, _max_pool2d,
    "2-d max pooling over H and W (padding with the dtype's lowest value).",
    *_pool_attrs(avg=False))

_op("nn.avg_pool2d", 1, N.POOL2D, OpPattern.OUT_ELEMWISE_FUSABLE, _avg_pool2d,
    "2-d average pooling over H and W (count_include_pad: divide by taps in the padded input).",
    *_pool_attrs(avg=True))

_op("nn.global_avg_pool2d", 1, N.GLOBAL_POOL2D, OpPattern.OUT_ELEMWISE_FUSABLE,
    _global_avg_pool2d, "Average over all of H and W (output H = W = 1).", *_GLOBAL_POOL_ATTRS)

_op("nn.global_max_pool2d", 1, N.GLOBAL_POOL2D, OpPattern.OUT_ELEMWISE_FUSABLE,
    _global_max_pool2d, "Maximum over all of H and W (output H = W = 1).", *_GLOBAL_POOL_ATTRS)


# --- padding -------------------------------------------------------------------------------------

def _pad(out: Type, data: np.ndarray, pad_value: np.ndarray, pad_width: Any, pad_mode: str
         ) -> np.ndarray:
    widths = [tuple(p) for p in pad_width]
    if not widths:                       # a scalar: nothing to pad
        return data.copy()
    if pad_mode == "constant":
        value = cast_array(np.asarray(pad_value), data.dtype.name)
        return np.pad(data, widths, mode="constant", constant_values=value[()])
    if not any(b or a for b, a in widths):
        return data.copy()
    mode: Any = pad_mode                 # "edge" or "reflect" (checked by the attribute)
    return np.pad(data, widths, mode=mode)


_op("nn.pad", 2, N.PAD, OpPattern.INJECTIVE, _pad,
    "Pad data by pad_width (before, after) per axis; mode constant (with the scalar second "
    "input), edge or reflect.",
    AttrSpec("pad_width", "any", required=True, check=T.check_pad_width),
    AttrSpec("pad_mode", "str", "constant", check=T.check_choice("constant", "edge", "reflect")))
