"""Where graph bindings go: use counts, the block tree and inline-depth cuts.

Part of the printer (:mod:`semantics.printer`, "Sharing (graph bindings)").
Before a unit prints, :meth:`SharingAnalysis._analyze` finds the non-leaf nodes
reachable along several paths, places each in the lowest common ancestor of
the blocks of its use sites, and cuts inline chains deeper than
:data:`INLINE_DEPTH` into graph bindings; all in linear, iterative passes
over the DAG.
"""

from __future__ import annotations

from semantics.expr import (
    Call,
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
)
from semantics.visitor import post_order

INLINE_DEPTH = 8
"""Inline expressions nest at most this many calls deep before being cut into graph bindings."""

LEAVES = (Var, GlobalVar, Op, Constructor, Constant)
LEAF_SET = frozenset(LEAVES)
_CUTTABLE_SET = frozenset((Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite, Grad))


class SharingAnalysis:
    """The sharing analysis of one unit (a mixin of :class:`~semantics.printing.exprs.PrintUnit`).

    :meth:`_analyze` fills the attributes below, which the unit initializes:
    ``bound`` (nodes printed as graph bindings: shared or cut), ``block_of``
    (each non-leaf node's block), ``own_block`` (the block of a ``let`` printed
    as its own block), ``opened`` (the blocks a function, ``if`` or ``match``
    opens), ``with_bindings`` (blocks that receive graph bindings) and
    ``referenced`` (variables that occur).
    """

    referenced: set[int]
    block_of: dict[int, int]
    own_block: dict[int, int]
    opened: dict[int, tuple[int, ...]]
    bound: set[int]
    with_bindings: set[int]
    mentions_memo: dict[int, dict[int, bool]]

    # --- analysis ---------------------------------------------------------------------------
    def _analyze(self, root: Expr) -> None:
        # 1. Non-leaf nodes in post-order (iterative, memoized), parent-edge counts, used vars.
        leaves = LEAF_SET
        referenced = self.referenced
        uses: dict[int, int] = {}
        order: list[Expr] = []
        if type(root) in leaves:
            if type(root) is Var:
                referenced.add(id(root))
            return
        seen: set[int] = set()
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            key = id(node)
            if key in seen:
                continue
            seen.add(key)
            stack.append((node, True))
            for kid in reversed(children(node)):
                cls = type(kid)
                if cls in leaves:
                    if cls is Var:
                        referenced.add(id(kid))
                    continue
                k = id(kid)
                uses[k] = uses.get(k, 0) + 1
                if k not in seen:
                    stack.append((kid, False))
        shared = {k for k, n in uses.items() if n > 1}
        # 2. The block tree, parents first: each node's block is the lowest common ancestor
        #    of the blocks of its use sites.
        parent = [-1]
        depth = [0]
        acc: dict[int, int] = {id(root): 0}
        position: dict[int, str] = {id(root): "stmt"}
        block_of, own_block, opened = self.block_of, self.own_block, self.opened

        def new_block(p: int) -> int:
            parent.append(p)
            depth.append(depth[p] + 1)
            return len(parent) - 1

        def edge(kid: Expr, block: int, kind: str) -> None:
            if type(kid) in leaves:
                return
            k = id(kid)
            a = acc.get(k)
            if a is None:
                acc[k] = block
                position[k] = kind
                return
            b = block
            while depth[a] > depth[b]:
                a = parent[a]
            while depth[b] > depth[a]:
                b = parent[b]
            while a != b:
                a, b = parent[a], parent[b]
            acc[k] = a

        for node in reversed(order):
            cls = type(node)
            key = id(node)
            b = acc[key]
            block_of[key] = b
            tb = b
            if cls is Let:
                if key in shared or position[key] != "stmt":
                    tb = new_block(b)
                    own_block[key] = tb
                edge(node.value, tb, "value")  # type: ignore[attr-defined]
                edge(node.body, tb, "stmt")  # type: ignore[attr-defined]
            elif cls is Call:
                edge(node.op, tb, "inline")  # type: ignore[attr-defined]
                for kid in node.args:  # type: ignore[attr-defined]
                    if type(kid) not in leaves:
                        edge(kid, tb, "inline")
            elif cls is Function:
                fb = new_block(tb)
                opened[key] = (fb,)
                edge(node.body, fb, "stmt")  # type: ignore[attr-defined]
            elif cls is If:
                edge(node.cond, tb, "inline")  # type: ignore[attr-defined]
                b1, b2 = new_block(tb), new_block(tb)
                opened[key] = (b1, b2)
                edge(node.true_branch, b1, "stmt")  # type: ignore[attr-defined]
                edge(node.false_branch, b2, "stmt")  # type: ignore[attr-defined]
            elif cls is Match:
                edge(node.data, tb, "inline")  # type: ignore[attr-defined]
                blocks = tuple(new_block(tb) for _ in node.clauses)  # type: ignore[attr-defined]
                opened[key] = blocks
                for clause, cb in zip(node.clauses, blocks):  # type: ignore[attr-defined]
                    edge(clause.rhs, cb, "stmt")
            else:
                for kid in children(node):
                    edge(kid, tb, "inline")
        # 3. Inline depth, children first: cut inline chains deeper than INLINE_DEPTH.
        height: dict[int, int] = {}
        cut: set[int] = set()
        cuttable = _CUTTABLE_SET
        for node in order:
            cls = type(node)
            key = id(node)
            if cls is Function or cls is Let:
                height[key] = 1
                continue
            if cls is If:
                kids: tuple[Expr, ...] = (node.cond,)  # type: ignore[attr-defined]
            elif cls is Match:
                kids = (node.data,)  # type: ignore[attr-defined]
            elif cls is Call:
                kids = node.args  # type: ignore[attr-defined]
                if type(node.op) not in leaves:  # type: ignore[attr-defined]
                    kids = (node.op, *kids)  # type: ignore[attr-defined]
            else:
                kids = children(node)
            h = 0
            for kid in kids:
                k = id(kid)
                if k in height and k not in shared and k not in cut and height[k] > h:
                    h = height[k]
            h += 1
            height[key] = h
            if h > INLINE_DEPTH and cls in cuttable and key not in shared and \
                    position.get(key) == "inline":
                cut.add(key)
        self.bound = shared | cut
        self.with_bindings = {block_of[k] for k in self.bound}

    def mentions(self, root: Expr, var: Var) -> bool:
        """Whether ``var`` occurs in ``root`` (memoized per variable, iterative)."""
        memo = self.mentions_memo.setdefault(id(var), {})
        if id(root) in memo:
            return memo[id(root)]
        for node in post_order(root, lambda n: id(n) not in memo):
            if id(node) in memo:
                continue
            if node is var:
                memo[id(node)] = True
            elif type(node) in LEAVES:
                memo[id(node)] = False
            else:
                memo[id(node)] = any(memo[id(k)] for k in children(node))
        return memo[id(root)]
