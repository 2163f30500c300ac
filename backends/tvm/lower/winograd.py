"""Lowerings of the Winograd convolution operators (semantics: :mod:`semantics.ops.winograd`).

``nn.contrib_conv2d_winograd_without_weight_transform`` is four stages, named for its schedule
(``backends.tvm.sched.winograd``):

1. :data:`INPUT` ``V[eps, nu, p, c]`` — the input transform ``B^T d B`` of tile ``p`` (tiles
   numbered ``(n, tile row, tile column)`` row-major) of channel ``c``, in two passes as the
   reference computes it: :data:`INPUT_ROWS` (``B^T d``, per tile) then the columns, over the
   zero-padded ``a x a`` tile (:data:`INPUT_TILE`: the bounds tests once per tile point, not
   in every term of the unrolled sums, which kept the unrolled code small for TVM's passes). Each
   output of a pass is a ``Select`` on its row of ``B^T`` whose branches hold only that row's
   non-zero terms (the schedule's unrolling resolves the ``Select``), so no multiplication by
   zero is emitted, and the expressions stay small (one pass in a single expression made
   ``F(4x4, 3x3)`` kernels take 100 s to compile).
2. The transformed weight, as the GEMM streams it: ``U[eps, nu, o // b, c, o % b]`` (``b``
   the output channels of a vector, :data:`LANES_MAX` at most): packed at build time when the
   weight is a constant of the kernel (:meth:`OpCall.add_constant`), else a stage
   (:data:`PACK`).
3. :data:`GEMM` ``M[eps, nu, p, o] = sum_c V[eps, nu, p, c] U[eps, nu, o, c]``: one matrix
   product per point of the transformed domain.
4. The output ``A^T M A`` of each tile, cropped, in the output layout, in two passes:
   :data:`OUTPUT_COLS` (``M A``, per tile: the schedule computes it inside the output's tile
   loop) then the rows, a spatial stage (no reduction) that selects the tile position's row
   of ``A^T``, so the schedule inlines it into the fused epilogue (bias, residual,
   activation) and writes each output once.

Float16 is computed in float32 and rounded once at the end (as the reference).
``nn.contrib_conv2d_winograd_weight_transform`` is ``G w G^T`` the same way (usually folded
at build time: FoldConstant runs it on the bound weight).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from backends.tvm.lower.base import OpCall, aligned_empty, const, lowering
from backends.tvm.lower.nn import LayoutMap, _at
from backends.tvm.sched.default import KEEP
from semantics.ops import nn_relations as N
from semantics.ops.winograd import WEIGHT_TRANSFORM, WITHOUT_WEIGHT_TRANSFORM, winograd_matrices

__all__ = ["GEMM", "INPUT", "INPUT_ROWS", "INPUT_TILE", "LANES_MAX", "OUTPUT", "OUTPUT_COLS",
           "PACK", "pack_weight"]

INPUT = f"{KEEP}winograd_input"
INPUT_ROWS = f"{KEEP}winograd_input_rows"
INPUT_TILE = f"{KEEP}winograd_input_tile"
OUTPUT_COLS = f"{KEEP}winograd_output_cols"
GEMM = "winograd_gemm"
PACK = f"{KEEP}winograd_pack"
OUTPUT = "winograd_output"
LANES_MAX = 16
"""The most output channels of one packed vector (float32 lanes of AVX-512)."""


def _te() -> Any:
    from tvm import te

    return te


def _tirx() -> Any:
    from tvm import tirx

    return tirx


def _compute_dtype(dtype: str) -> str:
    return "float32" if dtype == "float16" else dtype


def _terms(coefs: Sequence[float], values: Sequence[Any], dtype: str) -> Any:
    """``sum coefs[k] * values[k]`` over the non-zero coefficients (a unit one unmultiplied)."""
    out = None
    for c, v in zip(coefs, values, strict=True):
        if c == 0.0:
            continue
        term = v if c == 1.0 else (-v if c == -1.0 else const(c, dtype) * v)
        out = term if out is None else out + term
    return out if out is not None else const(0, dtype)


def _select(index: Any, branches: Sequence[Any]) -> Any:
    """``branches[index]`` as a chain of ``Select``s (constant once ``index`` is)."""
    tirx = _tirx()
    out = branches[-1]
    for k in range(len(branches) - 2, -1, -1):
        out = tirx.Select(index == k, branches[k], out)
    return out


def _rows(matrix: np.ndarray, i: Any, load: Any, dtype: str) -> Any:
    """``sum_a matrix[i, a] load(a)`` for an index expression ``i``: a ``Select`` on ``i``
    whose branches hold only the non-zero terms of their row."""
    branches = []
    for ii in range(matrix.shape[0]):
        used = [(float(c), a) for a, c in enumerate(matrix[ii]) if c != 0.0]
        branches.append(_terms([c for c, _ in used], [load(a) for _, a in used], dtype))
    return _select(i, branches)


@lowering(WEIGHT_TRANSFORM)
def _weight_transform(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    (weight,) = call.inputs
    o, i, r, _ = call.in_shape(0)
    odt = call.out_dtype
    cdt = _compute_dtype(odt)
    _, _, g = winograd_matrices(call.attrs["tile_size"], r)

    alpha = g.shape[0]
    # G w G^T in two passes, as the reference: the kernel's rows, then its columns
    rows = te.compute((alpha, r, o, i), lambda a, ll, oo, ii: _rows(
        g, a, lambda k: tirx.Cast(cdt, weight[oo, ii, k, ll]), cdt), name="winograd_weight_rows")
    return te.compute(call.out_shape, lambda a, b, oo, ii: tirx.Cast(odt, _rows(
        g, b, lambda ll: rows[a, ll, oo, ii], cdt)), name="winograd_weight_transform")


def pack_weight(u: np.ndarray, lanes: int) -> np.ndarray:
    """``U (a, a, O, I)`` as ``(a, a, ceil(O / lanes), I, lanes)``, zero-filled past ``O``."""
    alpha, _, o, i = u.shape
    blocks = -(-o // lanes)
    padded = u
    if o % lanes:       # (one copy fewer of a weight that is often 16 MB when none is needed)
        padded = np.zeros((alpha, alpha, blocks * lanes, i), dtype=u.dtype)
        padded[:, :, :o] = u
    # Written once, 64-byte aligned: the kernel keeps this very array (no further copy).
    out = aligned_empty((alpha, alpha, blocks, i, lanes), u.dtype)
    np.copyto(out, padded.reshape(alpha, alpha, blocks, lanes, i).transpose(0, 1, 2, 4, 3))
    return out


def _lanes(call: OpCall, out_channels: int) -> int:
    """Output channels per packed vector: the output layout's block when it has one, else
    the target's float32 lanes (at most :data:`LANES_MAX`), not more than the channels."""
    block = LayoutMap(call.attrs["out_layout"] or call.attrs["data_layout"]).factor.get("C")
    if block:
        return int(block)
    lanes = call.target.lanes if call.target is not None else 8
    return max(1, min(LANES_MAX, lanes, out_channels))


