"""Winograd convolution (family ``nn``): TVM's ``nn.contrib_conv2d_winograd_weight_transform``
and ``nn.contrib_conv2d_winograd_without_weight_transform``.

A convolution with an ``r x r`` kernel, stride 1, dilation 1 and one group computes each
``m x m`` tile of its output from an ``a x a`` tile of its (padded) input, ``a = m + r - 1``,
as ``Y = A^T [ (G g G^T) (.) (B^T d B) ] A`` summed over the input channels (Lavin and Gray,
"Fast Algorithms for Convolutional Neural Networks", 2016): ``F(m x m, r x r)``, with ``m`` the
``tile_size`` attribute. ``(.)`` is the elementwise product; summed over the channels it
becomes one matrix product per point ``(eps, nu)`` of the ``a x a`` transformed domain.
The two operators split this as TVM's AlterOpLayout does, so that the weight's part can be
computed once, at build time (FoldConstant):

* ``nn.contrib_conv2d_winograd_weight_transform(w, tile_size)``: ``w`` an ``OIHW`` kernel
  ``(O, I, r, r)``; the result ``U = G w G^T`` of shape ``(a, a, O, I)`` (TVM's
  ``Conv2DWinogradWeightTransformRel``).
* ``nn.contrib_conv2d_winograd_without_weight_transform(x, U, tile_size, ...)``: the
  convolution of ``x`` (data layout ``data_layout``: any permutation of ``NCHW``, the channel
  axis maybe blocked, ``NCHW16c``) with the kernel whose transform is ``U``
  ``(a, a, O, I)``: input transform ``V = B^T d B`` of every input tile (the input zero-padded
  by ``padding``, and at the bottom/right up to whole tiles), ``M = sum_c U[., ., o, c] V[c]``,
  output transform ``A^T M A``, the result cropped to the convolution's extent
  ``H + pad_top + pad_bottom - r + 1`` (and ``W`` likewise). Attributes as TVM's
  ``Conv2DWinogradAttrs``; the relation accepts only what the algorithm computes: strides,
  dilation 1, groups 1, ``kernel_layout`` ``OIHW`` (the layout of the kernel ``U`` is the
  transform of), float dtypes. ``channels`` and ``kernel_size``, when given, must agree with
  ``U``.

The matrices (:func:`winograd_matrices`) are the Cook-Toom construction on the interpolation
points ``0, 1, -1, 2, -2, 1/2, -1/2`` (as many as ``a - 1`` needs) and the point at infinity,
computed in exact rational arithmetic: ``F(2x2, 3x3)`` gets the classic ``0, +-1``
matrices, ``F(4x4, 3x3)`` ``0, +-1, +-2``. ``a`` is at most :data:`MAX_ALPHA` (8): beyond it the
transform's rounding error grows past float32's use (Lavin and Gray, section 5). Only the
pair ``weight_transform`` / ``without_weight_transform`` with the same ``tile_size`` is a
convolution; a ``U`` from elsewhere is simply multiplied as the definition says.

References (numpy, exact for the definition above): each transform applies its matrix along
one axis at a time (``B^T d B``: rows then columns; ``A^T M A``: columns then rows;
``G w G^T``: the kernel's rows then columns) summing only the non-zero terms (so an infinite
input never meets a zero coefficient: no NaN the algorithm does not compute), in the output
dtype (float16 through float32); the oracle runs the algorithm itself, and a
Winograd convolution agrees with ``nn.conv2d`` within a float tolerance (the transforms add
rounding: about 1e-6 relative for ``F(4x4, 3x3)`` in float32), not bit for bit.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from semantics.ops import attr_checks as T
from semantics.ops import nn_relations as N
from semantics.ops.nn import CONV_ATTRS, from_nchw, to_nchw
from semantics.ops.reference import reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, register_op, relation_error
from semantics.ops.relations import FLOAT, require_dtype_class
from semantics.ops.transform_relations import ArgTypes, expect_tensors, unify_dims
from semantics.shapes import DimSolver, dim_add
from semantics.types import TensorType, Type

__all__ = ["MAX_ALPHA", "POINTS", "WEIGHT_TRANSFORM", "WITHOUT_WEIGHT_TRANSFORM",
           "winograd_matrices", "winograd_rationals"]

FAMILY = "nn"
WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_weight_transform"
WITHOUT_WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_without_weight_transform"

MAX_ALPHA = 8
"""The largest transformed tile ``a = tile_size + r - 1`` the operators accept."""

POINTS = (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2), Fraction(1, 2),
          Fraction(-1, 2))
"""The finite interpolation points, in the order they are taken (``a - 1`` of them)."""


def _poly_mul(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


@lru_cache(maxsize=64)
def winograd_rationals(m: int, r: int) -> tuple[tuple[tuple[Fraction, ...], ...], ...]:
    """``(A^T, B^T, G)`` of ``F(m, r)`` as exact rationals: ``A^T`` is ``m x a``, ``B^T``
    ``a x a``, ``G`` ``a x r`` (``a = m + r - 1``; module docstring).

    Construction: with the points ``p_j`` and ``f_j = prod_{l != j} (p_j - p_l)``, row ``j``
    of ``A`` evaluates a degree-``m - 1`` polynomial at ``p_j`` and row ``j`` of ``G`` one of
    degree ``r - 1``, scaled by ``1 / f_j``; column ``j`` of ``C = B`` holds the coefficients of
    ``prod_{l != j} (x - p_l)`` (Lagrange interpolation), the last row/column the point at
    infinity (the leading coefficients, and ``prod_l (x - p_l)``). Then ``C [(A h) (.) (G g)]``
    is the linear convolution of ``h`` and ``g``, and its transpose ``A^T [(G g) (.) (B^T d)]``
    the correlation of ``d`` with ``g`` that a convolution layer computes.
    """
    alpha = m + r - 1
    points = POINTS[:alpha - 1]
    a_rows = [[p ** i for i in range(m)] for p in points] + [
        [Fraction(int(i == m - 1)) for i in range(m)]]
    g_rows: list[list[Fraction]] = []
    c_cols: list[list[Fraction]] = []
    for j, p in enumerate(points):
        f = Fraction(1)
        poly = [Fraction(1)]
        for q in points[:j] + points[j + 1:]:
            f *= p - q
            poly = _poly_mul(poly, [-q, Fraction(1)])
        g_rows.append([p ** k / f for k in range(r)])
        c_cols.append(poly + [Fraction(0)] * (alpha - len(poly)))
    g_rows.append([Fraction(int(k == r - 1)) for k in range(r)])
    full = [Fraction(1)]
    for q in points:
        full = _poly_mul(full, [-q, Fraction(1)])
    c_cols.append(full)
    at = tuple(tuple(a_rows[j][i] for j in range(alpha)) for i in range(m))
    bt = tuple(tuple(col) for col in c_cols)  # B^T = C^T: row j of B^T is column j of C
    g = tuple(tuple(row) for row in g_rows)
    return at, bt, g


@lru_cache(maxsize=64)
def winograd_matrices(m: int, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A^T, B^T, G)`` of ``F(m, r)`` as float64 arrays (:func:`winograd_rationals`)."""
    out = []
    for mat in winograd_rationals(m, r):
        arr = np.array([[float(v) for v in row] for row in mat], dtype=np.float64)
        arr.setflags(write=False)
        out.append(arr)
    return out[0], out[1], out[2]


