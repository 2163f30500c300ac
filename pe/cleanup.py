"""Dead-code elimination after partial evaluation: dead references and single-use bindings.

The partial evaluator keeps every residual effect where it happened and gives
static values residual bindings it may never use (paper §4.3: "the
reconstructed program contains all original expressions ... Afterwards, we
separately apply DCE"). :func:`clean` crunches that code back down by running
three rewrites to a fixed point:

* **Drop-Let / Drop-Global** — :func:`passes.dead_code_elimination`: unused
  pure bindings (reads of references and unused allocations included) and
  unreachable globals go.
* **Drop-Dead-Ref** (:func:`eliminate_dead_refs`) — a reference that never
  escapes and is never read is unobservable: ``let %r = ref(v)`` whose
  variable is used only as the target of ``ref_write``\\ s (not read, not
  passed anywhere, not written into anything) is removed with all its writes
  (each becomes ``()``), provided the allocated and written values are
  themselves removable (in the partial evaluator's output they are atoms).
* **Inline-Once** (:func:`inline_single_use`) — ``let %x = v; body`` where
  ``v`` has no effect at all (no reference access, cannot fail; not a
  function), ``%x`` carries no type annotation (the partial evaluator
  annotates constructor values whose type the context does not fix) and is
  used exactly once, outside any function literal
  nested in ``body``, becomes ``body`` with ``v`` in place of the use. This
  undoes A-normal form where it carries no information, which is how the
  paper's Fig. 5 reads after DCE (``(%d, (ones_like(%d),))``). Moving a pure,
  non-failing computation into a branch or past effects changes nothing
  observable; it is never moved into a function body (that could repeat it).

Each rewrite walks the DAG iteratively (no recursion on program depth) and
returns the very same module when it changes nothing, so the fixed point is
detected by identity; it is reached within one round per reference chain and
the loop is bounded by :data:`MAX_ROUNDS`.
"""

from __future__ import annotations

from collections.abc import Callable

from passes import dead_code_elimination
from passes.common import typed_or_same
from passes.purity import Effect, EffectAnalysis, removable
from semantics.expr import (
    Expr,
    Function,
    Let,
    RefCreate,
    RefWrite,
    Tuple,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.visitor import ExprMutator, count_uses, post_order, rebound_vars

__all__ = ["MAX_ROUNDS", "clean", "eliminate_dead_refs", "inline_single_use"]

MAX_ROUNDS = 64


def clean(mod: IRModule) -> IRModule:
    """DCE, dead-reference elimination and single-use inlining, to a fixed point.

    Args:
        mod: a module (typically the partial evaluator's output).
    Returns:
        An equivalent module (``mod`` itself when nothing was removed).
    """
    for _ in range(MAX_ROUNDS):
        typed = typed_or_same(mod)  # one inference per round: the effect analysis uses types
        out = dead_code_elimination(typed)
        out = eliminate_dead_refs(out)
        out = inline_single_use(out)
        if out is typed:
            break
        mod = out
    return mod


def _rewrite_functions(mod: IRModule, rewrite: Callable[[Function, EffectAnalysis], Function]
                       ) -> IRModule:
    # Types are not re-inferred here: the nodes a rewrite keeps keep their checked types,
    # and the effect analysis is conservative where a type is missing.
    analysis = EffectAnalysis(mod)
    new = {name: rewrite(fn, analysis) for name, fn in mod.functions.items()}
    if all(new[n] is mod.functions[n] for n in new):
        return mod
    return mod.with_functions(new)


def eliminate_dead_refs(mod: IRModule) -> IRModule:
    """Remove references that are only ever written (Drop-Dead-Ref, see the module docstring)."""
    return _rewrite_functions(mod, _dead_refs)


def _dead_refs(fn: Function, analysis: EffectAnalysis) -> Function:
    order = post_order(fn)
    uses = count_uses(fn, order=order)
    write_targets: dict[int, int] = {}
    for node in order:
        if type(node) is RefWrite and type(node.ref) is Var and node.value is not node.ref:
            if removable(analysis.flags(node.value)):
                write_targets[id(node.ref)] = write_targets.get(id(node.ref), 0) + 1
    rebound = rebound_vars(fn, order=order)
    dead: set[int] = set()
    for node in order:
        if type(node) is Let and type(node.value) is RefCreate and id(node.var) not in rebound:
            k = id(node.var)
            if uses.get(k, 0) == write_targets.get(k, 0) and \
                    removable(analysis.flags(node.value.value)):
                dead.add(k)
    if not dead:
        return fn
    out = _DropDeadRefs(dead).mutate(fn)
    assert isinstance(out, Function)
    return out


class _DropDeadRefs(ExprMutator):
    """Drops the lets of the ``dead`` references; their writes become ``()``."""

    def __init__(self, dead: set[int]):
        self.dead = dead

    def visit_ref_write(self, new: RefWrite, old: RefWrite) -> Expr:
        return Tuple((), span=old.span) if id(old.ref) in self.dead else new

    def visit_let(self, new: Let, old: Let) -> Expr:
        return new.body if id(old.var) in self.dead else new


def inline_single_use(mod: IRModule) -> IRModule:
    """Substitute pure single-use let bindings into their use (Inline-Once)."""
    return _rewrite_functions(mod, _inline_once)


def _inline_once(fn: Function, analysis: EffectAnalysis) -> Function:
    order = post_order(fn)
    uses = count_uses(fn, order=order)
    # The function-nesting level of every node (first occurrence), top-down on a stack.
    level: dict[int, int] = {}
    use_level: dict[int, int] = {}
    stack: list[tuple[Expr, int]] = [(fn, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is Var:
            use_level.setdefault(id(node), depth)
            continue
        if id(node) in level:
            continue
        level[id(node)] = depth
        inner = depth + 1 if type(node) is Function else depth
        stack.extend((kid, inner) for kid in children(node))
    rebound = rebound_vars(fn, order=order)
    chosen: dict[int, Let] = {}
    for node in order:
        if type(node) is not Let:
            continue
        k = id(node.var)
        value = node.value
        if (k not in rebound and uses.get(k, 0) == 1 and type(value) is not Function
                and node.var.type_annotation is None
                and analysis.flags(value) == Effect.NONE
                and use_level.get(k) == level.get(id(node))):
            chosen[k] = node
    if not chosen:
        return fn
    out = _InlineChosen(chosen).mutate(fn)
    assert isinstance(out, Function)
    return out


class _InlineChosen(ExprMutator):
    """Replaces the use of each ``chosen`` let's variable by the let's rewritten value."""

    def __init__(self, chosen: dict[int, Let]):
        self.chosen = chosen

    def visit_var(self, new: Expr, old: Var) -> Expr:
        let = self.chosen.get(id(old))
        if let is None:
            return new
        value = self.rewritten(let.value)
        assert value is not None  # a let's value is walked before its body
        return value

    def visit_let(self, new: Let, old: Let) -> Expr:
        return new.body if id(old.var) in self.chosen else new
