"""Type relations of the transform family, and the dim/runtime helpers the nn family shares.

Each relation is a named :class:`~semantics.ops.registry.Relation` (TVM's names:
``Reshape``, ``ReshapeLike``, ``Transpose``, ``ExpandDims``, ``Squeeze``,
``Concatenate``, ``Stack``, ``Split``, ``Take``, ``StridedSlice``, ``Tile``,
``Repeat``, ``Reverse``, ``BroadcastTo``, ``BroadcastToLike``,
``CollapseSumLike``, ``ShapeOf``, ``LayoutTransform``) following the registry's
protocol: ``relation(arg_types, attrs, solver) -> Type | None``.

Dims
----
A dim is an ``int`` (fast path: plain integer arithmetic), ``ANY`` (absorbing:
any arithmetic with ``?`` gives ``?``) or a SymPy expression (arithmetic stays
symbolic: ``n + n`` is ``2*n``). Equalities between dims are decided only by the
``DimSolver`` the caller passes, so that the type checker's Z3 fallback applies;
a dim that must be *provably* equal and is not is a type error. Divisions
(reshape's ``-1``, ``split`` sections, ``layout_transform`` blocks) are exact
when SymPy can prove the quotient an integer (``2*n / 2 = n``); otherwise a
symbolic quotient becomes ``?`` (checked at run time), a concrete one an error.

Dim arithmetic (``dim_add``, ``dim_mul``, ``exact_div``, ...) lives in
:mod:`semantics.shapes`; attribute checks in :mod:`semantics.ops.attr_checks`; the
reference implementations' wrapper in :mod:`semantics.ops.reference`.

Deliberate differences from TVM (all in corner cases TVM rejects or gets wrong):
``reshape`` places an inferred ``-1`` at its *output* position even after ``-2``/
``-3``/``-4`` codes (TVM indexes by the code's position); ``strided_slice`` in
``size`` mode measures the size from the canonicalized begin.
"""

from __future__ import annotations

from collections.abc import Sequence

from semantics.dtypes import is_int
from semantics.errors import RelayTypeError
from semantics.expr import Attrs
from semantics.ops.attr_checks import bad_attribute
from semantics.ops.layouts import parse_layout
from semantics.ops.registry import Relation, is_known, relation_error, tensor_args
from semantics.ops.relations import (
    NUMERIC,
    normalize_axis,
    require_dtype_class,
    require_dtype_match,
)
from semantics.shapes import ANY, Dim, DimSolver, dim_add, dim_mul, dim_prod, exact_div, has_any
from semantics.types import TensorType, TupleType, Type

# TVM's "until the end" sentinel for strided_slice (int64 max).
MAX_RANGE = 2 ** 63 - 1

ArgTypes = tuple[Type, ...]


# --- argument unpacking and errors ----------------------------------------------------------

def expect_tensors(rel: str, arg_types: ArgTypes, count: int) -> tuple[TensorType, ...] | None:
    """The ``count`` arguments as tensors; None while one is unknown; error otherwise."""
    if len(arg_types) != count:
        raise relation_error(rel, arg_types, f"expected {count} argument(s), got {len(arg_types)}")
    return tensor_args(rel, arg_types)


def expect_tensor_tuple(rel: str, arg_types: ArgTypes) -> tuple[TensorType, ...] | None:
    """The fields of the single tuple argument as tensors (TVM's tuple-input convention)."""
    if len(arg_types) != 1:
        raise relation_error(rel, arg_types, f"expected 1 tuple argument, got {len(arg_types)}")
    tup = arg_types[0]
    if not is_known(tup):
        return None
    if not isinstance(tup, TupleType):
        raise relation_error(rel, arg_types, "expected a tuple of tensors")
    fields = []
    for f in tup.fields:
        if not is_known(f):
            return None
        if not isinstance(f, TensorType):
            raise relation_error(rel, arg_types, "expected a tuple of tensors")
        fields.append(f)
    if not fields:
        raise relation_error(rel, arg_types, "expected at least one tensor in the tuple")
    return tuple(fields)


