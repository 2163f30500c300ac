"""The one traversal base every phase builds on (HOUSE_STYLE habit 5).

What it offers:

* :func:`post_order` / :func:`pre_order` — every node of a DAG once
  (children before parents, or parents before children), optionally pruned;
* :func:`count_uses` and :func:`shared` — how many edges reach each node,
  i.e. the graph sharing (the interpreter's Semantics-Shared set is built on
  :func:`shared`);
* :func:`binders`, :func:`rebound_vars` and :func:`enclosing_functions` — the
  variables a node binds, the variables bound at more than one site, and the
  innermost function literal around each node;
* :class:`ExprVisitor` / :class:`ExprMutator` — ``visit_<kind>`` hooks over
  :func:`post_order`, dispatched through a ``type(node) → method`` table;
* :func:`walk_scoped` — the scope-aware walk: first-occurrence order, with a
  callback at every binding site and every variable use telling whether the
  use is bound (``semantics.analysis`` computes free, bound and all
  variables with it);
* :func:`run_recursive` — the driver for generator-based recursion;
* the scope-aware *mutator* (binders renamed, uses follow) is
  :class:`semantics.rewrite.ScopedMutator`, built on the same discipline.

Design (decided once, here):

* **Iterative, never recursive.** Traversals keep their own stack, so a
  20,000-deep let chain or a 20,000-operator graph never reaches Python's
  recursion limit; a let spine is just a run of entries on that stack.
* **Memoized by identity.** A node reachable along several paths (graph
  sharing) is visited once, so traversals are linear in the size of the DAG,
  not of its unfolding into a tree. (Variables are leaves: ``walk_scoped``
  reports every occurrence.)
* **Mutators return the same node when nothing changed**
  (:func:`semantics.expr.with_children`), so sharing and unchanged
  subprograms survive a pass.
* **Scoping is the text format's**: a ``let`` binds in its body, and in its
  value when that is a function literal; a function binds its parameters in
  its body; a clause binds its pattern variables in its right-hand side.
* **Recursion that needs results of premises** (the parser, the printer,
  pattern typing, value conversion) is written as generators: a case
  ``yield``s a sub-generator for each premise and receives its result;
  :func:`run_recursive` drives them on an explicit stack. The interpreter
  (:mod:`interpreter.machine`) and the type checker's inference
  (``typechecker.infer``) drive their rule cases the same way with their own
  loops, which add tail premises, fuel and depth accounting, or answer
  leaves and already inferred nodes without a generator.

``post_order`` and the visitors walk expression children as
:func:`semantics.expr.children` defines them (binders and patterns are not
children); ``walk_scoped`` also reports binders.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from types import GeneratorType
from typing import Any

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
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
    pattern_vars,
    with_children,
)

Recursive = Generator[Any, Any, Any]


def run_recursive(root: Any) -> Any:
    """Drive a generator-based recursion on an explicit stack.

    A generator ``yield``s another generator to "call" it; the driver runs
    that one to completion and ``send``s its return value back. A case may
    also ``yield`` a ready value (anything but a generator: a leaf answered
    without a premise), which is sent straight back; a ``root`` that is not a
    generator is its own result. Exceptions raised by an inner generator
    propagate into the outer one (``throw``), so ``try``/``except`` in a case
    works as in ordinary recursion.
    """
    if type(root) is not GeneratorType:
        return root
    stack: list[Recursive] = [root]
    value: Any = None
    error: BaseException | None = None
    while stack:
        top = stack[-1]
        try:
            if error is not None:
                err, error = error, None
                request = top.throw(err)
            else:
                request = top.send(value)
        except StopIteration as stop:
            stack.pop()
            value = stop.value
            continue
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's frame
            stack.pop()
            if not stack:
                raise
            error = exc
            continue
        if type(request) is GeneratorType:
            stack.append(request)
            value = None
        else:
            value = request
    return value


def post_order(root: Expr, descend: Callable[[Expr], bool] | None = None) -> list[Expr]:
    """Every node reachable from ``root`` once, children before parents.

    ``descend(node)`` (optional) returns False to treat ``node`` as a leaf
    (its children are neither listed nor visited).
    """
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if descend is None or descend(node):
            kids = children(node)
            for kid in reversed(kids):
                if id(kid) not in seen:
                    stack.append((kid, False))
    return order


KIND = {
    Var: "var", GlobalVar: "global_var", Constant: "constant", Op: "op",
    Constructor: "constructor", Call: "call", Let: "let", Function: "function", Tuple: "tuple",
    TupleGetItem: "tuple_getitem", If: "if", Match: "match", RefCreate: "ref_create",
    RefRead: "ref_read", RefWrite: "ref_write", Grad: "grad",
}


def kind_of(node: Expr) -> str:
    """The method suffix for ``node``'s class (``"tuple_getitem"`` for TupleGetItem)."""
    return KIND[type(node)]


