"""Variable analyses: free and bound variables, type variables, globals, constructors.

What it computes (all results are lists in *first-occurrence order*: a
left-to-right, pre-order walk in which a ``let`` visits its value before its
body, a function its parameters before its body and a ``match`` its scrutinee
before its clauses; duplicates are dropped, the first object per identity —
or per name for globals and constructors — is kept):

* :func:`free_vars` — the local variables used outside the scope of any of
  their binders. Scoping follows the text format (docs/architecture.md#text and
  RULES.md, "Evaluation"): a function binds its parameters in its body; a
  ``let`` binds its variable in the body, and also in the value when the
  value is a function literal (recursive ``let``); a clause binds its
  pattern's variables in its right-hand side.
* :func:`bound_vars` — every variable at a binding site; :func:`all_vars` —
  bound or used.
* :func:`free_type_vars` — type variables not bound by an enclosing type
  parameter list (``fn [A] ...``, ``fn [A](A) -> A``, ``type T[A] {...}``).
* :func:`free_shape_vars` — the names of the shape variables in the dims of
  a type (or of every type written in an expression).
* :func:`global_vars` and :func:`constructors_used`.

Invariants and limits: every walk is iterative (an explicit stack of
enter/bind/unbind actions, HOUSE_STYLE habit 4) and memoized by identity, so
a node shared by a graph binding is walked once and the cost is linear in the
size of the DAG. Scope tracking is exact for trees; for a shared node the
scope in force at its *first* occurrence is the one used, which is exact for
well-formed programs (every bound variable is used only inside its binder's
scope, as TVM's well-formedness check requires). Types are walked by
:class:`semantics.type_visitor.TypeVisitor` (iterative too: types can be as
deep as the programs that produce them).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    Var,
    children,
    pattern_vars,
)
from semantics.type_visitor import TypeVisitor
from semantics.types import TensorType, Type, TypeVar
from semantics.visitor import pre_order, walk_scoped

__all__ = [
    "all_vars", "bound_vars", "constructors_used", "free_shape_vars", "free_type_vars",
    "free_vars", "global_vars",
]

_ATOMS = (Var, GlobalVar, Op, Constructor, Constant)

# Actions of the type walk (:func:`_expr_types`).
_ENTER, _BIND, _UNBIND = 0, 1, 2


def free_vars(expr: Expr) -> list[Var]:
    """The variables of ``expr`` that occur outside the scope of their binders.

    Computed by :func:`semantics.visitor.walk_scoped` (as are :func:`bound_vars`
    and :func:`all_vars`); the printer calls it on its hot path.

    Args:
        expr: any expression (a module's function, a let chain, a DAG with
            graph sharing).
    Returns:
        The free :class:`Var` objects in first-occurrence order, each once.
    """
    out: list[Var] = []
    seen: set[int] = set()

    def use(v: Var, bound: bool) -> None:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)

    walk_scoped(expr, use, free_only=True)
    return out


def bound_vars(expr: Expr) -> list[Var]:
    """Every variable at a binding site of ``expr`` (let, parameter, pattern), each once.

    Returns:
        The bound :class:`Var` objects in first-occurrence order.
    """
    out: list[Var] = []
    seen: set[int] = set()

    def bind(v: Var, site: object) -> None:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)

    walk_scoped(expr, None, bind)
    return out


def all_vars(expr: Expr) -> list[Var]:
    """Every variable of ``expr``, bound or used, each once, in first-occurrence order."""
    out: list[Var] = []
    seen: set[int] = set()

    def add(v: Var, _: object) -> None:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)

    walk_scoped(expr, add, add)
    return out


# --- types ------------------------------------------------------------------------------------

def _type_walk(t: Type | None, bound: dict[int, int], on_var: Callable[[TypeVar], None],
               on_type: Callable[[Type], None] | None = None) -> None:
    """Visit ``t`` pre-order (``on_type``) and its free type variables (``on_var``).

    ``bound`` holds (by ``id``) the type parameters bound around ``t``; inside,
    ``FuncType`` and ``TypeData`` bind theirs. Iterative (:class:`_TypeWalk`).
    """
    if t is None:
        return
    _TypeWalk(bound, on_var, on_type).visit(t)


class _TypeWalk(TypeVisitor):
    """The walk of :func:`_type_walk` (ADT definitions' constructor fields included)."""

    visit_type_data = True

    def __init__(self, outer: dict[int, int], on_var: Callable[[TypeVar], None],
                 on_type: Callable[[Type], None] | None):
        super().__init__()
        self.outer = outer
        self.on_var = on_var
        self.on_type = on_type

    def enter(self, t: Type) -> bool:
        if self.on_type is not None:
            self.on_type(t)
        if type(t) is TypeVar:
            if id(t) not in self.outer and not self.is_bound(t):
                self.on_var(t)
            return False
        return True


def _expr_types(root: Expr, on_type: Callable[[Type | None, dict[int, int]], None]) -> None:
    """Call ``on_type(t, bound_type_vars)`` for every type written in ``root``, in order.

    Types written in an expression: variable annotations (at the binder, or at
    the first use of a free variable), function return types and call type
    arguments. ``bound_type_vars`` holds the type parameters in scope.
    """
    bound: dict[int, int] = {}
    visited: set[int] = set()
    seen_vars: set[int] = set()
    stack: list[tuple[int, object]] = [(_ENTER, root)]

    def annotate(v: Var) -> None:
        if id(v) not in seen_vars:
            seen_vars.add(id(v))
            on_type(v.type_annotation, bound)

    while stack:
        action, item = stack.pop()
        if action == _BIND:
            for tv in item:  # type: ignore[attr-defined]
                bound[id(tv)] = bound.get(id(tv), 0) + 1
            continue
        if action == _UNBIND:
            for tv in item:  # type: ignore[attr-defined]
                bound[id(tv)] -= 1
                if not bound[id(tv)]:
                    del bound[id(tv)]
            continue
        node = item
        t = type(node)
        if t is Var:
            annotate(node)  # type: ignore[arg-type]
            continue
        if t in _ATOMS:
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        if t is Function:
            tparams = node.type_params  # type: ignore[attr-defined]
            stack.append((_UNBIND, tparams))
            stack.append((_ENTER, node.body))  # type: ignore[attr-defined]
            stack.append((_ENTER, _TypeNote(node.ret_type)))  # type: ignore[attr-defined]
            for p in reversed(node.params):  # type: ignore[attr-defined]
                stack.append((_ENTER, _VarNote(p)))
            stack.append((_BIND, tparams))
            continue
        if t is _TypeNote:
            on_type(node.type, bound)  # type: ignore[attr-defined]
            continue
        if t is _VarNote:
            annotate(node.var)  # type: ignore[attr-defined]
            continue
        if t is Let:
            stack.append((_ENTER, node.body))  # type: ignore[attr-defined]
            stack.append((_ENTER, node.value))  # type: ignore[attr-defined]
            stack.append((_ENTER, _VarNote(node.var)))  # type: ignore[attr-defined]
            continue
        if t is Match:
            for clause in reversed(node.clauses):  # type: ignore[attr-defined]
                stack.append((_ENTER, clause.rhs))
                for v in reversed(pattern_vars(clause.lhs)):
                    stack.append((_ENTER, _VarNote(v)))
            stack.append((_ENTER, node.data))  # type: ignore[attr-defined]
            continue
        kids = children(node)  # type: ignore[arg-type]
        for kid in reversed(kids):
            stack.append((_ENTER, kid))
        if t is Call:
            for ta in reversed(node.type_args):  # type: ignore[attr-defined]
                stack.append((_ENTER, _TypeNote(ta)))


class _TypeNote:
    """A type written in an expression, queued in the walk of :func:`_expr_types`."""

    __slots__ = ("type",)

    def __init__(self, t: Type | None):
        self.type = t


class _VarNote:
    """A binding occurrence of a variable (its annotation), queued like :class:`_TypeNote`."""

    __slots__ = ("var",)

    def __init__(self, v: Var):
        self.var = v


def free_type_vars(node: Expr | Type | Pattern | Clause) -> list[TypeVar]:
    """The type variables of ``node`` not bound by an enclosing type parameter list.

    Args:
        node: an expression (its annotations, return types and type arguments
            are searched) or a type (``FuncType`` and ``TypeData`` bind their
            parameters).
    Returns:
        Free :class:`TypeVar` objects in first-occurrence order, each once.
    """
    out: list[TypeVar] = []
    seen: set[int] = set()

    def add(tv: TypeVar) -> None:
        if id(tv) not in seen:
            seen.add(id(tv))
            out.append(tv)

    if isinstance(node, Type):
        _type_walk(node, {}, add)
    elif isinstance(node, Expr):
        _expr_types(node, lambda t, bound: _type_walk(t, bound, add))
    elif isinstance(node, (Pattern, Clause)):
        pat = node.lhs if isinstance(node, Clause) else node
        for v in pattern_vars(pat):
            _type_walk(v.type_annotation, {}, add)
        if isinstance(node, Clause):
            for tv in free_type_vars(node.rhs):
                add(tv)
    else:
        raise TypeError(f"free_type_vars: not a Relay node: {type(node).__name__}")
    return out


def free_shape_vars(node: Type | Expr) -> list[str]:
    """The names of the shape variables in the dims of ``node``'s types.

    Args:
        node: a type, or an expression (every type written in it is searched).
    Returns:
        Shape variable names in first-occurrence order, each once.
    """
    out: list[str] = []
    seen: set[str] = set()

    def on_type(t: Type) -> None:
        if isinstance(t, TensorType):
            for d in t.shape:
                if isinstance(d, sympy.Basic):
                    for s in sorted(d.free_symbols, key=lambda s: s.name):
                        if s.name not in seen:
                            seen.add(s.name)
                            out.append(s.name)

    if isinstance(node, Type):
        _type_walk(node, {}, lambda tv: None, on_type)
    elif isinstance(node, Expr):
        _expr_types(node, lambda t, bound: _type_walk(t, bound, lambda tv: None, on_type))
    else:
        raise TypeError(f"free_shape_vars: not a type or expression: {type(node).__name__}")
    return out


# --- globals and constructors -----------------------------------------------------------------

def global_vars(expr: Expr) -> list[GlobalVar]:
    """The globals ``@g`` referenced by ``expr``: the first object per name, in order."""
    out: list[GlobalVar] = []
    seen: set[str] = set()
    for node in pre_order(expr):
        if type(node) is GlobalVar and node.name_hint not in seen:
            seen.add(node.name_hint)
            out.append(node)
    return out


def constructors_used(expr: Expr) -> list[Constructor]:
    """The constructors ``expr`` builds with or matches on: the first object per name, in order."""
    out: list[Constructor] = []
    seen: set[str] = set()

    def add(c: Constructor) -> None:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)

    for node in pre_order(expr):
        if type(node) is Constructor:
            add(node)
        elif type(node) is Match:
            for clause in node.clauses:
                stack: list[Pattern] = [clause.lhs]
                while stack:
                    p = stack.pop()
                    if isinstance(p, PatternConstructor):
                        add(p.constructor)
                        stack.extend(reversed(p.patterns))
                    elif isinstance(p, PatternTuple):
                        stack.extend(reversed(p.patterns))
    return out
