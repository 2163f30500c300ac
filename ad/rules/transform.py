"""Gradient and tangent rules of the ``transform`` family (data movement).

Every transform is linear in its data argument, so every **tangent** rule is the operator
applied to the tangent (:func:`ad.rules._linear.linear_tangent`); the shape-only arguments
(``reshape_like``'s, ``broadcast_to_like``'s and ``collapse_sum_like``'s second argument,
``take``'s indices) carry none.  The **gradient** of a transform is its adjoint (transpose):

* ``reshape expand_dims squeeze``: ``reshape_like(g, x)``; ``reshape_like``: the same for the
  data, nothing for the shape argument;
* ``transpose``: ``transpose(g)`` with the inverse permutation; ``reverse``: ``reverse(g)``;
  ``layout_transform``: the transform from the destination layout back to the source;
* ``broadcast_to``/``broadcast_to_like``: ``collapse_sum_like(g, x)``; ``collapse_sum_like``:
  ``broadcast_to_like(g, x)``;
* ``concatenate``: a tuple of ``strided_slice(g)`` at the fields' offsets (``split``
  rejects the repeated offsets of empty fields); ``stack``: ``split(g)`` into equal
  sections, each reshaped to its field; ``split``: ``concatenate`` of the adjoints of the
  pieces.  Where a piece's type would come out with ``?`` (symbolic extents),
  ``reshape_like`` restores the exact type of the field / data;
* ``tile``: ``g`` reshaped to interleaved ``(reps_i, dim_i)`` axes, summed over the ``reps``
  axes; ``repeat``: ``g`` reshaped to ``(..., dim, repeats, ...)`` and summed over
  ``repeats``;
* ``take`` and ``strided_slice`` scatter the adjoint back: ``take`` through a one-hot
  tensor ``onehot[i, j] = (index_i == j)`` built with ``equal`` against a constant
  ``0..n-1`` (indices normalized by the mode first: ``clip`` clamps, ``wrap`` takes them
  modulo ``n``), so repeated indices accumulate; ``strided_slice`` pads a unit-stride slice
  with zeros (``concatenate``) and scatters other strides through constant one-hot matrices,
  axis by axis;
* ``shape_of``: declared without a rule (integer result).

``take`` needs a static extent on its axis (the whole shape with ``axis=None``),
``strided_slice`` a static input shape and ``concatenate`` static sizes along the axis for
every field but the last; otherwise they raise ``RelayTypeError`` naming the operator.
``tile`` and ``repeat`` use static reshapes when the shape is concrete and reshape code -4
(split an axis, inferring one extent) otherwise; a symbolic extent that is 0 at run time
is outside that path's domain (-4 cannot infer an extent from 0).
"""

from __future__ import annotations

import numpy as np

from ad.rules._build import call, is_float, item, tensor_type, tup
from ad.rules._linear import attrs_of, collapse_like, linear_tangent
from semantics.errors import RelayTypeError
from semantics.expr import Call, Constant, Expr
from semantics.ops.relations import normalize_axis
from semantics.ops.tables import (
    declare_no_gradient,
    declare_no_tangent,
    register_gradient,
    register_tangent,
)
from semantics.ops.transform_relations import slice_bounds, slice_spec, transpose_axes
from semantics.types import TensorType, TupleType

# --- helpers ---------------------------------------------------------------------------------


def _static_shape(e: Expr, op: str) -> tuple[int, ...]:
    """The concrete shape of a tensor atom.

    Raises:
        RelayTypeError: a dimension is symbolic (the rule scatters into it).
    """
    shape = tensor_type(e).shape
    out = []
    for d in shape:
        if not isinstance(d, int):
            raise RelayTypeError(f"gradient of {op}: needs a static shape, got dimension {d}")
        out.append(d)
    return tuple(out)


def _static(t: TensorType) -> bool:
    """Whether every dimension of ``t`` is a concrete int."""
    return all(isinstance(d, int) for d in t.shape)


def _float_data(c: Call) -> bool:
    return is_float(c.args[0])


def reshape_back(name: str) -> None:
    """Register ``reshape_like(g, x)`` as the gradient of a pure reshaping operator."""

    def gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
        if not _float_data(c):
            return [None] * len(c.args)
        return [call("reshape_like", g, c.args[0])] + [None] * (len(c.args) - 1)

    gradient.__doc__ = f"The adjoint of ``{name}``: the adjoint reshaped back to the data."
    register_gradient(name)(gradient)
    register_tangent(name)(linear_tangent([0]))


