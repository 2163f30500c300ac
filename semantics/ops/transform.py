"""Operator family ``transform``: shape manipulation, gathering, slicing, layouts (TVM names).

Operators: ``reshape``, ``reshape_like``, ``transpose``, ``expand_dims``,
``squeeze``, ``concatenate``, ``stack``, ``split``, ``take``, ``strided_slice``,
``tile``, ``repeat``, ``reverse``, ``broadcast_to``, ``broadcast_to_like``,
``collapse_sum_like``, ``shape_of``, ``layout_transform``. Their type relations
live in :mod:`semantics.ops.transform_relations`; attribute names, defaults and
fusion patterns are TVM's (``python/tvm/relay/op/transform.py``,
``include/tvm/relay/attrs/transform.h``, ``src/relay/op/tensor/transform.cc``).

Conventions
-----------
* ``concatenate`` and ``stack`` take ONE argument, a tuple of tensors (TVM's
  convention); as docs/architecture.md#api prescribes for a tuple input, ``num_inputs`` is -1
  (variadic) and the relation checks that exactly one tuple argument is given. The
  reference receives a Python tuple.
* ``split`` returns a tuple (a Python tuple of arrays; a ``TupleType``).
* Every reference is wrapped by :func:`semantics.ops.reference.reference`: it
  runs the relation on the runtime values (memoized), so an invalid call is a
  ``RelayRuntimeError``, and values are exact numpy arrays of the relation's
  dtype and shape.
* Data movement never changes values, so every dtype (bool included) is
  accepted, except ``collapse_sum_like``, which sums (numeric dtypes; integer
  sums wrap at the dtype's width).
* ``take`` modes: ``clip`` clamps indices to ``[0, n-1]``, ``wrap`` takes them
  modulo ``n`` (floored), ``fast`` requires them in ``[0, n)`` and raises
  ``RelayRuntimeError`` otherwise (TVM leaves that undefined).

Not supported (TVM attributes or forms left out): ``strided_slice`` with begin/
end given as tensors (``dyn.strided_slice``), ``reshape`` with a tensor
``newshape`` (``dyn.reshape``), ``take`` mode ``nan``, ``broadcast_to``'s unused
``dtype`` attribute, layouts with symbolic block sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.dtypes import SCALAR_DTYPES, is_bool, to_numpy
from semantics.errors import RelayRuntimeError
from semantics.ops import attr_checks as C
from semantics.ops import transform_relations as R
from semantics.ops.layouts import parse_layout
from semantics.ops.reference import concrete_shape, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, Traps, register_op
from semantics.types import Type

FAMILY = "transform"


def _op(name: str, num_inputs: int, relation: Relation, pattern: OpPattern, compute: Any,
        doc: str, *attrs: AttrSpec, traps: Traps = Traps.NEVER) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=pattern,
                impl=reference(name, relation, compute), attrs=attrs, doc=doc,
                family=FAMILY, traps=traps)


def _out_shape(out: Type) -> tuple[int, ...]:
    return concrete_shape(out)


# --- reshaping --------------------------------------------------------------------------------

def _reshape(out: Type, data: np.ndarray, **_: Any) -> np.ndarray:
    return data.reshape(_out_shape(out))


def _reshape_like(out: Type, data: np.ndarray, like: np.ndarray, **_: Any) -> np.ndarray:
    return data.reshape(_out_shape(out))


def _transpose(out: Type, data: np.ndarray, axes: Any) -> np.ndarray:
    perm = R.transpose_axes("Transpose", (), axes, data.ndim)
    return np.transpose(data, perm)


def _expand_dims(out: Type, data: np.ndarray, **_: Any) -> np.ndarray:
    return data.reshape(_out_shape(out))


def _squeeze(out: Type, data: np.ndarray, **_: Any) -> np.ndarray:
    return data.reshape(_out_shape(out))


_op("reshape", 1, R.RESHAPE, OpPattern.INJECTIVE, _reshape,
    "Reshape data to newshape; codes 0 (copy), -1 (infer), -2 (copy the rest), -3 (merge two), "
    "-4 (split one into the next two).",
    AttrSpec("newshape", "ints", required=True, doc="target shape with special codes"),
    AttrSpec("allowzero", "bool", False, doc="0 means an empty dim instead of 'copy'"))

_op("reshape_like", 2, R.RESHAPE_LIKE, OpPattern.INJECTIVE, _reshape_like,
    "Reshape data to the shape of the second argument (lhs/rhs ranges select a part).",
    AttrSpec("lhs_begin", "int", 0), AttrSpec("lhs_end", "optional_int", None),
    AttrSpec("rhs_begin", "int", 0), AttrSpec("rhs_end", "optional_int", None))

_op("transpose", 1, R.TRANSPOSE, OpPattern.INJECTIVE, _transpose,
    "Permute the dimensions by axes (reverse them when axes is None).",
    AttrSpec("axes", "optional_ints", None))

_op("expand_dims", 1, R.EXPAND_DIMS, OpPattern.BROADCAST, _expand_dims,
    "Insert num_newaxis dimensions of size 1 at axis (in [-ndim-1, ndim]).",
    AttrSpec("axis", "int", required=True),
    AttrSpec("num_newaxis", "int", 1, check=C.check_at_least(0)))

_op("squeeze", 1, R.SQUEEZE, OpPattern.INJECTIVE, _squeeze,
    "Remove the size-1 dimensions listed in axis (all of them when axis is None).",
    AttrSpec("axis", "optional_ints", None))


# --- joining and splitting --------------------------------------------------------------------

def _concatenate(out: Type, data: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    return np.concatenate(data, axis=axis)


def _stack(out: Type, data: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    return np.stack(data, axis=axis)


def _split(out: Type, data: np.ndarray, indices_or_sections: Any, axis: int
           ) -> tuple[np.ndarray, ...]:
    if isinstance(indices_or_sections, int):
        # Equal sections (the relation checked that they divide the axis): the views
        # np.split would return, sliced directly (np.split goes through array_split).
        ax = axis + data.ndim if axis < 0 else axis
        width = data.shape[ax] // indices_or_sections
        lead = (slice(None),) * ax
        return tuple(data[(*lead, slice(k * width, (k + 1) * width))]
                     for k in range(indices_or_sections))
    return tuple(np.split(data, list(indices_or_sections), axis=axis))


def _check_sections(v: Any) -> str | None:
    if isinstance(v, int) and v < 1:
        return f"must be a positive number of sections or a list of indices, got {v}"
    return None


_op("concatenate", -1, R.CONCATENATE, OpPattern.INJECTIVE, _concatenate,
    "Join the tensors of a tuple along axis.",
    AttrSpec("axis", "int", 0))

_op("stack", -1, R.STACK, OpPattern.INJECTIVE, _stack,
    "Stack the equally shaped tensors of a tuple along a new axis.",
    AttrSpec("axis", "int", 0))

_op("split", 1, R.SPLIT, OpPattern.INJECTIVE, _split,
    "Split data along axis into equal sections (an int) or at ascending indices (a list); "
    "returns a tuple.",
    AttrSpec("indices_or_sections", "int_or_ints", required=True, check=_check_sections),
    AttrSpec("axis", "int", 0))


# --- gathering and slicing ----------------------------------------------------------------------

def _take_indices(indices: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Indices as int64 in ``[0, n)`` according to ``mode`` (RelayRuntimeError if impossible)."""
    if indices.size and n == 0:
        raise RelayRuntimeError("take: cannot take from an empty axis")
    if indices.dtype == np.uint64:
        # Keep the mode's meaning while fitting int64: reduce first (wrap) or saturate.
        indices = indices % np.uint64(n) if mode == "wrap" else np.minimum(indices, 2 ** 62)
    idx = indices.astype(np.int64)
    if mode == "clip":
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise RelayRuntimeError(f"take: index out of range [0, {n}) in mode \"fast\"")
    return idx


