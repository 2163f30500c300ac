"""Gradient (reverse) and tangent (forward) rules of the ``nn`` operator family.

Every rule builds Relay (the contract is in :mod:`ad.rules`), using only operators that have
rules themselves, so gradients of gradients work. The backward operators the rules need —
``nn.conv2d_transpose``, ``nn.conv2d_backward_weight``, ``nn.max_pool2d_grad``,
``nn.max_pool2d_pick``, ``nn.avg_pool2d_grad`` — are the ``grad_ops`` family
(:mod:`semantics.ops.grad_ops`, rules in :mod:`ad.rules.grad_ops`); each is the exact adjoint of
a linear map, so the family is closed under differentiation (conv2d's data gradient is a
transposed convolution, whose data gradient is a conv2d again).

Per operator (``g`` the output's adjoint, ``y`` the output, ``b(v)`` a per-channel vector
broadcast along ``axis``):

* ``nn.dense``: ``dx = dense(g, transpose(w))``; ``dw = dense(gᵀ, xᵀ)`` with every leading axis
  of ``x``/``g`` flattened into the product. ``nn.batch_matmul``: the four layouts
  (``transpose_a``/``transpose_b``) each give their two products as batch_matmuls with flags;
  a broadcast batch of 1 is summed back. Operands of another float dtype than ``out_dtype``
  get their gradient cast back.
* ``nn.conv2d``: ``dx = conv2d_transpose(g, w)`` with the ``output_padding`` that restores the
  data's extent (rows no window reads get 0), ``dw = conv2d_backward_weight(g, x)``; any
  permutation of ``NCHW``/``OIHW`` is transposed to them and back. Blocked layouts
  (``NCHW16c``) are rejected with a ``RelayTypeError``. With strides > 1 the data's H and W
  must be concrete (``output_padding`` is an attribute).
* ``nn.relu``: ``g * sign(y)``; ``nn.leaky_relu``: ``g * (alpha + (1 - alpha) * sign(relu x))``
  (slope ``alpha`` at 0). Written with ``sign`` (whose derivative is 0) rather than a
  comparison, so that differentiating the rule again needs no rule for a boolean operator.
* ``nn.softmax``: ``y * (g - sum(g * y))``; ``nn.log_softmax``: ``g - exp(y) * sum(g)`` (sums
  along ``axis``, kept).
* ``nn.bias_add``: ``g`` and ``sum(g)`` over every axis but ``axis``.
* ``nn.batch_norm`` (inference formula ``(x - mean) * s * gamma + beta`` with
  ``s = rsqrt(var + epsilon)``; the moving statistics are also the 2nd and 3rd outputs, so
  their adjoints flow straight back): ``dx = g0 * b(s * gamma)``, ``dgamma = s * sum(g0 * xc)``,
  ``dbeta = sum(g0)``, ``dmean = g1 - sum(dx)``, ``dvar = g2 - ½ s³ gamma sum(g0 * xc)``
  (``xc = x - b(mean)``; ``scale``/``center`` off: gamma is 1 / beta is unused, their
  gradients 0).
* ``nn.dropout``: Relay's dropout is the identity at inference and the oracle implements just
  that (``(data, ones)``): the gradient of the data is the output's adjoint, the mask (a
  constant) passes none; the tangent is ``(dx, 0)``. A training-mode dropout would have to
  multiply by its mask here.
* ``nn.max_pool2d`` / ``nn.avg_pool2d``: ``max_pool2d_grad`` / ``avg_pool2d_grad`` with the
  pool's attributes (``ceil_mode``, ``count_include_pad``, layouts included); tangents
  ``max_pool2d_pick(x, dx)`` / ``avg_pool2d(dx)``. Max pooling sends the gradient to the first
  maximal tap of each window (ties: the first in row-major order). The global pools are the
  same with the window the whole of H x W (which must then be concrete).
* ``nn.batch_flatten``: ``reshape_like(g, x)``.
* ``nn.pad``: ``constant``: the interior slice of ``g``, and (float pad value) the sum of the
  padding's adjoint, ``sum(g) - sum(interior)``; ``edge``/``reflect``: per padded axis, the
  slabs' adjoints are summed onto the edge / mirrored back onto the rows they copy (padded
  axes must be concrete); the tangent is ``pad(dx, dvalue)``.

Integer operands carry no derivative: their entries are ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ad.rules._build import (
    call,
    collapse_to,
    is_float,
    item,
    scalar,
    tensor_type,
    tup,
    zeros_like,
)
from semantics import ops
from semantics.errors import RelayTypeError
from semantics.expr import Attrs, Call, Expr, Op
from semantics.ops.layouts import is_blocked
from semantics.ops.nn_relations import pad4, pair
from semantics.ops.tables import register_gradient, register_tangent
from semantics.shapes import Dim

Grads = list[Expr | None]
Tangents = list[Expr | None]


# --- helpers shared with ad.rules.grad_ops ----------------------------------------------------

def attrs_of(c: Call) -> Attrs:
    """The call's attributes normalized against its operator's schema (defaults filled in)."""
    if not isinstance(c.op, Op):
        raise TypeError(f"rule applied to a call of a non-operator: {c.op!r}")
    return ops.get(c.op.name).normalize_attrs(c.attrs)


def op_name(c: Call) -> str:
    """The called operator's name (for messages)."""
    return c.op.name if isinstance(c.op, Op) else "?"


