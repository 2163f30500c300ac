"""ONNX ``GatherND``, ``ScatterND``, ``ScatterElements`` and ``Scatter`` as compositions of
registry operators (the registry has no gather/scatter operator of these shapes).

Each turns its index tuples into *flat* positions in the data with static row-major strides:
an index is first checked through ``take(arange(n), i, mode="fast")`` (negatives wrapped
once, as ONNX allows), so an index out of range is a run-time error, never a read or write
of another element. Then:

* ``GatherND`` (``batch_dims`` too) is one ``take`` of the flat positions from the data
  reshaped to ``(positions, *rest)``;
* the scatters compare the ``M`` flat positions of the updates with every position of the
  data, ``equal(f[:, None], arange(N)[None, :])`` (``O(M·N)`` booleans), and, per data
  position, take the (last) update written there (``argmax`` of the matches, a ``take``:
  exact for every dtype) or, for ``reduction`` ``add``/``mul``/``max``/``min``, combine the
  data with the ``sum``/``prod``/``max``/``min`` of its updates. ``ScatterElements``'
  flat positions are those of ``GatherElements`` (the index along ``axis``, the element's own
  position along the other axes).

The data and indices must have static shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, checked_index, const, required
from frontends.onnx.registry import converter


def _strides(dims: tuple[int, ...]) -> list[int]:
    return [int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(len(dims))]


def _nd_positions(indices: Value, dims: tuple[int, ...]) -> Value:
    """The flat positions (row-major in ``dims``) of the index tuples in ``indices``' last
    axis (``len(dims)`` long), of shape ``indices.shape[:-1]``."""
    strides = _strides(dims)
    flat: Value | None = None
    for j, (n, s) in enumerate(zip(dims, strides)):
        i = checked_index(call("take", [indices, const(np.int64(j))], axis=indices.ndim - 1),
                           n)
        term = call("multiply", [i, const(np.int64(s))])
        flat = term if flat is None else call("add", [flat, term])
    assert flat is not None
    return flat


def _last_dim(indices: Value, what: str) -> int:
    shape = indices.static_shape()
    if not shape:
        raise Unsupported(f"{what} indices must have rank at least 1")
    return shape[-1]


@converter("GatherND", attrs=("batch_dims",))
def _gather_nd(ctx: Any, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    data, indices = required(ins, 0), required(ins, 1)
    shape, ishape = data.static_shape(), indices.static_shape()
    b = int(attrs.get("batch_dims", 0))
    k = _last_dim(indices, "GatherND")
    if b + k > len(shape) or shape[:b] != ishape[:b]:
        raise Unsupported(f"GatherND indices {ishape} (batch_dims {b}) do not fit data {shape}")
    flat = _nd_positions(indices, shape[b:b + k])
    if b:
        inner = int(np.prod(shape[b:b + k], dtype=np.int64))
        batch = np.arange(int(np.prod(shape[:b], dtype=np.int64)), dtype=np.int64) * inner
        batch = batch.reshape(shape[:b] + (1,) * (len(ishape) - 1 - b))
        flat = call("add", [flat, const(batch)])
    rows = call("reshape", [data], newshape=(-1,) + shape[b + k:])
    return [call("take", [rows, flat], axis=0, mode="fast")]


def _reduction(attrs: dict[str, Any]) -> str:
    r = attrs.get("reduction", b"none")
    r = r.decode() if isinstance(r, bytes) else str(r)
    if r not in ("none", "add", "mul", "max", "min"):
        raise Unsupported(f"reduction {r!r} is not supported")
    return r


def _extreme(dtype: str, low: bool) -> Any:
    if dtype.startswith("float"):
        return -np.inf if low else np.inf
    info = np.iinfo(np.dtype(dtype))
    return info.min if low else info.max


def scatter_flat(rows: Value, flat: Value, updates: Value, reduction: str) -> Value:
    """``rows`` (``(N, *tail)``) with the ``M`` ``updates`` (``(M, *tail)``) written (or
    combined by ``reduction``) at the flat positions ``flat`` (``(M,)``)."""
    n = rows.static_shape()[0]
    m = flat.static_shape()[0]
    tail = rows.shape[1:]
    ones = (1,) * len(tail)
    hits = call("equal", [call("reshape", [flat], newshape=(m, 1)),
                          const(np.arange(n, dtype=np.int64).reshape(1, n))])
    hit = call("reshape", [call("any", [hits], axis=(0,))], newshape=(n,) + ones)
    if reduction == "none":
        last = call("argmax", [call("cast", [hits], dtype="int32")], axis=(0,),
                    select_last_index=True)
        return call("where", [hit, call("take", [updates, last], axis=0, mode="fast"), rows])
    if rows.dtype == "bool":
        raise Unsupported(f"reduction {reduction!r} of bool tensors is not supported")
    mask = call("reshape", [hits], newshape=(m, n) + ones)
    spread = call("reshape", [updates], newshape=(m, 1) + tuple(tail))
    neutral = {"add": 0, "mul": 1, "max": _extreme(rows.dtype, True),
               "min": _extreme(rows.dtype, False)}[reduction]
    picked = call("where", [mask, spread, const(np.asarray(neutral, dtype=rows.dtype))])
    if reduction == "add":
        return call("add", [rows, call("sum", [picked], axis=(0,))])
    if reduction == "mul":
        return call("multiply", [rows, call("prod", [picked], axis=(0,))])
    op = "maximum" if reduction == "max" else "minimum"
    combined = call(op, [rows, call(reduction, [picked], axis=(0,))])
    return call("where", [hit, combined, rows])


@converter("ScatterND", attrs=("reduction",))
def _scatter_nd(ctx: Any, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    data, indices, updates = required(ins, 0), required(ins, 1), required(ins, 2)
    shape, ishape = data.static_shape(), indices.static_shape()
    k = _last_dim(indices, "ScatterND")
    if k > len(shape) or updates.static_shape() != ishape[:-1] + shape[k:]:
        raise Unsupported(f"ScatterND updates {updates.shape} do not fit indices {ishape} "
                          f"and data {shape}")
    m = int(np.prod(ishape[:-1], dtype=np.int64))
    flat = call("reshape", [_nd_positions(indices, shape[:k])], newshape=(m,))
    rows = call("reshape", [data], newshape=(-1,) + shape[k:])
    upd = call("reshape", [updates], newshape=(m,) + shape[k:])
    out = scatter_flat(rows, flat, upd, _reduction(attrs))
    return [call("reshape", [out], newshape=shape)]


@converter("ScatterElements", "Scatter", attrs=("axis", "reduction"))
def _scatter_elements(ctx: Any, node: Any, ins: list[Value | None],
                      attrs: dict[str, Any]) -> list[Value]:
    data, indices, updates = required(ins, 0), required(ins, 1), required(ins, 2)
    shape, ishape = data.static_shape(), indices.static_shape()
    if len(ishape) != len(shape) or updates.static_shape() != ishape:
        raise Unsupported(f"{node.op_type} indices {ishape} and updates {updates.shape} must "
                          f"have one shape of data {shape}'s rank")
    axis = int(attrs.get("axis", 0)) % len(shape)
    if any(i > d for k, (i, d) in enumerate(zip(ishape, shape)) if k != axis):
        raise Unsupported(f"{node.op_type} indices {ishape} larger than data {shape}")
    strides = _strides(shape)
    offset = np.zeros(ishape, np.int64)
    for k in range(len(shape)):
        if k != axis:
            grid = np.arange(ishape[k], dtype=np.int64) * strides[k]
            offset = offset + grid.reshape([-1 if j == k else 1 for j in range(len(shape))])
    idx = checked_index(indices, shape[axis])
    flat = call("add", [call("multiply", [idx, const(np.int64(strides[axis]))]), const(offset)])
    m = int(np.prod(ishape, dtype=np.int64))
    out = scatter_flat(call("reshape", [data], newshape=(-1,)),
                       call("reshape", [flat], newshape=(m,)),
                       call("reshape", [updates], newshape=(m,)), _reduction(attrs))
    return [call("reshape", [out], newshape=shape)]
