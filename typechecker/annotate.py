"""Step 3 of inference: a new program whose every node carries its ``checked_type``.

After solving, each node's raw type is *resolved* (every variable and hole
replaced by what it was bound to). A type that still contains an inference
variable or a hole is ``underconstrained`` — reported at the innermost such
node, naming its rule.

The annotated program is built bottom-up over the DAG
(:func:`semantics.visitor.post_order`, memoized by identity): every node is
rebuilt once with its new children and ``checked_type=t`` (the constructor
called directly: ``dataclasses.replace`` does the same but slower) — the
input is never mutated — so a node shared by several parents is shared in
the output too. Binders (``Let.var``, ``Function.params``, pattern
variables) and their uses are the same ``Var`` object, so they map to the
same annotated ``Var``. Constructors are annotated once per object; the
module's ``TypeData`` definitions are rebuilt with the annotated
constructors so that identities stay consistent. Constants are rebuilt
without copying their (read-only) data.

:class:`Annotator` also has a verification-only mode
(:meth:`Annotator.verify`) used by ``check``: it resolves every inferred
type without building nodes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from semantics.errors import InternalError, RelayTypeError
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.rules import Rule
from semantics.types import Type, TypeData
from semantics.visitor import post_order
from typechecker import messages
from typechecker.infer import RULE_OF_NODE, Inferencer, describe_node

_CONSTANT_FIELDS = tuple(f.name for f in dataclasses.fields(Constant))


class Annotator:
    """Resolves inferred types and rebuilds nodes with them (see the module docstring)."""

    def __init__(self, inf: Inferencer):
        self.inf = inf
        self.store = inf.store
        self.new: dict[int, Any] = {}
        self._resolved: dict[int, Type] = {}

    # --- types --------------------------------------------------------------------------------
    def final(self, raw: Type, node: Any) -> Type:
        """The resolved type of ``node``; underconstrained error if something is still unknown."""
        key = id(raw)
        t = self._resolved.get(key)
        if t is not None:
            return t
        store = self.store
        t = store.resolve(raw)
        if not store.is_ground(t):
            rule = RULE_OF_NODE.get(type(node), Rule.TYPE_VAR)
            what = (f"cannot infer the type of {_node_text(node)}: only "
                    f"{messages.show(store.for_display(t))} is known")
            raise RelayTypeError(messages.underconstrained(rule, what),
                                 getattr(node, "span", None) or self.inf.default_span, code=rule)
        self._resolved[key] = t
        return t

    def type_of_node(self, node: Any) -> Type:
        inf = self.inf
        if type(node) is Var:
            raw = inf.var_types.get(node)
        elif type(node) is Op:
            raw = inf.op_node_types.get(id(node)) or inf.memo.get(id(node))
            if raw is None:
                raw = inf._op_scheme(node)[0]
        else:
            raw = inf.memo.get(id(node))
        if raw is None:
            raise InternalError(f"no type was inferred for {type(node).__name__} node")
        return self.final(raw, node)

    def verify(self) -> None:
        """Check that every inferred node type and variable type is fully resolved."""
        inf = self.inf
        for node in inf.nodes:
            self.final(inf.memo[id(node)], node)
        for var, t in inf.var_types.items():
            self.final(t, var)

    # --- nodes --------------------------------------------------------------------------------
    def expr(self, root: Expr) -> Expr:
        """The annotated copy of ``root`` (each node rebuilt once)."""
        new = self.new
        for node in post_order(root):
            if id(node) not in new:
                new[id(node)] = self._rebuild(node)
        return new[id(root)]

    def var(self, v: Var) -> Var:
        out = self.new.get(id(v))
        if out is None:
            out = dataclasses.replace(v, checked_type=self.type_of_node(v))
            self.new[id(v)] = out
        return out

    def constructor(self, c: Constructor) -> Constructor:
        out = self.new.get(id(c))
        if out is None:
            info = self.inf.kinder.constructor(c.name)
            if info is None:
                raise InternalError(f"constructor {c.name} vanished")
            out = dataclasses.replace(c, checked_type=self.final(info.scheme, c))
            self.new[id(c)] = out
        return out

    def type_data(self, td: TypeData) -> TypeData:
        ctors = tuple(self.constructor(c) for c in td.constructors)
        if all(a is b for a, b in zip(ctors, td.constructors, strict=False)):
            return td
        return dataclasses.replace(td, constructors=ctors)

    def _rebuild(self, node: Any) -> Any:
        tn = type(node)
        if tn is Var:
            return self.var(node)
        if tn is Constructor:
            return self.constructor(node)
        t = self.type_of_node(node)
        if tn is Constant:
            out = object.__new__(Constant)
            for name in _CONSTANT_FIELDS:
                object.__setattr__(out, name, getattr(node, name))
            object.__setattr__(out, "checked_type", t)
            return out
        if tn is GlobalVar or tn is Op:
            return dataclasses.replace(node, checked_type=t)
        m = self.new
        kids = [m[id(k)] for k in children(node)]
        sp = node.span
        if tn is Call:
            return Call(kids[0], tuple(kids[1:]), node.attrs, node.type_args, span=sp,
                        checked_type=t)
        if tn is Let:
            return Let(self.var(node.var), kids[0], kids[1], span=sp, checked_type=t)
        if tn is Function:
            params = tuple(self.var(p) for p in node.params)
            return Function(params, kids[0], node.ret_type, node.type_params, node.attrs, span=sp,
                            checked_type=t)
        if tn is Tuple:
            return Tuple(tuple(kids), span=sp, checked_type=t)
        if tn is TupleGetItem:
            return TupleGetItem(kids[0], node.index, span=sp, checked_type=t)
        if tn is If:
            return If(kids[0], kids[1], kids[2], span=sp, checked_type=t)
        if tn is Match:
            clauses = tuple(Clause(self.pattern(c.lhs), rhs, span=c.span)
                            for c, rhs in zip(node.clauses, kids[1:], strict=False))
            return Match(kids[0], clauses, node.complete, span=sp, checked_type=t)
        if tn is RefCreate:
            return RefCreate(kids[0], span=sp, checked_type=t)
        if tn is RefRead:
            return RefRead(kids[0], span=sp, checked_type=t)
        if tn is RefWrite:
            return RefWrite(kids[0], kids[1], span=sp, checked_type=t)
        if tn is Grad:
            return Grad(kids[0], span=sp, checked_type=t)
        raise InternalError(f"cannot annotate {tn.__name__}")

    def pattern(self, p: Pattern) -> Pattern:
        """The pattern with annotated variables and constructors (iterative post-order)."""
        done: dict[int, Pattern] = {}
        stack: list[tuple[Pattern, bool]] = [(p, False)]
        while stack:
            q, expanded = stack.pop()
            if isinstance(q, PatternWildcard):
                done[id(q)] = q
            elif isinstance(q, PatternVar):
                done[id(q)] = dataclasses.replace(q, var=self.var(q.var))
            elif not isinstance(q, (PatternConstructor, PatternTuple)):
                raise TypeError(f"not a pattern: {type(q).__name__}")
            elif not expanded:
                stack.append((q, True))
                stack.extend((s, False) for s in q.patterns)
            else:
                subs = tuple(done[id(s)] for s in q.patterns)
                if isinstance(q, PatternConstructor):
                    done[id(q)] = dataclasses.replace(
                        q, constructor=self.constructor(q.constructor), patterns=subs)
                else:
                    done[id(q)] = dataclasses.replace(q, patterns=subs)
        return done[id(p)]


def _node_text(node: Any) -> str:
    tn = type(node)
    if tn in (Var, GlobalVar, Op, Constructor):
        return describe_node(node)
    names = {Call: "this call", Let: "this let", Function: "this function", Tuple: "this tuple",
             TupleGetItem: "this projection", If: "this if", Match: "this match",
             RefCreate: "this reference", RefRead: "this ref_read", RefWrite: "this ref_write",
             Grad: "this grad", Constant: "this constant"}
    return names.get(tn, "this expression")
