"""ONNX operators whose results are ordered or sized by the data → Relay: ``TopK`` and
``NonZero``, written with the registry's existing operators.

``TopK`` ranks every element of a slice along the axis by pairwise comparison: the rank of
``x[i]`` is the number of elements that beat it (greater, for ``largest``) plus the equal
ones before it, so ranks are a permutation and ties keep index order, as ONNX requires. The
``r``-th output is the element of rank ``r``: its index is an ``argmax`` of ``rank == r``,
its value a ``max`` of the slice masked to it (exact: nothing is added or multiplied).
Memory is ``O(n²)`` per slice, for an axis of static extent ``n``.

``NonZero``'s result has a data-dependent length: ``count = sum(x != 0)``, then
``arange(count)`` (extent ``?``) gives the ranks ``j`` of the nonzero elements, and the
flat index of the ``j``-th one is the number of positions whose running count of nonzeros
is at most ``j``; the coordinates are that index divided by the row-major strides. Memory
is ``O(count · size)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const
from frontends.onnx.context import Context
from frontends.onnx.ops_gather import _scan_along
from frontends.onnx.ops_math import _req
from frontends.onnx.registry import converter
from frontends.onnx.shape_values import dims_of


def _lowest(dtype: str, largest: bool) -> Any:
    """The value a masked-out element takes so that ``max`` (``min``) never picks it."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return not largest
    if dt.kind == "f":
        return -np.inf if largest else np.inf
    info = np.iinfo(dt)
    return info.min if largest else info.max


def top_k(x: Value, k: int, axis: int, largest: bool) -> tuple[Value, Value]:
    """The ``k`` largest (smallest) elements along ``axis`` in order, and their int64 indices."""
    axis %= x.ndim
    n = x.shape[axis]
    if not isinstance(n, int):
        raise Unsupported(f"TopK along an axis of unknown extent {n}")
    if not 0 <= k <= n:
        raise Unsupported(f"TopK of k={k} along an axis of {n}")
    perm = [a for a in range(x.ndim) if a != axis] + [axis]
    back = tuple(int(p) for p in np.argsort(perm))
    xt = call("transpose", [x], axes=tuple(perm)) if axis != x.ndim - 1 else x
    xi = call("expand_dims", [xt], axis=-1)           # (..., n, 1): element i
    xj = call("expand_dims", [xt], axis=-2)           # (..., 1, n): element j
    beats = call("greater" if largest else "less", [xj, xi])
    before = const(np.tril(np.ones((n, n), bool), -1))   # j < i
    ties = call("logical_and", [call("equal", [xj, xi]), before])
    rank = call("sum", [call("cast", [call("logical_or", [beats, ties])], dtype="int64")],
                axis=(-1,))                             # (..., n)
    wanted = const(np.arange(k, dtype=np.int64).reshape(k, 1))
    hit = call("equal", [call("expand_dims", [rank], axis=-2), wanted])   # (..., k, n)
    idx = call("cast", [call("argmax", [call("cast", [hit], dtype="int32")], axis=(-1,))],
               dtype="int64")
    masked = call("where", [hit, xj, const(np.asarray(_lowest(x.dtype, True), x.dtype))])
    vals = call("max", [masked], axis=(-1,))
    if axis != x.ndim - 1:
        vals = call("transpose", [vals], axes=back)
        idx = call("transpose", [idx], axes=back)
    return vals, idx


@converter("TopK", attrs=("axis", "largest", "sorted", "k"))
def _topk(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if ctx.opset < 10:
        k = int(attrs["k"])
    else:
        ks = dims_of(ins[1] if len(ins) > 1 else None, "the TopK k")
        if len(ks) != 1 or not isinstance(ks[0], int):
            raise Unsupported(f"TopK k must be one static integer, got {ks}")
        k = ks[0]
    # ``sorted=0`` leaves the order unspecified: the sorted order is one of the allowed ones.
    vals, idx = top_k(x, k, int(attrs.get("axis", -1)), bool(attrs.get("largest", 1)))
    return [vals, idx]


@converter("NonZero")
def _nonzero(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    shape = x.static_shape()
    if not shape:
        raise Unsupported("NonZero of a scalar")
    flat = call("reshape", [x], newshape=(-1,))
    mask = flat if x.dtype == "bool" else call("not_equal", [flat, const(np.zeros((), x.dtype))])
    ones = call("cast", [mask], dtype="int64")
    count = call("sum", [ones], axis=None)
    ranks = call("arange", [const(np.int64(0)), count, const(np.int64(1))], fold=False,
                 dtype="int64")                                          # (?,)
    running = _scan_along(ones, 0, "add", 0, False, False)              # (size,)
    at_most = call("less_equal", [call("expand_dims", [running], axis=0),
                                  call("expand_dims", [ranks], axis=1)])  # (?, size)
    index = call("sum", [call("cast", [at_most], dtype="int64")], axis=(1,))
    coords = []
    for k, extent in enumerate(shape):
        stride = int(np.prod(shape[k + 1:], dtype=np.int64))
        c = call("floor_divide", [index, const(np.int64(stride))])
        coords.append(call("floor_mod", [c, const(np.int64(max(extent, 1)))]))
    return [call_tuple("stack", coords, axis=0)]
