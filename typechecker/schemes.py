"""Type schemes: instantiation (Type-Instantiate) and generalization (RULES.md, "Generalization").

A *scheme* is a ``FuncType`` with ``type_params``; a global's scheme is also
implicitly quantified over the shape variables of its signature (the
inferencer records them per scheme object).

* :func:`instantiate` replaces the type parameters by the given explicit type
  arguments or fresh inference variables, the quantified shape variables by
  fresh dimension holes, and adds the scheme's relation constraints, so
  instantiated, to the solver.
* :func:`generalize` is Gen(Γ, T) with levels: the inference variables of T
  created deeper than the current level that no unsolved constraint mentions
  become fresh ``TypeVar`` parameters (bound in the union-find, so the nodes
  typed with them show the parameters), and such dimension holes become
  shape variables with fresh names (``n``, ``m``, ... unused by the
  program), which the scheme quantifies implicitly. A variable an unsolved
  constraint mentions stays monomorphic (the monomorphism restriction) and
  has its level lowered, as it now belongs to the enclosing scope.
* :func:`operator_scheme` is the scheme of an operator used as a value
  (Type-Op); :func:`normalized_attrs` caches attribute normalization.
"""

from __future__ import annotations

import string
from typing import Any

import sympy

from semantics.errors import RelayTypeError
from semantics.rules import Rule
from semantics.shapes import shape_var
from semantics.span import Span
from semantics.type_visitor import TypeVisitor
from semantics.types import FuncType, IncompleteType, Type, TypeRelation, TypeVar
from typechecker import messages
from typechecker.kinding import shape_vars_of
from typechecker.solver import Solver
from typechecker.unify import TypeStore, substitute


def instantiate(store: TypeStore, solver: Solver, scheme: FuncType,
                shape_vars: tuple[sympy.Symbol, ...], explicit: tuple[Type, ...], label: str,
                span: Span | None, error: RelayTypeError | None = None) -> FuncType:
    """A fresh instance of ``scheme`` (its relation constraints added to ``solver``)."""
    # [Type-Instantiate]  σ = fn[V..](T..) -> O where R..   θ = [U../V.., d../s..]   ⊨ θ(Ri)
    #                     ⟹   σ ≼ fn(θ(T1), ..., θ(Tn)) -> θ(O)
    params = scheme.type_params
    if len(explicit) > len(params):
        raise RelayTypeError(messages.arity(Rule.TYPE_INSTANTIATE, "explicit type arguments",
                                            len(params), len(explicit), "type argument"),
                             span, code=Rule.TYPE_INSTANTIATE)
    if error is not None:
        raise RelayTypeError(error.message, span, code=Rule.TYPE_OP)
    tmap: dict[TypeVar, Type] = {}
    for i, p in enumerate(params):
        tmap[p] = explicit[i] if i < len(explicit) else store.fresh()
    dmap = {s: store.fresh_hole(s.name) for s in shape_vars}
    body = store.resolve(FuncType(scheme.arg_types, scheme.ret_type, (), scheme.type_constraints))
    inst = substitute(body, tmap, dmap)
    assert isinstance(inst, FuncType)
    rule = Rule.TYPE_OP if scheme.type_constraints else Rule.TYPE_CALL
    for c in inst.type_constraints:
        n = c.num_inputs
        solver.relate(c.relation, tuple(c.args[:n]), c.attrs, rule=rule, span=span, label=label,
                      output=c.args[n])
    return FuncType(inst.arg_types, inst.ret_type)