def unsupported(c: Call, why: str) -> RelayTypeError:
    """The error a rule raises for a call it cannot differentiate (with the call's span)."""
    return RelayTypeError(f"no gradient for this call of {op_name(c)}: {why}", c.span)


def concrete(c: Call, d: Dim, what: str) -> int:
    """A dim the rule needs as an integer; ``RelayTypeError`` when it is symbolic or ``?``."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    raise unsupported(c, f"{what} must be a concrete extent, got {d}")


def dtype_of(e: Expr) -> str:
    """The dtype of a tensor atom handed to a rule."""
    return tensor_type(e).dtype


def as_dtype(e: Expr, have: str, want: str) -> Expr:
    """``e`` (of dtype ``have``) cast to ``want`` when they differ."""
    return e if have == want else call("cast", e, dtype=want)


def plus(a: Expr | None, b: Expr | None) -> Expr | None:
    """``a + b``, treating ``None`` as zero."""
    if a is None:
        return b
    if b is None:
        return a
    return call("add", a, b)


def permute(e: Expr, src: str, dst: str) -> Expr:
    """``e`` (laid out as ``src``) transposed to the layout ``dst`` (same letters)."""
    if src == dst:
        return e
    return call("transpose", e, axes=[src.index(ch) for ch in dst])


def zero_tangent_if_none(result: Expr | None, out: Expr) -> Expr:
    """``result``, or ``zeros_like(out)`` for a float output whose tangent terms all vanished."""
    return zeros_like(out) if result is None else result


def output_padding(c: Call, size: Dim, out_size: Dim, kernel: Dim, pad_lo: int, pad_hi: int,
                   stride: int, dilation: int, what: str) -> int:
    """The ``output_padding`` making ``conv2d_transpose`` of an ``out_size`` extent give back
    ``size``: the rows of the padded input after the last window (fewer than ``stride``)."""
    if stride == 1:
        return 0
    n = concrete(c, size, f"the data's {what}")
    o = concrete(c, out_size, f"the output's {what}")
    k = concrete(c, kernel, f"the kernel's {what}")
    return n - ((o - 1) * stride - pad_lo - pad_hi + dilation * (k - 1) + 1)


# --- dense and batch_matmul --------------------------------------------------------------------

def _flatten_rows(e: Expr, rank: int) -> Expr:
    """A rank-``rank`` tensor ``(..., k)`` as ``(k, prod(...))``: its last axis first, the others
    flattened (rank 1: ``(k, 1)``)."""
    if rank == 2:
        return call("transpose", e, axes=[1, 0])
    moved = e if rank == 1 else call("transpose", e, axes=[rank - 1, *range(rank - 1)])
    return call("reshape", moved, newshape=[0, -1])


@register_gradient("nn.dense")
def _dense_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, w = c.args
    odt = dtype_of(out)
    dx: Expr | None = None
    dw: Expr | None = None
    if is_float(x):
        xdt = dtype_of(x)
        dx = call("nn.dense", as_dtype(grad, odt, xdt),
                  as_dtype(call("transpose", w, axes=[1, 0]), dtype_of(w), xdt))
    if is_float(w):
        wdt = dtype_of(w)
        rank = len(tensor_type(x).shape)
        dw = call("nn.dense", as_dtype(_flatten_rows(grad, rank), odt, wdt),
                  as_dtype(_flatten_rows(x, rank), dtype_of(x), wdt))
    return [dx, dw]


@register_tangent("nn.dense")
def _dense_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, w = c.args
    dx, dw = tangents
    a = dict(attrs_of(c))
    return plus(None if dx is None else call("nn.dense", dx, w, **a),
                None if dw is None else call("nn.dense", x, dw, **a))


def _bmm(a: Expr, b: Expr, ta: bool, tb: bool) -> Call:
    return call("nn.batch_matmul", a, b, transpose_a=ta, transpose_b=tb)


@register_gradient("nn.batch_matmul")
def _batch_matmul_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, y = c.args
    a = attrs_of(c)
    ta, tb = a["transpose_a"], a["transpose_b"]
    odt = dtype_of(out)
    dx: Expr | None = None
    dy: Expr | None = None
    # out = A B with A = x (x^T if ta) and B = y (y^T if tb): dA = g B^T, dB = A^T g.
    if is_float(x):
        g = as_dtype(grad, odt, dtype_of(x))
        yy = as_dtype(y, dtype_of(y), dtype_of(x))
        d = _bmm(yy, g, tb, True) if ta else _bmm(g, yy, False, not tb)
        dx = collapse_to(d, x)
    if is_float(y):
        g = as_dtype(grad, odt, dtype_of(y))
        xx = as_dtype(x, dtype_of(x), dtype_of(y))
        d = _bmm(g, xx, True, ta) if tb else _bmm(xx, g, not ta, False)
        dy = collapse_to(d, y)
    return [dx, dy]


@register_tangent("nn.batch_matmul")
def _batch_matmul_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, y = c.args
    dx, dy = tangents
    a = dict(attrs_of(c))
    return plus(None if dx is None else call("nn.batch_matmul", dx, y, **a),
                None if dy is None else call("nn.batch_matmul", x, dy, **a))


# --- conv2d ------------------------------------------------------------------------------------

def _conv_layouts(c: Call, a: Attrs) -> tuple[str, str, str]:
    data, kernel = a["data_layout"], a["kernel_layout"]
    result = a["out_layout"] or data
    if is_blocked(data) or is_blocked(kernel) or is_blocked(result):
        raise unsupported(c, f"blocked layouts ({data}, {kernel}, {result}) are not supported; "
                             "convert with layout_transform first")
    return data, kernel, result


def _window_attrs(a: Attrs) -> dict[str, Any]:
    return {"strides": a["strides"], "padding": a["padding"], "dilation": a["dilation"],
            "groups": a["groups"]}


@register_gradient("nn.conv2d")
def _conv2d_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, w = c.args
    a = attrs_of(c)
    dl, kl, ol = _conv_layouts(c, a)
    win = _window_attrs(a)
    odt = dtype_of(out)
    g = permute(grad, ol, "NCHW")
    xs = [tensor_type(x).shape[dl.index(ch)] for ch in "NCHW"]
    ws = [tensor_type(w).shape[kl.index(ch)] for ch in "OIHW"]
    os_ = [tensor_type(out).shape[ol.index(ch)] for ch in "NCHW"]
    dx: Expr | None = None
    dw: Expr | None = None
    if is_float(x):
        xdt = dtype_of(x)
        pt, pl, pb, pr = pad4(a["padding"])
        sh, sw = pair(a["strides"])
        dh, dw_ = pair(a["dilation"])
        oph = output_padding(c, xs[2], os_[2], ws[2], pt, pb, sh, dh, "height")
        opw = output_padding(c, xs[3], os_[3], ws[3], pl, pr, sw, dw_, "width")
        weight = as_dtype(permute(w, kl, "OIHW"), dtype_of(w), xdt)
        d = call("nn.conv2d_transpose", as_dtype(g, odt, xdt), weight,
                 output_padding=[oph, opw], **win)
        dx = permute(d, "NCHW", dl)
    if is_float(w):
        wdt = dtype_of(w)
        kernel = [concrete(c, ws[2], "the kernel height"), concrete(c, ws[3], "the kernel width")]
        data = as_dtype(permute(x, dl, "NCHW"), dtype_of(x), wdt)
        d = call("nn.conv2d_backward_weight", as_dtype(g, odt, wdt), data, kernel_size=kernel,
                 **win)
        dw = permute(d, "OIHW", kl)
    return [dx, dw]


@register_tangent("nn.conv2d")
def _conv2d_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, w = c.args
    dx, dw = tangents
    a = dict(attrs_of(c))
    return plus(None if dx is None else call("nn.conv2d", dx, w, **a),
                None if dw is None else call("nn.conv2d", x, dw, **a))


# --- activations -------------------------------------------------------------------------------

@register_gradient("nn.relu")
def _relu_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    if not is_float(c.args[0]):
        return [None]
    return [call("multiply", grad, call("sign", out))]


@register_tangent("nn.relu")
def _relu_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    return None if dx is None else call("multiply", dx, call("sign", out))


def _leaky_slope(c: Call) -> Expr:
    """``alpha + (1 - alpha) * sign(relu(x))``: 1 where x > 0, else alpha."""
    (x,) = c.args
    alpha = float(attrs_of(c)["alpha"])
    dt = dtype_of(x)
    step = call("sign", call("nn.relu", x))
    return call("add", scalar(alpha, dt), call("multiply", scalar(1.0 - alpha, dt), step))


@register_gradient("nn.leaky_relu")
def _leaky_relu_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    if not is_float(c.args[0]):
        return [None]
    return [call("multiply", grad, _leaky_slope(c))]


@register_tangent("nn.leaky_relu")
def _leaky_relu_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    return None if dx is None else call("multiply", dx, _leaky_slope(c))


def _keep_sum(e: Expr, axis: int) -> Call:
    return call("sum", e, axis=[axis], keepdims=True)


@register_gradient("nn.softmax")
def _softmax_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    axis = attrs_of(c)["axis"]
    inner = _keep_sum(call("multiply", grad, out), axis)
    return [call("multiply", out, call("subtract", grad, inner))]


@register_tangent("nn.softmax")
def _softmax_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    if dx is None:
        return None
    axis = attrs_of(c)["axis"]
    inner = _keep_sum(call("multiply", dx, out), axis)
    return call("multiply", out, call("subtract", dx, inner))


@register_gradient("nn.log_softmax")
def _log_softmax_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    axis = attrs_of(c)["axis"]
    return [call("subtract", grad, call("multiply", call("exp", out), _keep_sum(grad, axis)))]


@register_tangent("nn.log_softmax")
def _log_softmax_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    if dx is None:
        return None
    axis = attrs_of(c)["axis"]
    return call("subtract", dx, _keep_sum(call("multiply", call("exp", out), dx), axis))


# --- bias_add, batch_norm, dropout, batch_flatten ----------------------------------------------

def _axis(c: Call, axis: int) -> int:
    rank = len(tensor_type(c.args[0]).shape)
    return axis + rank if axis < 0 else axis


def _channel_sum(e: Expr, axis: int) -> Call:
    """``e`` summed over every axis but ``axis``."""
    return call("sum", e, axis=[axis], exclude=True)


@register_gradient("nn.bias_add")
def _bias_add_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, b = c.args
    axis = _axis(c, attrs_of(c)["axis"])
    return [grad if is_float(x) else None, _channel_sum(grad, axis) if is_float(b) else None]


@register_tangent("nn.bias_add")
def _bias_add_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, _ = c.args
    dx, db = tangents
    if db is None:
        return dx
    return call("nn.bias_add", zeros_like(x) if dx is None else dx, db, **dict(attrs_of(c)))


class _Channels:
    """Per-channel vectors of ``batch_norm`` broadcast along its axis."""

    def __init__(self, c: Call) -> None:
        a = attrs_of(c)
        self.rank = len(tensor_type(c.args[0]).shape)
        self.axis = _axis(c, a["axis"])
        self.dtype = dtype_of(c.args[0])

    def b(self, v: Expr) -> Expr:
        """A ``(C,)`` vector shaped to broadcast against the data."""
        trailing = self.rank - 1 - self.axis
        return v if trailing == 0 else call("expand_dims", v, axis=1, num_newaxis=trailing)

    def sum(self, e: Expr) -> Expr:
        return _channel_sum(e, self.axis)

    def const(self, value: float) -> Expr:
        return scalar(value, self.dtype)


def _bn_parts(c: Call) -> tuple[_Channels, Attrs, Expr, Expr]:
    """The broadcasting helper, the attributes, ``s = rsqrt(var + eps)`` and ``x - b(mean)``."""
    x, _, _, mean, var = c.args
    ch = _Channels(c)
    a = attrs_of(c)
    s = call("rsqrt", call("add", var, ch.const(float(a["epsilon"]))))
    return ch, a, s, call("subtract", x, ch.b(mean))


@register_gradient("nn.batch_norm")
def _batch_norm_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    _, gamma, beta, _, _ = c.args
    ch, a, s, xc = _bn_parts(c)
    g0, g1, g2 = item(grad, 0), item(grad, 1), item(grad, 2)
    factor = call("multiply", s, gamma) if a["scale"] else s
    dx = call("multiply", g0, ch.b(factor))
    t = ch.sum(call("multiply", g0, xc))
    dgamma = call("multiply", s, t) if a["scale"] else zeros_like(gamma)
    dbeta = ch.sum(g0) if a["center"] else zeros_like(beta)
    dmean = call("subtract", g1, ch.sum(dx))
    cube = call("multiply", call("multiply", s, s), s)
    dvar_core = call("multiply", call("multiply", t, cube), ch.const(-0.5))
    if a["scale"]:
        dvar_core = call("multiply", dvar_core, gamma)
    dvar = call("add", g2, dvar_core)
    return [dx, dgamma, dbeta, dmean, dvar]


@register_tangent("nn.batch_norm")
def _batch_norm_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    _, gamma, _, _, _ = c.args
    dx, dgamma, dbeta, dmean, dvar = tangents
    ch, a, s, xc = _bn_parts(c)
    scale = a["scale"]
    factor = call("multiply", s, gamma) if scale else s
    dxc = plus(dx, None if dmean is None else call("negative", ch.b(dmean)))
    dout: Expr | None = None if dxc is None else call("multiply", dxc, ch.b(factor))
    if dvar is not None:
        ds = call("multiply", call("multiply", call("multiply", s, s), s),
                  call("multiply", dvar, ch.const(-0.5)))
        dout = plus(dout, call("multiply", xc, ch.b(call("multiply", ds, gamma) if scale
                                                     else ds)))
    if scale and dgamma is not None:
        dout = plus(dout, call("multiply", xc, ch.b(call("multiply", s, dgamma))))
    if a["center"] and dbeta is not None:
        dout = plus(dout, ch.b(dbeta))
    if dout is not None and dx is None:     # only per-channel terms: broadcast them out
        dout = call("broadcast_to_like", dout, item(out, 0))
    return tup(zero_tangent_if_none(dout, item(out, 0)),
               zero_tangent_if_none(dmean, item(out, 1)),
               zero_tangent_if_none(dvar, item(out, 2)))


@register_gradient("nn.dropout")
def _dropout_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    return [item(grad, 0) if is_float(c.args[0]) else None]


@register_tangent("nn.dropout")
def _dropout_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    if dx is None:
        return None
    return tup(dx, zeros_like(dx))


@register_gradient("nn.batch_flatten")
def _batch_flatten_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    (x,) = c.args
    return [call("reshape_like", grad, x) if is_float(x) else None]


@register_tangent("nn.batch_flatten")
def _batch_flatten_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    return None if dx is None else call("nn.batch_flatten", dx)


# --- pools -------------------------------------------------------------------------------------

@register_gradient("nn.max_pool2d")
def _max_pool2d_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    (x,) = c.args
    if not is_float(x):
        return [None]
    return [call("nn.max_pool2d_grad", grad, x, **dict(attrs_of(c)))]


@register_tangent("nn.max_pool2d")
def _max_pool2d_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    if dx is None:
        return None
    return call("nn.max_pool2d_pick", c.args[0], dx, **dict(attrs_of(c)))


@register_gradient("nn.avg_pool2d")
def _avg_pool2d_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    (x,) = c.args
    if not is_float(x):
        return [None]
    return [call("nn.avg_pool2d_grad", grad, x, **dict(attrs_of(c)))]


@register_tangent("nn.avg_pool2d")
def _avg_pool2d_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    return None if dx is None else call("nn.avg_pool2d", dx, **dict(attrs_of(c)))


def _global_window(c: Call) -> dict[str, Any]:
    """The attributes of the ordinary pool that covers all of H x W at once."""
    a = attrs_of(c)
    shape = tensor_type(c.args[0]).shape
    layout = a["layout"]
    h = concrete(c, shape[layout.index("H")], "the data's height")
    w = concrete(c, shape[layout.index("W")], "the data's width")
    return {"pool_size": [h, w], "layout": layout, "out_layout": a["out_layout"]}


@register_gradient("nn.global_max_pool2d")
def _global_max_pool2d_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    (x,) = c.args
    if not is_float(x):
        return [None]
    return [call("nn.max_pool2d_grad", grad, x, **_global_window(c))]


@register_tangent("nn.global_max_pool2d")
def _global_max_pool2d_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    if dx is None:
        return None
    return call("nn.max_pool2d_pick", c.args[0], dx, **_global_window(c))


@register_gradient("nn.global_avg_pool2d")
def _global_avg_pool2d_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    (x,) = c.args
    if not is_float(x):
        return [None]
    return [call("nn.avg_pool2d_grad", grad, x, **_global_window(c))]


@register_tangent("nn.global_avg_pool2d")
def _global_avg_pool2d_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dx,) = tangents
    return None if dx is None else call("nn.global_avg_pool2d", dx, **dict(attrs_of(c)))


# --- pad ---------------------------------------------------------------------------------------

def _slice_axis(e: Expr, axis: int, begin: int, end: int) -> Call:
    return call("strided_slice", e, begin=[begin], end=[end], axes=[axis])


def _pad_axis(e: Expr, rank: int, axis: int, before: int, after: int, dtype: str) -> Call:
    widths = [[0, 0] for _ in range(rank)]
    widths[axis] = [before, after]
    return call("nn.pad", e, scalar(0, dtype), pad_width=widths)


def _unpad_axis(g: Expr, axis: int, before: int, after: int, size: int,
                mode: str, rank: int, dtype: str) -> Expr:
    """The adjoint of ``edge``/``reflect`` padding of one axis of extent ``size``."""
    mid = _slice_axis(g, axis, before, before + size)
    total: Expr = mid
    if before:
        head = _slice_axis(g, axis, 0, before)
        if mode == "edge":
            back = _pad_axis(call("sum", head, axis=[axis], keepdims=True), rank, axis,
                             0, size - 1, dtype)
        else:
            back = _pad_axis(call("reverse", head, axis=axis), rank, axis, 1,
                             size - 1 - before, dtype)
        total = call("add", total, back)
    if after:
        tail = _slice_axis(g, axis, before + size, before + size + after)
        if mode == "edge":
            back = _pad_axis(call("sum", tail, axis=[axis], keepdims=True), rank, axis,
                             size - 1, 0, dtype)
        else:
            back = _pad_axis(call("reverse", tail, axis=axis), rank, axis, size - 1 - after,
                             1, dtype)
        total = call("add", total, back)
    return total


def _interior(grad: Expr, widths: Sequence[Sequence[int]]) -> Expr:
    """The slice of a padded tensor's adjoint that lies over the data."""
    if not any(b or a for b, a in widths):
        return grad
    begin = [int(b) for b, _ in widths]
    end: list[int | None] = [(-int(a) if a else None) for _, a in widths]
    return call("strided_slice", grad, begin=begin, end=end)