def _check_alpha(rel: str, arg_types: ArgTypes, tile: int, r: Any) -> None:
    if isinstance(r, int) and (r < 1 or tile + r - 1 > MAX_ALPHA):
        raise relation_error(rel, arg_types, f"F({tile}x{tile}, {r}x{r}) needs a transformed "
                                             f"tile of {tile + r - 1}: at most {MAX_ALPHA} "
                                             f"is supported")


# --- relations -----------------------------------------------------------------------------

def _weight_transform_rel(arg_types: ArgTypes, attrs: Any, solver: DimSolver) -> Type | None:
    rel = "Conv2DWinogradWeightTransform"
    ts = expect_tensors(rel, arg_types, 1)
    if ts is None:
        return None
    (w,) = ts
    require_dtype_class(rel, arg_types, w.dtype, FLOAT)
    if w.ndim != 4:
        raise relation_error(rel, arg_types, "the kernel must be 4-d OIHW (O, I, r, r)")
    o, i, kh, kw = w.shape
    r = unify_dims(solver, rel, arg_types, kh, kw, "a square kernel (KH = KW)")
    tile = attrs["tile_size"]
    _check_alpha(rel, arg_types, tile, r)
    alpha = dim_add(tile, r, -1)
    return TensorType((alpha, alpha, o, i), w.dtype)


