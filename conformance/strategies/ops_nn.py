"""Valid/invalid call strategies and inputs for the ``nn`` and ``transform`` operator families.

Registered into the tables of :mod:`conformance.strategies.ops` (``VALID_CALLS``,
``INVALID_CALLS``, ``INPUTS``) with its decorators; that module imports this one on
first use. Each valid strategy draws ``(arg_types, attrs)``: concrete argument types
(a ``TupleType`` of tensors for ``concatenate``/``stack``) and attributes *as written
in a call* (lists, sometimes the 1-element forms, defaults sometimes spelled out),
built so that the relation accepts them *by construction* (no filtering): convolution
and pooling inputs are at least as large as the dilated window, ``reshape`` codes are
derived from the input shape, slices are never reversed, ``take`` indices are in
range where the mode requires it.

Invalid strategies draw calls that ``normalize_attrs`` or the relation must reject
with ``RelayTypeError``: mismatched channels/dims/dtypes, windows larger than the
padded input, axes out of range, malformed layouts, bad attribute values.

Inputs (:func:`call_inputs`) are drawn fast (a seed and numpy's generator, not
element by element), so that convolutions with hundreds of elements stay cheap;
``exact=False`` mixes in NaN, ±inf, -0.0 and the integer extremes. Only ``take``
registers them in ``INPUTS`` (its indices must be in range for mode ``fast``): the
program generator turns registered inputs into constants, which the other operators
do not need.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import ops as O
from semantics.types import TensorType, TupleType, Type

SearchStrategy = st.SearchStrategy
CallArgs = tuple[tuple[Type, ...], dict[str, Any]]

NUMERIC = O.NUMERIC_DTYPES
FLOATS = O.FLOAT_FIRST
ALL = O.ALL_DTYPES
INTEGER = O.INTEGER_DTYPES
NOT_A_TENSOR = O.NOT_A_TENSOR

NN_OPS = ("nn.relu", "nn.leaky_relu", "nn.softmax", "nn.log_softmax", "nn.dense", "nn.bias_add",
          "nn.batch_norm", "nn.dropout", "nn.batch_flatten", "nn.conv2d", "nn.max_pool2d",
          "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.pad")
TRANSFORM_OPS = ("reshape", "reshape_like", "transpose", "expand_dims", "squeeze",
                 "concatenate", "stack", "split", "take", "strided_slice", "tile", "repeat",
                 "reverse", "broadcast_to", "broadcast_to_like", "collapse_sum_like", "shape_of",
                 "layout_transform")


def T(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(tuple(shape), dtype)


def shapes(min_rank: int = 0, max_rank: int = 4, min_dim: int = 0, max_dim: int = 5
           ) -> SearchStrategy:
    return O.small_shapes(min_rank=min_rank, max_rank=max_rank, min_dim=min_dim,
                          max_dim=max_dim)


def dtypes(group: Sequence[str]) -> SearchStrategy:
    return st.sampled_from(tuple(group))


def _maybe(draw: st.DrawFn, attrs: dict[str, Any], key: str, value: Any, default: Any) -> None:
    """Write ``key=value`` unless it is the default (then write it half of the time)."""
    if value != default or draw(st.booleans()):
        attrs[key] = value


def _perm(letters: str, common: Sequence[str]) -> SearchStrategy:
    return st.one_of(st.sampled_from(tuple(common)),
                     st.permutations(list(letters)).map("".join))


# --- inputs ----------------------------------------------------------------------------------

_SPECIALS = (np.nan, np.inf, -np.inf, -0.0)


@st.composite
def fast_array(draw: st.DrawFn, dtype: str, shape: Sequence[int], exact: bool) -> np.ndarray:
    """An array of exactly ``dtype``/``shape`` from a drawn seed (edge values unless exact)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    shape = tuple(int(d) for d in shape)
    size = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt == np.bool_:
        out = rng.integers(0, 2, size=size).astype(bool)
    elif dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -8
        small = rng.integers(lo, 9, size=size)
        if exact:
            out = small.astype(dt)
        else:
            info = np.iinfo(dt)
            wide = rng.integers(int(info.min), int(info.max), size=size, endpoint=True, dtype=dt)
            out = np.where(rng.random(size) < 0.5, small.astype(dt), wide)
    elif exact:
        out = rng.integers(-8, 9, size=size).astype(dt)
    else:
        vals = rng.standard_normal(size) * 4
        special = rng.random(size) < 0.08
        vals[special] = rng.choice(_SPECIALS, size=int(special.sum()))
        out = vals.astype(dt)
    return np.asarray(out, dtype=dt).reshape(shape)


