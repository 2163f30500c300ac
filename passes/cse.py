"""EliminateCommonSubexpr (``eliminate_common_subexpr``): share identical pure sub-expressions.

What it does: **Share** — within one function body, a call, tuple or
projection structurally identical to an earlier one (the same operator or
callee, attributes, and — after their own sharing — the *same* argument
nodes) is replaced by the earlier node, which becomes a graph-shared node:
evaluated once per activation (Semantics-Shared).

How: hash-consing, children first. Once a node's children are canonical
(shared where equal), two nodes are structurally equal exactly when their
kind, their attributes and the identities of their children agree — so the
structural key of a node is computed from its children's identities in O(1),
and the whole pass is one linear walk. Leaves enter keys by value (operators
by name, constants by dtype/shape/bytes, globals and constructors by name,
variables by identity: variables are compared by identity, exactly as
``alpha_equal`` compares free variables).

What is never merged: anything that reads, writes or allocates a reference
(:func:`passes.purity.shareable`) — two ``ref(0)`` are two references — and
calls of closures or globals that may; nodes that mention a variable bound
more than once in the function (a reused binder object: the two occurrences
could see different values); nodes in different functions (each function is
its own scope: sharing across a function boundary would share across
activations). Binding forms (``let``, ``fn``, ``match``, ``if``) are not
merged themselves; their sub-expressions are.

Invariants: effects are untouched; evaluation may only be saved, never moved
before a binding it needs (the merged node's free variables are the same
objects, bound once).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from passes.common import typed_or_same
from passes.manager import register_pass
from passes.purity import EffectAnalysis, shareable
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
    pattern_vars,
    with_children,
)
from semantics.module import IRModule
from semantics.printer import pretty
from semantics.visitor import post_order

__all__ = ["eliminate_common_subexpr"]

_MERGEABLE = (Call, Tuple, TupleGetItem)


@register_pass("EliminateCommonSubexpr", "eliminate_common_subexpr", opt_level=3)
def eliminate_common_subexpr(mod: IRModule) -> IRModule:
    """Share structurally identical pure sub-expressions within each function."""
    typed = typed_or_same(mod)
    analysis = EffectAnalysis(typed)
    out = {name: _share(fn, analysis) for name, fn in typed.functions.items()}
    if all(out[n] is typed.functions[n] for n in out):
        return mod
    return typed.with_functions(out)


def _share(fn: Function, analysis: EffectAnalysis) -> Function:
    order = post_order(fn)
    rebound = _rebound_vars(order)
    memo: dict[int, Expr] = {}
    # Per function: the table of canonical nodes; a node's owner is the innermost function
    # whose body reaches it without crossing another function.
    owner: dict[int, int] = {}
    tables: dict[int, dict[Hashable, Expr]] = {}
    tainted: set[int] = set()  # canonical nodes mentioning a rebound variable
    _assign_owners(fn, owner)
    for node in order:
        kids = children(node)
        new = with_children(node, tuple(memo[id(k)] for k in kids)) if kids else node
        if any(id(memo[id(k)]) in tainted for k in kids) or (type(node) is Var and id(node) in
                                                               rebound):
            tainted.add(id(new))
        if isinstance(node, _MERGEABLE) and id(new) not in tainted \
                and shareable(analysis.flags(node)):
            key = _key(new, node)
            if key is not None:
                table = tables.setdefault(owner.get(id(node), 0), {})
                first = table.get(key)
                if first is None:
                    table[key] = new
                else:
                    new = first
        memo[id(node)] = new
    out = memo[id(fn)]
    assert isinstance(out, Function)
    return out


def _leaf_key(e: Expr) -> Hashable:
    t = type(e)
    if t is Op:
        return ("op", e.name)  # type: ignore[attr-defined]
    if t is Constant:
        return _ConstantKey(e.data)  # type: ignore[attr-defined]
    if t is GlobalVar:
        return ("global", e.name_hint)  # type: ignore[attr-defined]
    if t is Constructor:
        return ("ctor", e.name)  # type: ignore[attr-defined]
    return ("node", id(e))


class _ConstantKey:
    """A constant's value as a dictionary key: equal exactly when dtype, shape and bytes are.

    Keying by ``data.tobytes()`` copies and hashes every weight of a model; this key hashes
    the dtype, the shape and at most :data:`_SAMPLE` evenly spaced elements, and compares
    the bytes only when two keys meet in the same hash bucket (the same equivalence).
    """

    __slots__ = ("data", "_hash")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        flat = data.reshape(-1)
        step = max(1, flat.size // _SAMPLE)
        sample = np.ascontiguousarray(flat[::step]).view(np.uint8).tobytes()
        self._hash = hash(("const", data.dtype.str, data.shape, sample))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ConstantKey):
            return False
        a, b = self.data, other.data
        if a is b:
            return True
        if self._hash != other._hash or a.dtype != b.dtype or a.shape != b.shape:
            return False
        return bool(np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                                   np.ascontiguousarray(b).view(np.uint8)))


_SAMPLE = 256


def _key(e: Expr, old: Expr) -> Hashable | None:
    """The structural key of ``e`` (children canonical); ``old`` is the node it rebuilds."""
    kids = tuple(_leaf_key(k) for k in children(e))
    if type(e) is Call:
        if e.type_args:
            return None
        try:
            attrs = tuple(sorted(e.attrs.items()))
            hash(attrs)
        except TypeError:
            return None
        if type(e.op) is not Op or not e.args:
            # A polymorphic callee (constructor, global, closure) or a call without arguments
            # (``zeros``, a nullary constructor) may have different types at equal-looking
            # sites: the type is part of the key (no type known: not merged).
            if old.checked_type is None:
                return None
            return ("call", kids, attrs, pretty(old.checked_type))
        return ("call", kids, attrs)
    if type(e) is Tuple:
        return ("tuple", kids)
    return ("project", kids, e.index)  # type: ignore[attr-defined]


def _rebound_vars(order: list[Expr]) -> set[int]:
    """Variables bound at more than one binding site (by identity)."""
    seen: set[int] = set()
    twice: set[int] = set()

    def bind(v: Var) -> None:
        if id(v) in seen:
            twice.add(id(v))
        seen.add(id(v))

    for node in order:
        t = type(node)
        if t is Let:
            bind(node.var)  # type: ignore[attr-defined]
        elif t is Function:
            for p in node.params:  # type: ignore[attr-defined]
                bind(p)
        elif t is Match:
            for clause in node.clauses:  # type: ignore[attr-defined]
                for v in pattern_vars(clause.lhs):
                    bind(v)
    return twice


def _assign_owners(fn: Function, owner: dict[int, int]) -> None:
    """Map every node to the id of the innermost function whose body contains it.

    A node reachable from two functions (sharing across a function boundary) is owned by
    the first found; such a node is then only merged with nodes of that function.
    """
    stack: list[tuple[Expr, int]] = [(fn.body, id(fn))]
    while stack:
        node, fid = stack.pop()
        if id(node) in owner:
            continue
        owner[id(node)] = fid
        if type(node) is Function:
            stack.append((node.body, id(node)))
            continue
        for kid in children(node):
            stack.append((kid, fid))
