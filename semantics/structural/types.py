"""Dims and type equality: :func:`dims_equal` and :func:`types_equal`.

Part of :mod:`semantics.alpha` ("Types"): dims compare symbolically (``n + n``
equals ``2*n``, ``?`` only equals ``?``); type parameters are bound like
variables (kinds must agree); free type variables and ``IncompleteType`` holes
are mapped bijectively or compared by identity; a bare ``GlobalTypeVar``
``Name`` equals the type call ``Name[]``. Also the hash key of a dim
(:func:`dim_key`), consistent with :func:`dims_equal`.

**Shape variables.** docs/architecture.md#text says a shape variable is "implicitly
bound at the enclosing definition", so ``def @f(%x: Tensor[(n, 3), float32])``
and the same with ``k`` are alpha-equal. A *definition* is a module's global
function, or — in an expression compared on its own — an outermost function
literal; it binds every shape variable written anywhere in its text
(parameter and return annotations, body, nested functions, ``let`` and
pattern annotations, call type arguments), since a nested function cannot
rebind a name its enclosing definition already binds. The exception is a name
also written *outside* every function of the compared expression (say in the
annotation of a top-level ``let``): no definition encloses that occurrence, so
the variable is free, everywhere, and compares by name.

Bound shape variables compare up to one consistent renaming per definition —
a bijection between the two sides' names (:class:`_ShapeScopes`), after which
dims are compared symbolically with both sides renamed to shared canonical
symbols: ``n + n`` equals ``2*k`` under ``n↔k``, while ``(n, n)`` never equals
``(n, k)``. The bijection is found while comparing: a dim with one unpaired
variable a side (``n`` against ``k``, ``n + 1`` against ``k + 1``) pairs them
at once (nothing else can make the dims equal); a dim with more unpaired
variables (``n*m`` against ``k*j``) is *deferred*
and the comparison goes on; at the end of the definition the deferred
equalities are solved — forced pairings first (one unpaired variable a side),
then a backtracking search (explicit stack) over the pairings of the first open
equality. Two dims can only be equal when their variables correspond, so the
search tries the permutations of each equality's unpaired variables (all of
them up to :data:`MAX_RENAMING_SEARCH` variables in one dim, beyond that only
the sorted order: such a dim may compare as different — never the other way
round). A shape-kinded type parameter (``[n: Shape]``) pairs its name with its
partner's.

Free shape variables compare by name, and :func:`types_equal` on two
standalone types treats all of them as free — as docs/architecture.md#api specifies
("shape dims compared symbolically"): a type on its own is not a definition,
its shape variables refer to a definition we cannot see, so
``Tensor[(n), float32]`` and ``Tensor[(k), float32]`` are different types there
(the type checker's view of two rigid variables); ``alpha_equal`` of two types
does the same. Shape variables do not enter :func:`structural_hash` (every
symbolic dim has one key), so renaming them keeps the hash.

Types are compared by one loop over an explicit worklist (pairs to compare and
scope ends), so a 20,000-deep tuple, ``Ref`` or function type needs no Python
stack (HOUSE_STYLE habit 4).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import sympy

from semantics.shapes import ANY, DEFAULT_SOLVER, Dim, DimSolver, shape_var
from semantics.structural.leaves import attrs_equal, nullary_adt_name, pop_binding, relation_name
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
    type_children,
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


def dim_key(d: Dim) -> int:
    if d is ANY:
        return -1
    if isinstance(d, int):
        return d
    return _sym_key(_as_sym(d))


# --- types ---------------------------------------------------------------------------------

MAX_RENAMING_SEARCH = 5   # unpaired shape variables in one dim whose pairings are all tried

_T_CMP, _T_UNBIND = 0, 1


def _dim_symbols(d: Dim) -> frozenset[str]:
    """Names of the shape variables of a dim."""
    if d is ANY or isinstance(d, int):
        return frozenset()
    return frozenset(s.name for s in sympy.sympify(d).free_symbols)


def shape_var_names(types: list[Type | None]) -> set[str]:
    """Names of the shape variables written in ``types`` (iterative walk).

    Args:
        types: types (``None`` entries are skipped), e.g. a signature's annotations.
    Returns:
        The set of names.
    """
    out: set[str] = set()
    stack: list[Type] = [t for t in types if t is not None]
    while stack:
        t = stack.pop()
        cls = type(t)
        if cls is TensorType:
            for d in t.shape:  # type: ignore[attr-defined]
                if not isinstance(d, int) and d is not ANY:
                    out.update(_dim_symbols(d))
        elif cls is TypeData:
            for ctor in t.constructors:  # type: ignore[attr-defined]
                stack.extend(ctor.inputs)
        else:
            stack.extend(type_children(t))
    return out


class _ShapeScopes:
    """The renaming of the shape variables bound by the definition being compared.

    ``depth`` counts the open definitions (only the outermost binds: the
    variables of nested ones are already in its text); ``canon_a``/``canon_b``
    map each side's paired names to a shared canonical symbol (named ``$k``,
    which no written name can be); ``free_a``/``free_b`` are the names written
    outside every definition of the compared expressions (free, compared by
    name). Inside a definition every other name is bound. ``deferred`` holds
    the dim equalities met before their variables were paired; ``undo`` logs
    the pairs made while solving them (for backtracking).
    """

    def __init__(self) -> None:
        self.depth = 0
        self.canon_a: dict[str, sympy.Symbol] = {}
        self.canon_b: dict[str, sympy.Symbol] = {}
        self.free_a: frozenset[str] = frozenset()
        self.free_b: frozenset[str] = frozenset()
        self.deferred: list[tuple[sympy.Expr, sympy.Expr]] = []
        self.undo: list[tuple[str, str]] = []
        self.count = 0

    def active(self) -> bool:
        return self.depth > 0

    def unpaired_a(self, e: sympy.Expr) -> list[str]:
        return sorted(s.name for s in e.free_symbols
                      if s.name not in self.canon_a and s.name not in self.free_a)

    def unpaired_b(self, e: sympy.Expr) -> list[str]:
        return sorted(s.name for s in e.free_symbols
                      if s.name not in self.canon_b and s.name not in self.free_b)

    def pair(self, x: str, y: str) -> None:
        self.count += 1
        c = shape_var(f"${self.count}")
        self.canon_a[x] = c
        self.canon_b[y] = c
        self.undo.append((x, y))

    def undo_to(self, mark: int) -> None:
        while len(self.undo) > mark:
            x, y = self.undo.pop()
            del self.canon_a[x]
            del self.canon_b[y]

    def names_match(self, x: str, y: str) -> bool:
        """Whether names ``x`` and ``y`` denote the same shape variable (pairing them if new)."""
        free_x, free_y = x in self.free_a, y in self.free_b
        if free_x or free_y:
            return free_x and free_y and x == y
        cx, cy = self.canon_a.get(x), self.canon_b.get(y)
        if cx is None and cy is None:
            self.pair(x, y)
            return True
        return cx is not None and cx is cy

    def rename(self, e: sympy.Expr, canon: dict[str, sympy.Symbol]) -> sympy.Expr:
        subs = {s: canon[s.name] for s in e.free_symbols if s.name in canon}
        return e.xreplace(subs) if subs else e

    def propagate(self, pending: list[tuple[sympy.Expr, sympy.Expr]],
                  equal: Callable[[sympy.Expr, sympy.Expr], bool]
                  ) -> list[tuple[sympy.Expr, sympy.Expr]] | None:
        """Check the equalities whose variables are paired and pair the forced ones (one
        unpaired variable a side), until nothing changes; the rest, or None on a conflict."""
        progress = True
        while progress and pending:
            progress = False
            left: list[tuple[sympy.Expr, sympy.Expr]] = []
            for e1, e2 in pending:
                ua, ub = self.unpaired_a(e1), self.unpaired_b(e2)
                if len(ua) != len(ub):
                    return None
                if len(ua) > 1:
                    left.append((e1, e2))
                    continue
                if ua:
                    self.pair(ua[0], ub[0])
                if not equal(e1, e2):
                    return None
                progress = True
            pending = left
        return pending

    def solve(self, equal: Callable[[sympy.Expr, sympy.Expr], bool]) -> bool:
        """Extend the pairing so that every deferred equality holds: propagation, then a
        backtracking search (explicit stack) over the pairings of the first open equality."""
        self.undo.clear()
        choices: list[tuple[list[tuple[sympy.Expr, sympy.Expr]], list[str], Any, int]] = []
        pending: list[tuple[sympy.Expr, sympy.Expr]] | None = list(self.deferred)
        while True:
            if pending is not None:
                pending = self.propagate(pending, equal)
            if pending is not None:
                if not pending:
                    return True
                e1, e2 = pending[0]
                ua, ub = self.unpaired_a(e1), self.unpaired_b(e2)
                orders = itertools.permutations(ub) if len(ub) <= MAX_RENAMING_SEARCH \
                    else iter((ub,))
                choices.append((pending, ua, orders, len(self.undo)))
            while choices:
                saved, ua, orders, mark = choices[-1]
                self.undo_to(mark)
                order = next(orders, None)
                if order is None:
                    choices.pop()
                    continue
                for x, y in zip(ua, order):
                    self.pair(x, y)
                pending = saved
                break
            else:
                return False


class TypeComparer:
    """State of one type comparison: scoped type-parameter maps, free type-variable bijection,
    and the shape scopes of the definitions being compared."""

    def __init__(self, map_free_vars: bool, solver: DimSolver | None):
        self.map_free = map_free_vars
        self.solver = solver
        self.tv_ab: dict[int, list[TypeVar]] = {}
        self.tv_ba: dict[int, list[TypeVar]] = {}
        self.free_tv_ab: dict[int, Type] = {}
        self.free_tv_ba: dict[int, Type] = {}
        self.shapes = _ShapeScopes()

    # type parameters ------------------------------------------------------------------------
    def bind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> bool:
        if len(xs) != len(ys) or any(x.kind != y.kind for x, y in zip(xs, ys)):
            return False
        for x, y in zip(xs, ys):
            self.tv_ab.setdefault(id(x), []).append(y)
            self.tv_ba.setdefault(id(y), []).append(x)
        return True

    def unbind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> None:
        for x, y in zip(xs, ys):
            pop_binding(self.tv_ab, id(x))
            pop_binding(self.tv_ba, id(y))

    def type_var(self, x: TypeVar, y: TypeVar) -> bool:
        if x.kind != y.kind:
            return False
        sx, sy = self.tv_ab.get(id(x)), self.tv_ba.get(id(y))
        if sx or sy:
            return bool(sx) and bool(sy) and sx[-1] is y and sy[-1] is x  # type: ignore[index]
        return self._free(x, y)

    def _free(self, x: Type, y: Type) -> bool:
        """A free type variable or hole: by identity, or mapped bijectively."""
        if not self.map_free:
            return x is y
        fx, fy = self.free_tv_ab.get(id(x)), self.free_tv_ba.get(id(y))
        if fx is None and fy is None:
            self.free_tv_ab[id(x)] = y
            self.free_tv_ba[id(y)] = x
            return True
        return fx is y and fy is x

    # shape variables ------------------------------------------------------------------------
    def enter_definition(self, tps_a: tuple[TypeVar, ...], tps_b: tuple[TypeVar, ...]) -> bool:
        """Open a definition whose (already paired) type parameters are ``tps_a``/``tps_b``;
        the outermost one binds the shape variables of its text. False when its shape-kinded
        type parameters cannot correspond."""
        scopes = self.shapes
        scopes.depth += 1
        if scopes.depth == 1:
            scopes.canon_a.clear()
            scopes.canon_b.clear()
            scopes.deferred.clear()
            scopes.undo.clear()
        return all(scopes.names_match(x.name, y.name) for x, y in zip(tps_a, tps_b)
                   if x.kind is Kind.ShapeVar)

    def exit_definition(self) -> bool:
        """Close a definition; at the end of the outermost one, find a renaming under which
        every deferred dim equality holds (False when there is none)."""
        scopes = self.shapes
        scopes.depth -= 1
        if scopes.depth or not scopes.deferred:
            return True
        found = scopes.solve(self._renamed_equal)
        scopes.deferred.clear()
        return found

    def dims(self, d1: Dim, d2: Dim) -> bool:
        """Dim equality under the renaming of bound shape variables (see the module docstring:
        an equality whose variables are not all paired yet is deferred to the definition's end)."""
        scopes = self.shapes
        if not scopes.active() or d1 is ANY or d2 is ANY or \
                (isinstance(d1, int) and isinstance(d2, int)):
            return dims_equal(d1, d2, self.solver)
        e1, e2 = _as_sym(d1), _as_sym(d2)
        ua = scopes.unpaired_a(e1)
        ub = scopes.unpaired_b(e2)
        if len(ua) != len(ub):
            return False
        if not ua:
            return self._renamed_equal(e1, e2)
        if len(ua) == 1:   # `n + 1` against `k + 1`: the only pairing that can make them equal
            scopes.pair(ua[0], ub[0])
            return self._renamed_equal(e1, e2)
        scopes.deferred.append((e1, e2))
        return True

    def _renamed_equal(self, e1: sympy.Expr, e2: sympy.Expr) -> bool:
        scopes = self.shapes
        r1, r2 = scopes.rename(e1, scopes.canon_a), scopes.rename(e2, scopes.canon_b)
        return dims_equal(r1, r2, self.solver)

    # types ----------------------------------------------------------------------------------
    def opt_types(self, t1: Type | None, t2: Type | None) -> bool:
        if t1 is None or t2 is None:
            return t1 is t2
        return self.types(t1, t2)

    def type_lists(self, xs: tuple[Type, ...], ys: tuple[Type, ...]) -> bool:
        if len(xs) != len(ys):
            return False
        return all(self.types(x, y) for x, y in zip(xs, ys))

    def types(self, t1: Type, t2: Type) -> bool:
        """Whether ``t1`` and ``t2`` are equal in the current scopes (iterative)."""
        stack: list[tuple[int, Any, Any]] = [(_T_CMP, t1, t2)]
        while stack:
            action, a, b = stack.pop()
            if action == _T_UNBIND:
                self.unbind_type_vars(a, b)
                continue
            if not self._push_type_pair(a, b, stack):
                for action, a, b in reversed(stack):
                    if action == _T_UNBIND:
                        self.unbind_type_vars(a, b)
                return False
        return True

    def _push_type_pair(self, a: Any, b: Any, stack: list[tuple[int, Any, Any]]) -> bool:
        """Compare the heads of ``a`` and ``b`` and push their children (False: different)."""
        cls = type(a)
        if cls is not type(b):
            name = nullary_adt_name(a)
            return name is not None and name == nullary_adt_name(b)
        if cls is TensorType:
            if a is b and not self.shapes.active():
                return True
            return (a.dtype == b.dtype and len(a.shape) == len(b.shape)
                    and all(self.dims(x, y) for x, y in zip(a.shape, b.shape)))
        if cls is TupleType:
            return _push_lists(stack, a.fields, b.fields)
        if cls is TypeVar:
            return self.type_var(a, b)
        if cls is GlobalTypeVar:
            return bool(a.name == b.name)
        if cls is TypeCall:
            return a.func.name == b.func.name and _push_lists(stack, a.args, b.args)
        if cls is RefType:
            stack.append((_T_CMP, a.value, b.value))
            return True
        if cls is FuncType:
            if len(a.arg_types) != len(b.arg_types) or \
                    len(a.type_constraints) != len(b.type_constraints):
                return False
            if not self.bind_type_vars(a.type_params, b.type_params):
                return False
            stack.append((_T_UNBIND, a.type_params, b.type_params))
            return _push_lists(stack, (*a.arg_types, a.ret_type, *a.type_constraints),
                               (*b.arg_types, b.ret_type, *b.type_constraints))
        if cls is TypeRelation:
            return (relation_name(a.relation) == relation_name(b.relation)
                    and a.num_inputs == b.num_inputs and attrs_equal(a.attrs, b.attrs)
                    and _push_lists(stack, a.args, b.args))
        if cls is TypeData:
            if a.header.name != b.header.name or len(a.constructors) != len(b.constructors):
                return False
            if any(c1.name != c2.name or c1.tag != c2.tag or len(c1.inputs) != len(c2.inputs)
                   for c1, c2 in zip(a.constructors, b.constructors)):
                return False
            if not self.bind_type_vars(a.type_vars, b.type_vars):
                return False
            stack.append((_T_UNBIND, a.type_vars, b.type_vars))
            return _push_lists(stack, tuple(i for c in a.constructors for i in c.inputs),
                               tuple(i for c in b.constructors for i in c.inputs))
        if cls is IncompleteType:
            if a is b:
                return True
            return bool(a.kind == b.kind) and self._free(a, b)
        raise TypeError(f"types_equal: not a type: {cls.__name__}")


def _push_lists(stack: list[tuple[int, Any, Any]], xs: tuple[Type, ...], ys: tuple[Type, ...]
                ) -> bool:
    """Push the pairs of ``xs`` and ``ys`` to compare them left to right (False: lengths differ)."""
    if len(xs) != len(ys):
        return False
    for k in range(len(xs) - 1, -1, -1):
        stack.append((_T_CMP, xs[k], ys[k]))
    return True


def types_equal(t1: Type, t2: Type, *, map_free_vars: bool = False,
                solver: DimSolver | None = None) -> bool:
    """Whether two types are equal: dims symbolically, bound type parameters up to renaming.

    Free shape variables compare by name (a standalone type is not a definition; see the
    module docstring). Iterative: any depth.

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
    return TypeComparer(map_free_vars, solver).types(t1, t2)
