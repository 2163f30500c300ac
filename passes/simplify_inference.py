"""SimplifyInference (``simplify_inference``): inference-time batch_norm and dropout as arithmetic.

Rewrites, by name (``bn`` is ``nn.batch_norm(x, gamma, beta, mean, var,
axis=a, epsilon=e, center=c, scale=s)`` with ``x`` of rank ``r``):

* **Simp-BatchNorm** — ``bn.0`` becomes the operator's own arithmetic,
  ``(x - M) / STD * G + B`` in ``x``'s dtype, where ``std = sqrt(var + e)`` and
  ``M``/``STD``/``G``/``B`` are ``mean``/``std``/``gamma``/``beta`` given
  ``r - a - 1`` trailing unit axes (:func:`passes.canonicalize_ops.expand_to_axis`)
  so they broadcast along axis ``a``; ``* G`` is absent when ``s`` is false,
  ``+ B`` when ``c`` is false. ``std`` only involves the statistics: once they
  are constants (after :func:`passes.bind_params`) FoldConstant computes it at
  compile time, leaving a subtract, a divide, a multiply and an add per element
  (fused into the producer's kernel).
* **Simp-BatchNorm-Scale** — when ``var`` is a constant (after
  :func:`passes.bind_params`) and ``sqrt(var + e)`` is finite and non-zero in every
  channel, ``bn.0`` becomes ``x * S + T`` instead, with ``S = gamma / std`` (``1 / std``
  when ``s`` is false) and ``T = -mean * S`` (``+ beta`` when ``c`` is true): one
  multiply and one add per element, and a per-channel scale FoldScaleAxis folds into a
  preceding convolution's weights (and quantization into its integer arithmetic).
* **Simp-Stats** — ``bn.1`` and ``bn.2`` become ``mean`` and ``var``: at
  inference the statistics pass through (the operator's semantics).
* **Simp-Dropout** — ``nn.dropout(x).0`` becomes ``x`` (dropout is the identity
  at inference).

Where the call is: a projection of the call itself (graph form, TVM's case), or
of a variable bound once by ``let v = bn(...)`` whose arguments are all
variables or constants (A-normal form); the rewritten projection then refers to
those same arguments, which are in scope there. The original call stays where
it was (it may have other uses); DeadCodeElimination drops it when unused.

Numerics: in the general form each step is the reference's step (RULES.md §5, ``(x - mean) /
sqrt(var + epsilon) * gamma + beta``, in the same order and dtype), so the result
is the oracle's — also where the standard deviation is zero (``var + epsilon ==
0`` gives ±inf, or NaN for ``x == mean``). TVM's rewrite (and ours before) folds
the statistics into one scale and shift, ``x * S + T`` with ``S = gamma / std``
and ``T = beta - mean * S``; that rounds differently, and a zero ``std`` makes
``S`` infinite and ``T`` NaN for a zero mean, so every output of the channel is
NaN where the oracle gives ±inf. That is why the scale form is taken only when every
standard deviation is known to be finite and non-zero: there it agrees with the oracle up
to rounding (the differential tests compare -O3 with tolerances).

Limits: needs the rank of ``x`` (the module is type-checked first with
:func:`passes.common.typed_or_same`; untyped calls are left alone). TVM's
layer/group/instance norm rewrites are absent because those operators are not
in our registry.

Invariants: pure, one memoized walk (:class:`semantics.rewrite.ScopedMutator`,
no Python recursion), types preserved (``bn.0`` and the arithmetic have the
same tensor type).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passes.canonicalize_ops import expand_to_axis, normalized_attrs
from passes.common import typed_or_same
from passes.manager import register_pass
from semantics.expr import Call, Constant, Expr, Let, Op, TupleGetItem, Var
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator, map_functions
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["simplify_inference"]


@register_pass("SimplifyInference", "simplify_inference", opt_level=3)
def simplify_inference(mod: IRModule) -> IRModule:
    """Rewrite inference-mode nn.batch_norm into scale/shift arithmetic and nn.dropout away."""
    typed = typed_or_same(mod)
    out = map_functions(typed, lambda name, fn: _Simplify(fn).mutate(fn))
    return mod if out is typed else out


def _call_of(e: Expr | None, names: tuple[str, ...]) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


class _Simplify(ScopedMutator):
    def __init__(self, fn: Expr):
        # Let-bound batch_norm / dropout calls whose variable is bound exactly once and whose
        # arguments are atoms (their uses can be referred to anywhere in the let's body).
        bound: dict[int, Call | None] = {}
        for node in post_order(fn):
            if isinstance(node, Let):
                var_id = id(node.var)
                value = node.value
                ok = isinstance(value, Call) and _call_of(value, (
                    "nn.batch_norm", "nn.dropout")) and all(
                    type(a) in (Var, Constant) for a in value.args)
                bound[var_id] = value if ok and isinstance(value, Call) \
                    and var_id not in bound else None
        self.bound = bound

    def visit_tuple_getitem(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, TupleGetItem) and isinstance(old, TupleGetItem)
        call: Expr | None = new.tuple_value
        if type(call) is Var:
            call = self.bound.get(id(call))
        if call is None or not _call_of(call, ("nn.batch_norm", "nn.dropout")):
            return new
        assert isinstance(call, Call)
        if call.op.name == "nn.dropout":  # type: ignore[attr-defined]
            # [Simp-Dropout]
            return call.args[0] if new.index == 0 and len(call.args) == 1 else new
        if len(call.args) != 5:
            return new
        if new.index in (1, 2):
            return call.args[new.index + 2]  # [Simp-Stats]
        if new.index != 0:
            return new
        out_type = old.checked_type
        if not isinstance(out_type, TensorType) or out_type.ndim == 0:
            return new
        return _batch_norm_arithmetic(call, out_type, new)


# [Simp-BatchNorm]
def _batch_norm_arithmetic(call: Call, data_type: TensorType, site: Expr) -> Expr:
    attrs = normalized_attrs(call)
    ndim = data_type.ndim
    axis = int(attrs["axis"])
    axis = axis + ndim if axis < 0 else axis
    if not 0 <= axis < ndim:
        return site
    dtype = data_type.dtype
    span = site.span
    data, gamma, beta, mean, var = call.args

    def op(name: str, *args: Expr) -> Expr:
        return Call(Op(name), args, span=span)

    eps = Constant(np.asarray(attrs["epsilon"], dtype=dtype), span=span)
    std = op("sqrt", op("add", var, eps))

    def per_channel(stat: Expr) -> Expr:
        return expand_to_axis(stat, ndim, axis, span)

    if _positive_constant_std(var, attrs["epsilon"], dtype):
        # [Simp-BatchNorm-Scale]: x * S + T, S and T folded from the statistics
        if attrs["scale"]:
            scale = op("divide", gamma, std)
        else:
            scale = op("divide", Constant(np.asarray(1, dtype=dtype), span=span), std)
        shift = op("multiply", op("negative", mean), scale)
        if attrs["center"]:
            shift = op("add", shift, beta)
        return op("add", op("multiply", data, per_channel(scale)), per_channel(shift))
    out = op("divide", op("subtract", data, per_channel(mean)), per_channel(std))
    if attrs["scale"]:
        out = op("multiply", out, per_channel(gamma))
    if attrs["center"]:
        out = op("add", out, per_channel(beta))
    return out


def _positive_constant_std(var: Expr, epsilon: Any, dtype: str) -> bool:
    """Whether ``sqrt(var + epsilon)`` is known at compile time to be finite and non-zero in
    every channel (``var`` a constant, as after ``bind_params``): then the scale-and-shift
    form is exact up to rounding, and FoldScaleAxis can fold it into a convolution."""
    if type(var) is not Constant:
        return False
    with np.errstate(all="ignore"):
        std = np.sqrt(np.asarray(var.data, dtype=dtype) + np.asarray(epsilon, dtype=dtype))
    return bool(np.all(np.isfinite(std)) and np.all(std > 0))