def _winograd_rel(arg_types: ArgTypes, attrs: Any, solver: DimSolver) -> Type | None:
    rel = "Conv2DWinograd"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    data, weight = ts
    for name, value in (("strides", attrs["strides"]), ("dilation", attrs["dilation"])):
        if N.pair(value) != (1, 1):
            raise relation_error(rel, arg_types, f"Winograd convolution needs {name} 1, got "
                                                 f"{list(value)}")
    if attrs["groups"] != 1:
        raise relation_error(rel, arg_types, f"Winograd convolution needs groups 1, got "
                                             f"{attrs['groups']}")
    if attrs["kernel_layout"] != "OIHW":
        raise relation_error(rel, arg_types, f"the transformed weight comes from an OIHW "
                                             f"kernel: kernel_layout must be OIHW, got "
                                             f"{attrs['kernel_layout']!r}")
    data_axes = N.conv_layout(attrs["data_layout"], "NCHW", "C")
    out_axes = N.conv_layout(attrs["out_layout"] or attrs["data_layout"], "NCHW", "C")
    if data.ndim != len(data_axes) or weight.ndim != 4:
        raise relation_error(rel, arg_types, f"data must be {len(data_axes)}-d (layout "
                                             f"{attrs['data_layout']}) and the transformed "
                                             f"weight 4-d (a, a, O, I)")
    for t in ts:
        require_dtype_class(rel, arg_types, t.dtype, FLOAT)
    out_dtype = attrs["out_dtype"] or data.dtype
    require_dtype_class(rel, arg_types, out_dtype, FLOAT)
    n, c, h, w = N.unblocked_dims(rel, arg_types, solver, data.shape, data_axes, "NCHW")
    alpha = unify_dims(solver, rel, arg_types, weight.shape[0], weight.shape[1],
                       "a square transformed tile (a x a)")
    o, i = weight.shape[2], weight.shape[3]
    unify_dims(solver, rel, arg_types, c, i, "data channels vs. the weight's input channels")
    tile = attrs["tile_size"]
    r = dim_add(alpha, 1 - tile)
    if isinstance(r, int) and r < 1:
        raise relation_error(rel, arg_types, f"a transformed tile of {alpha} is smaller than "
                                             f"tile_size {tile}")
    _check_alpha(rel, arg_types, tile, r)
    if attrs["channels"] is not None:
        o = unify_dims(solver, rel, arg_types, o, attrs["channels"], "channels attribute")
    if attrs["kernel_size"] is not None:
        for k in N.pair(attrs["kernel_size"]):
            r = unify_dims(solver, rel, arg_types, r, k, "kernel_size attribute vs. the "
                                                         "transformed tile - tile_size + 1")
    pt, pl, pb, pr = N.pad4(attrs["padding"])
    oh = N.window_out_dim(rel, arg_types, h, r, pt, pb, 1, 1)
    ow = N.window_out_dim(rel, arg_types, w, r, pl, pr, 1, 1)
    dims = {"N": n, "C": o, "H": oh, "W": ow}
    return TensorType(N.blocked_shape(rel, arg_types, dims, out_axes), out_dtype)


WEIGHT_TRANSFORM_REL = Relation(
    "Conv2DWinogradWeightTransform", _weight_transform_rel,
    "OIHW kernel (O, I, r, r) to its Winograd transform (a, a, O, I), a = tile_size + r - 1")
WINOGRAD_REL = Relation(
    "Conv2DWinograd", _winograd_rel,
    "Winograd convolution: data and a transformed weight (a, a, O, I); output as a stride-1 "
    "conv2d with kernel a - tile_size + 1")


# --- references ----------------------------------------------------------------------------

def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _apply(matrix: np.ndarray, x: np.ndarray, axis: int,
           out: np.ndarray | None = None) -> np.ndarray:
    """``matrix`` applied along ``axis`` of ``x`` (that axis becomes ``matrix``'s rows), each
    output the sum of the non-zero terms only, in column order, starting from the first term
    (not from +0.0: a lone -0.0 term stays -0.0): a zero coefficient never multiplies an
    infinity into a NaN. The compiled kernels sum exactly these terms in this order.

    ``out``: where to write the result (of the result's shape and ``x``'s dtype, any strides;
    returned), instead of a new array."""
    x = np.moveaxis(x, axis, 0)
    if out is None:
        out = np.empty((len(matrix), *x.shape[1:]), dtype=x.dtype)
    else:
        out = np.moveaxis(out, axis, 0)
    scratch: np.ndarray | None = None
    for acc, row in zip(out, matrix, strict=True):   # summed in place: no temporary arrays
        first = True
        for a, coef in enumerate(row):
            if coef == 0.0:
                continue
            if coef == 1.0:
                if first:
                    np.copyto(acc, x[a])
                else:
                    np.add(acc, x[a], out=acc)
                first = False
                continue
            if first:
                term = acc
            else:
                scratch = np.empty_like(acc) if scratch is None else scratch
                term = scratch
            if coef == -1.0:
                np.negative(x[a], out=term)
            else:
                np.multiply(x.dtype.type(coef), x[a], out=term)
            if not first:
                np.add(acc, term, out=acc)
            first = False
        if first:
            acc[...] = 0
    return np.moveaxis(out, 0, axis)


