"""Valid/invalid call strategies of the indexing, replicating and layout ``transform`` ops.

``take`` (indices in range where the mode requires it), ``strided_slice`` (never
reversed), ``tile``, ``repeat``, ``reverse``, ``broadcast_to``, ``broadcast_to_like``,
``collapse_sum_like``, ``shape_of`` and ``layout_transform`` (:data:`LAYOUT_PAIRS`).
Importing this module registers them into :mod:`conformance.strategies.ops`'s tables.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    ALL,
    INTEGER,
    NUMERIC,
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
    dtypes,
    shapes,
)

# --- transform: take, strided_slice --------------------------------------------------------------

@st.composite
def take_call(draw: st.DrawFn) -> CallArgs:
    idx_dtype = draw(dtypes(INTEGER))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "mode", draw(st.sampled_from(("clip", "wrap", "fast"))), "clip")
    if draw(st.booleans()):
        s = draw(shapes(max_rank=3, min_dim=1))
        idx = draw(shapes(max_rank=2, max_dim=3))
        if draw(st.booleans()):
            attrs["axis"] = None
        return (T(s, draw(dtypes(ALL))), T(idx, idx_dtype)), attrs
    s = list(draw(shapes(min_rank=1, max_rank=3, max_dim=3)))
    axis = draw(st.integers(0, len(s) - 1))
    s[axis] = max(s[axis], 1)
    batch = draw(st.integers(0, axis))
    idx = s[:batch] + list(draw(shapes(max_rank=2, max_dim=3)))
    attrs["axis"] = axis - len(s) if draw(st.booleans()) else axis
    _maybe(draw, attrs, "batch_dims", batch, 0)
    return (T(s, draw(dtypes(ALL))), T(idx, idx_dtype)), attrs


@O.register_valid_call("take")
def _take_valid() -> SearchStrategy:
    return take_call()


@O.register_invalid_call("take")
def _take_invalid() -> SearchStrategy:
    x, i = T((2, 3), "float32"), T((4,), "int32")
    return st.one_of(st.sampled_from((
        ((x, T((4,), "float32")), {}),
        ((x, T((4,), "bool")), {}),
        ((x, i), {"axis": 2}),
        ((x, i), {"axis": 0, "batch_dims": 1}),
        ((x, T((3, 2), "int32")), {"axis": 1, "batch_dims": 1}),
        ((x, i), {"mode": "nan"}),
    )), *_generic_bad(take_call()))


@st.composite
def strided_slice_call(draw: st.DrawFn) -> CallArgs:
    from semantics.ops.transform_relations import canonicalize_index

    s = list(draw(shapes(min_rank=1, max_rank=3)))
    size_mode = draw(st.integers(0, 3)) == 0
    use_axes = draw(st.booleans())
    axes = sorted(draw(st.sets(st.integers(0, len(s) - 1), min_size=1))) if use_axes \
        else list(range(draw(st.integers(0, len(s)))))
    begin: list[Any] = []
    end: list[Any] = []
    strides: list[int] = []
    for axis in axes:
        dim = s[axis]
        if size_mode:
            begin.append(draw(st.integers(-dim - 2, dim + 2)))
            end.append(draw(st.one_of(st.integers(-1, dim + 1), st.none())))
            strides.append(1)
            continue
        stride = draw(st.sampled_from((1, 1, 2, 3, -1, -2)))
        bi, ei = draw(st.integers(-dim - 2, dim + 2)), draw(st.integers(-dim - 2, dim + 2))
        cb, ce = canonicalize_index(bi, dim, stride), canonicalize_index(ei, dim, stride)
        if (stride > 0 and cb > ce) or (stride < 0 and ce > cb):
            bi, ei = ei, bi
            cb, ce = ce, cb
        b: int | None = bi
        e: int | None = ei
        if draw(st.integers(0, 4)) == 0:
            b = None
        if draw(st.integers(0, 4)) == 0 and (stride > 0 or cb >= 0):
            e = None
        begin.append(b)
        end.append(e)
        strides.append(stride)
    attrs: dict[str, Any] = {"begin": begin, "end": end}
    if use_axes:
        attrs["axes"] = [a - len(s) if draw(st.booleans()) else a for a in axes]
    if size_mode:
        attrs["slice_mode"] = "size"
        if draw(st.booleans()):
            attrs["strides"] = [1] * len(axes)
    elif any(x != 1 for x in strides):
        attrs["strides"] = strides
    elif draw(st.booleans()):
        attrs["strides"] = strides[:draw(st.integers(0, len(strides)))]
    return (T(s, draw(dtypes(ALL))),), attrs


@O.register_valid_call("strided_slice")
def _strided_slice_valid() -> SearchStrategy:
    return strided_slice_call()


@O.register_invalid_call("strided_slice")
def _strided_slice_invalid() -> SearchStrategy:
    x = T((4, 5), "float32")
    return st.one_of(st.sampled_from((
        ((x,), {"begin": [3], "end": [1]}),
        ((x,), {"begin": [0], "end": [2], "strides": [0]}),
        ((x,), {"begin": [0, 0], "end": [2, 2], "strides": [1, 1, 1]}),
        ((x,), {"begin": [0, 0, 0], "end": [1, 1, 1]}),
        ((x,), {"begin": [0], "end": [2], "axes": [0, 1]}),
        ((x,), {"begin": [0], "end": [2], "axes": [2]}),
        ((x,), {"begin": [0, 0], "end": [2, 2], "axes": [1, -1]}),
        ((x,), {"begin": "0", "end": [2]}),
        ((x,), {"begin": [0], "end": [1.5]}),
        ((x,), {"begin": [0], "end": [2], "slice_mode": "stride"}),
        ((x,), {"end": [2]}),
    )), *_generic_bad(strided_slice_call()))


# --- transform: tile, repeat, reverse ------------------------------------------------------------

@st.composite
def tile_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_rank=3, max_dim=3))
    reps = draw(st.lists(st.integers(1, 3), max_size=4))
    return (T(s, draw(dtypes(ALL))),), {"reps": reps}


@O.register_valid_call("tile")
def _tile_valid() -> SearchStrategy:
    return tile_call()


@O.register_invalid_call("tile")
def _tile_invalid() -> SearchStrategy:
    x = T((2, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"reps": [0]}), ((x,), {"reps": [2, -1]}),
                                      ((x,), {"reps": [1.5]}), ((x,), {}))),
                     *_generic_bad(tile_call()))


@st.composite
def repeat_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(min_rank=1, max_rank=3, max_dim=3))
    return (T(s, draw(dtypes(ALL))),), {"repeats": draw(st.integers(1, 3)),
                                        "axis": draw(st.integers(-len(s), len(s) - 1))}


@O.register_valid_call("repeat")
def _repeat_valid() -> SearchStrategy:
    return repeat_call()


@O.register_invalid_call("repeat")
def _repeat_invalid() -> SearchStrategy:
    x = T((2, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"repeats": 0, "axis": 0}),
                                      ((x,), {"repeats": 2, "axis": 2}),
                                      ((x,), {"repeats": 2}),
                                      ((T((), "float32"),), {"repeats": 2, "axis": 0}))),
                     *_generic_bad(repeat_call()))


@st.composite
def reverse_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(min_rank=1))
    return (T(s, draw(dtypes(ALL))),), {"axis": draw(st.integers(-len(s), len(s) - 1))}


@O.register_valid_call("reverse")
def _reverse_valid() -> SearchStrategy:
    return reverse_call()


@O.register_invalid_call("reverse")
def _reverse_invalid() -> SearchStrategy:
    x = T((2, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"axis": 2}), ((x,), {"axis": -3}), ((x,), {}),
                                      ((T((), "int32"),), {"axis": 0}))),
                     *_generic_bad(reverse_call()))


# --- transform: broadcasting ---------------------------------------------------------------------

@st.composite
def _broadcast_pair(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """(small, big): small broadcasts to exactly big."""
    big = list(draw(shapes()))
    keep = draw(st.integers(0, len(big)))
    small = [d if draw(st.booleans()) else 1 for d in big[len(big) - keep:]]
    return small, big


@st.composite
def broadcast_to_call(draw: st.DrawFn) -> CallArgs:
    small, big = draw(_broadcast_pair())
    return (T(small, draw(dtypes(ALL))),), {"shape": big}


@O.register_valid_call("broadcast_to")
def _broadcast_to_valid() -> SearchStrategy:
    return broadcast_to_call()


@O.register_invalid_call("broadcast_to")
def _broadcast_to_invalid() -> SearchStrategy:
    return st.one_of(st.sampled_from((
        ((T((2, 3), "float32"),), {"shape": [3, 3]}),
        ((T((2, 3), "float32"),), {"shape": [3]}),
        ((T((3,), "float32"),), {"shape": [-1, 3]}),
        ((T((3,), "float32"),), {}),
    )), *_generic_bad(broadcast_to_call()))


@st.composite
def broadcast_to_like_call(draw: st.DrawFn) -> CallArgs:
    small, big = draw(_broadcast_pair())
    d = draw(dtypes(ALL))
    return (T(small, d), T(big, d)), {}


@O.register_valid_call("broadcast_to_like")
def _broadcast_to_like_valid() -> SearchStrategy:
    return broadcast_to_like_call()


@O.register_invalid_call("broadcast_to_like")
def _broadcast_to_like_invalid() -> SearchStrategy:
    return st.one_of(st.sampled_from((
        ((T((2, 3), "float32"), T((3, 3), "float32")), {}),
        ((T((2, 3), "float32"), T((3,), "float32")), {}),
        ((T((3,), "float32"), T((2, 3), "int32")), {}),
    )), *_generic_bad(broadcast_to_like_call()))


@st.composite
def collapse_sum_like_call(draw: st.DrawFn) -> CallArgs:
    small, big = draw(_broadcast_pair())
    d = draw(dtypes(NUMERIC))
    return (T(big, d), T(small, d)), {}


@O.register_valid_call("collapse_sum_like")
def _collapse_sum_like_valid() -> SearchStrategy:
    return collapse_sum_like_call()


@O.register_invalid_call("collapse_sum_like")
def _collapse_sum_like_invalid() -> SearchStrategy:
    return st.one_of(st.sampled_from((
        ((T((2, 3), "float32"), T((3, 3), "float32")), {}),
        ((T((3,), "float32"), T((2, 3), "float32")), {}),
        ((T((2, 3), "float32"), T((3,), "int32")), {}),
        ((T((2, 3), "bool"), T((3,), "bool")), {}),
    )), *_generic_bad(collapse_sum_like_call()))


# --- transform: shape_of, layout_transform -------------------------------------------------------

@st.composite
def shape_of_call(draw: st.DrawFn) -> CallArgs:
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "dtype", draw(st.sampled_from(("int32", "int64", "int8", "uint16",
                                                        "float32"))), "int32")
    return (T(draw(shapes()), draw(dtypes(ALL))),), attrs


@O.register_valid_call("shape_of")
def _shape_of_valid() -> SearchStrategy:
    return shape_of_call()


@O.register_invalid_call("shape_of")
def _shape_of_invalid() -> SearchStrategy:
    bad = st.sampled_from(({"dtype": "bool"}, {"dtype": "float31"}, {"dtype": 32},
                           {"dtype": "int32x4"}))
    return st.one_of(*_generic_bad(shape_of_call(), bad))


# (src, dst) layouts; "{f}" is replaced by a drawn block factor.
LAYOUT_PAIRS = (("NCHW", "NHWC"), ("NHWC", "NCHW"), ("NCHW", "NCHW{f}c"), ("NCHW{f}c", "NCHW"),
                ("NHWC", "NCHW{f}c"), ("NCHW{f}c", "NHWC"), ("NCHW{f}c", "NCHW{g}c"),
                ("OIHW", "OIHW{f}i{g}o"), ("OIHW{f}i{g}o", "HWIO"), ("NCHW", "NCHW"),
                ("NC", "CN"), ("NCW", "NWC{f}c"))


@st.composite
def layout_transform_call(draw: st.DrawFn) -> CallArgs:
    src, dst = draw(st.sampled_from(LAYOUT_PAIRS))
    f, g = draw(st.sampled_from((1, 2, 4))), draw(st.sampled_from((1, 2, 4)))
    src, dst = src.format(f=f, g=g), dst.format(f=f, g=g)
    from semantics.ops.layouts import parse_layout

    factors: dict[str, int] = {}
    for layout in (src, dst):
        for axis, factor in parse_layout("layout_transform", layout):
            if axis.islower():
                factors[axis.upper()] = math.lcm(factors.get(axis.upper(), 1), factor)
    size = {a: factors.get(a, 1) * draw(st.integers(0 if a not in factors else 0, 3))
            for a, _ in parse_layout("layout_transform", src) if a.isupper()}
    src_axes = parse_layout("layout_transform", src)
    block = {a.upper(): fac for a, fac in src_axes if a.islower()}
    shape = [fac if a.islower() else size[a] // block.get(a, 1) for a, fac in src_axes]
    return (T(shape, draw(dtypes(ALL))),), {"src_layout": src, "dst_layout": dst}


@O.register_valid_call("layout_transform")
def _layout_transform_valid() -> SearchStrategy:
    return layout_transform_call()


@O.register_invalid_call("layout_transform")
def _layout_transform_invalid() -> SearchStrategy:
    x = T((1, 6, 2, 2), "float32")
    return st.one_of(st.sampled_from((
        ((x,), {"src_layout": "NCHW", "dst_layout": "NCHW4c"}),
        ((x,), {"src_layout": "NCHW", "dst_layout": "NCH"}),
        ((x,), {"src_layout": "NCHW", "dst_layout": "NCHW4"}),
        ((x,), {"src_layout": "NCHW", "dst_layout": "NCHWc"}),
        ((x,), {"src_layout": "NCHW", "dst_layout": "NCHWW"}),
        ((x,), {"src_layout": "NCHW", "dst_layout": "NHW4c"}),
        ((x,), {"src_layout": "NCH", "dst_layout": "NHC"}),
        ((x,), {"src_layout": "NCHW2c", "dst_layout": "NCHW"}),
        ((T((1, 3, 2, 2, 3), "float32"),), {"src_layout": "NCHW2c", "dst_layout": "NCHW"}),
        ((x,), {"src_layout": "", "dst_layout": ""}),
        ((x,), {"src_layout": "NCHW"}),
    )), *_generic_bad(layout_transform_call()))
