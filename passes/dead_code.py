"""DeadCodeElimination (``dead_code_elimination``): drop unused pure bindings and definitions.

What it does:

* **Drop-Let** — ``let x = v; body`` becomes ``body`` when ``x`` is not used
  in ``body`` (nor, for a recursive let, anywhere but inside ``v`` itself)
  and ``v`` is *removable*: evaluating it writes no reference and cannot
  fail or diverge (:mod:`passes.purity`). Sequencing ``v; body`` is the same
  let with an unused binder. Reading a reference and allocating one whose
  reference is unused are unobservable, so they go; ``ref_write``, calls of
  closures or globals that may write, fail or recurse, integer division and
  ``match?`` stay.
* **Drop-Global** — definitions not reachable from ``@main`` go (a module
  without ``main`` keeps every definition).

How: reference counting over the DAG. Every node gets the number of parent
edges pointing at it (a variable's count is its number of uses); the nodes
are then rebuilt children-first, so every let inside a let's body is decided
before the let itself. Dropping a binding *releases* its value: the counts of
its children fall, and a child whose count reaches zero releases its own
children — bindings that only the dead value used then die in turn when their
let is reached. One walk, linear in the DAG (a recursive let costs one extra
walk of its value).

Invariants and limits: effects keep their order (nothing moves); the pass
never duplicates a node; shared nodes are counted once per parent edge.
Unreachable code inside expressions (``if (True) ...``) is constant
folding's job, not this pass's.
"""

from __future__ import annotations

from passes.common import reachable_globals, typed_or_same
from passes.manager import register_pass
from passes.purity import EffectAnalysis, removable
from semantics.expr import Expr, Function, Let, Var, children
from semantics.module import IRModule
from semantics.visitor import ExprMutator, count_uses, post_order

__all__ = ["dead_code_elimination"]


@register_pass("DeadCodeElimination", "dead_code_elimination", opt_level=1)
def dead_code_elimination(mod: IRModule) -> IRModule:
    """Remove unused pure let bindings and definitions unreachable from main."""
    typed = typed_or_same(mod)
    analysis = EffectAnalysis(typed)
    reachable = set(reachable_globals(typed))
    kept = {name: _eliminate(fn, analysis) for name, fn in typed.functions.items()
            if name in reachable}
    if all(kept[n] is typed.functions[n] for n in kept) and len(kept) == len(typed):
        return mod
    return typed.with_functions(kept)


def _eliminate(fn: Function, analysis: EffectAnalysis) -> Function:
    out = _Eliminator(fn, analysis).mutate(fn)
    assert isinstance(out, Function)
    return out


class _Eliminator(ExprMutator):
    """Children first: a dead let is replaced by its rewritten body and releases its value."""

    def __init__(self, fn: Function, analysis: EffectAnalysis):
        self.analysis = analysis
        self.counts = count_uses(fn)
        self.dropped: set[int] = set()  # lets already dropped (their value was released then)

    def release(self, root: Expr) -> None:
        counts = self.counts
        stack = [root]
        while stack:
            node = stack.pop()
            left = counts[id(node)] - 1
            counts[id(node)] = left
            if left == 0 and type(node) is not Var:
                if isinstance(node, Let) and id(node) in self.dropped:
                    stack.append(node.body)
                else:
                    stack.extend(children(node))

    def visit_let(self, new: Let, old: Let) -> Expr:
        if not _is_dead(old, self.counts, self.analysis):
            return new
        self.release(old.value)
        self.dropped.add(id(old))
        return new.body


def _is_dead(let: Let, counts: dict[int, int], analysis: EffectAnalysis) -> bool:
    if not removable(analysis.flags(let.value)):
        return False
    uses = counts.get(id(let.var), 0)
    if uses and type(let.value) is Function:
        inner = _uses_only_within(let.value, let.var, counts)
        if inner is None:
            return False
        uses -= inner
    return uses == 0


def _uses_only_within(value: Expr, var: Var, counts: dict[int, int]) -> int | None:
    """Uses of ``var`` inside ``value``; None when part of ``value`` is also shared outside it."""
    nodes = post_order(value)
    edges = count_uses(value, order=nodes)
    for node in nodes:
        if node is not value and type(node) is not Var and edges.get(id(node), 0) != counts.get(
                id(node), 0):
            return None  # a node of the value is referenced from elsewhere too
    return edges.get(id(var), 0)