def _weight_transform(out: Type, weight: np.ndarray, tile_size: int) -> np.ndarray:
    r = weight.shape[2]
    _, _, g = winograd_matrices(tile_size, r)
    # In (H, W, O, I) order every term of a sum is a contiguous (O, I) slab, and the result
    # comes out in its (a, a, O, I) order: the same terms and sums as on OIHW, 5-10x faster.
    cdt = _compute_dtype(weight.dtype)
    w = np.transpose(weight, (2, 3, 0, 1)).astype(cdt, order="C")
    rows = _apply(g, w, 0)                       # G w G^T: the kernel's rows, then columns
    # (the columns written in place in the (a, a, O, I) result: no transposing copy of
    # the largest array, 2-4x the weight)
    u = _apply(g, rows, 1, out=np.empty((len(g), len(g), *w.shape[2:]), dtype=cdt))
    return u if u.dtype == weight.dtype else u.astype(weight.dtype, order="C")


def _without_weight_transform(out: Type, data: np.ndarray, weight: np.ndarray, *,
                              tile_size: int, strides: Any, padding: Any, dilation: Any,
                              groups: int, channels: Any, kernel_size: Any, data_layout: str,
                              kernel_layout: str, out_layout: str, out_dtype: str
                              ) -> np.ndarray:
    assert isinstance(out, TensorType)
    odt = np.dtype(out.dtype)
    cdt = _compute_dtype(odt)
    m = tile_size
    alpha = weight.shape[0]
    r = alpha - m + 1
    at, bt, _ = winograd_matrices(m, r)
    x = to_nchw(data, data_layout).astype(cdt)
    batch, _, h, w = x.shape
    pt, pl, pb, pr = N.pad4(padding)
    oh, ow = h + pt + pb - r + 1, w + pl + pr - r + 1
    o = weight.shape[2]
    if min(batch, o, oh, ow) <= 0:
        res = np.zeros((batch, o, max(oh, 0), max(ow, 0)), dtype=odt)
        return from_nchw(res, out_layout or data_layout)
    nh, nw = -(-oh // m), -(-ow // m)
    ph, pw = nh * m + r - 1, nw * m + r - 1
    padded = np.zeros(x.shape[:2] + (ph, pw), dtype=cdt)
    hh, ww = min(h, ph - pt), min(w, pw - pl)
    padded[:, :, pt:pt + hh, pl:pl + ww] = x[:, :, :hh, :ww]
    # d[n, c, th, tw, i, j] = padded[n, c, th*m + i, tw*m + j]
    win = np.lib.stride_tricks.sliding_window_view(padded, (alpha, alpha), axis=(2, 3))
    d = np.ascontiguousarray(win[:, :, ::m, ::m][:, :, :nh, :nw])
    v = _apply(bt, _apply(bt, d, 4), 5)           # B^T d B: rows, then columns
    # the channel sum starts from +0.0, as a compiled reduction does (a sum of -0.0 is +0.0)
    mm = np.einsum("aboc,ncxyab->noxyab", weight.astype(cdt), v) + cdt.type(0)
    y = _apply(at, _apply(at, mm, 5), 4)          # A^T M A: columns, then rows
    res = np.transpose(y, (0, 1, 2, 4, 3, 5)).reshape(batch, o, nh * m, nw * m)
    return from_nchw(res[:, :, :oh, :ow].astype(odt), out_layout or data_layout)


register_op(
    WEIGHT_TRANSFORM, num_inputs=1, relation=WEIGHT_TRANSFORM_REL,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    impl=reference(WEIGHT_TRANSFORM, WEIGHT_TRANSFORM_REL, _weight_transform),
    attrs=(AttrSpec("tile_size", "int", required=True, check=T.check_at_least(1),
                    doc="m of F(m x m, r x r)"),),
    doc="Winograd transform G w G^T of an OIHW kernel (O, I, r, r), shaped (a, a, O, I) with "
        "a = tile_size + r - 1.",
    family=FAMILY)

register_op(
    WITHOUT_WEIGHT_TRANSFORM, num_inputs=2, relation=WINOGRAD_REL,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    impl=reference(WITHOUT_WEIGHT_TRANSFORM, WINOGRAD_REL, _without_weight_transform),
    attrs=(AttrSpec("tile_size", "int", required=True, check=T.check_at_least(1),
                    doc="m of F(m x m, r x r)"),
           *CONV_ATTRS),
    doc="Stride-1 2-d convolution by Winograd's F(m x m, r x r) with an already transformed "
        "weight (a, a, O, I); data in NCHW (any permutation, the channels maybe blocked).",
    family=FAMILY)
