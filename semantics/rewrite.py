"""The program-rewriting toolkit: a scope-aware mutator and the rewrites built on it.

Every transformation (passes, AD, the partial evaluator) is written with
these few pieces (``docs/rewriting.md`` has examples):

* :class:`ScopedMutator` — one walk over an expression DAG on an explicit
  stack, with a top-down hook (``pre``, ``descend``), a bottom-up hook per
  node kind (``visit_<kind>(new, old)``, as :class:`semantics.visitor.ExprMutator`)
  and a hook at every binding site (``bind(var, site)``) that may rename the
  binder; a rename applies to every use in the binder's scope.
* :func:`substitute` — capture-avoiding substitution of expressions for
  free variables.
* :func:`fresh_copy` — the same program with every binder a new :class:`Var`
  (variables are compared by identity, so a body that is duplicated —
  inlining, AD, partial evaluation — must be copied).
* :class:`LetList` — the A-normal-form builder (TVM's ``LetList``).
* :func:`map_functions` — rewrite every global function of a module.

Scoping is the text format's (docs/architecture.md#text): a ``let`` binds its
variable in its body and, when the value is a function literal, in the value
too (recursive ``let``); a function binds its parameters in its body; a
clause binds its pattern's variables in its right-hand side.

Invariants: no Python recursion (a 20,000-deep let chain or a 20,000-node
graph costs heap, not stack); every node is rewritten once, memoized by
identity, so graph sharing survives; a node none of whose parts changed is
returned as the very same object; inputs are never mutated.

Sharing across scopes (the conservative choice): a shared node is rewritten
once, in the scope of its first occurrence, and the result is reused at every
other occurrence. That is exact when each binder object is bound at one site
(every program the parser or the generators build; TVM's well-formedness
check demands it). When a walk meets a :class:`Var` object bound at a second
site (or a variable of a :func:`substitute` mapping rebound inside the
expression), the memo is emptied on entering and on leaving that scope, so no
result computed under one binding is reused under another: such programs
lose some sharing in the output, never correctness.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    Var,
    children,
    pattern_vars,
    with_children,
)
from semantics.module import IRModule
from semantics.types import Type
from semantics.visitor import KIND, ExprMutator, MutatorHooks, walk_scoped

__all__ = ["LetList", "ScopedMutator", "copy_subgraph", "fresh_copy", "map_functions",
           "substitute"]

# Tasks on the mutator's stack besides nodes to enter (no expression is a Python tuple).
_BUILD, _BIND, _UNBIND = 0, 1, 2
_CLOSE = (_UNBIND,)
_MARK = object()     # bottom of one scope's saved bindings
_REBIND = object()   # this scope rebinds a variable: empty the memo when it ends
_MISSING = object()  # a variable that had no entry before the scope
_LEAF_TYPES = frozenset((GlobalVar, Constant, Op, Constructor))


class ScopedMutator(MutatorHooks):
    """A scope-aware, memoizing rewriter over the expression DAG (explicit stack).

    Override any of these hooks (the defaults change nothing; hooks not
    overridden cost nothing):

    * ``pre(node) -> Expr`` — top-down, before ``node``'s children are
      visited. Return ``node`` to go on, or another expression to walk
      *instead* (its children are visited and the bottom-up hooks run on it;
      ``pre`` is not called on it again). Called for variables too.
    * ``descend(node) -> bool`` — return False to keep ``node`` as it is
      (after ``pre``): its children are not walked and no rename or
      substitution applies inside it; ``visit_<kind>(node, node)`` still runs.
    * ``bind(var, site) -> Var`` — at every binding occurrence, before the
      scope is walked (``site`` is the ``Let``, ``Function`` or ``Clause``).
      Returning a different :class:`Var` renames the binder, and every use of
      ``var`` in its scope becomes the returned variable. A ``let``'s
      variable is bound after its value is walked, or before it when the value
      is a function literal (it is in scope there).
    * ``visit_<kind>(new, old) -> Expr`` (``visit_default`` for all kinds) —
      bottom-up: ``old`` is the node as met (after ``pre``), ``new`` the node
      rebuilt from rewritten children and renamed binders (``old`` itself if
      nothing changed); the result replaces the node at every occurrence. For
      a variable, ``new`` is what the use is renamed (or substituted) to.

    A rebuilt node keeps its span and drops its ``checked_type`` (as
    :func:`semantics.expr.with_children` does); ``pre`` and the bottom-up hooks
    run once per node, not once per occurrence (variables excepted: every use
    is visited).

    ``mutate(root)`` returns the rewritten expression. Memoization, sharing and
    the treatment of a node shared across scopes are described in the module
    docstring. A mutator instance may be reused; each ``mutate`` starts afresh.
    """

    # --- hooks --------------------------------------------------------------------------------
    def pre(self, node: Expr) -> Expr:
        """Top-down: the expression to walk in place of ``node`` (default: ``node``)."""
        return node

    def descend(self, node: Expr) -> bool:
        """Whether to walk inside ``node`` (default: True); False keeps it as it is."""
        return True

    def bind(self, var: Var, site: Expr | Clause) -> Var:
        """The binder to use for ``var`` at ``site`` (default: ``var``, no rename)."""
        return var

    # --- driver -------------------------------------------------------------------------------
    def mutate(self, root: Expr) -> Expr:
        """``root`` rewritten by the hooks (``root`` itself when nothing changed).

        Args:
            root: any expression (a let chain, a function, a DAG with sharing).
        Returns:
            The rewritten expression.
        """
        return self._run(root, {})

    def _overridden(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(ScopedMutator, name)

    def _run(self, root: Expr, seed: Mapping[int, Expr]) -> Expr:
        """The walk; ``seed`` maps ``id(var)`` to what free uses of ``var`` become."""
        pre = self.pre if self._overridden("pre") else None
        descend = self.descend if self._overridden("descend") else None
        bind = self.bind if self._overridden("bind") else None
        every = self._overridden("visit_default")
        table: dict[type, Callable[[Expr, Expr], Expr] | None] = {
            cls: (getattr(self, "visit_" + name)
                  if every or self._overridden("visit_" + name) else None)
            for cls, name in KIND.items()}
        visit_var = table[Var]
        # Scope tracking is needed only when uses can change: binders may be
        # renamed, or some variables are substituted.
        scoped = bind is not None or bool(seed)
        env: dict[int, Expr] = dict(seed)
        ever_bound: set[int] = set(seed)
        saved: list[Any] = []
        memo: dict[int, Expr] = {}
        keep: list[Expr] = []  # replacements from ``pre``: their ids must stay unique
        values: list[Any] = []
        leaves = _LEAF_TYPES
        stack: list[Any] = [root]
        push = stack.append
        pop = stack.pop
        out = values.append
        take = values.pop
        while stack:
            item = pop()
            t = type(item)
            if t is tuple:
                task = item[0]
                if task == _BUILD:
                    _, orig, node = item
                    new = _rebuild(node, values, scoped)
                    hook = table[type(node)]
                    result = new if hook is None else hook(new, node)
                    memo[id(orig)] = result
                    out(result)
                elif task == _BIND:
                    out(_open_scope(item[1], bind, env, saved, ever_bound, memo))
                else:
                    while True:
                        entry = saved.pop()
                        if entry is _MARK:
                            break
                        if entry is _REBIND:
                            memo.clear()
                            continue
                        k, prev = entry
                        if prev is _MISSING:
                            del env[k]
                        else:
                            env[k] = prev
                continue
            if t is not Var:
                done = memo.get(id(item))
                if done is not None:
                    out(done)
                    continue
            node = item
            if pre is not None:
                node = pre(item)
                if node is not item:
                    keep.append(node)
                    t = type(node)
            if t is Var:
                new = env.get(id(node), node) if scoped else node
                out(new if visit_var is None else visit_var(new, node))
                continue
            if t in leaves or (descend is not None and not descend(node)):
                hook = table[t]
                result = node if hook is None else hook(node, node)
                memo[id(item)] = result
                out(result)
                continue
            push((_BUILD, item, node))
            if t is Let:
                if scoped:
                    push(_CLOSE)
                    push(node.body)
                    if type(node.value) is Function:
                        push(node.value)
                        push((_BIND, node))
                    else:
                        push((_BIND, node))
                        push(node.value)
                else:
                    push(node.body)
                    push(node.value)
            elif t is Function:
                if scoped:
                    push(_CLOSE)
                    push(node.body)
                    push((_BIND, node))
                else:
                    push(node.body)
            elif t is Match:
                for clause in reversed(node.clauses):
                    if scoped:
                        push(_CLOSE)
                        push(clause.rhs)
                        push((_BIND, clause))
                    else:
                        push(clause.rhs)
                push(node.data)
            else:
                stack.extend(reversed(children(node)))
        return take()


def _open_scope(site: Any, bind: Callable[[Var, Any], Var] | None, env: dict[int, Expr],
                saved: list[Any], ever_bound: set[int], memo: dict[int, Expr]) -> Any:
    """Bind the variables of ``site``; return its new binder(s): a Var, params, a pattern."""
    t = type(site)
    if t is Let:
        old: tuple[Var, ...] | list[Var] = (site.var,)
    elif t is Function:
        old = site.params
    else:
        old = pattern_vars(site.lhs)
    saved.append(_MARK)
    new: list[Var] = []
    changed = False
    for v in old:
        nv = v if bind is None else bind(v, site)
        k = id(v)
        if k in ever_bound:
            memo.clear()
            saved.append(_REBIND)
        else:
            ever_bound.add(k)
        if nv is not v or k in env:
            saved.append((k, env.get(k, _MISSING)))
            env[k] = nv
            changed = changed or nv is not v
        new.append(nv)
    if t is Let:
        return new[0]
    if t is Function:
        return tuple(new) if changed else site.params
    return rename_pattern(site.lhs, {id(a): b for a, b in zip(old, new)}) if changed else site.lhs


def _rebuild(node: Any, values: list[Any], scoped: bool) -> Expr:
    """``node`` rebuilt from the results on top of ``values`` (popped), the same object if equal."""
    t = type(node)
    if t is Let:
        body = values.pop()
        if scoped:
            if type(node.value) is Function:
                value = values.pop()
                var = values.pop()
            else:
                var = values.pop()
                value = values.pop()
        else:
            var = node.var
            value = values.pop()
        if var is node.var and value is node.value and body is node.body:
            return node
        return Let(var, value, body, span=node.span)
    if t is Function:
        body = values.pop()
        params = values.pop() if scoped else node.params
        if params is node.params and body is node.body:
            return node
        return Function(params, body, node.ret_type, node.type_params, node.attrs,
                        span=node.span)
    if t is Match:
        n = len(node.clauses)
        clauses = []
        changed = False
        parts = values[len(values) - (2 * n if scoped else n):]
        del values[len(values) - len(parts):]
        data = values.pop()
        for i, clause in enumerate(node.clauses):
            if scoped:
                lhs, rhs = parts[2 * i], parts[2 * i + 1]
            else:
                lhs, rhs = clause.lhs, parts[i]
            if lhs is clause.lhs and rhs is clause.rhs:
                clauses.append(clause)
            else:
                changed = True
                clauses.append(Clause(lhs, rhs, span=clause.span))
        if not changed and data is node.data:
            return node
        return Match(data, tuple(clauses), node.complete, span=node.span)
    if t is Call:
        n = len(node.args) + 1
        kids = values[len(values) - n:]
        del values[len(values) - n:]
        op = kids[0]
        args = node.args
        if op is node.op and all(a is b for a, b in zip(args, kids[1:])):
            return node
        return Call(op, tuple(kids[1:]), node.attrs, node.type_args, span=node.span)
    n = len(children(node))
    rest = tuple(values[len(values) - n:])
    del values[len(values) - n:]
    return with_children(node, rest)


def rename_pattern(p: Pattern, renamed: Mapping[int, Var]) -> Pattern:
    """``p`` with each pattern variable ``v`` replaced by ``renamed[id(v)]`` (iterative)."""
    done: dict[int, Pattern] = {}
    stack: list[tuple[Pattern, bool]] = [(p, False)]
    while stack:
        q, expanded = stack.pop()
        if isinstance(q, PatternVar):
            nv = renamed.get(id(q.var), q.var)
            done[id(q)] = q if nv is q.var else PatternVar(nv, span=q.span)
        elif isinstance(q, (PatternConstructor, PatternTuple)):
            if not expanded:
                stack.append((q, True))
                stack.extend((s, False) for s in q.patterns)
                continue
            subs = tuple(done[id(s)] for s in q.patterns)
            if all(a is b for a, b in zip(subs, q.patterns)):
                done[id(q)] = q
            elif isinstance(q, PatternConstructor):
                done[id(q)] = PatternConstructor(q.constructor, subs, span=q.span)
            else:
                done[id(q)] = PatternTuple(subs, span=q.span)
        else:
            done[id(q)] = q
    return done[id(p)]


# --- substitution and copying -----------------------------------------------------------------

def _fresh(v: Var) -> Var:
    """A new variable with ``v``'s name hint, annotation, span and checked type."""
    return Var(v.name_hint, v.type_annotation, span=v.span, checked_type=v.checked_type)