def value_for(t: Type, exact: bool) -> SearchStrategy:
    if isinstance(t, TupleType):
        return st.tuples(*(value_for(f, exact) for f in t.fields))
    assert isinstance(t, TensorType)
    return fast_array(t.dtype, [int(d) for d in t.shape], exact)


@st.composite
def plain_inputs(draw: st.DrawFn, arg_types: tuple[Type, ...], attrs: dict[str, Any],
                 exact: bool) -> tuple[Any, ...]:
    return tuple(draw(value_for(t, exact)) for t in arg_types)


@st.composite
def take_inputs(draw: st.DrawFn, arg_types: tuple[Type, ...], attrs: dict[str, Any],
                exact: bool) -> tuple[Any, ...]:
    """Data, and indices valid for the mode: in [0, n) for "fast", anything otherwise."""
    from semantics import ops

    data_t, idx_t = arg_types
    assert isinstance(data_t, TensorType) and isinstance(idx_t, TensorType)
    norm = ops.get("take").normalize_attrs(attrs)
    data = draw(fast_array(data_t.dtype, data_t.shape, exact))
    shape = [int(d) for d in idx_t.shape]
    n = data.size if norm["axis"] is None else data.shape[norm["axis"]]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    size = int(np.prod(shape)) if shape else 1
    if norm["mode"] == "fast" or exact:
        raw = rng.integers(0, max(n, 1), size=size)
    else:
        raw = rng.integers(-3 * n - 3, 3 * n + 4, size=size)
    info = np.iinfo(np.dtype(idx_t.dtype))
    raw = np.clip(raw, int(info.min), int(info.max))
    return data, raw.astype(idx_t.dtype).reshape(shape)


# Only take constrains its argument values (indices in range for mode "fast"): it alone is
# registered in INPUTS, whose entries the program generator turns into constants.
O.register_inputs("take")(take_inputs)


def call_inputs(name: str, arg_types: tuple[Type, ...], attrs: dict[str, Any], exact: bool
                ) -> SearchStrategy:
    """Argument values for a valid call of ``name`` (tuples for tuple arguments), drawn fast."""
    if name == "take":
        return take_inputs(arg_types, attrs, exact)
    return plain_inputs(arg_types, attrs, exact)


# --- helpers for invalid calls ------------------------------------------------------------------

