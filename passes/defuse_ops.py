"""DefuseOps (``defuse_ops``): undo operator fusion — the inverse of FuseOps.

What it does (TVM's ``DefuseOps``), by name:

* **Defuse-Call** — a call of a fused function literal (``Primitive=1``) applied directly,
  ``(fn (%p1, ..., %pn, Primitive=1) { body })(a1, ..., an)`` — FuseOps' output — becomes
  ``let %p1 = a1; ...; let %pn = an; body`` with a fresh copy of the parameters and body
  (:func:`semantics.rewrite.fresh_copy`), so a group used twice gets distinct binders. The
  lets keep Semantics-Call's order: the arguments left to right, then the body.
* **Defuse-Literal** — any other fused function literal (let-bound in A-normal form, passed
  around) loses its ``Primitive`` attribute: it is an ordinary function, whose body the other
  passes and transformations may now enter.

Who needs it: transformations that are defined on ordinary programs and must not treat a
kernel as opaque — automatic differentiation (:mod:`ad.lift` runs it first, so ``grad`` of a
fused program, or a ``grad`` node inside one, works as on the unfused program), and a user
who wants to inspect or transform ``relay opt -O1`` output. The result computes the same
values (fusion only grouped operators).

Invariants: pure; one memoized post-order walk (:func:`semantics.visitor.post_order`, no
Python recursion), sharing kept; a program without fused functions comes back unchanged (the
same object). Not part of ``optimize``.
"""

from __future__ import annotations

from passes.fuse_ops import is_primitive
from passes.manager import register_pass
from semantics.expr import Attrs, Call, Expr, Function, Let
from semantics.module import IRModule
from semantics.rewrite import fresh_copy, map_functions
from semantics.visitor import ExprMutator, post_order

__all__ = ["defuse_ops", "defuse_expr"]


@register_pass("DefuseOps", "defuse_ops")
def defuse_ops(mod: IRModule) -> IRModule:
    """Replace every fused (``Primitive=1``) function by ordinary code (the inverse of
    FuseOps)."""
    return map_functions(mod, lambda name, fn: defuse_expr(fn))


def defuse_expr(expr: Expr) -> Expr:
    """``expr`` with its fused functions undone (see the module docstring); ``expr`` itself
    when it has none."""
    if not any(is_primitive(n) for n in post_order(expr)):
        return expr
    return _Defuser().mutate(expr)


class _Defuser(ExprMutator):
    """Bottom-up: a call of a fused literal becomes lets and its body; a fused literal that is
    not called becomes a plain function."""

    def visit_call(self, new: Call, old: Call) -> Expr:
        return _defuse_call(old, new) if is_primitive(old.op) else new

    def visit_function(self, new: Function, old: Function) -> Expr:
        return _plain(new) if is_primitive(old) else new


def _plain(fn: Function) -> Function:
    """``fn`` without its ``Primitive`` attribute. [Defuse-Literal]"""
    attrs = Attrs({k: v for k, v in fn.attrs.items() if k != "Primitive"})
    return Function(fn.params, fn.body, fn.ret_type, fn.type_params, attrs, span=fn.span)


def _defuse_call(old: Call, new: Expr) -> Expr:
    """``let p1 = a1; ...; body`` for a direct call of a fused literal. [Defuse-Call]"""
    assert isinstance(new, Call) and isinstance(old.op, Function)
    callee = new.op
    if not isinstance(callee, Function) or len(callee.params) != len(new.args):
        return new                                   # ill-formed: the type checker reports
    copy = fresh_copy(callee)
    assert isinstance(copy, Function)
    body = copy.body
    for param, arg in reversed(tuple(zip(copy.params, new.args))):
        body = Let(param, arg, body, span=new.span)
    return body
