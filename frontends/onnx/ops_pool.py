"""ONNX pooling operators → Relay: ``MaxPool``/``AveragePool`` (1-D through a height-1
image, 2-D, and 3-D as two 2-D poolings; MaxPool's ``Indices`` output in 2-D), ``LpPool``,
``GlobalAveragePool``/``GlobalMaxPool``.

ONNX's ``ceil_mode`` extent (a last window starting in the end padding is dropped) is
applied by slicing the 2-D pooling's result when it differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req, scalar
from frontends.onnx.ops_nn import _as_2d, _pads, _spatial2d
from frontends.onnx.registry import converter


def _onnx_pool_extent(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil: bool) -> int:
    """ONNX's pooled extent (with ceil_mode, a last window starting in the end padding is
    dropped)."""
    eff = (k - 1) * d + 1
    num = size + pb + pe - eff
    if not ceil:
        return num // s + 1
    out = -(-num // s) + 1
    if (out - 1) * s >= size + pb:
        out -= 1
    return out


@converter("MaxPool", "AveragePool",
           attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides",
                  "storage_order", "count_include_pad"))
def _pool(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    with_indices = len(node.output) > 1 and bool(node.output[1])
    if with_indices and x.ndim != 4:
        raise Unsupported("the Indices output of MaxPool is supported for 2-D pooling only")
    if x.ndim == 3:
        (y,) = _pool(ctx, node, [call("expand_dims", [x], axis=2)], _as_2d(attrs))
        return [call("squeeze", [y], axis=(2,))]
    if x.ndim == 5:
        return [_pool3d(ctx, node, x, attrs)]
    _spatial2d(x, "pooling")
    kernel = [int(k) for k in attrs["kernel_shape"]]
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dil = [int(d) for d in attrs.get("dilations", [1, 1])]
    ceil = bool(attrs.get("ceil_mode", 0))
    pads = _pads(node, attrs, x, kernel, strides, dil, ceil)
    if with_indices:
        return _max_pool_with_indices(x, kernel, strides, dil, pads, ceil,
                                      int(attrs.get("storage_order", 0)))
    common: dict[str, Any] = dict(pool_size=tuple(kernel), strides=tuple(strides),
                                  dilation=tuple(dil), padding=tuple(pads), ceil_mode=ceil)
    if node.op_type == "MaxPool":
        y = call("nn.max_pool2d", [x], **common)
    else:
        auto = attrs.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else str(auto)
        include = bool(attrs.get("count_include_pad", 0))
        if auto.startswith("SAME"):
            include = False
        y = call("nn.avg_pool2d", [x], count_include_pad=include, **common)
    if ceil:
        hw = x.static_shape()[2:]
        want = tuple(_onnx_pool_extent(hw[i], kernel[i], strides[i], dil[i], pads[i], pads[i + 2],
                                       True) for i in range(2))
        have = y.static_shape()
        if have[2:] != want:
            y = call("strided_slice", [y], begin=(0, 0, 0, 0), end=have[:2] + want,
                     strides=(1, 1, 1, 1))
    return [y]


def _pool3d(ctx: Context, node: Any, x: Value, attrs: dict[str, Any]) -> Value:
    """3-D (NCDHW) max or average pooling as two 2-D poolings: over (H, W) with the depth
    folded into the channels, then over D with a ``(kd, 1)`` window.

    Exact for max pooling (a box window is the product of its per-axis windows, and max
    is associative). For averages, the taps counted in a window (inside the data, or the
    padded data with ``count_include_pad``) are the product of the per-axis counts, so
    dividing by the (H, W) count and then by the D count is the same mean (rounded twice).
    """
    n, c, d, h, w = x.static_shape()
    kernel = [int(k) for k in attrs["kernel_shape"]]
    strides = [int(s) for s in attrs.get("strides", [1, 1, 1])]
    dil = [int(v) for v in attrs.get("dilations", [1, 1, 1])]
    pads = _pads(node, attrs, x, kernel, strides, dil)
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    include = int(attrs.get("count_include_pad", 0)) and not auto.startswith("SAME")
    ceil = int(attrs.get("ceil_mode", 0))

    def stage(v: Value, k: list[int], s: list[int], dl: list[int], p: list[int]) -> Value:
        sub = {"kernel_shape": k, "strides": s, "dilations": dl, "pads": p,
               "ceil_mode": ceil, "count_include_pad": int(include)}
        (y,) = _pool(ctx, node, [v], sub)
        return y

    hw_in = call("reshape", [x], newshape=(n, c * d, h, w))
    hw_out = stage(hw_in, kernel[1:], strides[1:], dil[1:],
                   [pads[1], pads[2], pads[4], pads[5]])
    _, _, oh, ow = hw_out.static_shape()
    d_in = call("reshape", [hw_out], newshape=(n, c, d, oh * ow))
    d_out = stage(d_in, [kernel[0], 1], [strides[0], 1], [dil[0], 1], [pads[0], 0, pads[3], 0])
    od = d_out.static_shape()[2]
    return call("reshape", [d_out], newshape=(n, c, od, oh, ow))


def _max_pool_with_indices(x: Value, kernel: list[int], strides: list[int], dil: list[int],
                           pads: list[int], ceil: bool, storage_order: int) -> list[Value]:
    """2-D max pooling with ONNX's ``Indices`` output, from the window taps.

    Each of the ``kh * kw`` taps is a strided slice of the input padded with ``-inf`` (so a
    padding tap never wins); the taps are stacked, the maximum and its ``argmax`` (the first
    tap in row-major window order on ties, as the ONNX reference) are taken along the
    stack, and the tap number becomes the flat input index ``((n * C + c) * H + h) * W + w``
    (``... + w * H + h`` with ``storage_order=1``) through a static table.
    """
    n, c, h, w = x.static_shape()
    kh, kw = kernel
    oh = _onnx_pool_extent(h, kh, strides[0], dil[0], pads[0], pads[2], ceil)
    ow = _onnx_pool_extent(w, kw, strides[1], dil[1], pads[1], pads[3], ceil)
    # Pad the end enough for the last window (ceil mode may reach past the given padding).
    end_h = max(pads[2], (oh - 1) * strides[0] + (kh - 1) * dil[0] + 1 - h - pads[0])
    end_w = max(pads[3], (ow - 1) * strides[1] + (kw - 1) * dil[1] + 1 - w - pads[1])
    if not x.dtype.startswith("float"):
        raise Unsupported("MaxPool with Indices is supported for float tensors only")
    xp = call("nn.pad", [x, scalar(-np.inf, x)],
              pad_width=((0, 0), (0, 0), (pads[0], end_h), (pads[1], end_w)))
    taps, table = [], []
    hs = np.arange(oh)[:, None] * strides[0] - pads[0]
    ws = np.arange(ow)[None, :] * strides[1] - pads[1]
    for i in range(kh):
        for j in range(kw):
            b_h, b_w = i * dil[0], j * dil[1]
            taps.append(call("strided_slice", [xp], begin=(0, 0, b_h, b_w),
                             end=(n, c, b_h + (oh - 1) * strides[0] + 1,
                                  b_w + (ow - 1) * strides[1] + 1),
                             strides=(1, 1, strides[0], strides[1])))
            hh, ww = hs + b_h, ws + b_w
            table.append(hh * w + ww if storage_order == 0 else hh + ww * h)
    stacked = call_tuple("stack", taps, axis=0)
    values = call("max", [stacked], axis=(0,))
    tap = call("cast", [call("argmax", [stacked], axis=(0,))], dtype="int64")
    grid = (np.arange(oh)[:, None] * ow + np.arange(ow)[None, :]).astype(np.int64)
    flat = call("add", [call("multiply", [tap, const(np.int64(oh * ow))]), const(grid)])
    within = call("take", [const(np.stack(table).astype(np.int64).reshape(-1)), flat], axis=0)
    base = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    return [values, call("add", [within, const(base)])]


class _AsAveragePool:
    """A stand-in node for :func:`_pool`: ``LpPool``'s window sums are average pools."""

    op_type = "AveragePool"

    def __init__(self, node: Any) -> None:
        self.output = list(node.output)[:1]


