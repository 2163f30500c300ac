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
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.printer import pretty
from semantics.visitor import ExprMutator, enclosing_functions, rebound_vars

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
    out = _Sharer(fn, analysis).mutate(fn)
    assert isinstance(out, Function)
    return out


class _Sharer(ExprMutator):
    """Hash-consing bottom-up: a mergeable node whose key was seen in its function is
    replaced by the first node with that key."""

    def __init__(self, fn: Function, analysis: EffectAnalysis):
        self.analysis = analysis
        self.rebound = rebound_vars(fn)
        # Per function: the table of canonical nodes; a node's owner is the innermost
        # function whose body reaches it without crossing another function.
        self.owner = enclosing_functions(fn)
        self.tables: dict[int, dict[Hashable, Expr]] = {}
        self.tainted: set[int] = set()  # canonical nodes mentioning a rebound variable

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        tainted = self.tainted
        if (type(old) is Var and id(old) in self.rebound) or \
                any(id(k) in tainted for k in children(new)):
            tainted.add(id(new))
            return new
        if isinstance(old, _MERGEABLE) and shareable(self.analysis.flags(old)):
            key = _key(new, old)
            if key is not None:
                table = self.tables.setdefault(self.owner.get(id(old), 0), {})
                first = table.get(key)
                if first is None:
                    table[key] = new
                else:
                    return first
        return new


def _leaf_key(e: Expr) -> Hashable:
    if type(e) is Op:
        return ("op", e.name)
    if type(e) is Constant:
        return _ConstantKey(e.data)
    if type(e) is GlobalVar:
        return ("global", e.name_hint)
    if type(e) is Constructor:
        return ("ctor", e.name)
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
    assert type(e) is TupleGetItem
    return ("project", kids, e.index)
