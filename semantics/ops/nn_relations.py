"""Type relations of the nn family: Conv2D, Dense, BatchMatmul, BiasAdd, BatchNorm, Dropout,
Pool2D, GlobalPool2D, Pad, Softmax, BatchFlatten (TVM's relation names).

Protocol and dim conventions as in :mod:`semantics.ops.transform_relations`
(concrete ints on the fast path, ``?`` absorbing, SymPy expressions otherwise,
equalities only through the ``DimSolver``; ``None`` while an argument is unknown).

Windowed output dims (Conv2D, Pool2D) are TVM's
``floor((H + pad_top + pad_bottom - dilation*(k - 1) - 1) / stride) + 1``
(``ceil_mode`` adds ``stride - 1`` to the numerator). With concrete ints they are
computed as ints (a window larger than the padded input is an error); with a
symbolic ``H`` the result is that expression built with ``sympy.floor``, which
SymPy simplifies when it can (stride 1: ``n + 2 - 3 + 1`` is ``n``) and the
type checker's solver can reason about otherwise.

Layouts: Conv2D's ``data_layout``/``out_layout`` and the pools'
``layout``/``out_layout`` are permutations of ``NCHW`` that may
add a block of the channel axis, and ``kernel_layout`` a permutation of ``OIHW``
that may add blocks of ``I`` and ``O`` — TVM's blocked layouts, with
``layout_transform``'s meaning (:func:`~semantics.ops.transform_relations.parse_layout`):
``NCHW16c`` is (N, C/16, H, W, 16) and ``OIHW16i16o`` is (O/16, I/16, KH, KW,
16, 16). A block axis of the inputs must have exactly its factor as extent (the
outer axis then holds the rest: channels are ``C * c``); the output's channels
must be divisible by its block (``bad type``). Groups work in any layout: the
blocked weight is the ``OIHW`` weight of ``I = C / groups`` input channels, laid
out blocked. Unlike TVM, the weight's type is never *inferred* from
``channels``/``kernel_size``: the weight must have a known type.

BatchMatmul's batch dims broadcast as in TVM (one of them may be 1; ``?`` against a dim
gives that dim); its reduction dims must be provably equal.

Dtypes: conv2d, dense and batch_matmul take numeric (not bool) inputs; ``out_dtype`` ("" =
the data's dtype) may be any numeric dtype, but an integer ``out_dtype`` needs
integer inputs. Softmax, log_softmax and batch_norm need float tensors; pools,
bias_add and leaky_relu numeric ones; dropout, pad and batch_flatten accept any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from semantics.dtypes import is_float, is_int
from semantics.errors import RelayTypeError
from semantics.expr import Attrs
from semantics.ops.layouts import parse_layout
from semantics.ops.registry import Relation, relation_error
from semantics.ops.relations import (
    FLOAT,
    NUMERIC,
    broadcast_dim,
    normalize_axis,
    require_dtype_class,
    require_dtype_match,
    require_scalar,
)
from semantics.ops.transform_relations import ArgTypes, expect_tensors, unify_dims
from semantics.shapes import (
    ANY,
    Dim,
    DimSolver,
    dim_add,
    dim_mul,
    dim_prod,
    exact_div,
    floor_div,
)
from semantics.types import TensorType, TupleType, Type

# --- attribute normalization helpers -----------------------------------------------------------


def pair(values: Sequence[int]) -> tuple[int, int]:
    """A 1- or 2-element list as (height, width)."""
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def pad4(values: Sequence[int]) -> tuple[int, int, int, int]:
    """TVM's padding forms as (top, left, bottom, right): 1 value, (top/bottom, left/right), 4."""
    if len(values) == 1:
        return (values[0], values[0], values[0], values[0])
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    return (values[0], values[1], values[2], values[3])


