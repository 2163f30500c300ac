"""Valid/invalid call strategies of the windowed ``nn`` operators.

``nn.conv2d``, ``nn.max_pool2d``/``nn.avg_pool2d``, the global pools and ``nn.pad``.
Valid inputs are at least as large as the dilated window minus the padding, so the
relation accepts them by construction; invalid ones mismatch channels, groups or layouts,
or make the window larger than the padded input. :func:`conv2d_call`,
:func:`pool2d_call`, :func:`global_pool_call` and :func:`pad_call` are public (the
operator tests draw from them directly). Importing this module registers them into
:mod:`conformance.strategies.ops`'s tables.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    ALL,
    MATMUL_DTYPES,
    NUMERIC,
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
    _perm,
    dtypes,
    shapes,
)

# --- nn: conv2d ----------------------------------------------------------------------------------

@st.composite
def _padding(draw: st.DrawFn) -> tuple[list[int], tuple[int, int, int, int]]:
    """A padding attribute in one of TVM's 3 forms, and its (top, left, bottom, right)."""
    form = draw(st.sampled_from((1, 2, 4)))
    vals = [draw(st.integers(0, 2)) for _ in range(form)]
    if form == 1:
        return vals, (vals[0],) * 4
    if form == 2:
        return vals, (vals[0], vals[1], vals[0], vals[1])
    return vals, (vals[0], vals[1], vals[2], vals[3])


@st.composite
def _pair_attr(draw: st.DrawFn, lo: int, hi: int) -> tuple[list[int], tuple[int, int]]:
    a = draw(st.integers(lo, hi))
    if draw(st.booleans()):
        return [a], (a, a)
    b = draw(st.integers(lo, hi))
    return [a, b], (a, b)


@st.composite
def _extent_for(draw: st.DrawFn, kernel: int, dilation: int, pad_total: int) -> int:
    """An input extent at least as large as the dilated window minus the padding."""
    low = max(0, dilation * (kernel - 1) + 1 - pad_total)
    return draw(st.integers(low, low + 4))


@st.composite
def conv2d_call(draw: st.DrawFn) -> CallArgs:
    if draw(st.booleans()):                      # depthwise: one group per input channel
        c = draw(st.integers(1, 3))
        groups, in_per_group, out_c = c, 1, c * draw(st.integers(1, 2))
    else:
        groups = draw(st.integers(1, 2))
        in_per_group = draw(st.integers(0, 2))
        c, out_c = groups * in_per_group, groups * draw(st.integers(0, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides, (sh, sw) = draw(_pair_attr(1, 3))
    dilation, (dh, dw) = draw(_pair_attr(1, 2))
    padding, (pt, pl, pb, pr) = draw(_padding())
    h = draw(_extent_for(kh, dh, pt + pb))
    w = draw(_extent_for(kw, dw, pl + pr))
    n = draw(st.integers(0, 2))
    data_layout = draw(_perm("NCHW", ("NCHW", "NHWC")))
    kernel_layout = draw(_perm("OIHW", ("OIHW", "HWIO", "HWOI")))
    out_layout = draw(st.one_of(st.just(""), _perm("NCHW", ("NCHW", "NHWC"))))
    dd, wd, od = draw(st.sampled_from(MATMUL_DTYPES))
    dims = {"N": n, "C": c, "H": h, "W": w}
    wdims = {"O": out_c, "I": in_per_group, "H": kh, "W": kw}
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "strides", strides, [1, 1])
    _maybe(draw, attrs, "padding", padding, [0, 0])
    _maybe(draw, attrs, "dilation", dilation, [1, 1])
    _maybe(draw, attrs, "groups", groups, 1)
    if draw(st.booleans()):
        attrs["channels"] = out_c if out_c else None
    if draw(st.booleans()):
        attrs["kernel_size"] = [kh, kw] if kh != kw or draw(st.booleans()) else [kh]
    _maybe(draw, attrs, "data_layout", data_layout, "NCHW")
    _maybe(draw, attrs, "kernel_layout", kernel_layout, "OIHW")
    _maybe(draw, attrs, "out_layout", out_layout, "")
    _maybe(draw, attrs, "out_dtype", od, "")
    return (T([dims[a] for a in data_layout], dd), T([wdims[a] for a in kernel_layout], wd)), \
        attrs


@O.register_valid_call("nn.conv2d")
def _conv2d_valid() -> SearchStrategy:
    return conv2d_call()


@st.composite
def _conv2d_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("channels_in", "groups", "window", "padding_len", "stride",
                                 "dilation", "layout", "out_dtype", "channels_attr",
                                 "kernel_attr", "rank", "bool")))
    data, weight = T((1, 4, 5, 5), "float32"), T((6, 2, 3, 3), "float32")
    if kind == "channels_in":
        return (data, weight), {}                              # 4 != 2 * 1
    if kind == "groups":
        return (data, T((3, 2, 3, 3), "float32")), {"groups": 2}   # 2 does not divide 3
    if kind == "window":
        k = draw(st.integers(6, 8))
        return (data, T((6, 4, k, 3), "float32")), {}
    if kind == "padding_len":
        return (data, T((6, 4, 3, 3), "float32")), {"padding": [1, 1, 1]}
    if kind == "stride":
        return (data, T((6, 4, 3, 3), "float32")), {"strides": draw(st.sampled_from(
            ([0, 1], [-1], [1, 2, 3])))}
    if kind == "dilation":
        return (data, T((6, 4, 3, 3), "float32")), {"dilation": [0]}
    if kind == "layout":
        return (data, T((6, 4, 3, 3), "float32")), {"data_layout": draw(st.sampled_from(
            ("NCHX", "NCH", "NCHW4c", "nchw")))}
    if kind == "out_dtype":
        return (data, T((6, 4, 3, 3), "float32")), {"out_dtype": "int32"}
    if kind == "channels_attr":
        return (data, T((6, 4, 3, 3), "float32")), {"channels": 5}
    if kind == "kernel_attr":
        return (data, T((6, 4, 3, 3), "float32")), {"kernel_size": [3, 2]}
    if kind == "rank":
        return (T((4, 5, 5), "float32"), T((6, 4, 3, 3), "float32")), {}
    return (T((1, 4, 5, 5), "bool"), T((6, 4, 3, 3), "bool")), {}