for _name in ("reshape", "reshape_like", "expand_dims", "squeeze"):
    reshape_back(_name)


def _one_hot_scatter(g: Expr, ndim: int, axis: int, onehot: Expr, count: int) -> Expr:
    """``r[..., j, ...] = sum_i g[..., i_1..i_count, ...] * onehot[..., i_1..i_count, j]``.

    ``g`` (of rank ``ndim``) has ``count`` index axes starting at ``axis``; ``onehot`` has
    those ``count`` axes followed by the target axis ``j``, preceded by dims that broadcast
    against ``g``'s leading ``axis`` dims.  The result has the target axis at ``axis``."""
    expanded = call("expand_dims", g, axis=axis + count)
    trailing = ndim - axis - count
    weights = onehot
    if trailing:
        weights = call("expand_dims", weights, axis=-1, num_newaxis=trailing)
    product = call("multiply", expanded, weights)
    if count == 0:
        return product
    return call("sum", product, axis=list(range(axis, axis + count)))


# --- permutations and reversals --------------------------------------------------------------

@register_gradient("transpose")
def _transpose_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``transpose(g)`` with the inverse permutation."""
    if not _float_data(c):
        return [None]
    ndim = len(tensor_type(c.args[0]).shape)
    perm = transpose_axes("Transpose", (), attrs_of(c)["axes"], ndim)
    inverse = [0] * ndim
    for i, p in enumerate(perm):
        inverse[p] = i
    return [call("transpose", g, axes=inverse)]


@register_gradient("reverse")
def _reverse_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``reverse(g)`` along the same axis."""
    if not _float_data(c):
        return [None]
    return [call("reverse", g, axis=attrs_of(c)["axis"])]


@register_gradient("layout_transform")
def _layout_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The layout transform from the destination layout back to the source."""
    if not _float_data(c):
        return [None]
    a = attrs_of(c)
    return [call("layout_transform", g, src_layout=a["dst_layout"], dst_layout=a["src_layout"])]


for _name in ("transpose", "reverse", "layout_transform", "broadcast_to"):
    register_tangent(_name)(linear_tangent([0]))


# --- broadcasting ----------------------------------------------------------------------------

@register_gradient("broadcast_to")
def _broadcast_to_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``collapse_sum_like(g, x)``."""
    if not _float_data(c):
        return [None]
    return [collapse_like(g, c.args[0])]


@register_gradient("broadcast_to_like")
def _broadcast_to_like_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``collapse_sum_like(g, x)``; nothing for the shape argument."""
    if not _float_data(c):
        return [None, None]
    return [collapse_like(g, c.args[0]), None]


@register_gradient("collapse_sum_like")
def _collapse_sum_like_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``broadcast_to_like(g, x)``; nothing for the shape argument."""
    if not _float_data(c):
        return [None, None]
    return [call("broadcast_to_like", g, c.args[0]), None]


register_tangent("broadcast_to_like")(linear_tangent([0]))
register_tangent("collapse_sum_like")(linear_tangent([0]))


# --- joining and splitting -------------------------------------------------------------------

def _tuple_fields(e: Expr) -> list[TensorType]:
    t = e.checked_type
    if not isinstance(t, TupleType):
        raise TypeError(f"rule argument is not a tuple: {t!r}")
    fields = []
    for f in t.fields:
        if not isinstance(f, TensorType):
            raise TypeError(f"rule argument field is not a tensor: {f!r}")
        fields.append(f)
    return fields


def _float_fields(e: Expr) -> bool:
    fields = _tuple_fields(e)
    return bool(fields) and all(f.dtype.startswith(("float", "bfloat")) for f in fields)


@register_gradient("concatenate")
def _concatenate_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """A tuple of ``strided_slice`` s of ``g`` at the offsets of the fields along the axis."""
    data = c.args[0]
    if not _float_fields(data):
        return [None]
    fields = _tuple_fields(data)
    axis = normalize_axis("Concatenate", (), attrs_of(c)["axis"], len(fields[0].shape))
    pieces, at = [], 0
    for i, f in enumerate(fields):
        d = f.shape[axis]
        if isinstance(d, int):
            end: int | None = at + d
        elif i == len(fields) - 1:
            end = None                      # the last field runs to the end
        else:
            raise RelayTypeError(f"gradient of concatenate: needs a static size along axis "
                                 f"{axis} for every field but the last, got {d}")
        piece = call("strided_slice", g, begin=[at], end=[end], axes=[axis])
        # a slice of a symbolic extent is typed with ?: reshape_like restores the field's type
        pieces.append(piece if _static(tensor_type(out)) else
                      call("reshape_like", piece, item(data, i)))
        at = end if end is not None else at
    return [tup(*pieces)]


