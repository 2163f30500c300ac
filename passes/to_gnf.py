"""ToGraphNormalForm (``to_gnf``): turn ``let`` bindings back into graph sharing.

What it does: ``let %x = v; body`` becomes ``body`` with every use of ``%x``
replaced by the (rewritten) node ``v`` itself — one node referenced from
each use site, a graph binding (docs/architecture.md#text). Under Semantics-Shared
that node is evaluated once per activation, at its *first use*, instead of
at the ``let``; so a binding is converted only when that move cannot be
observed. Exactly these lets become graph nodes:

* the variable is used at least once (an unused binding would vanish with
  its value: that is dead-code elimination's decision, not this pass's);
* every use is in the same function body as the ``let`` (a use inside a
  nested function literal would evaluate ``v`` once per call of that
  function — a fresh allocation, or repeated work — instead of once);
* the value is not recursive (a function literal mentioning its own
  variable stays a ``let``);
* the variable's type annotation is not needed: the lets are first all
  converted; if the result no longer type-checks to the same function types
  (``let %d: Box[int32] = Nil`` — the annotation fixed a type argument; a
  ``?`` dimension annotated on purpose), the conversion is redone
  keeping every annotated ``let`` (``to_anf`` leaves its own lets
  unannotated, so the round trip is unaffected);
* evaluating ``v`` reads no reference, writes none and cannot fail or
  diverge (:mod:`passes.purity`); it may *allocate*: ``let %r = ref(0)`` used
  twice becomes one shared ``ref(0)`` node, still one allocation per
  activation (memoized at its first use), and allocating later is not
  observable (the initial value is pure, so it is the same).

Everything else stays a ``let``: reads (``ref_read`` could see a later
write), writes, integer division and other failable operators, calls of
closures or globals that may do any of these, ``match?``, unused and
recursive bindings. A ``let`` whose value is a variable or a constant
disappears (its uses refer to that atom). ``to_gnf(to_anf(p))`` therefore
means what ``p`` means; it is ``p`` again up to the lets that had to stay.

How: one linear walk with :class:`semantics.rewrite.ScopedMutator` (values
are rewritten before the bodies that use them; each converted variable's
uses become the rewritten value node, so sharing is by identity and a
60-step doubling chain in A-normal form becomes a 60-node DAG), after one
walk deciding which lets convert (uses per function body, by identity).
A function that binds some variable object at two sites is first given
unique binders with :func:`semantics.rewrite.fresh_copy` so that
substituted values cannot be captured.

Invariants: the input is never mutated; a program with no convertible
``let`` is returned as the very same object (so the pass is idempotent).
"""

from __future__ import annotations

from passes.common import typed_or_same
from passes.manager import register_pass
from passes.purity import Effect, EffectAnalysis
from semantics import types_equal
from semantics.errors import RelayError
from semantics.expr import Expr, Function, Let, Match, Var, children
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator, fresh_copy
from semantics.visitor import binders, pre_order

__all__ = ["to_gnf"]

_CONVERTIBLE = ~Effect.ALLOCATES & Effect.ALL  # any of these flags keeps the let


@register_pass("ToGraphNormalForm", "to_gnf", opt_level=None)
def to_gnf(mod: IRModule) -> IRModule:
    """Replace pure ``let`` bindings by graph sharing (the inverse of ``to_anf``)."""
    if not any(_has_let(fn) for fn in mod.functions.values()):
        return mod
    typed = typed_or_same(mod)
    analysis = EffectAnalysis(typed)
    well_typed = all(fn.checked_type is not None for fn in typed.functions.values())
    for keep_annotated in (False, True):
        dropped: list[bool] = []  # set when an annotated let is converted
        out = {name: _convert(fn, analysis, keep_annotated, dropped)
               for name, fn in typed.functions.items()}
        if all(out[n] is typed.functions[n] for n in out):
            return mod
        result = typed.with_functions(out)
        if keep_annotated or not well_typed or not dropped or _same_types(result, typed):
            return result
    raise AssertionError("unreachable")


