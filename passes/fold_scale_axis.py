"""FoldScaleAxis (``fold_scale_axis``): fold per-channel constant scales into conv2d/dense weights.

A *scale* is a ``multiply`` by a finite float :class:`Constant` ``s`` whose
shape varies along one axis only — the channel axis of the tensor it scales
(every other dimension of ``s`` is 1, and it does not enlarge the tensor); a
scalar ``s`` counts too. ``v`` is ``s`` as a per-channel vector. Rewrites, by
name:

* **Fold-Backward** — ``multiply(E, s)`` where ``E`` is a *chain* ending in
  ``nn.conv2d(x, W)`` (``s`` on the output's ``C`` axis) or ``nn.dense(x, W)``
  (``s`` on the last axis) becomes the chain with ``W`` replaced by
  ``multiply(W, S)``: ``S`` is ``v`` laid along ``W``'s output-channel axis
  (``O`` of ``kernel_layout``; axis 0 of a dense weight). Output channel ``o``
  is ``sum(x * W[o])``, so scaling ``W[o]`` scales it, for any ``groups``.
  Between the multiply and the operator the chain may pass through
  ``add(E, b)`` / ``add(b, E)`` / ``subtract(E, b)`` with a bias ``b`` that
  does not enlarge ``E`` (``b`` becomes ``multiply(b, s)``:
  ``(E + b) s = E s + b s``) and through ``nn.relu`` — **only when every
  entry of ``v`` is positive** (``relu(y) s = relu(y s)`` needs ``s > 0``; a
  negative or mixed-sign scale stops the fold there and the multiply stays).
* **Fold-Forward** — ``nn.conv2d(F, W)`` / ``nn.dense(F, W)`` where ``F`` is
  ``multiply(x, s)`` (``s`` on the data's ``C`` axis, or the last axis for
  dense), possibly under ``nn.relu`` s (again only for a positive ``v``),
  becomes the operator applied to ``F`` without the multiply and to
  ``multiply(W, S)``: ``S`` scales the *input* channels of ``W`` —
  ``S[o, i] = v[g(o) * I + i]`` with ``I`` the input channels per group and
  ``g(o)`` the group of output channel ``o`` (so grouped and depthwise
  convolutions fold too); for dense ``S[u, k] = v[k]``.

TVM runs the backward direction first, then the forward one; so do we. When
the weight (or bias) is a constant — after :func:`passes.bind_params` — its
product with the scale is computed at compile time with the oracle's
``multiply`` (what FoldConstant would do); otherwise ``multiply(W, S)`` stays
for FoldConstant or run time. Each direction is repeated until nothing
changes, so stacked scales fold one after another.

Validity conditions (otherwise nothing happens): float dtypes (an integer
``x * s`` wraps in the narrow type before a widening conv, so moving it is not
exact); ``out_dtype`` empty or the data's dtype; every node between the scale
and the operator used exactly once (a shared intermediate would still need
the unscaled value: TVM gives up there too); static channel counts; the
program in graph form (a scale reached only through a ``let``-bound variable
is not followed).

Numerics: folding reassociates float products (``(x s) w`` versus
``x (w s)``): results agree within floating-point tolerance, not bitwise.

Invariants: pure; every walk iterative and memoized (no Python recursion);
well-typed in, well-typed out with the same type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from passes.canonicalize_ops import normalized_attrs
from passes.common import typed_or_same
from passes.manager import register_pass
from semantics import ops
from semantics.dtypes import is_float
from semantics.expr import Call, Constant, Expr, Function, Op, frozen_array
from semantics.module import IRModule
from semantics.ops.layouts import is_blocked
from semantics.shapes import as_int, is_concrete
from semantics.types import TensorType
from semantics.visitor import ExprMutator, count_uses

__all__ = ["fold_scale_axis"]

_ANCHORS = ("nn.conv2d", "nn.dense")


@register_pass("FoldScaleAxis", "fold_scale_axis", opt_level=3)
def fold_scale_axis(mod: IRModule) -> IRModule:
    """Fold constant per-channel scales into the weights of nn.conv2d / nn.dense."""
    current = mod
    for direction in (_backward, _forward):
        while True:
            typed = typed_or_same(current)
            changed = False
            out: dict[str, Function] = {}
            for name, fn in typed.functions.items():
                new = _rewrite(fn, direction)
                changed = changed or new is not fn
                out[name] = new
            if not changed:
                break
            current = typed.with_functions(out)
    return current


# --- helpers -------------------------------------------------------------------------------------

def _op_name(e: Expr) -> str | None:
    if isinstance(e, Call) and isinstance(e.op, Op):
        return e.op.name
    return None


def _tensor(e: Expr) -> TensorType | None:
    t = e.checked_type
    if isinstance(t, TensorType) and all(is_concrete(d) for d in t.shape):
        return t
    return None


def _shape(t: TensorType) -> tuple[int, ...]:
    return tuple(as_int(d) for d in t.shape)


def _fits_into(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """``small`` broadcasts against ``big`` without enlarging it."""
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(small, big[len(big) - len(small):], strict=True))


def _channel_vector(scale: Expr, target: TensorType, axis: int) -> np.ndarray | None:
    """The per-channel vector of a valid scale of ``target`` along ``axis``, else None."""
    if not isinstance(scale, Constant):
        return None
    data = scale.data
    shape = _shape(target)
    if data.dtype.name != target.dtype or not is_float(target.dtype):
        return None
    if not _fits_into(tuple(data.shape), shape) or not np.all(np.isfinite(data)):
        return None
    padded = data.reshape((1,) * (len(shape) - data.ndim) + tuple(data.shape))
    sizes: tuple[int, ...] = tuple(padded.shape)
    for i, size in enumerate(sizes):
        if i != axis and size != 1:
            return None
    vec = padded.reshape(-1)
    return np.broadcast_to(vec, (shape[axis],)).copy()


def _split_scale(mul: Expr) -> tuple[Expr, Expr] | None:
    """``(other, constant)`` of ``multiply(other, c)`` / ``multiply(c, other)``."""
    if _op_name(mul) != "multiply" or not isinstance(mul, Call) or len(mul.args) != 2:
        return None
    a, b = mul.args
    if type(b) is Constant:
        return a, b
    if type(a) is Constant:
        return b, a
    return None


def _anchor_info(call: Call) -> tuple[int, int, TensorType, TensorType, Any] | None:
    """For conv2d/dense: (output channel axis, data channel axis, data type, weight type,
    normalized attrs) when the call is foldable (float, no dtype change, static shapes)."""
    if len(call.args) != 2:
        return None
    data_t, weight_t, out_t = _tensor(call.args[0]), _tensor(call.args[1]), _tensor(call)
    if data_t is None or weight_t is None or out_t is None:
        return None
    if not is_float(data_t.dtype) or not data_t.dtype == weight_t.dtype == out_t.dtype:
        return None
    attrs = normalized_attrs(call)
    if _op_name(call) == "nn.dense":
        return out_t.ndim - 1, data_t.ndim - 1, data_t, weight_t, attrs
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    if is_blocked(out_layout + attrs["data_layout"] + attrs["kernel_layout"]):
        return None  # blocked layouts (NCHW16c): a channel is two axes, not folded
    return out_layout.index("C"), attrs["data_layout"].index("C"), data_t, weight_t, attrs


def _mul(a: Expr, b: Expr | np.ndarray, span: Any) -> Expr:
    """``multiply(a, b)``, computed now (the oracle's ``multiply``) when both are constants."""
    factor = b if isinstance(b, Expr) else Constant(b, span=span)
    if isinstance(a, Constant) and isinstance(factor, Constant):
        product = ops.get("multiply").reference(a.data, factor.data)
        return Constant(frozen_array(np.asarray(product)), span=span)
    return Call(Op("multiply"), (a, factor), span=span)


def _output_weight_scale(call: Call, weight_t: TensorType, attrs: Any,
                         vec: np.ndarray) -> np.ndarray:
    """``vec`` (per output channel) shaped to broadcast along the weight's output axis."""
    if _op_name(call) == "nn.dense":
        return vec.reshape(-1, 1)
    shape = [1] * weight_t.ndim
    shape[attrs["kernel_layout"].index("O")] = vec.size
    return vec.reshape(shape)


def _input_weight_scale(call: Call, weight_t: TensorType, attrs: Any,
                        vec: np.ndarray) -> np.ndarray | None:
    """``vec`` (per input channel) as a weight-shaped scale of the input-channel entries."""
    wshape = _shape(weight_t)
    if _op_name(call) == "nn.dense":
        return vec.reshape(1, -1) if vec.size == wshape[1] else None
    layout = attrs["kernel_layout"]
    out_c, in_per_group = wshape[layout.index("O")], wshape[layout.index("I")]
    groups = int(attrs["groups"])
    if out_c % groups or vec.size != in_per_group * groups:
        return None
    group_of = np.arange(out_c) // (out_c // groups)
    index = group_of[:, None] * in_per_group + np.arange(in_per_group)[None, :]
    oihw = vec[index].reshape(out_c, in_per_group, 1, 1)
    return np.ascontiguousarray(np.transpose(oihw, ["OIHW".index(c) for c in layout]))


# --- the two directions --------------------------------------------------------------------------

Rewrite = Callable[[Expr, Expr, Callable[[Expr], Expr], dict[int, int]], Expr | None]


def _rewrite(fn: Function, direction: Rewrite) -> Function:
    """Rebuild ``fn`` children first; ``direction(old, new, done, uses)`` may replace a call.

    ``old`` is the typed original node, ``new`` its rebuilt version, ``done(n)`` the rebuilt
    version of an original node already visited (any of ``old``'s descendants).
    """
    out = _Direction(direction, count_uses(fn)).mutate(fn)
    assert isinstance(out, Function)
    return out


class _Direction(ExprMutator):
    def __init__(self, direction: Rewrite, uses: dict[int, int]):
        self.direction = direction
        self.uses = uses

    def done(self, node: Expr) -> Expr:
        new = self.rewritten(node)
        assert new is not None, "a descendant of the current node is rewritten already"
        return new

    def visit_call(self, new: Call, old: Call) -> Expr:
        folded = self.direction(old, new, self.done, self.uses)
        return new if folded is None else folded


# [Fold-Backward]
def _backward(mul: Expr, new: Expr, done: Callable[[Expr], Expr], uses: dict[int, int]
              ) -> Expr | None:
    split = _split_scale(mul)
    if split is None:
        return None
    top, scale = split
    target = _tensor(top)
    if target is None:
        return None
    # Walk down the chain to the anchor; each step remembers how to rebuild its node.
    steps: list[Expr] = []
    node = top
    while True:
        if uses.get(id(node), 0) != 1:
            return None
        name = _op_name(node)
        if name in _ANCHORS:
            break
        if name == "nn.relu":
            steps.append(node)
            assert isinstance(node, Call)
            node = node.args[0]
        elif name in ("add", "subtract") and isinstance(node, Call) and len(node.args) == 2:
            steps.append(node)
            assert isinstance(node, Call)
            follow = _continuing_operand(node, target)
            if follow is None:
                return None
            node = follow
        else:
            return None
    assert isinstance(node, Call)
    info = _anchor_info(node)
    if info is None:
        return None
    out_axis, _, _, weight_t, attrs = info
    anchor_t = _tensor(node)
    if anchor_t is None or _shape(anchor_t) != _shape(target):
        return None
    vec = _channel_vector(scale, target, out_axis)
    if vec is None:
        return None
    if any(_op_name(s) == "nn.relu" for s in steps) and not np.all(vec > 0):
        return None  # relu commutes with a scale only when the scale is positive
    wscale = _output_weight_scale(node, weight_t, attrs, vec)
    new_anchor = done(node)
    assert isinstance(new_anchor, Call)
    result: Expr = Call(new_anchor.op, (new_anchor.args[0],
                                        _mul(new_anchor.args[1], wscale, mul.span)),
                        new_anchor.attrs, new_anchor.type_args, span=new_anchor.span)
    inner: Expr = node
    for step in reversed(steps):
        assert isinstance(step, Call)
        if _op_name(step) == "nn.relu":
            result = Call(step.op, (result,), step.attrs, span=step.span)
        else:
            i = 0 if step.args[0] is inner else 1
            bias = done(step.args[1 - i])
            scaled_bias = _mul(bias, scale, mul.span)
            args = (result, scaled_bias) if i == 0 else (scaled_bias, result)
            result = Call(step.op, args, step.attrs, span=step.span)
        inner = step
    return result


def _continuing_operand(node: Call, target: TensorType) -> Expr | None:
    """The operand of ``add``/``subtract`` the chain continues through (the other is a bias)."""
    shape = _shape(target)
    candidates = (0, 1) if _op_name(node) == "add" else (0,)
    for i in candidates:
        arg, bias = node.args[i], node.args[1 - i]
        arg_t, bias_t = _tensor(arg), _tensor(bias)
        if arg_t is None or bias_t is None or _shape(arg_t) != shape:
            continue
        if _op_name(arg) in (*_ANCHORS, "nn.relu", "add", "subtract") \
                and _fits_into(_shape(bias_t), shape):
            return arg
    return None


# [Fold-Forward]
def _forward(anchor: Expr, new: Expr, done: Callable[[Expr], Expr], uses: dict[int, int]
             ) -> Expr | None:
    if _op_name(anchor) not in _ANCHORS:
        return None
    assert isinstance(anchor, Call)
    info = _anchor_info(anchor)
    if info is None:
        return None
    _, data_axis, data_t, weight_t, attrs = info
    relus: list[Expr] = []
    node = anchor.args[0]
    while _op_name(node) == "nn.relu" and uses.get(id(node), 0) == 1:
        relus.append(node)
        assert isinstance(node, Call)
        node = node.args[0]
    split = _split_scale(node)
    if split is None or uses.get(id(node), 0) != 1:
        return None
    x, scale = split
    x_t = _tensor(x)
    if x_t is None or _shape(x_t) != _shape(data_t):
        return None
    vec = _channel_vector(scale, data_t, data_axis)
    if vec is None or (relus and not np.all(vec > 0)):
        return None
    wscale = _input_weight_scale(anchor, weight_t, attrs, vec)
    if wscale is None:
        return None
    data: Expr = done(x)
    for relu in reversed(relus):
        assert isinstance(relu, Call)
        data = Call(relu.op, (data,), relu.attrs, span=relu.span)
    new_anchor = new
    assert isinstance(new_anchor, Call)
    return Call(new_anchor.op, (data, _mul(new_anchor.args[1], wscale, node.span)),
                new_anchor.attrs, new_anchor.type_args, span=new_anchor.span)