@register_gradient("stack")
def _stack_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``split(g)`` into one section per field, each reshaped to its field."""
    data = c.args[0]
    if not _float_fields(data):
        return [None]
    fields = _tuple_fields(data)
    axis = normalize_axis("Stack", (), attrs_of(c)["axis"], len(fields[0].shape) + 1)
    pieces = call("split", g, indices_or_sections=len(fields), axis=axis)
    return [tup(*(call("reshape_like", item(pieces, i), item(data, i))
                  for i in range(len(fields))))]


@register_gradient("split")
def _split_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``concatenate`` of the pieces' adjoints along the axis."""
    if not _float_data(c):
        return [None]
    t = out.checked_type
    n = len(t.fields) if isinstance(t, TupleType) else 0
    joined = call("concatenate", tup(*(item(g, i) for i in range(n))), axis=attrs_of(c)["axis"])
    # pieces of a symbolic extent are typed with ?: reshape_like restores the data's type
    return [joined if _static(tensor_type(c.args[0])) else call("reshape_like", joined, c.args[0])]


for _name in ("concatenate", "stack", "split"):
    register_tangent(_name)(linear_tangent([0]))


# --- gathering and slicing -------------------------------------------------------------------

def _normalized_indices(c: Call, n: int) -> Expr:
    """``take``'s indices as int64 in ``[0, n)`` following the mode (``fast``: as given).

    ``clip`` clamps in the indices' own dtype (the bounds saturate to it), so a ``uint64``
    index above ``2**63`` clamps to ``n - 1`` before the conversion; ``wrap`` reduces
    ``uint64`` indices modulo ``n`` in their dtype, other dtypes after widening to int64.
    """
    indices = c.args[1]
    dtype = tensor_type(indices).dtype
    mode = attrs_of(c)["mode"]
    if mode == "clip":
        clamped = call("clip", indices, a_min=0.0, a_max=float(max(n - 1, 0)))
        return call("cast", clamped, dtype="int64")
    if mode == "wrap" and n > 0:
        if dtype == "uint64":
            reduced = call("floor_mod", indices, Constant(np.asarray(n, dtype=np.uint64)))
            return call("cast", reduced, dtype="int64")
        return call("floor_mod", call("cast", indices, dtype="int64"),
                    Constant(np.asarray(n, dtype=np.int64)))
    return call("cast", indices, dtype="int64")


