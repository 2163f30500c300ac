"""Iterative traversals of types: :class:`TypeVisitor` and :class:`TypeMutator`.

Types are user-controlled data (``ref(ref(...))`` a thousand deep has a type
a thousand deep), so, like expressions (HOUSE_STYLE habit 4), they are walked
on an explicit stack, never by Python recursion. Every type walk of the
checker and of :mod:`semantics.analysis` is a subclass of one of these two
classes.

* :class:`TypeVisitor` — a pre-order, left-to-right walk that
  :meth:`~TypeVisitor.redirect`\\ s each node, then calls
  :meth:`TypeVisitor.enter` on each node (returning False skips the node's
  children) and :meth:`TypeVisitor.leave` after its children.
* :class:`TypeMutator` — a post-order rebuild: each node is first
  :meth:`~TypeMutator.redirect`\\ ed (e.g. to its union-find representative),
  then offered to :meth:`~TypeMutator.enter`, which may answer it outright;
  otherwise its children are mutated, the node is rebuilt (the *same object*
  when no child changed) and handed to :meth:`~TypeMutator.leave`. Dimensions
  of tensor shapes go through :meth:`~TypeMutator.mutate_dim`.

Children, in order: a tuple's fields; a function type's argument types,
result type and relation constraints; a reference's value; a type call's
arguments (its ``GlobalTypeVar`` head is kept); a relation's arguments.
``TypeData`` is a leaf unless :attr:`TypeVisitor.visit_type_data` is set, in
which case its constructors' input types are its children. ``TensorType``,
``TypeVar``, ``GlobalTypeVar`` and ``IncompleteType`` are leaves.

**Binders.** ``FuncType.type_params`` (and ``TypeData.type_vars`` when type
data is walked) bind type variables in the node's children: both classes
call :meth:`bind` before the children and :meth:`unbind` after them, and
expose :attr:`bound` (a multiset, by identity, of the parameters in scope).

**Sharing.** Both walks are memoized by identity *per binder scope*: a node
shared by several parents is walked once within the same scope, so the cost
is linear in the size of the type DAG; a node reached under a different set
of binders is walked again (its meaning may differ there).
"""

from __future__ import annotations

from typing import Any

from semantics.shapes import Dim
from semantics.types import (
    FuncType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)

__all__ = ["TypeMutator", "TypeVisitor", "type_kids"]


def type_kids(t: Type, with_type_data: bool = False) -> tuple[Type, ...]:
    """The children of ``t`` in traversal order (see the module docstring).

    Args:
        t: any type.
        with_type_data: whether a ``TypeData``'s constructor fields are its children.
    Returns:
        The child types, left to right (empty for a leaf).
    """
    tt = type(t)
    if tt is TupleType:
        return t.fields  # type: ignore[attr-defined]
    if tt is FuncType:
        ft: FuncType = t  # type: ignore[assignment]
        return (*ft.arg_types, ft.ret_type, *ft.type_constraints)
    if tt is RefType:
        return (t.value,)  # type: ignore[attr-defined]
    if tt is TypeCall or tt is TypeRelation:
        return t.args  # type: ignore[attr-defined]
    if tt is TypeData and with_type_data:
        return tuple(inp for c in t.constructors for inp in c.inputs)  # type: ignore[attr-defined]
    return ()


def _binders(t: Type, with_type_data: bool) -> tuple[TypeVar, ...]:
    tt = type(t)
    if tt is FuncType:
        return t.type_params  # type: ignore[attr-defined]
    if tt is TypeData and with_type_data:
        return t.type_vars  # type: ignore[attr-defined]
    return ()


class _Scoped:
    """The binder bookkeeping shared by both walks."""

    visit_type_data = False

    def __init__(self) -> None:
        self.bound: dict[TypeVar, int] = {}
        self._scope = 0
        self._scopes: list[int] = []
        self._next_scope = 1

    def is_bound(self, v: TypeVar) -> bool:
        """``v`` is bound by an enclosing ``fn[...]`` (or ADT) parameter list."""
        return v in self.bound

    def bind(self, params: tuple[TypeVar, ...]) -> None:
        """Entering the scope of ``params`` (override to extend; call the base)."""
        for p in params:
            self.bound[p] = self.bound.get(p, 0) + 1
        self._scopes.append(self._scope)
        self._scope = self._next_scope
        self._next_scope += 1

    def unbind(self, params: tuple[TypeVar, ...]) -> None:
        """Leaving the scope of ``params`` (override to extend; call the base)."""
        for p in params:
            n = self.bound[p] - 1
            if n:
                self.bound[p] = n
            else:
                del self.bound[p]
        self._scope = self._scopes.pop()


class TypeVisitor(_Scoped):
    """A read-only, iterative, pre-order walk (see the module docstring)."""

    def redirect(self, t: Type) -> Type:
        """The node to visit in place of ``t`` (default ``t``; e.g. a union-find root)."""
        return t

    def enter(self, t: Type) -> bool:
        """Called before ``t``'s children; return False not to visit them."""
        return True

    def leave(self, t: Type) -> None:
        """Called after ``t``'s children."""

    def visit(self, t: Type | None) -> None:
        """Walk ``t`` (``None`` is nothing to walk).

        Args:
            t: the type to walk.
        Raises:
            Whatever the hooks raise (the walk itself raises nothing).
        """
        if t is None:
            return
        seen: set[tuple[int, int]] = set()
        with_data = self.visit_type_data
        # frames: (node, False) = enter, (node, True) = leave
        stack: list[tuple[Type, bool]] = [(t, False)]
        while stack:
            u, done = stack.pop()
            if done:
                params = _binders(u, with_data)
                if params:
                    self.unbind(params)
                self.leave(u)
                continue
            key = (id(u), self._scope)
            if key in seen:
                continue
            seen.add(key)
            r = self.redirect(u)
            if r is not u:
                u = r
                key = (id(u), self._scope)
                if key in seen:
                    continue
                seen.add(key)
            if not self.enter(u):
                continue
            kids = type_kids(u, with_data)
            params = _binders(u, with_data)
            stack.append((u, True))
            if params:
                self.bind(params)
            for k in reversed(kids):
                stack.append((k, False))


