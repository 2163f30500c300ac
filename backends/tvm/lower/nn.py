"""Lowerings of the ``nn`` family for ``llvm`` (semantics: :mod:`semantics.ops.nn`).

Convolution (:mod:`backends.tvm.lower.conv`; int8 convolutions with dot-product
instructions, :mod:`backends.tvm.lower.int_dot`) and batch_matmul are plain TE reductions
(``te.sum``) of the inputs cast to the result dtype; dense too, shaped for its schedules
(:func:`_dense`). Integers wrap in ``out_dtype`` — the numbers the reference gets by summing
exactly in int64 and wrapping once (casts and ring arithmetic commute modulo ``2**bits``);
floats accumulate in ``out_dtype`` (not BLAS's order).

Layouts are index maps: every tensor is read through its layout's *primal* coordinates
(``N C H W`` / ``O I H W``; a blocked axis ``C`` with block ``c`` of factor ``f`` is read at
``C = x // f, c = x % f``), so ``nn.conv2d`` and the pools handle every layout the relation
accepts — permutations and TVM's blocked ``NCHW{c}c``/``OIHW{i}i{o}o`` — with one compute
each.  Padding is a lazy ``if_then_else`` around the load for convolution (zero); pooling
loads at a clamped index and selects the padding value (the dtype's lowest finite value for
max pooling, as the reference; zero for the average), only on the axes the window can leave
the data.

* ``avg_pool2d`` divides the window sum (floats: accumulated in float32 for float16, rounded
  to the dtype; integers: summed in int64, wrapped to the dtype, then divided truncating) by
  the number of taps inside the data (or the explicitly padded data with
  ``count_include_pad``), never less than 1 — the count is a static expression of the
  output position;
* ``softmax``/``log_softmax`` subtract the (NaN-propagating) maximum, exponentiate in the
  dtype (float16 via float32; float32 in vector arithmetic,
  :func:`backends.tvm.lower.vecmath.exp_nonpositive_f32`) and sum in float32 for float16;
* ``batch_norm``: ``(x - mean) / sqrt(var + eps) * gamma + beta`` and copies of the statistics;
  ``dropout`` is ``(copy, ones)``;
* ``nn.pad`` modes ``constant`` (fill cast to the dtype), ``edge`` and ``reflect``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from backends.tvm.lower.base import (
    OpCall,
    Unsupported,
    aligned_empty,
    bits,
    const,
    is_float,
    lowering,
    map_compute,
    nan_max,
)
from backends.tvm.lower.tensor import cast_expr
from backends.tvm.lower.transform import reshape_to
from backends.tvm.lower.vecmath import exp_nonpositive_f32
from backends.tvm.sched.default import KEEP
from backends.tvm.target import Target
from semantics.ops import nn_relations as N
from semantics.ops import transform_relations as R


def _te() -> Any:
    from tvm import te

    return te


def _tirx() -> Any:
    from tvm import tirx

    return tirx


def _at(x: Any, index: Sequence[Any]) -> Any:
    return x[tuple(index)] if len(index) else x[()]


class LayoutMap:
    """Reads a tensor of ``layout`` at primal coordinates (see the module docstring)."""

    def __init__(self, layout: str) -> None:
        self.axes = R.parse_layout("layout", layout)
        self.factor = {a.upper(): f for a, f in self.axes if a.islower()}

    def index(self, coords: dict[str, Any]) -> list[Any]:
        tirx = _tirx()
        out = []
        for a, f in self.axes:
            if a.isupper():
                c = coords[a]
                out.append(tirx.floordiv(c, self.factor[a]) if a in self.factor else c)
            else:
                out.append(tirx.floormod(coords[a.upper()], f))
        return out

    def coords(self, idx: Sequence[Any]) -> dict[str, Any]:
        """The primal coordinates of an index in this layout."""
        pos = {a: k for k, (a, _) in enumerate(self.axes)}
        out = {}
        for a, _ in self.axes:
            if a.isupper():
                c = idx[pos[a]]
                if a in self.factor:
                    c = c * self.factor[a] + idx[pos[a.lower()]]
                out[a] = c
        return out

    def extent(self, shape: Sequence[int], axis: str) -> int:
        """The primal extent of ``axis`` for a tensor of ``shape`` in this layout."""
        pos = {a: k for k, (a, _) in enumerate(self.axes)}
        n = shape[pos[axis]]
        return n * self.factor[axis] if axis in self.factor else n


# --- activations --------------------------------------------------------------------------

@lowering("nn.relu")
def _relu(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    if dtype in ("float32", "float64"):
        # The reference is numpy.maximum(x, 0), which returns its second operand on a tie:
        # relu(-0.0) is +0.0 (and NaN stays NaN).
        tirx = _tirx()
        zero = const(0, dtype)
        return map_compute(call.inputs[0], lambda x: tirx.Select(
            tirx.isnan(x), x, tirx.Select(x > zero, x, zero)), "relu")
    return map_compute(call.inputs[0], lambda x: nan_max(x, const(0, dtype), dtype), "relu")


@lowering("nn.leaky_relu")
def _leaky_relu(call: OpCall) -> Any:
    tirx = _tirx()
    dtype = call.in_dtype(0)
    alpha = call.attrs["alpha"]
    if is_float(dtype):
        slope = const(alpha, dtype)
    else:
        slope = const(int(np.asarray(int(alpha)).astype(dtype)), dtype)
    zero = const(0, dtype)
    return map_compute(call.inputs[0], lambda x: tirx.Select(x > zero, x, x * slope),
                       "leaky_relu")


def _softmax_parts(call: OpCall) -> tuple[Any, Any, Any, Callable[..., list[Any]], str]:
    """(max, exp(x - max), sum of it, index-with-axis helper, dtype) along the axis."""
    te, tirx = _te(), _tirx()
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    acc = "float32" if dtype == "float16" else dtype
    shape = call.in_shape(0)
    axis = call.attrs["axis"]
    axis = axis + len(shape) if axis < 0 else axis
    red_shape = tuple(d for k, d in enumerate(shape) if k != axis)

    def with_axis(idx: Sequence[Any], r: Any) -> list[Any]:
        index = list(idx)
        index.insert(axis, r)
        return index

    mx_reducer = te.comm_reducer(lambda a, b: _pool_max(a, b, dtype),
                                 lambda t: const(-np.inf, dtype), name="softmax_max")
    rk = te.reduce_axis((0, shape[axis]), name="rk")
    mx = te.compute(red_shape, lambda *i: mx_reducer(_at(x, with_axis(i, rk)), axis=rk),
                    name="softmax_max")

    def expo(*i: Any) -> Any:
        shifted = x[i] - _at(mx, [v for k, v in enumerate(i) if k != axis])
        if dtype == "float16":
            return tirx.Cast(dtype, tirx.exp(tirx.Cast("float32", shifted)))
        if dtype == "float32":
            return exp_nonpositive_f32(shifted)
        return tirx.exp(shifted)

    e = te.compute(shape, expo, name="softmax_exp")
    rs = te.reduce_axis((0, shape[axis]), name="rs")
    total = te.compute(red_shape, lambda *i: te.sum(tirx.Cast(acc, _at(e, with_axis(i, rs))),
                                                    axis=rs), name="softmax_sum")
    return mx, e, total, with_axis, dtype


def _drop(idx: Sequence[Any], axis: int) -> list[Any]:
    return [v for k, v in enumerate(idx) if k != axis]


@lowering("nn.softmax")
def _softmax(call: OpCall) -> Any:
    tirx = _tirx()
    if any(d == 0 for d in call.in_shape(0)):
        return map_compute(call.inputs[0], lambda x: x, "softmax")
    _, e, total, _, dtype = _softmax_parts(call)
    axis = call.attrs["axis"] % len(call.in_shape(0))
    return _te().compute(call.out_shape, lambda *i: tirx.Div(
        e[i], tirx.Cast(dtype, _at(total, _drop(i, axis)))), name="softmax")


@lowering("nn.log_softmax")
def _log_softmax(call: OpCall) -> Any:
    tirx = _tirx()
    x = call.inputs[0]
    if any(d == 0 for d in call.in_shape(0)):
        return map_compute(x, lambda v: v, "log_softmax")
    mx, _, total, _, dtype = _softmax_parts(call)
    axis = call.attrs["axis"] % len(call.in_shape(0))

    def body(*i: Any) -> Any:
        shifted = x[i] - _at(mx, _drop(i, axis))
        s = _at(total, _drop(i, axis))
        if dtype == "float16":
            # The reference sums in float16: round the (float32) sum to float16 before its
            # log, so that log(1 + tiny) is log(1.0) = 0 as there; a -4.5e-5 where the
            # reference has 0 reorders ties for an argmax after it (max_pool2d_pick).
            s = tirx.Cast("float32", tirx.Cast(dtype, s))
        return shifted - tirx.Cast(dtype, tirx.log(s))

    return _te().compute(call.out_shape, body, name="log_softmax")


# --- dense, batch_matmul, bias_add ------------------------------------------------------

GEMV_MAX_ROWS = 4
"""``nn.dense`` with at most this many rows (the product of the data's leading dims) is
lowered as a matrix-vector product that streams the weight (see :func:`_dense`)."""
PACK = 16
"""The column block of ``nn.dense``'s packed weight in the GEMM (one AVX-512 vector of float32)."""
GEMV = f"{KEEP}dense_gemv"
"""The stage of a GEMV over a weight packed at build time (``backends.tvm.sched.dense``)."""


def _lanes(dtype: str) -> int:
    """The vector width of ``dtype`` on a 64-byte vector register (at most 16 lanes)."""
    return max(1, min(16, 512 // bits(dtype)))


def dense_rows(shape: Sequence[int]) -> int:
    """The number of rows of ``nn.dense``'s data of ``shape`` (its leading dims' product)."""
    rows = 1
    for d in shape[:-1]:
        rows *= int(d)
    return rows


def gemv_tile(n: int, rows: int, lanes: int) -> int:
    """The output columns a packed GEMV computes at once (a multiple of ``lanes``).

    The tile's ``rows × blocks`` vector accumulators stay in registers (at most 8 of 16 ymm
    registers, the rest hold the broadcast data and loads): 8 blocks for one row, 4 for two,
    2 for three or four; fewer when the weight has fewer blocks. Among tiles of 4 to 8
    blocks for one row, the one that pads the weight least (ties: the larger).
    """
    blocks = -(-n // lanes)
    most = max(1, 8 // rows)
    if rows > 1 or blocks <= most:
        return min(most, blocks) * lanes
    best = min(range(most, 3, -1), key=lambda u: (-(-blocks // u) * u - blocks, -u))
    return best * lanes


def pack_gemv_weight(w: np.ndarray, tile: int) -> np.ndarray:
    """The weight ``(N, K)`` as ``[ceil(N / tile), K, tile]``: tile ``t`` holds rows
    ``t * tile ..`` of ``w`` transposed (zero rows past ``N``), so a GEMV tile reads one
    contiguous run of ``K * tile`` elements, ``tile`` outputs per ``k``.

    Written in one pass into 64-byte-aligned memory, which the kernel then uses as it is
    (VGG-16's 411 MB first dense layer: no second copy at build time)."""
    n, k = w.shape
    tiles, full = -(-n // tile), n // tile
    out = aligned_empty((tiles, k, tile), w.dtype)
    rows = w[:full * tile].reshape(full, tile, k)
    for t in range(full):          # a tile at a time: a transposed copy that stays in cache
        out[t] = rows[t].T
    if full < tiles:
        rest = n - full * tile
        out[full, :, :rest] = w[full * tile:].T
        out[full, :, rest:] = 0
    return out


def _dense_dot(call: OpCall, rows: int) -> Any:
    """An integer dense on dot-product instructions (``lower/int_dense.py``), or None."""
    if call.in_dtype(0) not in ("int8", "int16"):
        return None
    from backends.tvm.lower.int_dense import dense_dot

    return dense_dot(call, rows, GEMV_MAX_ROWS, gemv_tile, PACK, (GEMV, f"{KEEP}dense_acc"))


@lowering("nn.dense")
def _dense(call: OpCall) -> Any:
    """``nn.dense`` in one of the forms the schedules of ``backends.tvm.sched.dense`` expect
    (an int8/int16 one with a bound weight: on dot-product words, :func:`_dense_dot`).

    * **Packed GEMV** (at most :data:`GEMV_MAX_ROWS` rows, the weight a constant of the
      kernel): the weight is packed at build time (:func:`pack_gemv_weight`, tiles of
      :func:`gemv_tile` columns, as many lanes as the target's vector registers hold);
      ``keep_dense_gemv[..., j]`` sums ``x[k] * packed[j // T, k, j % T]`` (zero past ``N``),
      ``dense`` is its first ``N`` columns: each ``k`` step broadcasts ``x[k]``.
    * **GEMV** (at most :data:`GEMV_MAX_ROWS` rows, a weight computed at run time): the
      weight ``(N, K)`` is read in its own row-major layout —
      ``keep_dense_partial[..., j, l]`` sums ``x[k] * w[j, k]`` over the ``k = ko * L + l``
      of the first ``K - K % L`` columns (``L`` lanes), and ``dense`` adds the ``L`` partial
      sums and the ``K % L`` remaining products (guarded by ``l < K % L``). No copy is made.
    * **GEMM**: the weight is packed into ``[N/16, K, 16]`` (zero-padded) — at build time
      when it is a constant of the kernel (:func:`pack_gemv_weight`, a tile of 16), else per
      call in ``keep_dense_pack`` —; ``keep_dense_acc[..., Np]`` accumulates over ``k``
      reading 16 contiguous packed weights per step; ``dense`` is its first ``N`` columns.
    """
    te, tirx = _te(), _tirx()
    data, weight = call.inputs
    odt = call.out_dtype
    dshape = call.in_shape(0)
    k = dshape[-1]
    n = call.in_shape(1)[0]
    if k == 0:
        return te.compute(call.out_shape, lambda *i: const(0, odt), name="dense")
    zero = const(0, odt)

    def x_at(i: Sequence[Any], kk: Any) -> Any:
        return tirx.Cast(odt, _at(data, [*i, kk]))

    def w_at(j: Any, kk: Any) -> Any:
        return tirx.Cast(odt, weight[j, kk])

    rows = dense_rows(dshape)
    if (dotted := _dense_dot(call, rows)) is not None:
        return dotted
    w_const = call.constant(1)
    if rows <= GEMV_MAX_ROWS and w_const is not None and call.hide is not None:
        lanes = max(1, min(16, (call.target or Target.host()).vector_bytes * 8 // bits(odt)))
        tile = gemv_tile(n, rows, lanes)
        packed = call.add_constant(pack_gemv_weight(w_const, tile), "dense_packed")
        rk = te.reduce_axis((0, k), name="k")
        width = int(packed.shape[0]) * tile
        acc = te.compute((*call.out_shape[:-1], width), lambda *i: te.sum(
            x_at(i[:-1], rk) * tirx.Cast(odt, packed[tirx.floordiv(i[-1], tile), rk,
                                                     tirx.floormod(i[-1], tile)]),
            axis=rk), name=GEMV)
        return te.compute(call.out_shape, lambda *i: acc[i], name="dense")
    if rows <= GEMV_MAX_ROWS:
        lanes = _lanes(odt)
        main, tail = k // lanes, k % lanes
        if main == 0:
            rk = te.reduce_axis((0, k), name="k")
            return te.compute(call.out_shape, lambda *i: te.sum(
                x_at(i[:-1], rk) * w_at(i[-1], rk), axis=rk), name="dense")
        ko = te.reduce_axis((0, main), name="ko")
        partial = te.compute(
            (*call.out_shape, lanes),
            lambda *i: te.sum(x_at(i[:-2], ko * lanes + i[-1]) * w_at(i[-2], ko * lanes + i[-1]),
                              axis=ko), name=f"{KEEP}dense_partial")
        rl = te.reduce_axis((0, lanes), name="l")

        def gemv(*i: Any) -> Any:
            term = partial[(*i, rl)]
            if tail:
                kk = main * lanes + rl
                term = term + tirx.if_then_else(rl < tail, x_at(i[:-1], tirx.min(kk, k - 1))
                                                * w_at(i[-1], tirx.min(kk, k - 1)), zero)
            return te.sum(term, axis=rl)

        return te.compute(call.out_shape, gemv, name="dense")
    blocks = -(-n // PACK)
    if w_const is not None and call.hide is not None:
        # a constant weight (a model's): packed once, at build time
        pack = call.add_constant(pack_gemv_weight(w_const, PACK), "dense_packed")
    else:
        pack = te.compute((blocks, k, PACK), lambda jo, kk, jl: tirx.if_then_else(
            jo * PACK + jl < n, w_at(tirx.min(jo * PACK + jl, n - 1), kk), zero),
            name=f"{KEEP}dense_pack")
    rk = te.reduce_axis((0, k), name="k")
    acc = te.compute((*call.out_shape[:-1], blocks * PACK), lambda *i: te.sum(
        x_at(i[:-1], rk) * tirx.Cast(odt, pack[tirx.floordiv(i[-1], PACK), rk,
                                               tirx.floormod(i[-1], PACK)]),
        axis=rk), name=f"{KEEP}dense_acc")
    return te.compute(call.out_shape, lambda *i: acc[i], name="dense")


@lowering("nn.batch_matmul")
def _batch_matmul(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    x, y = call.inputs
    xs, ys = call.in_shape(0), call.in_shape(1)
    odt = call.out_dtype
    ta, tb = bool(call.attrs["transpose_a"]), bool(call.attrs["transpose_b"])
    k = xs[1] if ta else xs[2]
    if k == 0:
        return te.compute(call.out_shape, lambda *i: const(0, odt), name="batch_matmul")
    rk = te.reduce_axis((0, k), name="k")
    if tb:      # y (b, N, K): transposed once into a kept stage (contiguous over N)
        n_dim = ys[1]
        y = te.compute((ys[0], k, n_dim), lambda b, kk, n: y[b, n, kk],
                       name=f"{KEEP}batch_matmul_y_t")

    def body(b: Any, m: Any, n: Any) -> Any:
        bx = 0 if xs[0] == 1 else b
        by = 0 if ys[0] == 1 else b
        a = x[bx, rk, m] if ta else x[bx, m, rk]
        return te.sum(tirx.Cast(odt, a) * tirx.Cast(odt, y[by, rk, n]), axis=rk)

    return te.compute(call.out_shape, body, name="batch_matmul")


@lowering("nn.bias_add")
def _bias_add(call: OpCall) -> Any:
    data, bias = call.inputs
    shape = call.in_shape(0)
    axis = call.attrs["axis"]
    axis = axis + len(shape) if axis < 0 else axis
    return _te().compute(call.out_shape, lambda *i: data[i] + bias[i[axis]], name="bias_add")


# --- normalization, dropout, flatten ----------------------------------------------------

@lowering("nn.batch_norm")
def _batch_norm(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    data, gamma, beta, mean, var = call.inputs
    dtype = call.in_dtype(0)
    shape = call.in_shape(0)
    axis = call.attrs["axis"]
    axis = axis + len(shape) if axis < 0 else axis
    eps = const(call.attrs["epsilon"], dtype)
    center, scale = bool(call.attrs["center"]), bool(call.attrs["scale"])

    def body(*i: Any) -> Any:
        c = i[axis]
        res = tirx.Div(data[i] - mean[c], _sqrt(_plus(var[c], eps, dtype), dtype))
        if scale:
            res = res * gamma[c]
        if center:
            res = res + beta[c]
        return res

    out = te.compute(shape, body, name="batch_norm")
    return (out, map_compute(mean, lambda v: v, "bn_mean"), map_compute(var, lambda v: v,
                                                                          "bn_var"))


def _plus(x: Any, c: Any, dtype: str) -> Any:
    """``x + c`` for a literal ``c``, IEEE-exact when ``c`` is zero: TVM's simplifier rewrites
    ``x + 0`` to ``x``, but ``-0.0 + 0.0`` is ``+0.0`` (a ``batch_norm`` with ``epsilon=0`` over
    a variance of ``-0.0`` divides by ``+0``)."""
    tirx = _tirx()
    if float(c.value) == 0.0:
        zero = const(0, dtype)
        return tirx.Select(x == zero, zero, x)
    return x + c


def _sqrt(x: Any, dtype: str) -> Any:
    tirx = _tirx()
    if dtype == "float16":
        return tirx.Cast("float16", tirx.sqrt(tirx.Cast("float32", x)))
    return tirx.sqrt(x)


@lowering("nn.dropout")
def _dropout(call: OpCall) -> Any:
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    return (map_compute(x, lambda v: v, "dropout"),
            map_compute(x, lambda v: const(1, dtype), "dropout_mask"))


@lowering("nn.batch_flatten")
def _batch_flatten(call: OpCall) -> Any:
    return reshape_to(call.inputs[0], call.in_shape(0), call.out_shape, "batch_flatten")


# --- pooling ------------------------------------------------------------------------------

def _pool_setup(call: OpCall) -> dict[str, Any]:
    attrs = call.attrs
    layout = attrs["layout"]
    kh, kw = N.pair(attrs["pool_size"])
    sh, sw = N.pair(attrs["strides"])
    dh, dw = N.pair(attrs["dilation"])
    pt, pl, pb, pr = N.pad4(attrs["padding"])
    shape = call.in_shape(0)
    imap, omap = LayoutMap(layout), LayoutMap(attrs["out_layout"] or layout)
    return dict(imap=imap, omap=omap,
                kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl, pb=pb, pr=pr,
                height=imap.extent(shape, "H"), width=imap.extent(shape, "W"),
                out_h=omap.extent(call.out_shape, "H"), out_w=omap.extent(call.out_shape, "W"))


def _window_tap(p: dict[str, Any], o: dict[str, Any], ry: Any, rx: Any
                ) -> tuple[Any, Any, Any]:
    """``(h, w, inside)`` of window tap ``(ry, rx)`` of output ``o``: the input row and
    column, clamped into the data where the window can reach the padding (see
    :func:`_clamp`), and the condition that the tap is inside the data (None: always).

    The condition is "the clamp changes nothing", not ``0 <= i < n``: TVM's simplifier
    simplifies a ``Select``'s value under its condition, and under ``0 <= i < n`` it drops
    the clamp, leaving a load outside the buffer for the ``Select`` to discard (the load is
    unconditional: a tap in the top padding read a row before the data).  Over an empty
    axis every tap is padding: ``inside`` is then ``False`` and nothing may be loaded."""
    tirx = _tirx()
    if p["height"] == 0 or p["width"] == 0:
        return 0, 0, False
    conds = []
    index = []
    for c, r, s, d, pad, k, n, out in (
            (o["H"], ry, p["sh"], p["dh"], p["pt"], p["kh"], p["height"], p["out_h"]),
            (o["W"], rx, p["sw"], p["dw"], p["pl"], p["kw"], p["width"], p["out_w"])):
        i = c * s - pad + r * d
        if pad > 0 or (out - 1) * s - pad + (k - 1) * d > n - 1:
            clamped = _clamp(i, n)
            conds.append(clamped == i)
            i = clamped
        index.append(i)
    return index[0], index[1], tirx.all(*conds) if conds else None


def _clamp(i: Any, n: int) -> Any:
    """``i`` clamped into ``[0, n)``: a window tap in the padding loads an element of the
    border, which the ``Select`` around it discards.  The load is then unconditional, so
    LLVM computes the window with blends and vector loads instead of a branch per tap (the
    ``if_then_else`` form branched on every tap of a max pool: 12x slower)."""
    tirx = _tirx()
    return tirx.max(tirx.min(i, n - 1), 0)


def _pool_max(a: Any, b: Any, dtype: str) -> Any:
    """``nan_max`` as one ``Select`` on a combined condition (``a`` if it is NaN or not less
    than ``b``, else ``b``): the same values.  Measured on a padded max pool (3×3/2 over
    64×112×112, same run): the nested selects of ``nan_max`` became a branch per tap (11 ms),
    this form 1.1 ms; on an unpadded 2×2/2 window the forms are within the (large) noise."""
    tirx = _tirx()
    if not is_float(dtype):
        return tirx.max(a, b)
    return tirx.Select(tirx.Or(tirx.isnan(a), a >= b), a, b)


def _lowest_finite(dtype: str) -> Any:
    if is_float(dtype):
        return const(float(np.finfo(dtype).min), dtype)
    return const(int(np.iinfo(dtype).min), dtype)


@lowering("nn.max_pool2d")
def _max_pool2d(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    p = _pool_setup(call)
    ry = te.reduce_axis((0, p["kh"]), name="ry")
    rx = te.reduce_axis((0, p["kw"]), name="rx")
    low = _lowest_finite(dtype)
    reducer = te.comm_reducer(lambda a, b: _pool_max(a, b, dtype),
                              lambda t: const(-np.inf, dtype) if is_float(dtype) else low,
                              name="pool_max")

    def body(*idx: Any) -> Any:
        o = p["omap"].coords(idx)
        h, w, inside = _window_tap(p, o, ry, rx)
        if inside is False:
            return reducer(low, axis=[ry, rx])
        v = _at(x, p["imap"].index({"N": o["N"], "C": o["C"], "H": h, "W": w}))
        if inside is not None:
            v = tirx.Select(inside, v, low)
        return reducer(v, axis=[ry, rx])

    return te.compute(call.out_shape, body, name="max_pool2d")


def _tap_count(o: Any, stride: int, pad: int, kernel: int, dil: int, lo: int, hi: int) -> Any:
    """How many of the ``kernel`` taps of output position ``o`` fall in ``[lo, hi)``."""
    tirx = _tirx()
    count: Any = const(0, "int64")
    for i in range(kernel):
        t = tirx.Cast("int64", o) * stride - pad + i * dil
        count = count + tirx.Select(tirx.all(t >= lo, t < hi), const(1, "int64"),
                                    const(0, "int64"))
    return count


def _divide_sum(total: Any, count: Any, dtype: str) -> Any:
    """Window sum (int64 for integers, the accumulator for floats) / count, as the reference."""
    tirx = _tirx()
    if is_float(dtype):
        return tirx.Div(tirx.Cast(dtype, total), tirx.Cast(dtype, count))
    wrapped = tirx.Cast(dtype, total)
    if dtype.startswith("uint"):
        return tirx.truncdiv(wrapped, tirx.Cast(dtype, count))
    return tirx.Cast(dtype, tirx.truncdiv(tirx.Cast("int64", wrapped), count))


@lowering("nn.avg_pool2d")
def _avg_pool2d(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    p = _pool_setup(call)
    if dtype.startswith("uint") and p["kh"] * p["kw"] >= 2 ** bits(dtype):
        raise Unsupported(f"{dtype} average pooling over {p['kh'] * p['kw']} taps: the count "
                          "wraps in the dtype")
    acc = "int64" if not is_float(dtype) else ("float32" if dtype == "float16" else dtype)
    ry = te.reduce_axis((0, p["kh"]), name="ry")
    rx = te.reduce_axis((0, p["kw"]), name="rx")
    include = bool(call.attrs["count_include_pad"])
    h_lo, h_hi = (-p["pt"], p["height"] + p["pb"]) if include else (0, p["height"])
    w_lo, w_hi = (-p["pl"], p["width"] + p["pr"]) if include else (0, p["width"])

    def window_sum(*idx: Any) -> Any:
        o = p["omap"].coords(idx)
        h, w, inside = _window_tap(p, o, ry, rx)
        if inside is False:
            return te.sum(const(0, acc), axis=[ry, rx])
        v = tirx.Cast(acc, _at(x, p["imap"].index({"N": o["N"], "C": o["C"], "H": h, "W": w})))
        if inside is not None:
            v = tirx.Select(inside, v, const(0, acc))
        return te.sum(v, axis=[ry, rx])

    sums = te.compute(call.out_shape, window_sum, name="avg_pool_sum")

    def body(*idx: Any) -> Any:
        o = p["omap"].coords(idx)
        ch = _tap_count(o["H"], p["sh"], p["pt"], p["kh"], p["dh"], h_lo, h_hi)
        cw = _tap_count(o["W"], p["sw"], p["pl"], p["kw"], p["dw"], w_lo, w_hi)
        count = tirx.max(ch * cw, const(1, "int64"))
        return _divide_sum(sums[idx], count, dtype)

    return te.compute(call.out_shape, body, name="avg_pool2d")


def _global_pool(call: OpCall, avg: bool) -> Any:
    te, tirx = _te(), _tirx()
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    imap = LayoutMap(call.attrs["layout"])
    omap = LayoutMap(call.attrs["out_layout"] or call.attrs["layout"])
    shape = call.in_shape(0)
    height, width = imap.extent(shape, "H"), imap.extent(shape, "W")
    count = height * width
    if count == 0:
        if not avg:
            raise Unsupported("global max pooling over an empty window must raise "
                              "RelayRuntimeError")
        fill = const(np.nan, dtype) if is_float(dtype) else const(0, dtype)
        return te.compute(call.out_shape, lambda *i: fill, name="global_pool")
    ry = te.reduce_axis((0, height), name="ry")
    rx = te.reduce_axis((0, width), name="rx")

    def at(idx: Sequence[Any]) -> Any:
        o = omap.coords(idx)
        return _at(x, imap.index({"N": o["N"], "C": o["C"], "H": ry, "W": rx}))

    if not avg:
        reducer = te.comm_reducer(lambda a, b: _pool_max(a, b, dtype),
                                  lambda t: _lowest_finite(dtype) if not is_float(dtype)
                                  else const(-np.inf, dtype), name="global_max")
        return te.compute(call.out_shape, lambda *i: reducer(at(i), axis=[ry, rx]),
                          name="global_max_pool2d")
    acc = "int64" if not is_float(dtype) else dtype
    sums = te.compute(call.out_shape, lambda *i: te.sum(tirx.Cast(acc, at(i)), axis=[ry, rx]),
                      name="global_avg_sum")
    if dtype.startswith("uint") and count % (2 ** bits(dtype)) == 0:
        return te.compute(call.out_shape, lambda *i: const(0, dtype), name="global_avg_pool2d")
    return te.compute(call.out_shape,
                      lambda *i: _divide_sum(sums[i], const(count, "int64"), dtype),
                      name="global_avg_pool2d")


@lowering("nn.global_avg_pool2d")
def _global_avg_pool2d(call: OpCall) -> Any:
    return _global_pool(call, avg=True)


@lowering("nn.global_max_pool2d")
def _global_max_pool2d(call: OpCall) -> Any:
    return _global_pool(call, avg=False)


# --- padding ------------------------------------------------------------------------------

@lowering("nn.pad")
def _pad(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    data, fill = call.inputs
    dtype = call.in_dtype(0)
    shape = call.in_shape(0)
    widths = [tuple(w) for w in call.attrs["pad_width"]]
    mode = call.attrs["pad_mode"]
    if not widths or not any(b or a for b, a in widths):
        return map_compute(data, lambda v: v, "pad")
    if mode != "constant" and any(n == 0 for n in shape):
        raise Unsupported(f"{mode} padding of an empty axis")
    value = cast_expr(fill[()], call.in_dtype(1), dtype)

    def body(*idx: Any) -> Any:
        index = []
        conds = []
        for i, (before, _), n in zip(idx, widths, shape):
            j = i - before
            if mode == "constant":
                conds.append(tirx.all(j >= 0, j < n))
                index.append(j)
            elif mode == "edge":
                index.append(tirx.max(tirx.min(j, n - 1), 0))
            else:
                j = tirx.Select(j < 0, 0 - j, j)
                index.append(tirx.Select(j >= n, 2 * (n - 1) - j, j))
        v = _at(data, index)
        if conds:
            return tirx.if_then_else(tirx.all(*conds), v, value)
        return v

    return te.compute(call.out_shape, body, name="pad")



# --- local response normalization (the ONNX importer's nn.lrn) -----------------------------

@lowering("nn.lrn")
def _lrn(call: OpCall) -> Any:
    """``x / (bias + alpha / size * s) ** beta`` with ``s`` the sum of squares over the
    channel window ``[c - (size - 1) // 2, c + size // 2]`` (taps outside the axis add 0),
    as :mod:`semantics.ops.extra`'s reference: every step in the dtype, the window summed
    tap by tap in window order; ``** beta`` of float16 through float32, rounded once."""
    te, tirx = _te(), _tirx()
    x = call.inputs[0]
    dtype = call.in_dtype(0)
    shape = call.in_shape(0)
    size = int(call.attrs["size"])
    k = const(call.attrs["alpha"] / size, dtype)
    bias = const(call.attrs["bias"], dtype)
    beta = const(call.attrs["beta"], "float32" if dtype == "float16" else dtype)

    def power(v: Any) -> Any:
        if dtype == "float16":
            return tirx.Cast("float16", tirx.power(tirx.Cast("float32", v), beta))
        return tirx.power(v, beta)

    axis = call.attrs["axis"] % len(shape)     # the relation requires rank >= 1
    n = shape[axis]
    lo = (size - 1) // 2
    r = te.reduce_axis((0, size), name="lrn_tap")

    def window(*idx: Any) -> Any:
        j = idx[axis] - lo + r
        index = list(idx)
        index[axis] = tirx.max(tirx.min(j, n - 1), 0)
        v = x[tuple(index)]
        return te.sum(tirx.if_then_else(tirx.all(j >= 0, j < n), v * v, const(0, dtype)),
                      axis=[r])

    sums = te.compute(shape, window, name="lrn_window")
    return te.compute(shape, lambda *i: tirx.Div(x[i], power(bias + k * sums[i])), name="lrn")
