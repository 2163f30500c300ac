"""Gradient and tangent rules of the ``tensor`` family: elementwise and broadcast operators.

Reverse rules (``GRADIENTS``) follow TVM's ``_tensor_grad.py`` conventions and JAX's choices
where they differ; every rule is written with registered operators so it can be differentiated
again (paper §4.2: gradients of gradients).

Decisions, per operator:

* ``add subtract multiply divide power maximum minimum mod floor_mod``: the partial
  derivatives, each operand's adjoint summed back to its shape with ``collapse_sum_like``
  (the adjoint of implicit broadcasting).  ``maximum``/``minimum`` send the adjoint to ``x``
  where ``x >= y`` (resp. ``x <= y``), ties included, and to ``y`` elsewhere (TVM's choice).
  ``power``'s exponent adjoint is ``g * log(x) * x**y`` with ``0`` where ``x == 0`` (so that
  ``0**y`` does not poison the exponent's gradient with NaN; JAX does the same), and the
  base's is ``g * y * x**(y - 1)`` with ``0`` where ``y == 0``.
  ``mod`` is ``x - trunc(x / y) * y`` and ``floor_mod`` is ``x - floor(x / y) * y``: the
  adjoint of ``y`` is ``-g * trunc(x / y)`` (resp. ``floor``), of ``x`` it is ``g``.
* ``floor ceil round trunc sign floor_divide``: piecewise constant; the gradient is zero
  (as in TVM and JAX) rather than undefined.
* ``abs``: ``g * sign(x)`` (zero at 0).  ``clip``: ``g`` inside ``[a_min, a_max]``
  (bounds included), zero outside.
* ``cast``: ``cast(g, x.dtype)`` between float dtypes; no gradient when either side is an
  integer or bool tensor.  ``copy``: ``g``.
* ``where(c, x, y)``: ``where(c, g, 0)`` and ``where(c, 0, g)`` summed back; the condition
  gets none.
* Integer operands never carry derivatives: every rule returns ``None`` for them.
* ``equal not_equal less less_equal greater greater_equal logical_and logical_or
  logical_not``: declared without rules — the results are booleans.

Tangent rules (``TANGENTS``): unary elementwise operators reuse the gradient rule (diagonal
Jacobian, :func:`ad.rules._linear.tangent_from_gradient`); binary operators sum
``partial_i * t_i`` over the operands that have a tangent and broadcast the sum to the
output's shape when no contributing operand already has it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ad.rules._build import call, is_float, ones_like, tensor_type, zeros_like
from ad.rules._linear import (
    collapse_like,
    expand_like,
    same_shape,
    scalar_like,
    tangent_from_gradient,
)
from semantics.expr import Call, Expr
from semantics.ops.tables import (
    declare_no_gradient,
    declare_no_tangent,
    register_gradient,
    register_tangent,
)

# --- helpers ---------------------------------------------------------------------------------

Partial = Callable[[Call, Expr], Expr | None]


def _mul(a: Expr, b: Expr | None) -> Expr:
    """``a * b``, or ``a`` when ``b`` is None (a partial derivative of exactly one)."""
    return a if b is None else call("multiply", a, b)


def _binary(name: str, dx: Partial, dy: Partial, *, y_sign: float = 1.0) -> None:
    """Register both rules of a differentiable binary broadcast operator from its partials.

    ``dx(call, out)`` / ``dy(call, out)`` build the elementwise partial derivative of the
    output with respect to ``x`` / ``y``; ``None`` stands for the constant 1 (``add``).
    ``y_sign = -1`` with ``dy`` returning None stands for the constant -1 (``subtract``).
    """

    def gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
        x, y = c.args
        if not is_float(out):
            return [None, None]
        gx = collapse_like(_mul(g, dx(c, out)), x)
        py = dy(c, out)
        if py is None and y_sign < 0:
            gy = collapse_like(call("negative", g), y)
        else:
            gy = collapse_like(_mul(g, py), y)
        return [gx, gy]

    def tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
        if not is_float(out):
            return None
        x, y = c.args
        tx, ty = tangents
        terms: list[Expr] = []
        full = False
        if tx is not None:
            terms.append(_mul(tx, dx(c, out)))
            full = full or same_shape(x.checked_type, out.checked_type)
        if ty is not None:
            py = dy(c, out)
            if py is None and y_sign < 0:
                terms.append(call("negative", ty))
            else:
                terms.append(_mul(ty, py))
            full = full or same_shape(y.checked_type, out.checked_type)
        if not terms:
            return None
        total = terms[0] if len(terms) == 1 else call("add", terms[0], terms[1])
        return total if full else call("broadcast_to_like", total, out)

    register_gradient(name)(gradient)
    register_tangent(name)(tangent)


def _unary(name: str, gradient: Callable[[Call, Expr, Expr], Expr]) -> None:
    """Register a unary elementwise operator: ``gradient(call, out, g)`` is the adjoint of the
    (float) operand; the tangent rule is the same expression with ``g`` the tangent."""

    def rule(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
        if not is_float(c.args[0]):
            return [None]
        return [gradient(c, out, g)]

    register_gradient(name)(rule)
    register_tangent(name)(tangent_from_gradient(rule))


def _x(c: Call) -> Expr:
    return c.args[0]


def _y(c: Call) -> Expr:
    return c.args[1]


def _k(value: float, c: Call) -> Expr:
    """A 0-d constant of the call's first operand dtype."""
    return scalar_like(value, c.args[0])