@st.composite
def _non_tensor_arg(draw: st.DrawFn, call: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    i = draw(st.integers(0, len(arg_types) - 1))
    return arg_types[:i] + (NOT_A_TENSOR,) + arg_types[i + 1:], attrs


@st.composite
def _extra_arg(draw: st.DrawFn, call: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    return arg_types + (T((), "float32"),), attrs


@st.composite
def _with_attrs(draw: st.DrawFn, call: SearchStrategy, bad: SearchStrategy) -> CallArgs:
    arg_types, attrs = draw(call)
    return arg_types, {**attrs, **draw(bad)}


def _generic_bad(call: SearchStrategy, bad_attrs: SearchStrategy | None = None
                 ) -> list[SearchStrategy]:
    out = [_non_tensor_arg(call), _extra_arg(call),
           _with_attrs(call, st.just({"no_such_attribute": 1}))]
    if bad_attrs is not None:
        out.append(_with_attrs(call, bad_attrs))
    return out


# --- nn: activations and softmax ----------------------------------------------------------------

def _unary(group: Sequence[str], min_rank: int = 0) -> SearchStrategy:
    return st.builds(lambda s, d: ((T(s, d),), {}), shapes(min_rank=min_rank), dtypes(group))


@O.register_valid_call("nn.relu")
def _relu_valid() -> SearchStrategy:
    return _unary(NUMERIC)


@O.register_invalid_call("nn.relu")
def _relu_invalid() -> SearchStrategy:
    return st.one_of(_unary(("bool",)), *_generic_bad(_unary(NUMERIC)))


@st.composite
def _leaky_call(draw: st.DrawFn) -> CallArgs:
    (x,), _ = draw(_unary(NUMERIC))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["alpha"] = draw(st.sampled_from((0.0, 0.01, 0.25, 0.5, 2.0, 3)))
    return (x,), attrs


@O.register_valid_call("nn.leaky_relu")
def _leaky_valid() -> SearchStrategy:
    return _leaky_call()


@O.register_invalid_call("nn.leaky_relu")
def _leaky_invalid() -> SearchStrategy:
    bad = st.sampled_from(({"alpha": -0.5}, {"alpha": "0.1"}, {"alpha": [0.1]}))
    return st.one_of(_unary(("bool",)), *_generic_bad(_leaky_call(), bad))


@st.composite
def _softmax_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(min_rank=1))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    return (T(s, draw(dtypes(FLOATS))),), attrs


@O.register_valid_call("nn.softmax", "nn.log_softmax")
def _softmax_valid() -> SearchStrategy:
    return _softmax_call()


@st.composite
def _softmax_bad_axis(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes())
    axis = draw(st.one_of(st.integers(len(s), len(s) + 2), st.integers(-len(s) - 3, -len(s) - 1)))
    return (T(s, "float32"),), {"axis": axis}


@O.register_invalid_call("nn.softmax", "nn.log_softmax")
def _softmax_invalid() -> SearchStrategy:
    return st.one_of(_unary(INTEGER + ("bool",), min_rank=1), _softmax_bad_axis(),
                     *_generic_bad(_softmax_call()))


# --- nn: dense, bias_add, batch_norm, dropout, batch_flatten ------------------------------------

# (data dtype, weight dtype, out_dtype attribute)
MATMUL_DTYPES = (("float32", "float32", ""), ("float64", "float64", ""),
                 ("float16", "float16", ""), ("int8", "int8", "int32"), ("int32", "int32", ""),
                 ("uint8", "int8", "int32"), ("int8", "int8", "float32"),
                 ("int16", "int16", "int8"), ("float16", "float16", "float32"),
                 ("uint64", "uint64", ""))


@st.composite
def _dense_call(draw: st.DrawFn) -> CallArgs:
    batch = draw(shapes(max_rank=2, max_dim=3))
    k = draw(st.integers(0, 4))
    units = draw(st.integers(0, 4))
    dd, wd, od = draw(st.sampled_from(MATMUL_DTYPES))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["units"] = units
    _maybe(draw, attrs, "out_dtype", od, "")
    return (T((*batch, k), dd), T((units, k), wd)), attrs


@O.register_valid_call("nn.dense")
def _dense_valid() -> SearchStrategy:
    return _dense_call()


@st.composite
def _dense_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("k", "units", "rank", "dtype", "out_dtype", "bool")))
    k = draw(st.integers(1, 4))
    if kind == "k":
        return (T((2, k), "float32"), T((3, k + 1), "float32")), {}
    if kind == "units":
        return (T((2, k), "float32"), T((3, k), "float32")), {"units": 4}
    if kind == "rank":
        return (T((2, k), "float32"), T((1, 3, k), "float32")), {}
    if kind == "dtype":
        return (T((2, k), "float32"), T((3, k), "float32")), {"out_dtype": "int32"}
    if kind == "out_dtype":
        return (T((2, k), "float32"), T((3, k), "float32")), {"out_dtype": "float31"}
    return (T((2, k), "bool"), T((3, k), "bool")), {}


@O.register_invalid_call("nn.dense")
def _dense_invalid() -> SearchStrategy:
    return st.one_of(_dense_bad(), *_generic_bad(_dense_call()))


@st.composite
def _bias_add_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(min_rank=1))
    d = draw(dtypes(NUMERIC))
    if len(s) >= 2 and draw(st.booleans()):
        axis, attrs = 1, {}
    else:
        axis = draw(st.integers(-len(s), len(s) - 1))
        attrs = {"axis": axis}
    return (T(s, d), T((s[axis],), d)), attrs


@O.register_valid_call("nn.bias_add")
def _bias_add_valid() -> SearchStrategy:
    return _bias_add_call()


@st.composite
def _bias_add_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("len", "dtype", "axis", "rank", "bool")))
    s = draw(shapes(min_rank=1, min_dim=1))
    if kind == "len":
        return (T(s, "float32"), T((s[0] + 1,), "float32")), {"axis": 0}
    if kind == "dtype":
        return (T(s, "float32"), T((s[0],), "float64")), {"axis": 0}
    if kind == "axis":
        return (T(s, "float32"), T((s[0],), "float32")), {"axis": len(s)}
    if kind == "rank":
        return (T(s, "float32"), T((s[0], 1), "float32")), {"axis": 0}
    return (T(s, "bool"), T((s[0],), "bool")), {"axis": 0}


