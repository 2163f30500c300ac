"""Shape dimensions: concrete, unknown (``Any``) and symbolic.

A dimension (``Dim``) is one of

* a Python ``int`` >= 0 — the fast path; nothing here touches SymPy for it;
* :data:`ANY` — the unknown dimension ``?``, checked at run time;
* a SymPy expression over shape variables (``sympy.Symbol`` with
  ``integer=True, nonnegative=True``), e.g. ``n``, ``2*n``, ``floor((n - 1)/2) + 1``.

Shape variables are identified by name: ``shape_var("n")`` twice gives equal
symbols. Relations compare dims through a :class:`DimSolver`; the default
here decides with integer arithmetic and SymPy; the type checker installs a
subclass that falls back to Z3 (``typechecker.shape_solver``) for what SymPy
cannot decide.

This is the one module of dimension helpers: canonical forms (:func:`canon_dim` — cheap,
used by relations —, :func:`normalize` — simplifying, used by the parser), dim arithmetic
(:func:`dim_add`, :func:`dim_mul`, :func:`dim_prod`, :func:`exact_div`, :func:`floor_div`:
ints on the fast path, ``?`` absorbing, SymPy otherwise) and predicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import sympy

from semantics.errors import RelayTypeError


class AnyDim:
    """The unknown dimension ``?`` (a singleton)."""

    _instance: AnyDim | None = None
    __slots__ = ()

    def __new__(cls) -> AnyDim:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "?"

    def __reduce__(self) -> tuple[type[AnyDim], tuple[()]]:
        return (AnyDim, ())


ANY = AnyDim()

Dim: TypeAlias = int | AnyDim | sympy.Expr


def shape_var(name: str) -> sympy.Symbol:
    """The shape variable called ``name`` (integer, nonnegative)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def is_any(d: object) -> bool:
    """Whether ``d`` is the unknown dimension ``?``."""
    return d is ANY


def is_concrete(d: object) -> bool:
    """Whether ``d`` is a concrete (int) dimension."""
    return isinstance(d, int)


def as_int(d: Dim) -> int:
    """A concrete dimension as an ``int`` (a SymPy integer is accepted too).

    Raises:
        InternalError: ``d`` is ``?`` or symbolic (the caller promised a static shape).
    """
    if isinstance(d, int):
        return d
    if isinstance(d, sympy.Integer):
        return int(d)
    from semantics.errors import InternalError

    raise InternalError(f"expected a concrete dimension, got {d}")


def is_symbolic(d: object) -> bool:
    """Whether ``d`` is a symbolic (SymPy) dimension."""
    return isinstance(d, sympy.Basic)


def canon_dim(d: Any) -> Dim:
    """``d`` with integer constants (SymPy or numpy integers) as Python ints; no simplification.

    The cheap canonical form relations use: everything else (``?``, symbolic expressions)
    is returned unchanged.
    """
    if type(d) is int:
        return d
    if isinstance(d, np.integer):
        return int(d)
    if isinstance(d, sympy.Basic) and d.is_Integer:
        return int(d)
    return d


def normalize(d: object) -> Dim:
    """Canonical form of a dim, simplifying symbolic ones: ints stay ints, constants become ints.

    Raises:
        TypeError: a bool or a value that is not a dimension.
    """
    if isinstance(d, bool):
        raise TypeError("a dimension cannot be a bool")
    if isinstance(d, int) or isinstance(d, AnyDim):
        return d
    if isinstance(d, sympy.Basic):
        return canon_dim(sympy.simplify(d) if not d.is_Atom else d)
    if hasattr(d, "__index__"):
        return int(d.__index__())  # numpy integers
    raise TypeError(f"not a dimension: {d!r}")


def is_one(d: Dim) -> bool:
    """True only when ``d`` is (syntactically) the constant 1."""
    return isinstance(d, int) and d == 1


def has_any(shape: Sequence[Dim]) -> bool:
    """Whether some dim of ``shape`` is ``?``."""
    return any(d is ANY for d in shape)


def dim_add(*dims: Dim) -> Dim:
    """Sum of dims (``?`` if any is ``?``)."""
    if any(d is ANY for d in dims):
        return ANY
    if all(isinstance(d, int) for d in dims):
        return sum(dims)  # type: ignore[arg-type]
    return canon_dim(sympy.Add(*(sympy.sympify(d) for d in dims)))


def dim_mul(*dims: Dim) -> Dim:
    """Product of dims (``?`` if any is ``?``)."""
    if any(d is ANY for d in dims):
        return ANY
    if all(isinstance(d, int) for d in dims):
        out = 1
        for d in dims:
            out *= d  # type: ignore[operator]
        return out
    return canon_dim(sympy.Mul(*(sympy.sympify(d) for d in dims)))


def dim_prod(dims: Sequence[Dim]) -> Dim:
    """Product of a sequence of dims (1 for an empty one)."""
    return dim_mul(1, *dims)


def exact_div(a: Dim, b: Dim) -> Dim | None:
    """``a / b`` when provably an integer; ``?`` if either is ``?``; None otherwise."""
    if a is ANY or b is ANY:
        return ANY
    if isinstance(a, int) and isinstance(b, int):
        if b == 0 or a % b:
            return None
        return a // b
    if b == 0:
        return None
    q = sympy.cancel(sympy.sympify(a) / sympy.sympify(b))
    return canon_dim(q) if q.is_integer else None


def floor_div(a: Dim, b: Dim) -> Dim:
    """``floor(a / b)`` (``sympy.floor`` for symbolic dims, so solvers can reason about it)."""
    if a is ANY or b is ANY:
        return ANY
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return canon_dim(sympy.floor(sympy.sympify(a) / sympy.sympify(b)))


def dim_str(d: Dim) -> str:
    """Text-format spelling of a dim (``?`` for Any; SymPy's ``str`` for expressions)."""
    if d is ANY:
        return "?"
    if isinstance(d, int):
        return str(d)
    return sympy.sstr(d)


def free_shape_vars(d: Dim) -> set[str]:
    """Names of the shape variables occurring in ``d``."""
    if isinstance(d, sympy.Basic):
        return {s.name for s in d.free_symbols}
    return set()


class DimSolver:
    """Decides equalities between dims. Subclassed by the type checker to add Z3.

    ``equal`` answers True (proven), False (refuted) or None (unknown);
    ``require_equal`` turns anything but True into a ``RelayTypeError``.
    ``Any`` is equal to every dim.
    """

    def equal(self, a: Dim, b: Dim) -> bool | None:
        if a is ANY or b is ANY:
            return True
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        diff = sympy.simplify(sympy.sympify(a) - sympy.sympify(b))
        if diff == 0:
            return True
        if diff.is_number:
            return False
        nonzero = diff.is_nonzero
        if nonzero:
            return False
        return self.undecided(a, b)

    def undecided(self, a: Dim, b: Dim) -> bool | None:
        """Hook for what SymPy cannot decide (the type checker asks Z3 here)."""
        return None

    def require_equal(self, a: Dim, b: Dim, context: str) -> None:
        verdict = self.equal(a, b)
        if verdict is True:
            return
        how = "are different" if verdict is False else "cannot be proven equal"
        raise RelayTypeError(f"{context}: dimensions {dim_str(a)} and {dim_str(b)} {how}")

    def unify(self, a: Dim, b: Dim, context: str) -> Dim:
        """Require ``a == b`` and return the more informative of the two (non-Any, concrete)."""
        self.require_equal(a, b, context)
        if a is ANY:
            return b
        if b is ANY or isinstance(a, int):
            return a
        return b if isinstance(b, int) else a


DEFAULT_SOLVER = DimSolver()