def _take(out: Type, data: np.ndarray, indices: np.ndarray, axis: int | None, mode: str,
          batch_dims: int) -> np.ndarray:
    if axis is None:
        flat = data.reshape(-1)
        return flat[_take_indices(indices, flat.size, mode)]
    axis = axis + data.ndim if axis < 0 else axis
    idx = _take_indices(indices, data.shape[axis], mode)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if batch_dims == 0:
        return np.take(data, idx, axis=axis)
    result = np.empty(_out_shape(out), dtype=data.dtype)
    for b in np.ndindex(*data.shape[:batch_dims]):
        result[b] = np.take(data[b], idx[b], axis=axis - batch_dims)
    return result


def _strided_slice(out: Type, data: np.ndarray, **attrs: Any) -> np.ndarray:
    from semantics.expr import Attrs

    size_mode = attrs["slice_mode"] == "size"
    x = data
    for axis, b, e, s in R.slice_spec((), data.ndim, Attrs(attrs)):
        bounds = R.slice_bounds(data.shape[axis], b, e, s, size_mode)
        assert bounds is not None  # the relation rejected reversed bounds
        x = np.take(x, np.arange(bounds[0], bounds[1], s, dtype=np.int64), axis=axis)
    return x


_op("take", 2, R.TAKE, OpPattern.INJECTIVE, _take,
    "Gather elements of data at integer indices along axis (the flattened data when axis is "
    "None); mode clip | wrap | fast.",
    AttrSpec("axis", "optional_int", None),
    AttrSpec("mode", "str", "clip", check=C.check_choice("clip", "wrap", "fast")),
    AttrSpec("batch_dims", "int", 0), traps=Traps.ALWAYS)