def kind_cases(obj: object, prefix: str) -> dict[type, Callable[..., Any]]:
    """``{node class: obj.<prefix><kind>}`` for every node kind ``obj`` has such a method for.

    The typed per-kind dispatch of a recursion that is not a bottom-up rewrite (TVM's
    ``ExprFunctor``): a translation written as generator premises for :func:`run_recursive`
    declares one case per kind with its own node type (``def value_call(self, e: Call, ...)``,
    so mypy narrows) and looks the case up by ``type(node)`` in this table.
    """
    out: dict[type, Callable[..., Any]] = {}
    for cls, name in KIND.items():
        case = getattr(obj, prefix + name, None)
        if case is not None:
            out[cls] = case
    return out


class ExprVisitor:
    """Visit every node once, post-order: override ``visit_<kind>(node)``.

    ``descend(node)`` may be overridden to prune (e.g. skip function bodies).
    """

    def descend(self, node: Expr) -> bool:
        return True

    def visit(self, root: Expr) -> None:
        table: dict[type, Callable[[Expr], None]] = {
            cls: getattr(self, "visit_" + name) for cls, name in KIND.items()}
        for node in post_order(root, self.descend):
            table[type(node)](node)

    def visit_default(self, node: Expr) -> None:
        """Called by every ``visit_<kind>`` not overridden."""

    def visit_var(self, node: Var) -> None: self.visit_default(node)
    def visit_global_var(self, node: GlobalVar) -> None: self.visit_default(node)
    def visit_constant(self, node: Constant) -> None: self.visit_default(node)
    def visit_op(self, node: Op) -> None: self.visit_default(node)
    def visit_constructor(self, node: Constructor) -> None: self.visit_default(node)
    def visit_call(self, node: Call) -> None: self.visit_default(node)
    def visit_let(self, node: Let) -> None: self.visit_default(node)
    def visit_function(self, node: Function) -> None: self.visit_default(node)
    def visit_tuple(self, node: Tuple) -> None: self.visit_default(node)
    def visit_tuple_getitem(self, node: TupleGetItem) -> None: self.visit_default(node)
    def visit_if(self, node: If) -> None: self.visit_default(node)
    def visit_match(self, node: Match) -> None: self.visit_default(node)
    def visit_ref_create(self, node: RefCreate) -> None: self.visit_default(node)
    def visit_ref_read(self, node: RefRead) -> None: self.visit_default(node)
    def visit_ref_write(self, node: RefWrite) -> None: self.visit_default(node)
    def visit_grad(self, node: Grad) -> None: self.visit_default(node)


class MutatorHooks:
    """The bottom-up hooks every mutator offers: ``visit_<kind>(new, old)`` per node kind.

    ``new`` is the node rebuilt from its rewritten children (the same object when none
    changed), ``old`` the node as it was; the result replaces the node everywhere it is
    shared. Every default calls :meth:`visit_default`, which returns ``new``.

    The hooks are typed per kind (``visit_call(self, new: Call, old: Call)``), so an
    override reads the node's fields without casts: ``new`` has the kind of ``old``
    (a rebuilt node keeps its class), except for a variable, whose ``new`` is what
    the use became (a substitution may replace it by any expression).
    """

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        """Called by every ``visit_<kind>`` not overridden."""
        return new

    def visit_var(self, new: Expr, old: Var) -> Expr:
        return self.visit_default(new, old)

    def visit_global_var(self, new: GlobalVar, old: GlobalVar) -> Expr:
        return self.visit_default(new, old)

    def visit_constant(self, new: Constant, old: Constant) -> Expr:
        return self.visit_default(new, old)

    def visit_op(self, new: Op, old: Op) -> Expr:
        return self.visit_default(new, old)

    def visit_constructor(self, new: Constructor, old: Constructor) -> Expr:
        return self.visit_default(new, old)

    def visit_call(self, new: Call, old: Call) -> Expr:
        return self.visit_default(new, old)

    def visit_let(self, new: Let, old: Let) -> Expr:
        return self.visit_default(new, old)

    def visit_function(self, new: Function, old: Function) -> Expr:
        return self.visit_default(new, old)

    def visit_tuple(self, new: Tuple, old: Tuple) -> Expr:
        return self.visit_default(new, old)

    def visit_tuple_getitem(self, new: TupleGetItem, old: TupleGetItem) -> Expr:
        return self.visit_default(new, old)

    def visit_if(self, new: If, old: If) -> Expr:
        return self.visit_default(new, old)

    def visit_match(self, new: Match, old: Match) -> Expr:
        return self.visit_default(new, old)

    def visit_ref_create(self, new: RefCreate, old: RefCreate) -> Expr:
        return self.visit_default(new, old)

    def visit_ref_read(self, new: RefRead, old: RefRead) -> Expr:
        return self.visit_default(new, old)

    def visit_ref_write(self, new: RefWrite, old: RefWrite) -> Expr:
        return self.visit_default(new, old)

    def visit_grad(self, new: Grad, old: Grad) -> Expr:
        return self.visit_default(new, old)


