"""Unification: a union-find over type variables and dimension holes (RULES.md, "Unification").

Inference variables are :class:`semantics.types.IncompleteType` objects
(identity-hashed). :class:`TypeStore` keeps

* ``bound``: the union-find forest as a map from a variable to what it was
  unified with (another variable or a type); :meth:`TypeStore.find` follows it
  with path compression;
* ``level``: each unbound variable's let-nesting level, for generalization
  (Rémy's levels: binding a variable lowers the levels of the variables in
  its new value, so "not free in the environment" is "level deeper than the
  current one");
* **dimension holes**: the unification variables of *dims*. Instantiating a
  shape-polymorphic definition replaces each of its shape variables by a
  fresh hole, a ``sympy.Dummy`` (integer, non-negative, so relations can
  compute with it like with any shape variable). A hole is bound by
  unifying it with a dim; an equation in which holes occur inside larger
  expressions (``2*h == 10``) is solved when it has exactly one hole and a
  unique non-negative integer solution, and is otherwise *deferred* to the
  solver until its holes are known (:class:`typechecker.solver.DimConstraint`).

Fast paths: a type the store has seen to be *ground* (no variables, no
holes) is remembered by identity, so resolving it is a dict lookup; ground
tensor types are hash-consed (:meth:`TypeStore.tensor`); two concrete dims
compare as Python ints and never reach SymPy.

Failures raise :class:`Mismatch` (internal); callers turn it into a
``RelayTypeError`` naming the typing rule, both types and the span
(:meth:`TypeStore.unify`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy

from semantics.errors import RelayTypeError
from semantics.rules import Rule
from semantics.shapes import ANY, AnyDim, Dim, dim_str
from semantics.span import Span
from semantics.type_visitor import TypeMutator, TypeVisitor, type_kids
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
    TypeVar,
)
from typechecker import messages
from typechecker.shape_solver import Z3DimSolver


class Mismatch(Exception):
    """Two types (or dims) cannot be unified; ``detail`` says where they differ."""

    def __init__(self, detail: str = ""):
        super().__init__(detail)
        self.detail = detail


Blocker = Any  # an unbound IncompleteType or an unbound hole (sympy.Dummy)


class TypeStore:
    """The substitution being built by inference: union-find over variables and holes."""

    def __init__(self, dims: Z3DimSolver):
        self.dims = dims
        self.bound: dict[IncompleteType, Type] = {}
        self.level: dict[IncompleteType, int] = {}
        self.hole_level: dict[sympy.Dummy, int] = {}
        self.hole_value: dict[sympy.Dummy, Dim] = {}
        self.hole_origin: dict[sympy.Dummy, str] = {}
        self.current_level = 0
        self.on_refine: Callable[[Blocker], None] = lambda key: None
        self.on_defer: Callable[[Dim, Dim, Any], None] | None = None
        self._ground: dict[int, Type] = {}
        self._closed: dict[int, Type] = {}
        self._resolved: dict[int, tuple[Type, Type]] = {}
        self._tensors: dict[tuple[Any, ...], TensorType] = {}
        self._has_holes: dict[Any, bool] = {}

    # --- creation -----------------------------------------------------------------------------
    def fresh(self) -> IncompleteType:
        v = IncompleteType(Kind.Type)
        self.level[v] = self.current_level
        return v

    def adopt(self, v: IncompleteType) -> IncompleteType:
        """Use an ``IncompleteType`` written in the program as a variable of this store."""
        if v not in self.level and v not in self.bound:
            self.level[v] = self.current_level
        return v

    def fresh_hole(self, origin: str | None = None) -> sympy.Dummy:
        """A new dimension hole; ``origin`` names the shape variable it instantiates."""
        h = sympy.Dummy("h", integer=True, nonnegative=True)
        self.hole_level[h] = self.current_level
        if origin is not None:
            self.hole_origin[h] = origin
        return h

    # --- display (error messages speak of shape variables, never of internal holes) ----------
    def show_dim(self, d: Dim) -> str:
        """``d`` resolved, each unbound hole shown as the shape variable it instantiates."""
        d = self.resolve_dim(d)
        if isinstance(d, (int, AnyDim)) or not self.dim_has_holes(d):
            return dim_str(d)
        subs = {h: sympy.Symbol(self.hole_origin.get(h, "?"), integer=True, nonnegative=True)
                for h in d.free_symbols if h in self.hole_level}
        return dim_str(d.xreplace(subs))

    def hole_names(self, *dims: Dim) -> list[str]:
        """The display names of the unbound holes in ``dims`` (sorted, each once)."""
        names = {self.hole_origin.get(h, "?") for d in dims for h in self.unbound_holes(d)}
        return sorted(names)

    def for_display(self, t: Type) -> Type:
        """``t`` resolved, with holes renamed as in :meth:`show_dim` (for messages only)."""
        return _Display(self).mutate(self.resolve(t))

    def tensor(self, shape: tuple[Dim, ...], dtype: str) -> TensorType:
        """The hash-consed ground tensor type ``Tensor[shape, dtype]`` (no holes allowed)."""
        key = (shape, dtype)
        t = self._tensors.get(key)
        if t is None:
            t = TensorType(shape, dtype)
            self._tensors[key] = t
            self._ground[id(t)] = t
        return t

    def is_closed(self, t: Type) -> bool:
        """``t`` (a union-find root) is known to reach no unbound variable or hole.

        Bindings are never undone, so a closed node stays closed; the occurs check
        and :meth:`blockers` record the nodes they find closed, which keeps repeated
        walks over a growing type linear overall.
        """
        if id(t) in self._ground or id(t) in self._closed:
            return True
        tt = type(t)
        if tt is TypeVar or tt is GlobalTypeVar:
            return True
        if tt is TensorType:
            return not any(self.unbound_holes(d) for d in t.shape)  # type: ignore[attr-defined]
        return False

    def note_closed(self, t: Type) -> None:
        """Record ``t`` as closed if every child (through the union-find) is."""
        if all(self.is_closed(self.find(k)) for k in type_kids(t)):
            self._closed[id(t)] = t

    def mark_ground(self, t: Type) -> Type:
        self._ground[id(t)] = t
        return t

    def is_ground_fast(self, t: Type) -> bool:
        return id(t) in self._ground

    # --- holes --------------------------------------------------------------------------------
    def dim_has_holes(self, d: Dim) -> bool:
        if isinstance(d, (int, AnyDim)):
            return False
        known = self._has_holes.get(d)
        if known is None:
            known = any(s in self.hole_level for s in d.free_symbols)
            self._has_holes[d] = known
        return known

    def resolve_dim(self, d: Dim) -> Dim:
        if isinstance(d, (int, AnyDim)) or not self.dim_has_holes(d):
            return d
        subs: dict[Any, Any] = {}
        for s in d.free_symbols:
            if s in self.hole_value:
                value = self.resolve_dim(self.hole_value[s])
                if value is ANY:
                    return ANY
                subs[s] = sympy.Integer(value) if type(value) is int else value
        if not subs:
            return d
        out = d.xreplace(subs)
        if out.is_Integer:
            return int(out)
        return out

    def unbound_holes(self, d: Dim) -> list[sympy.Dummy]:
        d = self.resolve_dim(d)
        if isinstance(d, (int, AnyDim)) or not self.dim_has_holes(d):
            return []
        return [s for s in d.free_symbols
                if s in self.hole_level and s not in self.hole_value]

    def bind_hole(self, h: sympy.Dummy, value: Dim) -> None:
        if not isinstance(value, (int, AnyDim)):
            if h in value.free_symbols:
                raise Mismatch(f"dimension {self.show_dim(h)} occurs in {self.show_dim(value)}")
            lvl = self.hole_level[h]
            for s in value.free_symbols:
                if s in self.hole_level and self.hole_level[s] > lvl:
                    self.hole_level[s] = lvl
        self.hole_value[h] = value
        self.on_refine(h)

    # --- union-find ---------------------------------------------------------------------------
    def find(self, t: Type) -> Type:
        if type(t) is not IncompleteType:
            return t
        bound = self.bound
        root: Type = t
        while type(root) is IncompleteType and root in bound:
            root = bound[root]
        while type(t) is IncompleteType and t in bound and bound[t] is not root:
            nxt = bound[t]
            bound[t] = root
            t = nxt
        return root

    def bind(self, v: IncompleteType, t: Type) -> None:
        """``v := t`` after the occurs check; lowers levels inside ``t``; wakes dependents."""
        lvl = self.level.get(v, self.current_level)
        if id(t) not in self._ground:
            self._occurs_and_lower(v, t, lvl)
        self.bound[v] = t
        self.level.pop(v, None)
        self.on_refine(v)

    def _occurs_and_lower(self, v: IncompleteType, t: Type, lvl: int) -> None:
        _OccursAndLower(self, v, lvl).visit(t)

    # --- resolution ---------------------------------------------------------------------------
    def resolve(self, t: Type) -> Type:
        """``t`` with every bound variable and hole replaced (iterative: types may be deep)."""
        if id(t) in self._ground:
            return t
        return _Resolver(self).mutate(t)

    def is_ground(self, t: Type) -> bool:
        """No variables and no holes anywhere in (resolved) ``t``."""
        if id(t) in self._ground:
            return True
        return not self.blockers(t, deep=True)

    def blockers(self, t: Type, deep: bool = True) -> list[Blocker]:
        """The unbound variables (and, if ``deep``, holes) ``t`` still depends on.

        In first-occurrence order (pre-order, left to right), each once.
        """
        if not deep:
            u = self.find(t)
            return [u] if type(u) is IncompleteType else []
        walk = _Blockers(self)
        walk.visit(t)
        return walk.out

    # --- unification --------------------------------------------------------------------------
    def unify(self, expected: Type, found: Type, rule: Rule, what: str = "",
              span: Span | None = None) -> None:
        """Unify; on failure raise ``RelayTypeError`` "type mismatch in <rule> (<what>): ..."."""
        if expected is found:
            return
        try:
            self._unify(expected, found, (rule, what, span, expected, found))
        except Mismatch as m:
            raise self.mismatch_error(rule, what, span, expected, found, m.detail) from None

    def mismatch_error(self, rule: Rule, what: str, span: Span | None, expected: Type,
                       found: Type, detail: str = "") -> RelayTypeError:
        e = messages.show(self.for_display(expected))
        f = messages.show(self.for_display(found))
        return RelayTypeError(messages.mismatch(rule, what, e, f, detail), span, code=rule)

    def _unify(self, a: Type, b: Type, ctx: Any) -> None:
        # An explicit stack of pairs; a pair met twice (types are DAGs) is unified once.
        stack = [(a, b)]
        done: set[tuple[int, int]] = set()
        while stack:
            x, y = stack.pop()
            x = self.find(x)
            y = self.find(y)
            if x is y:
                continue
            pair = (id(x), id(y))
            if pair in done:
                continue
            done.add(pair)
            tx, ty = type(x), type(y)
            if tx is IncompleteType:
                self.bind(x, y)  # type: ignore[arg-type]
                continue
            if ty is IncompleteType:
                self.bind(y, x)  # type: ignore[arg-type]
                continue
            if tx is TensorType and ty is TensorType:
                self._unify_tensor(x, y, ctx)  # type: ignore[arg-type]
                continue
            if tx is not ty:
                if {tx, ty} == {GlobalTypeVar, TypeCall}:
                    call, gtv = (x, y) if tx is TypeCall else (y, x)
                    if call.func.name == gtv.name and not call.args:  # type: ignore
                        continue
                raise Mismatch()
            if tx is TupleType:
                if len(x.fields) != len(y.fields):  # type: ignore[attr-defined]
                    raise Mismatch(f"tuples of {len(x.fields)} and "  # type: ignore
                                   f"{len(y.fields)} fields")  # type: ignore[attr-defined]
                stack.extend(zip(x.fields, y.fields, strict=False))  # type: ignore[attr-defined]
            elif tx is FuncType:
                self._unify_func(x, y, stack)  # type: ignore[arg-type]
            elif tx is RefType:
                stack.append((x.value, y.value))  # type: ignore[attr-defined]
            elif tx is TypeCall:
                if x.func.name != y.func.name or len(x.args) != len(y.args):  # type: ignore
                    raise Mismatch()
                stack.extend(zip(x.args, y.args, strict=False))  # type: ignore[attr-defined]
            elif tx is GlobalTypeVar:
                if x.name != y.name:  # type: ignore[attr-defined]
                    raise Mismatch()
            else:  # TypeVar (rigid, identity), TypeRelation, TypeData: only identical ones unify
                raise Mismatch()

    def _unify_func(self, x: FuncType, y: FuncType, stack: list) -> None:
        if len(x.arg_types) != len(y.arg_types):
            raise Mismatch(f"functions of {len(x.arg_types)} and {len(y.arg_types)} parameters")
        if len(x.type_params) != len(y.type_params):
            raise Mismatch("functions with different numbers of type parameters")
        if x.type_params:
            # polymorphic function types: compare up to renaming of the bound parameters
            y = rename_type_params(y, dict(zip(y.type_params, x.type_params, strict=False)))
        stack.extend(zip(x.arg_types, y.arg_types, strict=False))
        stack.append((x.ret_type, y.ret_type))

    def _unify_tensor(self, x: TensorType, y: TensorType, ctx: Any) -> None:
        if x.dtype != y.dtype or len(x.shape) != len(y.shape):
            raise Mismatch()
        for i, (dx, dy) in enumerate(zip(x.shape, y.shape, strict=False)):
            if dx is dy:
                continue
            tdx, tdy = type(dx), type(dy)
            if tdx is int and tdy is int:
                if dx != dy:
                    raise Mismatch(f"dimension {i}: {dx} and {dy} differ")
                continue
            if (dx is ANY and tdy is int) or (dy is ANY and tdx is int):
                continue
            self.unify_dim(dx, dy, ctx, i)

    def unify_dim(self, dx: Dim, dy: Dim, ctx: Any, index: int | None = None) -> None:
        """Make two dims equal: bind holes, solve one-hole equations, or prove with the solver."""
        # [Type-Dim-Equal]  d1 = ? or d2 = ? or d1 = d2 for all naturals   ⟹   ⊢ d1 ≐ d2
        where = f"dimension {index}: " if index is not None else ""
        dx = self.resolve_dim(dx)
        dy = self.resolve_dim(dy)
        if dx is ANY or dy is ANY:
            for d in (dx, dy):
                if isinstance(d, sympy.Dummy) and d in self.hole_level \
                        and d not in self.hole_value:
                    self.bind_hole(d, ANY)
            return
        if type(dx) is int and type(dy) is int:
            if dx != dy:
                raise Mismatch(f"{where}{dx} and {dy} differ")
            return
        hx = self.unbound_holes(dx)
        hy = self.unbound_holes(dy)
        if hx or hy:
            if isinstance(dx, sympy.Dummy) and hx == [dx]:
                self.bind_hole(dx, dy)
                return
            if isinstance(dy, sympy.Dummy) and hy == [dy]:
                self.bind_hole(dy, dx)
                return
            if not self._solve_one_hole(dx, dy, where):
                if self.on_defer is None:
                    raise Mismatch(f"{where}cannot solve {self.show_dim(dx)} == "
                                   f"{self.show_dim(dy)}")
                self.on_defer(dx, dy, ctx)
            return
        verdict = self.dims.equal(dx, dy)
        if verdict is True:
            return
        if verdict is False:
            raise Mismatch(f"{where}{dim_str(dx)} and {dim_str(dy)} differ")
        raise Mismatch(f"{where}cannot prove {dim_str(dx)} == {dim_str(dy)} for all values of "
                       "the shape variables")

    def _solve_with_z3(self, dx: Dim, dy: Dim, h: sympy.Dummy, where: str) -> bool:
        """The equations SymPy cannot solve (``Mod(n, 3) == 2``): ask Z3 (False: defer)."""
        verdict, value = self.dims.solve_for(dx, dy, h)
        if verdict == "none":
            raise Mismatch(f"{where}{self._equation(dx, dy)} has no solution with "
                           f"{self._unknowns(dx, dy)} a natural number")
        if verdict == "one" and value is not None:
            self.bind_hole(h, value)
            return True
        return False

    def _equation(self, dx: Dim, dy: Dim) -> str:
        return f"{self.show_dim(dx)} == {self.show_dim(dy)}"

    def _unknowns(self, dx: Dim, dy: Dim) -> str:
        return " and ".join(self.hole_names(dx, dy)) or "the dimension"

    def _solve_one_hole(self, dx: Dim, dy: Dim, where: str) -> bool:
        """Solve ``dx == dy`` for its single hole if the solution is a unique natural number."""
        eq = sympy.sympify(dx) - sympy.sympify(dy)
        holes = [s for s in eq.free_symbols if s in self.hole_level and s not in self.hole_value]
        if len(holes) != 1:
            return False
        h = holes[0]
        try:
            sols = sympy.solve(eq, h)
        except (NotImplementedError, TypeError, ValueError):
            return self._solve_with_z3(dx, dy, h, where)
        if len(sols) != 1:
            if not sols and eq.is_polynomial(h) and sympy.degree(eq, h) == 1:
                raise Mismatch(f"{where}{self._equation(dx, dy)} has no solution with "
                               f"{self._unknowns(dx, dy)} a natural number")
            return self._solve_with_z3(dx, dy, h, where)
        sol = sympy.simplify(sols[0])
        if sol.is_Integer:
            if int(sol) < 0:
                raise Mismatch(f"{where}{self._equation(dx, dy)} needs a negative "
                               f"{self._unknowns(dx, dy)}")
            self.bind_hole(h, int(sol))
            return True
        if sol.is_number:
            raise Mismatch(f"{where}{self._equation(dx, dy)} has no solution with "
                           f"{self._unknowns(dx, dy)} an integer")
        if sol.is_integer and not (sol.free_symbols & set(self.hole_level)):
            self.bind_hole(h, sol)
            return True
        return False


def rename_type_params(t: FuncType, mapping: dict[TypeVar, Type]) -> FuncType:
    """``t`` without its bound parameters, each replaced as ``mapping`` says."""
    inner = FuncType(t.arg_types, t.ret_type, (), t.type_constraints)
    out = substitute(inner, mapping, {})
    assert isinstance(out, FuncType)
    return out


def substitute(t: Type, tvars: dict[TypeVar, Type], dims: dict[Any, Dim]) -> Type:
    """Replace type variables (by identity) and shape variables (by symbol) in ``t``.

    A variable bound by a ``fn[...]`` inside ``t`` is not replaced there.
    """
    if not tvars and not dims:
        return t
    return _Substitution(tvars, dims).mutate(t)


class _Substitution(TypeMutator):
    """The walk of :func:`substitute`."""

    def __init__(self, tvars: dict[TypeVar, Type], dims: dict[Any, Dim]):
        super().__init__()
        self.tvars = tvars
        self.dims = dims

    def enter(self, t: Type) -> Type | None:
        if type(t) is TypeVar and not self.is_bound(t):
            return self.tvars.get(t, t)
        return None

    def mutate_dim(self, d: Dim) -> Dim:
        return _subst_dim(d, self.dims) if self.dims else d


class _Resolver(TypeMutator):
    """The walk of :meth:`TypeStore.resolve`: variables and holes replaced by their values.

    Groundness is computed bottom-up (a node is ground when its children are),
    so resolving a deep type is linear in its size.
    """

    def __init__(self, store: TypeStore):
        super().__init__()
        self.store = store
        self.ground = store._ground

    def redirect(self, t: Type) -> Type:
        return self.store.find(t)

    def enter(self, t: Type) -> Type | None:
        if id(t) in self.ground or type(t) is IncompleteType:
            return t
        known = self.store._resolved.get(id(t))
        if known is not None:
            return known[1]
        if type(t) is TensorType:
            store = self.store
            shape = t.shape
            if all(isinstance(d, (int, AnyDim)) or not store.dim_has_holes(d) for d in shape):
                return store.tensor(shape, t.dtype)
            new_shape = tuple(store.resolve_dim(d) for d in shape)
            if any(store.dim_has_holes(d) for d in new_shape):
                return TensorType(new_shape, t.dtype)
            return store.tensor(new_shape, t.dtype)
        return None

    def leave(self, old: Type, new: Type) -> Type:
        tt = type(new)
        if tt is TypeVar or tt is GlobalTypeVar or (
                tt is not TensorType and tt is not IncompleteType
                and all(id(k) in self.ground for k in type_kids(new))):
            self.ground[id(new)] = new
            if new is not old:
                self.store._resolved[id(old)] = (old, new)
        return new


class _Display(TypeMutator):
    """Holes in dims renamed after the shape variables they instantiate (messages only)."""

    def __init__(self, store: TypeStore):
        super().__init__()
        self.store = store

    def mutate_dim(self, d: Dim) -> Dim:
        store = self.store
        if isinstance(d, (int, AnyDim)) or not store.dim_has_holes(d):
            return d
        subs = {h: sympy.Symbol(store.hole_origin.get(h, "?"), integer=True, nonnegative=True)
                for h in d.free_symbols if h in store.hole_level}
        return d.xreplace(subs)


class _OccursAndLower(TypeVisitor):
    """Occurs check of ``v`` in a type, lowering the levels found in it to ``lvl``."""

    def __init__(self, store: TypeStore, v: IncompleteType, lvl: int):
        super().__init__()
        self.store = store
        self.v = v
        self.lvl = lvl

    def redirect(self, t: Type) -> Type:
        return self.store.find(t)

    def leave(self, u: Type) -> None:
        self.store.note_closed(u)

    def enter(self, u: Type) -> bool:
        store = self.store
        if id(u) in store._ground or id(u) in store._closed:
            return False
        tu = type(u)
        lvl = self.lvl
        if tu is IncompleteType:
            if u is self.v:
                raise Mismatch("a type cannot contain itself (infinite type)")
            if store.level.get(u, lvl) > lvl:  # type: ignore[call-overload]
                store.level[u] = lvl  # type: ignore[index]
            return False
        if tu is TensorType:
            for d in u.shape:  # type: ignore[attr-defined]
                for h in store.unbound_holes(d):
                    if store.hole_level[h] > lvl:
                        store.hole_level[h] = lvl
            return False
        return True


class _Blockers(TypeVisitor):
    """The walk of :meth:`TypeStore.blockers` (deep)."""

    def __init__(self, store: TypeStore):
        super().__init__()
        self.store = store
        self.out: list[Blocker] = []
        self._seen: set[int] = set()

    def redirect(self, t: Type) -> Type:
        return self.store.find(t)

    def _add(self, b: Blocker) -> None:
        if id(b) not in self._seen:
            self._seen.add(id(b))
            self.out.append(b)

    def leave(self, u: Type) -> None:
        self.store.note_closed(u)

    def enter(self, u: Type) -> bool:
        store = self.store
        if id(u) in store._ground or id(u) in store._closed:
            return False
        tu = type(u)
        if tu is IncompleteType:
            self._add(u)
            return False
        if tu is TensorType:
            for d in u.shape:  # type: ignore[attr-defined]
                for h in store.unbound_holes(d):
                    self._add(h)
            return False
        return True


def _subst_dim(d: Dim, dims: dict[Any, Dim]) -> Dim:
    if isinstance(d, (int, AnyDim)):
        return d
    subs = {s: dims[s] for s in d.free_symbols if s in dims}
    if not subs:
        return d
    if any(v is ANY for v in subs.values()):
        return ANY
    subs = {k: sympy.Integer(v) if type(v) is int else v for k, v in subs.items()}
    out = d.xreplace(subs)
    return int(out) if out.is_Integer else out
