"""Dims and type equality: :func:`dims_equal` and :func:`types_equal`.

Part of :mod:`semantics.alpha` ("Types"): dims compare symbolically (``n + n``
equals ``2*n``, free shape variables by name, ``?`` only equals ``?``); type
parameters are bound like variables (kinds must agree); free type variables
and ``IncompleteType`` holes are mapped bijectively or compared by identity;
a bare ``GlobalTypeVar`` ``Name`` equals the type call ``Name[]``. Types are
shallow and compared recursively. Also the hash key of a dim
(:func:`_dim_key`), consistent with :func:`dims_equal`.
"""

from __future__ import annotations

import functools

import sympy

from semantics.shapes import ANY, DEFAULT_SOLVER, Dim, DimSolver, shape_var
from semantics.structural.leaves import _attrs_equal, _nullary_adt_name, _pop, _relation_name
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)

# --- dims -------------------------------------------------------------------------------------

def _as_sym(d: Dim) -> sympy.Expr:
    """``d`` as a SymPy expression whose symbols are canonical shape variables (by name)."""
    if isinstance(d, int):
        return sympy.Integer(d)
    e = sympy.sympify(d)
    subs = {s: shape_var(s.name) for s in e.free_symbols if s != shape_var(s.name)}
    return e.xreplace(subs) if subs else e


@functools.lru_cache(maxsize=4096)
def _default_sym_equal(e1: sympy.Expr, e2: sympy.Expr) -> bool:
    return DEFAULT_SOLVER.equal(e1, e2) is True


def dims_equal(d1: Dim, d2: Dim, solver: DimSolver | None = None) -> bool:
    """Whether two dims are provably equal: ``?`` only to ``?``, others symbolically.

    Args:
        d1, d2: dims (``int``, ``ANY`` or SymPy expressions over shape variables).
        solver: the :class:`DimSolver` deciding symbolic equalities (default:
            SymPy only); an undecided equality counts as different.
    Returns:
        True when the dims are equal.
    """
    if d1 is ANY or d2 is ANY:
        return d1 is d2
    if isinstance(d1, int) and isinstance(d2, int):
        return d1 == d2
    e1, e2 = _as_sym(d1), _as_sym(d2)
    if e1 == e2:
        return True
    if solver is None or solver is DEFAULT_SOLVER:
        return _default_sym_equal(e1, e2)
    return solver.equal(e1, e2) is True


@functools.lru_cache(maxsize=4096)
def _sym_key(e: sympy.Expr) -> int:
    """Hash key of a symbolic dim: its value when it simplifies to an integer, else a constant.

    Every symbolic dim that is not a constant shares one key, so that dims the
    solver proves equal (``n + n``, ``2*n``) always hash alike.
    """
    simple = sympy.simplify(e)
    if simple.is_Integer:
        return int(simple)
    return -2


def _dim_key(d: Dim) -> int:
    if d is ANY:
        return -1
    if isinstance(d, int):
        return d
    return _sym_key(_as_sym(d))


# --- types ------------------------------------------------------------------------------------

