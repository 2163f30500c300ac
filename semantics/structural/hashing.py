"""The structural hash consistent with alpha-equality: :func:`structural_hash`.

Part of :mod:`semantics.alpha` (its "Algorithm" paragraph): the walk follows
the comparison's order; bound variables hash by binding position (a counter,
De Bruijn-like), free ones by first-encounter index; every node's hash is
memoized by identity, so shared nodes are hashed once. Hashes are built from
integers only (names via CRC-32), so they are stable across processes. Types
are hashed by the same kind of post-order loop over an explicit stack, so a
20,000-deep type needs no Python stack. Shape variables do not enter the hash
at all (every symbolic dim has one key), so renaming the shape variables a
definition binds (:mod:`semantics.structural.types`) keeps the hash.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

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
    pattern_vars,
)
from semantics.module import IRModule
from semantics.structural.leaves import (
    LEAVES,
    Node,
    attrs_hash,
    pop_binding,
    relation_name,
    str_hash,
)
from semantics.structural.types import dim_key
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)

# --- hashing ----------------------------------------------------------------------------------

_H_ENTER, _H_EXIT, _H_BIND, _H_UNBIND, _H_UNBIND_T = 0, 1, 2, 3, 4
_TY_ENTER, _TY_EXIT, _TY_UNBIND = 0, 1, 2

_TAG = {cls: i + 11 for i, cls in enumerate((
    Var, GlobalVar, Op, Constructor, Constant, Call, Let, Function, Tuple, TupleGetItem, If, Match,
    RefCreate, RefRead, RefWrite, Grad, TensorType, TupleType, FuncType, RefType, TypeVar,
    GlobalTypeVar, TypeCall, IncompleteType, TypeRelation, TypeData, PatternWildcard, PatternVar,
    PatternConstructor, PatternTuple, Clause, IRModule))}


class _Hasher:
    """Hash state: binder counters (scoped), first-encounter numbering of free variables."""

    def __init__(self) -> None:
        self.counter = 0
        self.bound: dict[int, list[int]] = {}
        self.free: dict[int, int] = {}
        self.tv_bound: dict[int, list[int]] = {}
        self.tv_free: dict[int, int] = {}
        self.memo: dict[int, int] = {}
        self.var_ann: dict[int, int] = {}

    # types ----------------------------------------------------------------------------------
    def opt_type(self, t: Type | None) -> int:
        return 0 if t is None else self.type(t)

    def bind_tvs(self, tvs: tuple[TypeVar, ...]) -> None:
        for tv in tvs:
            self.counter += 1
            self.tv_bound.setdefault(id(tv), []).append(self.counter)

    def unbind_tvs(self, tvs: tuple[TypeVar, ...]) -> None:
        for tv in tvs:
            pop_binding(self.tv_bound, id(tv))

    def type(self, root: Type) -> int:
        """Hash of a type (iterative: post-order over an explicit stack, any depth)."""
        values: list[int] = []
        # (_TY_ENTER, type, None) | (_TY_EXIT, child count, head) | (_TY_UNBIND, params, None)
        stack: list[tuple[int, Any, Any]] = [(_TY_ENTER, root, None)]
        while stack:
            action, item, extra = stack.pop()
            if action == _TY_EXIT:
                if item:
                    kids = values[-item:]
                    del values[-item:]
                    values.append(hash((*extra, *kids)))
                else:
                    values.append(hash(extra))
                continue
            if action == _TY_UNBIND:
                self.unbind_tvs(item)
                continue
            self._enter_type(item, stack, values)
        return values[-1]

    def _enter_type(self, t: Any, stack: list[tuple[int, Any, Any]], values: list[int]) -> None:
        """Push the work for ``t``: its hash if it is a leaf, else an exit after its children."""
        cls = type(t)
        tag = _TAG.get(cls, 0)
        kids: tuple[Any, ...]
        if cls is TensorType:
            values.append(hash((tag, str_hash(t.dtype), *(dim_key(d) for d in t.shape))))
            return
        if cls is TypeVar:
            scope = self.tv_bound.get(id(t))
            kind = str_hash(t.kind.value)
            if scope:
                values.append(hash((tag, 1, scope[-1], kind)))
            else:
                index = self.tv_free.setdefault(id(t), len(self.tv_free))
                values.append(hash((tag, 2, index, kind)))
            return
        if cls is GlobalTypeVar:  # hashes as the TypeCall ``Name[]`` it equals
            values.append(hash((_TAG[TypeCall], str_hash(t.name))))
            return
        if cls is IncompleteType:
            values.append(tag)
            return
        if cls is TupleType:
            head: tuple[int, ...] = (tag,)
            kids = t.fields
        elif cls is TypeCall:
            head, kids = (tag, str_hash(t.func.name)), t.args
        elif cls is RefType:
            head, kids = (tag,), (t.value,)
        elif cls is FuncType:
            self.bind_tvs(t.type_params)
            stack.append((_TY_UNBIND, t.type_params, None))
            head = (tag, len(t.type_params))
            kids = (*t.arg_types, t.ret_type, *t.type_constraints)
        elif cls is TypeRelation:
            head = (tag, str_hash(relation_name(t.relation)), t.num_inputs)
            kids = t.args
        elif cls is TypeData:
            self.bind_tvs(t.type_vars)
            stack.append((_TY_UNBIND, t.type_vars, None))
            stack.append((_TY_EXIT, len(t.constructors),
                          (tag, str_hash(t.header.name), len(t.type_vars))))
            for c in reversed(t.constructors):
                stack.append((_TY_EXIT, len(c.inputs), (str_hash(c.name), c.tag)))
                for i in reversed(c.inputs):
                    stack.append((_TY_ENTER, i, None))
            return
        else:
            raise TypeError(f"structural_hash: not a type: {cls.__name__}")
        stack.append((_TY_EXIT, len(kids), head))
        for kid in reversed(kids):
            stack.append((_TY_ENTER, kid, None))

    # patterns -------------------------------------------------------------------------------
    def pattern(self, p: Pattern) -> int:
        """Hash of a pattern's shape and variable annotations (variables are binders)."""
        out: list[int] = []
        stack: list[Pattern] = [p]
        while stack:
            q = stack.pop()
            cls = type(q)
            out.append(_TAG.get(cls, 0))
            if cls is PatternVar:
                out.append(self.opt_type(q.var.type_annotation))  # type: ignore[attr-defined]
            elif cls is PatternConstructor:
                out.append(str_hash(q.constructor.name))  # type: ignore[attr-defined]
                out.append(len(q.patterns))  # type: ignore[attr-defined]
                stack.extend(reversed(q.patterns))  # type: ignore[attr-defined]
            elif cls is PatternTuple:
                out.append(len(q.patterns))  # type: ignore[attr-defined]
                stack.extend(reversed(q.patterns))  # type: ignore[attr-defined]
            elif cls is not PatternWildcard:
                raise TypeError(f"structural_hash: not a pattern: {cls.__name__}")
        return hash(tuple(out))

    # expressions ----------------------------------------------------------------------------
    def bind(self, vs: tuple[Var, ...] | list[Var]) -> None:
        for v in vs:
            self.counter += 1
            self.bound.setdefault(id(v), []).append(self.counter)

    def unbind(self, vs: tuple[Var, ...] | list[Var]) -> None:
        for v in vs:
            pop_binding(self.bound, id(v))

    def leaf(self, node: Any) -> int:
        cls = type(node)
        tag = _TAG[cls]
        if cls is Var:
            scope = self.bound.get(id(node))
            if scope:
                return hash((tag, 1, scope[-1]))
            index = self.free.get(id(node))
            if index is None:
                index = self.free[id(node)] = len(self.free)
                self.var_ann[id(node)] = self.opt_type(node.type_annotation)
            return hash((tag, 2, index, self.var_ann[id(node)]))
        if cls is GlobalVar:
            return hash((tag, str_hash(node.name_hint)))
        if cls is Op or cls is Constructor:
            return hash((tag, str_hash(node.name)))
        known = self.memo.get(id(node))
        if known is None:
            data = node.data
            # (over the array's own memory when it is contiguous: a model's weights are
            # hundreds of MB, and tobytes() would copy them)
            flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            known = hash((tag, str_hash(data.dtype.str), *data.shape, zlib.crc32(flat.data)))
            self.memo[id(node)] = known
        return known

    def expr(self, root: Expr) -> int:
        values: list[int] = []
        stack: list[tuple[int, Any, Any]] = [(_H_ENTER, root, None)]
        while stack:
            action, node, extra = stack.pop()
            if action == _H_EXIT:
                count, head = extra
                if count:
                    kids = values[-count:]
                    del values[-count:]
                else:
                    kids = []
                h = hash((*head, *kids))
                self.memo[id(node)] = h
                values.append(h)
                continue
            if action == _H_BIND:
                self.bind(node)
                continue
            if action == _H_UNBIND:
                self.unbind(node)
                continue
            if action == _H_UNBIND_T:
                self.unbind_tvs(node)
                continue
            cls = type(node)
            if cls in LEAVES:
                values.append(self.leaf(node))
                continue
            known = self.memo.get(id(node))
            if known is not None:
                values.append(known)
                continue
            self._enter(node, stack)
        return values[-1]

    def _enter(self, node: Any, stack: list[tuple[int, Any, Any]]) -> None:
        cls = type(node)
        head: tuple[Any, ...]
        tag = _TAG.get(cls)
        if tag is None:
            raise TypeError(f"structural_hash: not an expression: {cls.__name__}")
        if cls is Let:
            var = (node.var,)
            head = (tag, self.opt_type(node.var.type_annotation))
            stack.append((_H_EXIT, node, (2, head)))
            stack.append((_H_UNBIND, var, None))
            stack.append((_H_ENTER, node.body, None))
            if isinstance(node.value, Function):
                stack.append((_H_ENTER, node.value, None))
                stack.append((_H_BIND, var, None))
            else:
                stack.append((_H_BIND, var, None))
                stack.append((_H_ENTER, node.value, None))
            return
        if cls is Function:
            fn: Function = node
            self.bind_tvs(fn.type_params)
            head = (tag, len(fn.type_params), *(str_hash(tv.kind.value) for tv in fn.type_params),
                    *(self.opt_type(p.type_annotation) for p in fn.params),
                    self.opt_type(fn.ret_type), attrs_hash(fn.attrs))
            stack.append((_H_EXIT, node, (1, head)))
            stack.append((_H_UNBIND_T, fn.type_params, None))
            stack.append((_H_UNBIND, fn.params, None))
            stack.append((_H_ENTER, fn.body, None))
            stack.append((_H_BIND, fn.params, None))
            return
        if cls is Match:
            m: Match = node
            head = (tag, int(m.complete), *(self.pattern(c.lhs) for c in m.clauses))
            stack.append((_H_EXIT, node, (1 + len(m.clauses), head)))
            for clause in reversed(m.clauses):
                bound = pattern_vars(clause.lhs)
                stack.append((_H_UNBIND, bound, None))
                stack.append((_H_ENTER, clause.rhs, None))
                stack.append((_H_BIND, bound, None))
            stack.append((_H_ENTER, m.data, None))
            return
        if cls is Call:
            head = (tag, len(node.args), attrs_hash(node.attrs),
                    *(self.type(t) for t in node.type_args))
        elif cls is TupleGetItem:
            head = (tag, node.index)
        else:
            head = (tag,)
        kids = children(node)
        stack.append((_H_EXIT, node, (len(kids), head)))
        for kid in reversed(kids):
            stack.append((_H_ENTER, kid, None))

    def module(self, mod: IRModule) -> int:
        parts: list[int] = [_TAG[IRModule]]
        for name in sorted(mod.types):
            parts.append(str_hash(name))
            parts.append(self.type(mod.types[name]))
        for name in sorted(mod.functions):
            parts.append(str_hash(name))
            parts.append(self.expr(mod.functions[name]))
        return hash(tuple(parts))


def structural_hash(node: Node) -> int:
    """A hash consistent with :func:`alpha_equal`: alpha-equal nodes hash alike.

    Bound variables hash by binding position, free variables by first
    encounter, shared nodes once (linear in the DAG). Symbolic dims that are
    not constants share one hash key (they may be equal in non-obvious ways).

    Args:
        node: an expression, type, pattern, clause or module.
    Returns:
        An integer, stable across processes.
    Raises:
        TypeError: ``node`` is not a Relay node.
    """
    h = _Hasher()
    if isinstance(node, IRModule):
        return h.module(node)
    if isinstance(node, Expr):
        return h.expr(node)
    if isinstance(node, Type):
        return h.type(node)
    if isinstance(node, Pattern):
        return h.pattern(node)
    if isinstance(node, Clause):
        head = h.pattern(node.lhs)
        h.bind(pattern_vars(node.lhs))
        return hash((_TAG[Clause], head, h.expr(node.rhs)))
    raise TypeError(f"structural_hash: not a Relay node: {type(node).__name__}")