# --- binary arithmetic -----------------------------------------------------------------------

def _one(c: Call, out: Expr) -> Expr | None:
    return None


_binary("add", _one, _one)
_binary("subtract", _one, _one, y_sign=-1.0)
_binary("multiply", lambda c, out: _y(c), lambda c, out: _x(c))
# d(x/y)/dx = 1/y;  d(x/y)/dy = -x/y**2 = -out/y
_binary("divide", lambda c, out: call("divide", _k(1.0, c), _y(c)),
        lambda c, out: call("negative", call("divide", out, _y(c))))


def _power_dx(c: Call, out: Expr) -> Expr:
    # y * x**(y - 1), and 0 where y == 0 (x**0 is constant; 0 * 0**-1 would be NaN)
    x, y = c.args
    slope = call("multiply", y, call("power", x, call("subtract", y, _k(1.0, c))))
    return call("where", call("equal", y, _k(0.0, c)), _k(0.0, c), slope)


def _power_dy(c: Call, out: Expr) -> Expr:
    # log(x) * x**y, and 0 where x == 0
    x = _x(c)
    safe = call("where", call("equal", x, _k(0.0, c)), ones_like(x), x)
    return call("multiply", call("log", safe), out)


_binary("power", _power_dx, _power_dy)
_binary("maximum",
        lambda c, out: call("cast", call("greater_equal", _x(c), _y(c)),
                            dtype=tensor_type(out).dtype),
        lambda c, out: call("cast", call("less", _x(c), _y(c)), dtype=tensor_type(out).dtype))
_binary("minimum",
        lambda c, out: call("cast", call("less_equal", _x(c), _y(c)),
                            dtype=tensor_type(out).dtype),
        lambda c, out: call("cast", call("greater", _x(c), _y(c)),
                            dtype=tensor_type(out).dtype))
# mod(x, y) = x - trunc(x / y) * y;  floor_mod(x, y) = x - floor(x / y) * y
_binary("mod", _one,
        lambda c, out: call("negative", call("trunc", call("divide", _x(c), _y(c)))))
_binary("floor_mod", _one,
        lambda c, out: call("negative", call("floor", call("divide", _x(c), _y(c)))))


@register_gradient("floor_divide")
def _floor_divide_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """Piecewise constant: zero adjoints for float operands."""
    return [zeros_like(a) if is_float(a) else None for a in c.args]


@register_tangent("floor_divide")
def _floor_divide_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """Piecewise constant: a zero tangent."""
    if not is_float(out) or all(t is None for t in tangents):
        return None
    return zeros_like(out)


# --- unary -----------------------------------------------------------------------------------

