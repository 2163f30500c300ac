"""ONNX element gathers, the losses built on them, and scans → Relay: ``GatherElements``,
``NegativeLogLikelihoodLoss``, ``SoftmaxCrossEntropyLoss``, ``ReverseSequence``,
``CumSum``/``CumProd``, ``Compress``.

``GatherElements`` is a ``take`` from the flattened data at static row-major offsets plus
the run-time index times the axis stride. The index is first checked through
``take(arange(n), index, mode="fast")`` (negative indices wrapped once, as ONNX allows):
an index out of range is a run-time error, as the ONNX spec says, never a read of another
row. The losses follow the spec: ignored targets contribute nothing and weigh 0, and
``mean`` divides by the sum of the weights of the targets not ignored.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const, static_ints
from frontends.onnx.builder import checked_index as _checked_index
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req, scalar
from frontends.onnx.registry import converter


def gather_elements(data: Value, indices: Value, axis: int) -> Value:
    """``out[p] = data[p with p[axis] = indices[p]]`` (``indices`` of ``data``'s rank)."""
    shape = data.static_shape()
    ishape = indices.static_shape()
    if len(shape) != len(ishape):
        raise Unsupported(f"GatherElements indices of rank {len(ishape)} for data of rank "
                          f"{len(shape)}")
    axis %= len(shape)
    if any(i > d for k, (i, d) in enumerate(zip(ishape, shape)) if k != axis):
        raise Unsupported(f"GatherElements indices {ishape} larger than data {shape}")
    strides = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
    offset = np.zeros(ishape, np.int64)
    for k in range(len(shape)):
        if k != axis:
            grid = np.arange(ishape[k], dtype=np.int64) * strides[k]
            offset = offset + grid.reshape([-1 if j == k else 1 for j in range(len(shape))])
    idx = _checked_index(indices, shape[axis])
    flat = call("add", [call("multiply", [idx, const(np.int64(strides[axis]))]), const(offset)])
    return call("take", [call("reshape", [data], newshape=(-1,)), flat], axis=0, mode="fast")


@converter("GatherElements", attrs=("axis",))
def _gather_elements(ctx: Context, node: Any, ins: list[Value | None],
                     attrs: dict[str, Any]) -> list[Value]:
    return [gather_elements(_req(ins, 0), _req(ins, 1), int(attrs.get("axis", 0)))]


def _reduction(attrs: dict[str, Any]) -> str:
    r = attrs.get("reduction", b"mean")
    r = r.decode() if isinstance(r, bytes) else str(r)
    if r not in ("none", "sum", "mean"):
        raise Unsupported(f"reduction {r!r}")
    return r


def nll_loss(x: Value, target: Value, weight: Value | None, reduction: str,
             ignore_index: int | None) -> Value:
    """The negative log-likelihood loss of log-probabilities ``x`` (N, C, d...) at the
    class indices ``target`` (N, d...), per the ONNX spec."""
    if x.ndim < 2 or target.ndim != x.ndim - 1:
        raise Unsupported(f"NegativeLogLikelihoodLoss of input rank {x.ndim} and target "
                          f"rank {target.ndim}")
    c = x.static_shape()[1]
    t = call("cast", [target], dtype="int64")
    keep = None
    if ignore_index is not None:
        keep = call("not_equal", [t, const(np.int64(ignore_index))])
        t = call("where", [keep, t, const(np.int64(0))])
    picked = call("squeeze", [gather_elements(x, call("expand_dims", [t], axis=1), 1)],
                  axis=(1,))
    if weight is not None:
        w = call("take", [weight, _checked_index(t, c)], axis=0, mode="fast")
    else:
        _checked_index(t, c)   # the index check alone folds away; gather_elements checks
        w = call("ones_like", [picked])
    if keep is not None:
        w = call("where", [keep, w, scalar(0, w)])
    loss = call("negative", [call("multiply", [picked, w])])
    if reduction == "none":
        return loss
    total = call("sum", [loss], axis=None)
    if reduction == "sum":
        return total
    return call("divide", [total, call("sum", [w], axis=None)])


def _ignore_index(attrs: dict[str, Any]) -> int | None:
    return int(attrs["ignore_index"]) if "ignore_index" in attrs else None


@converter("NegativeLogLikelihoodLoss", attrs=("ignore_index", "reduction"))
def _nll(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    weight = ins[2] if len(ins) > 2 else None
    return [nll_loss(_req(ins, 0), _req(ins, 1), weight, _reduction(attrs),
                     _ignore_index(attrs))]


@converter("SoftmaxCrossEntropyLoss", attrs=("ignore_index", "reduction"))
def _sce(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    """``NegativeLogLikelihoodLoss(log_softmax(scores, axis=1), labels, weights)``; the
    optional second output is the log-probabilities."""
    scores = _req(ins, 0)
    log_prob = call("nn.log_softmax", [scores], axis=1)
    weight = ins[2] if len(ins) > 2 else None
    loss = nll_loss(log_prob, _req(ins, 1), weight, _reduction(attrs), _ignore_index(attrs))
    return [loss, log_prob]


def _scan_along(x: Value, axis: int, op: str, identity: float, exclusive: bool,
                reverse: bool) -> Value:
    """Inclusive (or exclusive) prefix ``op`` along ``axis``: ``log2(n)`` steps of ``x op
    (x shifted by k)`` (Hillis–Steele), the shift filled with ``op``'s identity. Integers
    are exact (wrapping arithmetic is associative); floats are the same sums and products
    in another order (rounding may differ in the last bits)."""
    shape = x.static_shape()
    n = shape[axis]

    def shifted(v: Value, k: int) -> Value:
        fill_shape = list(shape)
        fill_shape[axis] = min(k, n)
        fill = const(np.full(fill_shape, identity, dtype=x.dtype))
        if k >= n:
            return fill
        end = list(shape)
        end[axis] = n - k
        head = call("strided_slice", [v], begin=(0,) * len(shape), end=tuple(end),
                    strides=(1,) * len(shape))
        return call_tuple("concatenate", [fill, head], axis=axis)

    if reverse:
        x = call("reverse", [x], axis=axis)
    if exclusive and n:
        x = shifted(x, 1)
    k = 1
    while k < n:
        x = call(op, [x, shifted(x, k)])
        k *= 2
    if reverse:
        x = call("reverse", [x], axis=axis)
    return x


@converter("CumSum", "CumProd", attrs=("exclusive", "reverse"))
def _cumulative(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if x.ndim == 0:
        raise Unsupported(f"{node.op_type} of a scalar")
    axis = static_ints(ins[1], f"the {node.op_type} axis")[0] % x.ndim
    op, identity = ("add", 0) if node.op_type == "CumSum" else ("multiply", 1)
    return [_scan_along(x, axis, op, identity, bool(attrs.get("exclusive", 0)),
                        bool(attrs.get("reverse", 0)))]


@converter("ReverseSequence", attrs=("batch_axis", "time_axis"))
def _reverse_sequence(ctx: Context, node: Any, ins: list[Value | None],
                      attrs: dict[str, Any]) -> list[Value]:
    """Each batch entry's first ``sequence_lens[b]`` time steps reversed, the rest kept: a
    gather along the time axis by a static index table (the lengths must be static)."""
    x = _req(ins, 0)
    lens = static_ints(ins[1], "the ReverseSequence sequence_lens")
    shape = x.static_shape()
    b_axis, t_axis = int(attrs.get("batch_axis", 1)), int(attrs.get("time_axis", 0))
    steps = shape[t_axis]
    if len(lens) != shape[b_axis] or any(not 0 <= n <= steps for n in lens):
        raise Unsupported(f"sequence_lens {lens} for batch {shape[b_axis]} and {steps} steps")
    table = np.empty((steps, len(lens)), np.int64)
    for b, n in enumerate(lens):
        table[:, b] = np.concatenate([np.arange(n - 1, -1, -1), np.arange(n, steps)])
    order = [t_axis, b_axis] + [k for k in range(x.ndim) if k not in (t_axis, b_axis)]
    view = table.reshape(table.shape + (1,) * (x.ndim - 2))
    idx = np.broadcast_to(np.transpose(view, np.argsort(order)), shape)
    return [gather_elements(x, const(np.ascontiguousarray(idx)), t_axis)]


@converter("Compress", attrs=("axis",))
def _compress(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    """The slices along ``axis`` (of the flattened input without one) where the condition
    holds: a ``take`` at the condition's true positions, which must be static (the result's
    length depends on them)."""
    x = _req(ins, 0)
    cond = ins[1].const if len(ins) > 1 and ins[1] is not None else None
    if cond is None:
        raise Unsupported("the Compress condition must be known at import time (the result's "
                          "shape depends on it)")
    keep = np.flatnonzero(np.asarray(cond).reshape(-1).astype(bool)).astype(np.int64)
    if "axis" not in attrs:
        x = call("reshape", [x], newshape=(-1,))
        axis = 0
    else:
        axis = int(attrs["axis"]) % x.ndim
    if np.asarray(cond).size > x.static_shape()[axis]:
        raise Unsupported("a Compress condition longer than the axis")
    return [call("take", [x, const(keep)], axis=axis, mode="fast")]