def unify_dims(solver: DimSolver, rel: str, arg_types: ArgTypes, a: Dim, b: Dim,
               what: str) -> Dim:
    """``solver.unify`` with a failure reported as this relation's error."""
    try:
        return solver.unify(a, b, what)
    except RelayTypeError as err:
        raise relation_error(rel, arg_types, err.message) from None


# --- Reshape ---------------------------------------------------------------------------------

def infer_new_shape(rel: str, arg_types: ArgTypes, ishape: Sequence[Dim],
                    newshape: Sequence[int], allowzero: bool, solver: DimSolver) -> list[Dim]:
    """TVM's ``newshape`` codes: ``0`` copy, ``-1`` infer, ``-2`` copy rest, ``-3`` merge two,
    ``-4`` split one into the next two codes (one of which may be ``-1``)."""
    def fail(why: str) -> RelayTypeError:
        return relation_error(rel, arg_types, why)

    oshape: list[Dim] = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    src = 0
    infer_at = -1
    i = 0
    while i < len(newshape):
        code = newshape[i]
        if code > 0 or (code == 0 and allowzero):
            oshape.append(code)
            src += 1
        elif code == 0:
            if src >= len(ishape):
                raise fail(f"newshape code 0 at position {i} has no input dimension to copy")
            used_in.add(src)
            used_out.add(len(oshape))
            oshape.append(ishape[src])
            src += 1
        elif code == -1:
            if infer_at >= 0:
                raise fail("at most one dimension of newshape can be -1")
            infer_at = len(oshape)
            oshape.append(1)
            src += 1
        elif code == -2:
            while src < len(ishape):
                used_in.add(src)
                used_out.add(len(oshape))
                oshape.append(ishape[src])
                src += 1
        elif code == -3:
            if src + 1 >= len(ishape):
                raise fail(f"newshape code -3 at position {i} needs two input dimensions")
            used_in.update((src, src + 1))
            used_out.add(len(oshape))
            oshape.append(dim_mul(ishape[src], ishape[src + 1]))
            src += 2
        elif code == -4:
            if i + 2 >= len(newshape):
                raise fail("newshape code -4 must be followed by two dimensions")
            if src >= len(ishape):
                raise fail(f"newshape code -4 at position {i} has no input dimension to split")
            d0 = ishape[src]
            used_in.add(src)
            src += 1
            d1, d2 = newshape[i + 1], newshape[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise fail("the two dimensions after -4 cannot both be -1")
            if min(d1, d2) < -1 or 0 in (d1, d2):
                raise fail("the dimensions after -4 must be positive or -1")
            parts: list[Dim] = [d1, d2]
            if -1 in (d1, d2):
                known = d2 if d1 == -1 else d1
                q = exact_div(d0, known)
                if q is None:
                    if isinstance(d0, int):
                        raise fail(f"dimension {d0} cannot be split by {known}")
                    q = ANY
                parts[0 if d1 == -1 else 1] = q
            else:
                unify_dims(solver, rel, arg_types, d0, d1 * d2, "split by -4")
            for p in parts:
                used_out.add(len(oshape))
                oshape.append(p)
        else:
            raise fail(f"unsupported newshape code {code}")
        i += 1
    if infer_at >= 0:
        num = dim_prod([d for j, d in enumerate(ishape) if j not in used_in])
        den = dim_prod([d for j, d in enumerate(oshape) if j not in used_out and j != infer_at])
        q = exact_div(num, den)
        if q is None:
            if isinstance(num, int) and isinstance(den, int):
                raise fail(f"cannot infer -1: {num} elements do not divide into {den}")
            q = ANY
        oshape[infer_at] = q
    return oshape


def _reshape(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Reshape", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    oshape = infer_new_shape("Reshape", arg_types, data.shape, attrs["newshape"],
                             bool(attrs["allowzero"]), solver)
    if not has_any(data.shape) and not has_any(oshape):
        unify_dims(solver, "Reshape", arg_types, dim_prod(data.shape), dim_prod(oshape),
                   "element count of the reshape")
    return TensorType(tuple(oshape), data.dtype)


RESHAPE = Relation("Reshape", _reshape, "data reshaped to newshape (codes 0, -1, -2, -3, -4)")


def reshape_like_shape(rel: str, arg_types: ArgTypes, lhs: Sequence[Dim], rhs: Sequence[Dim],
                       attrs: Attrs) -> list[Dim]:
    def bounds(begin: int, end: int | None, ndim: int, side: str) -> tuple[int, int]:
        b = begin + ndim if begin < 0 else begin
        e = ndim if end is None else (end + ndim if end < 0 else end)
        if not 0 <= b <= e <= ndim:
            raise relation_error(rel, arg_types, f"{side} range [{begin}, {end}) is invalid "
                                                 f"for rank {ndim}")
        return b, e

    lb, le = bounds(attrs["lhs_begin"], attrs["lhs_end"], len(lhs), "lhs")
    rb, re_ = bounds(attrs["rhs_begin"], attrs["rhs_end"], len(rhs), "rhs")
    return [*lhs[:lb], *rhs[rb:re_], *lhs[le:]]


def _reshape_like(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("ReshapeLike", arg_types, 2)
    if ts is None:
        return None
    data, like = ts
    oshape = reshape_like_shape("ReshapeLike", arg_types, data.shape, like.shape, attrs)
    if not has_any(data.shape) and not has_any(oshape):
        unify_dims(solver, "ReshapeLike", arg_types, dim_prod(data.shape), dim_prod(oshape),
                   "element count of the reshape")
    return TensorType(tuple(oshape), data.dtype)


RESHAPE_LIKE = Relation("ReshapeLike", _reshape_like,
                        "data reshaped to (part of) the shape of the second argument")


# --- axis permutations and insertions -------------------------------------------------------

def transpose_axes(rel: str, arg_types: ArgTypes, axes: Sequence[int] | None, ndim: int
                   ) -> list[int]:
    if axes is None:
        return list(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise relation_error(rel, arg_types, f"axes has {len(axes)} elements for rank {ndim}")
    out = [normalize_axis(rel, arg_types, a, ndim) for a in axes]
    if len(set(out)) != ndim:
        raise relation_error(rel, arg_types, f"axes {list(axes)} repeat an axis")
    return out


def _transpose(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Transpose", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    perm = transpose_axes("Transpose", arg_types, attrs["axes"], data.ndim)
    return TensorType(tuple(data.shape[a] for a in perm), data.dtype)


TRANSPOSE = Relation("Transpose", _transpose, "dims permuted by axes (reversed by default)")


def _expand_dims(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("ExpandDims", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    pivot = normalize_axis("ExpandDims", arg_types, attrs["axis"], data.ndim + 1)
    shape = (*data.shape[:pivot], *([1] * attrs["num_newaxis"]), *data.shape[pivot:])
    return TensorType(shape, data.dtype)


EXPAND_DIMS = Relation("ExpandDims", _expand_dims, "num_newaxis dims of size 1 inserted at axis")


def squeeze_axes(rel: str, arg_types: ArgTypes, data: TensorType, axes: Sequence[int] | None,
                 solver: DimSolver) -> set[int]:
    if axes is None:
        out = set()
        for i, d in enumerate(data.shape):
            if not isinstance(d, int):
                raise relation_error(rel, arg_types,
                                     "squeeze without axis needs static dimensions")
            if d == 1:
                out.add(i)
        return out
    out = {normalize_axis(rel, arg_types, a, data.ndim) for a in axes}
    for i in out:
        unify_dims(solver, rel, arg_types, data.shape[i], 1, f"squeezed axis {i}")
    return out


def _squeeze(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Squeeze", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    gone = squeeze_axes("Squeeze", arg_types, data, attrs["axis"], solver)
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in gone), data.dtype)


SQUEEZE = Relation("Squeeze", _squeeze, "dims of size 1 removed (those in axis, or all)")


# --- joining and splitting -------------------------------------------------------------------

def _concatenate(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    fields = expect_tensor_tuple("Concatenate", arg_types)
    if fields is None:
        return None
    dtype = require_dtype_match("Concatenate", arg_types, fields)
    ndim = fields[0].ndim
    if any(f.ndim != ndim for f in fields):
        raise relation_error("Concatenate", arg_types, "tensors have different ranks")
    axis = normalize_axis("Concatenate", arg_types, attrs["axis"], ndim)
    shape = list(fields[0].shape)
    for f in fields[1:]:
        for i in range(ndim):
            if i != axis:
                shape[i] = unify_dims(solver, "Concatenate", arg_types, shape[i], f.shape[i],
                                      f"axis {i}")
    shape[axis] = dim_add(*(f.shape[axis] for f in fields))
    return TensorType(tuple(shape), dtype)


CONCATENATE = Relation("Concatenate", _concatenate,
                       "tuple fields joined along axis; other dims must agree")


def _stack(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    fields = expect_tensor_tuple("Stack", arg_types)
    if fields is None:
        return None
    dtype = require_dtype_match("Stack", arg_types, fields)
    ndim = fields[0].ndim
    if any(f.ndim != ndim for f in fields):
        raise relation_error("Stack", arg_types, "tensors have different ranks")
    axis = normalize_axis("Stack", arg_types, attrs["axis"], ndim + 1)
    shape = list(fields[0].shape)
    for f in fields[1:]:
        for i in range(ndim):
            shape[i] = unify_dims(solver, "Stack", arg_types, shape[i], f.shape[i], f"axis {i}")
    shape.insert(axis, len(fields))
    return TensorType(tuple(shape), dtype)


STACK = Relation("Stack", _stack, "tuple fields of one shape stacked on a new axis")


def _split(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Split", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    if data.ndim == 0:
        raise relation_error("Split", arg_types, "cannot split a scalar")
    axis = normalize_axis("Split", arg_types, attrs["axis"], data.ndim)
    dim = data.shape[axis]
    spec = attrs["indices_or_sections"]

    def with_dim(d: Dim) -> TensorType:
        return TensorType((*data.shape[:axis], d, *data.shape[axis + 1:]), data.dtype)

    if isinstance(spec, int):
        part = exact_div(dim, spec)
        if part is None:
            if isinstance(dim, int):
                raise relation_error("Split", arg_types,
                                     f"{spec} sections do not divide dimension {dim}")
            part = ANY
        return TupleType(tuple(with_dim(part) for _ in range(spec)))
    fields = []
    begin = 0
    for index in spec:
        if index <= begin:
            raise relation_error("Split", arg_types, f"indices {list(spec)} must be ascending "
                                                     "and positive")
        fields.append(with_dim(index - begin))
        begin = index
    if isinstance(dim, int) and spec and begin >= dim:
        raise relation_error("Split", arg_types,
                             f"index {begin} is not below dimension {dim}")
    fields.append(with_dim(dim_add(dim, -begin)))
    return TupleType(tuple(fields))


SPLIT = Relation("Split", _split, "a tuple of pieces along axis (equal sections or at indices)")


# --- gathering and slicing -------------------------------------------------------------------

def _take(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Take", arg_types, 2)
    if ts is None:
        return None
    data, indices = ts
    if not is_int(indices.dtype):
        raise relation_error("Take", arg_types, f"indices must be integers, got {indices.dtype}")
    if attrs["axis"] is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis("Take", arg_types, attrs["axis"], data.ndim)
    batch = attrs["batch_dims"]
    if batch < 0:
        batch += indices.ndim
    if not 0 <= batch <= min(axis, indices.ndim):
        raise relation_error("Take", arg_types, f"batch_dims {attrs['batch_dims']} must be "
                                                "within both the indices rank and axis")
    lead = [unify_dims(solver, "Take", arg_types, data.shape[i], indices.shape[i],
                       f"batch axis {i}") for i in range(batch)]
    shape = (*lead, *data.shape[batch:axis], *indices.shape[batch:], *data.shape[axis + 1:])
    return TensorType(tuple(shape), data.dtype)


TAKE = Relation("Take", _take, "elements of data gathered at integer indices along axis")


def canonicalize_index(index: int, extent: int, stride: int) -> int:
    """TVM's clamp of a slice bound: negatives count from the end, then clamp to the range."""
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def slice_spec(arg_types: ArgTypes, ndim: int, attrs: Attrs
               ) -> list[tuple[int, int | None, int | None, int]]:
    """``(axis, begin, end, stride)`` per sliced axis; ``end`` in size mode stays a size."""
    op = "strided_slice"
    begin, end, strides, axes = attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"]
    size_mode = attrs["slice_mode"] == "size"
    if begin is None or end is None:
        raise bad_attribute(op, "begin and end are required")
    if axes is not None:
        if len(begin) != len(axes) or len(end) != len(axes):
            raise bad_attribute(op, "begin, end and axes must have the same length")
        chosen = [normalize_axis("StridedSlice", arg_types, a, ndim) for a in axes]
        if len(set(chosen)) != len(chosen):
            raise relation_error("StridedSlice", arg_types, f"axes {list(axes)} repeat an axis")
    else:
        if max(len(begin), len(end)) > ndim:
            raise relation_error("StridedSlice", arg_types,
                                 f"{max(len(begin), len(end))} bounds for rank {ndim}")
        chosen = list(range(ndim))
    stride_list = list(strides or ())
    if len(stride_list) > len(chosen):
        raise relation_error("StridedSlice", arg_types,
                             f"{len(stride_list)} strides for {len(chosen)} axes")
    stride_list += [1] * (len(chosen) - len(stride_list))
    if size_mode:
        stride_list = [1] * len(chosen)
    if 0 in stride_list:
        raise bad_attribute(op, "strides cannot be 0")
    spec = []
    for k, axis in enumerate(chosen):
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        spec.append((axis, b, e, stride_list[k]))
    return spec


def slice_bounds(dim: int, b: int | None, e: int | None, s: int, size_mode: bool
                 ) -> tuple[int, int] | None:
    """Canonical ``(begin, end)`` on an axis of extent ``dim``; None if reversed (an error)."""
    bc = canonicalize_index(b if b is not None else (0 if s > 0 else MAX_RANGE), dim, s)
    if size_mode and e is not None and e >= 0:
        ec = min(bc + e, dim)
    elif size_mode or e is None:
        # TVM's default end: "to the end" for a positive stride, 0 (exclusive) for a negative one.
        ec = canonicalize_index(MAX_RANGE if s > 0 else 0, dim, s)
    else:
        ec = canonicalize_index(e, dim, s)
    if (s > 0 and bc > ec) or (s < 0 and ec > bc):
        return None
    return bc, ec


def _strided_slice(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("StridedSlice", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    size_mode = attrs["slice_mode"] == "size"
    shape = list(data.shape)
    for axis, b, e, s in slice_spec(arg_types, data.ndim, attrs):
        dim = shape[axis]
        if isinstance(dim, int):
            bounds = slice_bounds(dim, b, e, s, size_mode)
            if bounds is None:
                raise relation_error("StridedSlice", arg_types,
                                     f"begin {b} is past end {e} on axis {axis} (stride {s})")
            shape[axis] = len(range(bounds[0], bounds[1], s))
        else:
            whole = s == 1 and b in (None, 0) and (
                e is None or (size_mode and e < 0) or (not size_mode and e >= 2 ** 31 - 1))
            shape[axis] = dim if whole else ANY
    return TensorType(tuple(shape), data.dtype)


STRIDED_SLICE = Relation("StridedSlice", _strided_slice,
                         "a strided window of data (TVM's begin/end clamping)")


# --- repetition, reversal, broadcasting -------------------------------------------------------

def _tile(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Tile", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    reps = list(attrs["reps"])
    shape = list(data.shape)
    width = max(len(reps), len(shape))
    reps = [1] * (width - len(reps)) + reps
    shape = [1] * (width - len(shape)) + shape
    return TensorType(tuple(dim_mul(d, r) for d, r in zip(shape, reps, strict=True)), data.dtype)


TILE = Relation("Tile", _tile, "data repeated reps times per axis (numpy.tile)")


def _repeat(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Repeat", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    axis = normalize_axis("Repeat", arg_types, attrs["axis"], data.ndim)
    shape = list(data.shape)
    shape[axis] = dim_mul(shape[axis], attrs["repeats"])
    return TensorType(tuple(shape), data.dtype)


REPEAT = Relation("Repeat", _repeat, "each element repeated along axis (numpy.repeat)")


def _reverse(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Reverse", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    normalize_axis("Reverse", arg_types, attrs["axis"], data.ndim)
    return data


REVERSE = Relation("Reverse", _reverse, "the input type (axis checked)")


def broadcast_into(rel: str, arg_types: ArgTypes, small: Sequence[Dim], big: Sequence[Dim],
                   solver: DimSolver) -> None:
    """``small`` broadcasts (numpy rules, right-aligned) to exactly ``big``."""
    if len(small) > len(big):
        raise relation_error(rel, arg_types,
                             f"rank {len(small)} cannot broadcast to rank {len(big)}")
    offset = len(big) - len(small)
    for i, d in enumerate(small):
        if isinstance(d, int) and d == 1:
            continue
        unify_dims(solver, rel, arg_types, d, big[offset + i], f"axis {offset + i}")


def _broadcast_to(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("BroadcastTo", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    shape = tuple(attrs["shape"])
    broadcast_into("BroadcastTo", arg_types, data.shape, shape, solver)
    return TensorType(shape, data.dtype)


BROADCAST_TO = Relation("BroadcastTo", _broadcast_to, "data broadcast to the shape attribute")


def _broadcast_to_like(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("BroadcastToLike", arg_types, 2)
    if ts is None:
        return None
    data, like = ts
    require_dtype_match("BroadcastToLike", arg_types, ts)
    broadcast_into("BroadcastToLike", arg_types, data.shape, like.shape, solver)
    return TensorType(like.shape, data.dtype)


BROADCAST_TO_LIKE = Relation("BroadcastToLike", _broadcast_to_like,
                             "data broadcast to the second argument's shape")


def _collapse_sum_like(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("CollapseSumLike", arg_types, 2)
    if ts is None:
        return None
    data, like = ts
    require_dtype_match("CollapseSumLike", arg_types, ts)
    require_dtype_class("CollapseSumLike", arg_types, data.dtype, NUMERIC)
    broadcast_into("CollapseSumLike", arg_types, like.shape, data.shape, solver)
    return TensorType(like.shape, data.dtype)


COLLAPSE_SUM_LIKE = Relation("CollapseSumLike", _collapse_sum_like,
                             "data summed down to the second argument's shape")


def _shape_of(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("ShapeOf", arg_types, 1)
    if ts is None:
        return None
    return TensorType((ts[0].ndim,), attrs["dtype"])


SHAPE_OF = Relation("ShapeOf", _shape_of, "a 1-d tensor of dtype holding the input's shape")


# --- layouts ---------------------------------------------------------------------------------

def _layout_transform(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("LayoutTransform", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    src = parse_layout("layout_transform", attrs["src_layout"])
    dst = parse_layout("layout_transform", attrs["dst_layout"])
    src_primal = [a for a, _ in src if a.isupper()]
    if sorted(src_primal) != sorted(a for a, _ in dst if a.isupper()):
        raise bad_attribute("layout_transform", f"cannot convert {attrs['src_layout']} to "
                                                f"{attrs['dst_layout']}")
    if data.ndim != len(src):
        raise relation_error("LayoutTransform", arg_types,
                             f"rank {data.ndim} does not match layout {attrs['src_layout']}")
    at = {a: i for i, (a, _) in enumerate(src)}
    size: dict[str, Dim] = {}
    for primal in src_primal:
        d = data.shape[at[primal]]
        block = primal.lower()
        if block in at:
            factor = src[at[block]][1]
            unify_dims(solver, "LayoutTransform", arg_types, data.shape[at[block]], factor,
                       f"block axis {block}")
            d = dim_mul(d, factor)
        size[primal] = d
    dst_factor = {a.upper(): f for a, f in dst if a.islower()}
    shape: list[Dim] = []
    for a, f in dst:
        if a.islower():
            shape.append(f)
        elif a in dst_factor:
            q = exact_div(size[a], dst_factor[a])
            if q is None:
                if isinstance(size[a], int):
                    raise relation_error("LayoutTransform", arg_types,
                                         f"axis {a} of size {size[a]} is not divisible by "
                                         f"{dst_factor[a]}")
                q = ANY
            shape.append(q)
        else:
            shape.append(size[a])
    return TensorType(tuple(shape), data.dtype)


LAYOUT_TRANSFORM = Relation("LayoutTransform", _layout_transform,
                            "data re-laid-out from src_layout to dst_layout")