def window_out_dim(rel: str, arg_types: ArgTypes, size: Dim, kernel: Dim, pad_lo: int,
                   pad_hi: int, stride: int, dilation: int, ceil_mode: bool = False) -> Dim:
    """Output extent of a strided, dilated window over a padded axis (module docstring)."""
    if isinstance(kernel, int) and kernel < 1:
        raise relation_error(rel, arg_types, f"kernel size {kernel} must be positive")
    effective = dim_add(dim_mul(dilation, dim_add(kernel, -1)), 1)
    num = dim_add(size, pad_lo + pad_hi, dim_mul(-1, effective))
    if isinstance(num, int) and num < 0:
        raise relation_error(rel, arg_types, f"window of extent {effective} exceeds the padded "
                                             f"input extent {dim_add(size, pad_lo + pad_hi)}")
    if ceil_mode:
        num = dim_add(num, stride - 1)
    if num is ANY:
        return ANY
    return dim_add(floor_div(num, stride), 1)


def result_dtype(rel: str, arg_types: ArgTypes, inputs: Sequence[TensorType],
                 out_dtype: str) -> str:
    """conv2d/dense: numeric inputs; out_dtype "" means the data's dtype."""
    for t in inputs:
        require_dtype_class(rel, arg_types, t.dtype, NUMERIC)
    out = out_dtype or inputs[0].dtype
    if is_int(out) and any(is_float(t.dtype) for t in inputs):
        raise relation_error(rel, arg_types, f"integer out_dtype {out} needs integer inputs")
    return out


# --- Conv2D and Dense ----------------------------------------------------------------------------

@lru_cache(maxsize=256)
def conv_layout(text: str, primal: str, blockable: str,
                op: str = "nn.conv2d") -> tuple[tuple[str, int], ...]:
    """A Conv2D (or pool) layout parsed (:func:`parse_layout`): ``primal``'s letters in any
    order, plus at most one block of each axis in ``blockable`` (``"NCHW16c"`` for ``"NCHW"``,
    ``"C"``).

    Raises:
        RelayTypeError: ``bad attribute`` (naming ``op``) for anything else.
    """
    axes = tuple(parse_layout(op, text))
    uppers = sorted(a for a, _ in axes if a.isupper())
    blocks = [a.upper() for a, _ in axes if a.islower()]
    if uppers != sorted(primal) or any(b not in blockable for b in blocks):
        raise RelayTypeError(f"bad attribute: {op}: layout {text!r} is not a permutation "
                             f"of {primal} with optional blocks of {', '.join(blockable)}")
    return axes


def check_conv_layout(primal: str, blockable: str,
                      allow_empty: bool = False) -> Callable[[Any], str | None]:
    """The ``AttrSpec.check`` of a Conv2D layout (see :func:`conv_layout`)."""
    def check(v: Any) -> str | None:
        if allow_empty and v == "":
            return None
        try:
            conv_layout(v, primal, blockable)
        except RelayTypeError:
            extra = " or \"\"" if allow_empty else ""
            blocked = " (e.g. NCHW16c)" if primal == "NCHW" else " (e.g. OIHW16i16o)"
            return (f"must be a permutation of {primal} with optional blocks of "
                    f"{', '.join(blockable)}{blocked}{extra}, got {v!r}")
        return None
    return check


def unblocked_dims(rel: str, arg_types: ArgTypes, solver: DimSolver, shape: Sequence[Dim],
                   axes: Sequence[tuple[str, int]], primal: str) -> list[Dim]:
    """The extents of ``primal``'s axes of a tensor of ``shape`` laid out as ``axes`` (a
    blocked axis: outer extent times the factor; the block's extent must be the factor)."""
    at = {a: i for i, (a, _) in enumerate(axes)}
    dims: list[Dim] = []
    for p in primal:
        d = shape[at[p]]
        b = p.lower()
        if b in at:
            factor = axes[at[b]][1]
            unify_dims(solver, rel, arg_types, shape[at[b]], factor, f"block axis {b}")
            d = dim_mul(d, factor)
        dims.append(d)
    return dims