@register_gradient("nn.pad")
def _pad_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, value = c.args
    if not is_float(x):
        return [None, None]
    a = attrs_of(c)
    widths = [tuple(p) for p in a["pad_width"]]
    mode = a["pad_mode"]
    dvalue: Expr | None = zeros_like(value) if is_float(value) else None
    if mode == "constant":
        dx = _interior(grad, widths)
        if not all(isinstance(d, int) for d in tensor_type(x).shape):
            dx = call("reshape_like", dx, x)    # a symbolic slice extent is typed ``?``
        if is_float(value):
            rest = call("subtract", call("sum", grad), call("sum", dx))
            dvalue = as_dtype(rest, dtype_of(out), dtype_of(value))
        return [dx, dvalue]
    shape = tensor_type(x).shape
    g: Expr = grad
    for axis, (before, after) in enumerate(widths):
        if before or after:
            size = concrete(c, shape[axis], f"axis {axis} of the data")
            g = _unpad_axis(g, axis, int(before), int(after), size, mode, len(widths),
                            dtype_of(x))
    return [g, dvalue]


@register_tangent("nn.pad")
def _pad_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, value = c.args
    dx, dvalue = tangents
    if not is_float(x):
        return None
    a = dict(attrs_of(c))
    if a["pad_mode"] != "constant" and dvalue is not None:
        if dx is None:
            return zeros_like(out)      # the pad value is never read
        dvalue = None
    if dx is None and dvalue is None:
        return None
    fill = scalar(0, dtype_of(x)) if dvalue is None else dvalue
    return call("nn.pad", zeros_like(x) if dx is None else dx, fill, **a)



