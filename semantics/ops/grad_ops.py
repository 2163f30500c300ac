"""Operator family ``grad_ops``: the backward operators the nn family's differentiation rules use.

Each operator is the exact *adjoint* (transpose) of a linear map that an nn operator's derivative
is built from, so that rules written with them can be differentiated again (every operator here
has its own gradient and tangent rule in :mod:`ad.rules.grad_ops`, again in this family):

* ``nn.conv2d_transpose(data, weight)`` (TVM's name and attributes; layouts ``NCHW`` data,
  ``IOHW`` weight): the adjoint of ``x -> nn.conv2d(x, weight)`` (``OIHW`` weight read as
  ``IOHW``), i.e. ``<conv2d_transpose(y, w), x> = <y, conv2d(x, w)>`` for every ``x`` of the
  transposed output's shape. Taps that fall into the padding are dropped; ``output_padding``
  adds rows/columns that no window reads (they are zero).
* ``nn.conv2d_backward_weight(grad, data)`` (TVM's name; layouts ``NCHW``/``NCHW``/``OIHW``):
  the adjoint of ``w -> nn.conv2d(data, w)``: ``<backward_weight(g, x), w> = <g, conv2d(x, w)>``.
* ``nn.max_pool2d_grad(out_grad, data)`` (TVM's name): each window's ``out_grad`` goes to the
  window's *first* tap (row-major over the window) that lies inside the data and holds the
  window's maximum; a window whose maximum is only found in the padding (all of its data taps
  are ``-inf``) or that holds a NaN routes nothing. Gradients of overlapping windows add up.
* ``nn.max_pool2d_pick(data, values)`` (ours; TVM has no such operator): per window of
  ``data``, the element of ``values`` at the tap ``nn.max_pool2d_grad`` routes to, or 0 — the
  adjoint of ``nn.max_pool2d_grad`` in ``out_grad``, and the tangent of ``nn.max_pool2d``.
* ``nn.avg_pool2d_grad(out_grad, data)`` (TVM's name): each window's ``out_grad`` divided by
  the window's divisor (the same ``count_include_pad`` / ``ceil_mode`` arithmetic as
  ``nn.avg_pool2d``) and added to each of its taps inside the data — the adjoint of
  ``nn.avg_pool2d``. ``data`` only supplies the shape.

The pool operators take the pools' attributes (``pool_size``, ``strides``, ``dilation``,
``padding``, ``layout``, ``out_layout``, ``ceil_mode``, and ``count_include_pad`` for the
average): ``data`` is in ``layout``, ``out_grad`` (and ``max_pool2d_pick``'s result) in
``out_layout``. Window arithmetic is shared with :mod:`semantics.ops.nn` (its tap slices,
padding value and divisors), so a pool and its adjoint cannot disagree about windows.

All operators take float tensors of one dtype and compute in it (convolutions in ``out_dtype``).
Relations: :mod:`semantics.ops.grad_ops_relations`. Not supported: other conv layouts (rules
transpose to ``NCHW``/``OIHW`` first), integer dtypes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from semantics.errors import InternalError
from semantics.ops import attr_checks as T
from semantics.ops import grad_ops_relations as G
from semantics.ops.nn import _lowest, _tap, _tap_counts, from_nchw, spatial_extents, to_nchw
from semantics.ops.nn_relations import check_conv_layout, pad4, pair
from semantics.ops.reference import concrete_shape, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, register_op
from semantics.types import TensorType, Type

FAMILY = "grad_ops"


def _op(name: str, num_inputs: int, relation: Relation, compute: Any, doc: str,
        *attrs: AttrSpec) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation,
                pattern=OpPattern.OUT_ELEMWISE_FUSABLE, impl=reference(name, relation, compute),
                attrs=attrs, doc=doc, family=FAMILY)


def _dtype(out: Type) -> np.dtype:
    if not isinstance(out, TensorType):
        raise InternalError(f"grad_ops relations give tensor types, got {out!r}")
    return np.dtype(out.dtype)


# --- convolutions ---------------------------------------------------------------------------

def _conv2d_transpose(out: Type, data: np.ndarray, weight: np.ndarray, *, strides: Any,
                      padding: Any, dilation: Any, groups: int, output_padding: Any,
                      channels: Any, kernel_size: Any, data_layout: str, kernel_layout: str,
                      out_layout: str, out_dtype: str) -> np.ndarray:
    """Scatter each input pixel, weighted by every kernel tap, into a padded result; crop."""
    odt = _dtype(out)
    n, o, oh, ow = concrete_shape(out)
    y = data.astype(odt, copy=False)
    w = weight.astype(odt, copy=False)
    _, c, h, wd = y.shape
    cg = c // groups
    og = w.shape[1]
    kh, kw = w.shape[2], w.shape[3]
    sh, sw = pair(strides)
    dh, dw = pair(dilation)
    pt, pl, pb, pr = pad4(padding)
    res = np.zeros((n, groups, og, oh + pt + pb, ow + pl + pr), dtype=odt)
    if y.size and h and wd and cg:
        yg = y.reshape(n, groups, cg, h * wd)
        wg = w.reshape(groups, cg, og, kh, kw)
        for i in range(kh):
            for j in range(kw):
                contrib = np.matmul(wg[:, :, :, i, j].transpose(0, 2, 1)[None], yg)
                r0, c0 = i * dh, j * dw
                res[..., r0:r0 + sh * (h - 1) + 1:sh, c0:c0 + sw * (wd - 1) + 1:sw] += (
                    contrib.reshape(n, groups, og, h, wd))
    res = res[..., pt:pt + oh, pl:pl + ow]
    return np.ascontiguousarray(res.reshape(n, o, oh, ow))


def _conv2d_backward_weight(out: Type, grad: np.ndarray, data: np.ndarray, *, strides: Any,
                            padding: Any, dilation: Any, groups: int, channels: Any,
                            kernel_size: Any, grad_layout: str, data_layout: str,
                            kernel_layout: str, out_dtype: str) -> np.ndarray:
    """Per kernel tap, the product of the grad with the strided input slice that tap reads."""
    odt = _dtype(out)
    o, cg, kh, kw = concrete_shape(out)
    g = grad.astype(odt, copy=False)
    x = data.astype(odt, copy=False)
    n, _, oh, ow = g.shape
    og = o // groups
    res = np.zeros((groups, og, cg, kh, kw), dtype=odt)
    if n and oh and ow and og and cg:
        sh, sw = pair(strides)
        dh, dw = pair(dilation)
        pt, pl, pb, pr = pad4(padding)
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        xg = xp.reshape(n, groups, cg, xp.shape[2], xp.shape[3])
        lhs = g.reshape(n, groups, og, oh * ow).transpose(1, 2, 0, 3).reshape(
            groups, og, n * oh * ow)
        for i in range(kh):
            for j in range(kw):
                patch = _tap(xg, i * dh, j * dw, oh, ow, sh, sw).reshape(n, groups, cg, oh * ow)
                rhs = patch.transpose(1, 0, 3, 2).reshape(groups, n * oh * ow, cg)
                res[:, :, :, i, j] = np.matmul(lhs, rhs)
    return res.reshape(o, cg, kh, kw)


_CONV_COMMON = (
    AttrSpec("strides", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("padding", "ints", (0, 0), check=T.check_ints_len(1, 2, 4, minimum=0),
             doc="1 value, (top/bottom, left/right) or (top, left, bottom, right)"),
    AttrSpec("dilation", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("groups", "int", 1, check=T.check_at_least(1)),
    AttrSpec("channels", "optional_int", None, check=T.check_at_least(1)),
)

_op("nn.conv2d_transpose", 2, G.CONV2D_TRANSPOSE, _conv2d_transpose,
    "Transposed 2-d convolution of NCHW data with an IOHW weight: the adjoint of nn.conv2d "
    "in its data (output_padding < strides adds unread rows/columns).",
    *_CONV_COMMON,
    AttrSpec("kernel_size", "optional_ints", None, check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("data_layout", "str", "NCHW", check=T.check_choice("NCHW")),
    AttrSpec("kernel_layout", "str", "IOHW", check=T.check_choice("IOHW")),
    AttrSpec("out_layout", "str", "", check=T.check_choice("", "NCHW")),
    AttrSpec("output_padding", "ints", (0, 0), check=T.check_ints_len(1, 2, minimum=0)),
    AttrSpec("out_dtype", "str", "", check=T.check_optional_dtype))

_op("nn.conv2d_backward_weight", 2, G.CONV2D_BACKWARD_WEIGHT, _conv2d_backward_weight,
    "The OIHW weight gradient of nn.conv2d from (grad, data): the adjoint of nn.conv2d in its "
    "weight (kernel_size required).",
    *_CONV_COMMON,
    AttrSpec("kernel_size", "ints", required=True, check=T.check_ints_len(1, 2, minimum=1)),
    AttrSpec("grad_layout", "str", "NCHW", check=T.check_choice("NCHW")),
    AttrSpec("data_layout", "str", "NCHW", check=T.check_choice("NCHW")),
    AttrSpec("kernel_layout", "str", "OIHW", check=T.check_choice("OIHW")),
    AttrSpec("out_dtype", "str", "", check=T.check_optional_dtype))


# --- pools ----------------------------------------------------------------------------------

class _Windows:
    """The window arithmetic of a pool over NCHW data of spatial extent ``h`` x ``w`` giving
    ``oh`` x ``ow`` outputs: tap offsets, the padded extent, and which taps lie in the data."""

    def __init__(self, h: int, w: int, oh: int, ow: int, attrs: dict[str, Any]) -> None:
        self.h, self.w, self.oh, self.ow = h, w, oh, ow
        self.kh, self.kw = pair(attrs["pool_size"])
        self.sh, self.sw = pair(attrs["strides"])
        self.dh, self.dw = pair(attrs["dilation"])
        self.pt, self.pl, self.pb, self.pr = pad4(attrs["padding"])
        self.eh, self.ew = (self.sh - 1, self.sw - 1) if attrs["ceil_mode"] else (0, 0)

    def pad(self, x: np.ndarray, value: Any = 0) -> np.ndarray:
        """``x`` (NCHW) padded as the pool pads it (explicit plus ``ceil_mode``'s extra)."""
        return np.pad(x, ((0, 0), (0, 0), (self.pt, self.pb + self.eh),
                          (self.pl, self.pr + self.ew)), constant_values=value)

    def crop(self, xp: np.ndarray) -> np.ndarray:
        """The data region of a padded array."""
        return xp[:, :, self.pt:self.pt + self.h, self.pl:self.pl + self.w]

    def taps(self) -> Iterator[tuple[int, int]]:
        """The (row, column) offsets of the kernel taps in the padded array, row-major."""
        for i in range(self.kh):
            for j in range(self.kw):
                yield i * self.dh, j * self.dw

    def view(self, xp: np.ndarray, tap: tuple[int, int]) -> np.ndarray:
        """The (writable) strided view of a padded array that ``tap`` reads, per output."""
        return _tap(xp, tap[0], tap[1], self.oh, self.ow, self.sh, self.sw)

    def inside(self, tap: tuple[int, int]) -> np.ndarray:
        """Per output position (``oh`` x ``ow``): whether ``tap`` lies inside the data."""
        rows = np.arange(self.oh) * self.sh + tap[0] - self.pt
        cols = np.arange(self.ow) * self.sw + tap[1] - self.pl
        return (((rows >= 0) & (rows < self.h))[:, None]
                & ((cols >= 0) & (cols < self.w))[None, :])

    def max_routes(self, x: np.ndarray) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """Per tap, the outputs whose gradient the tap receives (see the module docstring)."""
        xp = self.pad(x, _lowest(x.dtype))
        best = self.view(xp, (0, 0)).copy()
        for tap in self.taps():
            np.maximum(best, self.view(xp, tap), out=best)
        taken = np.zeros(best.shape, dtype=bool)
        for tap in self.taps():
            hit = (self.view(xp, tap) == best) & self.inside(tap) & ~taken
            taken |= hit
            yield tap, hit


def _pool_setup(data: np.ndarray, pooled_shape: tuple[int, ...], attrs: dict[str, Any]
                ) -> tuple[np.ndarray, _Windows]:
    x = to_nchw(data, attrs["layout"])
    olayout = attrs["out_layout"] or attrs["layout"]
    oh, ow = spatial_extents(pooled_shape, olayout)
    return x, _Windows(x.shape[2], x.shape[3], oh, ow, attrs)


def _max_pool2d_grad(out: Type, out_grad: np.ndarray, data: np.ndarray, **attrs: Any
                     ) -> np.ndarray:
    x, win = _pool_setup(data, out_grad.shape, attrs)
    g = to_nchw(out_grad, attrs["out_layout"] or attrs["layout"])
    res = win.pad(np.zeros_like(x))
    if win.oh and win.ow:
        zero = np.zeros((), dtype=x.dtype)
        for tap, hit in win.max_routes(x):
            win.view(res, tap)[...] += np.where(hit, g, zero)
    return from_nchw(win.crop(res), attrs["layout"])


def _max_pool2d_pick(out: Type, data: np.ndarray, values: np.ndarray, **attrs: Any
                     ) -> np.ndarray:
    olayout = attrs["out_layout"] or attrs["layout"]
    x, win = _pool_setup(data, concrete_shape(out), attrs)
    res = np.zeros((x.shape[0], x.shape[1], win.oh, win.ow), dtype=x.dtype)
    if win.oh and win.ow:
        vp = win.pad(to_nchw(values, attrs["layout"]))
        for tap, hit in win.max_routes(x):
            res = np.where(hit, win.view(vp, tap), res)
    return from_nchw(res, olayout)


def _avg_pool2d_grad(out: Type, out_grad: np.ndarray, data: np.ndarray, **attrs: Any
                     ) -> np.ndarray:
    x, win = _pool_setup(data, out_grad.shape, attrs)
    g = to_nchw(out_grad, attrs["out_layout"] or attrs["layout"])
    res = win.pad(np.zeros_like(x))
    if win.oh and win.ow:
        include = bool(attrs["count_include_pad"])
        ch = _tap_counts(win.h, win.kh, win.dh, win.sh, win.pt, win.pb, win.oh, include)
        cw = _tap_counts(win.w, win.kw, win.dw, win.sw, win.pl, win.pr, win.ow, include)
        counts = np.maximum(ch[:, None] * cw[None, :], 1).astype(x.dtype)
        share = g / counts
        for tap in win.taps():
            win.view(res, tap)[...] += share
    return from_nchw(win.crop(res), attrs["layout"])


def _pool_attrs(avg: bool) -> tuple[AttrSpec, ...]:
    specs: tuple[AttrSpec, ...] = (
        AttrSpec("pool_size", "ints", required=True, check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("strides", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("dilation", "ints", (1, 1), check=T.check_ints_len(1, 2, minimum=1)),
        AttrSpec("padding", "ints", (0, 0), check=T.check_ints_len(1, 2, 4, minimum=0),
                 doc="1 value, (top/bottom, left/right) or (top, left, bottom, right)"),
        AttrSpec("layout", "str", "NCHW", check=check_conv_layout("NCHW", "C"),
                 doc="layout of data (may block C: NCHW16c)"),
        AttrSpec("out_layout", "str", "", check=check_conv_layout("NCHW", "C", allow_empty=True),
                 doc="layout of the pooled tensor (\"\" = layout)"),
        AttrSpec("ceil_mode", "bool", False),
    )
    if avg:
        specs += (AttrSpec("count_include_pad", "bool", False),)
    return specs


_op("nn.max_pool2d_grad", 2, G.POOL2D_GRAD, _max_pool2d_grad,
    "Gradient of nn.max_pool2d: each window's out_grad goes to its first maximal tap inside "
    "the data.",
    *_pool_attrs(avg=False))

_op("nn.max_pool2d_pick", 2, G.POOL2D_PICK, _max_pool2d_pick,
    "Per max-pooling window of data, values at the tap nn.max_pool2d_grad routes to (0 if "
    "none): the tangent of nn.max_pool2d.",
    *_pool_attrs(avg=False))

_op("nn.avg_pool2d_grad", 2, G.POOL2D_GRAD, _avg_pool2d_grad,
    "Gradient of nn.avg_pool2d: each window's out_grad divided by its divisor, spread over its "
    "taps inside the data.",
    *_pool_attrs(avg=True))
