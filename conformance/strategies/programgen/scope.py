"""Scopes and module state of one generation, and small shared predicates.

``_Ctx`` is a typing context Γ as the generator sees it: the variables in scope indexed by
type key, the pure nodes that later code may share (within a function boundary), the type
variables in scope and the recursion permit ``_RecPermit`` (where a terminating recursive
call is allowed: structural descent or a counter loop). ``_State`` holds what one module
accumulates (ADTs, globals, the pure-node set). The helpers below them are pure functions
used by several generator mixins (``_is_pure`` decides what graph sharing may reuse).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import opcalls
from conformance.strategies.typeutil import type_key
from semantics.expr import Call, Constant, Expr, GlobalVar, Op, Tuple, TupleGetItem, Var
from semantics.types import Type, TypeData, TypeVar

# --- scopes ----------------------------------------------------------------------------------

@dataclass
class _RecPermit:
    """Where a recursive call is allowed: callee, kind, decreasing argument, signature."""

    callee: Expr
    kind: str                         # "struct" or "counter"
    arg_types: tuple[Type, ...]
    ret: Type
    counter: Var | None = None        # the counter parameter (counter loops)
    param: Var | None = None          # the parameter recursion descends on (structural)
    smaller: tuple[Var, ...] = ()     # variables bound to strict subterms of ``param``
    adt_key: str = ""


class _Ctx:
    """A scope: variables by type key, shareable pure nodes, the recursion permit."""

    __slots__ = ("vars", "by_key", "pool", "parent", "boundary", "rec", "tvars")

    def __init__(self, parent: _Ctx | None = None, new: Sequence[tuple[Var, Type]] = (), *,
                 boundary: bool = False, rec: _RecPermit | None = None,
                 tvars: Sequence[TypeVar] = ()):
        self.parent = parent
        self.boundary = boundary or parent is None
        self.vars: list[tuple[Var, Type]] = (list(parent.vars) if parent else []) + list(new)
        self.by_key: dict[str, list[Var]] = {}
        for v, t in self.vars:
            self.by_key.setdefault(type_key(t), []).append(v)
        self.pool: list[tuple[Expr, str]] = []
        self.rec = rec
        self.tvars: tuple[TypeVar, ...] = (parent.tvars if parent else ()) + tuple(tvars)

    def child(self, new: Sequence[tuple[Var, Type]] = (), **kw: Any) -> _Ctx:
        if "rec" not in kw:
            kw["rec"] = self.rec
        return _Ctx(self, new, **kw)

    def shareable(self, key: str) -> list[Expr]:
        out: list[Expr] = []
        c: _Ctx | None = self
        while c is not None:
            out.extend(n for n, k in c.pool if k == key)
            if c.boundary:
                break
            c = c.parent
        return out

    def types_in_scope(self) -> list[Type]:
        return [t for _, t in self.vars]


@dataclass
class _GlobalInfo:
    name: str
    type_params: tuple[TypeVar, ...]
    arg_types: tuple[Type, ...]
    ret: Type


@dataclass
class _State:
    adts: list[TypeData] = field(default_factory=list)
    globals: list[_GlobalInfo] = field(default_factory=list)
    counter: Any = field(default_factory=itertools.count)
    pure: set[int] = field(default_factory=set)
    pure_nodes: list[Any] = field(default_factory=list)   # keeps the ``pure`` ids alive
    observed: list[tuple[Var, Type]] = field(default_factory=list)
    # Constants whose value must not change (by id; the list keeps them alive, so that an
    # id is never reused by another constant while generation runs).
    pinned: set[int] = field(default_factory=set)
    pinned_nodes: list[Any] = field(default_factory=list)
    # Constant initial values of the references created so far, by content type key (a
    # later ``ref`` may get an equal one: two allocations a CSE must not merge).
    ref_inits: dict[str, list[tuple[Any, Type]]] = field(default_factory=dict)

    # Constants always lifted to parameters (the inputs, edge cases included, then reach
    # them): the operands of the self probes ``x - x``, ``x / x``.
    lift: set[int] = field(default_factory=set)

    def pin(self, *nodes: Any) -> None:
        self.pinned.update(id(n) for n in nodes)
        self.pinned_nodes.extend(nodes)

    def always_lift(self, node: Any) -> None:
        self.lift.add(id(node))
        self.pinned_nodes.append(node)          # keeps the id alive


_PREFIX = {"tensor": "x", "tuple": "t", "fn": "f", "ref": "r", "adt": "d", "var": "a"}


# --- shared helpers ---------------------------------------------------------------------------

_INDEX: dict[int, st.SearchStrategy[int]] = {}


_INTS: dict[tuple[int, int], st.SearchStrategy[int]] = {}


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``, cached (a new strategy object is validated on its first
    draw, which costs more than the draw)."""
    s = _INTS.get((lo, hi))
    if s is None:
        s = _INTS[(lo, hi)] = st.integers(lo, hi)
    return s


def _index(n: int) -> st.SearchStrategy[int]:
    s = _INDEX.get(n)
    if s is None:
        s = _INDEX[n] = st.integers(0, n - 1)
    return s


def _exists(op: str) -> bool:
    from semantics.ops import exists

    return exists(op)


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape)) if shape else 1


def _has_ref(t: Type) -> bool:
    from conformance.strategies.typeutil import has_ref

    return has_ref(t)


def _mentions_adt(tys: Sequence[Type], name: str) -> bool:
    from conformance.strategies.values import _mentions

    return _mentions(tys, name)


def _is_recursive(td: TypeData) -> bool:
    return any(_mentions_adt(c.inputs, td.header.name) for c in td.constructors)


def _is_param_of(rec: _RecPermit, v: Var) -> bool:
    return rec.param is v


def _is_pure(node: Expr, pure: set[int]) -> bool:
    if isinstance(node, (Constant, Var)):
        return True
    if id(node) in pure:
        return True
    if isinstance(node, Tuple):
        return all(_is_pure(f, pure) for f in node.fields)
    if isinstance(node, TupleGetItem):
        return _is_pure(node.tuple_value, pure)
    if isinstance(node, Call) and isinstance(node.op, Op):
        return opcalls.safe_to_share(node.op.name) and all(_is_pure(a, pure) for a in node.args)
    return False


def _calls(body: Expr, callee: Expr) -> bool:
    from semantics.visitor import post_order

    for node in post_order(body):
        if isinstance(node, Call) and (node.op is callee or (
                isinstance(callee, GlobalVar) and isinstance(node.op, GlobalVar)
                and node.op.name_hint == callee.name_hint)):
            return True
    return False


def _mentions_var(tys: Sequence[Type], tv: TypeVar) -> bool:
    from semantics.types import type_children

    stack = list(tys)
    while stack:
        t = stack.pop()
        if t is tv:
            return True
        stack.extend(type_children(t))
    return False