# --- nn.lrn (the ONNX importer's local response normalization) ---------------------------------
#   y = x * s^-beta,   s = bias + alpha/size * W(x^2)
# where W sums a window of ``size`` neighbours along ``axis`` (offsets -lo..+hi). W is written as
# an average pool (times ``size``) over a 4-D view that puts ``axis`` in the pooled "H"
# position; its adjoint is the window with mirrored offsets (-hi..+lo). Both are registered,
# differentiable operators, so the rule can be differentiated again.

def _lrn_window(c: Call, z: Expr, lo: int, hi: int) -> Expr:
    a = attrs_of(c)
    t = tensor_type(c.args[0])          # rank >= 1: the relation checks the axis
    shape = [concrete(c, d, "LRN's input shape") for d in t.shape]
    axis = a["axis"] % t.ndim
    before = 1
    for d in shape[:axis]:
        before *= d
    after = 1
    for d in shape[axis + 1:]:
        after *= d
    size = a["size"]
    view = call("reshape", z, newshape=(before, 1, shape[axis], after))
    pooled = call("nn.avg_pool2d", view, pool_size=(size, 1), strides=(1, 1),
                  padding=(lo, 0, hi, 0), count_include_pad=True)
    summed = call("multiply", pooled, scalar(size, t.dtype))
    return call("reshape", summed, newshape=tuple(shape))