class _Freshen(ScopedMutator):
    """Renames every binder (``only is None``) or the binders in ``only`` (by id)."""

    def __init__(self, only: set[int] | None = None):
        self.only = only

    def bind(self, var: Var, site: Expr | Clause) -> Var:
        if self.only is None or id(var) in self.only:
            return _fresh(var)
        return var


_EFFECT_KINDS = (Call, RefCreate, RefRead, RefWrite)
"""Nodes that may do something when evaluated (allocate or touch a reference, or call a
function that does): :func:`fresh_copy` never shares them with the original."""


class _FreshCopy(_Freshen):
    """:func:`fresh_copy`'s walk: every binder renamed, and every call or reference node a new
    node even when nothing inside it changed. A node shared by two places of a program is
    evaluated once (graph form), so a copy that reused ``ref(c)`` would make two inlined call
    sites share one reference cell (found by the inliner's differential test)."""

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        if new is old and type(old) in _EFFECT_KINDS:
            return dataclasses.replace(old)
        return new


def substitute(expr: Expr, mapping: Mapping[Var, Expr]) -> Expr:
    """``expr`` with each free use of a variable ``v`` of ``mapping`` replaced by ``mapping[v]``.

    Capture-avoiding: a binder of ``expr`` that is itself a free variable of
    some replacement (the same :class:`Var` object; variables are compared by
    identity) is renamed to a fresh variable, together with its uses, so the
    replacement's variables keep referring to the outer bindings. A use of
    ``v`` inside the scope of a binder of that same object is not free and
    stays. Replacements are inserted as they are (not walked, and shared
    between their occurrences: a replacement that has binders is inserted as
    one shared node, so :func:`fresh_copy` it per occurrence if that matters).

    Args:
        expr: the expression to substitute into (not modified).
        mapping: variables to the expressions that replace them.
    Returns:
        The substituted expression; ``expr`` itself when no mapped variable
        occurs free in it.
    """
    if not mapping:
        return expr
    captured: set[int] = set()

    def use(v: Var, bound: bool) -> None:
        if not bound:
            captured.add(id(v))

    for replacement in mapping.values():
        walk_scoped(replacement, use)
    seed = {id(v): e for v, e in mapping.items()}
    return _Freshen(captured)._run(expr, seed)


