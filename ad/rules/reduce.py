"""Gradient and tangent rules of the ``reduce`` family.

Every reduction folds a set of axes ``A`` of ``x`` (:func:`semantics.ops.relations.reduce_axes`:
``axis``, ``exclude``; ``keepdims`` keeps them as 1s).  The adjoint ``g`` of the output is
first *un-reduced*: ``expand_dims`` at each folded axis (unless ``keepdims``) and
``broadcast_to_like(x)``; call that ``G``.  Then, for float ``x``:

* ``sum``: ``G``; ``mean``: ``G / n`` with ``n`` the number of folded elements (a constant
  when the shape is concrete, ``sum(ones_like(x), A, keepdims)`` otherwise).
* ``prod``: ``G * p_i`` where ``p_i`` is the product of the *other* elements of the group,
  computed without dividing: the group (folded axes moved last and flattened to ``m``
  elements) is repeated ``m`` times with ``x_i`` replaced by 1 in row ``i`` (``where`` with a
  constant identity matrix) and multiplied out — exact at zeros, and its own derivative is
  exact too (O(m) extra work per element).  For a symbolic group size the rule falls back to
  ``P / x_i`` with zeros handled by counting them (``z`` zeros, ``P`` the product of the
  nonzero elements: ``P / x_i`` when ``z = 0``, ``P`` at the zero when ``z = 1``, else 0),
  whose own derivative is wrong at zeros.
* ``max``/``min``: the adjoint is shared **equally among ties** (JAX's choice; TVM gives
  every tied element the full adjoint): ``G * mask / count(mask)`` with ``mask = (x ==
  out)``.  When the group's result is NaN no element equals it and the gradient is 0.
* ``variance(data, mean)``: the two inputs are independent arguments of the operator, so
  ``d/d data = 2 (data - mean) G / (n - unbiased)`` and ``d/d mean`` is its negation summed
  back to ``mean``'s shape (when ``mean`` is the data's mean this contribution is zero, and
  ``variance(x, mean(x))`` differentiates correctly either way).
* ``argmax argmin all any``: declared without rules (integer / boolean results).

Tangent rules: ``sum``/``mean`` are linear (the reduction of the tangent); the others sum
``partial * t`` over the folded axes with the same ``keepdims``, using the partials above with
an adjoint of one.
"""

from __future__ import annotations

import numpy as np

from ad.rules._build import call, is_float, ones_like, tensor_type, zeros_like
from ad.rules._linear import attrs_of, linear_tangent, op_name, scalar_like
from semantics.expr import Call, Constant, Expr
from semantics.ops.relations import reduce_axes
from semantics.ops.tables import (
    declare_no_gradient,
    declare_no_tangent,
    register_gradient,
    register_tangent,
)

# --- helpers ---------------------------------------------------------------------------------


def folded_axes(c: Call) -> tuple[int, ...]:
    """The sorted axes of ``c.args[0]`` that the reduction ``c`` folds."""
    a = attrs_of(c)
    ndim = len(tensor_type(c.args[0]).shape)
    axis = a["axis"]
    return reduce_axes(op_name(c), (), None if axis is None else tuple(axis), ndim,
                       bool(a["exclude"]))


def unreduce(g: Expr, c: Call) -> Expr:
    """``g`` (of the reduction's output shape) broadcast back to the shape of ``c.args[0]``."""
    x = c.args[0]
    if not attrs_of(c)["keepdims"]:
        for axis in folded_axes(c):            # ascending: each axis is final when inserted
            g = call("expand_dims", g, axis=axis)
    return call("broadcast_to_like", g, x)


def _axis_attrs(c: Call) -> dict[str, object]:
    """``axis`` and ``exclude`` of ``c`` as written (an empty fold stays empty: ``axis=[]``
    would mean every axis)."""
    a = attrs_of(c)
    axis = a["axis"]
    return {"axis": None if axis is None else list(axis), "exclude": bool(a["exclude"])}


def _reduce_like(e: Expr, c: Call, op: str = "sum") -> Expr:
    """``op`` over the folded axes of ``c``, with ``c``'s ``keepdims``."""
    return call(op, e, keepdims=bool(attrs_of(c)["keepdims"]), **_axis_attrs(c))


def _group_reduce(e: Expr, c: Call, op: str = "sum") -> Expr:
    """``op`` over the folded axes of ``c`` with ``keepdims``, broadcast to ``e``'s shape."""
    return call("broadcast_to_like", call(op, e, keepdims=True, **_axis_attrs(c)), e)


def count(c: Call) -> Expr:
    """The number of folded elements per group, as a 0-d constant of ``x``'s dtype when the
    shape is concrete (a tensor broadcastable to ``x`` otherwise)."""
    x = c.args[0]
    shape = tensor_type(x).shape
    axes = folded_axes(c)
    n = 1
    for a in axes:
        d = shape[a]
        if not isinstance(d, int):
            break
        n *= d
    else:
        return scalar_like(float(n), x)
    return call("sum", ones_like(x), keepdims=True, **_axis_attrs(c))


def _no_float(c: Call) -> bool:
    return not is_float(c.args[0])


# --- sum, mean -------------------------------------------------------------------------------

@register_gradient("sum")
def _sum_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The adjoint broadcast back over the folded axes."""
    if _no_float(c):
        return [None]
    return [unreduce(g, c)]


@register_gradient("mean")
def _mean_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The adjoint broadcast back, divided by the group size."""
    if _no_float(c):
        return [None]
    return [call("divide", unreduce(g, c), count(c))]


register_tangent("sum")(linear_tangent())
register_tangent("mean")(linear_tangent())


