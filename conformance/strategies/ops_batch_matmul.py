"""Valid and invalid call strategies for ``nn.batch_matmul`` (registered into the tables of
:mod:`conformance.strategies.ops`; listed in its ``EXTENSION_MODULES``).

Valid calls: x (b, M, K) — (b, K, M) with ``transpose_a`` —, y (b, N, K) — (b, K, N) without
``transpose_b`` —, where the two batch dims are equal or one of them is 1, over the dtype
triples dense and conv2d use.  Invalid calls: unequal reduction dims, batch dims that differ
and are both not 1, a rank other than 3, bool operands, an integer out_dtype with float
operands, plus the generic bad calls (a non-tensor argument, an extra argument, an unknown
attribute).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    MATMUL_DTYPES,
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
)


def _layout(b: int, rows: int, cols: int, transposed: bool) -> tuple[int, int, int]:
    return (b, cols, rows) if transposed else (b, rows, cols)


@st.composite
def batch_matmul_call(draw: st.DrawFn) -> CallArgs:
    """A valid ``nn.batch_matmul`` call: (argument types, attributes as written)."""
    b = draw(st.integers(0, 3))
    xb, yb = draw(st.sampled_from(((b, b), (1, b), (b, 1))))
    m, n, k = (draw(st.integers(0, 4)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    xd, yd, od = draw(st.sampled_from(MATMUL_DTYPES))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "transpose_a", ta, False)
    _maybe(draw, attrs, "transpose_b", tb, True)
    _maybe(draw, attrs, "out_dtype", od, "")
    x = T(_layout(xb, m, k, ta), xd)
    y = T(_layout(yb, k, n, tb), yd)
    return (x, y), attrs


@O.register_valid_call("nn.batch_matmul")
def _valid() -> SearchStrategy:
    return batch_matmul_call()


@st.composite
def _bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("k", "batch", "rank", "bool", "out_dtype")))
    k = draw(st.integers(1, 4))
    if kind == "k":
        return (T((2, 3, k), "float32"), T((2, 5, k + 1), "float32")), {}
    if kind == "batch":
        return (T((2, 3, k), "float32"), T((3, 5, k), "float32")), {}
    if kind == "rank":
        return (T((3, k), "float32"), T((2, 5, k), "float32")), {}
    if kind == "bool":
        return (T((2, 3, k), "bool"), T((2, 5, k), "bool")), {}
    return (T((2, 3, k), "float32"), T((2, 5, k), "float32")), {"out_dtype": "int32"}


@O.register_invalid_call("nn.batch_matmul")
def _invalid() -> SearchStrategy:
    return st.one_of(_bad(), *_generic_bad(batch_matmul_call()))
