"""Rules of the Winograd convolution operators (``semantics/ops/winograd.py``).

Forward mode: ``nn.contrib_conv2d_winograd_weight_transform`` is linear in its kernel, so its
tangent is the transform of the kernel's tangent; the convolution is bilinear in its data
and its transformed weight, so its tangent is ``conv(dx, U) + conv(x, dU)`` (the same call).

Reverse mode has no rule: the adjoints would need the transposed transforms
(``G^T adj G`` for the weight, ``B adj B^T`` of the input tiles scattered back to
overlapping positions), which no registered operator computes. The operators are an
inference rewrite (AlterOpLayout at ``-O3`` introduces them after any differentiation, as
in TVM, which registers no gradient for them either); differentiate the ``nn.conv2d`` they
replace.
"""

from __future__ import annotations

from ad.rules._build import call
from ad.rules.nn import Tangents, attrs_of, plus
from semantics.expr import Call, Expr
from semantics.ops.tables import declare_no_gradient, register_tangent
from semantics.ops.winograd import WEIGHT_TRANSFORM, WITHOUT_WEIGHT_TRANSFORM

_REASON = ("an inference rewrite of nn.conv2d (AlterOpLayout at -O3, after differentiation; "
           "TVM registers no gradient either): the adjoints need transposed Winograd "
           "transforms no operator computes — differentiate the nn.conv2d instead")

declare_no_gradient(WEIGHT_TRANSFORM, _REASON)
declare_no_gradient(WITHOUT_WEIGHT_TRANSFORM, _REASON)


@register_tangent(WEIGHT_TRANSFORM)
def _weight_transform_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    (dw,) = tangents
    return None if dw is None else call(WEIGHT_TRANSFORM, dw, **dict(attrs_of(c)))


@register_tangent(WITHOUT_WEIGHT_TRANSFORM)
def _winograd_tangent(c: Call, out: Expr, tangents: Tangents) -> Expr | None:
    x, u = c.args
    dx, du = tangents
    a = dict(attrs_of(c))
    return plus(None if dx is None else call(WITHOUT_WEIGHT_TRANSFORM, dx, u, **a),
                None if du is None else call(WITHOUT_WEIGHT_TRANSFORM, x, du, **a))