# --- prod ------------------------------------------------------------------------------------

def _prod_partial(c: Call) -> Expr:
    """``d prod / d x_i``: the product of the other elements of ``x_i``'s group."""
    x = c.args[0]
    shape = tensor_type(x).shape
    axes = folded_axes(c)
    m = 1
    for a in axes:
        d = shape[a]
        if not isinstance(d, int):
            return _prod_partial_dividing(c)
        m *= d
    if m == 0:
        return zeros_like(x)
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = kept + list(axes)
    moved = x if perm == sorted(perm) else call("transpose", x, axes=perm)
    # K + F -> K + (m,) -> K + (1, m); row i of the last two axes is the group with x_i := 1
    flat = call("reshape", moved, newshape=[0] * len(kept) + [m])
    rows = call("where", Constant(np.eye(m, dtype=bool)), scalar_like(1.0, x),
                call("expand_dims", flat, axis=len(kept)))
    others = call("reshape_like", call("prod", rows, axis=[len(kept) + 1]), moved)
    if perm == sorted(perm):
        return others
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return call("transpose", others, axes=inverse)


def _prod_partial_dividing(c: Call) -> Expr:
    """The same for a symbolic group size, without dividing by zero (its own derivative is
    wrong where a group holds a zero: there it is piecewise constant)."""
    x = c.args[0]
    zero, one = scalar_like(0.0, x), scalar_like(1.0, x)
    is_zero = call("equal", x, zero)
    nonzero = call("where", is_zero, ones_like(x), x)
    p = _group_reduce(nonzero, c, "prod")
    zeros = _group_reduce(call("cast", is_zero, dtype=tensor_type(x).dtype), c, "sum")
    at_zero = call("where", call("equal", zeros, one), p, zeros_like(x))
    elsewhere = call("where", call("equal", zeros, zero), call("divide", p, nonzero),
                     zeros_like(x))
    return call("where", is_zero, at_zero, elsewhere)


@register_gradient("prod")
def _prod_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The adjoint times the product of the other elements (no division by zero)."""
    if _no_float(c):
        return [None]
    return [call("multiply", unreduce(g, c), _prod_partial(c))]


@register_tangent("prod")
def _prod_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """``sum_i p_i t_i`` over each group."""
    t = tangents[0]
    if t is None or _no_float(c):
        return None
    return _reduce_like(call("multiply", _prod_partial(c), t), c)


# --- max, min --------------------------------------------------------------------------------

def _extremum_weights(c: Call, out: Expr) -> Expr:
    """``mask / count(mask)`` with ``mask = (x == out)`` per group (ties share equally)."""
    x = c.args[0]
    dtype = tensor_type(x).dtype
    reached = out
    if not attrs_of(c)["keepdims"]:
        for axis in folded_axes(c):
            reached = call("expand_dims", reached, axis=axis)
    mask = call("cast", call("equal", x, reached), dtype=dtype)
    ties = call("maximum", _group_reduce(mask, c, "sum"), scalar_like(1.0, x))
    return call("divide", mask, ties)


def _extremum(name: str) -> None:
    def gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
        if _no_float(c):
            return [None]
        return [call("multiply", unreduce(g, c), _extremum_weights(c, out))]

    def tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
        t = tangents[0]
        if t is None or _no_float(c):
            return None
        return _reduce_like(call("multiply", _extremum_weights(c, out), t), c)

    gradient.__doc__ = f"The adjoint of ``{name}``, shared equally among the tied elements."
    tangent.__doc__ = f"The tangent of ``{name}``: the mean tangent of the tied elements."
    register_gradient(name)(gradient)
    register_tangent(name)(tangent)


_extremum("max")
_extremum("min")


# --- variance --------------------------------------------------------------------------------

def _variance_denominator(c: Call) -> Expr:
    n = count(c)
    if attrs_of(c)["unbiased"]:
        return call("subtract", n, scalar_like(1.0, c.args[0]))
    return n


def _variance_partial(c: Call) -> Expr:
    """``d variance / d data = 2 (data - mean) / (n - unbiased)``."""
    data, mean = c.args
    two = scalar_like(2.0, data)
    return call("divide", call("multiply", two, call("subtract", data, mean)),
                _variance_denominator(c))


@register_gradient("variance")
def _variance_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``2 (data - mean) G / (n - unbiased)`` to the data, its negation summed back to the
    mean."""
    data, mean = c.args
    if _no_float(c):
        return [None, None]
    gd = call("multiply", unreduce(g, c), _variance_partial(c))
    return [gd, call("collapse_sum_like", call("negative", gd), mean)]


@register_tangent("variance")
def _variance_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """``sum(2 (data - mean) (t_data - t_mean)) / (n - unbiased)`` over each group."""
    td, tm = tangents
    if _no_float(c) or (td is None and tm is None):
        return None
    data = c.args[0]
    if td is None:
        assert tm is not None
        diff: Expr = call("broadcast_to_like", call("negative", tm), data)
    elif tm is None:
        diff = td
    else:
        diff = call("subtract", td, tm)
    return _reduce_like(call("multiply", _variance_partial(c), diff), c)


# --- integer and boolean results -------------------------------------------------------------

for _name, _reason in (
        ("argmax", "its result is an integer index (the derivative is zero almost everywhere)"),
        ("argmin", "its result is an integer index (the derivative is zero almost everywhere)"),
        ("all", "it reduces boolean tensors, which carry no derivative"),
        ("any", "it reduces boolean tensors, which carry no derivative")):
    declare_no_gradient(_name, _reason)
    declare_no_tangent(_name, _reason)
