"""Helpers that build the Relay expressions differentiation rules return.

Every helper returns a fresh, untyped AST node; rules compose them as they would write Relay
text (``call("multiply", g, out)`` is ``multiply(%g, %out)``).
"""

from __future__ import annotations

from typing import Any

from semantics.expr import EMPTY_ATTRS, Attrs, Call, Constant, Expr, Op, Tuple, TupleGetItem, const
from semantics.shapes import AnyDim
from semantics.types import TensorType, Type


def call(op: str, *args: Expr, **attrs: Any) -> Call:
    """``op(args...)`` with the given attributes (attribute values as the registry expects)."""
    return Call(Op(op), tuple(args), Attrs(attrs) if attrs else EMPTY_ATTRS)


def item(e: Expr, index: int) -> TupleGetItem:
    """``e.index``."""
    return TupleGetItem(e, index)


def tup(*fields: Expr) -> Tuple:
    """``(fields...)``."""
    return Tuple(tuple(fields))


def scalar(value: float | int, dtype: str) -> Constant:
    """A 0-d constant of ``dtype``."""
    return const(value, dtype)


def tensor_type(e: Expr) -> TensorType:
    """The checked tensor type of an atom handed to a rule.

    Raises:
        TypeError: the atom carries no tensor ``checked_type`` (a bug in the caller: the AD
            transformation types every atom it passes to a rule).
    """
    t: Type | None = e.checked_type
    if not isinstance(t, TensorType):
        raise TypeError(f"rule argument has no tensor checked_type: {t!r}")
    return t


def is_float(e: Expr) -> bool:
    """Whether the atom is a floating-point tensor (the only kind that carries derivatives)."""
    t = e.checked_type
    return isinstance(t, TensorType) and t.dtype.startswith(("float", "bfloat"))


def zeros_like(e: Expr) -> Call:
    """``zeros_like(e)``."""
    return call("zeros_like", e)


def ones_like(e: Expr) -> Call:
    """``ones_like(e)``."""
    return call("ones_like", e)


def collapse_to(g: Expr, like: Expr) -> Expr:
    """``g`` summed back to the shape of ``like`` (the adjoint of implicit broadcasting);
    ``g`` itself when the two checked types are known to have the same shape (``?`` dims are
    not known to be equal: two of them may differ at run time)."""
    gt, lt = g.checked_type, like.checked_type
    if (isinstance(gt, TensorType) and isinstance(lt, TensorType) and gt.shape == lt.shape
            and not any(isinstance(d, AnyDim) for d in gt.shape)):
        return g
    return call("collapse_sum_like", g, like)
