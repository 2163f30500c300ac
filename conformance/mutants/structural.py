"""Structural slips: control flow, tuples, bindings, effects and matches rebuilt wrongly.

``if`` branches swapped or folded as if the condition were true, tuple fields
reordered, a projection index off by one, a ``ref_write`` dropped or two writes
reordered, a ``let`` binder capturing a variable of the enclosing scope, an effectful
binding inlined at its uses (its effect duplicated or moved), match clauses reordered,
the arguments of a function call swapped.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from conformance.mutants.core import Mutant, rewrite_sites, same_types
from interpreter.values import ConstructorValue
from semantics.expr import (
    Call,
    Clause,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
    with_children,
)
from semantics.module import IRModule
from semantics.types import TupleType
from semantics.visitor import ExprMutator, post_order

i32 = np.int32


def _if_swapped(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, If):
            return None
        return If(new.cond, new.false_branch, new.true_branch)

    return rewrite_sites(mod, rewrite, every=True)


def _if_folded_true(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, If):
            return None
        return new.true_branch

    return rewrite_sites(mod, rewrite, every=True)


def _tuple_fields_swapped(mod: IRModule) -> IRModule:
    """The first two fields of a tuple (of equal types) reordered."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Tuple) or not isinstance(old, Tuple) or len(new.fields) < 2:
            return None
        f = new.fields
        for i in range(len(f) - 1):
            if same_types(old.fields[i].checked_type, old.fields[i + 1].checked_type):
                return Tuple((*f[:i], f[i + 1], f[i], *f[i + 2:]))
        return None

    return rewrite_sites(mod, rewrite, every=True)


def _projection_off_by_one(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, TupleGetItem) or not isinstance(old, TupleGetItem):
            return None
        tt = old.tuple_value.checked_type
        if not isinstance(tt, TupleType) or len(tt.fields) < 2:
            return None
        for j in (new.index + 1, new.index - 1):
            if 0 <= j < len(tt.fields) and same_types(tt.fields[j], tt.fields[new.index]):
                return TupleGetItem(new.tuple_value, j)
        return None

    return rewrite_sites(mod, rewrite, every=True)


def _drop_ref_write(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        return Tuple(()) if isinstance(new, RefWrite) else None

    return rewrite_sites(mod, rewrite, every=True)


def _reorder_writes(mod: IRModule) -> IRModule:
    """``let _ = w1; let _ = w2; e`` (two sequenced writes) becomes ``w2; w1; e``; failing
    that, a write moved after the binding that follows it."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Let) or not isinstance(new.value, RefWrite):
            return None
        inner = new.body
        if not isinstance(inner, Let) or new.var.name_hint != "_":
            return None
        if inner.var.name_hint != "_" and _mentions(inner.body, new.var):
            return None
        return Let(inner.var, inner.value, Let(new.var, new.value, inner.body))

    return rewrite_sites(mod, rewrite, every=True)


def _mentions(e: Expr, v: Var) -> bool:
    return any(n is v for n in post_order(e))


class _Subst(ExprMutator):
    """Replace a variable; with ``copy``, each use by a fresh copy of the top node (a node
    shared in the graph is evaluated once, so a duplicated effect needs distinct nodes)."""

    def __init__(self, old: Expr, new: Expr, copy: bool = False) -> None:
        self.old, self.new, self.copy = old, new, copy

    def visit_var(self, new: Expr, old: Expr) -> Expr:
        return self.new if old is self.old and not self.copy else new

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        if not self.copy:
            return new
        kids = children(new)
        if not any(k is self.old for k in kids):
            return new
        return with_children(new, tuple(dataclasses.replace(self.new) if k is self.old else k
                                        for k in kids))


def _binder_captures(mod: IRModule) -> IRModule:
    """In ``let %y = v; body``, uses of an outer variable ``%x`` (same type) in ``body``
    become ``%y`` — the inner binder captures them (a renaming/substitution bug)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Let) or not isinstance(old, Let) or old.var.name_hint == "_":
            return None
        if isinstance(old.value, Function):
            return None
        bound = _bound_in(old.body) | {id(old.var)}
        for n in post_order(old.body):
            if isinstance(n, Var) and id(n) not in bound and n is not old.var and \
                    same_types(n.checked_type, old.var.checked_type or old.value.checked_type):
                return Let(new.var, new.value, _Subst(n, new.var).mutate(new.body))
        return None

    return rewrite_sites(mod, rewrite, every=True)