def fresh_copy(expr: Expr) -> Expr:
    """``expr`` with every binder replaced by a new :class:`Var` (and its uses renamed).

    Let variables, function parameters and pattern variables get new objects
    with the same name hint, annotation and span (type parameters are kept).
    Free variables are untouched, sharing is preserved (a shared node is copied
    once) and nodes that contain no binder and no use of one are reused as
    they are — except calls and reference nodes, which are always new: a node
    shared between the original and the copy would be evaluated once for both.
    The result is alpha-equal to ``expr`` and shares no binder with it.

    Args:
        expr: the expression to copy (not modified).
    Returns:
        The copy (``expr`` itself if it binds nothing and calls nothing).
    """
    return _FreshCopy().mutate(expr)


# --- copying a sub-DAG over new operands ------------------------------------------------------

class _SubgraphCopy(ExprMutator):
    """Rebuilds the member nodes (by id) over what ``operand`` gives for everything else."""

    def __init__(self, whole: Expr, members: set[int], operand: Callable[[Expr], Expr]):
        self.whole = whole
        self.members = members
        self.operand = operand

    def descend(self, node: Expr) -> bool:
        return node is self.whole or id(node) in self.members

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        if id(old) in self.members:
            # always a new node (no checked_type), so no member is shared with the input
            return new if new is not old else dataclasses.replace(old, checked_type=None)
        if old is self.whole or type(old) is Op:
            return new
        out = self.operand(old)
        if id(out) in self.members:
            done = self.rewritten(out)
            if done is None:
                raise ValueError("copy_subgraph: a member is read (through its operand) "
                                 "before it is listed")
            return done
        return out