_op("strided_slice", 1, R.STRIDED_SLICE, OpPattern.INJECTIVE, _strided_slice,
    "Slice data with begin/end/strides per axis (or per listed axes); slice_mode \"size\" "
    "reads end as sizes (-1: to the end).",
    AttrSpec("begin", "any", required=True, check=C.check_ints_or_none),
    AttrSpec("end", "any", required=True, check=C.check_ints_or_none),
    AttrSpec("strides", "optional_ints", None),
    AttrSpec("axes", "optional_ints", None),
    AttrSpec("slice_mode", "str", "end", check=C.check_choice("end", "size")))


# --- repetition, reversal, broadcasting ----------------------------------------------------------

def _tile(out: Type, data: np.ndarray, reps: tuple[int, ...]) -> np.ndarray:
    return np.tile(data, reps).reshape(_out_shape(out))


def _repeat(out: Type, data: np.ndarray, repeats: int, axis: int) -> np.ndarray:
    return np.repeat(data, repeats, axis=axis)


def _reverse(out: Type, data: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(data, axis=axis)


def _broadcast(out: Type, data: np.ndarray, *_: Any, **__: Any) -> np.ndarray:
    return np.array(np.broadcast_to(data, _out_shape(out)))


def _collapse_sum_like(out: Type, data: np.ndarray, like: np.ndarray) -> np.ndarray:
    target = _out_shape(out)
    lead = data.ndim - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and data.shape[lead + i] != 1)
    summed = np.sum(data, axis=axes, dtype=data.dtype) if axes else data
    return np.asarray(summed, dtype=data.dtype).reshape(target)


def _shape_of(out: Type, data: np.ndarray, dtype: str) -> np.ndarray:
    return np.array(data.shape, dtype=np.int64).astype(to_numpy(dtype))


def _layout_transform(out: Type, data: np.ndarray, src_layout: str, dst_layout: str
                      ) -> np.ndarray:
    src = parse_layout("layout_transform", src_layout)
    dst = parse_layout("layout_transform", dst_layout)
    at = {a: i for i, (a, _) in enumerate(src)}
    perm: list[int] = []
    merged: list[int] = []
    primal = [a for a, _ in src if a.isupper()]
    for a in primal:
        perm.append(at[a])
        size = data.shape[at[a]]
        if a.lower() in at:
            perm.append(at[a.lower()])
            size *= data.shape[at[a.lower()]]
        merged.append(size)
    x = np.transpose(data, perm).reshape(merged)
    dst_factor = {a.upper(): f for a, f in dst if a.islower()}
    split: list[int] = []
    names: list[str] = []
    for a, size in zip(primal, merged, strict=True):
        if a in dst_factor:
            split += [size // dst_factor[a], dst_factor[a]]
            names += [a, a.lower()]
        else:
            split.append(size)
            names.append(a)
    x = x.reshape(split)
    return np.ascontiguousarray(np.transpose(x, [names.index(a) for a, _ in dst]))


def _check_shape_dtype(v: Any) -> str | None:
    if v in SCALAR_DTYPES and not is_bool(v):
        return None
    return f"must be a numeric dtype, got {v!r}"


_op("tile", 1, R.TILE, OpPattern.BROADCAST, _tile,
    "Repeat the whole tensor reps times per axis (numpy.tile; shorter reps or data are "
    "padded with leading 1s).",
    AttrSpec("reps", "ints", required=True, check=C.check_ints_len(minimum=1)))

_op("repeat", 1, R.REPEAT, OpPattern.BROADCAST, _repeat,
    "Repeat each element repeats times along axis.",
    AttrSpec("repeats", "int", required=True, check=C.check_at_least(1)),
    AttrSpec("axis", "int", required=True))

_op("reverse", 1, R.REVERSE, OpPattern.INJECTIVE, _reverse,
    "Reverse the order of the elements along axis.",
    AttrSpec("axis", "int", required=True))

_op("broadcast_to", 1, R.BROADCAST_TO, OpPattern.BROADCAST, _broadcast,
    "Broadcast data (numpy rules) to the given shape.",
    AttrSpec("shape", "ints", required=True, check=C.check_ints_len(minimum=0)))

_op("broadcast_to_like", 2, R.BROADCAST_TO_LIKE, OpPattern.BROADCAST, _broadcast,
    "Broadcast data to the shape of the second argument (same dtype).")

_op("collapse_sum_like", 2, R.COLLAPSE_SUM_LIKE, OpPattern.COMM_REDUCE, _collapse_sum_like,
    "Sum data down to the shape of the second argument (the inverse of broadcasting; "
    "integer sums wrap).")

_op("shape_of", 1, R.SHAPE_OF, OpPattern.OPAQUE, _shape_of,
    "The shape of the input as a 1-d tensor of dtype.",
    AttrSpec("dtype", "dtype", "int32", check=_check_shape_dtype))

_op("layout_transform", 1, R.LAYOUT_TRANSFORM, OpPattern.INJECTIVE, _layout_transform,
    "Convert data between layouts with the same primal axes, e.g. NCHW <-> NHWC <-> NCHW4c.",
    AttrSpec("src_layout", "str", required=True),
    AttrSpec("dst_layout", "str", required=True))