@register_gradient("take")
def _take_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The adjoint scattered back through a one-hot tensor (repeated indices accumulate);
    nothing for the indices."""
    data, indices = c.args
    if not _float_data(c):
        return [None, None]
    a = attrs_of(c)
    dtype = tensor_type(data).dtype
    rank = len(tensor_type(data).shape)
    index_rank = len(tensor_type(indices).shape)
    ndim = len(tensor_type(out).shape)
    if a["axis"] is None:
        n = int(np.prod(_static_shape(data, "take"), dtype=np.int64))
        axis, batch = 0, 0
    else:
        axis = normalize_axis("Take", (), a["axis"], rank)
        extent = tensor_type(data).shape[axis]
        if not isinstance(extent, int):
            raise RelayTypeError(f"gradient of take: needs a static extent along axis {axis}, "
                                 f"got {extent}")
        n = extent
        batch = a["batch_dims"] + index_rank if a["batch_dims"] < 0 else a["batch_dims"]
    targets = Constant(np.arange(n, dtype=np.int64))
    hit = call("equal", call("expand_dims", _normalized_indices(c, n), axis=index_rank),
               targets)
    onehot: Expr = call("cast", hit, dtype=dtype)
    if batch and axis > batch:
        # onehot B + I' + (n,) becomes B + (1,)*|P| + I' + (n,) against g's B + P + I' + Q
        onehot = call("expand_dims", onehot, axis=batch, num_newaxis=axis - batch)
    scattered = _one_hot_scatter(g, ndim, axis, onehot, index_rank - batch)
    if a["axis"] is None:
        return [call("reshape_like", scattered, data), None]
    return [scattered, None]


register_tangent("take")(linear_tangent([0]))


@register_gradient("strided_slice")
def _strided_slice_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """The adjoint put back in place, one sliced axis at a time: a unit-stride slice is padded
    with zeros (``concatenate``; reversed first for stride -1), any other stride scattered
    through a constant one-hot matrix."""
    if not _float_data(c):
        return [None]
    data = c.args[0]
    a = attrs_of(c)
    shape = _static_shape(data, "strided_slice")
    dtype = tensor_type(data).dtype
    size_mode = a["slice_mode"] == "size"
    current = list(_static_shape(out, "strided_slice"))
    result: Expr = g
    for axis, b, e, s in slice_spec((), len(shape), a):
        bounds = slice_bounds(shape[axis], b, e, s, size_mode)
        if bounds is None:
            raise RelayTypeError("gradient of strided_slice: reversed bounds")
        n = shape[axis]
        picked = np.arange(bounds[0], bounds[1], s, dtype=np.int64)
        if len(picked) == n and np.array_equal(picked, np.arange(n)):
            continue
        if len(picked) and abs(s) == 1:
            result = _pad_axis(result if s == 1 else call("reverse", result, axis=axis),
                               current, axis, int(picked.min()), int(n - 1 - picked.max()),
                               dtype)
        else:
            onehot = (picked[:, None] == np.arange(n)[None, :]).astype(dtype)
            trailing = len(shape) - axis - 1
            weights = Constant(onehot.reshape(onehot.shape + (1,) * trailing))
            expanded = call("expand_dims", result, axis=axis + 1)
            result = call("sum", call("multiply", expanded, weights), axis=[axis])
        current[axis] = n
    return [result]


def _pad_axis(e: Expr, shape: list[int], axis: int, before: int, after: int,
              dtype: str) -> Expr:
    """``e`` (of ``shape``) with ``before`` / ``after`` zero slices added along ``axis``."""

    def zeros(count: int) -> Expr:
        zeros_shape = list(shape)
        zeros_shape[axis] = count
        return call("zeros", shape=zeros_shape, dtype=dtype)

    pieces = ([zeros(before)] if before else []) + [e] + ([zeros(after)] if after else [])
    return pieces[0] if len(pieces) == 1 else call("concatenate", tup(*pieces), axis=axis)


register_tangent("strided_slice")(linear_tangent([0]))


# --- repetition ------------------------------------------------------------------------------

@register_gradient("tile")
def _tile_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``g`` reshaped to interleaved ``(reps_i, dim_i)`` axes, summed over the ``reps``."""
    if not _float_data(c):
        return [None]
    data = c.args[0]
    shape = tensor_type(data).shape
    reps = list(attrs_of(c)["reps"])
    rank = max(len(shape), len(reps))
    dims = [1] * (rank - len(shape)) + list(shape)
    reps = [1] * (rank - len(reps)) + reps
    if all(isinstance(d, int) for d in dims):
        split = call("reshape", g, newshape=[v for r, d in zip(reps, dims, strict=True)
                                             for v in (r, d)], allowzero=True)
    else:       # code -4 splits an axis in two, inferring the second extent
        split = call("reshape", g, newshape=[v for r in reps for v in (-4, r, -1)])
    summed = call("sum", split, axis=list(range(0, 2 * rank, 2)))
    return [call("reshape_like", summed, data)]


@register_gradient("repeat")
def _repeat_gradient(c: Call, out: Expr, g: Expr) -> list[Expr | None]:
    """``g`` reshaped to ``(..., dim, repeats, ...)`` and summed over ``repeats``."""
    if not _float_data(c):
        return [None]
    data = c.args[0]
    shape = tensor_type(data).shape
    a = attrs_of(c)
    axis = normalize_axis("Repeat", (), a["axis"], len(shape))
    repeats = a["repeats"]
    if all(isinstance(d, int) for d in shape):
        split = call("reshape", g, allowzero=True,
                     newshape=list(shape[:axis + 1]) + [repeats] + list(shape[axis + 1:]))
    else:       # copy the leading axes, split this one as (?, repeats), copy the rest
        split = call("reshape", g, newshape=[0] * axis + [-4, -1, repeats, -2])
        return [call("reshape_like", call("sum", split, axis=[axis + 1]), data)]
    return [call("sum", split, axis=[axis + 1])]


register_tangent("tile")(linear_tangent([0]))
register_tangent("repeat")(linear_tangent([0]))


# --- integer results -------------------------------------------------------------------------

_SHAPE_REASON = "its result is the (integer) shape of its input, which carries no derivative"
declare_no_gradient("shape_of", _SHAPE_REASON)
declare_no_tangent("shape_of", _SHAPE_REASON)
