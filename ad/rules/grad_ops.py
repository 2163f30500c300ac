"""Gradient and tangent rules of the ``grad_ops`` family (:mod:`semantics.ops.grad_ops`).

Each operator of the family is bilinear or linear, and the adjoint of an nn operator, so its
rules are again operators of the family or of ``nn`` — the family is closed under
differentiation and the nn rules can be differentiated to any order. With ``C(x, w)`` =
``nn.conv2d``, ``T(y, w)`` = ``nn.conv2d_transpose`` and ``B(g, x)`` =
``nn.conv2d_backward_weight`` (all with the same strides, padding, dilation and groups), the
defining identities ``<T(y, w), x> = <y, C(x, w)> = <B(y, x), w>`` give (``h`` the output's
adjoint):

* ``T(y, w)``: ``dy = C(h, w)``, ``dw = B(y, h)``; tangent ``T(dy, w) + T(y, dw)``;
* ``B(g, x)``: ``dg = C(x, h)``, ``dx = T(g, h)`` (with the ``output_padding`` that restores
  ``x``'s extent); tangent ``B(dg, x) + B(g, dx)``.

The pools' backward operators are linear in the adjoint they route and piecewise constant in
the data (their derivative in ``data`` is zero almost everywhere; the rules return
``zeros_like(data)``):

* ``max_pool2d_grad(g, x)``: ``dg = max_pool2d_pick(x, h)``; tangent
  ``max_pool2d_grad(dg, x)``;
* ``max_pool2d_pick(x, v)``: ``dv = max_pool2d_grad(h, x)``; tangent ``max_pool2d_pick(x, dv)``;
* ``avg_pool2d_grad(g, x)``: ``dg = avg_pool2d(h)``; tangent ``avg_pool2d_grad(dg, x)``.
"""

from __future__ import annotations

from typing import Any

from ad.rules._build import call, tensor_type, zeros_like
from ad.rules.nn import (
    Grads,
    Tangents,
    as_dtype,
    attrs_of,
    concrete,
    dtype_of,
    output_padding,
    plus,
    zero_tangent_if_none,
)
from semantics.expr import Attrs, Call, Expr
from semantics.ops.nn_relations import pad4, pair
from semantics.ops.tables import register_gradient, register_tangent


def _window(a: Attrs) -> dict[str, Any]:
    return {"strides": a["strides"], "padding": a["padding"], "dilation": a["dilation"],
            "groups": a["groups"]}


def _kernel(c: Call, w: Expr) -> list[int]:
    shape = tensor_type(w).shape
    return [concrete(c, shape[2], "the kernel height"), concrete(c, shape[3], "the kernel width")]


@register_gradient("nn.conv2d_transpose")
def _conv2d_transpose_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    y, w = c.args
    a = attrs_of(c)
    h = as_dtype(grad, dtype_of(out), dtype_of(y))
    dy = call("nn.conv2d", h, w, **_window(a))
    dw = call("nn.conv2d_backward_weight", y, h, kernel_size=_kernel(c, w), **_window(a))
    return [dy, dw]


@register_tangent("nn.conv2d_transpose")
def _conv2d_transpose_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    y, w = c.args
    dy, dw = tangents
    a = dict(attrs_of(c))
    result = plus(None if dy is None else call("nn.conv2d_transpose", dy, w, **a),
                  None if dw is None else call("nn.conv2d_transpose", y, dw, **a))
    return zero_tangent_if_none(result, out)


@register_gradient("nn.conv2d_backward_weight")
def _conv2d_backward_weight_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    g, x = c.args
    a = attrs_of(c)
    h = as_dtype(grad, dtype_of(out), dtype_of(x))
    dg = call("nn.conv2d", x, h, **_window(a))
    xs, gs, ws = tensor_type(x).shape, tensor_type(g).shape, tensor_type(out).shape
    pt, pl, pb, pr = pad4(a["padding"])
    sh, sw = pair(a["strides"])
    dh, dw = pair(a["dilation"])
    oph = output_padding(c, xs[2], gs[2], ws[2], pt, pb, sh, dh, "height")
    opw = output_padding(c, xs[3], gs[3], ws[3], pl, pr, sw, dw, "width")
    dx = call("nn.conv2d_transpose", g, h, output_padding=[oph, opw], **_window(a))
    return [dg, dx]


@register_tangent("nn.conv2d_backward_weight")
def _conv2d_backward_weight_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    g, x = c.args
    dg, dx = tangents
    a = dict(attrs_of(c))
    result = plus(None if dg is None else call("nn.conv2d_backward_weight", dg, x, **a),
                  None if dx is None else call("nn.conv2d_backward_weight", g, dx, **a))
    return zero_tangent_if_none(result, out)


@register_gradient("nn.max_pool2d_grad")
def _max_pool2d_grad_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    _, x = c.args
    return [call("nn.max_pool2d_pick", x, grad, **dict(attrs_of(c))), zeros_like(x)]


@register_tangent("nn.max_pool2d_grad")
def _max_pool2d_grad_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    _, x = c.args
    dg, _ = tangents
    if dg is None:
        return zeros_like(out)
    return call("nn.max_pool2d_grad", dg, x, **dict(attrs_of(c)))


@register_gradient("nn.max_pool2d_pick")
def _max_pool2d_pick_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    x, _ = c.args
    return [zeros_like(x), call("nn.max_pool2d_grad", grad, x, **dict(attrs_of(c)))]


@register_tangent("nn.max_pool2d_pick")
def _max_pool2d_pick_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, _ = c.args
    _, dv = tangents
    if dv is None:
        return zeros_like(out)
    return call("nn.max_pool2d_pick", x, dv, **dict(attrs_of(c)))


@register_gradient("nn.avg_pool2d_grad")
def _avg_pool2d_grad_grad(c: Call, out: Expr, grad: Expr) -> Grads:
    _, x = c.args
    return [call("nn.avg_pool2d", grad, **dict(attrs_of(c))), zeros_like(x)]


@register_tangent("nn.avg_pool2d_grad")
def _avg_pool2d_grad_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    _, x = c.args
    dg, _ = tangents
    if dg is None:
        return zeros_like(out)
    return call("nn.avg_pool2d_grad", dg, x, **dict(attrs_of(c)))
