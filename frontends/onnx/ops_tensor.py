"""ONNX shape and data-movement operators (reshape, transpose, concat, slice, gather, ...) →
Relay calls. Shapes, axes, starts and pads must be known at import time (Relay's operators
take them as attributes); ``Shape`` of a statically shaped tensor is such a known value."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from frontends.onnx.builder import (
    FOLD_LIMIT,
    Unsupported,
    Value,
    affine,
    call,
    call_tuple,
    const,
    keep_offset,
    project,
    static,
    static_ints,
)
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req, scalar
from frontends.onnx.registry import converter
from frontends.onnx.shape_values import (
    dims_equal,
    dims_of,
    like_tensor,
    reshape_to,
    shape_value,
    sym_array,
)
from semantics.shapes import ANY, canon_dim, dim_prod, is_concrete


@converter("Constant", attrs=("value", "value_float", "value_floats", "value_int",
                              "value_ints", "sparse_value", "value_string", "value_strings"))
def _constant(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    from onnx import numpy_helper
    if "value" in attrs:
        return [const(numpy_helper.to_array(node.attribute[0].t))]
    if "value_float" in attrs:
        return [const(np.float32(attrs["value_float"]))]
    if "value_floats" in attrs:
        return [const(np.asarray(attrs["value_floats"], dtype=np.float32))]
    if "value_int" in attrs:
        return [const(np.int64(attrs["value_int"]))]
    if "value_ints" in attrs:
        return [const(np.asarray(attrs["value_ints"], dtype=np.int64))]
    raise Unsupported("string and sparse constants are not supported")


@converter("Shape", attrs=("start", "end"))
def _shape(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    shape = x.shape
    r = len(shape)
    start, end = int(attrs.get("start", 0)), int(attrs.get("end", r))
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    dims = shape[start:end]
    if all(is_concrete(d) for d in dims):
        return [const(np.asarray([int(d) for d in dims], dtype=np.int64))]
    ctx.note_dims(x)
    full = call("shape_of", [x], dtype="int64")
    if (start, end) != (0, r):
        full = call("strided_slice", [full], begin=(start,), end=(end,), strides=(1,))
    return [shape_value(x, dims, full)]


@converter("Size")
def _size(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if all(isinstance(d, int) for d in x.shape):
        return [const(np.int64(int(np.prod(x.static_shape()))))]
    ctx.note_dims(x)
    count = call("prod", [call("shape_of", [x], dtype="int64")], axis=None)
    count.sym = np.asarray(dim_prod(x.shape), dtype=object)
    return [count]


@converter("Reshape", attrs=("allowzero",))
def _reshape(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if ctx.opset < 5:
        shape: list[Any] = [int(s) for s in attrs["shape"]]
    else:
        shape = dims_of(ins[1] if len(ins) > 1 else None, "the Reshape shape")
    allowzero = bool(attrs.get("allowzero", 0))
    if not allowzero:
        shape = [x.shape[i] if isinstance(s, int) and s == 0 and i < x.ndim
                 and isinstance(x.shape[i], int) else s for i, s in enumerate(shape)]
    return [reshape_to(x, shape, allowzero)]


@converter("Transpose", attrs=("perm",))
def _transpose(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    perm = tuple(int(p) for p in attrs.get("perm", range(x.ndim - 1, -1, -1)))
    return [call("transpose", [x], axes=perm)]


@converter("Concat", attrs=("axis",))
def _concat(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    vals = [v for v in ins if v is not None]
    return [call_tuple("concatenate", vals, axis=int(attrs["axis"]))]


def _axes(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any],
          since: int) -> list[int] | None:
    if ctx.opset < since:
        return [int(a) for a in attrs["axes"]] if "axes" in attrs else None
    if len(ins) > 1 and ins[1] is not None:
        return static_ints(ins[1], f"the {node.op_type} axes")
    return None


@converter("Squeeze", attrs=("axes",))
def _squeeze(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axes = _axes(ctx, node, ins, attrs, 13)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    return [call("squeeze", [x], axis=tuple(a % x.ndim for a in axes))]


@converter("Unsqueeze", attrs=("axes",))
def _unsqueeze(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axes = _axes(ctx, node, ins, attrs, 13)
    if axes is None:
        raise Unsupported("Unsqueeze needs axes")
    rank = x.ndim + len(axes)
    source = x
    for a in sorted(a % rank for a in axes):
        x = call("expand_dims", [x], axis=a)
    return [keep_offset(x, source)]


@converter("Slice", attrs=("starts", "ends", "axes"))
def _slice(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        return [_static_slice(x, starts, ends, axes, [1] * len(starts))]
    first, last = _req(ins, 1), _req(ins, 2)
    axes = static_ints(ins[3], "the Slice axes") if len(ins) > 3 and ins[3] is not None \
        else list(range(int(np.prod(first.static_shape()))))
    steps = static_ints(ins[4], "the Slice steps") if len(ins) > 4 and ins[4] is not None \
        else [1] * len(axes)
    if first.const is not None and last.const is not None:
        return [_static_slice(x, static_ints(first, "the Slice starts"),
                              static_ints(last, "the Slice ends"), axes, steps)]
    if affine(first)[0] is affine(last)[0] and len(axes) == 1 and steps == [1]:
        return [_dynamic_slice(x, ins)]
    bounds = _symbolic_bounds(x, first, last, axes, steps)
    if bounds is not None:
        return [_static_slice(x, bounds[0], bounds[1], axes, steps)]
    for k, (a, st) in enumerate(zip(axes, steps)):
        pick = const(np.asarray([k], np.int64))
        x = _take_range(x, call("take", [first, pick], axis=0, mode="clip"),
                        call("take", [last, pick], axis=0, mode="clip"), a % x.ndim, st)
    return [x]


def _symbolic_bounds(x: Value, first: Value, last: Value, axes: list[int], steps: list[int]
                     ) -> tuple[list[int], list[int]] | None:
    """Run-time bounds known as dims (``x[:, : Shape(x)[1] - 1]``) as static bounds: a bound
    equal to the axis' extent plus ``k`` is the index ``k`` from the end (``k < 0``) or past
    the end; None when some bound is not of that form."""
    s_arr, e_arr = sym_array(first), sym_array(last)
    if s_arr is None or e_arr is None:
        return None
    out: tuple[list[int], list[int]] = ([], [])
    for k, a in enumerate(axes):
        n = x.shape[a % x.ndim]
        for arr, dest in ((s_arr, out[0]), (e_arr, out[1])):
            d = arr.reshape(-1)[k]
            if isinstance(d, int):
                dest.append(d)
                continue
            if d is ANY or n is ANY:
                return None
            diff = canon_dim(sympy.simplify(sympy.sympify(d) - sympy.sympify(n)))
            if not isinstance(diff, int) or steps[k] < 0:
                return None
            dest.append(diff if diff < 0 else _INT64_MAX)
    return out


_INT64_MAX = 2 ** 63 - 1


def _static_slice(x: Value, starts: list[int], ends: list[int], axes: list[int],
                  steps: list[int]) -> Value:
    """``Slice`` with static bounds (ONNX clamping): ``strided_slice`` on the static axes and
    on symbolic axes where TVM's clamping agrees (a positive step, bounds of one sign in
    order); a ``take`` of a run-time ``arange`` on the others."""
    shape = x.shape
    begin, end, stride = [0] * x.ndim, [0] * x.ndim, [1] * x.ndim
    static_axes: list[int] = []
    runtime: list[tuple[int, int, int, int]] = []
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= x.ndim
        n, s, e, st = shape[a], int(s), int(e), int(st)
        if not isinstance(n, int):
            if st > 0 and (s < 0) == (e < 0) and s <= e:
                begin[a], end[a], stride[a] = s, e, st
                static_axes.append(a)
            else:
                runtime.append((a, s, e, st))
            continue
        if st > 0:
            s = min(max(s + n if s < 0 else s, 0), n)
            e = min(max(e + n if e < 0 else e, 0), n)
            if e < s:
                e = s
        else:
            s = min(max(s + n if s < 0 else s, -1), n - 1)
            e = min(max(e + n if e < 0 else e, -1), n - 1)
        if st < 0:
            # Negative steps: express each reversed axis as reverse + positive slice.
            x = call("reverse", [x], axis=a)
            s, e, st = n - 1 - s, n - 1 - e, -st
            e = max(e, s)
        begin[a], end[a], stride[a] = s, e, st
        static_axes.append(a)
    if static_axes:
        x = call("strided_slice", [x], begin=tuple(begin[a] for a in static_axes),
                 end=tuple(end[a] for a in static_axes),
                 strides=tuple(stride[a] for a in static_axes), axes=tuple(static_axes))
    for a, s, e, st in runtime:
        x = _take_range(x, const(np.int64(s)), const(np.int64(e)), a, st)
    return x


def _take_range(x: Value, start: Value, stop: Value, axis: int, step: int) -> Value:
    """``x`` along ``axis`` at ``arange(start, stop, step)``, the bounds clamped at run time
    as ONNX's ``Slice`` clamps them (the result's extent is ``?``)."""
    n = x.shape[axis]
    extent = const(np.int64(n)) if isinstance(n, int) else call(
        "take", [call("shape_of", [x], dtype="int64"), const(np.int64(axis))], axis=0)
    if step == 0:
        raise Unsupported("a Slice step of 0")
    zero = const(np.int64(0))
    lo, hi = (zero, extent) if step > 0 else (const(np.int64(-1)),
                                              call("subtract", [extent, const(np.int64(1))]))

    def clamp(b: Value) -> Value:
        b = call("cast", [call("reshape", [b], newshape=()) if b.ndim else b], dtype="int64")
        b = call("where", [call("less", [b, zero]), call("add", [b, extent]), b])
        return call("minimum", [call("maximum", [b, lo]), hi])

    idx = call("arange", [clamp(start), clamp(stop), const(np.int64(step))], fold=False,
               dtype="int64")
    return call("take", [x, idx], axis=axis, mode="fast")


def _dynamic_slice(x: Value, ins: list[Value | None]) -> Value:
    """``Slice`` with run-time bounds along one axis whose length is static because the end
    is the start plus a constant (``x[i : i + 1]`` with a loop counter ``i``): a ``take`` of
    ``start + arange(length)`` in mode ``fast``.

    Exact where the window lies inside the axis (``0 <= start``, ``start + length <= n``);
    elsewhere ONNX clamps to a shorter (or wrapped) result whose shape Relay cannot type
    statically, and the ``take`` raises a run-time error instead.
    """
    starts, ends = _req(ins, 1), _req(ins, 2)
    axes = static_ints(ins[3], "the Slice axes") if len(ins) > 3 and ins[3] is not None else [0]
    steps = static_ints(ins[4], "the Slice steps") if len(ins) > 4 and ins[4] is not None \
        else [1]
    base_s, k_s = affine(starts)
    base_e, k_e = affine(ends)
    if len(axes) != 1 or steps != [1] or base_s is not base_e or starts.static_shape() != (1,):
        raise Unsupported("the Slice starts must be known at import time (an initializer or "
                          "constant), or one run-time start with the end a constant past it")
    axis = axes[0] % x.ndim
    n = x.static_shape()[axis]
    length = k_e - k_s
    if not 0 <= length <= n:
        raise Unsupported(f"a run-time Slice of length {length} along an axis of {n}")
    start = call("cast", [call("reshape", [starts], newshape=())], dtype="int64")
    idx = call("add", [start, const(np.arange(length, dtype=np.int64))])
    return call("take", [x, idx], axis=axis, mode="fast")


@converter("Split", attrs=("axis", "split", "num_outputs"))
def _split(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axis = int(attrs.get("axis", 0)) % x.ndim
    if "split" in attrs:
        sizes = [int(s) for s in attrs["split"]]
    elif len(ins) > 1 and ins[1] is not None:
        sizes = static_ints(ins[1], "the Split sizes")
    else:
        n = len(node.output)
        total = x.shape[axis]
        if not isinstance(total, int):
            raise Unsupported(f"Split into {n} equal parts of an axis of unknown extent {total}")
        chunk = -(-total // n)
        sizes = [min(chunk, total - i * chunk) for i in range(n)]
    if any(s <= 0 for s in sizes) or len(sizes) == 1 or x.const is not None:
        # Zero-sized parts (which ``split`` rejects), or a known value (shape arithmetic:
        # the slices fold at import time): one slice per part.
        shape = x.static_shape()
        parts, start = [], 0
        for size in sizes:
            begin, end = [0] * x.ndim, list(shape)
            begin[axis], end[axis] = start, start + size
            parts.append(call("strided_slice", [x], begin=tuple(begin), end=tuple(end),
                              strides=(1,) * x.ndim))
            start += size
        return parts
    idx = list(np.cumsum(sizes)[:-1])
    t = call("split", [x], indices_or_sections=tuple(int(i) for i in idx), axis=axis)
    return [project(t, i) for i in range(len(sizes))]


@converter("Gather", attrs=("axis",))
def _gather(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    x, idx = _req(ins, 0), _req(ins, 1)
    axis = int(attrs.get("axis", 0)) % x.ndim
    n = x.shape[axis]
    if idx.const is not None and is_concrete(n):
        idx = const(np.where(idx.const < 0, idx.const + int(n), idx.const).astype(np.int64))
    elif is_concrete(n):
        neg = call("less", [idx, scalar(0, idx)])
        idx = call("where", [neg, call("add", [idx, scalar(int(n), idx)]), idx])
    else:
        # An extent known only at run time: ``wrap`` maps [-n, n) as ONNX's negative indices.
        return [call("take", [x, idx], axis=axis, mode="wrap")]
    return [call("take", [x, idx], axis=axis, mode="clip")]


@converter("Expand")
def _expand(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    shape = dims_of(ins[1] if len(ins) > 1 else None, "the Expand shape")
    if all(isinstance(d, int) for d in (*x.shape, *shape)):
        ints = tuple(d for d in shape if isinstance(d, int))
        out = tuple(int(d) for d in np.broadcast_shapes(x.static_shape(), ints))
        return [call("broadcast_to", [x], shape=out)]
    rank = max(x.ndim, len(shape))
    xs = [1] * (rank - x.ndim) + list(x.shape)
    ts = [1] * (rank - len(shape)) + list(shape)
    dims = [a if (isinstance(b, int) and b == 1) or dims_equal(a, b) else b
            for a, b in zip(xs, ts)]
    if any(d is ANY for d in dims):
        raise Unsupported(f"an Expand of {x.shape} to {shape}: an unknown (?) dimension")
    if rank == x.ndim and all(dims_equal(a, b) for a, b in zip(x.shape, dims)):
        return [x]
    return [call("broadcast_to_like", [x, like_tensor(ctx, dims, x.dtype)])]


@converter("Tile")
def _tile(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    return [call("tile", [_req(ins, 0)], reps=tuple(static_ints(ins[1], "the Tile repeats")))]


@converter("ConstantOfShape", attrs=("value",))
def _constant_of_shape(ctx: Context, node: Any, ins: list[Value | None],
                       attrs: dict[str, Any]) -> list[Value]:
    from onnx import numpy_helper
    dims = dims_of(ins[0], "the ConstantOfShape shape")
    value = numpy_helper.to_array(node.attribute[0].t).reshape(-1) if attrs else \
        np.zeros(1, np.float32)
    if not all(isinstance(d, int) for d in dims):
        # A symbolic shape: the fill broadcast to a tensor built from the dims' sources.
        like = like_tensor(ctx, dims, value.dtype.name)
        return [call("broadcast_to_like", [const(value[0]), like])]
    shape = [d for d in dims if isinstance(d, int)]
    if int(np.prod(shape)) > FOLD_LIMIT:
        # A large fill (weights of models exported with constant fills, as the light
        # models): a ``full`` call, O(1) in the program, not a materialized constant.
        return [call("full", [const(value[0])], fold=False, shape=tuple(shape),
                     dtype=value.dtype.name)]
    return [const(np.full(shape, value[0], dtype=value.dtype))]


@converter("Range")
def _range(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    if any(v is None or v.const is None for v in ins[:3]):
        return [_runtime_range(ins)]
    start = static(ins[0], "the Range start")
    limit = static(ins[1], "the Range limit")
    delta = static(ins[2], "the Range delta")
    dtype = np.asarray(start).dtype
    first, last, step = start.item(), limit.item(), delta.item()
    if step == 0 or step != step:
        raise Unsupported(f"Range with delta {step}")
    length = max(0, math.ceil((last - first) / step)) if math.isfinite(
        (last - first) / step) else FOLD_LIMIT + 1
    if length > FOLD_LIMIT:
        # fold only what is small: a long range is computed at run time
        return [call("arange", [const(np.asarray(first, dtype)), const(np.asarray(last, dtype)),
                                const(np.asarray(step, dtype))], fold=False,
                     dtype=dtype.name)]
    return [const(np.arange(first, last, step).astype(dtype))]


def _runtime_range(ins: list[Value | None]) -> Value:
    """``Range`` with a bound known only at run time (a symbolic dim, a data value): an
    ``arange`` of scalars, its length ``?``."""
    vals = [_req(ins, k) for k in range(3)]
    dtype = vals[0].dtype
    scalars = [call("reshape", [v], newshape=()) if v.ndim else v for v in vals]
    return call("arange", scalars, fold=False, dtype=dtype)


def _wrap_pad(x: Value, pads: list[int]) -> Value:
    """Pad mode ``wrap`` (numpy's): each padded axis gathers the input at the indices
    ``-before .. size + after - 1`` taken modulo the size (negative pads crop)."""
    r = x.ndim
    shape = x.static_shape()
    for axis in range(r):
        before, after = pads[axis], pads[axis + r]
        if before == 0 and after == 0:
            continue
        if shape[axis] == 0:
            raise Unsupported("Pad mode 'wrap' of an empty axis")
        idx = np.arange(-before, shape[axis] + after, dtype=np.int64) % shape[axis]
        x = call("take", [x, const(idx)], axis=axis, mode="clip")
    return x


@converter("Pad", attrs=("mode", "pads", "value"))
def _pad(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if ctx.opset < 11:
        pads = [int(p) for p in attrs["pads"]]
        value = scalar(float(attrs.get("value", 0.0)), x)
    else:
        pads = static_ints(ins[1], "the Pad pads")
        value = ins[2] if len(ins) > 2 and ins[2] is not None else scalar(0, x)
        if value.ndim:
            value = call("reshape", [value], newshape=())
    r = x.ndim
    if len(ins) > 3 and ins[3] is not None:
        axes = [a % r for a in static_ints(ins[3], "the Pad axes")]
        full = [0] * (2 * r)
        for i, a in enumerate(axes):
            full[a], full[a + r] = pads[i], pads[i + len(axes)]
        pads = full
    if mode == "wrap":
        return [_wrap_pad(x, pads)]
    width = tuple((pads[i], pads[i + r]) for i in range(r))
    if any(p < 0 for p in pads):
        raise Unsupported("negative pads are not supported")
    return [call("nn.pad", [x, value], pad_width=width, pad_mode=mode)]

