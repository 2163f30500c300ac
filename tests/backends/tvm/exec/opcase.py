"""Helpers of the executor tests: one valid call of an operator, as a primitive function and
as a module (imported as ``opcase``)."""

from __future__ import annotations

from typing import Any

from conformance import values_of
from conformance.strategies.opcalls import draw_valid_call
from semantics.expr import Attrs, Call, Function, Op, Var
from semantics.module import IRModule

DTYPES = ("float32", "int32", "bool", "int64", "uint8", "float16")


def draw_call(draw: Any, name: str) -> tuple[Any, tuple[Any, ...]] | None:
    """``(OpCall, argument values)`` of a valid, trap-free call of ``name``, or None."""
    call = draw_valid_call(draw, name, DTYPES)
    if call is None:
        return None
    if call.arg_values is not None:
        return call, tuple(call.arg_values)
    return call, tuple(draw(values_of(t)) for t in call.arg_types)


def primitive(call: Any) -> Function:
    """``fn (%p0: T0, ..., Primitive=1) { op(%p0, ..., attrs) }`` for an ``OpCall``."""
    params = tuple(Var(f"p{i}", t) for i, t in enumerate(call.arg_types))
    body = Call(Op(call.op), params, call.attrs)
    return Function(params, body, attrs=Attrs({"Primitive": 1}))


def module(call: Any) -> IRModule:
    """``def @main(%p0: T0, ...) { op(%p0, ..., attrs) }``."""
    params = tuple(Var(f"p{i}", t) for i, t in enumerate(call.arg_types))
    return IRModule({"main": Function(params, Call(Op(call.op), params, call.attrs))})