class TypeMutator(_Scoped):
    """An iterative, post-order rebuild (see the module docstring).

    The result of mutating a node is memoized by identity within a binder
    scope; nodes whose children did not change are returned as they are.
    """

    def redirect(self, t: Type) -> Type:
        """The node to mutate in place of ``t`` (default ``t``; e.g. a union-find root)."""
        return t

    def enter(self, t: Type) -> Type | None:
        """An answer for ``t`` without visiting its children, or None to descend."""
        return None

    def leave(self, old: Type, new: Type) -> Type:
        """The final result for ``old``, whose children were rebuilt into ``new``."""
        return new

    def mutate_dim(self, d: Dim) -> Dim:
        """The replacement of one dimension of a tensor shape (default: unchanged)."""
        return d

    def mutate(self, t: Type) -> Type:
        """``t`` rebuilt (see the class docstring).

        Args:
            t: the type to rebuild.
        Returns:
            The rebuilt type: ``t`` itself when no hook changed anything in it.
        Raises:
            TypeError: a hook replaced a relation constraint by a non-relation.
        """
        memo: dict[tuple[int, int], Type] = {}
        with_data = self.visit_type_data
        results: list[Type] = []
        # frames: (original, node, False) = enter, (original, node, True) = rebuild
        stack: list[tuple[Type, Type, bool]] = [(t, t, False)]
        while stack:
            orig, u, expanded = stack.pop()
            if expanded:
                params = _binders(u, with_data)
                n = len(type_kids(u, with_data))
                kids = results[len(results) - n:] if n else []
                if n:
                    del results[len(results) - n:]
                if params:
                    self.unbind(params)
                out = self.leave(u, self._rebuild(u, kids))
                memo[(id(orig), self._scope)] = out
                memo[(id(u), self._scope)] = out
                results.append(out)
                continue
            key = (id(orig), self._scope)
            hit = memo.get(key)
            if hit is not None:
                results.append(hit)
                continue
            u = self.redirect(orig)
            if u is not orig:
                hit = memo.get((id(u), self._scope))
                if hit is not None:
                    memo[key] = hit
                    results.append(hit)
                    continue
            answer = self.enter(u)
            if answer is not None:
                memo[key] = answer
                results.append(answer)
                continue
            if type(u) is TensorType:
                out = self.leave(u, self._tensor(u))
                memo[key] = out
                results.append(out)
                continue
            kids_in = type_kids(u, with_data)
            if not kids_in:
                out = self.leave(u, u)
                memo[key] = out
                results.append(out)
                continue
            params = _binders(u, with_data)
            stack.append((orig, u, True))
            if params:
                self.bind(params)
            for k in reversed(kids_in):
                stack.append((k, k, False))
        assert len(results) == 1
        return results[0]

    def _tensor(self, t: TensorType) -> Type:
        shape = tuple(self.mutate_dim(d) for d in t.shape)
        if all(a is b for a, b in zip(shape, t.shape, strict=True)):
            return t
        return TensorType(shape, t.dtype, span=t.span)

    def _rebuild(self, t: Type, kids: list[Type]) -> Type:
        """``t`` with children ``kids`` (``t`` itself when every child is unchanged)."""
        if all(a is b for a, b in zip(kids, type_kids(t, self.visit_type_data), strict=True)):
            return t
        tt = type(t)
        if tt is TupleType:
            return TupleType(tuple(kids), span=t.span)
        if tt is FuncType:
            ft: FuncType = t  # type: ignore[assignment]
            n = len(ft.arg_types)
            cons = tuple(_as_relation(c) for c in kids[n + 1:])
            return FuncType(tuple(kids[:n]), kids[n], ft.type_params, cons, span=t.span)
        if tt is RefType:
            return RefType(kids[0], span=t.span)
        if tt is TypeCall:
            return TypeCall(t.func, tuple(kids), span=t.span)  # type: ignore[attr-defined]
        if tt is TypeRelation:
            r: TypeRelation = t  # type: ignore[assignment]
            return TypeRelation(r.relation, tuple(kids), r.num_inputs, r.attrs, span=t.span)
        if tt is TypeData:
            return _rebuild_type_data(t, kids)  # type: ignore[arg-type]
        raise TypeError(f"TypeMutator: cannot rebuild {tt.__name__}")


def _as_relation(t: Type) -> TypeRelation:
    if not isinstance(t, TypeRelation):
        raise TypeError("a relation constraint was rewritten into a non-relation type")
    return t


def _rebuild_type_data(td: TypeData, kids: list[Type]) -> TypeData:
    from semantics.expr import Constructor

    ctors: list[Any] = []
    i = 0
    for c in td.constructors:
        n = len(c.inputs)
        new_inputs = tuple(kids[i:i + n])
        i += n
        if all(a is b for a, b in zip(new_inputs, c.inputs, strict=True)):
            ctors.append(c)
        else:
            ctors.append(Constructor(c.name, new_inputs, c.belong_to, c.tag, span=c.span))
    return TypeData(td.header, td.type_vars, tuple(ctors), span=td.span)
