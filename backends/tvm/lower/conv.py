"""Lowering of ``nn.conv2d`` for ``llvm`` (semantics: :mod:`semantics.ops.nn`).

A plain TE reduction over the inputs cast to the result dtype, reading every layout the
relation accepts through :class:`backends.tvm.lower.nn.LayoutMap`, the zero padding a lazy
``if_then_else`` around each load; integers wrap in ``out_dtype``. Two shapes are made for
their schedules: a convolution in a channel-blocked layout reads a staged, padded,
channels-last copy of its input (:data:`~backends.tvm.lower.conv_plan.CONV_PAD`,
``backends.tvm.sched.conv2d``); a float32 ``NCHW``/``OIHW`` one is lowered in the three
stages of :mod:`backends.tvm.lower.conv_plan`, padded for the register tile of the target
(``backends.tvm.sched.conv2d_nchw``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.tvm.lower.base import OpCall, const, lowering, padding_zero
from backends.tvm.lower.conv_plan import (
    CONV,
    CONV_PAD,
    NCHW_ACC,
    NCHW_PAD,
    ConvShape,
    Tile,
    choose_tile,
    pad_extents,
)
from backends.tvm.lower.int_dot import conv2d_dot
from backends.tvm.lower.nn import LayoutMap, _at, _te, _tirx
from semantics.ops import nn_relations as N

__all__: list[str] = []


@lowering("nn.conv2d")
def _conv2d(call: OpCall) -> Any:
    te, tirx = _te(), _tirx()
    data, weight = call.inputs
    attrs = call.attrs
    odt = call.out_dtype
    dmap, kmap = LayoutMap(attrs["data_layout"]), LayoutMap(attrs["kernel_layout"])
    omap = LayoutMap(attrs["out_layout"] or attrs["data_layout"])
    dshape, kshape = call.in_shape(0), call.in_shape(1)
    height, width = dmap.extent(dshape, "H"), dmap.extent(dshape, "W")
    in_c = dmap.extent(dshape, "C")
    out_c = kmap.extent(kshape, "O")
    cg = kmap.extent(kshape, "I")
    kh, kw = kmap.extent(kshape, "H"), kmap.extent(kshape, "W")
    groups = attrs["groups"]
    og = out_c // groups
    sh, sw = N.pair(attrs["strides"])
    dh, dw = N.pair(attrs["dilation"])
    pt, pl, _, _ = N.pad4(attrs["padding"])
    if cg == 0 or kh == 0 or kw == 0 or in_c == 0:
        return te.compute(call.out_shape, lambda *i: const(0, odt), name=CONV)
    if (dotted := conv2d_dot(call, dmap, kmap, omap, CONV_PAD)) is not None:   # int8 dot
        return dotted
    plan = _nchw_plan(call)
    if plan is not None:
        return _conv2d_nchw(call, *plan)
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    blocked = bool(dmap.factor) or bool(omap.factor)
    zero = padding_zero(call, odt) if any(N.pad4(attrs["padding"])) else const(0, odt)
    staged = _staged_input(data, dmap, dshape, N.pad4(attrs["padding"]), odt, zero) \
        if blocked else None

    def body(*idx: Any) -> Any:
        o = omap.coords(idx)
        oc = o["C"]
        g = tirx.floordiv(oc, og) if groups > 1 else 0
        h = o["H"] * sh + ry * dh
        w = o["W"] * sw + rx * dw
        c = g * cg + rc if groups > 1 else rc
        if staged is not None:
            x = staged[o["N"], h, w, c]
        else:
            h, w = h - pt, w - pl
            inside = tirx.all(h >= 0, h < height, w >= 0, w < width)
            x = _at(data, dmap.index({"N": o["N"], "C": c, "H": h, "W": w}))
            x = tirx.if_then_else(inside, tirx.Cast(odt, x), zero)
        k = _at(weight, kmap.index({"O": oc, "I": rc, "H": ry, "W": rx}))
        return te.sum(x * tirx.Cast(odt, k), axis=[rc, ry, rx])

    return te.compute(call.out_shape, body, name=CONV)


def _nchw_plan(call: OpCall) -> tuple[ConvShape, Tile] | None:
    """The shape and register tile of a float32 ``NCHW``/``OIHW`` convolution with static
    shapes (lowered by :func:`_conv2d_nchw`), else None."""
    attrs = call.attrs
    if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" \
            or (attrs["out_layout"] or "NCHW") != "NCHW" or call.out_dtype != "float32" \
            or any(getattr(t, "dtype", None) != "float32" for t in call.arg_types[:2]):
        return None
    try:
        n, c, h, w = (int(d) for d in call.in_shape(0))
        oc, cg, kh, kw = (int(d) for d in call.in_shape(1))
        oh, ow = (int(d) for d in call.out_shape[2:])
    except (TypeError, ValueError):
        return None
    groups = int(attrs["groups"])
    if min(n, c, h, w, oc, cg, kh, kw, oh, ow, groups) <= 0:
        return None
    pt, pl, _, _ = N.pad4(attrs["padding"])
    shape = ConvShape(n, c, h, w, oc, cg, kh, kw, oh, ow, N.pair(attrs["strides"]),
                      N.pair(attrs["dilation"]), int(pt), int(pl), groups)
    return shape, choose_tile(shape, call.target)


def _conv2d_nchw(call: OpCall, shape: ConvShape, tile: Tile) -> Any:
    """An ``NCHW`` convolution in the three stages of ``backends.tvm.lower.conv_plan``: the
    width-phased padded data (:data:`NCHW_PAD`), the convolution over the tile-padded width
    without a bounds test (:data:`NCHW_ACC`) and the copy of the valid columns (:data:`CONV`).
    """
    te, tirx = _te(), _tirx()
    data, weight = call.inputs
    hp, s, q = pad_extents(shape, tile)
    pt, pl = shape.pad_top, shape.pad_left
    zero = const(0, "float32")

    def padded(b: Any, c: Any, hh: Any, k: Any, qq: Any) -> Any:
        h, w = hh - pt, qq * s + k - pl
        inside = tirx.all(h >= 0, h < shape.h, w >= 0, w < shape.w)
        return tirx.if_then_else(inside, data[b, c, h, w], zero)

    pad = te.compute((shape.n, shape.c, hp, s, q), padded, name=NCHW_PAD)
    sh, _ = shape.strides
    dh, dw = shape.dilation
    og = shape.oc // shape.groups
    rc = te.reduce_axis((0, shape.cg), name="rc")
    ry = te.reduce_axis((0, shape.kh), name="ry")
    rx = te.reduce_axis((0, shape.kw), name="rx")

    def conv(b: Any, oc: Any, oh: Any, ow: Any) -> Any:
        c = tirx.floordiv(oc, og) * shape.cg + rc if shape.groups > 1 else rc
        tap = rx * dw
        x = pad[b, c, oh * sh + ry * dh, tap % s if s > 1 else 0,
                ow + (tap // s if s > 1 else tap)]
        return te.sum(x * weight[oc, rc, ry, rx], axis=[rc, ry, rx])

    acc = te.compute((shape.n, shape.oc, shape.oh, tile.padded_width(shape.ow)), conv,
                     name=NCHW_ACC)
    return te.compute(call.out_shape, lambda b, oc, oh, ow: acc[b, oc, oh, ow], name=CONV)


def _staged_input(data: Any, dmap: LayoutMap, dshape: Sequence[int], pads: Sequence[int],
                  odt: str, zero: Any) -> Any:
    """The convolution's input as its own stage (:data:`CONV_PAD`): zero-padded, cast to
    ``odt`` and **channels last**, ``[N, H + pads, W + pads, C]`` whatever the data's layout;
    None when ``H`` or ``W`` is blocked (the convolution then reads the data itself, testing
    the bounds). Made for convolutions with a channel-blocked data or output layout (the
    domain of ``backends.tvm.sched.conv2d``); in plain layouts the convolution tests the
    bounds in its loads, and the NCHW rule (``sched/conv2d_nchw.py``) makes its own padded
    copy, laid out for vectors along the width.

    The default schedule inlines the stage (a bounds test per load, no extra buffer). A
    convolution schedule may instead materialize it once per call: the inner loop then loads
    without a test, and the values one output tile reads lie in a few contiguous runs (one
    per input row) instead of one per channel block of a blocked layout."""
    te, tirx = _te(), _tirx()
    pt, pl, pb, pr = pads
    if "H" in dmap.factor or "W" in dmap.factor:
        return None
    n = dmap.extent(dshape, "N")
    height, width = dmap.extent(dshape, "H"), dmap.extent(dshape, "W")
    channels = dmap.extent(dshape, "C")

    def body(b: Any, hh: Any, ww: Any, c: Any) -> Any:
        h, w = hh - pt, ww - pl
        x = tirx.Cast(odt, _at(data, dmap.index({"N": b, "C": c, "H": h, "W": w})))
        if not any(pads):
            return x
        inside = tirx.all(h >= 0, h < height, w >= 0, w < width)
        return tirx.if_then_else(inside, x, zero)

    shape = (n, height + pt + pb, width + pl + pr, channels)
    return te.compute(shape, body, name=CONV_PAD)