@lowering(WITHOUT_WEIGHT_TRANSFORM)
def _winograd(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    data, weight = call.inputs
    attrs = call.attrs
    odt = call.out_dtype
    cdt = _compute_dtype(odt)
    m = attrs["tile_size"]
    dmap = LayoutMap(attrs["data_layout"])
    omap = LayoutMap(attrs["out_layout"] or attrs["data_layout"])
    dshape = call.in_shape(0)
    alpha, _, out_c, in_c = call.in_shape(1)
    r = alpha - m + 1
    batch, height, width = (dmap.extent(dshape, a) for a in "NHW")
    out_h, out_w = (omap.extent(call.out_shape, a) for a in "HW")
    if min(batch, out_c, out_h, out_w) == 0 or in_c == 0:
        return te.compute(call.out_shape, lambda *i: const(0, odt), name=OUTPUT)
    at, bt, _ = winograd_matrices(m, r)
    pt, pl, _, _ = N.pad4(attrs["padding"])
    nh, nw = -(-out_h // m), -(-out_w // m)
    tiles = batch * nh * nw

    def load(n: Any, hh: Any, ww: Any, c: Any) -> Any:
        h, w = hh - pt, ww - pl
        inside = tirx.all(h >= 0, h < height, w >= 0, w < width)
        x = tirx.Cast(cdt, _at(data, dmap.index({"N": n, "C": c, "H": h, "W": w})))
        return tirx.if_then_else(inside, x, const(0, cdt))

    def tile_body(p: Any, i: Any, j: Any, c: Any) -> Any:
        n = tirx.floordiv(p, nh * nw)
        th = tirx.floormod(tirx.floordiv(p, nw), nh)
        tw = tirx.floormod(p, nw)
        return load(n, th * m + i, tw * m + j, c)

    # the zero-padded a x a input tile, then B^T d B in two passes (rows, then columns): each
    # a Select of alpha short sums over the tile (the bounds test is once per tile point)
    tile = te.compute((tiles, alpha, alpha, in_c), tile_body, name=INPUT_TILE)
    half = te.compute((tiles, alpha, alpha, in_c), lambda p, eps, j, c: _rows(
        bt, eps, lambda i: tile[p, i, j, c], cdt), name=INPUT_ROWS)
    v = te.compute((alpha, alpha, tiles, in_c), lambda eps, nu, p, c: _rows(
        bt, nu, lambda j: half[p, eps, j, c], cdt), name=INPUT)
    lanes = _lanes(call, out_c)
    blocks = -(-out_c // lanes)
    u_const = call.constant(1)
    if u_const is not None and call.hide is not None:
        packed = call.add_constant(pack_weight(np.asarray(u_const).astype(cdt, copy=False),
                                               lanes),
                                   "winograd_packed")
    else:
        packed = te.compute(
            (alpha, alpha, blocks, in_c, lanes),
            lambda a, b, ob, c, ol: tirx.if_then_else(
                ob * lanes + ol < out_c,
                tirx.Cast(cdt, weight[a, b, tirx.min(ob * lanes + ol, out_c - 1), c]),
                const(0, cdt)), name=PACK)
    rc = te.reduce_axis((0, in_c), name="rc")
    gemm = te.compute(
        (alpha, alpha, tiles, blocks * lanes),
        lambda a, b, p, o: te.sum(
            v[a, b, p, rc] * packed[a, b, tirx.floordiv(o, lanes), rc, tirx.floormod(o, lanes)],
            axis=rc), name=GEMM)

    # A^T M A in two passes: the columns of each tile (a stage the schedule computes per
    # tile), then the rows, read at the output position (a Select of m short sums)
    cols = te.compute((tiles, alpha, m, blocks * lanes), lambda p, a, q, o: _rows(
        at, q, lambda b: gemm[a, b, p, o], cdt), name=OUTPUT_COLS)

    def output_body(*idx: Any) -> Any:
        o = omap.coords(idx)
        h, w = o["H"], o["W"]
        p = (o["N"] * nh + tirx.floordiv(h, m)) * nw + tirx.floordiv(w, m)
        q = tirx.floormod(w, m)
        value = _rows(at, tirx.floormod(h, m), lambda a: cols[p, a, q, o["C"]], cdt)
        return tirx.Cast(odt, value)

    return te.compute(call.out_shape, output_body, name=OUTPUT)
