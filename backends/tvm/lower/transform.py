"""Lowerings of the ``transform`` family for ``llvm`` (semantics: :mod:`semantics.ops.transform`).

Data movement is an index map: each rule is one ``te.compute`` whose element reads the input
at the index the output index maps to (no value changes, so every dtype works).

* reshapes (``reshape``, ``reshape_like``, ``expand_dims``, ``squeeze``, and
  ``nn.batch_flatten`` in :mod:`.nn`) go through the row-major flat index;
* ``concatenate``/``stack`` pick their input with *lazy* ``if_then_else`` (a ``Select``
  would evaluate every input's load, out of bounds for all but one);
* ``take``: ``clip`` clamps and ``wrap`` reduces (floored) the indices as the reference does
  (unsigned indices in their own dtype, so ``uint64`` never goes through a negative
  ``int64``); mode ``fast`` is declined — an out-of-range index must raise
  ``RelayRuntimeError``, a compiled gather would read out of bounds;
* ``strided_slice`` reads ``begin + i * stride`` per axis with the relation's own canonical
  bounds (:func:`semantics.ops.transform_relations.slice_bounds`);
* ``shape_of`` is a constant tensor (the kernel is specialized to its argument shapes);
* ``layout_transform`` maps each output coordinate to the primal coordinate
  ``X = outer * factor + inner`` and back into the source layout's blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.tvm.lower.base import (
    OpCall,
    Unsupported,
    broadcast_index,
    const,
    is_signed,
    lowering,
)
from semantics.expr import Attrs
from semantics.ops import transform_relations as R


def _te() -> Any:
    from tvm import te

    return te


def _tirx() -> Any:
    from tvm import tirx

    return tirx


def _at(x: Any, index: Sequence[Any]) -> Any:
    return x[tuple(index)] if len(index) else x[()]


def reshape_to(x: Any, in_shape: Sequence[int], out_shape: Sequence[int], name: str) -> Any:
    """``x`` reshaped (row-major) from ``in_shape`` to ``out_shape``."""
    tirx = _tirx()

    def body(*idx: Any) -> Any:
        flat: Any = const(0, "int64")
        for i, d in zip(idx, out_shape):
            flat = flat * const(d, "int64") + tirx.Cast("int64", i)
        index = []
        for d in reversed(in_shape):
            index.append(tirx.floormod(flat, const(d, "int64")) if d != 1 else const(0, "int64"))
            flat = tirx.floordiv(flat, const(d, "int64")) if d != 1 else flat
        return _at(x, list(reversed(index)))

    return _te().compute(tuple(out_shape), body, name=name)


@lowering("reshape", "reshape_like", "expand_dims", "squeeze")
def _reshape(call: OpCall) -> Any:
    return reshape_to(call.inputs[0], call.in_shape(0), call.out_shape, call.op)


@lowering("transpose")
def _transpose(call: OpCall) -> Any:
    x = call.inputs[0]
    ndim = len(call.in_shape(0))
    perm = R.transpose_axes("Transpose", (), call.attrs["axes"], ndim)

    def body(*idx: Any) -> Any:
        index: list[Any] = [0] * ndim
        for j, p in enumerate(perm):
            index[p] = idx[j]
        return _at(x, index)

    return _te().compute(call.out_shape, body, name="transpose")


def _field_shapes(call: OpCall) -> list[tuple[int, ...]]:
    from semantics.ops.reference import concrete_shape
    from semantics.types import TupleType

    t = call.arg_types[0]
    assert isinstance(t, TupleType)
    return [concrete_shape(f) for f in t.fields]


@lowering("concatenate")
def _concatenate(call: OpCall) -> Any:
    tirx = _tirx()
    xs = call.inputs[0]
    shapes = _field_shapes(call)
    axis = call.attrs["axis"]
    ndim = len(call.out_shape)
    axis = axis + ndim if axis < 0 else axis
    pieces = [(x, s) for x, s in zip(xs, shapes) if s[axis] > 0]

    def body(*idx: Any) -> Any:
        offsets, off = [], 0
        for _, s in pieces:
            offsets.append(off)
            off += s[axis]
        pos = idx[axis]

        def read(k: int) -> Any:
            index = list(idx)
            index[axis] = pos - offsets[k]
            return _at(pieces[k][0], index)

        value = read(len(pieces) - 1)
        for k in range(len(pieces) - 2, -1, -1):
            value = tirx.if_then_else(pos < offsets[k + 1], read(k), value)
        return value

    if not pieces:
        return _te().compute(call.out_shape, lambda *i: const(0, call.out_dtype), name="concat")
    return _te().compute(call.out_shape, body, name="concatenate")


@lowering("stack")
def _stack(call: OpCall) -> Any:
    tirx = _tirx()
    xs = call.inputs[0]
    axis = call.attrs["axis"]
    ndim = len(call.out_shape)
    axis = axis + ndim if axis < 0 else axis

    def body(*idx: Any) -> Any:
        index = [i for k, i in enumerate(idx) if k != axis]
        value = _at(xs[-1], index)
        for k in range(len(xs) - 2, -1, -1):
            value = tirx.if_then_else(idx[axis] == k, _at(xs[k], index), value)
        return value

    return _te().compute(call.out_shape, body, name="stack")


def _shifted(x: Any, axis: int, start: int) -> Any:
    """The element function ``idx -> x[idx + start along axis]``."""
    def body(*idx: Any) -> Any:
        index = list(idx)
        index[axis] = idx[axis] + start
        return _at(x, index)
    return body


@lowering("split")
def _split(call: OpCall) -> Any:
    from semantics.ops.reference import concrete_shape

    x = call.inputs[0]
    shape = call.in_shape(0)
    axis = call.attrs["axis"]
    axis = axis + len(shape) if axis < 0 else axis
    outs = []
    start = 0
    for k, t in enumerate(call.out_type.fields):  # type: ignore[attr-defined]
        piece_shape = concrete_shape(t)

        outs.append(_te().compute(piece_shape, _shifted(x, axis, start), name=f"split{k}"))
        start += piece_shape[axis]
    return tuple(outs)


def _take_index(i: Any, dtype: str, n: int, mode: str) -> Any:
    """An index of ``dtype`` as an int64 in ``[0, n)`` by ``mode`` (clip or wrap)."""
    tirx = _tirx()
    if not is_signed(dtype):
        if mode == "wrap":
            return tirx.Cast("int64", tirx.truncmod(i, const(n, dtype)))
        return tirx.Cast("int64", tirx.Select(i >= const(n, dtype), const(n - 1, dtype), i))
    j = tirx.Cast("int64", i)
    if mode == "wrap":
        return tirx.floormod(j, const(n, "int64"))
    return tirx.max(tirx.min(j, const(n - 1, "int64")), const(0, "int64"))


@lowering("take")
def _take(call: OpCall) -> Any:
    data, indices = call.inputs
    dshape, ishape = call.in_shape(0), call.in_shape(1)
    idtype = call.in_dtype(1)
    mode = call.attrs["mode"]
    if mode == "fast":
        raise Unsupported("take in mode \"fast\" is not compiled: an out-of-range index must "
                          "raise RelayRuntimeError")
    axis = call.attrs["axis"]
    size = 1
    for d in dshape:
        size *= d
    if axis is None:
        n = size
    else:
        axis = axis + len(dshape) if axis < 0 else axis
        n = dshape[axis]
    if n == 0:
        if any(d == 0 for d in call.out_shape):
            return _te().compute(call.out_shape, lambda *i: const(0, call.out_dtype),
                                 name="take")
        raise Unsupported("take from an empty axis must raise RelayRuntimeError")
    if axis is None:
        flat = reshape_to(data, dshape, (size,), "take_flat")

        def body_flat(*idx: Any) -> Any:
            return flat[_take_index(_at(indices, idx), idtype, n, mode)]

        return _te().compute(call.out_shape, body_flat, name="take")
    batch = call.attrs["batch_dims"]
    batch = batch + len(ishape) if batch < 0 else batch
    n_idx = len(ishape) - batch

    def body(*idx: Any) -> Any:
        prefix = list(idx[:axis])
        middle = list(idx[axis:axis + n_idx])
        suffix = list(idx[axis + n_idx:])
        where = _take_index(_at(indices, prefix[:batch] + middle), idtype, n, mode)
        return _at(data, [*prefix, where, *suffix])

    return _te().compute(call.out_shape, body, name="take")


@lowering("strided_slice")
def _strided_slice(call: OpCall) -> Any:
    x = call.inputs[0]
    shape = call.in_shape(0)
    attrs = call.attrs
    size_mode = attrs["slice_mode"] == "size"
    start = [0] * len(shape)
    step = [1] * len(shape)
    for axis, b, e, s in R.slice_spec((), len(shape), Attrs(attrs)):
        bounds = R.slice_bounds(shape[axis], b, e, s, size_mode)
        assert bounds is not None
        start[axis], step[axis] = bounds[0], s

    def body(*idx: Any) -> Any:
        return _at(x, [i * st + b if (st, b) != (1, 0) else i
                       for i, st, b in zip(idx, step, start)])

    return _te().compute(call.out_shape, body, name="strided_slice")


@lowering("tile")
def _tile(call: OpCall) -> Any:
    tirx = _tirx()
    x = call.inputs[0]
    shape = call.in_shape(0)
    out_rank = len(call.out_shape)

    def body(*idx: Any) -> Any:
        tail = idx[out_rank - len(shape):]
        return _at(x, [tirx.floormod(i, d) if d != 1 else 0 for i, d in zip(tail, shape)])

    return _te().compute(call.out_shape, body, name="tile")


@lowering("repeat")
def _repeat(call: OpCall) -> Any:
    tirx = _tirx()
    x = call.inputs[0]
    axis = call.attrs["axis"]
    axis = axis + len(call.out_shape) if axis < 0 else axis
    reps = call.attrs["repeats"]

    def body(*idx: Any) -> Any:
        index = list(idx)
        index[axis] = tirx.floordiv(idx[axis], reps)
        return _at(x, index)

    return _te().compute(call.out_shape, body, name="repeat")


@lowering("reverse")
def _reverse(call: OpCall) -> Any:
    x = call.inputs[0]
    shape = call.in_shape(0)
    axis = call.attrs["axis"]
    axis = axis + len(shape) if axis < 0 else axis

    def body(*idx: Any) -> Any:
        index = list(idx)
        index[axis] = shape[axis] - 1 - idx[axis]
        return _at(x, index)

    return _te().compute(call.out_shape, body, name="reverse")


@lowering("broadcast_to", "broadcast_to_like")
def _broadcast_to(call: OpCall) -> Any:
    x = call.inputs[0]
    shape, out = call.in_shape(0), call.out_shape
    return _te().compute(out, lambda *i: _at(x, broadcast_index(shape, out, i)),
                         name="broadcast_to")


@lowering("collapse_sum_like")
def _collapse_sum_like(call: OpCall) -> Any:
    te = _te()
    x = call.inputs[0]
    shape, target = call.in_shape(0), call.out_shape
    lead = len(shape) - len(target)
    axes = [k for k in range(lead)] + [lead + i for i, d in enumerate(target)
                                       if d == 1 and shape[lead + i] != 1]
    if not axes:
        return te.compute(target, lambda *i: _at(x, i), name="collapse_sum_like")
    if any(shape[a] == 0 for a in axes):
        return te.compute(target, lambda *i: const(0, call.out_dtype), name="collapse_sum")
    rvars = {a: te.reduce_axis((0, shape[a]), name=f"r{a}") for a in axes}

    def body(*idx: Any) -> Any:
        index = [rvars[k] if k in rvars else idx[k - lead] for k in range(len(shape))]
        return te.sum(_at(x, index), axis=list(rvars.values()))

    return te.compute(target, body, name="collapse_sum_like")


@lowering("shape_of")
def shape_of_rule(call: OpCall) -> Any:
    tirx = _tirx()
    dims = call.in_shape(0)
    dtype = call.out_dtype

    def body(i: Any) -> Any:
        value = const(dims[-1], dtype) if dims else const(0, dtype)
        for k in range(len(dims) - 2, -1, -1):
            value = tirx.Select(i == k, const(dims[k], dtype), value)
        return value

    return _te().compute(call.out_shape, body, name="shape_of")


@lowering("layout_transform")
def _layout_transform(call: OpCall) -> Any:
    tirx = _tirx()
    x = call.inputs[0]
    src = R.parse_layout("layout_transform", call.attrs["src_layout"])
    dst = R.parse_layout("layout_transform", call.attrs["dst_layout"])
    dst_pos = {a: k for k, (a, _) in enumerate(dst)}
    dst_factor = {a: f for a, f in dst if a.islower()}
    src_factor = {a: f for a, f in src if a.islower()}

    def body(*idx: Any) -> Any:
        primal: dict[str, Any] = {}
        for a, _ in dst:
            if a.isupper():
                coord = idx[dst_pos[a]]
                low = a.lower()
                if low in dst_factor:
                    coord = coord * dst_factor[low] + idx[dst_pos[low]]
                primal[a] = coord
        index = []
        for a, f in src:
            if a.isupper():
                low = a.lower()
                coord = primal[a]
                index.append(tirx.floordiv(coord, src_factor[low]) if low in src_factor
                             else coord)
            else:
                index.append(tirx.floormod(primal[a.upper()], f))
        return _at(x, index)

    return _te().compute(call.out_shape, body, name="layout_transform")