_unary("negative", lambda c, out, g: call("negative", g))
_unary("abs", lambda c, out, g: call("multiply", g, call("sign", _x(c))))
_unary("exp", lambda c, out, g: call("multiply", g, out))
_unary("log", lambda c, out, g: call("divide", g, _x(c)))
# d sqrt(x) = 1 / (2 sqrt(x))
_unary("sqrt", lambda c, out, g: call("divide", call("multiply", g, _k(0.5, c)), out))
# d x**-1/2 = -1/2 x**-3/2 = -1/2 * out / x
_unary("rsqrt", lambda c, out, g: call(
    "multiply", g, call("divide", call("multiply", out, _k(-0.5, c)), _x(c))))
_unary("tanh", lambda c, out, g: call(
    "multiply", g, call("subtract", _k(1.0, c), call("multiply", out, out))))
_unary("sigmoid", lambda c, out, g: call(
    "multiply", g, call("multiply", out, call("subtract", _k(1.0, c), out))))
# d erf(x) = 2/sqrt(pi) exp(-x**2)
_unary("erf", lambda c, out, g: call(
    "multiply", g, call("multiply", _k(2.0 / math.sqrt(math.pi), c),
                        call("exp", call("negative", call("multiply", _x(c), _x(c)))))))
_unary("sin", lambda c, out, g: call("multiply", g, call("cos", _x(c))))
_unary("cos", lambda c, out, g: call("negative", call("multiply", g, call("sin", _x(c)))))
for _name in ("floor", "ceil", "round", "trunc", "sign"):
    _unary(_name, lambda c, out, g: zeros_like(_x(c)))
_unary("copy", lambda c, out, g: g)


def _clip_gradient(c: Call, out: Expr, g: Expr) -> Expr:
    x = _x(c)
    inside = call("logical_and",
                  call("greater_equal", x, _k(float(c.attrs["a_min"]), c)),
                  call("less_equal", x, _k(float(c.attrs["a_max"]), c)))
    return call("where", inside, g, zeros_like(g))


_unary("clip", _clip_gradient)


@register_gradient("cast")
def _cast_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``cast(g, x.dtype)`` between float dtypes; nothing flows through an integer side."""
    x = _x(c)
    if not (is_float(x) and is_float(out)):
        return [None]
    if tensor_type(x).dtype == tensor_type(out).dtype:
        return [g]
    return [call("cast", g, dtype=tensor_type(x).dtype)]


@register_tangent("cast")
def _cast_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """``cast(t, out.dtype)`` between float dtypes; none through an integer side."""
    t = tangents[0]
    if t is None or not (is_float(_x(c)) and is_float(out)):
        return None
    if tensor_type(_x(c)).dtype == tensor_type(out).dtype:
        return t
    return call("cast", t, dtype=tensor_type(out).dtype)


# --- where -----------------------------------------------------------------------------------

@register_gradient("where")
def _where_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``where(c, g, 0)`` to ``x`` and ``where(c, 0, g)`` to ``y``, summed back; none to the
    condition."""
    cond, x, y = c.args
    if not is_float(out):
        return [None, None, None]
    zero = scalar_like(0.0, out)
    return [None,
            collapse_like(call("where", cond, g, zero), x),
            collapse_like(call("where", cond, zero, g), y)]


@register_tangent("where")
def _where_tangent(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
    """``where(c, t_x, t_y)`` (a missing tangent is 0), broadcast to the output's shape."""
    cond, x, y = c.args
    _, tx, ty = tangents
    if not is_float(out) or (tx is None and ty is None):
        return None
    zero = scalar_like(0.0, out)
    picked = call("where", cond, tx if tx is not None else zero, ty if ty is not None else zero)
    if same_shape(cond.checked_type, out.checked_type):
        return picked
    return expand_like(picked, out, None)


# --- boolean results -------------------------------------------------------------------------

_BOOL_REASON = "its result is a boolean tensor, which carries no derivative"
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
              "logical_and", "logical_or", "logical_not"):
    declare_no_gradient(_name, _BOOL_REASON)
    declare_no_tangent(_name, _BOOL_REASON)