@O.register_invalid_call("nn.bias_add")
def _bias_add_invalid() -> SearchStrategy:
    return st.one_of(_bias_add_bad(), *_generic_bad(_bias_add_call()))


@st.composite
def _batch_norm_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(min_rank=1))
    d = draw(dtypes(FLOATS))
    attrs: dict[str, Any] = {}
    if len(s) >= 2 and draw(st.booleans()):
        axis = 1
    else:
        axis = attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    if draw(st.booleans()):
        attrs["epsilon"] = draw(st.sampled_from((1e-5, 1e-3, 0.1, 0)))
    for key in ("center", "scale"):
        if draw(st.booleans()):
            attrs[key] = draw(st.booleans())
    vec = T((s[axis],), d)
    return (T(s, d), vec, vec, vec, vec), attrs


@O.register_valid_call("nn.batch_norm")
def _batch_norm_valid() -> SearchStrategy:
    return _batch_norm_call()


@st.composite
def _batch_norm_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("len", "int", "axis", "dtype", "arity")))
    s = draw(shapes(min_rank=2, min_dim=1))
    vec = T((s[1],), "float32")
    if kind == "len":
        i = draw(st.integers(1, 4))
        args = [T(s, "float32"), vec, vec, vec, vec]
        args[i] = T((s[1] + 1,), "float32")
        return tuple(args), {}
    if kind == "int":
        v = T((s[1],), "int32")
        return (T(s, "int32"), v, v, v, v), {}
    if kind == "axis":
        return (T(s, "float32"), vec, vec, vec, vec), {"axis": len(s)}
    if kind == "dtype":
        return (T(s, "float32"), vec, vec, vec, T((s[1],), "float64")), {}
    return (T(s, "float32"), vec, vec, vec), {}


@O.register_invalid_call("nn.batch_norm")
def _batch_norm_invalid() -> SearchStrategy:
    bad = st.sampled_from(({"epsilon": "small"}, {"center": 2}, {"axis": 1.0}))
    return st.one_of(_batch_norm_bad(), *_generic_bad(_batch_norm_call(), bad))


@st.composite
def _dropout_call(draw: st.DrawFn) -> CallArgs:
    attrs = {"rate": draw(st.sampled_from((0.0, 0.1, 0.5, 1.0)))} if draw(st.booleans()) else {}
    return (T(draw(shapes()), draw(dtypes(ALL))),), attrs


@O.register_valid_call("nn.dropout")
def _dropout_valid() -> SearchStrategy:
    return _dropout_call()


@O.register_invalid_call("nn.dropout")
def _dropout_invalid() -> SearchStrategy:
    bad = st.sampled_from(({"rate": 1.5}, {"rate": -0.1}, {"rate": "half"}))
    return st.one_of(*_generic_bad(_dropout_call(), bad))


@O.register_valid_call("nn.batch_flatten")
def _batch_flatten_valid() -> SearchStrategy:
    return _unary(ALL, min_rank=1)


@O.register_invalid_call("nn.batch_flatten")
def _batch_flatten_invalid() -> SearchStrategy:
    return st.one_of(st.builds(lambda d: ((T((), d),), {}), dtypes(ALL)),
                     *_generic_bad(_unary(ALL, min_rank=1)))


# --- nn: conv2d ----------------------------------------------------------------------------------

