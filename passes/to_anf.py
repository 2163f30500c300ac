"""ToANormalForm (``to_anf``): name every intermediate result with a ``let``.

What it does: every function body, ``if`` branch and ``match`` clause body
(a *scope*) becomes a chain ``let %x1 = c1; ...; let %xn = cn; a`` whose
values ``ci`` are compound expressions (calls, tuples, projections, ``if``,
``match``, reference operations, ``grad``, function literals) with *atomic*
operands, and whose tail ``a`` is an atom — or a call of a function, an ``if``
or a ``match`` with atomic operands, which stays in tail position: binding it (``let %x =
f(...); %x``) would turn a tail call into a nested one, and a loop would grow
every executor's stack (RULES.md §6; issue 33). Atoms are variables, constants,
globals, operators and constructors. The bindings follow evaluation order
(RULES.md: left to right, the callee and the arguments before the call, a
``let``'s value before its body, a condition or scrutinee before the
branch). Existing ``let`` s stay ``let`` s (their values normalized; a ``let``
nested in a value is flattened into the enclosing scope). A branch's or a
function's bindings stay inside it: nothing computed in a branch is moved
before the branch unless it is pure (below), nothing crosses a function
boundary.

Sharing (Semantics-Shared: a node reachable along several edges of one
function body is evaluated once per activation, at its first use). Each
shared node becomes one binding, and every use refers to its variable. Where
the binding goes:

* **pure** shared nodes (they read no reference, write none and cannot
  fail or diverge — :mod:`passes.purity`; they may allocate): in the
  innermost scope that dominates all uses (the lowest common ancestor of the
  scopes of the use sites, computed over the DAG with hoisted parents
  accounted for), at the point where the traversal first reaches it.
  Evaluating such a node earlier than the oracle would is unobservable: its
  value is the same, and an allocation (``ref(0)``) still happens once per
  activation, a fresh reference with the same contents; allocating when the
  oracle would not (its uses all in branches not taken) creates an
  unreachable reference.
* **effectful or failable** shared nodes: at their first use in evaluation
  order, in the scope where that use is — exactly where the oracle
  evaluates them. If a later use is in a scope where that binding is not
  visible, it is in a *sibling branch* of the same ``if``/``match`` (at most
  one of the two runs per evaluation): the node is bound again there, where
  it is first reached in that branch (a duplicate binding, one evaluation per
  run, as the oracle). The one case no binding placement can express is a
  node first reached inside a branch *and* used after (or outside) that
  branching expression: the oracle then evaluates it in the branch on some
  paths and at the later use on others. Such a node is bound once, in the
  innermost scope dominating all its uses, before the branching expression
  (so it is evaluated exactly once per activation and every use sees one
  value, but its effect may happen earlier than in the oracle on the paths
  that skip the branch). Programs whose shared nodes are pure (every
  generated program: the generators share only pure nodes) never meet it.
* A node shared across a function boundary is two different activations'
  business: each function body gets its own bindings.

Fused functions (``Primitive=1``, the output of operator fusion) are
kernels in dataflow form: they are kept as they are, bodies included, as
TVM's ``ToANormalForm`` does (the function literal itself is let-bound like
any other).

Binders: a node normalized twice (the duplicated bindings above) would bind
its ``let``, parameter and pattern variables twice; the second time they are
renamed to fresh variables (variables are compared by identity), so every
binder object in the output is bound once. New variables are unannotated
(the type checker infers them).

How: the static part (per function body: which nodes are shared, the scope
tree and each node's dominating scope) is one walk over the DAG, linear up
to a logarithmic factor (lowest common ancestors by binary lifting over the
scope tree); the
rewrite is one walk in evaluation order written as generator premises driven
by :func:`semantics.visitor.run_recursive` (no Python recursion: 20,000-deep
chains and 20,000-node graphs are heap, not stack), building each scope with
a :class:`semantics.rewrite.LetList`. A 60-step doubling DAG becomes 60
``let`` s. When the path-dependent case above is detected, the walk is
redone with those nodes placed in their dominating scope (one extra walk per
round of newly found nodes; none for programs without such nodes).

Invariants: the input is never mutated; a function already in A-normal form
(as this pass defines it, with no shared compound node) is returned as the
very same object, so ``to_anf`` is idempotent.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from passes.common import typed_or_same
from passes.manager import register_pass
from passes.purity import Effect, EffectAnalysis
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
)
from semantics.module import IRModule
from semantics.rewrite import LetList, rename_pattern
from semantics.visitor import count_uses, kind_cases, post_order, run_recursive

__all__ = ["is_atom", "to_anf"]

_ATOMS = frozenset((Var, Constant, Op, Constructor, GlobalVar))
_SIMPLE = frozenset((Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite, Grad))
_TAILS = frozenset((Call, If, Match))


def _stays_in_tail(e: Expr) -> bool:
    """What stays unbound in a scope's tail position (see ``_Normalizer.tail``): a call of a
    function (not of an operator or a constructor, which are no tail calls), an ``if``, a
    ``match`` (whose branches may end in tail calls)."""
    if isinstance(e, Call):
        return type(e.op) not in (Op, Constructor)
    return type(e) is If or type(e) is Match
_ROOT = ("root",)
# Effects whose time of evaluation can be observed (allocation alone cannot: see below).
_ORDERED = Effect.WRITES | Effect.READS | Effect.MAY_FAIL

Gen = Generator[Any, Any, Any]


def is_atom(e: Expr) -> bool:
    """Whether ``e`` is atomic in A-normal form (a variable, constant, global, operator, ctor)."""
    return type(e) in _ATOMS


@register_pass("ToANormalForm", "to_anf", opt_level=None)
def to_anf(mod: IRModule) -> IRModule:
    """Convert every function to A-normal form (each intermediate result let-bound)."""
    if all(_is_anf(fn) for fn in mod.functions.values()):
        return mod
    typed = typed_or_same(mod)
    analysis = EffectAnalysis(typed)
    out = {}
    for name, fn in typed.functions.items():
        out[name] = fn if _is_anf(fn) else _convert(fn, analysis)
    return typed.with_functions(out)


def _convert(fn: Function, analysis: EffectAnalysis) -> Function:
    hoist: set[int] = set()
    while True:
        norm = _Normalizer(analysis, hoist)
        result = run_recursive(norm.function(fn))
        if not norm.conflicts - hoist:
            assert isinstance(result, Function)
            return result
        hoist |= norm.conflicts


# --- the static part: sharing and dominating scopes per function body ------------------------

def _not_function(node: Expr) -> bool:
    return type(node) is not Function


class _Body:
    """One function body (one activation): its shared nodes and their dominating scopes.

    Scopes are named statically: the body is ``_ROOT``; branch ``i`` of an ``if`` or
    ``match`` node ``p`` is ``(id(p), i)``. ``home[id(n)]`` is the innermost scope
    dominating every use of ``n`` (a use by a hoisted parent counts at the parent's home).
    """

    def __init__(self, body: Expr):
        order = post_order(body, _not_function)
        uses = count_uses(body, _not_function, order=order)
        self.shared = {id(n) for n in order
                       if uses.get(id(n), 0) > 1 and type(n) not in _ATOMS}
        # The scope tree with binary-lifting jump tables: jumps[s][k] is the 2**k-th
        # ancestor of s, so a lowest common ancestor costs O(log depth).
        jumps: dict[Any, list[Any]] = {_ROOT: []}
        depth: dict[Any, int] = {_ROOT: 0}
        home: dict[int, Any] = {id(body): _ROOT}

        def lca(a: Any, b: Any) -> Any:
            if a == b:
                return a
            if depth[a] < depth[b]:
                a, b = b, a
            diff, k = depth[a] - depth[b], 0
            while diff:
                if diff & 1:
                    a = jumps[a][k]
                diff >>= 1
                k += 1
            if a == b:
                return a
            for k in range(len(jumps[a]) - 1, -1, -1):
                ja, jb = jumps[a], jumps[b]
                if k < len(ja) and k < len(jb) and ja[k] != jb[k]:
                    a, b = ja[k], jb[k]
            return jumps[a][0]

        def open_scope(key: Any, parent: Any) -> None:
            table = [parent]
            while len(jumps[table[-1]]) >= len(table):
                table.append(jumps[table[-1]][len(table) - 1])
            jumps[key] = table
            depth[key] = depth[parent] + 1

        for node in reversed(order):
            t = type(node)
            if t in _ATOMS or t is Function:
                continue
            h = home[id(node)]
            kids = children(node)
            if t is If or t is Match:
                edges = [(kids[0], h)]
                for i, kid in enumerate(kids[1:], 1):
                    key = (id(node), i)
                    open_scope(key, h)
                    edges.append((kid, key))
            else:
                edges = [(kid, h) for kid in kids]
            for kid, scope in edges:
                if type(kid) in _ATOMS:
                    continue
                known = home.get(id(kid))
                home[id(kid)] = scope if known is None else lca(known, scope)
        self.home = home


# --- the rewrite ---------------------------------------------------------------------------

class _Scope:
    """One open (or closed) scope instance: its bindings and what to undo when it closes."""

    __slots__ = ("ll", "parent", "depth", "branch_of", "key", "undo", "renamed")

    def __init__(self, parent: _Scope | None, key: Any, branch_of: int):
        self.ll = LetList()
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.branch_of = branch_of
        self.key = key
        self.undo: list[int] = []  # memo entries made in this scope
        self.renamed: list[tuple[int, Var | None]] = []  # binder renames to restore

    def up(self) -> _Scope:
        """The enclosing scope (this one is not a function body's)."""
        assert self.parent is not None
        return self.parent


class _Activation:
    """The walk's state for one function body."""

    __slots__ = ("body", "memo", "open", "bound_at")

    def __init__(self, body: _Body):
        self.body = body
        self.memo: dict[int, Expr] = {}  # shared node -> its variable (while visible)
        self.open: dict[Any, _Scope] = {}  # static scope -> innermost open instance
        self.bound_at: dict[int, list[_Scope]] = {}  # effectful shared node -> binding scopes


class _Normalizer:
    def __init__(self, analysis: EffectAnalysis, hoist: set[int]):
        self.analysis = analysis
        self.hoist = hoist
        self.conflicts: set[int] = set()
        self.emitted: set[int] = set()  # binder objects already bound in the output
        self.rename: dict[int, Var] = {}
        self.branches = 0
        self.placed: set[int] = set()  # input nodes already placed in the output
        self.act: _Activation | None = None
        self.scope: _Scope | None = None
        self._cases = kind_cases(self, "value_")

    # --- scopes and binders -------------------------------------------------------------
    def _open(self, key: Any, branch_of: int, parent: _Scope | None) -> tuple[_Scope, Any]:
        act = self.act
        assert act is not None
        sc = _Scope(parent, key, branch_of)
        saved = (self.scope, act.open.get(key))
        act.open[key] = sc
        self.scope = sc
        return sc, saved

    def _close(self, sc: _Scope, saved: Any) -> None:
        act = self.act
        assert act is not None
        for k in sc.undo:
            act.memo.pop(k, None)
        for k, prev in reversed(sc.renamed):
            if prev is None:
                del self.rename[k]
            else:
                self.rename[k] = prev
        self.scope, prev_open = saved
        if prev_open is None:
            del act.open[sc.key]
        else:
            act.open[sc.key] = prev_open

    def _binder(self, v: Var) -> Var:
        """``v`` if it is bound for the first time in the output, else a fresh copy of it."""
        if id(v) not in self.emitted:
            self.emitted.add(id(v))
            return v
        nv = Var(v.name_hint, v.type_annotation, span=v.span)
        assert self.scope is not None
        self.scope.renamed.append((id(v), self.rename.get(id(v))))
        self.rename[id(v)] = nv
        return nv

    @staticmethod
    def _exclusive(a: _Scope, b: _Scope) -> bool:
        """Whether scopes ``a`` and ``b`` lie in different branches of one branching node."""
        while a.depth > b.depth:
            a = a.up()
        while b.depth > a.depth:
            b = b.up()
        if a is b:
            return False  # one scope contains the other: the uses are in sequence
        while a.parent is not b.parent:
            a, b = a.up(), b.up()
        return a.branch_of == b.branch_of and a.branch_of >= 0

    def _target(self, e: Expr) -> _Scope:
        """The scope where the shared node ``e`` is bound now."""
        act = self.act
        cur = self.scope
        assert act is not None and cur is not None
        if not self.analysis.flags(e) & _ORDERED or id(e) in self.hoist:
            found = act.open.get(act.body.home.get(id(e), _ROOT))
            return cur if found is None else found
        earlier = act.bound_at.setdefault(id(e), [])
        for sc in earlier:
            if not self._exclusive(sc, cur):
                self.conflicts.add(id(e))
        earlier.append(cur)
        return cur

    # --- premises ----------------------------------------------------------------------
    def function(self, fn: Function) -> Gen:
        """The function with its body a scope of its own (a new activation)."""
        if _primitive(fn):
            return fn
        outer_act, outer_scope = self.act, self.scope
        self.act = _Activation(_Body(fn.body))
        sc, saved = self._open(_ROOT, -1, None)
        params = tuple(self._binder(p) for p in fn.params)
        tail = yield self.tail(fn.body)
        self._close(sc, saved)
        self.act, self.scope = outer_act, outer_scope
        body = sc.ll.get(tail)
        changed = body is not fn.body or any(a is not b for a, b in zip(params, fn.params))
        if not changed and id(fn) not in self.placed:
            self.placed.add(id(fn))
            return fn
        return Function(params, body, fn.ret_type, fn.type_params, fn.attrs, span=fn.span)

    def branch(self, e: Expr, key: Any, branch_of: int,
               binders: tuple[Var, ...] = ()) -> Gen:
        """``e`` normalized as a scope of its own (an ``if`` branch, a clause body)."""
        sc, saved = self._open(key, branch_of, self.scope)
        renamed = [self._binder(v) for v in binders]
        tail = yield self.tail(e)
        self._close(sc, saved)
        return sc.ll.get(tail), renamed

    def tail(self, e: Expr) -> Gen:
        """The tail of a scope: a call, ``if`` or ``match`` stays in tail position (its
        operands atoms, its branches scopes with tails of their own), anything else becomes
        an atom. Binding a tail call (``let %x = f(...); %x``) would make every loop grow
        the executors' stacks (RULES.md §6: a call in tail position runs in constant space).
        """
        act = self.act
        assert act is not None
        if (type(e) in _TAILS or type(e) is Let) and id(e) not in act.body.shared:
            value = yield self.value(e)       # a let chain: flattened, its tail kept
            if _stays_in_tail(value) or type(value) in _ATOMS:
                return value
            assert self.scope is not None
            return self.scope.ll.push(value, "x")
        return (yield self.atom(e))

    def atom(self, e: Expr) -> Gen:
        """An atom with the value of ``e``; the bindings computing it go to their scopes."""
        t = type(e)
        if t is Var:
            return self.rename.get(id(e), e)
        if t in _ATOMS:
            return e
        act = self.act
        assert act is not None
        if id(e) in act.body.shared:
            hit = act.memo.get(id(e))
            if hit is not None:
                return hit
            target = self._target(e)
            here = self.scope
            self.scope = target
            value = yield self.value(e)
            var = value if type(value) in _ATOMS else target.ll.push(value, "x")
            self.scope = here
            act.memo[id(e)] = var
            target.undo.append(id(e))
            return var
        value = yield self.value(e)
        if type(value) in _ATOMS:
            return value
        assert self.scope is not None
        return self.scope.ll.push(value, "x")

    def value(self, e: Expr) -> Gen:
        """Premise: ``e`` with atomic operands (a compound, or an atom for a ``let``'s result),
        by the case ``value_<kind>`` of its kind."""
        case = self._cases.get(type(e))
        if case is None:
            raise TypeError(f"to_anf: unexpected node {type(e).__name__}")
        return case(e)

    def _operands(self, e: Expr) -> Gen:
        """The atoms of ``e``'s operands, left to right; None when they are ``e``'s own and
        ``e`` is placed for the first time (then ``e`` is reused as it is; a second placement
        is a copy)."""
        kids = children(e)
        new = []
        for kid in kids:
            new.append((yield self.atom(kid)))
        if all(a is b for a, b in zip(kids, new)) and id(e) not in self.placed:
            self.placed.add(id(e))
            return None
        return new

    def value_call(self, e: Call) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else Call(k[0], tuple(k[1:]), e.attrs, e.type_args, span=e.span)

    def value_tuple(self, e: Tuple) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else Tuple(tuple(k), span=e.span)

    def value_tuple_getitem(self, e: TupleGetItem) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else TupleGetItem(k[0], e.index, span=e.span)

    def value_ref_create(self, e: RefCreate) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else RefCreate(k[0], span=e.span)

    def value_ref_read(self, e: RefRead) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else RefRead(k[0], span=e.span)

    def value_ref_write(self, e: RefWrite) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else RefWrite(k[0], k[1], span=e.span)

    def value_grad(self, e: Grad) -> Gen:
        k = yield from self._operands(e)
        return e if k is None else Grad(k[0], span=e.span)

    def value_let(self, e: Let) -> Gen:
        return self.let_chain(e)

    def value_if(self, e: If) -> Gen:
        cond = yield self.atom(e.cond)
        self.branches += 1
        n = self.branches
        then, _ = yield self.branch(e.true_branch, (id(e), 1), n)
        other, _ = yield self.branch(e.false_branch, (id(e), 2), n)
        return If(cond, then, other, span=e.span)

    def value_match(self, e: Match) -> Gen:
        data = yield self.atom(e.data)
        self.branches += 1
        n = self.branches
        clauses = []
        for i, clause in enumerate(e.clauses, 1):
            old = tuple(pattern_vars(clause.lhs))
            rhs, new = yield self.branch(clause.rhs, (id(e), i), n, old)
            lhs = clause.lhs
            if any(a is not b for a, b in zip(old, new)):
                lhs = rename_pattern(lhs, {id(a): b for a, b in zip(old, new)})
            clauses.append(Clause(lhs, rhs, span=clause.span))
        return Match(data, tuple(clauses), e.complete, span=e.span)

    def value_function(self, e: Function) -> Gen:
        return self.function(e)

    # an atom is its own value (renamed if its binder was)
    def value_var(self, e: Var) -> Gen:
        return self.atom(e)

    value_constant = value_global_var = value_op = value_constructor = value_var

    def let_chain(self, e: Let) -> Gen:
        """Flatten a ``let`` spine into the current scope; the result is the body's value."""
        node: Expr = e
        act = self.act
        assert act is not None
        while type(node) is Let:
            let: Let = node
            if type(let.value) is Function:
                var = self._binder(let.var)  # in scope inside the function (recursion)
                value = yield self.value(let.value)
            elif id(let.value) in act.body.shared:
                value = yield self.atom(let.value)
                var = self._binder(let.var)
            else:
                value = yield self.value(let.value)
                var = self._binder(let.var)
            assert self.scope is not None
            self.scope.ll.bind(var, value)
            node = let.body
            if id(node) in act.body.shared:
                break  # a shared body is bound once (and reached again through the memo)
        return (yield self.value(node) if id(node) not in act.body.shared
                else self.atom(node))


# --- the A-normal-form check (the fast path for programs already converted) --------------------

def _primitive(fn: Function) -> bool:
    """A fused function (``Primitive=1``): a kernel in dataflow form, left as it is (as TVM)."""
    return bool(fn.attrs) and bool(fn.attrs.get("Primitive"))


def _is_anf(fn: Function) -> bool:
    """Whether every scope of ``fn`` is ``let``s of compounds with atomic operands and a tail
    that is an atom, or a call, ``if`` or ``match`` with atomic operands."""
    if _primitive(fn):
        return True
    seen: set[int] = set()
    scopes: list[Expr] = [fn.body]
    while scopes:
        node = scopes.pop()
        while type(node) is Let:
            if id(node) in seen:
                return False
            seen.add(id(node))
            value = node.value
            if not _compound_ok(value, seen, scopes):
                return False
            node = node.body
        if type(node) not in _ATOMS and (not _stays_in_tail(node)
                                         or not _compound_ok(node, seen, scopes)):
            return False
    return True


def _compound_ok(value: Expr, seen: set[int], scopes: list[Expr]) -> bool:
    t = type(value)
    if t in _ATOMS:
        return True
    if id(value) in seen:
        return False
    seen.add(id(value))
    if t in _SIMPLE:
        return all(type(k) in _ATOMS for k in children(value))
    if isinstance(value, If):
        if type(value.cond) not in _ATOMS:
            return False
        scopes.append(value.true_branch)
        scopes.append(value.false_branch)
        return True
    if isinstance(value, Match):
        if type(value.data) not in _ATOMS:
            return False
        scopes.extend(c.rhs for c in value.clauses)
        return True
    if isinstance(value, Function):
        if not _primitive(value):
            scopes.append(value.body)
        return True
    return False