def generalize(store: TypeStore, solver: Solver, t: Type, level: int,
               explicit: tuple[TypeVar, ...], taken_shape_names: set[str],
               group: dict[TypeVar, None] | None = None
               ) -> tuple[Type, tuple[sympy.Symbol, ...]]:
    """Quantify the variables and holes of ``t`` deeper than ``level`` that no constraint needs.

    Returns the scheme and the shape variables that were created for its holes (named
    apart from ``taken_shape_names``, the shape variables the program writes, which the
    new names are added to). ``group`` collects the type variables created for a set of
    definitions generalized together (a strongly connected component of globals): a
    variable they share becomes one parameter, listed by every member that mentions it.
    """
    t = store.resolve(t)
    if type(t) is not FuncType:
        return t, ()
    group = {} if group is None else group
    excluded = solver.pending_blockers(level) if solver.pending else set()
    tvars: list[IncompleteType] = []
    holes: list[Any] = []
    seen: set[int] = set()
    for b in store.blockers(t, deep=True):
        if id(b) in seen:
            continue
        seen.add(id(b))
        if b in excluded:
            if type(b) is IncompleteType and store.level.get(b, 0) > level:
                store.level[b] = level
            continue
        if type(b) is IncompleteType:
            if store.level.get(b, 0) > level:
                tvars.append(b)
        elif store.hole_level.get(b, 0) > level:
            holes.append(b)
    taken = {p.name for p in explicit} | {p.name for p in group}
    for v in tvars:
        tv = TypeVar(fresh_name(taken, TYPE_NAMES))
        group[tv] = None
        store.bind(v, tv)
    new_dims = []
    if holes:
        taken_shape_names.update(shape_vars_of(t))
        for h in holes:
            sv = shape_var(fresh_name(taken_shape_names, SHAPE_NAMES))
            new_dims.append(sv)
            store.bind_hole(h, sv)
    r = store.resolve(t)
    assert isinstance(r, FuncType)
    # Only this group's variables become parameters; with none, no walk is needed
    # (so a chain of monomorphic definitions stays linear).
    own = tuple(explicit)
    if group:
        own += tuple(v for v in type_vars_of(r) if v in group and v not in explicit)
    if own != r.type_params:
        r = FuncType(r.arg_types, r.ret_type, own, r.type_constraints)
    return r, tuple(new_dims)


def operator_scheme(opdef: Any) -> tuple[FuncType, RelayTypeError | None]:
    """``fn[T1..Tn, O](T1..Tn) -> O where Rel(T1..Tn, O)``, and why it cannot be used, if so."""
    name = opdef.name
    n = opdef.num_inputs
    error = None
    if n < 0:
        n = 1
        error = RelayTypeError(messages.with_rule(
            f"operator {name} takes a variable number of arguments and cannot be used "
            "as a value", Rule.TYPE_OP))
    try:
        attrs = opdef.normalize_attrs({})
    except RelayTypeError as err:
        attrs = None
        error = error or RelayTypeError(messages.with_rule(
            f"{err.message}; operator {name} cannot be used as a value without "
            "attributes", Rule.TYPE_OP))
    params = tuple(TypeVar(f"T{i + 1}") for i in range(n)) + (TypeVar("O"),)
    relation = TypeRelation(opdef.relation, params, n, attrs)
    return FuncType(params[:n], params[n], params, (relation,)), error


_ATTRS_CACHE: dict[tuple[str, str], Any] = {}


def normalized_attrs(opdef: Any, attrs: Any) -> Any:
    """``opdef.normalize_attrs(attrs)``, cached by operator and the exact text of the attrs."""
    if not attrs:
        key = (opdef.name, "")
    else:
        key = (opdef.name, repr(attrs))
    out = _ATTRS_CACHE.get(key)
    if out is None or out[0] is not opdef:
        out = (opdef, opdef.normalize_attrs(attrs))
        if len(_ATTRS_CACHE) > 4096:
            _ATTRS_CACHE.clear()
        _ATTRS_CACHE[key] = out
    return out[1]


TYPE_NAMES = tuple(string.ascii_uppercase)
SHAPE_NAMES = ("n", "m", "k", "p", "q", "r", "s", "t", "u", "v", "w")


def type_vars_of(t: Type) -> list[TypeVar]:
    """The type variables occurring free in ``t``, in order of first appearance."""
    walk = _FreeTypeVars()
    walk.visit(t)
    return walk.out


class _FreeTypeVars(TypeVisitor):
    """The walk of :func:`type_vars_of` (memoized: linear in the size of the type DAG)."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[TypeVar] = []
        self._seen: set[TypeVar] = set()

    def enter(self, t: Type) -> bool:
        if type(t) is TypeVar:
            if t not in self._seen and not self.is_bound(t):
                self._seen.add(t)
                self.out.append(t)
            return False
        return True


def fresh_name(taken: set[str], names: tuple[str, ...]) -> str:
    for n in names:
        if n not in taken:
            taken.add(n)
            return n
    i = 1
    while True:
        for n in names:
            cand = f"{n}{i}"
            if cand not in taken:
                taken.add(cand)
                return cand
        i += 1


