"""Generic rule makers shared by the operator families (issue 11 §2).

Three patterns cover most operators:

* **linear operators** (``reshape``, ``transpose``, ``concatenate``, ``sum``, ...): the output
  is a linear function of the differentiable arguments, so the tangent of the output is the
  operator itself applied to the tangents (:func:`linear_tangent`); arguments that carry no
  tangent (indices, shapes) are passed through unchanged;
* **unary elementwise operators** (``exp``, ``tanh``, ...): the Jacobian is diagonal, so the
  vector-Jacobian product *is* the Jacobian-vector product and the tangent rule is the
  gradient rule applied to the tangent (:func:`tangent_from_gradient`);
* **shape-preserving broadcast**: :func:`expand_like` is the adjoint of
  :func:`collapse_like` (a tangent of a broadcast operand grows to the output's
  shape with ``broadcast_to_like``).

Everything here builds Relay expressions with registered operators only, so rules built from
these helpers can be differentiated again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ad.rules._build import call, is_float, scalar, tensor_type, zeros_like
from semantics.expr import Attrs, Call, Expr, Tuple, TupleGetItem
from semantics.shapes import AnyDim
from semantics.types import TensorType, TupleType, Type

GradientRule = Callable[[Call, Expr, Expr], list[Expr | None]]
TangentRule = Callable[[Call, Expr, list[Expr | None]], Expr | None]


def op_name(c: Call) -> str:
    """The operator name of a call handed to a rule."""
    return getattr(c.op, "name", "?")


def same_shape(a: Type | None, b: Type | None) -> bool:
    """Whether two checked tensor types are known to have the same shape (a ``?`` dimension
    is never known to equal another: two ``?`` may differ at run time)."""
    return (isinstance(a, TensorType) and isinstance(b, TensorType)
            and not any(isinstance(d, AnyDim) for d in a.shape)
            and tuple(a.shape) == tuple(b.shape))


def collapse_like(g: Expr, like: Expr) -> Expr:
    """``g`` summed back to the shape of ``like`` (the adjoint of implicit broadcasting);
    ``g`` itself when the checked types are known to have the same shape.  Unlike
    :func:`ad.rules._build.collapse_to` it does not take two ``?`` dimensions for equal."""
    if same_shape(g.checked_type, like.checked_type):
        return g
    return call("collapse_sum_like", g, like)


def expand_like(t: Expr, like: Expr, t_type: Type | None = None) -> Expr:
    """``t`` broadcast to the shape of ``like`` (the tangent of an implicitly broadcast
    operand); ``t`` itself when ``t_type`` (or ``t``'s checked type) has ``like``'s shape."""
    ty = t_type if t_type is not None else t.checked_type
    if same_shape(ty, like.checked_type):
        return t
    return call("broadcast_to_like", t, like)


def zero_of(e: Expr) -> Expr:
    """A zero of ``e``'s checked type: ``zeros_like`` for a tensor, a tuple of zeros for a
    tuple of tensors.

    Raises:
        TypeError: ``e`` has no tensor or tuple-of-tensors checked type.
    """
    t = e.checked_type
    if isinstance(t, TupleType):
        return Tuple(tuple(_zero_field(e, i, f) for i, f in enumerate(t.fields)))
    tensor_type(e)
    return zeros_like(e)


def _zero_field(e: Expr, i: int, t: Type) -> Expr:
    if not isinstance(t, TensorType):
        raise TypeError(f"rule argument field {i} is not a tensor: {t!r}")
    return zeros_like(TupleGetItem(e, i))


def linear_tangent(differentiable: Sequence[int] | None = None) -> TangentRule:
    """The tangent rule of an operator linear in its ``differentiable`` arguments (default:
    all): ``op(t_1, ..., t_n)`` with the call's attributes, a zero tangent where an argument
    has none, and the original argument in the other positions.

    When no differentiable argument has a tangent, the output has none (``None``).
    """

    def rule(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
        if not is_float(out) and not isinstance(out.checked_type, TupleType):
            return None
        positions = range(len(c.args)) if differentiable is None else differentiable
        if all(tangents[i] is None for i in positions):
            return None
        args: list[Expr] = list(c.args)
        for i in positions:
            t = tangents[i]
            args[i] = t if t is not None else zero_of(c.args[i])
        return Call(c.op, tuple(args), c.attrs, c.type_args)

    return rule


def tangent_from_gradient(gradient: GradientRule) -> TangentRule:
    """The tangent rule of a unary elementwise operator from its gradient rule: with a
    diagonal Jacobian, the vector-Jacobian product of the tangent is the Jacobian-vector
    product."""

    def rule(c: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None:
        t = tangents[0]
        if t is None:
            return None
        return gradient(c, out, t)[0]

    return rule


def scalar_like(value: float, e: Expr) -> Expr:
    """A 0-d constant of ``e``'s dtype (``e`` a tensor atom)."""
    return scalar(value, tensor_type(e).dtype)


def attrs_of(c: Call) -> Attrs:
    """The call's attributes normalized by the operator's schema (defaults filled in)."""
    from semantics.ops.registry import get

    return get(op_name(c)).normalize_attrs(c.attrs)