@st.composite
def _padding(draw: st.DrawFn) -> tuple[list[int], tuple[int, int, int, int]]:
    """A padding attribute in one of TVM's 3 forms, and its (top, left, bottom, right)."""
    form = draw(st.sampled_from((1, 2, 4)))
    vals = [draw(st.integers(0, 2)) for _ in range(form)]
    if form == 1:
        return vals, (vals[0],) * 4  # type: ignore[return-value]
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
def pool2d_call(draw: st.DrawFn, avg: bool) -> CallArgs:
    pool_size, (kh, kw) = draw(_pair_attr(1, 3))
    strides, (sh, sw) = draw(_pair_attr(1, 3))
    dilation, (dh, dw) = draw(_pair_attr(1, 2))
    padding, (pt, pl, pb, pr) = draw(_padding())
    h = draw(_extent_for(kh, dh, pt + pb))
    w = draw(_extent_for(kw, dw, pl + pr))
    layout = draw(_perm("NCHW", ("NCHW", "NHWC")))
    out_layout = draw(st.one_of(st.just(""), _perm("NCHW", ("NCHW", "NHWC"))))
    dims = {"N": draw(st.integers(0, 2)), "C": draw(st.integers(0, 3)), "H": h, "W": w}
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
    return (T([dims[a] for a in layout], draw(dtypes(NUMERIC))),), attrs


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
        return (x,), {"pool_size": [2, 2], "layout": "NCWH4c"}
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
    layout = draw(_perm("NCHW", ("NCHW", "NHWC")))
    out_layout = draw(st.one_of(st.just(""), _perm("NCHW", ("NCHW", "NHWC"))))
    dims = {"N": draw(st.integers(0, 2)), "C": draw(st.integers(0, 3)),
            "H": draw(st.integers(1, 4)), "W": draw(st.integers(1, 4))}
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "layout", layout, "NCHW")
    _maybe(draw, attrs, "out_layout", out_layout, "")
    return (T([dims[a] for a in layout], draw(dtypes(NUMERIC))),), attrs


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


# --- transform: reshape, reshape_like ------------------------------------------------------------

def _factorizations(total: int, parts: int) -> list[list[int]]:
    """Ordered factorizations of ``total`` into ``parts`` positive factors (total > 0)."""
    if parts == 0:
        return [[]] if total == 1 else []
    out = []
    for f in range(1, total + 1):
        if total % f == 0:
            out += [[f] + rest for rest in _factorizations(total // f, parts - 1)]
    return out


@st.composite
def _target_shape(draw: st.DrawFn, total: int) -> list[int]:
    """A shape with ``total`` elements (rank <= 4)."""
    if total == 0:
        s = draw(shapes(min_rank=1, max_rank=3, max_dim=3))
        i = draw(st.integers(0, len(s) - 1))
        return [0 if j == i else d for j, d in enumerate(s)]
    parts = draw(st.integers(0 if total == 1 else 1, 4))
    choices = _factorizations(total, parts)
    return draw(st.sampled_from(choices))


@st.composite
def reshape_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(max_dim=4)))
    total = math.prod(s)
    if draw(st.booleans()):                    # literal target, maybe one -1
        target = draw(_target_shape(total))
        nonzero = [i for i, d in enumerate(target) if d]
        if total and nonzero and draw(st.booleans()):
            target[draw(st.sampled_from(nonzero))] = -1
        attrs: dict[str, Any] = {"newshape": target}
        if 0 in target and draw(st.booleans()):
            attrs["allowzero"] = True
        elif 0 in target:
            attrs["allowzero"] = 1
        return (T(s, draw(dtypes(ALL))),), attrs
    codes: list[int] = []                       # codes derived by walking the input dims
    src = 0
    inferred = False
    while src < len(s):
        action = draw(st.sampled_from(("copy", "merge", "split", "rest", "literal", "infer")))
        d = s[src]
        if action == "merge" and src + 1 < len(s):
            codes.append(-3)
            src += 2
        elif action == "split" and d > 0:
            a = draw(st.sampled_from([f for f in range(1, d + 1) if d % f == 0]))
            form = draw(st.sampled_from(("left", "right", "both")))
            codes += [-4] + ([a, -1] if form == "left" else [-1, a] if form == "right"
                             else [a, d // a])
            src += 1
        elif action == "rest":
            codes.append(-2)
            src = len(s)
        elif action == "infer" and not inferred:
            codes.append(-1)
            inferred = True
            src += 1
        elif action == "literal" and d > 0:
            codes.append(d)
            src += 1
        else:
            codes.append(0)
            src += 1
    codes += [1] * draw(st.integers(0, 2))
    return (T(s, draw(dtypes(ALL))),), {"newshape": codes}


@O.register_valid_call("reshape")
def _reshape_valid() -> SearchStrategy:
    return reshape_call()


@st.composite
def _reshape_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("total", "two_infer", "merge", "code", "copy", "split",
                                 "not_ints")))
    x = T((2, 3, 4), "float32")
    newshape = {"total": [5, 5], "two_infer": [-1, -1], "merge": [2, 3, -3],
                "code": [-5, 24], "copy": [24, 1, 1, 0], "split": [-4, 5, -1, 4],
                "not_ints": "24"}[kind]
    return (x,), {"newshape": newshape}