class _TypeComparer:
    """State of one type comparison: scoped type-parameter maps, free type-variable bijection."""

    def __init__(self, map_free_vars: bool, solver: DimSolver | None):
        self.map_free = map_free_vars
        self.solver = solver
        self.tv_ab: dict[int, list[TypeVar]] = {}
        self.tv_ba: dict[int, list[TypeVar]] = {}
        self.free_tv_ab: dict[int, TypeVar] = {}
        self.free_tv_ba: dict[int, TypeVar] = {}

    # types ----------------------------------------------------------------------------------
    def bind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> bool:
        if len(xs) != len(ys) or any(x.kind != y.kind for x, y in zip(xs, ys)):
            return False
        for x, y in zip(xs, ys):
            self.tv_ab.setdefault(id(x), []).append(y)
            self.tv_ba.setdefault(id(y), []).append(x)
        return True

    def unbind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> None:
        for x, y in zip(xs, ys):
            _pop(self.tv_ab, id(x))
            _pop(self.tv_ba, id(y))

    def opt_types(self, t1: Type | None, t2: Type | None) -> bool:
        if t1 is None or t2 is None:
            return t1 is t2
        return self.types(t1, t2)

    def type_var(self, x: TypeVar, y: TypeVar) -> bool:
        if x.kind != y.kind:
            return False
        sx, sy = self.tv_ab.get(id(x)), self.tv_ba.get(id(y))
        if sx or sy:
            return bool(sx) and bool(sy) and sx[-1] is y and sy[-1] is x  # type: ignore[index]
        if not self.map_free:
            return x is y
        fx, fy = self.free_tv_ab.get(id(x)), self.free_tv_ba.get(id(y))
        if fx is None and fy is None:
            self.free_tv_ab[id(x)] = y
            self.free_tv_ba[id(y)] = x
            return True
        return fx is y and fy is x

    def types(self, t1: Type, t2: Type) -> bool:
        cls = type(t1)
        if cls is not type(t2):
            return _nullary_adt_name(t1) is not None and \
                _nullary_adt_name(t1) == _nullary_adt_name(t2)
        if cls is TensorType:
            if t1 is t2:
                return True
            return (t1.dtype == t2.dtype and len(t1.shape) == len(t2.shape)  # type: ignore
                    and all(dims_equal(a, b, self.solver)
                            for a, b in zip(t1.shape, t2.shape)))  # type: ignore[attr-defined]
        if cls is TupleType:
            return self.type_lists(t1.fields, t2.fields)  # type: ignore[attr-defined]
        if cls is TypeVar:
            return self.type_var(t1, t2)  # type: ignore[arg-type]
        if cls is GlobalTypeVar:
            return t1.name == t2.name  # type: ignore[attr-defined]
        if cls is TypeCall:
            return (t1.func.name == t2.func.name  # type: ignore[attr-defined]
                    and self.type_lists(t1.args, t2.args))  # type: ignore[attr-defined]
        if cls is RefType:
            return self.types(t1.value, t2.value)  # type: ignore[attr-defined]
        if cls is FuncType:
            return self._func_types(t1, t2)  # type: ignore[arg-type]
        if cls is TypeRelation:
            return (_relation_name(t1.relation) == _relation_name(t2.relation)  # type: ignore
                    and t1.num_inputs == t2.num_inputs  # type: ignore[attr-defined]
                    and _attrs_equal(t1.attrs, t2.attrs)  # type: ignore[attr-defined]
                    and self.type_lists(t1.args, t2.args))  # type: ignore[attr-defined]
        if cls is TypeData:
            return self._type_data(t1, t2)  # type: ignore[arg-type]
        if cls is IncompleteType:
            if t1 is t2:
                return True
            if not self.map_free or t1.kind != t2.kind:  # type: ignore[attr-defined]
                return False
            fx, fy = self.free_tv_ab.get(id(t1)), self.free_tv_ba.get(id(t2))
            if fx is None and fy is None:
                self.free_tv_ab[id(t1)] = t2  # type: ignore[assignment]
                self.free_tv_ba[id(t2)] = t1  # type: ignore[assignment]
                return True
            return fx is t2 and fy is t1
        raise TypeError(f"types_equal: not a type: {cls.__name__}")

    def type_lists(self, xs: tuple[Type, ...], ys: tuple[Type, ...]) -> bool:
        return len(xs) == len(ys) and all(self.types(x, y) for x, y in zip(xs, ys))

    def _func_types(self, t1: FuncType, t2: FuncType) -> bool:
        if len(t1.arg_types) != len(t2.arg_types) or \
                len(t1.type_constraints) != len(t2.type_constraints):
            return False
        if not self.bind_type_vars(t1.type_params, t2.type_params):
            return False
        try:
            return (self.type_lists(t1.arg_types, t2.arg_types)
                    and self.types(t1.ret_type, t2.ret_type)
                    and self.type_lists(t1.type_constraints, t2.type_constraints))
        finally:
            self.unbind_type_vars(t1.type_params, t2.type_params)

    def _type_data(self, d1: TypeData, d2: TypeData) -> bool:
        if d1.header.name != d2.header.name or len(d1.constructors) != len(d2.constructors):
            return False
        if not self.bind_type_vars(d1.type_vars, d2.type_vars):
            return False
        try:
            for c1, c2 in zip(d1.constructors, d2.constructors):
                if c1.name != c2.name or c1.tag != c2.tag or \
                        not self.type_lists(c1.inputs, c2.inputs):
                    return False
            return True
        finally:
            self.unbind_type_vars(d1.type_vars, d2.type_vars)


def types_equal(t1: Type, t2: Type, *, map_free_vars: bool = False,
                solver: DimSolver | None = None) -> bool:
    """Whether two types are equal: dims symbolically, bound type parameters up to renaming.

    Args:
        t1, t2: types.
        map_free_vars: map free type variables bijectively instead of by identity.
        solver: decides symbolic dims (default: SymPy; the type checker may pass its Z3 solver).
    Returns:
        True when equal.
    Raises:
        TypeError: an argument is not a type.
    """
    if not isinstance(t1, Type) or not isinstance(t2, Type):
        raise TypeError("types_equal: arguments must be types")
    return _TypeComparer(map_free_vars, solver).types(t1, t2)
