"""ONNX ``Resize``, ``Upsample``, ``AffineGrid`` and ``Col2Im`` as compositions of registry
operators.

Resizing is separable: each resized axis is interpolated on its own, one after another in
axis order. Along one axis of static input length ``n`` and output length ``m`` every output
position ``y`` reads ``k`` input positions (the *taps*) with fixed weights, all computed at
import time in numpy from the attributes:

* the source coordinate ``x = f(y)`` of the ``coordinate_transformation_mode``
  (``half_pixel``, ``half_pixel_symmetric``, ``pytorch_half_pixel``, ``align_corners``,
  ``asymmetric``, ``tf_crop_and_resize`` with its ``roi``);
* ``left = x - r`` where ``r`` is the fractional part of ``x``, taken as ``1`` when ``x`` is
  an integer (the left neighbour is preferred), and taps ``left + i`` for ``i`` in a window
  around ``r``: two for ``nearest`` and ``linear``, four for ``cubic``, and for
  ``antialias`` (when shrinking, scale ``s < 1``) as many as the stretched kernel covers;
* weights ``K(i - r)`` for the kernel ``K`` — the triangle ``max(0, 1 - |t|)`` for
  ``linear``, Keys' cubic with ``cubic_coeff_a`` for ``cubic``; with ``antialias`` the
  kernel is stretched, ``K(s (i - r))``, and the weights normalized to sum 1;
  ``exclude_outside`` zeroes the weights of taps outside ``[0, n)`` and renormalizes; taps
  outside are otherwise clamped to the edge;
* ``nearest`` takes the one tap its ``nearest_mode`` rounds to (``round_prefer_floor``,
  ``round_prefer_ceil``, ``floor``, ``ceil``).

In Relay, ``nearest`` is one ``take`` of the chosen indices (exact, every dtype); ``linear``
and ``cubic`` are ``take`` of the ``(m, k)`` tap indices, a ``multiply`` by the ``(m, k)``
weights and a ``sum`` over the taps (integer tensors are computed in ``float64``, rounded
half to even and saturated, as ONNX's reference does). With ``tf_crop_and_resize``, outputs
whose coordinate falls outside ``[0, n - 1]`` are ``extrapolation_value`` (a ``where``).

The output length is ``floor(n * scale)`` for ``scales``; for ``sizes`` the scale is
``m / n`` (``keep_aspect_ratio_policy`` ``not_larger``/``not_smaller`` use one scale for
every resized axis, the lengths rounded half up). ``Resize``-10 and ``Upsample`` use
``asymmetric`` coordinates, and ``nearest`` rounds down when enlarging and up when
shrinking (onnxruntime's rule for these opsets). The resized axes' input lengths, ``scales``,
``sizes`` and ``roi`` must be known at import time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, required, static
from frontends.onnx.registry import converter
from semantics.shapes import is_concrete

_ATTRS = ("mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
          "extrapolation_value", "nearest_mode", "antialias", "axes", "keep_aspect_ratio_policy")


def _text(attrs: dict[str, Any], key: str, default: str) -> str:
    v = attrs.get(key, default)
    return v.decode() if isinstance(v, bytes) else str(v)


# --- one axis: taps and weights ------------------------------------------------------------

def _source_coords(mode: str, n: int, m: int, scale: float,
                   roi: tuple[Any, Any] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The source coordinate of each output position, and which are outside the input
    (``tf_crop_and_resize`` only). ``width`` is the real-valued output length ``scale * n``."""
    y = np.arange(m, dtype=np.float64)
    width = scale * n
    outside = None
    if mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = (n / 2) * (1 - m / width)
        x = offset + (y + 0.5) / scale - 0.5
    elif mode == "pytorch_half_pixel":
        x = np.full(m, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "align_corners":
        x = np.zeros(m) if width == 1 else y * (n - 1) / (width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        if roi is None:
            raise Unsupported("tf_crop_and_resize needs the roi input")
        lo, hi = roi      # numpy scalars of the roi's dtype, computed in it as ONNX does
        x = (np.full(m, (hi - lo) * (n - 1) / 2) if width == 1
             else y * (hi - lo) * (n - 1) / (width - 1)) + lo * (n - 1)
        outside = (x < 0) | (x > n - 1)
    else:
        raise Unsupported(f"coordinate_transformation_mode {mode!r} is not supported")
    return x, outside


def _keys_cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _taps(kind: str, ratio: np.ndarray, scale: float, antialias: bool, cubic_a: float,
          nearest: str) -> tuple[int, np.ndarray]:
    """The first tap offset ``start`` (taps ``left + start + j``) and the ``(m, k)`` weights."""
    if kind == "nearest":
        if nearest == "round_prefer_floor":
            right = ratio > 0.5
        elif nearest == "round_prefer_ceil":
            right = ratio >= 0.5
        elif nearest == "floor":
            right = np.zeros_like(ratio, dtype=bool)
        elif nearest == "ceil":
            right = np.ones_like(ratio, dtype=bool)
        else:
            raise Unsupported(f"nearest_mode {nearest!r} is not supported")
        right = right | (ratio == 1.0)
        return 0, np.stack([~right, right], axis=1).astype(np.float64)
    s = min(scale, 1.0) if antialias else 1.0
    reach = 1 if kind == "linear" else 2
    start = int(math.floor(-reach / s) + 1) if antialias else 1 - reach
    offsets = np.arange(start, 1 - start + 1, dtype=np.float64)[None, :]
    t = (offsets - ratio[:, None]) * s
    w = np.clip(1 - np.abs(t), 0, 1) if kind == "linear" else _keys_cubic(t, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    return start, w


def axis_plan(kind: str, n: int, m: int, scale: float, coord: str,
              roi: tuple[Any, Any] | None, *, antialias: bool = False,
              cubic_a: float = -0.75, exclude_outside: bool = False,
              nearest: str = "round_prefer_floor"
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """For one axis: the ``(m, k)`` input indices (clamped to ``[0, n)``), their weights and
    the outputs that are ``extrapolation_value`` (or None)."""
    x, outside = _source_coords(coord, n, m, scale, roi)
    floor = np.floor(x)
    ratio = np.where(x == floor, 1.0, x - floor)
    left = (x - ratio).round().astype(np.int64)
    start, w = _taps(kind, ratio, scale, antialias, cubic_a, nearest)
    idx = left[:, None] + start + np.arange(w.shape[1])[None, :]
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= n), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n - 1), w, outside


# --- the converters ------------------------------------------------------------------------

def _resize_axis(x: Value, axis: int, idx: np.ndarray, w: np.ndarray,
                 outside: np.ndarray | None, kind: str, extrapolation: float) -> Value:
    m = idx.shape[0]
    trailing = (1,) * (x.ndim - axis - 1)
    if kind == "nearest":
        pick = idx[np.arange(m), np.argmax(w, axis=1)]
        y = call("take", [x, const(pick.astype(np.int64))], axis=axis, mode="clip")
    else:
        taps = call("take", [x, const(idx.astype(np.int64))], axis=axis, mode="clip")
        weights = const(w.reshape((m, w.shape[1]) + trailing).astype(x.dtype))
        y = call("sum", [call("multiply", [taps, weights])], axis=(axis + 1,))
    if outside is not None and outside.any():
        mask = const(outside.reshape((m,) + trailing))
        y = call("where", [mask, const(np.asarray(extrapolation, dtype=x.dtype)), y])
    return y


def _floats(v: Value | None) -> list[Any] | None:
    """The static values of ``v`` as numpy scalars (None when absent or empty)."""
    if v is None:
        return None
    arr = np.asarray(static(v, "Resize scales, sizes and roi")).reshape(-1)
    return None if arr.size == 0 else list(arr)


def _targets(x: Value, axes: list[int], scales: list[Any] | None,
             sizes: list[Any] | None, policy: str) -> list[tuple[int, int, int, float]]:
    """``(axis, n, m, scale)`` for each axis of ``axes`` in axis order."""
    shape = x.shape
    for a in axes:
        if not is_concrete(shape[a]):
            raise Unsupported(f"Resize needs a static length along axis {a}, got {shape}")
    lengths = [int(shape[a]) for a in axes]
    if sizes is not None:
        if len(sizes) != len(axes):
            raise Unsupported(f"Resize sizes {sizes} do not match the axes {axes}")
        ratios = [int(s) / n for s, n in zip(sizes, lengths)]
        outs = [int(s) for s in sizes]
        if policy in ("not_larger", "not_smaller"):
            one = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [one] * len(axes)
            outs = [int(one * n + 0.5) for n in lengths]
        elif policy != "stretch":
            raise Unsupported(f"keep_aspect_ratio_policy {policy!r} is not supported")
    elif scales is not None:
        if len(scales) != len(axes):
            raise Unsupported(f"Resize scales {scales} do not match the axes {axes}")
        ratios = [float(s) for s in scales]
        outs = [int(math.floor(s * n)) for s, n in zip(scales, lengths)]
    else:
        raise Unsupported("Resize needs scales or sizes")
    if any(r <= 0 for r in ratios):
        raise Unsupported(f"Resize scales must be positive, got {ratios}")
    return sorted(zip(axes, lengths, outs, ratios))


def _roi_pairs(roi: list[Any] | None, axes: list[int]) -> dict[int, tuple[Any, Any]]:
    if roi is None:
        return {}
    k = len(axes)
    if len(roi) != 2 * k:
        raise Unsupported(f"Resize roi {roi} does not have 2 x {k} values")
    return {a: (roi[i], roi[k + i]) for i, a in enumerate(axes)}


def resize(x: Value, attrs: dict[str, Any], scales: list[Any] | None,
           sizes: list[Any] | None, roi: list[Any] | None, legacy: bool) -> Value:
    kind = _text(attrs, "mode", "nearest")
    if kind not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"Resize mode {kind!r} is not supported")
    coord = "asymmetric" if legacy else _text(attrs, "coordinate_transformation_mode",
                                              "half_pixel")
    axes = [int(a) % x.ndim for a in attrs.get("axes", range(x.ndim))]
    antialias = bool(attrs.get("antialias", 0))
    if antialias and kind == "nearest":
        raise Unsupported("Resize antialias needs mode linear or cubic")
    pairs = _roi_pairs(roi, axes) if coord == "tf_crop_and_resize" else {}
    extrapolation = float(attrs.get("extrapolation_value", 0.0))
    dtype = x.dtype
    if kind != "nearest" and not dtype.startswith("float"):
        # Integers are interpolated in float64, then rounded and saturated once at the end.
        x = call("cast", [x], dtype="float64")
    for axis, n, m, scale in _targets(x, axes, scales, sizes,
                                      _text(attrs, "keep_aspect_ratio_policy", "stretch")):
        pair = pairs.get(axis)
        if m == n and math.isclose(scale, 1.0) and (
                pair is None or (math.isclose(pair[0], 0) and math.isclose(pair[1], 1))):
            continue        # unchanged along this axis
        if m == 0:
            x = call("take", [x, const(np.zeros(0, np.int64))], axis=axis, mode="clip")
            continue
        nearest = (("floor" if scale >= 1 else "ceil") if legacy
                   else _text(attrs, "nearest_mode", "round_prefer_floor"))
        idx, w, outside = axis_plan(
            kind, n, m, scale, coord, pair, antialias=antialias,
            cubic_a=float(attrs.get("cubic_coeff_a", -0.75)),
            exclude_outside=bool(attrs.get("exclude_outside", 0)), nearest=nearest)
        x = _resize_axis(x, axis, idx, w, outside, kind, extrapolation)
    if x.dtype != dtype:
        x = _saturate(x, dtype)
    return x


def _saturate(y: Value, dtype: str) -> Value:
    """``y`` (float64) rounded half to even, clipped to ``dtype``'s range and cast."""
    y = call("round", [y])
    if dtype != "bool":
        info = np.iinfo(np.dtype(dtype))
        y = call("clip", [y], a_min=float(info.min), a_max=float(info.max))
    return call("cast", [y], dtype=dtype)


@converter("Resize", attrs=_ATTRS)
def _resize(ctx: Any, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    x = required(ins, 0)
    if ctx.opset < 11:
        return [resize(x, attrs, _floats(required(ins, 1)), None, None, legacy=True)]

    def opt(i: int) -> Value | None:
        return ins[i] if len(ins) > i else None

    if _text(attrs, "coordinate_transformation_mode", "") == "tf_half_pixel_for_nn":
        raise Unsupported("coordinate_transformation_mode tf_half_pixel_for_nn is not supported")
    return [resize(x, attrs, _floats(opt(2)), _floats(opt(3)), _floats(opt(1)), legacy=False)]


@converter("Upsample", attrs=("mode", "scales"))
def _upsample(ctx: Any, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    x = required(ins, 0)
    scales = ([float(s) for s in attrs["scales"]] if "scales" in attrs
              else _floats(required(ins, 1)))
    return [resize(x, {"mode": attrs.get("mode", b"nearest")}, scales, None, None,
                   legacy=True)]


def _grid_axis(n: int, align_corners: bool) -> np.ndarray:
    """The normalized coordinates in ``[-1, 1]`` of ``n`` positions: the corners' centres
    (``align_corners``) or the cells' centres."""
    i = np.arange(n, dtype=np.float64)
    if align_corners:
        return -1 + 2 * i / (n - 1) if n > 1 else np.full(n, -1.0)
    return -1 + (2 * i + 1) / n


@converter("AffineGrid", attrs=("align_corners",))
def _affine_grid(ctx: Any, node: Any, ins: list[Value | None],
                 attrs: dict[str, Any]) -> list[Value]:
    """``grid[n, p] = theta[n] @ (x, y[, z], 1)`` for every output position ``p``: the base
    grid of homogeneous coordinates is a constant (``x`` along the last axis), the product an
    ``nn.batch_matmul`` with ``theta`` transposed."""
    theta = required(ins, 0)
    size = [int(s) for s in np.asarray(static(required(ins, 1), "the AffineGrid size"))]
    spatial = size[2:]
    k = len(spatial)
    if k not in (2, 3) or theta.static_shape()[1:] != (k, k + 1):
        raise Unsupported(f"AffineGrid theta {theta.shape} does not fit size {size}")
    axes = [_grid_axis(n, bool(attrs.get("align_corners", 0))) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")           # one array per spatial axis
    coords = [m.reshape(-1) for m in reversed(mesh)]   # x (last axis) first
    base = np.stack(coords + [np.ones(coords[0].size)], axis=1).astype(theta.dtype)
    batch = theta.static_shape()[0]
    grid = call("broadcast_to", [const(base[None])], shape=(batch,) + base.shape)
    out = call("nn.batch_matmul", [grid, theta], transpose_b=True)
    return [call("reshape", [out], newshape=(batch, *spatial, k))]


@converter("Col2Im", attrs=("dilations", "pads", "strides"))
def _col2im(ctx: Any, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    """The columns ``(N, C·∏block, L)`` summed back into the image ``(N, C, *image)``: each
    (block offset, location) pair lands on one image position or in the padding. That map is
    a constant 0/1 matrix, applied with one ``nn.dense`` over the ``N·C`` rows."""
    x = required(ins, 0)
    image = [int(v) for v in np.asarray(static(required(ins, 1), "the Col2Im image shape"))]
    block = [int(v) for v in np.asarray(static(required(ins, 2), "the Col2Im block shape"))]
    k = len(image)
    dil = [int(v) for v in attrs.get("dilations", [1] * k)]
    strides = [int(v) for v in attrs.get("strides", [1] * k)]
    pads = [int(v) for v in attrs.get("pads", [0] * 2 * k)]
    locs = [(image[d] + pads[d] + pads[k + d] - (dil[d] * (block[d] - 1) + 1)) // strides[d] + 1
            for d in range(k)]
    n, cb, length = x.static_shape()
    nb, nl = int(np.prod(block)), int(np.prod(locs))
    if cb % nb or length != nl:
        raise Unsupported(f"Col2Im input {x.shape} does not fit block {block} and {nl} "
                          f"locations")
    b_idx = np.indices(block).reshape(k, -1)            # (k, nb)
    l_idx = np.indices(locs).reshape(k, -1)             # (k, nl)
    pos = (l_idx[:, None, :] * np.array(strides)[:, None, None]
           - np.array(pads[:k])[:, None, None]
           + b_idx[:, :, None] * np.array(dil)[:, None, None])      # (k, nb, nl)
    inside = np.all((pos >= 0) & (pos < np.array(image)[:, None, None]), axis=0)
    flat = np.ravel_multi_index(tuple(np.where(inside, pos, 0)), image)   # (nb, nl)
    m = np.zeros((int(np.prod(image)), nb * nl), x.dtype)
    cols = np.arange(nb * nl).reshape(nb, nl)
    m[flat[inside], cols[inside]] = 1
    rows = call("reshape", [x], newshape=(n * (cb // nb), nb * nl))
    out = call("nn.dense", [rows, const(m)])
    return [call("reshape", [out], newshape=(n, cb // nb, *image))]