class ExprMutator(MutatorHooks):
    """Bottom-up rewriting over the DAG.

    For every node, post-order, the mutator first rebuilds it from its
    already-rewritten children (``with_children``: the same object when no
    child changed), then calls ``visit_<kind>(new_node, old_node)``, whose
    result replaces the node everywhere it is shared. The defaults return
    ``new_node``. Binders (``Let.var``, ``Function.params``, pattern
    variables) are not rewritten: a pass that renames binders, or needs to
    know what is in scope, uses :class:`semantics.rewrite.ScopedMutator`.
    """

    def descend(self, node: Expr) -> bool:
        return True

    _memo: dict[int, Expr] = {}

    def rewritten(self, node: Expr) -> Expr | None:
        """What ``node`` was rewritten to in the current :meth:`mutate` (None if not yet
        visited). In post-order every node left of the current one in its parent's
        children is done: a ``let``'s value is rewritten before its body is walked."""
        return self._memo.get(id(node))

    def mutate(self, root: Expr, memo: dict[int, Expr] | None = None) -> Expr:
        """``root`` rewritten by the hooks.

        ``memo`` (optional) holds the results of earlier walks by ``id`` of the node: a node
        found there is not walked again and its result is reused (so several roots that share
        nodes, e.g. the functions of one module, keep sharing them); the walk adds its own
        results to it.
        """
        table: dict[type, Callable[[Expr, Expr], Expr]] = {
            cls: getattr(self, "visit_" + name) for cls, name in KIND.items()}
        prune = self.descend if type(self).descend is not ExprMutator.descend else None
        descend = prune
        if memo is None:
            memo = {}
        else:
            known = memo

            def descend(node: Expr) -> bool:
                return id(node) not in known and (prune is None or prune(node))
        self._memo = memo
        for node in post_order(root, descend):
            k = id(node)
            if k in memo:
                continue
            kids = children(node) if prune is None or prune(node) else ()
            rebuilt = with_children(node, tuple([memo[id(c)] for c in kids])) if kids else node
            memo[k] = table[type(node)](rebuilt, node)
        return memo[id(root)]


def pre_order(root: Expr, descend: Callable[[Expr], bool] | None = None) -> list[Expr]:
    """Every node reachable from ``root`` once, parents before children, left to right.

    ``descend(node)`` (optional) returns False to treat ``node`` as a leaf.
    """
    order: list[Expr] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        if descend is None or descend(node):
            stack.extend(reversed(children(node)))
    return order


def count_uses(root: Expr, descend: Callable[[Expr], bool] | None = None, *,
               order: list[Expr] | None = None) -> dict[int, int]:
    """How many parent edges point at each node (by ``id``); >1 means the node is shared.

    A variable's count is its number of uses. ``descend(node)`` (optional) returns
    False to treat ``node`` as a leaf: the edges to its children are not counted.
    ``order`` is ``post_order(root, descend)`` when the caller has it already.
    """
    return _count_edges(post_order(root, descend) if order is None else order, descend)


def binders(node: Expr) -> tuple[Var, ...]:
    """The variables ``node`` itself binds: a let's variable, a function's parameters, the
    pattern variables of a match's clauses (in that order); ``()`` for other kinds."""
    if isinstance(node, Let):
        return (node.var,)
    if isinstance(node, Function):
        return tuple(node.params)
    if isinstance(node, Match):
        return tuple(v for c in node.clauses for v in pattern_vars(c.lhs))
    return ()


def rebound_vars(root: Expr, *, order: list[Expr] | None = None) -> set[int]:
    """The variables (by ``id``) bound at more than one binding site of ``root``.

    Variables are compared by identity, so a program that reuses a :class:`Var` object
    as the binder of two sites is legal but ambiguous for passes that key facts by the
    variable; they use this set to leave such variables alone. ``order`` is
    ``post_order(root)`` when the caller has it already.
    """
    seen: set[int] = set()
    twice: set[int] = set()
    for node in post_order(root) if order is None else order:
        for v in binders(node):
            if id(v) in seen:
                twice.add(id(v))
            seen.add(id(v))
    return twice


