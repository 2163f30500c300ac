"""Inline (``inline``): replace calls of functions marked ``Inline=1`` by their bodies.

What it does (TVM's ``Inline``, with let-bound functions too):

* **Inline-Global** — ``@g(a1, ..., an)``, where ``@g`` is marked ``Inline=1``
  and is not recursive (no cycle through ``@g`` in the call graph), becomes
  ``let %p1 = a1; ...; let %pn = an; body`` with a *fresh copy* of ``@g``'s
  parameters and body (:func:`semantics.rewrite.fresh_copy`): the same
  function inlined twice gets distinct binders.
* **Inline-Local** — the same for a call of a variable let-bound to a function
  literal marked ``Inline=1`` (``let %f = fn (%x) Inline=1 { ... }``) that is
  not recursive (its body does not mention ``%f``), and for a function literal
  marked ``Inline=1`` applied directly.

The let-bindings keep the evaluation order of ``Semantics-Call`` exactly:
arguments left to right, then the body. Inlining is transitive: globals are
processed callees first, so an inlined body has its own inlinable calls
already inlined; recursion is never unfolded, so the pass terminates.
:func:`mark_inline` sets the attribute (on every non-recursive global, or on
the named ones) — the way to ask for inlining from Python.

Not inlined: polymorphic functions (type parameters) and functions whose
types mention shape variables — their annotations would have to be
instantiated at the call site; calls with the wrong number of arguments (left
for the type checker to report). Inlined globals stay in the module (dead-code
elimination drops the ones nothing calls any more). The parameter lets keep
the parameters' annotations.
"""

from __future__ import annotations

from typing import Any

from passes.manager import register_pass
from passes.purity import callees_first as _callees_first
from semantics.analysis import free_shape_vars, global_vars
from semantics.expr import Attrs, Call, Expr, Function, GlobalVar, Let, Var
from semantics.graphs import strongly_connected_components
from semantics.module import IRModule
from semantics.rewrite import fresh_copy
from semantics.visitor import ExprMutator, post_order

__all__ = ["inline", "mark_inline", "recursive_globals"]


@register_pass("Inline", "inline", opt_level=1)
def inline(mod: IRModule) -> IRModule:
    """Inline calls of non-recursive functions marked Inline=1 (globals and let-bound)."""
    recursive = recursive_globals(mod)
    inlinable = {name for name, fn in mod.functions.items()
                 if _marked(fn) and name not in recursive and _can_inline(fn)}
    done: dict[str, Function] = {}
    for name in _callees_first(mod):
        done[name] = _Inliner(done, inlinable).run(mod.functions[name])
    if all(done[n] is mod.functions[n] for n in done):
        return mod
    return mod.with_functions({name: done[name] for name in mod.functions})


def mark_inline(mod: IRModule, names: list[str] | None = None) -> IRModule:
    """``mod`` with ``Inline=1`` set on the named globals (default: every non-recursive one)."""
    recursive = recursive_globals(mod)
    chosen = names if names is not None else [n for n in mod.functions if n not in recursive]
    funcs = dict(mod.functions)
    for name in chosen:
        fn = funcs[name]
        attrs = dict(fn.attrs)
        attrs["Inline"] = 1
        funcs[name] = Function(fn.params, fn.body, fn.ret_type, fn.type_params, Attrs(attrs),
                               span=fn.span)
    return mod.with_functions(funcs)


def _marked(fn: Function) -> bool:
    value: Any = fn.attrs.get("Inline") if fn.attrs else None
    return value in (1, True, "1")


def _can_inline(fn: Function) -> bool:
    return not fn.type_params and not free_shape_vars(fn)


class _Inliner(ExprMutator):
    """Inlines marked calls bottom-up; ``local`` holds the let-bound Inline=1 functions."""

    def __init__(self, globals_done: dict[str, Function], inlinable: set[str]):
        self.globals_done = globals_done
        self.inlinable = inlinable
        self.local: dict[int, Let] = {}  # let-bound Inline=1 functions, by variable

    def run(self, fn: Function) -> Function:
        self.local = {}
        for node in post_order(fn):
            if type(node) is Let and type(node.value) is Function:
                value = node.value
                if _marked(value) and _can_inline(value) and not _mentions(value, node.var):
                    self.local[id(node.var)] = node
        out = self.mutate(fn)
        assert isinstance(out, Function)
        return out

    def visit_call(self, new: Call, old: Call) -> Expr:
        callee = new.op
        target: Expr | None = None
        if type(callee) is GlobalVar and callee.name_hint in self.inlinable:
            target = self.globals_done.get(callee.name_hint)
        elif type(callee) is Var and id(callee) in self.local:
            target = self.rewritten(self.local[id(callee)].value)
        elif type(callee) is Function and _marked(callee) and _can_inline(callee):
            target = callee
        if not isinstance(target, Function) or len(target.params) != len(new.args):
            return new
        return _instantiate(target, new)


def _instantiate(fn: Function, call: Call) -> Expr:
    """``let p1 = a1; ...; let pn = an; body`` with fresh binders (Semantics-Call's order)."""
    copy = fresh_copy(fn)
    assert isinstance(copy, Function)
    body = copy.body
    for param, arg in reversed(tuple(zip(copy.params, call.args))):
        body = Let(param, arg, body, span=call.span)
    return body


def _mentions(expr: Expr, var: Var) -> bool:
    return any(node is var for node in post_order(expr))


def recursive_globals(mod: IRModule) -> set[str]:
    """The globals on a cycle of the call graph (a component of several, or a self-call)."""
    calls = {name: [g.name_hint for g in global_vars(fn) if g.name_hint in mod.functions]
             for name, fn in mod.functions.items()}
    out: set[str] = set()
    for component in strongly_connected_components(mod.functions, calls):
        if len(component) > 1 or component[0] in calls[component[0]]:
            out.update(component)
    return out
