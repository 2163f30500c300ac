"""Translation of SymPy dimension expressions (what relations return for symbolic dims) to Z3.

Dims are integers; SymPy expressions over them may contain rationals, ``floor``,
``ceiling``, ``Mod``, ``Max``/``Min`` and integer powers. They are translated to Z3 *real*
arithmetic (``floor`` becomes ``ToReal(ToInt(.))``) so a rational intermediate such as
``n/2`` is exact; :func:`as_int` turns a result back into an integer term together with the
side condition that it is integral.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy
import z3

from semantics.errors import InternalError


def to_z3(expr: Any, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
    """The Z3 real term for a SymPy expression (or int) over the shape variables in ``env``.

    Args:
        expr: an ``int`` or SymPy expression.
        env: shape-variable name -> Z3 integer constant.
    Raises:
        InternalError: an expression form the translation does not know.
    """
    stack: list[tuple[Any, bool]] = [(sympy.sympify(expr), False)]
    done: dict[Any, z3.ArithRef] = {}
    while stack:
        e, expanded = stack.pop()
        if e in done:
            continue
        if e.is_Integer or e.is_Rational:
            done[e] = z3.RealVal(str(e))
            continue
        if e.is_Symbol:
            if e.name not in env:
                raise InternalError(f"shape variable {e.name} has no Z3 constant")
            done[e] = z3.ToReal(env[e.name])
            continue
        if not expanded:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args)
            continue
        args = [done[a] for a in e.args]
        done[e] = _combine(e, args)
    return done[sympy.sympify(expr)]


def _combine(e: Any, args: list[z3.ArithRef]) -> z3.ArithRef:
    if e.is_Add:
        out = args[0]
        for a in args[1:]:
            out = out + a
        return out
    if e.is_Mul:
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if isinstance(e, sympy.floor):
        return z3.ToReal(z3.ToInt(args[0]))
    if isinstance(e, sympy.ceiling):
        return -z3.ToReal(z3.ToInt(-args[0]))
    if isinstance(e, sympy.Mod):
        a, b = args
        return a - b * z3.ToReal(z3.ToInt(a / b))
    if isinstance(e, sympy.Max):
        out = args[0]
        for a in args[1:]:
            out = z3.If(a > out, a, out)
        return out
    if isinstance(e, sympy.Min):
        out = args[0]
        for a in args[1:]:
            out = z3.If(a < out, a, out)
        return out
    if e.is_Pow and e.exp.is_Integer and int(e.exp) >= 1:
        out = args[0]
        for _ in range(int(e.exp) - 1):
            out = out * args[0]
        return out
    if e.is_Pow and e.exp == -1:
        return 1 / args[0]
    raise InternalError(f"cannot translate {type(e).__name__} ({e}) to Z3")


def as_int(term: z3.ArithRef) -> tuple[z3.ArithRef, z3.BoolRef]:
    """``(ToInt(term), IsInt(term))`` for a real term; an integer term passes through."""
    if term.is_int():
        return term, z3.BoolVal(True)
    return z3.ToInt(term), z3.IsInt(term)
