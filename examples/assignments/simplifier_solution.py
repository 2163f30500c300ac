"""Reference solution of the simplifier assignment (docs/assignments.md): an algebraic
simplifier and constant folder for Relay, correct at NaN, ±inf, -0.0 and under broadcasting.

Grade a submission against the oracle with::

    relay conformance --pass examples/assignments/simplifier_solution.py:simplify

Every rule below is exact in IEEE arithmetic *only under its side conditions*; the
comments say why each condition is needed (each one is a slip the kit catches):

* ``x * 1 -> x``, ``x / 1 -> x``, ``x - 0 -> x``: only when the result has ``x``'s type
  (a constant of a bigger shape broadcasts ``x``);
* ``x + (-0.0) -> x`` for floats, ``x + 0 -> x`` for integers: ``-0.0 + 0.0`` is ``+0.0``,
  so adding a *positive* zero is not the identity on floats;
* ``x - x -> 0`` and ``x * 0 -> 0`` for integers only (``inf - inf`` and ``nan * 0`` are
  NaN);
* ``negative(negative(x)) -> x`` and ``logical_not(logical_not(x)) -> x`` always;
* a call of an elementwise operator whose arguments are all constants is folded by
  evaluating it with the reference interpreter (so it computes exactly what the program
  would).

The pass reads types from ``checked_type`` (set on every node by ``typechecker.infer``)
and constants' values from ``Constant.data`` (a numpy array); see docs/rewriting.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.expr import Call, Constant, Expr, Op
from semantics.module import IRModule
from semantics.rewrite import map_functions
from semantics.types import TensorType
from semantics.visitor import ExprMutator

# Operators folded when every argument is a constant (pure, elementwise, cheap).
FOLDABLE = {"add", "subtract", "multiply", "divide", "negative", "maximum", "minimum",
            "exp", "log", "sqrt", "abs", "floor", "ceil", "equal", "less", "greater",
            "logical_not", "logical_and", "logical_or", "where", "clip", "cast"}


def _filled_with(node: Expr, value: float) -> bool:
    """``node`` is a constant whose every element equals ``value`` (sign of zero included)."""
    if not isinstance(node, Constant) or node.data.size == 0:
        return False
    data = node.data
    if data.dtype.kind == "f":
        return bool(np.all(data == value) and np.all(np.signbit(data) == np.signbit(value)))
    return bool(np.all(data == value))


def _is_float(node: Expr) -> bool:
    t = node.checked_type
    return isinstance(t, TensorType) and np.dtype(t.dtype).kind == "f"


def _same_type(a: Expr, b: Expr) -> bool:
    return a.checked_type is not None and a.checked_type == b.checked_type


def _fold(call: Call) -> Expr | None:
    """Evaluate an operator call on constants with the reference interpreter."""
    from interpreter import evaluate
    from semantics.errors import RelayError
    from semantics.expr import Function

    try:
        value: Any = evaluate(IRModule({"main": Function((), call)}))
    except RelayError:
        return None           # e.g. an integer division by zero: leave it to run time
    if isinstance(value, np.ndarray | np.generic):
        return Constant(np.asarray(value))
    return None


class _Simplify(ExprMutator):
    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call) and isinstance(old, Call)
        if not isinstance(new.op, Op):
            return new
        name, args, olds = new.op.name, new.args, old.args
        if name in FOLDABLE and args and all(isinstance(a, Constant) for a in args):
            folded = _fold(new)
            if folded is not None:
                return folded
        if len(args) == 2:
            (a, b), (oa, ob) = args, olds
            # x * 1, 1 * x, x / 1: the identity only when no broadcast happens.
            if name == "multiply" and _filled_with(ob, 1) and _same_type(oa, old):
                return a
            if name == "multiply" and _filled_with(oa, 1) and _same_type(ob, old):
                return b
            if name == "divide" and _filled_with(ob, 1) and _same_type(oa, old):
                return a
            # x + 0: for floats only a negative zero is the identity.
            zero = -0.0 if _is_float(old) else 0
            if name == "add" and _filled_with(ob, zero) and _same_type(oa, old):
                return a
            if name == "add" and _filled_with(oa, zero) and _same_type(ob, old):
                return b
            # x - 0 (a positive zero): -0.0 - 0.0 is -0.0, so exact for floats too.
            if name == "subtract" and _filled_with(ob, 0.0 if _is_float(old) else 0) and \
                    _same_type(oa, old):
                return a
            # x - x, x * 0: integers only (inf - inf and nan * 0 are NaN).
            if not _is_float(old) and isinstance(old.checked_type, TensorType):
                t = old.checked_type
                if name == "subtract" and oa is ob:
                    return Constant(np.zeros(tuple(int(d) for d in t.shape), dtype=t.dtype))
        if len(args) == 1 and isinstance(args[0], Call) and isinstance(args[0].op, Op):
            inner = args[0]
            assert isinstance(inner.op, Op)
            if name == inner.op.name and name in ("negative", "logical_not"):
                return inner.args[0]
        return new


def simplify(mod: IRModule) -> IRModule:
    """Simplify every function of ``mod`` (the module is type-checked first)."""
    from typechecker import infer

    typed = infer(mod)
    assert isinstance(typed, IRModule)
    return map_functions(typed, lambda name, fn: _Simplify().mutate(fn))
