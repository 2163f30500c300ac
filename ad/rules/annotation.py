"""Rules of the ``annotation`` family: ``annotation.simulated_quantize`` (simQ).

simQ is piecewise constant in ``data`` (its derivative is zero almost everywhere), which would
stop every gradient of a quantization-aware model.  The rules use the **straight-through
estimator** instead (Bengio et al. 2013; the usual choice of quantization-aware training):
rounding and clipping are treated as the identity, so

* reverse mode: ``data`` receives the output's adjoint unchanged; ``dom_scale``, ``clip_min``
  and ``clip_max`` receive none (no contribution);
* forward mode: the output's tangent is ``data``'s tangent.

These are *not* the derivatives of the function (finite differences disagree); they are the
documented surrogate (docs/ops.md, ``semantics/ops/annotation.py``).
"""

from __future__ import annotations

from semantics.expr import Call, Expr
from semantics.ops.tables import register_gradient, register_tangent


@register_gradient("annotation.simulated_quantize")
def _simq_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    return [g, None, None, None]


@register_tangent("annotation.simulated_quantize")
def _simq_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    return tangents[0]
