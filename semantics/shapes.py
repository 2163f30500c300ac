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
"""

from __future__ import annotations

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

    def __reduce__(self):
        return (AnyDim, ())


ANY = AnyDim()

Dim = int | AnyDim | sympy.Expr


def shape_var(name: str) -> sympy.Symbol:
    """The shape variable called ``name`` (integer, nonnegative)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def is_any(d: object) -> bool:
    return d is ANY


def is_concrete(d: object) -> bool:
    return isinstance(d, int)


def is_symbolic(d: object) -> bool:
    return isinstance(d, sympy.Basic)


def normalize(d: object) -> Dim:
    """Canonical form of a dim: ints stay ints, symbolic constants become ints."""
    if isinstance(d, bool):
        raise TypeError("a dimension cannot be a bool")
    if isinstance(d, int) or d is ANY:
        return d  # type: ignore[return-value]
    if isinstance(d, sympy.Basic):
        e = sympy.simplify(d) if not d.is_Atom else d
        if e.is_Integer:
            return int(e)
        return e
    if hasattr(d, "__index__"):
        return int(d)  # numpy integers
    raise TypeError(f"not a dimension: {d!r}")


def dim_str(d: Dim) -> str:
    """Text-format spelling of a dim (``?`` for Any; SymPy's ``str`` for expressions)."""
    if d is ANY:
        return "?"
    if isinstance(d, int):
        return str(d)
    return _sym_str(d)


def _sym_str(e: sympy.Expr) -> str:
    text = sympy.sstr(e)
    return text


def free_shape_vars(d: Dim) -> set[str]:
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
