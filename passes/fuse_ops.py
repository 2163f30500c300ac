"""FuseOps (``fuse_ops``): group operator calls into functions marked ``Primitive=1``.

What it does (TVM's ``FuseOps``, facts from ``src/relay/transforms/fuse_ops.cc``): in
every function body (global functions and the closures inside them, recursive
ones included) the **dataflow region** — operator calls, tuples and
projections — is partitioned into groups; each group that contains an
operator call becomes a call of a new function literal marked ``Primitive=1``
whose body is the group (a DAG of operator calls, tuples and projections) and
whose parameters are the group's inputs (variables and values computed
outside it), annotated with their ``checked_type``. Constants stay inside the
group. Everything else — control flow, closures, calls of globals and
closures, ADTs, references — stays in place. Existing ``Primitive=1``
functions are left alone (the pass is idempotent: no nesting).

How (the three steps of TVM's design):

1. **Dataflow graph** (:class:`_Graph`). One walk in evaluation order over
   the function. Every dataflow node gets an index in completion order
   (a topological order), its pattern kind (``OpPattern`` of the operator;
   ``TUPLE`` for a tuple; ``INJECTIVE`` for a projection of a tuple of
   tensors, else ``OPAQUE``) and its *output edges*: the dataflow nodes using
   it, each with the consumer's pattern (a broadcast whose argument already
   has the result's shape is an elementwise edge). A node used by anything
   else — control flow, a call of a closure or global, a reference, a let
   body, a function body, a non-tensor tuple field — is ``extern``: its value
   must exist on its own, so it ends a group.
2. **Post-dominator tree** over that DAG: a node's immediate post-dominator
   is the least common ancestor of its consumers' (the tree is built in
   reverse topological order; the pattern of the path to it is the maximum
   of the edge and tree patterns met; ancestors are found by binary lifting,
   so a far post-dominator costs ``O(log n)``, not the depth of the tree).
3. **Partition**: union-find groups, three phases in topological order — 0:
   an ``OUT_ELEMWISE_FUSABLE`` group (``nn.conv2d``, ``nn.dense``, pooling,
   softmax) absorbs its post-dominator when every path to it is elementwise or
   broadcast; elementwise/broadcast nodes fuse into an injective or
   reduction post-dominator (every node between them at most injective);
   1: injective nodes and tuples fuse into their post-dominator along
   injective paths; 2: injective nodes fuse into a tuple already fused into
   an injective consumer. A tuple never absorbs its fields otherwise, opaque
   nodes stand alone, and a fusion that would make a group larger than
   ``max_depth`` nodes (TVM's ``kMaxFusedOps``, 256) is refused.
   ``fuse_opt_level=0`` skips the phases: every operator call is a group.

**Let-bound dataflow fuses directly** (our choice; TVM converts to graph
normal form first). A use of ``%x`` bound by ``let %x = v`` where ``v`` is a
dataflow node is an edge from ``v``. When ``v`` is fused into a later group
its ``let`` disappears and ``v`` is evaluated inside that group's call (at
the group's root); a group's root stays where it was (``let %x = f(...)``).
So that moving a node to its group's root is unobservable, fusion never
crosses a **segment** boundary: a new segment starts at every scope (function
body, ``if`` branch, ``match`` clause) and after every binding or
sub-expression that may write a reference, fail or diverge (a call of a
closure or global, ``ref_write``, an ``if``/``match`` containing those —
:mod:`passes.purity`). Within a segment only pure operator calls move, and
only later; effects and control flow keep their order and place. (Operators
that may fail — integer division — can thereby fail at a later point, after
other pure operators: the program still fails with a runtime error.)

Where we differ from TVM, deliberately: constants are kept inside the group
that uses them (TVM passes non-scalar constants as parameters); a group of pure
data movement with a tuple result (a ``split``) that only fused elementwise or
injective groups of its segment read is copied into each of them instead of
being a kernel of its own (:func:`_copied_groups`: an LSTM's gates are read by
two cell kernels, each through its own ``split``; the copy is index arithmetic,
nothing is computed twice); a group with no
operator call (a lone tuple, a projection of a value computed elsewhere) is
not wrapped, its nodes stay in place (TVM wraps such a group when a projection
and its tuple fall into it); the segment rule above (TVM fuses a DAG in graph
normal form and has no lets to respect). As in TVM, elementwise and broadcast
producers fuse into a reduction, injective ones do not (phase 1 asks every
node on the path, the sink's group included, to be at most injective).

Invariants: every node is evaluated once (a node used outside its group is
that group's root, and its result — the call — is shared by all its users),
except the copied data movement above (pure, so copying it is unobservable);
a group's parameters are ordered by the evaluation order of its inputs, so
effectful inputs (in graph form) keep their order. The program must type
check (fusion reads ``checked_type``); a program that does not is returned
unchanged. Variables bound at more than one site are not followed through.
Nothing recurses in Python: the walks keep explicit stacks (20,000-node
graphs and 20,000-deep let chains are fine).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passes.common import typed_or_same
from passes.manager import Pass, register_pass
from passes.purity import Effect, EffectAnalysis
from semantics import ops as _ops
from semantics.expr import (
    Attrs,
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.ops.registry import OpPattern
from semantics.rewrite import copy_subgraph
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import ExprMutator, kind_cases, post_order, rebound_vars

__all__ = ["MAX_FUSED_OPS", "count_primitive_functions", "fuse_ops", "is_primitive"]

MAX_FUSED_OPS = 256  # TVM's kMaxFusedOps: the most nodes one group may hold

ELEMWISE = int(OpPattern.ELEMWISE)
BROADCAST = int(OpPattern.BROADCAST)
INJECTIVE = int(OpPattern.INJECTIVE)
COMM_REDUCE = int(OpPattern.COMM_REDUCE)
OUT_ELEMWISE_FUSABLE = int(OpPattern.OUT_ELEMWISE_FUSABLE)
TUPLE = int(OpPattern.TUPLE)
OPAQUE = int(OpPattern.OPAQUE)

_LEAVES = frozenset((Var, GlobalVar, Constant, Op, Constructor))
_BARRIER_FLAGS = Effect.WRITES | Effect.MAY_FAIL


# --- the pass -----------------------------------------------------------------------------------

@register_pass("FuseOps", "fuse_ops", opt_level=1)
def _fuse_ops_pass(mod: IRModule) -> IRModule:
    """Fuse operators into Primitive=1 functions (fuse_opt_level=2)."""
    return _fuse_module(mod, 2, MAX_FUSED_OPS)


def fuse_ops(p: Any, fuse_opt_level: int = 2, *, max_depth: int = MAX_FUSED_OPS) -> Any:
    """Fuse the operator calls of ``p`` into functions marked ``Primitive=1``.

    Args:
        p: an ``IRModule`` or an expression (the result has the same kind).
        fuse_opt_level: 0 makes every operator call its own primitive function;
            any higher level fuses (TVM's levels 1..3 behave alike).
        max_depth: the most nodes one fused group may hold (TVM: 256).
    Returns:
        The fused program; a program that does not type check comes back unchanged.
    Raises:
        TypeError: ``p`` is neither a module nor an expression.
        ValueError: ``max_depth`` is below 1.
    """
    if max_depth < 1:
        raise ValueError(f"fuse_ops: max_depth must be at least 1, got {max_depth}")
    def run(mod: IRModule) -> IRModule:
        return _fuse_module(mod, fuse_opt_level, max_depth)

    return Pass("FuseOps", "fuse_ops", run)(p)


def is_primitive(fn: Expr) -> bool:
    """Whether ``fn`` is a function literal marked ``Primitive=1``."""
    if type(fn) is not Function:
        return False
    value = fn.attrs.get("Primitive") if fn.attrs else None
    return value in (1, True, "1")


def count_primitive_functions(p: IRModule | Expr) -> int:
    """The number of distinct ``Primitive=1`` function nodes in a module or expression."""
    roots = list(p.functions.values()) if isinstance(p, IRModule) else [p]
    seen: set[int] = set()
    count = 0
    for root in roots:
        for node in post_order(root):
            if id(node) not in seen and is_primitive(node):
                seen.add(id(node))
                count += 1
    return count


def _fuse_module(mod: IRModule, level: int, max_depth: int) -> IRModule:
    typed = typed_or_same(mod)
    if not typed.functions or any(fn.checked_type is None for fn in typed.functions.values()):
        return mod  # fusion needs types (patterns, parameter annotations)
    analysis = EffectAnalysis(typed)
    out: dict[str, Function] = {}
    for name, fn in typed.functions.items():
        out[name] = fn if is_primitive(fn) else _fuse_function(fn, analysis, level, max_depth)
    if all(out[n] is typed.functions[n] for n in out):
        return mod
    return typed.with_functions(out)


def _fuse_function(fn: Function, analysis: EffectAnalysis, level: int,
                   max_depth: int) -> Function:
    graph = _Graph(fn, analysis)
    if not graph.nodes:
        return fn
    partitioner = _Partitioner(graph, level, max_depth)
    root = partitioner.partition()
    copies = _copied_groups(graph, root, partitioner) if level > 0 else {}
    out = _rewrite(fn, graph, root, copies)
    assert isinstance(out, Function)
    return out


# --- step 1: the dataflow graph -----------------------------------------------------------------

def _is_dataflow(e: Expr) -> bool:
    t = type(e)
    return t is Tuple or t is TupleGetItem or (isinstance(e, Call) and type(e.op) is Op)


def _op_pattern(name: str) -> int:
    try:
        return int(_ops.get(name).pattern)
    except Exception:  # noqa: BLE001 - an unknown operator is opaque
        return OPAQUE


def _same_shape(a: Type | None, b: Type | None) -> bool:
    if not isinstance(a, TensorType) or not isinstance(b, TensorType):
        return False
    try:
        return bool(a.shape == b.shape)
    except Exception:  # noqa: BLE001 - incomparable dims: not provably equal
        return False


def _tensor_tuple(t: Type | None) -> bool:
    return isinstance(t, TupleType) and all(isinstance(f, TensorType) for f in t.fields)


# Walk tasks (the explicit stack of _Graph).
_ENTER, _DONE, _BIND, _SETSEG, _FRESH, _SAVE, _AFTER = range(7)


class _Graph:
    """The indexed forward dataflow graph of one function (step 1 of the module docstring)."""

    def __init__(self, fn: Function, analysis: EffectAnalysis):
        self.analysis = analysis
        self.nodes: list[Expr] = []
        self.index: dict[int, int] = {}
        self.pattern: list[int] = []
        self.outputs: list[list[tuple[int, int]]] = []
        self.extern: list[bool] = []
        self.seg: list[int] = []
        self.alias: dict[int, int] = {}       # id(let var) -> index of its dataflow value
        self.done_at: dict[int, int] = {}     # id(node) -> completion time (evaluation order)
        self.let_value: set[int] = set()      # ids of lets whose value is a graph node
        self._rebound = rebound_vars(fn)
        self._edges = kind_cases(self, "_edges_")
        self._walk(fn)
        for i, outs in enumerate(self.outputs):
            if not outs:
                self.extern[i] = True

    def producer(self, e: Expr) -> int:
        """The graph index whose value ``e`` is (a dataflow node or a let alias), else -1."""
        found = self.index.get(id(e))
        if found is not None:
            return found
        if type(e) is Var:
            return self.alias.get(id(e), -1)
        return -1

    def _walk(self, fn: Function) -> None:
        seen: set[int] = set()
        segs = 0
        cur = 0
        saved: list[int] = []
        clock = 0
        stack: list[tuple[int, Any]] = [(_ENTER, fn)]
        push = stack.append
        while stack:
            task, x = stack.pop()
            if task == _ENTER:
                t = type(x)
                if t in _LEAVES or id(x) in seen:
                    continue
                seen.add(id(x))
                push((_DONE, x))
                if t is Function:
                    if not is_primitive(x):
                        push((_SETSEG, cur))
                        push((_ENTER, x.body))
                        push((_FRESH, None))
                elif t is Let:
                    push((_ENTER, x.body))
                    push((_BIND, x))
                    push((_ENTER, x.value))
                elif t is If:
                    push((_AFTER, x))
                    push((_ENTER, x.false_branch))
                    push((_FRESH, None))
                    push((_ENTER, x.true_branch))
                    push((_FRESH, None))
                    push((_SAVE, None))
                    push((_ENTER, x.cond))
                elif t is Match:
                    push((_AFTER, x))
                    for clause in reversed(x.clauses):
                        push((_ENTER, clause.rhs))
                        push((_FRESH, None))
                    push((_SAVE, None))
                    push((_ENTER, x.data))
                else:
                    for kid in reversed(children(x)):
                        push((_ENTER, kid))
            elif task == _DONE:
                self.done_at[id(x)] = clock
                clock += 1
                if _is_dataflow(x):
                    self._add_node(x, cur)
                else:
                    self._mark_extern_children(x)
                    t = type(x)
                    if (t is Call or t is RefWrite) and \
                            self.analysis.flags(x) & _BARRIER_FLAGS:
                        segs += 1
                        cur = segs
            elif task == _BIND:
                value = x.value
                found = self.index.get(id(value))
                if found is not None:
                    if id(x.var) in self._rebound:
                        self.extern[found] = True  # evaluated at this let: it ends a group
                    else:
                        self.alias[id(x.var)] = found
                        self.let_value.add(id(x))
            elif task == _FRESH:
                segs += 1
                cur = segs
            elif task == _SETSEG:
                cur = x
            elif task == _SAVE:
                saved.append(cur)
            else:  # _AFTER an if / match: back to the segment before it unless it is a barrier
                before = saved.pop()
                if self.analysis.flags(x) & _BARRIER_FLAGS:
                    segs += 1
                    cur = segs
                else:
                    cur = before

    def _add_node(self, node: Expr, seg: int) -> None:
        i = len(self.nodes)
        self.index[id(node)] = i
        self.nodes.append(node)
        self.outputs.append([])
        self.extern.append(False)
        self.seg.append(seg)
        self.pattern.append(self._edges[type(node)](node, i))

    # The edges from a dataflow node's operands, by kind; each returns the node's pattern.
    def _edges_call(self, node: Call, i: int) -> int:
        assert isinstance(node.op, Op)  # a dataflow call (_is_dataflow)
        pattern = _op_pattern(node.op.name)
        rtype = node.checked_type
        for arg in node.args:
            edge = pattern
            if edge == BROADCAST and _same_shape(arg.checked_type, rtype):
                edge = ELEMWISE
            self._edge(arg, i, edge)
        return pattern

    def _edges_tuple(self, node: Tuple, i: int) -> int:
        for field in node.fields:
            if isinstance(field.checked_type, TensorType):
                self._edge(field, i, INJECTIVE)
            else:
                self._extern(field)
        return TUPLE

    def _edges_tuple_getitem(self, node: TupleGetItem, i: int) -> int:
        tup = node.tuple_value
        if _tensor_tuple(tup.checked_type):
            self._edge(tup, i, INJECTIVE)
            return INJECTIVE
        self._extern(tup)
        return OPAQUE

    def _edge(self, arg: Expr, consumer: int, pattern: int) -> None:
        p = self.producer(arg)
        if p < 0:
            return
        if self.seg[p] != self.seg[consumer]:
            self.extern[p] = True
        else:
            self.outputs[p].append((consumer, pattern))

    def _extern(self, e: Expr) -> None:
        p = self.producer(e)
        if p >= 0:
            self.extern[p] = True

    def _mark_extern_children(self, node: Expr) -> None:
        t = type(node)
        if t is Function and is_primitive(node):
            return
        kids = children(node)
        if isinstance(node, Let) and _is_dataflow(node.value):
            kids = kids[1:]  # the binding position is not a use (uses of the variable are)
        for kid in kids:
            self._extern(kid)


# --- steps 2 and 3: post-dominator tree and partition -------------------------------------------

class _Partitioner:
    """Union-find groups over the graph (step 3); one group object per node, as in TVM."""

    def __init__(self, graph: _Graph, level: int, max_depth: int):
        self.g = graph
        self.level = level
        self.max_depth = max_depth
        n = len(graph.nodes)
        self.parent = list(range(n))
        self.gpattern = list(graph.pattern)
        self.anchor = [p == OUT_ELEMWISE_FUSABLE for p in graph.pattern]
        self.size = [1] * n

    def find(self, i: int) -> int:
        root = i
        parent = self.parent
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def partition(self) -> list[int]:
        """The group root (the output node's index) of every node."""
        if self.level > 0:
            tparent, tpattern = self._post_dominators()
            for phase in (0, 1, 2):
                self._run(phase, tparent, tpattern)
        return [self.find(i) for i in range(len(self.parent))]

    def _post_dominators(self) -> tuple[list[int], list[int]]:
        """Each node's immediate post-dominator (-1: none) and the pattern of the way there.

        Built in reverse topological order: a node's post-dominator is the least common
        ancestor of its consumers in the tree built so far; the pattern is the maximum of
        the node's edge patterns and of the tree patterns of the nodes passed on the way
        to that ancestor (TVM's ``LeastCommonAncestor``). Ancestors are found by binary
        lifting (``up[k][v]``: the ``2**k``-th ancestor; ``mx[k][v]``: the largest tree
        pattern on the way), so a deep tree costs ``O(log n)`` per query, not its depth.
        """
        g = self.g
        n = len(g.nodes)
        levels = max(1, n.bit_length())
        tparent = [-1] * n
        tdepth = [1] * n
        tpattern = [OPAQUE] * n
        up = [[-1] * n for _ in range(levels)]
        mx = [[OPAQUE] * n for _ in range(levels)]

        def lca(a: int, b: int, pat: int) -> tuple[int, int]:
            if tdepth[a] < tdepth[b]:
                a, b = b, a
            d = tdepth[a] - tdepth[b]
            k = 0
            while d:
                if d & 1:
                    pat = max(pat, mx[k][a])
                    a = up[k][a]
                d >>= 1
                k += 1
            if a == b:
                return a, pat
            for k in range(levels - 1, -1, -1):
                ua, ub = up[k][a], up[k][b]
                if ua != ub:
                    pat = max(pat, mx[k][a], mx[k][b])
                    a, b = ua, ub
            return tparent[a], max(pat, tpattern[a], tpattern[b])  # -1: different trees

        for i in range(n - 1, -1, -1):
            if not g.extern[i]:
                outs = g.outputs[i]
                pat = max(ELEMWISE, outs[0][1])
                par = outs[0][0]
                for c, edge in outs[1:]:
                    par, pat = lca(par, c, pat)
                    pat = max(pat, edge)
                    if par < 0:
                        break
                tparent[i] = par
                tdepth[i] = tdepth[par] + 1 if par >= 0 else 1
                tpattern[i] = pat
            up[0][i] = tparent[i]
            mx[0][i] = tpattern[i]
            for k in range(1, levels):
                mid = up[k - 1][i]
                if mid < 0:
                    break
                up[k][i] = up[k - 1][mid]
                mx[k][i] = max(mx[k - 1][i], mx[k - 1][mid])
        return tparent, tpattern

    def _run(self, phase: int, tparent: list[int], tpattern: list[int]) -> None:
        for i in range(len(self.parent)):
            pat = self.gpattern[i]
            if pat == OPAQUE:
                continue
            sink = tparent[i]
            if sink < 0:
                continue
            if phase == 2:
                if pat > INJECTIVE:
                    continue
                root_pat = self.gpattern[self.find(sink)]
                if root_pat == TUPLE:
                    continue
                if self.gpattern[sink] == TUPLE and root_pat <= INJECTIVE:
                    self._try(i, sink, _injective_path)
                continue
            if self.find(i) == self.find(sink):
                continue
            if self.gpattern[sink] == TUPLE:
                continue
            if pat == OUT_ELEMWISE_FUSABLE:
                if phase == 0 and tpattern[i] == ELEMWISE:
                    self._try(i, sink, _elemwise_path)
            elif pat <= BROADCAST:
                if tpattern[i] <= INJECTIVE or tpattern[i] == COMM_REDUCE:
                    self._try(i, sink, _broadcast_path)
            elif pat == INJECTIVE or pat == TUPLE:
                if phase == 1:
                    self._try(i, sink, _injective_path)
            # COMM_REDUCE: never fused into a consumer

    def _try(self, src: int, sink: int, cond: Callable[[int, bool], bool]) -> None:
        """Fuse ``src`` into ``sink`` if the group stays within ``max_depth`` and every path
        from ``src`` to ``sink`` satisfies ``cond`` (TVM checks the size first, for every node;
        the order of these pure checks does not change the outcome)."""
        if self._fused_size(src, sink) <= self.max_depth and self._check_path(src, sink, cond):
            self._commit(src, sink)

    def _between(self, src: int, sink: int) -> list[int]:
        """Every node on a path from ``src`` to ``sink`` (``src`` included, ``sink`` not)."""
        outputs = self.g.outputs
        seen = {src}
        order = [src]
        stack = [src]
        while stack:
            n = stack.pop()
            for c, _ in outputs[n]:
                if c != sink and c not in seen:
                    seen.add(c)
                    order.append(c)
                    stack.append(c)
        return order

    def _check_path(self, src: int, sink: int, cond: Callable[[int, bool], bool]) -> bool:
        outputs = self.g.outputs
        seen: set[int] = set()
        stack = [c for c, _ in outputs[src]]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if not cond(self.gpattern[self.find(n)], n == sink):
                return False
            if n != sink:
                stack.extend(c for c, _ in outputs[n])
        return True

    def _fused_size(self, src: int, sink: int) -> int:
        """The size ``sink``'s group would reach by fusing ``src`` into it.

        Stops counting once the size exceeds ``max_depth``: every walk here and in
        :meth:`_check_path` then visits at most about ``max_depth`` nodes' edges, so
        the partition stays near-linear even when post-dominators are far away.
        """
        target = self.find(sink)
        total = self.size[target]
        counted = {target}
        outputs = self.g.outputs
        seen = {src}
        stack = [src]
        while stack:
            n = stack.pop()
            r = self.find(n)
            if r not in counted:
                counted.add(r)
                total += self.size[r]
                if total > self.max_depth:
                    return total
            for c, _ in outputs[n]:
                if c != sink and c not in seen:
                    seen.add(c)
                    stack.append(c)
        return total

    def _commit(self, src: int, sink: int) -> None:
        for n in self._between(src, sink):
            self._merge(n, sink)

    def _merge(self, child: int, parent: int) -> None:
        child = self.find(child)
        parent = self.find(parent)
        if child == parent:
            return
        self.parent[child] = parent
        self.size[parent] += self.size[child]
        if self.anchor[child]:
            self.anchor[parent] = True
            self.gpattern[parent] = max(self.gpattern[child], self.gpattern[parent])


def _elemwise_path(kind: int, is_sink: bool) -> bool:
    return kind <= BROADCAST


def _injective_path(kind: int, is_sink: bool) -> bool:
    return kind <= INJECTIVE


def _broadcast_path(kind: int, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= INJECTIVE or kind == COMM_REDUCE or kind == OUT_ELEMWISE_FUSABLE


# --- step 3b: data movement copied into its consumers ---------------------------------------------

def _copied_groups(g: _Graph, root: list[int], part: _Partitioner) -> dict[int, list[int]]:
    """The groups to copy into each of their consumers instead of running as kernels.

    A group of pure data movement (``split``, ``transpose``, ``reshape``..., projections:
    every member an ``INJECTIVE`` operator call or a projection) whose tuple result is read
    only by other fused groups of the same segment, each elementwise or injective, costs a
    kernel call and a copy of its input. Each consumer reads the input through its own copy
    of the group instead (index arithmetic inside the consumer's loop; nothing is computed
    twice but addresses). Our choice, not TVM's (an LSTM's gates ``split`` feeds two cell
    kernels, which TVM's FuseOps runs after a separate ``split`` kernel).

    Returns:
        ``{group root: its members}`` for the groups to copy.
    """
    members: dict[int, list[int]] = {}
    for i, r in enumerate(root):
        members.setdefault(r, []).append(i)
    out: dict[int, list[int]] = {}
    for r, ms in members.items():
        node = g.nodes[r]
        if g.extern[r] or type(node) is not Call or not _tensor_tuple(node.checked_type):
            continue
        if not all(g.pattern[m] == INJECTIVE and type(g.nodes[m]) in (Call, TupleGetItem)
                   for m in ms):
            continue
        consumers = {root[c] for m in ms for c, _ in g.outputs[m] if root[c] != r}
        if not consumers or any(
                g.extern[m] and m != r for m in ms) or not all(
                g.seg[c] == g.seg[r] and part.gpattern[part.find(c)] <= INJECTIVE
                and any(type(g.nodes[x]) is Call for x in members[c])
                and len(members[c]) + len(ms) <= part.max_depth for c in consumers):
            continue
        out[r] = ms
    return out


# --- step 4: the rewrite ------------------------------------------------------------------------

def _rewrite(fn: Function, g: _Graph, root: list[int],
             copies: dict[int, list[int]] | None = None) -> Expr:
    n = len(g.nodes)
    copies = copies or {}
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(root[i], []).append(i)
    # A copied group joins each consumer group (its nodes are evaluated there, once per
    # consumer); it has no call of its own.
    for r, ms in copies.items():
        for c in sorted({root[x] for m in ms for x, _ in g.outputs[m] if root[x] != r}):
            members[c] = sorted(set(members[c]) | set(ms))
        del members[r]
    # A group without an operator call (a lone tuple, a projection of a value computed
    # elsewhere) is not wrapped: its nodes stay as they are, each on its own.
    wrapped: set[int] = set()
    for r, ms in list(members.items()):
        if any(type(g.nodes[m]) is Call for m in ms):
            wrapped.add(r)
        elif len(ms) > 1:
            for m in ms:
                root[m] = m
                members[m] = [m]
    dropped: set[int] = set()  # ids of lets whose value moved into a later group
    for i in range(n):
        if (root[i] != i and root[i] in wrapped) or root[i] in copies:
            dropped.add(id(g.nodes[i]))

    return _Fuser(g, root, members, wrapped, dropped).mutate(fn)


class _Fuser(ExprMutator):
    """Children first: a group's root becomes the call of its primitive function; a let
    whose value moved into a later group is replaced by its body; primitive functions
    are kept as they are."""

    def __init__(self, g: _Graph, root: list[int], members: dict[int, list[int]],
                 wrapped: set[int], dropped: set[int]):
        self.g, self.root, self.members = g, root, members
        self.wrapped, self.dropped = wrapped, dropped

    def descend(self, node: Expr) -> bool:
        return not is_primitive(node)

    def done(self, node: Expr) -> Expr:
        new = self.rewritten(node)
        assert new is not None, "a group's inputs are rewritten before the group"
        return new

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        g = self.g
        gi = g.index.get(id(old))
        if gi is not None:
            # A member inside its group is built with the group (its own rebuild is unused).
            if gi == self.root[gi] and gi in self.wrapped:
                return _group_call(g, gi, self.members[gi], self.done)
            return new
        if isinstance(old, Let) and isinstance(new, Let) and id(old) in g.let_value \
                and id(old.value) in self.dropped:
            return new.body
        return new


def _group_call(g: _Graph, r: int, ms: list[int], done: Callable[[Expr], Expr]) -> Expr:
    """``(fn (%p0, ...) Primitive=1 { group })(inputs...)`` for the group rooted at ``r``."""
    inside = set(ms)
    # Inputs: every argument that is not a member of the group and not a constant.
    # In order of first use (members in topological order, each one's arguments in order),
    # as TVM's FuseOps makes them: the order follows the group's own structure, so the same
    # layer elsewhere in a model (a residual block's second instance) is the same function
    # up to its constants — one kernel code (issue 35's cold build compiles it once).
    inputs: dict[int, Expr] = {}
    for m in ms:
        for arg in _dataflow_args(g.nodes[m]):
            p = g.producer(arg)
            if (p >= 0 and p in inside) or type(arg) is Constant:
                continue
            inputs.setdefault(id(arg), arg)
    ordered = list(inputs.values())
    params: dict[int, Var] = {}
    args: list[Expr] = []
    for k, arg in enumerate(ordered):
        params[id(arg)] = Var(f"p{k}", arg.checked_type, span=arg.span)
        args.append(arg if type(arg) is Var else done(arg))
    members = [g.nodes[m] for m in ms]  # topological order: operands first

    def operand(arg: Expr) -> Expr:
        p = g.producer(arg)
        if p >= 0 and p in inside:
            return g.nodes[p]  # a let-bound alias of a member: the member's copy
        if type(arg) is Constant:
            return arg
        return params[id(arg)]

    built = dict(zip(ms, copy_subgraph(members, operand), strict=True))
    out = g.nodes[r]
    prim = Function(tuple(params[id(a)] for a in ordered), built[r], out.checked_type, (),
                    Attrs({"Primitive": 1}), span=out.span)
    return Call(prim, tuple(args), span=out.span)


def _dataflow_args(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Tuple):
        return node.fields
    assert isinstance(node, TupleGetItem)
    return (node.tuple_value,)
