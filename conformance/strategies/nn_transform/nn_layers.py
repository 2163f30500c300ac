"""Valid/invalid call strategies of the ``nn`` layers without a spatial window.

Activations (``nn.relu``, ``nn.leaky_relu``), ``nn.softmax``/``nn.log_softmax``,
``nn.dense``, ``nn.bias_add``, ``nn.batch_norm``, ``nn.dropout``, ``nn.batch_flatten``.
Importing this module registers them into :mod:`conformance.strategies.ops`'s tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    ALL,
    FLOATS,
    INTEGER,
    MATMUL_DTYPES,
    NUMERIC,
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
    dtypes,
    shapes,
)

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
        attrs["epsilon"] = draw(st.sampled_from((1e-5, 1e-3, 0.1, 0, 0)))
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