def enclosing_functions(fn: Function) -> dict[int, int]:
    """Every node of ``fn`` (by ``id``) to the ``id`` of the innermost function literal whose
    body contains it (``fn`` itself for its body). A node reachable from two functions
    (sharing across a function boundary) belongs to the first found."""
    owner: dict[int, int] = {}
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
    return owner


def shared(root: Expr, descend: Callable[[Expr], bool] | None = None) -> list[Expr]:
    """The nodes of ``root`` reachable along more than one edge, children before parents.

    These are the graph bindings of the text format (``%0 = e; ...``) plus any
    leaf (variable, constant, ...) used more than once. ``descend`` is as in
    :func:`count_uses`.
    """
    order = post_order(root, descend)
    uses = _count_edges(order, descend)
    return [n for n in order if uses.get(id(n), 0) > 1]


def _count_edges(order: list[Expr], descend: Callable[[Expr], bool] | None) -> dict[int, int]:
    uses: dict[int, int] = {}
    get = uses.get
    for node in order:
        if descend is None or descend(node):
            for kid in children(node):
                k = id(kid)
                uses[k] = get(k, 0) + 1
    return uses


def iter_let_spine(e: Expr) -> Iterable[Let]:
    """The lets of a ``let x1 = v1; let x2 = v2; ... body`` chain, outermost first."""
    while isinstance(e, Let):
        yield e
        e = e.body


# --- scope-aware walk ---------------------------------------------------------------------

LEAVES = frozenset((GlobalVar, Constant, Op, Constructor))


def walk_scoped(root: Expr, use: Callable[[Var, bool], object] | None = None,
                bind: Callable[[Var, Expr | Clause], object] | None = None,
                enter: Callable[[Expr], object] | None = None, *,
                free_only: bool = False) -> None:
    """Walk ``root`` once in first-occurrence order, tracking which variables are in scope.

    The order is pre-order, left to right: a ``let`` visits its value before
    its body (and binds its variable before the value when the value is a
    function literal: recursive ``let``), a function binds its parameters
    before its body, a ``match`` visits its scrutinee before its clauses.
    Scoping follows the text format: a ``let`` binds in its body (and in a
    function-literal value), a function binds its parameters in its body, a
    clause binds its pattern's variables in its right-hand side.

    A node reachable along several paths (graph sharing) is walked once, in
    the scope of its first occurrence; that is exact for well-formed programs
    (every use of a variable lies inside its binder's scope).

    Args:
        root: the expression to walk.
        use: ``use(var, bound)`` for every variable occurrence in expression
            position (every occurrence: variables are not memoized); ``bound``
            says whether an enclosing binder of that very object is in scope.
        bind: ``bind(var, site)`` at every binding occurrence; ``site`` is
            the ``Let``, the ``Function`` or the ``Clause`` that binds it.
        enter: ``enter(node)`` for every node other than a variable, once,
            before its children; a result of ``False`` prunes the node (its
            children and binders are not walked).
        free_only: call ``use`` only for uses that are not bound (``bound``
            is then always False); the fast path of ``free_vars``.
    """
    # The stack holds nodes to enter and, as plain tuples, scope actions
    # ``(bind?, vars, site)`` (no expression is a Python tuple).
    in_scope: dict[int, int] = {}
    visited: set[int] = set()
    leaves = LEAVES
    stack: list[Any] = [root]
    push = stack.append
    pop = stack.pop
    while stack:
        item = pop()
        t = type(item)
        if t is Var:
            if use is not None:
                if not free_only:
                    use(item, id(item) in in_scope)
                elif id(item) not in in_scope:
                    use(item, False)
            continue
        if t is tuple:
            opening, bound, site = item
            if opening:
                for v in bound:
                    in_scope[id(v)] = in_scope.get(id(v), 0) + 1
                    if bind is not None:
                        bind(v, site)
            else:
                for v in bound:
                    left = in_scope[id(v)] - 1
                    if left:
                        in_scope[id(v)] = left
                    else:
                        del in_scope[id(v)]
            continue
        k = id(item)
        if k in visited:
            continue
        visited.add(k)
        if enter is not None and enter(item) is False:
            continue
        if t in leaves:
            continue
        if t is Let:
            binder = (item.var,)
            push((False, binder, None))
            push(item.body)
            if type(item.value) is Function:
                push(item.value)
                push((True, binder, item))
            else:
                push((True, binder, item))
                push(item.value)
        elif t is Function:
            push((False, item.params, None))
            push(item.body)
            push((True, item.params, item))
        elif t is Match:
            for clause in reversed(item.clauses):
                bound = tuple(pattern_vars(clause.lhs))
                push((False, bound, None))
                push(clause.rhs)
                push((True, bound, clause))
            push(item.data)
        else:
            stack.extend(reversed(children(item)))
