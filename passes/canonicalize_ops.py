"""CanonicalizeOps (``canonicalize_ops``): rewrite ``nn.bias_add`` into broadcasting arithmetic.

Rewrite, by name:

* **Canon-BiasAdd** — ``nn.bias_add(data, bias, axis=a)`` with ``data`` of
  rank ``r`` becomes ``add(data, expand_dims(bias, axis=1, num_newaxis=k))``
  with ``k = r - a' - 1`` (``a'`` the normalized axis) — the 1-d bias gains
  ``k`` trailing unit axes so that numpy-style broadcasting lines it up with
  axis ``a'``; for ``k = 0`` (bias on the last axis) it is ``add(data, bias)``.
  Exact for every dtype: both forms add the same numbers.

After it, FoldScaleAxis and the fusion passes see one operator (``add``)
instead of two (TVM runs CanonicalizeOps for the same reason).

Limits: the rank of ``data`` must be known, so the pass type-checks the
module first (:func:`passes.common.typed_or_same`); a call whose argument
types are unknown (an ill-typed module) is left as it is.

Invariants: pure (a new module, the input untouched), one memoized walk
(:class:`semantics.rewrite.ScopedMutator`, no Python recursion); types and
values are preserved exactly.
"""

from __future__ import annotations

from passes.common import typed_or_same
from passes.manager import register_pass
from semantics import ops
from semantics.expr import Attrs, Call, Expr, Op
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator, map_functions
from semantics.types import TensorType

__all__ = ["canonicalize_ops", "expand_to_axis", "normalized_attrs"]


@register_pass("CanonicalizeOps", "canonicalize_ops", opt_level=3)
def canonicalize_ops(mod: IRModule) -> IRModule:
    """Rewrite nn.bias_add into add with an expand_dims'd bias."""
    typed = typed_or_same(mod)
    out = map_functions(typed, lambda name, fn: _Canonicalize().mutate(fn))
    return mod if out is typed else out


def normalized_attrs(call: Call) -> Attrs:
    """The attributes of an operator call with the defaults filled in."""
    assert isinstance(call.op, Op)
    return ops.get(call.op.name).normalize_attrs(call.attrs)


def expand_to_axis(vec: Expr, ndim: int, axis: int, span: object = None) -> Expr:
    """``vec`` (1-d) with trailing unit axes so that it broadcasts along ``axis`` of rank ``ndim``.

    Args:
        vec: a 1-d tensor expression.
        ndim: the rank of the tensor it will be combined with.
        axis: the (normalized, non-negative) axis of that tensor ``vec`` runs along.
        span: the span of the new node.
    Returns:
        ``expand_dims(vec, axis=1, num_newaxis=ndim - axis - 1)``, or ``vec`` when no axis
        is needed.
    """
    extra = ndim - axis - 1
    if extra <= 0:
        return vec
    return Call(Op("expand_dims"), (vec,), Attrs({"axis": 1, "num_newaxis": extra}),
                span=span)  # type: ignore[arg-type]


class _Canonicalize(ScopedMutator):
    # [Canon-BiasAdd]
    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call) and isinstance(old, Call)
        if type(new.op) is not Op or new.op.name != "nn.bias_add" or len(new.args) != 2:
            return new
        data_type = old.args[0].checked_type
        if not isinstance(data_type, TensorType) or data_type.ndim == 0:
            return new
        axis = int(normalized_attrs(new)["axis"])
        if axis < 0:
            axis += data_type.ndim
        if not 0 <= axis < data_type.ndim:
            return new
        bias = expand_to_axis(new.args[1], data_type.ndim, axis, new.span)
        return Call(Op("add"), (new.args[0], bias), span=new.span)
