"""Step 3 of inference: a new program whose every node carries its ``checked_type``.

After solving, each node's raw type is *resolved* (every variable and hole
replaced by what it was bound to). A type that still contains an inference
variable or a hole is ``underconstrained`` — reported at the innermost such
node, naming its rule.

The annotated program is built bottom-up over the DAG by
:class:`semantics.visitor.ExprMutator` (memoized by identity, one typed hook
per node kind): every node is rebuilt once with its new children and
``checked_type=t`` — the input is never mutated — so a node shared by several
parents (or by several functions of a module: the memo is kept across
roots) is shared in the output too. Binders (``Let.var``, ``Function.params``, pattern
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
)
from semantics.rules import Rule
from semantics.types import Type, TypeData
from semantics.visitor import ExprMutator
from typechecker import messages
from typechecker.infer import RULE_OF_NODE, Inferencer, describe_node

_CONSTANT_FIELDS = tuple(f.name for f in dataclasses.fields(Constant))


class Annotator(ExprMutator):
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
        """The annotated copy of ``root`` (each node rebuilt once, shared with earlier roots)."""
        return self.mutate(root, self.new)

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

    # The bottom-up hooks: ``new`` has the annotated children, ``old`` is the input node
    # (whose inferred type is looked up); binders are annotated through ``var``.
    def visit_var(self, new: Expr, old: Var) -> Expr:
        return self.var(old)

    def visit_constructor(self, new: Constructor, old: Constructor) -> Expr:
        return self.constructor(old)

    def visit_constant(self, new: Constant, old: Constant) -> Expr:
        out = object.__new__(Constant)
        for name in _CONSTANT_FIELDS:
            object.__setattr__(out, name, getattr(old, name))
        object.__setattr__(out, "checked_type", self.type_of_node(old))
        return out

    def visit_global_var(self, new: GlobalVar, old: GlobalVar) -> Expr:
        return dataclasses.replace(old, checked_type=self.type_of_node(old))

    def visit_op(self, new: Op, old: Op) -> Expr:
        return dataclasses.replace(old, checked_type=self.type_of_node(old))

    def visit_call(self, new: Call, old: Call) -> Expr:
        if new is old:
            new = Call(old.op, old.args, old.attrs, old.type_args, span=old.span)
        return _typed(new, self.type_of_node(old))

    def visit_let(self, new: Let, old: Let) -> Expr:
        if new is old:
            new = Let(old.var, old.value, old.body, span=old.span)
        object.__setattr__(new, "var", self.var(old.var))
        return _typed(new, self.type_of_node(old))

    def visit_function(self, new: Function, old: Function) -> Expr:
        return Function(tuple(self.var(p) for p in old.params), new.body, old.ret_type,
                        old.type_params, old.attrs, span=old.span,
                        checked_type=self.type_of_node(old))

    def visit_tuple(self, new: Tuple, old: Tuple) -> Expr:
        if new is old:
            new = Tuple(old.fields, span=old.span)
        return _typed(new, self.type_of_node(old))

    def visit_tuple_getitem(self, new: TupleGetItem, old: TupleGetItem) -> Expr:
        if new is old:
            new = TupleGetItem(old.tuple_value, old.index, span=old.span)
        return _typed(new, self.type_of_node(old))

    def visit_if(self, new: If, old: If) -> Expr:
        return If(new.cond, new.true_branch, new.false_branch, span=old.span,
                  checked_type=self.type_of_node(old))

    def visit_match(self, new: Match, old: Match) -> Expr:
        clauses = tuple(Clause(self.pattern(c.lhs), n.rhs, span=c.span)
                        for c, n in zip(old.clauses, new.clauses, strict=True))
        return Match(new.data, clauses, old.complete, span=old.span,
                     checked_type=self.type_of_node(old))

    def visit_ref_create(self, new: RefCreate, old: RefCreate) -> Expr:
        return RefCreate(new.value, span=old.span, checked_type=self.type_of_node(old))

    def visit_ref_read(self, new: RefRead, old: RefRead) -> Expr:
        return RefRead(new.ref, span=old.span, checked_type=self.type_of_node(old))

    def visit_ref_write(self, new: RefWrite, old: RefWrite) -> Expr:
        return RefWrite(new.ref, new.value, span=old.span, checked_type=self.type_of_node(old))

    def visit_grad(self, new: Grad, old: Grad) -> Expr:
        return Grad(new.func, span=old.span, checked_type=self.type_of_node(old))

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


def _typed(fresh: Expr, t: Type) -> Expr:
    """``fresh`` with ``checked_type`` ``t``: a node the mutator has just built for this walk
    (its children are the annotated ones; nothing else refers to it yet), set in place rather
    than built a second time — the common kinds (calls, lets, tuples, projections) are most
    of a program."""
    object.__setattr__(fresh, "checked_type", t)
    return fresh


def _node_text(node: Any) -> str:
    tn = type(node)
    if tn in (Var, GlobalVar, Op, Constructor):
        return describe_node(node)
    names = {Call: "this call", Let: "this let", Function: "this function", Tuple: "this tuple",
             TupleGetItem: "this projection", If: "this if", Match: "this match",
             RefCreate: "this reference", RefRead: "this ref_read", RefWrite: "this ref_write",
             Grad: "this grad", Constant: "this constant"}
    return names.get(tn, "this expression")
