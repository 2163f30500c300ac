"""Gradient and tangent rules of the ``creation`` family.

* ``zeros ones``: no inputs — the gradient rule returns no entries and there is no tangent.
* ``zeros_like ones_like``: the output does not depend on the input's *values*, so no
  gradient flows into it (``None``); the tangent is zero (``zeros_like(out)``).
* ``full(fill)``: every element is the (cast) fill value, so the fill value's adjoint is
  ``sum(g)`` cast back to its dtype; the tangent is ``full(t_fill)`` (linear).
  ``full_like(x, fill)``: the same for ``fill``, nothing for the shape-only ``x``.
  Between an integer and a float dtype nothing flows (the cast truncates).
* ``arange(start, stop, step)``: element ``i`` is ``start + step * i``, so ``start`` gets
  ``sum(g)`` and ``step`` gets ``sum(g * i)`` with ``i = (out - start) / step`` (the length
  is only known at run time); ``stop`` only moves the length, a piecewise-constant
  dependence: its gradient is zero (TVM's choice).  Tangent: ``t_start + t_step * i``.
  Integer ranges carry no derivatives.
"""

from __future__ import annotations

from ad.rules._build import call, is_float, tensor_type, zeros_like
from ad.rules._linear import linear_tangent
from semantics.expr import Call, Expr
from semantics.ops.tables import register_gradient, register_tangent

# --- no inputs -------------------------------------------------------------------------------


def _nothing(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """No arguments, no gradients."""
    return []


def _constant_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """The output is a constant: no tangent without inputs, a zero one otherwise."""
    if not is_float(out) or all(t is None for t in tangents):
        return None
    return zeros_like(out)


for _name in ("zeros", "ones"):
    register_gradient(_name)(_nothing)
    register_tangent(_name)(_constant_tangent)


@register_gradient("zeros_like")
@register_gradient("ones_like")
def _like_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """Only the input's shape matters: no gradient flows."""
    return [None]


register_tangent("zeros_like")(_constant_tangent)
register_tangent("ones_like")(_constant_tangent)


# --- fill values -----------------------------------------------------------------------------

def _fill_adjoint(fill: Expr, out: Expr, g: Expr) -> Expr | None:
    """``sum(g)`` in ``fill``'s dtype, or None across an integer dtype."""
    if not (is_float(fill) and is_float(out)):
        return None
    total = call("sum", g)
    fill_dtype = tensor_type(fill).dtype
    if fill_dtype != tensor_type(out).dtype:
        total = call("cast", total, dtype=fill_dtype)
    return total


@register_gradient("full")
def _full_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The fill value gets the sum of the adjoint."""
    return [_fill_adjoint(c.args[0], out, g)]


@register_gradient("full_like")
def _full_like_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The fill value gets the sum of the adjoint; ``x`` (shape only) gets none."""
    return [None, _fill_adjoint(c.args[1], out, g)]


register_tangent("full")(linear_tangent([0]))
register_tangent("full_like")(linear_tangent([1]))


# --- arange ----------------------------------------------------------------------------------

def _positions(c: Call, out: Expr) -> Expr:
    """``i = (out - start) / step``: the index of each element as a float."""
    start, _, step = c.args
    return call("divide", call("subtract", out, start), step)


@register_gradient("arange")
def _arange_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``sum(g)`` to ``start``, 0 to ``stop``, ``sum(g * i)`` to ``step``."""
    start, stop, step = c.args
    if not is_float(out):
        return [None, None, None]
    return [call("sum", g), zeros_like(stop),
            call("sum", call("multiply", g, _positions(c, out)))]


@register_tangent("arange")
def _arange_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """``t_start + t_step * i`` (``stop`` only moves the length)."""
    t_start, t_stop, t_step = tangents
    if not is_float(out) or all(t is None for t in tangents):
        return None
    terms: list[Expr] = []
    if t_start is not None:
        terms.append(call("broadcast_to_like", t_start, out))
    if t_step is not None:
        terms.append(call("multiply", t_step, _positions(c, out)))
    if not terms:
        return zeros_like(out)
    return terms[0] if len(terms) == 1 else call("add", terms[0], terms[1])
