"""Deciding equalities between symbolic dimensions: SymPy first, Z3 for the rest.

The type checker compares dims through a :class:`semantics.shapes.DimSolver`.
:class:`Z3DimSolver` is the checker's subclass (RULES.md, "Symbolic shapes"):

* **fast paths** that never touch SymPy: ``Any`` equals everything, two
  ``int`` dims compare as ints, identical objects are equal;
* **SymPy**: the difference ``a - b`` is expanded; zero means *proven*, a
  non-zero number means *refuted*;
* **Z3** (:meth:`Z3DimSolver.undecided`) for everything else, typically the
  ``floor``/``Mod`` formulas of convolution and pooling: the equation is
  translated to integer arithmetic where every shape variable is a
  non-negative integer, ``floor(p/q)`` becomes a fresh integer ``k`` with
  ``q*k <= p < q*k + q`` (for ``q > 0``; mirrored for ``q < 0``), ``Mod(p, q)``
  becomes ``p - q*floor(p/q)``, ``ceiling(x)`` is ``-floor(-x)`` and
  ``Max``/``Min``/``Abs`` become ``If`` terms. ``a == b`` is *proven* when
  ``a != b`` is unsatisfiable and *refuted* when ``a == b`` is; otherwise (or
  when Z3 answers ``unknown`` within the time limit) the verdict is ``None``
  and the caller reports the equation it could not prove.

Verdicts are cached (keyed by the pair of dims; SymPy expressions hash
structurally), so a ResNet with a symbolic batch asks each question once.
The solver is pure: one shared instance (:data:`SHAPE_SOLVER`) serves every
inference run.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

import sympy
import z3

from semantics.shapes import ANY, Dim, DimSolver, dim_str

_MISSING = object()


class _Untranslatable(Exception):
    """The expression uses a function the Z3 translation does not cover."""


class Z3DimSolver(DimSolver):
    """A :class:`DimSolver` that asks Z3 what SymPy cannot decide, with a verdict cache.

    Invariant: ``equal(a, b)`` is True only if ``a == b`` holds for every
    assignment of non-negative integers to the shape variables, False only if
    it holds for none.
    """

    def __init__(self, timeout_ms: int = 2000, cache_size: int = 65536):
        self.timeout_ms = timeout_ms
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[Any, Any], bool | None] = OrderedDict()
        self.z3_queries = 0

    # --- the DimSolver interface ------------------------------------------------------------
    def equal(self, a: Dim, b: Dim) -> bool | None:
        if a is b or a is ANY or b is ANY:
            return True
        if type(a) is int and type(b) is int:
            return a == b
        key = (a, b)
        verdict = self._cache.get(key, _MISSING)
        if verdict is not _MISSING:
            self._cache.move_to_end(key)
            return verdict  # type: ignore[return-value]
        verdict = self._decide(a, b)
        self._cache[key] = verdict
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return verdict

    def undecided(self, a: Dim, b: Dim) -> bool | None:
        """Decide ``a == b`` with Z3 over the non-negative integers (None: cannot tell)."""
        self.z3_queries += 1
        try:
            return _z3_equal(sympy.sympify(a), sympy.sympify(b), self.timeout_ms)
        except _Untranslatable:
            return None

    def solve_for(self, a: Dim, b: Dim, unknown: sympy.Symbol) -> tuple[str, int | None]:
        """Solve ``a == b`` for ``unknown``, a natural number, when SymPy cannot.

        Only equations whose one free symbol is ``unknown`` are attempted.
        Returns ``("none", None)`` (no natural-number solution), ``("one", v)``,
        ``("many", None)`` or ``("unknown", None)`` (untranslatable, or Z3 gave up).
        """
        try:
            diff = sympy.sympify(a) - sympy.sympify(b)
            if diff.free_symbols != {unknown}:
                return ("unknown", None)
            self.z3_queries += 1
            tr = _Translation()
            num, den = tr.rational(diff)
        except (_Untranslatable, TypeError, ValueError, sympy.SympifyError):
            return ("unknown", None)
        var = tr.vars.get(unknown)
        if var is None:
            return ("unknown", None)
        solver = z3.Solver()
        solver.set("timeout", self.timeout_ms)
        solver.add(*tr.side)
        solver.add(var >= 0, den != 0, num == 0)
        first = solver.check()
        if first == z3.unsat:
            return ("none", None)
        if first != z3.sat:
            return ("unknown", None)
        value = solver.model().eval(var, model_completion=True).as_long()
        solver.add(var != value)
        second = solver.check()
        if second == z3.unsat:
            return ("one", int(value))
        if second == z3.sat:
            return ("many", None)
        return ("unknown", None)

    def require_equal(self, a: Dim, b: Dim, context: str) -> None:
        verdict = self.equal(a, b)
        if verdict is True:
            return
        from semantics.errors import RelayTypeError

        if verdict is False:
            raise RelayTypeError(
                f"{context}: dimensions {dim_str(a)} and {dim_str(b)} are different")
        raise RelayTypeError(
            f"{context}: cannot prove {dim_str(a)} == {dim_str(b)} "
            "for all values of the shape variables")

    # --- internals --------------------------------------------------------------------------
    def _decide(self, a: Dim, b: Dim) -> bool | None:
        try:
            diff = sympy.expand(sympy.sympify(a) - sympy.sympify(b))
        except (TypeError, ValueError, sympy.SympifyError):
            return None
        if diff == 0:
            return True
        if diff.is_number:
            return False
        return self.undecided(a, b)


# --- translation to Z3 ----------------------------------------------------------------------

class _Translation:
    """Turns SymPy integer expressions into Z3 terms plus side conditions."""

    def __init__(self) -> None:
        self.side: list[Any] = []
        self.vars: dict[sympy.Symbol, Any] = {}
        self._fresh = itertools.count()

    def symbol(self, s: sympy.Symbol) -> Any:
        v = self.vars.get(s)
        if v is None:
            v = z3.Int(f"{s.name}!{len(self.vars)}")
            self.vars[s] = v
            if s.is_nonnegative is not False:
                self.side.append(v >= 0)
        return v

    def floor_of(self, num: Any, den: Any) -> Any:
        """A fresh integer k with k == floor(num / den) (den assumed non-zero)."""
        k = z3.Int(f"floor!{next(self._fresh)}")
        if z3.is_int_value(den):
            d = den.as_long()
            if d > 0:
                self.side.append(z3.And(d * k <= num, num < d * k + d))
            elif d < 0:
                self.side.append(z3.And(d * k >= num, num > d * k + d))
            else:
                raise _Untranslatable("division by zero")
            return k
        self.side.append(den != 0)
        self.side.append(z3.If(den > 0, z3.And(den * k <= num, num < den * k + den),
                               z3.And(den * k >= num, num > den * k + den)))
        return k

    def rational(self, e: sympy.Expr) -> tuple[Any, Any]:
        """``e`` as a pair (numerator, denominator) of Z3 integer terms."""
        e = self.eliminate(e)
        num, den = sympy.fraction(sympy.together(e))
        return self.poly(num), self.poly(den)

    def eliminate(self, e: sympy.Expr) -> sympy.Expr:
        """Replace floor/ceiling/Mod/Max/Min/Abs sub-terms by symbols bound to Z3 terms."""
        if e.is_Atom:
            return e
        if isinstance(e, sympy.floor):
            num, den = self.rational(e.args[0])
            return self._stand_in(self.floor_of(num, den))
        if isinstance(e, sympy.ceiling):
            num, den = self.rational(-e.args[0])
            return self._stand_in(-self.floor_of(num, den))
        if isinstance(e, sympy.Mod):
            p, q = e.args
            return self.eliminate(p - q * sympy.floor(p / q))
        if isinstance(e, (sympy.Max, sympy.Min)):
            terms = [self.rational(x) for x in e.args]
            if any(not (z3.is_int_value(d) and d.as_long() == 1) for _, d in terms):
                raise _Untranslatable("Max/Min of non-integral terms")
            acc = terms[0][0]
            for t, _ in terms[1:]:
                acc = z3.If(t > acc, t, acc) if isinstance(e, sympy.Max) else \
                    z3.If(t < acc, t, acc)
            return self._stand_in(acc)
        if isinstance(e, sympy.Abs):
            num, den = self.rational(e.args[0])
            if not (z3.is_int_value(den) and den.as_long() == 1):
                raise _Untranslatable("Abs of a non-integral term")
            return self._stand_in(z3.If(num >= 0, num, -num))
        if isinstance(e, (sympy.Add, sympy.Mul, sympy.Pow)):
            return e.func(*(self.eliminate(a) for a in e.args))
        raise _Untranslatable(type(e).__name__)

    def _stand_in(self, term: Any) -> sympy.Symbol:
        s = sympy.Dummy("k", integer=True)
        self.vars[s] = term
        return s

    def poly(self, e: sympy.Expr) -> Any:
        """A polynomial with integer coefficients as a Z3 integer term."""
        if e.is_Integer:
            return z3.IntVal(int(e))
        if e.is_Symbol:
            return self.symbol(e)
        if isinstance(e, sympy.Add):
            return z3.Sum([self.poly(a) for a in e.args])
        if isinstance(e, sympy.Mul):
            out = self.poly(e.args[0])
            for a in e.args[1:]:
                out = out * self.poly(a)
            return out
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 0:
            base = self.poly(e.base)
            out = z3.IntVal(1)
            for _ in range(int(e.exp)):
                out = out * base
            return out
        raise _Untranslatable(type(e).__name__)


def _z3_equal(a: sympy.Expr, b: sympy.Expr, timeout_ms: int) -> bool | None:
    tr = _Translation()
    num, den = tr.rational(a - b)
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*tr.side)
    solver.add(den != 0)
    solver.push()
    solver.add(num != 0)
    first = solver.check()
    if first == z3.unsat:
        return True
    solver.pop()
    solver.add(num == 0)
    second = solver.check()
    if second == z3.unsat:
        return False
    return None


SHAPE_SOLVER = Z3DimSolver()
"""The solver every inference run shares (its cache is pure)."""