@O.register_invalid_call("reshape")
def _reshape_invalid() -> SearchStrategy:
    return st.one_of(_reshape_bad(), *_generic_bad(reshape_call()))


@st.composite
def reshape_like_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(max_dim=4)))
    lb = draw(st.integers(0, len(s)))
    le = draw(st.integers(lb, len(s)))
    middle = draw(_target_shape(math.prod(s[lb:le])))
    prefix = list(draw(shapes(max_rank=1, max_dim=3)))
    suffix = list(draw(shapes(max_rank=1, max_dim=3)))
    like = prefix + middle + suffix
    attrs: dict[str, Any] = {}
    whole = lb == 0 and le == len(s) and not prefix and not suffix
    if not whole or draw(st.booleans()):
        if le < len(s) and draw(st.booleans()):
            lhs_end: int | None = le - len(s)            # negative form
        else:
            lhs_end = None if le == len(s) and draw(st.booleans()) else le
        attrs = {"lhs_begin": lb, "lhs_end": lhs_end,
                 "rhs_begin": len(prefix), "rhs_end": len(prefix) + len(middle)}
    d = draw(dtypes(ALL))
    return (T(s, d), T(like, draw(dtypes(ALL)))), attrs


@O.register_valid_call("reshape_like")
def _reshape_like_valid() -> SearchStrategy:
    return reshape_like_call()


@O.register_invalid_call("reshape_like")
def _reshape_like_invalid() -> SearchStrategy:
    return st.one_of(
        st.just(((T((2, 3), "float32"), T((7,), "float32")), {})),
        st.just(((T((2, 3), "float32"), T((6,), "float32")), {"lhs_begin": 3})),
        st.just(((T((2, 3), "float32"), T((6,), "float32")), {"rhs_end": 5})),
        *_generic_bad(reshape_like_call()))


# --- transform: transpose, expand_dims, squeeze --------------------------------------------------

@st.composite
def transpose_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes())
    x = T(s, draw(dtypes(ALL)))
    if draw(st.booleans()):
        return (x,), ({"axes": None} if draw(st.booleans()) else {})
    perm = draw(st.permutations(list(range(len(s)))))
    return (x,), {"axes": [a - len(s) if draw(st.booleans()) else a for a in perm]}


@O.register_valid_call("transpose")
def _transpose_valid() -> SearchStrategy:
    return transpose_call()


@O.register_invalid_call("transpose")
def _transpose_invalid() -> SearchStrategy:
    x = T((2, 3, 4), "float32")
    return st.one_of(st.sampled_from((((x,), {"axes": [0, 1]}), ((x,), {"axes": [0, 1, 1]}),
                                      ((x,), {"axes": [0, 1, 3]}), ((x,), {"axes": "012"}))),
                     *_generic_bad(transpose_call()))


@st.composite
def expand_dims_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_rank=3))
    attrs: dict[str, Any] = {"axis": draw(st.integers(-len(s) - 1, len(s)))}
    _maybe(draw, attrs, "num_newaxis", draw(st.integers(0, 2)), 1)
    return (T(s, draw(dtypes(ALL))),), attrs


@O.register_valid_call("expand_dims")
def _expand_dims_valid() -> SearchStrategy:
    return expand_dims_call()


@O.register_invalid_call("expand_dims")
def _expand_dims_invalid() -> SearchStrategy:
    x = T((2, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"axis": 3}), ((x,), {"axis": -4}), ((x,), {}),
                                      ((x,), {"axis": 0, "num_newaxis": -1}))),
                     *_generic_bad(expand_dims_call()))


@st.composite
def squeeze_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_dim=3))
    ones = [i for i, d in enumerate(s) if d == 1]
    x = T(s, draw(dtypes(ALL)))
    if draw(st.booleans()):
        return (x,), ({"axis": None} if draw(st.booleans()) else {})
    chosen = draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    return (x,), {"axis": [a - len(s) if draw(st.booleans()) else a for a in chosen]}


@O.register_valid_call("squeeze")
def _squeeze_valid() -> SearchStrategy:
    return squeeze_call()


@O.register_invalid_call("squeeze")
def _squeeze_invalid() -> SearchStrategy:
    x = T((2, 1, 3), "float32")
    return st.one_of(st.sampled_from((((x,), {"axis": [0]}), ((x,), {"axis": [3]}),
                                      ((x,), {"axis": [-4]}), ((x,), {"axis": ["1"]}))),
                     *_generic_bad(squeeze_call()))