def _lrn_parts(c: Call) -> tuple[Expr, Expr, float, float, int, int, str]:
    """(s, alpha/size as a constant, beta, alpha/size, lo, hi, dtype) of an LRN call."""
    a = attrs_of(c)
    x = c.args[0]
    dt = dtype_of(x)
    size = a["size"]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    k = a["alpha"] / size
    window = _lrn_window(c, call("multiply", x, x), lo, hi)
    s = call("add", scalar(a["bias"], dt), call("multiply", scalar(k, dt), window))
    return s, scalar(k, dt), a["beta"], k, lo, hi, dt


@register_gradient("nn.lrn")
def _lrn_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x = c.args[0]
    s, k, beta, _, lo, hi, dt = _lrn_parts(c)
    direct = call("multiply", grad, call("power", s, scalar(-beta, dt)))
    inner = call("multiply", call("multiply", grad, x),
                 call("multiply", scalar(-beta, dt), call("power", s, scalar(-beta - 1, dt))))
    through_s = call("multiply", call("multiply", scalar(2, dt), x),
                     call("multiply", k, _lrn_window(c, inner, hi, lo)))
    return [call("add", direct, through_s)]


@register_tangent("nn.lrn")
def _lrn_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    dx = tangents[0]
    if dx is None:
        return None
    x = c.args[0]
    s, k, beta, _, lo, hi, dt = _lrn_parts(c)
    ds = call("multiply", k, _lrn_window(c, call("multiply", call("multiply", scalar(2, dt), x),
                                                 dx), lo, hi))
    direct = call("multiply", dx, call("power", s, scalar(-beta, dt)))
    via = call("multiply", call("multiply", x, scalar(-beta, dt)),
               call("multiply", call("power", s, scalar(-beta - 1, dt)), ds))
    return call("add", direct, via)
