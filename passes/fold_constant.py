"""FoldConstant (``fold_constant``): evaluate closed, pure sub-expressions with the oracle.

Rewrites (children first, so folding cascades bottom-up):

* **Fold-Call** — an operator call whose arguments are all constants (or
  that has none: ``zeros(shape=[2], dtype="float32")``, whose value is fixed
  by its attributes) becomes the constant the oracle computes (``Semantics-Call-Op`` run at compile
  time), with exactly the operator's result dtype; an operator returning a
  tuple (``split``) becomes a tuple of constants.
* **Fold-Shape** — ``shape_of(e)`` of a statically shaped, removable ``e``
  becomes the shape constant (in the call's ``dtype``).
* **Fold-Project** — ``(e0, ..., en).i`` becomes ``ei`` when every other
  field is removable (nothing observable is dropped).
* **Fold-If** — ``if (c) {a} else {b}`` with a constant ``c`` becomes the
  chosen branch.
* **Fold-Let** — ``let x = c; body`` with a constant ``c`` becomes ``body``
  with ``x`` replaced by ``c`` (TVM's FoldConstant does the same), so
  folding continues through let-bound constants.

Never folded: anything reading, writing or allocating references, anything
depending on a variable (a parameter or a non-constant binding), calls of
closures or globals, and calls whose evaluation fails (``1 / 0`` stays, and
fails at run time as the oracle says) or whose result is larger than both
:data:`MAX_FOLDED_ELEMENTS` elements and the largest constant argument (the
program would grow; a result whose typed shape is already too large is not
even computed). A weight quantized, transformed elementwise or re-laid out
therefore folds whatever its size.

Invariants: the result is equivalent to the input under the oracle
(differential tests), folded constants keep the dtype the type rules give.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passes.common import typed_or_same
from passes.manager import register_pass
from passes.purity import EffectAnalysis, removable
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    frozen_array,
)
from semantics.module import IRModule
from semantics.ops.bound import BoundOp
from semantics.shapes import as_int, is_concrete
from semantics.types import TensorType, TupleType
from semantics.visitor import ExprMutator, post_order, rebound_vars

__all__ = ["MAX_FOLDED_ELEMENTS", "fold_constant"]

MAX_FOLDED_ELEMENTS = 1 << 20


@register_pass("FoldConstant", "fold_constant", opt_level=2)
def fold_constant(mod: IRModule) -> IRModule:
    """Evaluate closed pure sub-expressions (operators on constants) at compile time."""
    typed = typed_or_same(mod)
    analysis = EffectAnalysis(typed)
    folded = {name: _Folder(analysis).run(fn) for name, fn in typed.functions.items()}
    if all(folded[n] is typed.functions[n] for n in folded):
        return mod
    return typed.with_functions(folded)


class _Folder(ExprMutator):
    """Folds bottom-up; ``lets`` maps a let-bound variable to its let (reused binders excluded)."""

    def __init__(self, analysis: EffectAnalysis):
        self.analysis = analysis
        self.lets: dict[int, Let] = {}

    def run(self, fn: Function) -> Function:
        order = post_order(fn)
        # A Var object bound twice (a reused binder) is never replaced.
        rebound = rebound_vars(fn, order=order)
        self.lets = {id(node.var): node for node in order
                     if type(node) is Let and id(node.var) not in rebound}
        out = self.mutate(fn)
        assert isinstance(out, Function)
        return out

    def visit_var(self, new: Expr, old: Var) -> Expr:
        return self._let_bound_constant(old)

    def visit_let(self, new: Let, old: Let) -> Expr:
        return self._fold_let(new, old)

    def visit_call(self, new: Call, old: Call) -> Expr:
        return self._fold_call(new, old)

    def visit_tuple_getitem(self, new: TupleGetItem, old: TupleGetItem) -> Expr:
        return self._fold_project(new)

    def visit_if(self, new: If, old: If) -> Expr:
        cond = new.cond
        if type(cond) is Constant and cond.data.ndim == 0:
            return new.true_branch if bool(cond.data) else new.false_branch
        return new

    # [Fold-Let]: the value of a let is rewritten before any node of its body (post-order
    # visits (value, body) in that order), so a use of the variable already sees the constant.
    def _let_bound_constant(self, var: Var) -> Expr:
        let = self.lets.get(id(var))
        if let is None:
            return var
        value = self.rewritten(let.value)
        return value if type(value) is Constant else var

    def _fold_let(self, let: Let, old: Let) -> Expr:
        if self.lets.get(id(old.var)) is old and type(let.value) is Constant:
            return let.body
        return let

    # [Fold-Call], [Fold-Shape]
    def _fold_call(self, call: Call, old: Call) -> Expr:
        op = call.op
        if type(op) is not Op:
            return call
        if op.name == "shape_of":
            return self._fold_shape_of(call, old)
        if not all(type(a) is Constant for a in call.args):
            return call  # (no arguments at all is "all constants": zeros(shape=[2]))
        limit = _limit(call)
        if _too_big(old.checked_type, limit):
            return call  # never computed: zeros(shape=[100000, 100000]) would take 40 GB
        result = _evaluate(call, limit)
        return call if result is None else result

    def _fold_shape_of(self, call: Call, old: Call) -> Expr:
        if len(old.args) != 1:
            return call
        arg_type = old.args[0].checked_type
        if not isinstance(arg_type, TensorType) or not all(is_concrete(d) for d in arg_type.shape):
            return call
        if not removable(self.analysis.flags(old.args[0])):
            return call
        dtype = str(call.attrs.get("dtype", "int32") or "int32")
        return Constant(np.array([as_int(d) for d in arg_type.shape], dtype=dtype), span=call.span)

    # [Fold-Project]
    def _fold_project(self, item: TupleGetItem) -> Expr:
        tup = item.tuple_value
        if type(tup) is not Tuple or not 0 <= item.index < len(tup.fields):
            return item
        for i, field in enumerate(tup.fields):
            if i != item.index and not removable(self.analysis.flags(field)):
                return item
        return tup.fields[item.index]


def _limit(call: Call) -> int:
    """The largest result (in elements) folding ``call`` may make: :data:`MAX_FOLDED_ELEMENTS`,
    or the size of its largest constant argument when that is larger — a result no larger
    than a constant already in the program does not grow it beyond what is there (a weight
    transformed elementwise, quantized or re-laid out folds whatever its size), while a
    broadcast or a creation from small constants stays bounded."""
    sizes = [a.data.size for a in call.args if isinstance(a, Constant)]
    return max([MAX_FOLDED_ELEMENTS, *sizes])


def _too_big(ty: Any, limit: int = MAX_FOLDED_ELEMENTS) -> bool:
    """True when the call's (typed) result has a known shape beyond ``limit`` elements."""
    for t in (ty.fields if isinstance(ty, TupleType) else (ty,)):
        if isinstance(t, TensorType) and all(is_concrete(d) for d in t.shape):
            if int(np.prod([as_int(d) for d in t.shape], dtype=object)) > limit:
                return True
    return False


def _evaluate(call: Call, limit: int = MAX_FOLDED_ELEMENTS) -> Expr | None:
    """The constant value of an operator call on constants, or None if it fails / is too big.

    This is Semantics-Call-Op at compile time: the shared operator call object (the
    oracle's own) applied to the constants with the normalized attributes.
    """
    assert isinstance(call.op, Op)
    value = BoundOp.attempt_call(call.op.name, call.attrs,
                                 [a.data for a in call.args if isinstance(a, Constant)])
    return None if value is None else _as_constant(value, call, limit)


def _as_constant(value: Any, call: Call, limit: int) -> Expr | None:
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.size > limit:
            return None
        return Constant(frozen_array(value), span=call.span)
    if isinstance(value, tuple):
        fields = [_as_constant(v, call, limit) for v in value]
        if any(f is None for f in fields):
            return None
        return Tuple(tuple(f for f in fields if f is not None), span=call.span)
    return None
