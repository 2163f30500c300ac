"""Graph algorithms over names (the call graph of a module's globals).

* :func:`strongly_connected_components` — Tarjan's algorithm on an explicit
  stack (call graphs of thousands of globals never reach Python's recursion
  limit); components come callees first (reverse topological order), each
  listed in the nodes' given order.

Used by the type checker (globals are generalized one component at a time)
and by the passes (inlining never unfolds a recursive component).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

__all__ = ["strongly_connected_components"]

N = TypeVar("N", bound=Hashable)


def strongly_connected_components(nodes: Iterable[N], edges: Mapping[N, Sequence[N]]
                                  ) -> list[list[N]]:
    """The strongly connected components of a directed graph, callees first.

    Args:
        nodes: every node, in the order components list their members.
        edges: each node's successors (missing key: none; successors that are
            not nodes are ignored).
    Returns:
        Components in reverse topological order: a component comes after every
        component it has an edge to.
    """
    order = list(nodes)
    rank = {n: k for k, n in enumerate(order)}
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    out: list[list[N]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        work: list[tuple[N, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = [w for w in edges.get(v, ()) if w in rank]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component: list[N] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                out.append(sorted(component, key=rank.__getitem__))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out