def copy_subgraph(nodes: Sequence[Expr], operand: Callable[[Expr], Expr]) -> list[Expr]:
    """Copies of ``nodes`` (a piece of a dataflow graph), each rebuilt over new operands.

    Every expression a member reads that is not itself one of ``nodes`` is replaced by
    ``operand(e)`` (called once per such expression, in the order the members read them:
    left to right, ``nodes`` in order); operators in callee position are kept. If
    ``operand(e)`` returns one of ``nodes`` (``e`` stands for a member, e.g. a variable bound
    to it), the member's copy is used: such a member must come before its readers in
    ``nodes`` (list them operands first). Sharing among the members survives; every copy is
    a new node (even when none of its operands changed) without ``checked_type``, so the
    copies share no node with the input.

    Args:
        nodes: the members, operands before their users.
        operand: the replacement of an expression read from outside the members.
    Returns:
        The copies, in the order of ``nodes``.
    """
    whole = Tuple(tuple(nodes))
    out = _SubgraphCopy(whole, {id(n) for n in nodes}, operand).mutate(whole)
    assert isinstance(out, Tuple)
    return list(out.fields)


# --- A-normal form ----------------------------------------------------------------------------

class LetList:
    """Builds a chain of ``let`` bindings, then wraps a body in it (TVM's ``LetList``).

    ``x = ll.push(value)`` records ``let %x = value`` and returns the fresh
    variable ``%x``; ``ll.get(body)`` is ``let %x1 = v1; ...; body`` with the
    bindings in push order (built iteratively: any length). Example::

        ll = LetList()
        a = ll.push(Call(Op("add"), (x, y)), "a")
        b = ll.push(Call(Op("multiply"), (a, a)), "b")
        expr = ll.get(b)   # let %a = add(%x, %y); let %b = multiply(%a, %a); %b
    """

    __slots__ = ("_bindings",)

    def __init__(self) -> None:
        self._bindings: list[tuple[Var, Expr]] = []

    def push(self, value: Expr, name_hint: str = "x", type_annotation: Type | None = None) -> Var:
        """Bind ``value`` to a new variable (named ``name_hint``) and return the variable."""
        var = Var(name_hint, type_annotation)
        self._bindings.append((var, value))
        return var

    def bind(self, var: Var, value: Expr) -> Var:
        """Bind ``value`` to the given ``var`` (which must not be bound elsewhere); return it."""
        self._bindings.append((var, value))
        return var

    def __len__(self) -> int:
        return len(self._bindings)

    def get(self, body: Expr) -> Expr:
        """``body`` under every binding pushed so far, outermost first (the list is kept)."""
        for var, value in reversed(self._bindings):
            body = Let(var, value, body)
        return body

    @staticmethod
    def with_(build: Callable[[LetList], Expr]) -> Expr:
        """``ll.get(build(ll))`` for a new list ``ll``: ``build`` pushes and returns the body."""
        ll = LetList()
        return ll.get(build(ll))


# --- modules ----------------------------------------------------------------------------------

def map_functions(mod: IRModule, f: Callable[[str, Function], Expr]) -> IRModule:
    """The module with each global function ``fn`` named ``name`` replaced by ``f(name, fn)``.

    Args:
        mod: the module (not modified; ADT definitions are kept).
        f: called once per global function, in definition order; must return
            a :class:`Function`.
    Returns:
        A module with the rewritten functions; ``mod`` itself when ``f``
        returned every function unchanged (modules are immutable).
    Raises:
        TypeError: ``f`` returned something other than a Function.
    """
    functions: dict[str, Function] = {}
    changed = False
    for name, fn in mod.functions.items():
        new = f(name, fn)
        if not isinstance(new, Function):
            raise TypeError(f"map_functions: @{name} was rewritten to a "
                            f"{type(new).__name__}, not a Function")
        changed = changed or new is not fn
        functions[name] = new
    return mod.with_functions(functions) if changed else mod