# --- transform: concatenate, stack, split --------------------------------------------------------

@st.composite
def concatenate_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(min_rank=1, max_rank=3, max_dim=3)))
    d = draw(dtypes(ALL))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        axis = 0
    else:
        axis = attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    fields = []
    for _ in range(draw(st.integers(1, 3))):
        part = list(s)
        part[axis] = draw(st.integers(0, 3))
        fields.append(T(part, d))
    return (TupleType(tuple(fields)),), attrs


@O.register_valid_call("concatenate")
def _concatenate_valid() -> SearchStrategy:
    return concatenate_call()


@O.register_invalid_call("concatenate")
def _concatenate_invalid() -> SearchStrategy:
    a, b = T((2, 3), "float32"), T((2, 4), "float32")
    return st.sampled_from((
        ((TupleType((a, b)),), {"axis": 0}),
        ((TupleType((a, T((2, 3), "int32"))),), {"axis": 0}),
        ((TupleType((a, T((2, 3, 1), "float32"))),), {"axis": 0}),
        ((TupleType((a, b)),), {"axis": 2}),
        ((TupleType(()),), {}),
        ((a,), {}),
        ((TupleType((a,)), TupleType((a,))), {}),
        ((TupleType((a, NOT_A_TENSOR)),), {}),
        ((TupleType((T((), "float32"),)),), {}),
    ))


@st.composite
def stack_call(draw: st.DrawFn) -> CallArgs:
    s = draw(shapes(max_rank=3, max_dim=3))
    d = draw(dtypes(ALL))
    count = draw(st.integers(1, 3))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "axis", draw(st.integers(-len(s) - 1, len(s))), 0)
    return (TupleType(tuple(T(s, d) for _ in range(count))),), attrs


@O.register_valid_call("stack")
def _stack_valid() -> SearchStrategy:
    return stack_call()


@O.register_invalid_call("stack")
def _stack_invalid() -> SearchStrategy:
    a = T((2, 3), "float32")
    return st.sampled_from((
        ((TupleType((a, T((3, 2), "float32"))),), {}),
        ((TupleType((a, T((2, 3), "int8"))),), {}),
        ((TupleType((a, a)),), {"axis": 3}),
        ((TupleType((a, a)),), {"axis": -4}),
        ((TupleType(()),), {}),
        ((a,), {}),
    ))


@st.composite
def split_call(draw: st.DrawFn) -> CallArgs:
    s = list(draw(shapes(min_rank=1, max_rank=3)))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        axis = 0
    else:
        axis = attrs["axis"] = draw(st.integers(-len(s), len(s) - 1))
    d = s[axis]
    if draw(st.booleans()):
        spec: Any = draw(st.sampled_from([k for k in range(1, 6) if d % k == 0]))
    else:
        spec = sorted(draw(st.sets(st.integers(1, d - 1), max_size=3))) if d > 1 else []
    attrs["indices_or_sections"] = spec
    return (T(s, draw(dtypes(ALL))),), attrs


@O.register_valid_call("split")
def _split_valid() -> SearchStrategy:
    return split_call()


@O.register_invalid_call("split")
def _split_invalid() -> SearchStrategy:
    x = T((6, 4), "float32")
    return st.one_of(st.sampled_from((
        ((x,), {"indices_or_sections": 4}),
        ((x,), {"indices_or_sections": 0}),
        ((x,), {"indices_or_sections": [3, 2]}),
        ((x,), {"indices_or_sections": [0, 2]}),
        ((x,), {"indices_or_sections": [2, 6]}),
        ((x,), {"indices_or_sections": 2, "axis": 2}),
        ((T((), "float32"),), {"indices_or_sections": 1}),
        ((x,), {}),
    )), *_generic_bad(split_call()))


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
        b, e = draw(st.integers(-dim - 2, dim + 2)), draw(st.integers(-dim - 2, dim + 2))
        cb, ce = canonicalize_index(b, dim, stride), canonicalize_index(e, dim, stride)
        if (stride > 0 and cb > ce) or (stride < 0 and ce > cb):
            b, e = e, b
            cb, ce = ce, cb
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
    from semantics.ops.transform_relations import parse_layout

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
