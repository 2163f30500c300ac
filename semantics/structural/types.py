"""Dims and type equality: :func:`dims_equal` and :func:`types_equal`.

Part of :mod:`semantics.alpha` ("Types"): dims compare symbolically (``n + n``
equals ``2*n``, ``?`` only equals ``?``); type parameters are bound like
variables (kinds must agree); free type variables and ``IncompleteType`` holes
are mapped bijectively or compared by identity; a bare ``GlobalTypeVar``
``Name`` equals the type call ``Name[]``. Also the hash key of a dim
(:func:`_dim_key`), consistent with :func:`dims_equal`.

**Shape variables.** ARCHITECTURE.md §3 says a shape variable is "implicitly
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
a bijection between the two sides' names, built while comparing
(:class:`_ShapeScopes`): first from the signatures' aligned dims with one
unpaired variable on each side (``n`` against ``k``; then ``n * m`` against
``k * j`` once ``m`` is paired), then on first use: a dim with unpaired
variables pairs them with the first pairing (all permutations of at most
:data:`MAX_RENAMING_SEARCH` variables) under which the dims are symbolically
equal. Dims are compared symbolically after renaming both sides to shared
canonical symbols, so ``n + n`` equals ``2*k`` under ``n↔k`` while ``(n, n)``
never equals ``(n, k)``. The search is greedy: a contrived definition whose
first dims each have several unpaired variables and admit several pairings may
compare as different (never the other way round). A shape-kinded type
parameter (``[n: Shape]``) pairs its name with its partner's.

Free shape variables compare by name, and :func:`types_equal` on two
standalone types treats all of them as free — as ARCHITECTURE.md §4 specifies
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
from typing import Any

import sympy

from semantics.shapes import ANY, DEFAULT_SOLVER, Dim, DimSolver, shape_var
from semantics.structural.leaves import _attrs_equal, _nullary_adt_name, _pop, _relation_name
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


def _dim_key(d: Dim) -> int:
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
    name). Inside a definition every other name is bound, and paired on first
    use.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.canon_a: dict[str, sympy.Symbol] = {}
        self.canon_b: dict[str, sympy.Symbol] = {}
        self.free_a: frozenset[str] = frozenset()
        self.free_b: frozenset[str] = frozenset()
        self.count = 0

    def active(self) -> bool:
        return self.depth > 0

    def unpaired_a(self, names: frozenset[str]) -> list[str]:
        return sorted(x for x in names if x not in self.canon_a and x not in self.free_a)

    def unpaired_b(self, names: frozenset[str]) -> list[str]:
        return sorted(y for y in names if y not in self.canon_b and y not in self.free_b)

    def pair(self, x: str, y: str) -> None:
        self.count += 1
        c = shape_var(f"${self.count}")
        self.canon_a[x] = c
        self.canon_b[y] = c

    def unpair(self, x: str, y: str) -> None:
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


class _TypeComparer:
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
            _pop(self.tv_ab, id(x))
            _pop(self.tv_ba, id(y))

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
    def enter_definition(self, sig_a: list[Type | None], sig_b: list[Type | None],
                         tps_a: tuple[TypeVar, ...], tps_b: tuple[TypeVar, ...]) -> bool:
        """Open a definition (signatures ``sig_a``/``sig_b``, type parameters ``tps_a``/``tps_b``
        already paired); the outermost one binds the shape variables of its text. False when
        the shape-kinded type parameters cannot correspond."""
        scopes = self.shapes
        scopes.depth += 1
        if scopes.depth == 1:
            scopes.canon_a.clear()
            scopes.canon_b.clear()
        for x, y in zip(tps_a, tps_b):
            if x.kind is Kind.ShapeVar and not scopes.names_match(x.name, y.name):
                return False
        if scopes.depth == 1:
            self._pair_signature(sig_a, sig_b)
        return True

    def exit_definition(self) -> None:
        self.shapes.depth -= 1

    def _pair_signature(self, sig_a: list[Type | None], sig_b: list[Type | None]) -> None:
        """Pair shape variables from the signatures' aligned dims, simplest first.

        Repeatedly takes the aligned dims with exactly one unpaired variable on each
        side (a bare ``n`` against a bare ``k`` first of all) and pairs them when that
        makes the dims equal; so ``(n * m, m)`` against ``(j * k, k)`` pairs ``m↔k``
        before it looks at the products. Whatever is left is paired on first use.
        """
        pairs = [(da, db, _dim_symbols(da), _dim_symbols(db))
                 for da, db in _aligned_dims(sig_a, sig_b)]
        pairs = [p for p in pairs if p[2] or p[3]]
        scopes = self.shapes
        progress = True
        while progress:
            progress = False
            for da, db, sa, sb in pairs:
                if len(scopes.unpaired_a(sa)) == 1 and len(scopes.unpaired_b(sb)) == 1 \
                        and self.dims(da, db):
                    progress = True

    def dims(self, d1: Dim, d2: Dim) -> bool:
        """Dim equality under the current renaming of bound shape variables."""
        scopes = self.shapes
        if not scopes.active() or d1 is ANY or d2 is ANY or \
                (isinstance(d1, int) and isinstance(d2, int)):
            return dims_equal(d1, d2, self.solver)
        e1, e2 = _as_sym(d1), _as_sym(d2)
        ua = scopes.unpaired_a(frozenset(s.name for s in e1.free_symbols))
        ub = scopes.unpaired_b(frozenset(s.name for s in e2.free_symbols))
        if len(ua) != len(ub):
            return False
        if not ua:
            return self._renamed_equal(e1, e2)
        orders = itertools.permutations(ub) if len(ub) <= MAX_RENAMING_SEARCH else iter((ub,))
        for order in orders:
            for x, y in zip(ua, order):
                scopes.pair(x, y)
            if self._renamed_equal(e1, e2):
                return True
            for x, y in zip(ua, order):
                scopes.unpair(x, y)
        return False

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
            name = _nullary_adt_name(a)
            return name is not None and name == _nullary_adt_name(b)
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
            return (_relation_name(a.relation) == _relation_name(b.relation)
                    and a.num_inputs == b.num_inputs and _attrs_equal(a.attrs, b.attrs)
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


def _aligned_dims(sig_a: list[Type | None], sig_b: list[Type | None]) -> list[tuple[Dim, Dim]]:
    """The pairs of dims at the same positions of two signatures (where their shapes agree)."""
    out: list[tuple[Dim, Dim]] = []
    stack: list[tuple[Type, Type]] = [(a, b) for a, b in zip(sig_a, sig_b)
                                      if a is not None and b is not None]
    while stack:
        a, b = stack.pop()
        if type(a) is not type(b):
            continue
        if type(a) is TensorType:
            if len(a.shape) == len(b.shape):  # type: ignore[attr-defined]
                out.extend(zip(a.shape, b.shape))  # type: ignore[attr-defined]
            continue
        kids_a, kids_b = type_children(a), type_children(b)
        if len(kids_a) == len(kids_b):
            stack.extend(zip(kids_a, kids_b))
    out.reverse()
    return out


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
    return _TypeComparer(map_free_vars, solver).types(t1, t2)
