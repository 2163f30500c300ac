"""nn.lrn's gradient and tangent rules against float64 central differences, to second order,
in both modes (odd and even windows — the even one is asymmetric, so its adjoint mirrors it)."""

from __future__ import annotations

import numpy as np
import pytest

import ad
from semantics import parse_expr


@pytest.mark.parametrize("shape, attrs", [
    ((2, 5, 3, 2), "size=3, axis=1"),
    ((4, 6), "size=4, axis=-1, alpha=0.5f, beta=0.6f, bias=1.5f"),
    ((7,), "size=5, axis=0, alpha=2f"),
])
def test_lrn_rules_match_central_differences(shape: tuple[int, ...], attrs: str) -> None:
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    f = parse_expr(f"fn (%x: Tensor[({dims}), float32]) {{ sum(nn.lrn(%x, {attrs}) * %x) }}")
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype("float32")
    ad.check_grads(f, [x], order=2)