@O.register_invalid_call("nn.conv2d")
def _conv2d_invalid() -> SearchStrategy:
    return st.one_of(_conv2d_bad(), *_generic_bad(conv2d_call()))


# --- nn: pools -----------------------------------------------------------------------------------

@st.composite
def _pool_layouts(draw: st.DrawFn, c: int) -> tuple[str, str]:
    """(layout, out_layout) of a pool over ``c`` channels: permutations of NCHW, or (when a
    block divides ``c``) TVM's blocked ``NCHW{b}c`` / ``NHWC{b}c``."""
    blocks = [b for b in (1, 2, 4) if c and c % b == 0]

    def one(allow_empty: bool) -> SearchStrategy:
        plain = _perm("NCHW", ("NCHW", "NHWC"))
        options = [plain, plain]
        if blocks:
            options.append(st.builds(lambda p, b: f"{p}{b}c", st.sampled_from(("NCHW", "NHWC")),
                                     st.sampled_from(blocks)))
        if allow_empty:
            options.append(st.just(""))
        return st.one_of(*options)

    return draw(one(False)), draw(one(True))


def _laid_out(dims: dict[str, int], layout: str) -> list[int]:
    """The shape of a tensor of primal extents ``dims`` in ``layout`` (maybe ``NCHW{b}c``)."""
    letters = layout.rstrip("c").rstrip("0123456789")
    block = int(layout[len(letters):-1]) if layout != letters else 0
    shape = [dims[a] // block if a == "C" and block else dims[a] for a in letters]
    return shape + [block] if block else shape


@st.composite
def pool2d_call(draw: st.DrawFn, avg: bool) -> CallArgs:
    pool_size, (kh, kw) = draw(_pair_attr(1, 3))
    strides, (sh, sw) = draw(_pair_attr(1, 3))
    dilation, (dh, dw) = draw(_pair_attr(1, 2))
    padding, (pt, pl, pb, pr) = draw(_padding())
    h = draw(_extent_for(kh, dh, pt + pb))
    w = draw(_extent_for(kw, dw, pl + pr))
    dims = {"N": draw(st.integers(0, 2)), "C": draw(st.integers(0, 4)), "H": h, "W": w}
    layout, out_layout = draw(_pool_layouts(dims["C"]))
    attrs: dict[str, Any] = {"pool_size": pool_size if len(pool_size) == 2 or draw(
        st.booleans()) else pool_size[0]}
    _maybe(draw, attrs, "strides", strides, [1, 1])
    _maybe(draw, attrs, "dilation", dilation, [1, 1])
    _maybe(draw, attrs, "padding", padding, [0, 0])
    _maybe(draw, attrs, "layout", layout, "NCHW")
    _maybe(draw, attrs, "out_layout", out_layout, "")
    _maybe(draw, attrs, "ceil_mode", draw(st.booleans()), False)
    if avg:
        _maybe(draw, attrs, "count_include_pad", draw(st.booleans()), False)
    return (T(_laid_out(dims, layout), draw(dtypes(NUMERIC))),), attrs


@O.register_valid_call("nn.max_pool2d", "nn.avg_pool2d")
def _pool_valid(name: str) -> SearchStrategy:
    return pool2d_call(name == "nn.avg_pool2d")


@st.composite
def _pool_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("window", "pool_len", "stride", "layout", "bool", "rank",
                                 "missing", "padding")))
    x = T((1, 2, 4, 4), "float32")
    if kind == "window":
        return (x,), {"pool_size": [draw(st.integers(5, 7)), 1]}
    if kind == "pool_len":
        return (x,), {"pool_size": [2, 2, 2]}
    if kind == "stride":
        return (x,), {"pool_size": [2, 2], "strides": [0, 1]}
    if kind == "layout":
        return (x,), {"pool_size": [2, 2], "layout": draw(st.sampled_from(
            ("NCWH4c", "NCHW4h", "NCHWc", "OIHW")))}
    if kind == "bool":
        return (T((1, 2, 4, 4), "bool"),), {"pool_size": [2, 2]}
    if kind == "rank":
        return (T((2, 4, 4), "float32"),), {"pool_size": [2, 2]}
    if kind == "missing":
        return (x,), {}
    return (x,), {"pool_size": [2, 2], "padding": [-1]}