def _same_types(mod: IRModule, typed: IRModule) -> bool:
    """Whether ``mod`` checks with every function's type unchanged (dropped annotations)."""
    from typechecker import infer

    try:
        out = infer(mod)
    except RelayError:
        return False
    assert isinstance(out, IRModule)
    for name, fn in out.functions.items():
        before = typed[name].checked_type
        if fn.checked_type is None or before is None or not types_equal(fn.checked_type, before):
            return False
    return True


def _has_let(fn: Function) -> bool:
    """Whether ``fn`` contains a ``let``."""
    return any(type(node) is Let for node in pre_order(fn))


def _convert(fn: Function, analysis: EffectAnalysis, keep_annotated: bool,
             dropped: list[bool]) -> Function:
    lets = _convertible(fn, analysis, keep_annotated)
    if lets is None:  # a variable bound at two sites: give every binder its own object
        copy = fresh_copy(fn)
        assert isinstance(copy, Function)
        fn = copy
        analysis = EffectAnalysis(analysis.mod)
        lets = _convertible(fn, analysis, keep_annotated)
        assert lets is not None
    if not lets:
        return fn
    if any(let.var.type_annotation is not None for let in lets.values()):
        dropped.append(True)
    out = _Inline(lets).mutate(fn)
    assert isinstance(out, Function)
    return out


def _convertible(fn: Function, analysis: EffectAnalysis,
                 keep_annotated: bool) -> dict[int, Let] | None:
    """The lets of ``fn`` that become graph nodes, by the id of their variable.

    None when some variable object is bound at two sites (substitution could capture).
    A recursive ``let`` needs no test of its own: its variable is used inside the function
    literal, a function body other than the ``let`` 's.
    """
    # Which function body (activation) each let and each variable use belongs to. A node
    # reached from two bodies (shared across a function boundary) is visited in each.
    let_body: dict[int, int] = {}
    lets: dict[int, Let] = {}
    uses: dict[int, int] = {}  # variable -> the body using it (-1: several)
    bound: set[int] = set()
    binding_sites: set[int] = set()
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Expr, int]] = [(fn, 0)]
    while stack:
        node, owner = stack.pop()
        key = (id(node), owner)
        if key in seen:
            continue
        seen.add(key)
        t = type(node)
        if t is Var:
            if uses.setdefault(id(node), owner) != owner:
                uses[id(node)] = -1
            continue
        if t is Let or t is Function or t is Match:
            if id(node) not in binding_sites:
                binding_sites.add(id(node))
                for v in binders(node):
                    if id(v) in bound:
                        return None
                    bound.add(id(v))
        if isinstance(node, Function):
            stack.append((node.body, id(node)))
            continue
        if isinstance(node, Let):
            vid = id(node.var)
            if let_body.get(vid, owner) != owner:
                let_body[vid] = -1  # the same let in two bodies: left alone
            else:
                let_body[vid] = owner
            lets[vid] = node
        for kid in children(node):
            stack.append((kid, owner))
    chosen: dict[int, Let] = {}
    for vid, let in lets.items():
        owner = let_body[vid]
        if owner == -1 or uses.get(vid) != owner:
            continue
        if keep_annotated and let.var.type_annotation is not None:
            continue
        if analysis.flags(let.value) & _CONVERTIBLE:
            continue
        chosen[vid] = let
    return chosen


class _Inline(ScopedMutator):
    """Drops the chosen lets; each use of their variable becomes the rewritten value."""

    def __init__(self, lets: dict[int, Let]):
        self.lets = {id(let) for let in lets.values()}
        self.value_of_var = {vid: id(let.value) for vid, let in lets.items()}
        self.wanted = set(self.value_of_var.values())
        self.values: dict[int, Expr] = {}

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        if id(old) in self.wanted:
            self.values[id(old)] = new
        return new

    def visit_var(self, new: Expr, old: Var) -> Expr:
        target = self.value_of_var.get(id(old))
        if target is not None:
            new = self.values[target]
        return self.visit_default(new, old)

    def visit_let(self, new: Let, old: Let) -> Expr:
        if id(old) in self.lets:
            return self.visit_default(new.body, old)
        return self.visit_default(new, old)