def blocked_shape(rel: str, arg_types: ArgTypes, dims: dict[str, Dim],
                  axes: Sequence[tuple[str, int]]) -> tuple[Dim, ...]:
    """The shape, in the layout ``axes``, of a tensor with primal extents ``dims``."""
    factors = {a.upper(): f for a, f in axes if a.islower()}
    shape: list[Dim] = []
    for a, f in axes:
        if a.islower():
            shape.append(f)
        elif a in factors:
            q = exact_div(dims[a], factors[a])
            if q is None:
                raise relation_error(rel, arg_types, f"extent {dims[a]} of axis {a} is not "
                                                     f"divisible by its block {factors[a]}")
            shape.append(q)
        else:
            shape.append(dims[a])
    return tuple(shape)


def _conv2d(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Conv2D"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    data, weight = ts
    data_axes = conv_layout(attrs["data_layout"], "NCHW", "C")
    kernel_axes = conv_layout(attrs["kernel_layout"], "OIHW", "OI")
    out_axes = conv_layout(attrs["out_layout"] or attrs["data_layout"], "NCHW", "C")
    if data.ndim != len(data_axes) or weight.ndim != len(kernel_axes):
        raise relation_error(rel, arg_types, f"data and weight must be {len(data_axes)}-d and "
                                             f"{len(kernel_axes)}-d (layouts "
                                             f"{attrs['data_layout']}, "
                                             f"{attrs['kernel_layout']})")
    out_dtype = result_dtype(rel, arg_types, ts, attrs["out_dtype"])
    n, c, h, w = unblocked_dims(rel, arg_types, solver, data.shape, data_axes, "NCHW")
    o, i, kh, kw = unblocked_dims(rel, arg_types, solver, weight.shape, kernel_axes, "OIHW")
    groups = attrs["groups"]
    unify_dims(solver, rel, arg_types, c, dim_mul(i, groups),
               f"data channels vs. weight input channels x groups ({groups})")
    if isinstance(o, int) and o % groups:
        raise relation_error(rel, arg_types, f"groups {groups} does not divide the {o} output "
                                             "channels")
    if attrs["channels"] is not None:
        o = unify_dims(solver, rel, arg_types, o, attrs["channels"], "channels attribute")
    if attrs["kernel_size"] is not None:
        ks = pair(attrs["kernel_size"])
        kh = unify_dims(solver, rel, arg_types, kh, ks[0], "kernel_size attribute (height)")
        kw = unify_dims(solver, rel, arg_types, kw, ks[1], "kernel_size attribute (width)")
    sh, sw = pair(attrs["strides"])
    dh, dw = pair(attrs["dilation"])
    pt, pl, pb, pr = pad4(attrs["padding"])
    oh = window_out_dim(rel, arg_types, h, kh, pt, pb, sh, dh)
    ow = window_out_dim(rel, arg_types, w, kw, pl, pr, sw, dw)
    dims = {"N": n, "C": o, "H": oh, "W": ow}
    return TensorType(blocked_shape(rel, arg_types, dims, out_axes), out_dtype)


CONV2D = Relation("Conv2D", _conv2d,
                  "2-d convolution: windowed output dims, channels = weight O, groups check")


def _dense(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Dense"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    data, weight = ts
    if data.ndim < 1 or weight.ndim != 2:
        raise relation_error(rel, arg_types, "data must have rank >= 1 and weight rank 2")
    out_dtype = result_dtype(rel, arg_types, ts, attrs["out_dtype"])
    unify_dims(solver, rel, arg_types, data.shape[-1], weight.shape[1], "reduction axis")
    units = weight.shape[0]
    if attrs["units"] is not None:
        units = unify_dims(solver, rel, arg_types, units, attrs["units"], "units attribute")
    return TensorType((*data.shape[:-1], units), out_dtype)


DENSE = Relation("Dense", _dense, "data (..., k) times weight (units, k) transposed")


def _batch_matmul(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    """TVM's ``BatchMatmulRel``: x (b, M, K) — (b, K, M) with ``transpose_a`` —, y (b, N, K)
    with ``transpose_b`` (the default) else (b, K, N); result (broadcast b, M, N)."""
    rel = "BatchMatmul"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    x, y = ts
    if x.ndim != 3 or y.ndim != 3:
        raise relation_error(rel, arg_types, "x and y must be 3-d (batch, rows, columns)")
    out_dtype = result_dtype(rel, arg_types, ts, attrs["out_dtype"])
    xb, x1, x2 = x.shape
    yb, y1, y2 = y.shape
    m, xk = (x2, x1) if attrs["transpose_a"] else (x1, x2)
    n, yk = (y1, y2) if attrs["transpose_b"] else (y2, y1)
    batch = broadcast_dim(rel, arg_types, xb, yb, solver)
    unify_dims(solver, rel, arg_types, xk, yk, "reduction axis")
    return TensorType((batch, m, n), out_dtype)


BATCH_MATMUL = Relation("BatchMatmul", _batch_matmul,
                        "x (b, M, K) times y (b, N, K) transposed (transpose_a/transpose_b); "
                        "batch dims broadcast")


# --- elementwise-ish nn relations ---------------------------------------------------------------

def _bias_add(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "BiasAdd"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    data, bias = ts
    require_dtype_match(rel, arg_types, ts)
    require_dtype_class(rel, arg_types, data.dtype, NUMERIC)
    axis = normalize_axis(rel, arg_types, attrs["axis"], data.ndim)
    if bias.ndim != 1:
        raise relation_error(rel, arg_types, "bias must be 1-d")
    unify_dims(solver, rel, arg_types, bias.shape[0], data.shape[axis], f"bias vs. axis {axis}")
    return data


BIAS_ADD = Relation("BiasAdd", _bias_add, "the data type; bias is (data.shape[axis],)")


def _batch_norm(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "BatchNorm"
    ts = expect_tensors(rel, arg_types, 5)
    if ts is None:
        return None
    data = ts[0]
    dtype = require_dtype_match(rel, arg_types, ts)
    require_dtype_class(rel, arg_types, dtype, FLOAT)
    axis = normalize_axis(rel, arg_types, attrs["axis"], data.ndim)
    channels = data.shape[axis]
    for name, t in zip(("gamma", "beta", "moving_mean", "moving_var"), ts[1:], strict=True):
        if t.ndim != 1:
            raise relation_error(rel, arg_types, f"{name} must be 1-d")
        channels = unify_dims(solver, rel, arg_types, channels, t.shape[0],
                              f"{name} vs. axis {axis}")
    vec = TensorType((channels,), dtype)
    return TupleType((data, vec, vec))


BATCH_NORM = Relation("BatchNorm", _batch_norm,
                      "(normalized data, mean, var); parameters are (data.shape[axis],)")


def _dropout(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Dropout", arg_types, 1)
    if ts is None:
        return None
    return TupleType((ts[0], ts[0]))


DROPOUT = Relation("Dropout", _dropout, "(output, mask), both of the input's type")


def _softmax(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("Softmax", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    require_dtype_class("Softmax", arg_types, data.dtype, FLOAT)
    normalize_axis("Softmax", arg_types, attrs["axis"], data.ndim)
    return data


SOFTMAX = Relation("Softmax", _softmax, "Identity on float tensors, axis checked")


def _batch_flatten(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("BatchFlatten", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    if data.ndim < 1:
        raise relation_error("BatchFlatten", arg_types, "data must have rank >= 1")
    return TensorType((data.shape[0], dim_prod(data.shape[1:])), data.dtype)


BATCH_FLATTEN = Relation("BatchFlatten", _batch_flatten, "(d0, d1 * ... * dn)")


# --- pooling and padding -------------------------------------------------------------------------

def _pool_input(rel: str, arg_types: ArgTypes, attrs: Attrs, solver: DimSolver
                ) -> tuple[TensorType, tuple[Dim, Dim, Dim, Dim]] | None:
    """The pooled tensor and its primal (N, C, H, W) extents (a blocked ``layout``: the
    channels are the outer extent times the block); None while its type is unknown."""
    ts = expect_tensors(rel, arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    axes = conv_layout(attrs["layout"], "NCHW", "C", rel)
    if data.ndim != len(axes):
        raise relation_error(rel, arg_types, f"data must be {len(axes)}-d (layout "
                                             f"{attrs['layout']})")
    require_dtype_class(rel, arg_types, data.dtype, NUMERIC)
    n, c, h, w = unblocked_dims(rel, arg_types, solver, data.shape, axes, "NCHW")
    return data, (n, c, h, w)


def _pooled_type(rel: str, arg_types: ArgTypes, attrs: Attrs, dims: dict[str, Dim],
                 dtype: str) -> TensorType:
    """The pool's result: primal extents ``dims`` laid out as ``out_layout`` (or ``layout``)."""
    out_axes = conv_layout(attrs["out_layout"] or attrs["layout"], "NCHW", "C", rel)
    return TensorType(blocked_shape(rel, arg_types, dims, out_axes), dtype)


def _pool2d(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Pool2D"
    found = _pool_input(rel, arg_types, attrs, solver)
    if found is None:
        return None
    data, (n, c, h, w) = found
    kh, kw = pair(attrs["pool_size"])
    sh, sw = pair(attrs["strides"])
    dh, dw = pair(attrs["dilation"])
    pt, pl, pb, pr = pad4(attrs["padding"])
    ceil = attrs["ceil_mode"]
    dims = {"N": n, "C": c,
            "H": window_out_dim(rel, arg_types, h, kh, pt, pb, sh, dh, ceil),
            "W": window_out_dim(rel, arg_types, w, kw, pl, pr, sw, dw, ceil)}
    return _pooled_type(rel, arg_types, attrs, dims, data.dtype)


POOL2D = Relation("Pool2D", _pool2d, "max/avg pooling: windowed H and W, N and C kept")


def _global_pool2d(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "GlobalPool2D"
    found = _pool_input(rel, arg_types, attrs, solver)
    if found is None:
        return None
    data, (n, c, h, w) = found
    if 0 in (h, w):
        raise relation_error(rel, arg_types, "cannot pool over an empty window")
    return _pooled_type(rel, arg_types, attrs, {"N": n, "C": c, "H": 1, "W": 1}, data.dtype)


GLOBAL_POOL2D = Relation("GlobalPool2D", _global_pool2d, "H and W pooled to 1")


def _pad(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Pad"
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    data, value = ts
    require_scalar(rel, arg_types, value, "the pad value")
    widths = attrs["pad_width"]
    if len(widths) != data.ndim:
        raise relation_error(rel, arg_types, f"pad_width has {len(widths)} pairs for rank "
                                             f"{data.ndim}")
    mode = attrs["pad_mode"]
    shape = []
    for axis, (d, (before, after)) in enumerate(zip(data.shape, widths, strict=True)):
        if isinstance(d, int) and (before or after):
            if mode == "edge" and d == 0:
                raise relation_error(rel, arg_types, f"edge padding of the empty axis {axis}")
            if mode == "reflect" and max(before, after) > d - 1:
                raise relation_error(rel, arg_types, f"reflect padding ({before}, {after}) "
                                                     f"needs axis {axis} longer than {d}")
        shape.append(dim_add(d, before + after))
    return TensorType(tuple(shape), data.dtype)


PAD = Relation("Pad", _pad, "each dim grown by its (before, after) widths; scalar pad value")

