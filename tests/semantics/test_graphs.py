"""Strongly connected components (Tarjan, iterative): checked against reachability."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semantics.graphs import strongly_connected_components


def _reach(edges: dict[int, list[int]], start: int) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        for w in edges.get(stack.pop(), []):
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


graphs = st.integers(1, 12).flatmap(lambda n: st.dictionaries(
    st.integers(0, n - 1), st.lists(st.integers(0, n - 1), max_size=4), max_size=n).map(
        lambda e: (n, e)))


@given(graphs)
def test_components_are_exactly_the_mutually_reachable_sets_callees_first(graph):
    n, edges = graph
    comps = strongly_connected_components(range(n), edges)
    assert sorted(x for c in comps for x in c) == list(range(n))
    where = {x: k for k, c in enumerate(comps) for x in c}
    reach = {v: _reach(edges, v) for v in range(n)}
    for v in range(n):
        for w in range(n):
            mutual = w in reach[v] and v in reach[w]
            assert mutual == (where[v] == where[w])
            if w in reach[v] and not mutual:
                assert where[w] < where[v]  # callees first
    for c in comps:
        assert c == sorted(c)  # members in the given order


def test_a_long_chain_needs_no_recursion():
    n = 50_000
    comps = strongly_connected_components(range(n), {i: [i + 1] for i in range(n - 1)})
    assert comps[0] == [n - 1] and comps[-1] == [0]
    ring = strongly_connected_components(range(n), {i: [(i + 1) % n] for i in range(n)})
    assert len(ring) == 1
