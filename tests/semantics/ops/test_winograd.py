"""The Winograd operators (``semantics/ops/winograd.py``): the matrices are exactly the
Cook-Toom construction, and a weight transform followed by the Winograd convolution is
``nn.conv2d`` (float64: to 1e-9; float32 with F(4x4, 3x3): to 1e-4 of the result's scale) in
every layout the relation accepts."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics import ops
from semantics.errors import RelayTypeError
from semantics.ops.winograd import (
    MAX_ALPHA,
    WEIGHT_TRANSFORM,
    WITHOUT_WEIGHT_TRANSFORM,
    winograd_matrices,
    winograd_rationals,
)
from semantics.types import TensorType

PAIRS = [(m, r) for r in (1, 2, 3) for m in range(1, MAX_ALPHA - r + 2)]


@pytest.mark.parametrize("m, r", PAIRS)
def test_matrices_compute_the_correlation_exactly(m: int, r: int) -> None:
    """``A^T [(G g) (.) (B^T d)]`` is the correlation ``y_i = sum_k d_{i+k} g_k``, in exact
    rational arithmetic, for every basis vector pair (so for every input: it is bilinear)."""
    at, bt, g = winograd_rationals(m, r)
    alpha = m + r - 1
    assert (len(at), len(at[0]), len(bt), len(bt[0]), len(g), len(g[0])) == (
        m, alpha, alpha, alpha, alpha, r)
    for dk in range(alpha):
        for gk in range(r):
            d = [Fraction(int(i == dk)) for i in range(alpha)]
            kern = [Fraction(int(k == gk)) for k in range(r)]
            gg = [sum((g[a][k] * kern[k] for k in range(r)), Fraction(0)) for a in range(alpha)]
            bd = [sum((bt[a][i] * d[i] for i in range(alpha)), Fraction(0))
                  for a in range(alpha)]
            y = [sum((at[i][a] * gg[a] * bd[a] for a in range(alpha)), Fraction(0))
                 for i in range(m)]
            want = [sum((d[i + k] * kern[k] for k in range(r)), Fraction(0)) for i in range(m)]
            assert y == want


def test_f2_and_f4_use_the_small_points() -> None:
    """F(2x2, 3x3) has only 0 and +-1 entries in B^T and A^T; F(4x4, 3x3) integer B^T."""
    at, bt, _ = winograd_matrices(2, 3)
    assert set(np.unique(np.abs(bt))) <= {0.0, 1.0} and set(np.unique(np.abs(at))) <= {0.0, 1.0}
    _, bt4, _ = winograd_matrices(4, 3)
    assert np.array_equal(bt4, np.round(bt4))


def _relayout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return np.asarray(ops.get("layout_transform").reference(x, src_layout=src, dst_layout=dst))


@st.composite
def _conv_case(draw: st.DrawFn) -> tuple:
    m = draw(st.integers(1, 4))
    r = draw(st.integers(1, 3))
    c = draw(st.sampled_from((1, 2, 4, 8)))
    o = draw(st.sampled_from((1, 3, 4, 8)))
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    h = draw(st.integers(max(1, r - pads[0] - pads[2]), 9))
    w = draw(st.integers(max(1, r - pads[1] - pads[3]), 9))
    n = draw(st.integers(1, 2))
    layout = draw(st.sampled_from(["NCHW", "NHWC"] + [f"NCHW{b}c" for b in (2, 4)
                                                      if c % b == 0 and o % b == 0]))
    return m, r, n, c, o, h, w, pads, layout, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=60, deadline=None)
@given(case=_conv_case())
def test_winograd_is_conv2d(case: tuple) -> None:
    m, r, n, c, o, h, w, pads, layout, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w))
    k = rng.standard_normal((o, c, r, r))
    want = ops.get("nn.conv2d").reference(x, k, padding=pads)
    u = ops.get(WEIGHT_TRANSFORM).reference(k, tile_size=m)
    assert u.shape == (m + r - 1, m + r - 1, o, c)
    got = ops.get(WITHOUT_WEIGHT_TRANSFORM).reference(
        _relayout(x, "NCHW", layout), u, tile_size=m, padding=pads, data_layout=layout)
    np.testing.assert_allclose(_relayout(got, layout, "NCHW"), want, rtol=1e-9, atol=1e-9)


def test_float32_f4_is_within_tolerance() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 64, 28, 28)).astype("float32")
    k = (rng.standard_normal((32, 64, 3, 3)) * 0.1).astype("float32")
    want = ops.get("nn.conv2d").reference(x, k, padding=[1, 1])
    u = ops.get(WEIGHT_TRANSFORM).reference(k, tile_size=4)
    got = ops.get(WITHOUT_WEIGHT_TRANSFORM).reference(x, u, tile_size=4, padding=[1, 1])
    assert got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_relations_name_what_the_algorithm_cannot_do() -> None:
    rel = ops.get(WITHOUT_WEIGHT_TRANSFORM)
    data, weight = TensorType((1, 4, 6, 6), "float32"), TensorType((4, 4, 5, 4), "float32")
    for attrs, pattern in (({"strides": [2, 2]}, "strides 1"), ({"groups": 2}, "groups 1"),
                           ({"kernel_layout": "HWIO"}, "OIHW")):
        with pytest.raises(RelayTypeError, match=pattern):
            rel.relation((data, weight), rel.normalize_attrs({"tile_size": 2, **attrs}))
    out = rel.relation((data, weight), rel.normalize_attrs({"tile_size": 2, "padding": [1]}))
    assert isinstance(out, TensorType) and out.shape == (1, 5, 6, 6) and out.dtype == "float32"
    wt = ops.get(WEIGHT_TRANSFORM)
    with pytest.raises(RelayTypeError, match="at most 8"):
        wt.relation((TensorType((2, 2, 3, 3), "float32"),), wt.normalize_attrs({"tile_size": 7}))