@O.register_invalid_call("nn.max_pool2d", "nn.avg_pool2d")
def _pool_invalid(name: str) -> SearchStrategy:
    return st.one_of(_pool_bad(), *_generic_bad(pool2d_call(name == "nn.avg_pool2d")))


@st.composite
def global_pool_call(draw: st.DrawFn) -> CallArgs:
    dims = {"N": draw(st.integers(0, 2)), "C": draw(st.integers(0, 4)),
            "H": draw(st.integers(1, 4)), "W": draw(st.integers(1, 4))}
    layout, out_layout = draw(_pool_layouts(dims["C"]))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "layout", layout, "NCHW")
    _maybe(draw, attrs, "out_layout", out_layout, "")
    return (T(_laid_out(dims, layout), draw(dtypes(NUMERIC))),), attrs


@O.register_valid_call("nn.global_avg_pool2d", "nn.global_max_pool2d")
def _global_pool_valid() -> SearchStrategy:
    return global_pool_call()


@O.register_invalid_call("nn.global_avg_pool2d", "nn.global_max_pool2d")
def _global_pool_invalid() -> SearchStrategy:
    return st.one_of(
        st.just(((T((1, 2, 0, 3), "float32"),), {})),
        st.just(((T((1, 2, 3), "float32"),), {})),
        st.just(((T((1, 2, 3, 3), "bool"),), {})),
        st.just(((T((1, 2, 3, 3), "float32"),), {"layout": "NCHW8c"})),
        *_generic_bad(global_pool_call()))


# --- nn: pad -------------------------------------------------------------------------------------

@st.composite
def pad_call(draw: st.DrawFn) -> CallArgs:
    mode = draw(st.sampled_from(("constant", "edge", "reflect")))
    s = draw(shapes(max_rank=3, max_dim=4))
    widths = []
    for d in s:
        if mode == "edge" and d == 0:
            limit = 0
        elif mode == "reflect":
            limit = max(d - 1, 0)
        else:
            limit = 2
        widths.append([draw(st.integers(0, min(limit, 2))), draw(st.integers(0, min(limit, 2)))])
    dtype = draw(dtypes(ALL))
    value_dtype = dtype if draw(st.booleans()) else draw(dtypes(ALL))
    attrs: dict[str, Any] = {"pad_width": widths}
    _maybe(draw, attrs, "pad_mode", mode, "constant")
    return (T(s, dtype), T((), value_dtype)), attrs


@O.register_valid_call("nn.pad")
def _pad_valid() -> SearchStrategy:
    return pad_call()


@st.composite
def _pad_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("count", "negative", "value", "reflect", "mode", "form")))
    x, v = T((2, 3), "float32"), T((), "float32")
    if kind == "count":
        return (x, v), {"pad_width": [[1, 1]]}
    if kind == "negative":
        return (x, v), {"pad_width": [[0, 0], [-1, 1]]}
    if kind == "value":
        return (x, T((1,), "float32")), {"pad_width": [[0, 0], [1, 1]]}
    if kind == "reflect":
        return (x, v), {"pad_width": [[0, 0], [3, 0]], "pad_mode": "reflect"}
    if kind == "mode":
        return (x, v), {"pad_width": [[0, 0], [1, 1]], "pad_mode": "wrap"}
    return (x, v), {"pad_width": [[0, 0], [1, 1, 1]]}


@O.register_invalid_call("nn.pad")
def _pad_invalid() -> SearchStrategy:
    return st.one_of(_pad_bad(), *_generic_bad(pad_call()))