def _bound_in(e: Expr) -> set[int]:
    out: set[int] = set()
    for n in post_order(e):
        if isinstance(n, Let):
            out.add(id(n.var))
        elif isinstance(n, Function):
            out.update(id(p) for p in n.params)
    return out


def _inline_effectful(mod: IRModule) -> IRModule:
    """``let %x = ref(v)`` (or ``!r``) inlined at every use of ``%x``: each use re-runs the
    effect (a fresh reference per use, or a read moved past later writes)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Let) or not isinstance(old.value if isinstance(old, Let)
                                                      else None, (RefCreate, RefRead)):
            return None
        if not _mentions(new.body, new.var):
            return None
        return _Subst(new.var, new.value, copy=True).mutate(new.body)

    return rewrite_sites(mod, rewrite, every=True)


def _match_clauses_reordered(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Match) or len(new.clauses) < 2:
            return None
        c = new.clauses
        return Match(new.data, (c[-1], *c[:-1]), new.complete)

    return rewrite_sites(mod, rewrite, every=True)


def _call_args_swapped(mod: IRModule) -> IRModule:
    """A call of a function (global or closure) with two same-typed arguments swapped."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Call) or not isinstance(old, Call) or isinstance(new.op, Op):
            return None
        a = new.args
        for i in range(len(a) - 1):
            if same_types(old.args[i].checked_type, old.args[i + 1].checked_type):
                return Call(new.op, (*a[:i], a[i + 1], a[i], *a[i + 2:]), new.attrs,
                            new.type_args)
        return None

    return rewrite_sites(mod, rewrite, every=True)


def _w(text: str, *inputs: object) -> tuple[str, tuple[object, ...]]:
    return text, inputs


_ = Clause

MUTANTS = [
    Mutant("if branches swapped", "structural", "if (c) {a} else {b} rebuilt with b and a",
           _if_swapped, _w("def @main(%c: bool) { if (%c) { 1 } else { 2 } }", np.bool_(True))),
    Mutant("if folded to then", "structural", "an if replaced by its then-branch",
           _if_folded_true,
           _w("def @main(%c: bool) { if (%c) { 1 } else { 2 } }", np.bool_(False))),
    Mutant("tuple fields reordered", "structural", "two same-typed tuple fields swapped",
           _tuple_fields_swapped, _w("def @main(%x: int32) { (%x, 2) }", np.int32(1))),
    Mutant("projection off by one", "structural", "t.i rebuilt as t.(i±1)",
           _projection_off_by_one,
           _w("def @main(%x: int32) { let %t = (%x, 2); %t.0 }", np.int32(1))),
    Mutant("ref_write dropped", "structural", "a ref_write removed (as if dead)",
           _drop_ref_write,
           _w("def @main(%x: int32) { let %r = ref(0); %r := %x; !%r }", np.int32(1))),
    Mutant("effects reordered", "structural", "a write moved after the binding that follows it",
           _reorder_writes,
           _w("def @main(%x: int32) { let %r = ref(0); %r := %x; %r := 5; !%r }",
              np.int32(1))),
    Mutant("let binder captures", "structural",
           "an inner let binder captures uses of an outer variable",
           _binder_captures,
           _w("def @main(%x: int32) { let %y = add(%x, 1); multiply(%x, %y) }", np.int32(2))),
    Mutant("effectful let inlined", "structural",
           "a ref(...)/!r binding inlined at its uses (effect duplicated or moved)",
           _inline_effectful,
           _w("def @main(%x: int32) { let %r = ref(0); %r := %x; !%r }", np.int32(1))),
    Mutant("match clauses reordered", "structural", "the last match clause moved first",
           _match_clauses_reordered,
           _w("type T { A, B, }\ndef @main(%x: T) { match (%x) { A => 1, _ => 2 } }",
              ConstructorValue("A"))),
    Mutant("call arguments swapped", "structural",
           "two same-typed arguments of a function call swapped",
           _call_args_swapped,
           _w("def @f(%a: int32, %b: int32) { subtract(%a, %b) }\n"
              "def @main(%x: int32) { @f(%x, 1) }", np.int32(3))),
]