@converter("LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads",
                            "strides"))
def _lp_pool(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    """``(sum of |x|**p over the window) ** (1 / p)``, padding adding zeros: the window sum
    is an average pool counting the padding, times the window's tap count (every window
    lies inside the padded input when ``ceil_mode`` is 0). 1-, 2- and 3-D."""
    x = _req(ins, 0)
    if attrs.get("ceil_mode", 0):
        raise Unsupported("LpPool with ceil_mode=1 is not supported")
    kernel = [int(k) for k in attrs["kernel_shape"]]
    nsp = len(kernel)
    if x.ndim != nsp + 2 or nsp not in (1, 2, 3):
        raise Unsupported(f"LpPool of rank {x.ndim} with a {nsp}-D window")
    strides = [int(s) for s in attrs.get("strides", [1] * nsp)]
    dil = [int(d) for d in attrs.get("dilations", [1] * nsp)]
    pads = _pads(node, attrs, x, kernel, strides, dil)
    p = float(attrs.get("p", 2))
    powered = call("power", [call("abs", [x]), scalar(p, x)])
    sub = {"kernel_shape": kernel, "strides": strides, "dilations": dil, "pads": pads,
           "count_include_pad": 1}
    (avg,) = _pool(ctx, _AsAveragePool(node), [powered], sub)
    total = call("multiply", [avg, scalar(float(np.prod(kernel)), x)])
    return [call("power", [total, scalar(1.0 / p, x)])]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Context, node: Any, ins: list[Value | None],
                 attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if x.ndim == 4:
        name = "nn.global_avg_pool2d" if node.op_type == "GlobalAveragePool" else \
            "nn.global_max_pool2d"
        return [call(name, [x])]
    axes = tuple(range(2, x.ndim))
    name = "mean" if node.op_type == "GlobalAveragePool" else "max"
    return [call(name, [x], axis=axes, keepdims=True)]
